/*
 * test_http_faults.c - the HTTP backend of core/io against servers that
 * misbehave: tests/unit/http_faults.py (Range ignored, 500s, 429 with
 * Retry-After, short and long bodies, stalls), HTTPS, many readers at once,
 * and the bounds of a read (its deadline, shared failures, cancelling).
 * Servers and oracles as in test_http.c (tests/unit/http_fixture.h).
 */
#include "http_fixture.h"

TestSuite(http, .init = setup, .fini = teardown, .timeout = 60);

/* ---- faults, from http_faults.py ---- */

/* www/<rel> (size bytes) served by http_faults.py in `mode`, with a mount's
 * settings; its URL in *url. */
static void faulty(const char *rel, size_t size, uint64_t seed, const char *mode,
		   const char *n, unsigned timeout, unsigned retries, char **url)
{
	char *file;

	cr_assert(asprintf(&file, "www/%s", rel) > 0);
	write_file(file, size, seed);
	start_faults(file, mode, n);
	new_env(timeout, retries, 0, NULL);
	*url = url_of(rel);
	free(file);
}

/* The whole of www/<rel> read through s, compared with the file. */
static void read_whole(struct source *s, const char *rel)
{
	char *file;
	uint8_t *want, *got;
	size_t len;

	cr_assert(asprintf(&file, "www/%s", rel) > 0);
	want = read_back(file, &len);
	got = malloc(len + 1);
	cr_assert_eq(source_pread(s, got, len + 1, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len), "%s: other bytes than the file's", rel);
	free(want);
	free(got);
	free(file);
}

/* What was said while opening u failed with rc (malloc'ed). */
static char *open_fails(const char *u, int rc)
{
	struct source *s = NULL;
	struct capture c;

	capture_start(&c);
	cr_assert_eq(source_open(env, u, &s), rc);
	return capture_end(&c);
}

/* What was said while a read of n bytes at off failed with EIO. */
static char *read_fails(struct source *s, size_t n, uint64_t off)
{
	uint8_t *got = malloc(n);
	struct capture c;

	capture_start(&c);
	cr_assert_eq(source_pread(s, got, n, off), -EIO);
	free(got);
	return capture_end(&c);
}

/* The log of http_faults.py serving www/<rel> (words as count_log's). */
static int fault_log(const char *rel, const char *method, const char *range,
		     const char *status)
{
	char log[128];

	snprintf(log, sizeof(log), "www/%s.log", rel);
	return count_log(log, method, range, status);
}

Test(http, server_ignoring_range_is_refused)
{
	char *u, *text;

	faulty("r.bin", 3 * BLK, 12, "norange", "0", 5, 2, &u);
	text = open_fails(u, -EIO);
	cr_assert(strstr(text, u) && strstr(text, "ignores Range"), "%s", text);
	free(text);
	free(u);
}

Test(http, server_saying_it_serves_ranges_and_not_gives_eio)
{
	struct source *s;
	char *u, *text, range[64];

	faulty("l.bin", 3 * BLK, 21, "liar", "0", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);	/* HEAD believed */
	text = read_fails(s, 100, BLK);
	snprintf(range, sizeof(range), "bytes %u-%u", BLK, 2 * BLK - 1);	/* block 1 */
	cr_assert(strstr(text, u) && strstr(text, "ignores Range") &&
		  strstr(text, range), "%s", text);
	cr_assert_eq(fault_log("l.bin", NULL, NULL, "200"), 2, "the HEAD and one GET");
	free(text);
	source_close(s);
	free(u);
}

