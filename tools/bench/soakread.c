/*
 * soakread - the soak's reader: T threads read mounted files at random
 * offsets and sizes for S seconds and compare every byte with the same range
 * of an oracle file on disk; the main thread samples each daemon's RSS.
 *
 * Usage: soakread [-t THREADS] [-s SECONDS] [-w WARM_SECONDS] [-S SEED]
 *                 [-g MAX_GROWTH_PCT] [-G MAX_GROWTH_KB] [-r RSS_LOG]
 *                 NAME PID MOUNT WANT [NAME PID MOUNT WANT]...
 *   Each group NAME is a mount MOUNT (served by daemon PID, 0 for none) and
 *   a directory WANT holding the tree the mount must show (written by
 *   tools/bench/soak_data.py).  The file list is WANT's regular files and
 *   symlinks (opened through, as on the mount), never the mount's.
 *
 * Phases:
 *   warm-up  every file once, from its start (up to 16 MiB) and its last
 *            MiB, in 1 MiB reads, shared out over the threads, then random
 *            reads as below for WARM_SECONDS (default 0): the first reads of
 *            a kind touch pages the daemon keeps (thread stacks, malloc
 *            arenas, index pages), which is not growth; then the daemons'
 *            RSS is taken as the baseline
 *   random   for SECONDS: a random group, a random file; open it, drop its
 *            pages from the page cache (7 times in 8, so most reads reach
 *            the daemon), 1 to 4 reads of 1 byte to 1 MiB (log-uniform) at a
 *            random offset (1 in 8 at or past the end), 1 in 16 through mmap
 *            (then the rest of the last page past the end must be zeros)
 * Every read is compared byte by byte with pread of the oracle file at the
 * same offset: a different length or byte counts as wrong bytes.
 *
 * Prints one line per group and a total; exits 1 on any wrong byte, any
 * error (open, read, SIGBUS in a mapped read), a VmRSS that ends more than
 * MAX_GROWTH_PCT % (default 5) above its value after the warm-up, or a
 * VmRSS or RssAnon that ends more than MAX_GROWTH_KB kB (default: not
 * judged) above it; 0 turns either off (sanitizer builds, whose RSS holds
 * their own state).  RssAnon is not judged in %: it is the malloc heap
 * alone, a megabyte or two here, where a few hundred kB of per-thread
 * arenas filling up in the first minutes is tens of percent.  (The
 * growth that went on for minutes was libfuse's page-aligned copies of
 * short spliced replies kept in glibc's tcache; fs/read.c no longer
 * splices replies under two pages.)
 *
 * Not part of samplefs: built by tools/bench/soak.sh.  Threads share the
 * file tables (read-only after loading) and per-group atomic counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_READ (1 << 20)
#define WARM_HEAD (16 << 20)
#define MAX_GROUPS 8
#define MAX_REPORTED 10

struct file {
	char *rel;
	uint64_t size;
};

struct rss {
	long start, warm, end, max;	/* kB; -1 unknown */
};

struct group {
	const char *name, *mount, *want;
	int pid;
	struct file *files;
	size_t nfiles, cap;
	atomic_ullong reads, bytes, wrong, errors, eof_reads, mmap_reads;
	/* reads, bytes, eof_reads, mmap_reads as the warm-up ended */
	unsigned long long warm_reads, warm_bytes, warm_eof, warm_mmap;
	struct rss vm, anon;
};

struct soak {
	struct group g[MAX_GROUPS];
	int ngroups;
	atomic_int phase;	/* 0 warm-up pass, 1 random warm-up, 2 random, 3 stop */
	atomic_size_t next_warm;	/* over all groups' files in order */
	size_t total_files;
	uint64_t seed;
	atomic_int reported;
};

struct worker {
	struct soak *s;
	pthread_t tid;
	uint64_t rng;
	char *got, *want;
};

static __thread sigjmp_buf *bus_jmp;

