/*
 * test_http.c - the HTTP backend of core/io (http.c, httpreq.c,
 * diskcache.c, autoindex.c) against real servers: nginx from Debian,
 * started per test on a free loopback port with a configuration in a
 * temporary directory, and tests/unit/http_faults.py for the faults nginx
 * cannot make (Range ignored, 500s, 429, short bodies, a stall).
 *
 * Oracles: the served file's bytes as written to disk, the file's stat for
 * the stamp (nginx's ETag is "<mtime hex>-<size hex>"), readdir for
 * listings, and the servers' own logs for how many requests were sent.
 * Servers die with the test process (PR_SET_PDEATHSIG) and are killed by
 * PID in each test's fini.
 */
#include "http_fixture.h"

TestSuite(http, .init = setup, .fini = teardown, .timeout = 60);

Test(http, stamp_and_random_reads)
{
	struct source *s;
	struct stat st;
	char etag[64], *p, *u;
	uint8_t *want;
	size_t len;
	int fd;
	uint64_t base;

	write_file("www/data.bin", 5 * BLK + 12345, 1);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("data.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/data.bin", &len);
	p = path_in("www/data.bin");
	cr_assert_eq(stat(p, &st), 0);
	snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_mtime,
		 (unsigned long long)st.st_size);
	cr_assert_eq(source_stamp(s)->size, (uint64_t)st.st_size);
	cr_assert_str_eq(source_stamp(s)->etag, etag);
	cr_assert_eq(source_stamp(s)->mtime_ns, (int64_t)st.st_mtime * 1000000000);
	cr_assert_eq(source_is_remote(s), 1);
	cr_assert_eq(source_fd(s, &fd, &base), -ENOTSUP);
	cr_assert_str_eq(source_name(s), u);
	random_reads(s, want, len, 400, 7, 3 * BLK);
	cr_assert_eq(source_check(s), 0);
	source_close(s);
	free(want);
	free(p);
	free(u);
}

/* A mount's start looks at its source up to four times (layout_choose,
 * the layout, the open, the index check): one HEAD answers them all for
 * a second, and the answer of another environment (layout_choose's,
 * before the fork) is taken too (source_stat_seen).  Later looks ask
 * again; an absent name is asked each time. */
Test(http, looks_within_a_second_send_one_head)
{
	struct source_info info, again;
	struct source_env *first;
	struct source *s;
	char *u, *gone;

	write_file("www/m.bin", 3 * BLK, 4);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("m.bin");
	gone = url_of("absent.bin");
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(source_stat(env, u, &again), 0);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(count_log("access.log", "HEAD", NULL, NULL), 1);
	cr_assert_eq(again.stamp.size, 3 * BLK);
	cr_assert_eq(source_stamp(s)->size, 3 * BLK);
	cr_assert_str_eq(source_stamp(s)->etag, info.stamp.etag);
	source_close(s);
	cr_assert_eq(source_stat(env, gone, &again), -ENOENT);
	cr_assert_eq(source_stat(env, gone, &again), -ENOENT);
	cr_assert_eq(count_log("access.log", "HEAD", NULL, NULL), 3);
	usleep(1100 * 1000);
	cr_assert_eq(source_stat(env, u, &again), 0);
	cr_assert_eq(count_log("access.log", "HEAD", NULL, NULL), 4,
		     "a look a second later did not ask the server");
	/* a fresh environment told what the first one saw */
	first = env;
	new_env(5, 2, 0, NULL);
	source_stat_seen(env, u, &again);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(count_log("access.log", "HEAD", NULL, NULL), 4,
		     "the open asked again for what source_stat_seen told");
	cr_assert_str_eq(source_stamp(s)->etag, info.stamp.etag);
	source_close(s);
	source_env_free(first);
	free(gone);
	free(u);
}

