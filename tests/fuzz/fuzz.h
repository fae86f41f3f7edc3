/*
 * fuzz.h - what every libFuzzer target in tests/fuzz shares: the input as a
 * file (memfd, reachable by path through /proc/self/fd), one private
 * temporary directory for targets that must write an index file, and quiet
 * replacements for core/log.c's reporting.
 *
 * The targets link libsamplefs.a; defining sfs_err/sfs_warn/sfs_info (and
 * every other log.c function core/ calls) here
 * keeps log.o out of the link, so the millions of "bad input" messages a run
 * produces are formatted (a bad format argument still shows under ASan) but
 * not printed.  FUZZ_VERBOSE=1 in the environment prints them.
 *
 * Not for: anything the daemon uses.  Harness state (the temporary
 * directory, a target's prebuilt fixture) is static, made once per process.
 */
#ifndef SFS_FUZZ_H
#define SFS_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "io/source.h"

/* A failed invariant: abort so libFuzzer saves the input as a crash. */
#define FUZZ_CHECK(c) do { if (!(c)) { \
	fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c); \
	abort(); } } while (0)

static void fuzz_vlog(const char *kind, const char *fmt, va_list ap)
{
	static int verbose = -1;
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "samplefs: %s%s\n", kind, line);
}

void sfs_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fuzz_vlog("error: ", fmt, ap);
	va_end(ap);
}

void sfs_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fuzz_vlog("warning: ", fmt, ap);
	va_end(ap);
}

void sfs_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fuzz_vlog("", fmt, ap);
	va_end(ap);
}

/* The progress bar's (core/index/progress.c): no bar here.  Every function
 * of log.c that core/ calls needs its stand-in, or log.o is linked and
 * clashes with the three above. */
void sfs_log_bar(int on)
{
	(void)on;
}

/* The bytes as an anonymous file; -1 on failure (the caller skips). */
static inline int fuzz_memfd(const void *data, size_t len)
{
	const uint8_t *p = data;
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len) {
		ssize_t k = write(fd, p, len);

		if (k <= 0) {
			close(fd);
			return -1;
		}
		p += k;
		len -= (size_t)k;
	}
	return fd;
}

/* A path that opens fd's file (for APIs that take a path). */
static inline void fuzz_fd_path(int fd, char *out, size_t outlen)
{
	snprintf(out, outlen, "/proc/self/fd/%d", fd);
}

/* fd's file as a source (io/source.h); NULL on failure (the caller skips). */
static inline struct source *fuzz_source(int fd)
{
	struct source *s;
	char path[64];

	fuzz_fd_path(fd, path, sizeof(path));
	return source_open(NULL, path, &s) ? NULL : s;
}

/* One env for the run: making one per input (its threads, its HTTP
 * state) would be most of an execution.  Small caches: an input's
 * streams are small. */
static inline struct source_env *fuzz_env(void)
{
	static const struct source_config cfg = { .span_bytes = 64 << 10,
						  .cache_bytes = 1 << 20 };
	static struct source_env *env;

	if (!env && source_env_new(&cfg, &env))
		env = NULL;
	return env;
}

static char fuzz_dir[256];

static int fuzz_rm(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void fuzz_rmdir(void)
{
	if (fuzz_dir[0])
		nftw(fuzz_dir, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * This process's temporary directory, made on first use and removed at
 * exit: under $TMPDIR, else /dev/shm (a tmpfs, where the index writer's
 * fsync costs nothing), else /tmp.  Aborts if none can be made.
 */
static inline const char *fuzz_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	if (fuzz_dir[0])
		return fuzz_dir;
	if (!base || !*base)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/sfs-fuzz.XXXXXX", base);
	if (!mkdtemp(fuzz_dir)) {
		perror(fuzz_dir);
		abort();
	}
	atexit(fuzz_rmdir);
	return fuzz_dir;
}

#endif
