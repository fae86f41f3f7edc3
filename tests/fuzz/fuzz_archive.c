/*
 * fuzz_archive.c - libFuzzer target for the archives read through
 * libarchive (issue 28 part 3): core/formats/arcwalk.c (cpio, ar, ISO
 * 9660 members in place: names, offsets checked against libarchive's
 * bytes, damage), core/io/codecs/arxread.c (libarchive over source_pread)
 * and arxsource.c (7-Zip, RAR, tars compressed with compress, lz4, lzip,
 * lzma-alone, lzop: the pass that writes a tar rendition into a spill
 * file, bounded).
 *
 * Feeds: the input as a file (memfd).  arc_walk over it: every member has
 * a normalised name, a file's first bytes read through source_pread.
 * When its first bytes are arxsource's, it is opened as a rendition in an
 * env whose disk bound is 4 MiB: the pass ends (source_extent), every
 * byte it kept reads back, and tar_walk walks them.
 * Seeds: seeds.py's archives, made with bsdtar when it is installed.
 */
#include "fuzz.h"
#include "formats/arcwalk.h"
#include "formats/tar.h"
#include "io/codecs/arxsource.h"

static int member(void *arg, const struct tar_member *m)
{
	struct source *src = arg;
	char buf[256];

	FUZZ_CHECK(m->path[0] && m->path[0] != '/' && !strstr(m->path, "//"));
	if (m->type == TAR_FILE)
		(void)source_pread(src, buf, sizeof(buf), m->offset);
	return 0;
}

static int tar_member(void *arg, const struct tar_member *m)
{
	FUZZ_CHECK(m->path[0]);
	return 0;
}

/* A small disk bound: a bomb must stop at it. */
static struct source_env *arx_env(void)
{
	static const struct source_config cfg = { .span_bytes = 64 << 10,
						  .cache_bytes = 1 << 20,
						  .cache_dir_bytes = 4 << 20 };
	static struct source_env *env;

	if (!env && source_env_new(&cfg, &env))
		env = NULL;
	return env;
}

/* The rendition: read whole, then walked as a tar. */
static void rendition(const char *path)
{
	static uint8_t buf[1 << 16];
	struct source *s;
	uint64_t have = 0, off;
	ssize_t n;

	if (!arx_env() || source_open(arx_env(), path, &s))
		return;
	if (source_extent(s, UINT64_MAX, &have) >= 0) {
		for (off = 0; off < have; off += (uint64_t)n) {
			n = source_pread(s, buf, sizeof(buf), off);
			if (n <= 0)
				break;
			FUZZ_CHECK((size_t)n <= sizeof(buf));
		}
		FUZZ_CHECK(off == have || n < 0);
		(void)tar_walk(s, 0, have, "fuzz", tar_member, NULL);
	}
	source_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct source *src;
	char path[64];
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, path, sizeof(path));
	if ((src = fuzz_source(fd))) {
		(void)arc_walk(src, "fuzz", member, src);
		source_close(src);
	}
	if (arxsource_kind(data, size))
		rendition(path);
	close(fd);
	return 0;
}