Test(http, second_read_sends_no_request)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len;
	int before;
	char *u;

	write_file("www/c.bin", 3 * BLK + 5, 2);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("c.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	/* nginx says Accept-Ranges: opening sends one HEAD and no GET */
	cr_assert_eq(count_log("access.log", "HEAD", NULL, NULL), 1);
	cr_assert_eq(count_log("access.log", "GET", NULL, NULL), 0);
	want = read_back("www/c.bin", &len);
	got = malloc(len);
	/* one read of the whole file: its missing blocks in one range */
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	cr_assert_eq(data_gets("c.bin"), 1);
	/* the probe at open and the read: one connection, kept alive */
	cr_assert_eq(connections(), 1);
	before = all_requests();
	random_reads(s, want, len, 200, 3, BLK);
	cr_assert_eq(all_requests(), before, "reads of cached blocks sent requests");
	/* no-wait mode: served from memory, no request */
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, 1000, BLK - 10), 1000);
	cr_assert(!memcmp(got, want + BLK - 10, 1000));
	source_nowait(0);
	cr_assert_eq(all_requests(), before);
	source_close(s);
	free(want);
	free(got);
	free(u);
}

/* Opens u (www/REL) and reads it whole: its bytes must be want's, from the
 * caches (no data GET of REL); `why` says what a GET would mean. */
static struct source *open_read_cached(const char *u, const char *rel,
				       const uint8_t *want, uint8_t *got, size_t len,
				       const char *why)
{
	struct source *s;
	int before;

	cr_assert_eq(source_open(env, u, &s), 0);
	before = data_gets(rel);
	memset(got, 0, len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	cr_assert_eq(data_gets(rel), before, "%s", why);
	return s;
}

/* A source reopened after hundreds of others (the table of known sources
 * grown several times) gets its id back, so its cached blocks are found. */
Test(http, reopened_source_keeps_its_cache_among_many)
{
	struct source *s;
	uint8_t *want, *got;
	char name[32], *u, *v;
	size_t len;
	int i;

	write_file("www/c.bin", 2 * BLK, 3);
	u = path_in("www/m");
	cr_assert(mkdir(u, 0755) == 0 || errno == EEXIST, "%s: %s", u, strerror(errno));
	free(u);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "www/m/%03d.bin", i);
		write_file(name, 100, (uint64_t)i);
	}
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("c.bin");
	want = read_back("www/c.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	source_close(s);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "m/%03d.bin", i);
		v = url_of(name);
		cr_assert_eq(source_open(env, v, &s), 0, "%s", v);
		source_close(s);
		free(v);
	}
	s = open_read_cached(u, "c.bin", want, got, len,
			     "the reopened source's blocks were fetched again");
	source_close(s);
	free(want);
	free(got);
	free(u);
}

/* A source larger than the memory cache, read at random: a small read
 * alone in its 1 MiB region fetches only its bytes and keeps none; one
 * coming back to a region fetches (and keeps) its block. */
/* serve(NAME, SEED, CACHE, ...): www/NAME of 4 MiB served by nginx, opened
 * in a new mount env with a memory cache of CACHE bytes; its bytes in
 * *want (*len), its URL in *u. */
static struct source *serve(const char *name, uint64_t seed, uint64_t cache,
			    uint8_t **want, size_t *len, char **u)
{
	char rel[64];
	struct source *s;

	snprintf(rel, sizeof(rel), "www/%s", name);
	write_file(rel, 4u << 20, seed);
	start_nginx(0);
	new_env(5, 2, cache, NULL);
	*u = url_of(name);
	cr_assert_eq(source_open(env, *u, &s), 0);
	*want = read_back(rel, len);
	return s;
}