Test(http, errors_are_retried)
{
	struct source *s;
	char *u;

	faulty("e.bin", 3 * BLK + 1, 13, "fail500", "2", 5, 3, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(fault_log("e.bin", "HEAD", NULL, "500"), 2);
	read_whole(s, "e.bin");
	source_close(s);
	free(u);
}

Test(http, errors_beyond_the_retries_give_eio)
{
	char *u, *text;

	faulty("e.bin", 100, 14, "fail500", "100", 5, 2, &u);
	text = open_fails(u, -EIO);
	cr_assert(strstr(text, u) && strstr(text, "HTTP 500") &&
		  strstr(text, "3 attempts"), "%s", text);
	cr_assert_eq(fault_log("e.bin", "HEAD", NULL, "500"), 3);
	free(text);
	free(u);
}

Test(http, too_many_requests_waits_and_retries)
{
	struct source *s;
	char *u;

	faulty("t.bin", 100, 15, "r429", "1", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	read_whole(s, "t.bin");
	cr_assert_eq(fault_log("t.bin", NULL, NULL, "429"), 1);
	source_close(s);
	free(u);
}

Test(http, short_bodies_are_retried)
{
	struct source *s;
	char *u;

	faulty("s.bin", 2 * BLK + 3, 16, "short", "1", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	read_whole(s, "s.bin");
	cr_assert_eq(fault_log("s.bin", "GET", NULL, NULL), 2);
	source_close(s);
	free(u);
}

Test(http, longer_body_than_asked_is_an_error)
{
	struct source *s;
	char *u, *text;

	faulty("o.bin", 1000, 17, "overlong", "0", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	text = read_fails(s, 100, 0);
	cr_assert(strstr(text, u) && strstr(text, "more than"), "%s", text);
	free(text);
	source_close(s);
	free(u);
}

Test(http, https_verified_and_http2)
{
	struct source *s;
	struct capture c;
	uint8_t *want, *got;
	size_t len;
	char *u, *text;

	write_file("www/h.bin", 2 * BLK + 9, 19);
	start_nginx(1);
	u = url_of("h.bin");
	/* without the CA: refused */
	{
		struct source_config cfg = { .timeout_s = 5, .retries = 1 };

		cr_assert_eq(source_env_new(&cfg, &env), 0);
		capture_start(&c);
		cr_assert_eq(source_open(env, u, &s), -EIO);
		text = capture_end(&c);
		cr_assert(strstr(text, u) && strstr(text, "certificate"), "%s", text);
		free(text);
		source_env_free(env);
		/* insecure: served */
		cfg.insecure = 1;
		cr_assert_eq(source_env_new(&cfg, &env), 0);
		cr_assert_eq(source_open(env, u, &s), 0);
		source_close(s);
		source_env_free(env);
		env = NULL;
	}
	new_env(5, 2, 0, NULL);		/* with cacert= */
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/h.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	source_close(s);
	{
		/* every request went over HTTP/2 (the last may not be logged
		 * yet: settle() speaks plain HTTP; the ones before it are) */
		char *p = path_in("access.log"), line[512];
		FILE *f = fopen(p, "r");
		int h2 = 0, n = 0;

		cr_assert(f);
		while (fgets(line, sizeof(line), f)) {
			n++;
			h2 += strstr(line, "HTTP/2.0") != NULL;
		}
		fclose(f);
		free(p);
		cr_assert(n >= 2 && h2 == n, "%d of %d requests over HTTP/2", h2, n);
	}
	free(want);
	free(got);
	free(u);
}

/* ---- many threads at once ---- */

struct reader {
	struct source *s;
	const uint8_t *want;
	size_t len;
	uint64_t seed;
	int bad;
};

static void *reader(void *arg)
{
	struct reader *r = arg;
	uint8_t *got = malloc(3 * BLK);
	uint64_t off, seed = r->seed;
	size_t k, e;
	ssize_t n;
	int i;

	for (i = 0; i < 150 && got; i++) {
		off = rnd(&seed) % r->len;
		k = 1 + rnd(&seed) % (3 * BLK);
		e = r->len - off < k ? r->len - off : k;
		n = source_pread(r->s, got, k, off);
		if (n != (ssize_t)e || memcmp(got, r->want + off, e))
			r->bad++;
	}
	free(got);
	return NULL;
}

Test(http, concurrent_readers)
{
	struct reader rd[8];
	pthread_t t[8];
	struct source *s;
	uint8_t *want;
	size_t len;
	char *u;
	int i;

	write_file("www/m.bin", 24 * BLK + 321, 20);
	start_nginx(0);
	/* a cache of 6 blocks: blocks are evicted and fetched again while
	 * other threads read them */
	new_env(5, 2, 6 * (BLK + 256), NULL);
	u = url_of("m.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/m.bin", &len);
	for (i = 0; i < 8; i++) {
		rd[i] = (struct reader){ s, want, len, (uint64_t)i * 7919 + 1, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, reader, &rd[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(rd[i].bad, 0, "thread %d: %d reads wrong", i, rd[i].bad);
	}
	source_close(s);
	free(want);
	free(u);
}

/* ---- bounds: one deadline per read, shared outcomes, cancelling ---- */

#define SLACK 2.0	/* seconds over a bound: a noisy 2-core VM, ASan */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A server that answers HEAD and never a GET, timeout=1, retries=5: each
 * attempt could wait 1 s, six of them with their backoff ~8 s (issue 16:
 * 6 x 30 s).  The read gives up at read_timeout, 2 x timeout = 2 s, all
 * of it included. */
Test(http, stalled_read_ends_at_its_deadline)
{
	struct source *s;
	char *u, *text;
	double t;

	faulty("dl.bin", 1000, 22, "stall", "0", 1, 5, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	t = now_s();
	text = read_fails(s, 100, 0);
	t = now_s() - t;
	cr_assert(t >= 0.9 && t < 2 + SLACK, "EIO after %.1f s, read_timeout 2 s", t);
	cr_assert(strstr(text, u) && strstr(text, "bytes 0-999") &&
		  strstr(text, "read_timeout=2") && strstr(text, "attempts"), "%s", text);
	/* the first attempt's 1 s, and what is left for a second */
	cr_assert(fault_log("dl.bin", "GET", NULL, "stalled") <= 2, "%d GETs",
		  fault_log("dl.bin", "GET", NULL, "stalled"));
	free(text);
	source_close(s);
	free(u);
}

struct bg_read {
	struct source *s;
	uint64_t off;
	struct source_cancel cancel;
	int scoped;		/* read under `cancel` */
	ssize_t rc;
	double end;		/* when its read returned (now_s) */
	pthread_t t;
};

static void *bg_reader(void *arg)
{
	struct bg_read *b = arg;
	uint8_t buf[100];

	if (b->scoped)
		source_cancel_scope(&b->cancel);
	b->rc = source_pread(b->s, buf, sizeof(buf), b->off);
	b->end = now_s();
	source_cancel_scope(NULL);
	return NULL;
}

static void bg_start(struct bg_read *b, struct source *s, uint64_t off, int scoped)
{
	*b = (struct bg_read){ .s = s, .off = off, .scoped = scoped, .rc = 1 };
	cr_assert_eq(pthread_create(&b->t, NULL, bg_reader, b), 0);
}

static void nap(double sec)
{
	struct timespec ts = { (time_t)sec, (long)((sec - (time_t)sec) * 1e9) };

	nanosleep(&ts, NULL);
}

/* Two reads of one block at once on a stalled server share one request and
 * its failure: one round of attempts, not one per read (before: the second
 * waited for the first, then sent its own round, 4 GETs and twice the
 * time).  A read of the block right after (the kernel asking again for the
 * page its failed readahead had) takes that failure at once. */
Test(http, reads_of_the_same_blocks_share_a_failure)
{
	struct bg_read a, b;
	struct source *s;
	uint8_t buf[100];
	char *u;
	double t;
	int gets;

	faulty("sh.bin", 4 * BLK, 23, "stall", "0", 1, 1, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	t = now_s();
	bg_start(&a, s, 0, 0);
	bg_start(&b, s, 200, 0);
	pthread_join(a.t, NULL);
	pthread_join(b.t, NULL);
	t = now_s() - t;
	cr_assert(a.rc == -EIO && b.rc == -EIO, "%zd %zd", a.rc, b.rc);
	cr_assert_lt(t, 2 + SLACK, "%.1f s for two reads of one block", t);
	gets = fault_log("sh.bin", "GET", NULL, "stalled");
	cr_assert(gets >= 1 && gets <= 2, "%d GETs: a round per read", gets);
	/* taken at once: no new request (counted, not timed: a loaded
	 * machine made a 0.5 s bound fail once in a clean-clone run).  The
	 * bytes of the read that returned last: when the second read sent a
	 * round of its own (2 GETs), the first's failure may be older than
	 * FAIL_HOLD_MS by now (a clean-clone run saw a third GET) */
	cr_assert_eq(source_pread(s, buf, sizeof(buf), (a.end > b.end ? a.off : b.off) + 50),
		     -EIO);
	cr_assert_eq(fault_log("sh.bin", "GET", NULL, "stalled"), gets,
		     "asked again: a new round of GETs");
	source_close(s);
	free(u);
}

/* Issue 25: a failure is held for the bytes of the read that failed (the
 * kernel asks again for that page right after), not for the other bytes
 * of its blocks: a read of another part of the same block right after,
 * the server answering again, is answered (before: EIO for 2 s). */
Test(http, failure_is_held_for_its_bytes_only)
{
	struct source *s;
	uint8_t buf[100], *want;
	size_t len;
	char *u, *text;

	faulty("hb.bin", 4 * BLK, 25, "getfail", "2", 5, 1, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	text = read_fails(s, 100, 0);	/* 2 attempts, 2 x 500 */
	free(text);
	cr_assert_eq(fault_log("hb.bin", "GET", NULL, "500"), 2);
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 50), -EIO,
		     "the same bytes asked again take the failure");
	cr_assert_eq(fault_log("hb.bin", "GET", NULL, "500"), 2, "without a request");
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 1000), (ssize_t)sizeof(buf),
		     "other bytes of the same block are fetched");
	want = read_back("www/hb.bin", &len);
	cr_assert(len == 4 * BLK && !memcmp(buf, want + 1000, sizeof(buf)),
		  "the file's bytes");
	free(want);
	source_close(s);
	free(u);
}

/* Waits (20 s at most) until the fault server logged n stalled GETs of
 * rel: a request is sent by another thread, the time that takes is the
 * machine's */
static void until_logged(const char *rel, int n)
{
	int i;

	for (i = 0; i < 200 && fault_log(rel, "GET", NULL, "stalled") < n; i++)
		nap(0.1);
}

/* read_timeout 60 s: only source_cancel ends these reads early.  A read
 * waiting for another's request and the read running it each give EINTR
 * at once when cancelled; the other goes on waiting, and when the one
 * running the request is cancelled its request is dropped and the read
 * that waited sends its own. */
Test(http, cancelled_reads_give_eintr_at_once)
{
	struct bg_read a, b;
	struct source *s;
	char *u;
	double t;

	faulty("cn.bin", 4 * BLK, 24, "stall", "0", 30, 1, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	bg_start(&a, s, 0, 1);		/* sends the request */
	until_logged("cn.bin", 1);	/* then b waits for it, not its own */
	bg_start(&b, s, 300, 1);	/* waits for it */
	nap(0.3);
	t = now_s();
	source_cancel(&b.cancel);
	pthread_join(b.t, NULL);
	cr_assert_eq(b.rc, -EINTR);
	/* "at once": far under the 30 s stall, whatever the machine's load */
	cr_assert_lt(now_s() - t, 10.0, "the waiting read took %.1f s", now_s() - t);
	cr_assert_eq(a.rc, 1, "the other read ended too (%zd)", a.rc);

	bg_start(&b, s, 300, 1);	/* waits again */
	nap(0.3);
	t = now_s();
	source_cancel(&a.cancel);
	pthread_join(a.t, NULL);
	cr_assert_eq(a.rc, -EINTR);
	cr_assert_lt(now_s() - t, 10.0, "the read running the request took %.1f s",
		     now_s() - t);
	until_logged("cn.bin", 2);	/* b's own request, sent once a's dropped */
	nap(0.2);			/* and a third, were there one */
	cr_assert_eq(b.rc, 1, "the waiting read ended with its request (%zd)", b.rc);
	cr_assert_eq(fault_log("cn.bin", "GET", NULL, "stalled"), 2,
		     "the dropped request was not sent again by the read waiting");
	source_cancel(&b.cancel);
	pthread_join(b.t, NULL);
	cr_assert_eq(b.rc, -EINTR);
	source_close(s);
	free(u);
}

/* A 206 without Content-Length whose body ends early when the server
 * closes: only Content-Range says it is short.  Retried, then EIO: never
 * served short, nor padded. */
Test(http, short_body_without_length_is_retried_then_eio)
{
	struct source *s;
	char *u, *text;

	faulty("nl.bin", 3 * BLK, 25, "nolen", "100", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	text = read_fails(s, 2 * BLK, 100);
	cr_assert(strstr(text, u) && strstr(text, "short body"), "%s", text);
	cr_assert_eq(fault_log("nl.bin", "GET", NULL, "206"), 3, "3 attempts");
	free(text);
	source_close(s);
	free(u);
}

Test(http, short_body_without_length_once_is_retried)
{
	struct source *s;
	char *u;

	faulty("nm.bin", 3 * BLK, 26, "nolen", "1", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	read_whole(s, "nm.bin");
	cr_assert_eq(fault_log("nm.bin", "GET", NULL, "206"), 2);
	source_close(s);
	free(u);
}

/* Opens www/<rel>, served by http_faults.py with Retry-After: SECONDS on
 * its first answer (a 429 to the HEAD) and the mount's timeout: the
 * seconds the open took; the source is read whole. */
static double open_after_429(const char *rel, const char *seconds, unsigned timeout)
{
	struct source *s;
	char *u;
	double t;

	fault_seconds = seconds;
	faulty(rel, 100, 27, "r429", "1", timeout, 2, &u);
	t = now_s();
	cr_assert_eq(source_open(env, u, &s), 0);
	t = now_s() - t;
	cr_assert_eq(fault_log(rel, NULL, NULL, "429"), 1);
	read_whole(s, rel);
	source_close(s);
	free(u);
	return t;
}

/* Retry-After: N is waited for N s (the backoff alone waits 50-100 ms) */
Test(http, retry_after_is_waited_for)
{
	double t = open_after_429("ra.bin", "2", 5);

	cr_assert(t >= 1.9 && t < 2 + SLACK, "opened after %.2f s, Retry-After: 2", t);
}

/* ... but no longer than timeout */
Test(http, retry_after_is_capped_by_the_timeout)
{
	double t = open_after_429("rc.bin", "30", 1);

	cr_assert(t >= 0.9 && t < 1 + SLACK, "opened after %.2f s, timeout=1", t);
}

/* The one way messages say how many attempts a request made. */
Test(http, attempts_said_once)
{
	cr_assert_str_eq(httpreq_attempts(1).s, "1 attempt");
	cr_assert_str_eq(httpreq_attempts(0).s, "0 attempts");
	cr_assert_str_eq(httpreq_attempts(3).s, "3 attempts");
	cr_assert_str_eq(httpreq_attempts(UINT_MAX).s, "4294967295 attempts");
}