static void on_sigbus(int sig)
{
	if (bus_jmp)
		siglongjmp(*bus_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static uint64_t next_rand(uint64_t *x)	/* xorshift64* */
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(struct soak *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void report(struct soak *s, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&s->reported, 1) >= MAX_REPORTED)
		return;
	va_start(ap, fmt);
	fputs("soakread: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- the file lists ---- */

static struct group *loading;	/* nftw has no user pointer; main thread only */

static int add_file(const char *path, const struct stat *lst, int type,
		    struct FTW *ftw)
{
	struct group *g = loading;
	struct stat st;
	struct file *f;

	(void)ftw;
	if (type != FTW_F && type != FTW_SL)
		return 0;
	if (type == FTW_SL && stat(path, &st) != 0)
		return 0;	/* dangling: nothing to read */
	if (type == FTW_F)
		st = *lst;
	if (!S_ISREG(st.st_mode))
		return 0;
	if (g->nfiles == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 1024;
		f = realloc(g->files, g->cap * sizeof(*f));
		if (!f)
			return -1;
		g->files = f;
	}
	f = &g->files[g->nfiles];
	f->rel = strdup(path + strlen(g->want) + 1);
	if (!f->rel)
		return -1;
	f->size = (uint64_t)st.st_size;
	g->nfiles++;
	return 0;
}

static int load_group(struct group *g)
{
	loading = g;
	if (nftw(g->want, add_file, 32, FTW_PHYS) != 0) {
		fprintf(stderr, "soakread: %s: cannot list the oracle tree\n", g->want);
		return -1;
	}
	if (g->nfiles == 0) {
		fprintf(stderr, "soakread: %s: no files\n", g->want);
		return -1;
	}
	return 0;
}

/* ---- reads and checks ---- */

/* pread until len bytes or the end; bytes read or -errno */
static long long pread_full(int fd, char *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (long long)done;
}

/* differing bytes between got[0..ngot) and want[0..nwant) */
static uint64_t count_wrong(const char *got, size_t ngot, const char *want,
			    size_t nwant)
{
	size_t n = ngot < nwant ? ngot : nwant, i;
	uint64_t bad = ngot > nwant ? ngot - nwant : nwant - ngot;

	if (memcmp(got, want, n) == 0)
		return bad;
	for (i = 0; i < n; i++)
		bad += got[i] != want[i];
	return bad;
}

static void tally(struct worker *w, struct group *g, const struct file *f,
		  uint64_t off, size_t len, long long ngot, long long nwant,
		  const char *how)
{
	uint64_t bad;

	atomic_fetch_add(&g->reads, 1);
	if (ngot < 0 || nwant < 0) {
		atomic_fetch_add(&g->errors, 1);
		report(w->s, "%s/%s: %s of %zu bytes at offset %llu: %s (%s)",
		       g->mount, f->rel, how, len, (unsigned long long)off,
		       strerror((int)-(ngot < 0 ? ngot : nwant)),
		       ngot < 0 ? "mount" : "oracle");
		return;
	}
	atomic_fetch_add(&g->bytes, (unsigned long long)nwant);
	bad = count_wrong(w->got, (size_t)ngot, w->want, (size_t)nwant);
	if (bad) {
		atomic_fetch_add(&g->wrong, bad);
		report(w->s, "%s/%s: %s of %zu bytes at offset %llu: got %lld bytes, "
		       "want %lld, %llu wrong", g->mount, f->rel, how, len,
		       (unsigned long long)off, ngot, nwant, (unsigned long long)bad);
	}
}

/* Copies [start + from, start + from + len) of mfd into dst through a
 * mapping of [start, start + maplen); 0 or -errno (-EIO for a SIGBUS). */
static int mapped_copy(int mfd, uint64_t start, size_t maplen, size_t from,
		       size_t len, char *dst)
{
	sigjmp_buf jb;
	char *p;

	p = mmap(NULL, maplen, PROT_READ, MAP_SHARED, mfd, (off_t)start);
	if (p == MAP_FAILED)
		return -errno;
	bus_jmp = &jb;
	if (sigsetjmp(jb, 1)) {
		bus_jmp = NULL;
		munmap(p, maplen);
		return -EIO;
	}
	memcpy(dst, p + from, len);
	bus_jmp = NULL;
	munmap(p, maplen);
	return 0;
}

/* A read of [off, off + len) through mmap; when it reaches the last page,
 * the rest of that page after the end of the file must read as zeros (the
 * oracle's buffer is zero-filled there). */
static void mmap_check(struct worker *w, struct group *g, const struct file *f,
		       int mfd, int ofd, uint64_t off, size_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), start, end, fend;
	long long nwant;
	int rc;

	if (len > f->size - off)
		len = (size_t)(f->size - off);
	start = off & ~(pg - 1);
	fend = (f->size + pg - 1) & ~(pg - 1);
	end = (off + len + pg - 1) & ~(pg - 1);
	if (end == fend && fend - off <= MAX_READ)
		len = (size_t)(fend - off);
	nwant = pread_full(ofd, w->want, len, off);
	if (nwant >= 0)
		memset(w->want + nwant, 0, len - (size_t)nwant);
	atomic_fetch_add(&g->mmap_reads, 1);
	rc = mapped_copy(mfd, start, (size_t)(end - start), (size_t)(off - start),
			 len, w->got);
	tally(w, g, f, off, len, rc < 0 ? rc : (long long)len,
	      nwant < 0 ? nwant : (long long)len, "mmap read");
}

static void pread_check(struct worker *w, struct group *g, const struct file *f,
			int mfd, int ofd, uint64_t off, size_t len, const char *how)
{
	long long ngot = pread_full(mfd, w->got, len, off);
	long long nwant = pread_full(ofd, w->want, len, off);

	tally(w, g, f, off, len, ngot, nwant, how);
}

/* 1 byte to 1 MiB, each power of two as likely as the next */
static size_t random_len(uint64_t *rng)
{
	unsigned e = (unsigned)(next_rand(rng) % 20);
	uint64_t len = (1ULL << e) + next_rand(rng) % (1ULL << e);

	return len > MAX_READ ? MAX_READ : (size_t)len;
}

static int open_pair(struct worker *w, struct group *g, const struct file *f,
		     int *mfd, int *ofd)
{
	char path[8192];

	snprintf(path, sizeof(path), "%s/%s", g->mount, f->rel);
	*mfd = open(path, O_RDONLY);
	if (*mfd < 0) {
		atomic_fetch_add(&g->errors, 1);
		report(w->s, "%s: open: %s", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", g->want, f->rel);
	*ofd = open(path, O_RDONLY);
	if (*ofd < 0) {
		atomic_fetch_add(&g->errors, 1);
		report(w->s, "%s: open: %s", path, strerror(errno));
		close(*mfd);
		return -1;
	}
	return 0;
}

static void random_reads(struct worker *w, struct group *g, const struct file *f)
{
	uint64_t off;
	size_t len;
	int mfd, ofd, n;

	if (open_pair(w, g, f, &mfd, &ofd))
		return;
	if (next_rand(&w->rng) % 8)
		posix_fadvise(mfd, 0, 0, POSIX_FADV_DONTNEED);
	for (n = 1 + (int)(next_rand(&w->rng) % 4); n > 0; n--) {
		len = random_len(&w->rng);
		if (next_rand(&w->rng) % 8 == 0) {
			off = f->size + next_rand(&w->rng) % (1 << 16) * (next_rand(&w->rng) % 2);
			atomic_fetch_add(&g->eof_reads, 1);
			pread_check(w, g, f, mfd, ofd, off, len, "read past the end");
			continue;
		}
		off = f->size ? next_rand(&w->rng) % f->size : 0;
		if (f->size && next_rand(&w->rng) % 16 == 0)
			mmap_check(w, g, f, mfd, ofd, off, len);
		else
			pread_check(w, g, f, mfd, ofd, off, len, "read");
	}
	close(mfd);
	close(ofd);
}

static void warm_file(struct worker *w, struct group *g, const struct file *f)
{
	uint64_t off, tail;
	int mfd, ofd;

	if (open_pair(w, g, f, &mfd, &ofd))
		return;
	for (off = 0; off < f->size && off < WARM_HEAD; off += MAX_READ)
		pread_check(w, g, f, mfd, ofd, off, MAX_READ, "warm-up read");
	tail = f->size > MAX_READ ? f->size - MAX_READ : 0;
	if (tail >= off)
		pread_check(w, g, f, mfd, ofd, tail, MAX_READ + 1, "warm-up read");
	close(mfd);
	close(ofd);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct soak *s = w->s;
	struct group *g;
	size_t i;
	int k;

	while ((i = atomic_fetch_add(&s->next_warm, 1)) < s->total_files) {
		for (k = 0; i >= s->g[k].nfiles; k++)
			i -= s->g[k].nfiles;
		warm_file(w, &s->g[k], &s->g[k].files[i]);
	}
	while (atomic_load(&s->phase) == 0)
		usleep(1000);
	while (atomic_load(&s->phase) < 3) {
		g = &s->g[next_rand(&w->rng) % (uint64_t)s->ngroups];
		random_reads(w, g, &g->files[next_rand(&w->rng) % g->nfiles]);
	}
	return NULL;
}

/* ---- RSS ---- */

/* VmRSS and RssAnon of pid in kB (-1 if unknown) */
static void read_rss(int pid, long *vm, long *anon)
{
	char path[64], line[256];
	FILE *fp;

	*vm = *anon = -1;
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	fp = fopen(path, "r");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		sscanf(line, "VmRSS: %ld", vm);
		sscanf(line, "RssAnon: %ld", anon);
	}
	fclose(fp);
}

static void rss_sample(struct soak *s, FILE *log, double t, int which)
{
	struct group *g;
	long vm, anon;
	int k;

	for (k = 0; k < s->ngroups; k++) {
		g = &s->g[k];
		read_rss(g->pid, &vm, &anon);
		if (vm < 0)
			continue;
		if (which == 0)
			g->vm.start = vm, g->anon.start = anon;
		if (which == 1)
			g->vm.warm = vm, g->anon.warm = anon;
		g->vm.end = vm, g->anon.end = anon;
		if (vm > g->vm.max)
			g->vm.max = vm;
		if (anon > g->anon.max)
			g->anon.max = anon;
		if (log)
			fprintf(log, "%.1f\t%s\t%ld\t%ld\n", t, g->name, vm, anon);
	}
	if (log)
		fflush(log);
}

/* samples RSS every second until time `until` */
static void sample_until(struct soak *s, FILE *log, double t0, double until)
{
	double t;

	while ((t = now()) < until) {
		usleep(t + 1 > until ? (useconds_t)((until - t) * 1e6) : 1000000);
		rss_sample(s, log, now() - t0, 2);
	}
}

/* 1 if `r` grew more than pct % (0: not judged) or more than kb kB (0: not
 * judged) from the warm-up to the end */
static int grew(const struct rss *r, double pct, long kb)
{
	if (r->warm <= 0)
		return 0;
	return (pct > 0 && r->end > r->warm * (1 + pct / 100)) ||
	       (kb > 0 && r->end - r->warm > kb);
}

/* ---- main ---- */

static int summary(struct soak *s, double secs, double max_growth, long max_kb)
{
	unsigned long long reads = 0, bytes = 0, wrong = 0, errors = 0, r, b;
	struct group *g;
	int k, bad = 0;

	for (k = 0; k < s->ngroups; k++) {
		g = &s->g[k];
		r = g->reads - g->warm_reads;
		b = g->bytes - g->warm_bytes;
		printf("soak: %s files=%zu reads=%llu bytes=%llu wrong=%llu errors=%llu "
		       "past_end=%llu mmap=%llu rss_kb start=%ld warm=%ld end=%ld max=%ld "
		       "anon_kb start=%ld warm=%ld end=%ld max=%ld\n", g->name, g->nfiles,
		       r, b, (unsigned long long)g->wrong, (unsigned long long)g->errors,
		       g->eof_reads - g->warm_eof, g->mmap_reads - g->warm_mmap,
		       g->vm.start, g->vm.warm, g->vm.end, g->vm.max, g->anon.start,
		       g->anon.warm, g->anon.end, g->anon.max);
		reads += r, bytes += b, wrong += g->wrong, errors += g->errors;
		if (grew(&g->vm, max_growth, max_kb) || grew(&g->anon, 0, max_kb)) {
			printf("soak: FAIL %s: VmRSS grew more than %.0f%%, or RSS more than %ld kB, "
			       "after the warm-up (VmRSS %ld -> %ld kB, RssAnon %ld -> %ld kB)\n", g->name,
			       max_growth, max_kb, g->vm.warm, g->vm.end, g->anon.warm, g->anon.end);
			bad = 1;
		}
		if (g->pid > 0 && g->vm.end < 0) {
			printf("soak: FAIL %s: daemon %d gone\n", g->name, g->pid);
			bad = 1;
		}
	}
	printf("soak: total reads=%llu bytes=%llu wrong=%llu errors=%llu secs=%.1f "
	       "reads_per_s=%.0f\n", reads, bytes, wrong, errors, secs, reads / secs);
	if (wrong || errors)
		printf("soak: FAIL %llu wrong bytes, %llu errors\n", wrong, errors);
	return bad || wrong || errors;
}

int main(int argc, char **argv)
{
	static struct soak s;
	struct worker *w;
	double seconds = 10, warm = 0, max_growth = 5, t0, t1, tw;
	long nthreads = 16, t, max_kb = 0;
	const char *rsslog = NULL;
	FILE *log = NULL;
	int c, k, rc;

	s.seed = (uint64_t)time(NULL);
	while ((c = getopt(argc, argv, "t:s:w:S:g:G:r:")) != -1) {
		if (c == 't')
			nthreads = strtol(optarg, NULL, 10);
		else if (c == 's')
			seconds = strtod(optarg, NULL);
		else if (c == 'w')
			warm = strtod(optarg, NULL);
		else if (c == 'S')
			s.seed = strtoull(optarg, NULL, 10);
		else if (c == 'g')
			max_growth = strtod(optarg, NULL);
		else if (c == 'G')
			max_kb = strtol(optarg, NULL, 10);
		else if (c == 'r')
			rsslog = optarg;
		else
			goto usage;
	}
	if ((argc - optind) % 4 || argc == optind || (argc - optind) / 4 > MAX_GROUPS ||
	    nthreads < 1 || nthreads > 256)
		goto usage;
	for (k = 0; optind < argc; k++, optind += 4) {
		s.g[k].name = argv[optind];
		s.g[k].pid = atoi(argv[optind + 1]);
		s.g[k].mount = argv[optind + 2];
		s.g[k].want = argv[optind + 3];
		s.g[k].vm = s.g[k].anon = (struct rss){ -1, -1, -1, -1 };
		if (load_group(&s.g[k]))
			return 1;
		s.total_files += s.g[k].nfiles;
	}
	s.ngroups = k;
	if (rsslog && !(log = fopen(rsslog, "w"))) {
		fprintf(stderr, "soakread: %s: %s\n", rsslog, strerror(errno));
		return 1;
	}
	signal(SIGBUS, on_sigbus);
	printf("soak: %d groups, %zu files, %ld threads, %.0f s, seed %llu\n",
	       s.ngroups, s.total_files, nthreads, seconds, (unsigned long long)s.seed);
	fflush(stdout);
	w = calloc((size_t)nthreads, sizeof(*w));
	if (!w)
		return 1;
	t0 = now();
	rss_sample(&s, log, 0, 0);
	for (t = 0; t < nthreads; t++) {
		w[t].s = &s;
		w[t].rng = s.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)t + 1;
		w[t].got = malloc(MAX_READ + 4096);
		w[t].want = malloc(MAX_READ + 4096);
		if (!w[t].got || !w[t].want ||
		    pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, "soakread: cannot start thread\n");
			return 1;
		}
	}
	while (atomic_load(&s.next_warm) < s.total_files + (size_t)nthreads)
		usleep(10000);	/* every thread has finished its warm-up file */
	printf("soak: warm-up pass %.1f s, every file read once\n", now() - t0);
	fflush(stdout);
	atomic_store(&s.phase, 1);
	tw = now();
	sample_until(&s, log, t0, tw + warm);
	tw = now();
	rss_sample(&s, log, tw - t0, 1);
	atomic_store(&s.phase, 2);
	for (k = 0; k < s.ngroups; k++) {	/* the random phase's figures alone */
		s.g[k].warm_reads = atomic_load(&s.g[k].reads);
		s.g[k].warm_bytes = atomic_load(&s.g[k].bytes);
		s.g[k].warm_eof = atomic_load(&s.g[k].eof_reads);
		s.g[k].warm_mmap = atomic_load(&s.g[k].mmap_reads);
		printf("soak: warm-up %s reads=%llu bytes=%llu\n", s.g[k].name,
		       s.g[k].warm_reads, s.g[k].warm_bytes);
	}
	sample_until(&s, log, t0, tw + seconds);
	atomic_store(&s.phase, 3);
	for (t = 0; t < nthreads; t++)
		pthread_join(w[t].tid, NULL);
	t1 = now();
	rss_sample(&s, log, t1 - t0, 2);
	rc = summary(&s, t1 - tw, max_growth, max_kb);
	if (log)
		fclose(log);
	return rc;
usage:
	fprintf(stderr, "usage: %s [-t THREADS] [-s SECONDS] [-w WARM_SECONDS] [-S SEED] "
		"[-g MAX_GROWTH_PCT] [-G MAX_GROWTH_KB] [-r RSS_LOG] NAME PID MOUNT WANT...\n",
		argv[0]);
	return 2;
}