Test(http, scattered_small_reads_fetch_only_their_bytes)
{
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;

	s = serve("big.bin", 9, 256u << 10, &want, &len, &u);
	cr_assert_eq(source_pread(s, got, 3000, 100000), 3000);
	cr_assert(!memcmp(got, want + 100000, 3000));
	cr_assert_eq(source_pread(s, got, 3000, (2u << 20) + 777), 3000);
	cr_assert(!memcmp(got, want + (2u << 20) + 777, 3000));
	cr_assert_eq(data_gets("big.bin"), 2);
	cr_assert_eq(bytes_sent("big.bin"), 6000, "more than the bytes read");
	/* nothing kept */
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, 100, 100000), -EAGAIN);
	source_nowait(0);
	/* region 0 again: its block, kept */
	cr_assert_eq(source_pread(s, got, 500, 3 * BLK + 100), 500);
	cr_assert(!memcmp(got, want + 3 * BLK + 100, 500));
	cr_assert_eq(bytes_sent("big.bin"), 6000 + BLK);
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, 1000, 3 * BLK + 2000), 1000);
	cr_assert(!memcmp(got, want + 3 * BLK + 2000, 1000));
	source_nowait(0);
	random_reads(s, want, len, 300, 11, 2 * BLK);
	source_close(s);
	free(want);
	free(u);
}

/* source_advise(WILLNEED) fetches the range in the background, one GET of
 * its blocks; the reader then finds them in memory. */
Test(http, willneed_prefetches_in_the_background)
{
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;
	int i;

	s = serve("next.bin", 21, 8u << 20, &want, &len, &u);
	source_advise(s, (1u << 20) + 5, 256u << 10, SOURCE_ADV_WILLNEED);
	source_nowait(1);
	for (i = 0; i < 500 && source_pread(s, got, 3000, (1u << 20) + 5) == -EAGAIN; i++)
		usleep(10000);
	cr_assert_lt(i, 500, "the hinted bytes never landed");
	cr_assert(!memcmp(got, want + (1u << 20) + 5, 3000));
	/* its last block landed too (hf_fetch puts a GET's blocks in one by
	 * one: wait for it), and nothing past it */
	for (i = 0; i < 500 && source_pread(s, got, 100, (1u << 20) + (256u << 10)) == -EAGAIN;
	     i++)
		usleep(10000);
	cr_assert_eq(source_pread(s, got, 100, (1u << 20) + (256u << 10)), 100);
	cr_assert(!memcmp(got, want + (1u << 20) + (256u << 10), 100));
	cr_assert_eq(source_pread(s, got, 100, (1u << 20) + 9 * BLK), -EAGAIN);
	cr_assert_eq(source_pread(s, got, 100, 0), -EAGAIN);
	source_nowait(0);
	cr_assert_eq(data_gets("next.bin"), 1);
	cr_assert_eq(bytes_sent("next.bin"), 9 * BLK, "blocks 32..40 in one GET");
	/* past the end and of nothing: no request */
	source_advise(s, len, 4096, SOURCE_ADV_WILLNEED);
	source_advise(s, 0, 0, SOURCE_ADV_WILLNEED);
	source_close(s);
	cr_assert_eq(data_gets("next.bin"), 1);
	free(want);
	free(u);
}

/* A hint of SOURCE_WILLNEED_SPAN bytes (members next to each other, which
 * a layout joins up to it), wherever it starts, is one GET of the blocks
 * around it, its last byte included: a hint cut short of it would leave
 * the last member's end to a GET of its reader. */
Test(http, willneed_span_is_one_get)
{
	const uint64_t off = (1u << 20) + 5, end = off + SOURCE_WILLNEED_SPAN;
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;
	int i;

	s = serve("span.bin", 22, 8u << 20, &want, &len, &u);
	source_advise(s, off, SOURCE_WILLNEED_SPAN, SOURCE_ADV_WILLNEED);
	source_nowait(1);
	for (i = 0; i < 500 && source_pread(s, got, 100, end - 100) == -EAGAIN; i++)
		usleep(10000);
	cr_assert_lt(i, 500, "the hint's last bytes never landed");
	cr_assert(!memcmp(got, want + end - 100, 100));
	cr_assert_eq(source_pread(s, got, 3000, off), 3000);
	cr_assert(!memcmp(got, want + off, 3000));
	cr_assert_eq(source_pread(s, got, 100, (end / BLK + 1) * BLK), -EAGAIN,
		     "nothing past the hint's blocks");
	source_nowait(0);
	cr_assert_eq(data_gets("span.bin"), 1);
	cr_assert_eq(bytes_sent("span.bin"), (end / BLK + 1) * BLK - (off / BLK) * BLK);
	source_close(s);
	free(want);
	free(u);
}

Test(http, nowait_misses_give_eagain)
{
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;
	int before;

	write_file("www/n.bin", 4 * BLK, 3);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("n.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/n.bin", &len);
	before = all_requests();
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, sizeof(got), 2 * BLK), -EAGAIN);
	source_nowait(0);
	cr_assert_eq(all_requests(), before, "a no-wait read sent a request");
	cr_assert_eq(source_pread(s, got, sizeof(got), 2 * BLK), (ssize_t)sizeof(got));
	cr_assert(!memcmp(got, want + 2 * BLK, sizeof(got)));
	source_nowait(1);
	/* a read across into a block not fetched still misses */
	cr_assert_eq(source_pread(s, got, sizeof(got), 3 * BLK - 100), -EAGAIN);
	cr_assert_eq(source_pread(s, got, 100, 3 * BLK - 100), 100);
	source_nowait(0);
	source_close(s);
	free(want);
	free(u);
}

Test(http, sequential_reads_are_read_ahead)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len, off, k = 64 << 10;
	uint64_t sent;
	char *u;
	int gets;

	write_file("www/seq.bin", 40 * BLK + 77, 4);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("seq.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/seq.bin", &len);
	got = malloc(k);
	for (off = 0; off < len; off += k) {
		size_t e = len - off < k ? len - off : k;

		cr_assert_eq(source_pread(s, got, k, off), (ssize_t)e);
		cr_assert(!memcmp(got, want + off, e), "bytes at %zu", off);
	}
	gets = data_gets("seq.bin");
	/* block by block would be 41 requests; readahead doubles to 32 */
	cr_assert(gets >= 2 && gets <= 8, "%d requests for 41 blocks read in order", gets);
	sent = bytes_sent("seq.bin");
	cr_assert_eq(sent, len, "%llu bytes sent for a file of %zu read once in order",
		     (unsigned long long)sent, len);
	/* the reader's requests and at most two prefetches at a time, each
	 * on a kept-alive connection */
	cr_assert(connections() <= 3 && connections() < all_requests(),
		  "%d connections for %d requests", connections(), all_requests());
	source_close(s);
	source_env_free(env);

	/* in a cache of 32 blocks, what is read ahead and prefetched is still
	 * there when read */
	new_env(5, 2, 32 * (BLK + 256), NULL);
	cr_assert_eq(source_open(env, u, &s), 0);
	for (off = 0; off < len; off += k) {
		size_t e = len - off < k ? len - off : k;

		cr_assert_eq(source_pread(s, got, k, off), (ssize_t)e);
		cr_assert(!memcmp(got, want + off, e), "bytes at %zu", off);
	}
	cr_assert(data_gets("seq.bin") - gets <= 41 / 2, "%d requests for 41 blocks "
		  "with a small cache", data_gets("seq.bin") - gets);
	cr_assert_eq(bytes_sent("seq.bin") - sent, len, "%llu bytes sent for a file of "
		     "%zu read in order", (unsigned long long)(bytes_sent("seq.bin") - sent),
		     len);
	source_close(s);

	/* closed halfway, with prefetches queued or running: they are
	 * dropped or waited for, and the next source of the mount reads right */
	cr_assert_eq(source_open(env, u, &s), 0);
	for (off = 0; off < len / 2; off += k)
		cr_assert_eq(source_pread(s, got, k, off), (ssize_t)k);
	source_close(s);
	cr_assert_eq(source_open(env, u, &s), 0);
	random_reads(s, want, len, 50, 5, 2 * BLK);
	source_close(s);
	free(want);
	free(got);
	free(u);
}

Test(http, disk_cache_survives_remount_and_changes)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len;
	char *u, *cache = path_in("cache");
	int before;

	write_file("www/d.bin", 6 * BLK + 99, 5);
	set_mtime("www/d.bin", 1500000000);
	start_nginx(0);
	u = url_of("d.bin");
	new_env(5, 2, 0, cache);
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/d.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	source_close(s);
	source_env_free(env);
	env = NULL;

	/* a new mount: the blocks come from the disk */
	new_env(5, 2, 0, cache);
	s = open_read_cached(u, "d.bin", want, got, len, "blocks on disk were fetched again");
	random_reads(s, want, len, 100, 11, 2 * BLK);
	source_close(s);
	source_env_free(env);
	env = NULL;
	free(want);

	/* the file changes (same size, another mtime: another ETag): the old
	 * blocks on disk must not be served */
	write_file("www/d.bin", 6 * BLK + 99, 6);
	set_mtime("www/d.bin", 1600000000);
	want = read_back("www/d.bin", &len);
	new_env(5, 2, 0, cache);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len), "served blocks of the old version");
	cr_assert(data_gets("d.bin") > before);
	source_close(s);
	free(want);
	free(got);
	free(u);
	free(cache);
}

/* Files in the cache directory and their total size. */
static uint64_t dir_bytes(const char *dir, int *files)
{
	char *cmd, line[64];
	unsigned long long b = 0;
	FILE *p;

	cr_assert(asprintf(&cmd, "find %s -type f -printf '%%s\\n' | awk '{s+=$1; n++} "
			   "END {print s+0, n+0}'", dir) > 0);
	p = popen(cmd, "r");
	cr_assert(p && fgets(line, sizeof(line), p));
	pclose(p);
	free(cmd);
	cr_assert_eq(sscanf(line, "%llu %d", &b, files), 2);
	return b;
}

Test(http, disk_cache_is_bounded)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len;
	char *u, *cache = path_in("cache");
	int files;
	uint64_t bound = 4 * BLK + 4096;

	write_file("www/b.bin", 16 * BLK, 7);
	start_nginx(0);
	u = url_of("b.bin");
	{
		struct source_config cfg = { .timeout_s = 5, .retries = 2,
					     .cache_dir = cache, .cache_dir_bytes = bound };

		cr_assert_eq(source_env_new(&cfg, &env), 0);
	}
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/b.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	cr_assert(dir_bytes(cache, &files) <= bound, "cache_dir holds more than its bound");
	cr_assert(files >= 1);
	source_close(s);
	free(want);
	free(got);
	free(u);
	free(cache);
}

/* ... and the change holds for every source of the URL in the mount,
 * cached bytes included: one opened before, which shares the cached
 * blocks (on main it read the old bytes from them), and one opened after,
 * whose HEAD shows the new stamp. */
Test(http, changed_source_gives_eio_and_one_warning)
{
	struct source *s, *before, *after;
	struct capture c;
	uint8_t got[1000];
	char *u, *text, *p;
	int n = 0;

	write_file("www/ch.bin", 4 * BLK, 8);
	set_mtime("www/ch.bin", 1500000000);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("ch.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(source_open(env, u, &before), 0);
	cr_assert_eq(source_pread(s, got, sizeof(got), 0), (ssize_t)sizeof(got));
	write_file("www/ch.bin", 4 * BLK, 9);
	set_mtime("www/ch.bin", 1600000000);
	capture_start(&c);
	cr_assert_eq(source_pread(s, got, sizeof(got), 3 * BLK), -EIO);
	cr_assert_eq(source_check(s), -EIO);
	/* once changed, cached bytes are not served either */
	cr_assert_eq(source_pread(s, got, sizeof(got), 0), -EIO);
	cr_assert_eq(source_pread(s, got, sizeof(got), 2 * BLK), -EIO);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "ETag"), "%s", text);
	for (p = text; (p = strstr(p, "changed since mounting")); p++)
		n++;
	cr_assert_eq(n, 1, "the change warned %d times: %s", n, text);
	free(text);
	cr_assert_eq(source_pread(before, got, sizeof(got), 0), -EIO,
		     "another source of the URL served the old bytes from the cache");
	cr_assert_eq(source_check(before), -EIO);
	cr_assert_eq(source_open(env, u, &after), 0);
	cr_assert_eq(source_pread(after, got, sizeof(got), 0), -EIO,
		     "a source opened after the change read");
	source_close(after);
	source_close(before);
	source_close(s);
	free(u);
}

Test(http, missing_forbidden_and_names)
{
	struct source *s;
	struct source_info info;
	struct capture c;
	uint8_t *want, got[64];
	size_t len;
	char *u, *text, *d;
	const char *odd = "a b+c%25 \xc3\xa9.bin";

	write_file("www/a b+c%25 \xc3\xa9.bin", 60, 10);
	d = path_in("www/forbidden");
	cr_assert_eq(mkdir(d, 0755), 0);
	free(d);
	write_file("www/forbidden/f.bin", 10, 11);
	start_nginx(0);
	new_env(5, 2, 0, NULL);

	u = url_of("nothere.bin");
	capture_start(&c);
	cr_assert_eq(source_open(env, u, &s), -ENOENT);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "404"), "%s", text);
	free(text);
	cr_assert_eq(source_stat(env, u, &info), -ENOENT);
	free(u);

	u = url_of("forbidden/f.bin");
	capture_start(&c);
	cr_assert_eq(source_open(env, u, &s), -EACCES);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "403"), "%s", text);
	free(text);
	free(u);

	/* a name that needs percent-encoding, joined as layouts do */
	u = source_join(sv.url, odd);
	cr_assert(u && strstr(u, "%20") && strstr(u, "%2525"), "%s", u);
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/a b+c%25 \xc3\xa9.bin", &len);
	cr_assert_eq(source_pread(s, got, sizeof(got), 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	source_close(s);
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(info.is_dir, 0);
	cr_assert_eq(info.stamp.size, len);
	free(want);
	free(u);
}

struct names {
	char *v[64];
	int dir[64];
	int n;
};

static int collect(void *arg, const char *name, int is_dir)
{
	struct names *ns = arg;

	cr_assert(ns->n < 64);
	ns->dir[ns->n] = is_dir;
	ns->v[ns->n++] = strdup(name);
	return 0;
}

static void forget(struct names *ns)
{
	while (ns->n)
		free(ns->v[--ns->n]);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(http, listings_and_stat_of_directories)
{
	const char *names[] = { "plain.npy", "with space.npy", "q\"uo\\te.npy",
				"\xc3\xa9t\xc3\xa9.npy", "sub" };
	struct source_info info;
	struct names got = { 0 };
	struct capture c;
	struct dirent *de;
	char *want[64], *d, *u, *text;
	int nwant = 0, i;
	DIR *dir;

	for (i = 0; i < 4; i++) {
		char *rel;

		cr_assert(asprintf(&rel, "www/list/%s", names[i]) > 0);
		if (i == 0) {
			d = path_in("www/list");
			cr_assert_eq(mkdir(d, 0755), 0);
			free(d);
			d = path_in("www/list/sub");
			cr_assert_eq(mkdir(d, 0755), 0);
			free(d);
			d = path_in("www/html");
			cr_assert_eq(mkdir(d, 0755), 0);
			free(d);
		}
		write_file(rel, 10, (uint64_t)i);
		free(rel);
	}
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("list/");
	cr_assert_eq(source_list(env, u, collect, &got), 0);
	/* the oracle: readdir of the served directory */
	d = path_in("www/list");
	cr_assert((dir = opendir(d)));
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			want[nwant++] = strdup(de->d_name);
	closedir(dir);
	free(d);
	cr_assert_eq(got.n, nwant);
	for (i = 0; i < got.n; i++)
		cr_assert_eq(got.dir[i], !strcmp(got.v[i], "sub"), "%s", got.v[i]);
	qsort(got.v, (size_t)got.n, sizeof(char *), by_name);
	qsort(want, (size_t)nwant, sizeof(char *), by_name);
	for (i = 0; i < nwant; i++) {
		cr_assert_str_eq(got.v[i], want[i]);
		free(want[i]);
	}
	free(u);

	/* without the trailing slash too; stat says directory either way */
	u = url_of("list");
	forget(&got);
	cr_assert_eq(source_list(env, u, collect, &got), 0);
	cr_assert_eq(got.n, nwant);
	forget(&got);
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(info.is_dir, 1);
	free(u);
	u = url_of("list/sub/");
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(info.is_dir, 1);
	free(u);
	u = url_of("list/nothere/");
	cr_assert_eq(source_list(env, u, collect, &got), -ENOENT);
	free(u);
	/* an HTML index is no listing */
	u = url_of("html/");
	capture_start(&c);
	cr_assert_eq(source_list(env, u, collect, &got), -ENOTSUP);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "not a JSON directory listing"), "%s", text);
	free(text);
	free(u);
	{
		struct source *s;

		u = url_of("list/sub/");
		cr_assert_eq(source_open(env, u, &s), -EISDIR);
		free(u);
		u = url_of("list/sub");	/* nginx redirects to list/sub/ */
		cr_assert_eq(source_open(env, u, &s), -EISDIR);
		free(u);
	}
}

static int stop_at_two(void *arg, const char *name, int is_dir)
{
	int *n = arg;

	(void)name;
	(void)is_dir;
	return ++*n == 2 ? 42 : 0;
}

Test(http, autoindex_parser)
{
	const char *ok = " [ {\"name\":\"a\\\"b\\\\c\\u0041\\td\",\"type\":\"file\",\"size\":3,\"p\":\"\\/\","
			 "\"x\":[1,-2.5e3,{\"y\":null}],\"t\":true},\n"
			 "{\"type\":\"directory\",\"name\":\"\\u00e9\\ud83d\\ude00\"},"
			 "{\"name\":\"..\",\"type\":\"directory\"},"
			 "{\"name\":\"x/y\",\"type\":\"file\"},"
			 "{\"name\":\"nul\\u0000\",\"type\":\"file\"},"
			 "{\"name\":\"link\",\"type\":\"other\"},{}] ";
	const char *bad[] = {
		"", "{}", "[", "[{\"name\":\"a\",\"type\":\"file\"}", "[]x",
		"[{\"name\":\"a\"\"type\":\"file\"}]", "[{\"name\":\"a\\q\"}]",
		"[{\"name\":\"\\ud800\"}]", "[{\"name\":\"\\udc00x\"}]",
		"[{\"name\":\"a\\u12\"}]", "[{\"name\":\"a\x01\"}]", "[{\"n\":tru}]",
		"[{\"n\":-}]", "[{\"name\":\"abc\\\"]", "<html><body>Index of /</body></html>",
		"[{\"name\":\"a\",}]",
	};
	struct names got = { 0 };
	char deep[300];
	size_t i;
	int n = 0;

	cr_assert_eq(autoindex_parse(ok, strlen(ok), collect, &got), 0);
	cr_assert_eq(got.n, 2);
	cr_assert_str_eq(got.v[0], "a\"b\\cA\td");
	cr_assert_eq(got.dir[0], 0);
	cr_assert_str_eq(got.v[1], "\xc3\xa9\xf0\x9f\x98\x80");
	cr_assert_eq(got.dir[1], 1);
	forget(&got);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(autoindex_parse(bad[i], strlen(bad[i]), collect, &got),
			     -ENOTSUP, "accepted: %s", bad[i]);
	/* not even the good entries before the damage */
	cr_assert_eq(got.n, 0);
	/* nesting deeper than any listing's is refused, not recursed into */
	memset(deep, '[', sizeof(deep));
	cr_assert_eq(autoindex_parse(deep, sizeof(deep), collect, &got), -ENOTSUP);
	memcpy(deep, "[{\"x\":", 6);
	cr_assert_eq(autoindex_parse(deep, sizeof(deep), collect, &got), -ENOTSUP);
	/* the callback's value stops the listing */
	{
		const char *three = "[{\"name\":\"a\",\"type\":\"file\"},{\"name\":\"b\","
				     "\"type\":\"file\"},{\"name\":\"c\",\"type\":\"file\"}]";

		cr_assert_eq(autoindex_parse(three, strlen(three), stop_at_two, &n), 42);
	}
	cr_assert_eq(n, 2);
}
