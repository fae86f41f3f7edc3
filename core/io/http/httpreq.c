/*
 * httpreq.c - HTTP requests for the HTTP backend (see httpreq.h): libcurl's
 * easy interface on handles pooled per mount, one curl_share for DNS and
 * TLS sessions (a mutex per kind of shared data, as libcurl's share docs
 * ask), and the retry policy.
 *
 * Connections are not in the share: libcurl documents sharing its
 * connection cache between concurrent threads as unsafe (CURLSHOPT_SHARE,
 * CURL_LOCK_DATA_CONNECT, "a known bug"; curl issues 4544, 13840).  Each
 * easy handle keeps its own connections alive instead, and handles are
 * pooled (last in, first out) so a request takes a handle with a warm
 * connection.  Pooled rather than thread-local so none outlives the mount
 * and a thread that stops reading does not hold one.  A handle keeps its
 * options between requests; each request sets the ones that vary (URL,
 * method, range, body sink, time limit).  A handle runs its transfers in a
 * multi handle of its own (what curl_easy_perform does inside), so the loop
 * here can look at the caller's cancel flag while it waits; the multi
 * keeps the handle's connections between requests.
 *
 * Bounds: connect within timeout_s; abort a transfer that moves fewer than
 * LOW_SPEED bytes/s for timeout_s; and a whole transfer may take timeout_s
 * plus the time to move its bytes at MIN_RATE, so a trickle or a stall
 * ends (a request may ask for a shorter stall than timeout_s: stall_s,
 * an index build's).  Above those, the request's deadline (httpreq.deadline_ns) cuts
 * every attempt and the backoff between them: a stall is not waited out
 * at the full timeout once per retry.  The body goes only into the caller's buffers: a server sending more
 * than the range fails the request, and the bodies of errors are dropped
 * (at most DROP_MAX bytes of them are read).  A 206 that holds a whole
 * object is checked against the store's CRC32C of it when the response
 * gives one (GCS's x-goog-hash, S3's x-amz-checksum-crc32c): a mismatch
 * is retried as a short body is.
 *
 * Not for: what a response means to a source (http.c), caching, logging.
 */
#include "io/http/httpreq.h"
#include "io/backend.h"
#include "clock.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/crc.h"
#include "io/http/httphdr.h"
#include "log.h"

#define POOL_MAX     64             /* idle handles kept */
#define LOW_SPEED    1024           /* bytes/s below which ... */
#define MIN_RATE     (64u << 10)    /* bytes/s a whole transfer must average */
#define DROP_MAX     (64u << 10)    /* of an error's body */
#define BACKOFF_MS   100            /* first retry's delay; doubles */
#define BACKOFF_MAX  5000
#define CURL_BUFFER  (128L << 10)
#define POLL_MS      50             /* the cancel flag is looked at this often */

struct conn {
	CURL *h;
	CURLM *m;                       /* h's transfers run here, one at a time */
	struct conn *next;
	char err[CURL_ERROR_SIZE];
};

struct httpreq_ctx {
	const struct source_config *cfg;
	CURLSH *share;
	pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_lock;
	struct conn *pool;
	unsigned npool;
	int global;                     /* curl_global_init done */
	struct source_counters *ctr;    /* httpreq_ctx_count; may be NULL */
};

/* One attempt's state, for the body callback. */
struct xfer {
	CURL *h;
	const struct httpreq *req;
	struct httpresp *resp;
	long accept;                    /* the status whose body is kept */
	size_t cap;                     /* iov total */
	int iovi;                       /* iov being filled, and where */
	size_t iovoff;
	size_t dropped;
	int overflow;                   /* more body than asked for */
	int wrong;                      /* a 2xx other than accept: aborted */
	size_t grown;                   /* allocated size of resp->body */
};

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access,
		       void *arg)
{
	struct httpreq_ctx *c = arg;

	(void)h;
	(void)access;
	pthread_mutex_lock(&c->share_lock[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *arg)
{
	struct httpreq_ctx *c = arg;

	(void)h;
	pthread_mutex_unlock(&c->share_lock[data]);
}

int httpreq_ctx_new(const struct source_config *cfg, struct httpreq_ctx **out)
{
	struct httpreq_ctx *c = calloc(1, sizeof(*c));
	int i;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->share_lock[i], NULL);
	pthread_mutex_init(&c->pool_lock, NULL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		sfs_err("libcurl: cannot initialise (curl_global_init failed)");
		httpreq_ctx_free(c);
		return -EIO;
	}
	c->global = 1;
	if (!(c->share = curl_share_init()) ||
	    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock) ||
	    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock) ||
	    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c) ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) ||
	    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION)) {
		sfs_err("libcurl: cannot set up a share of DNS and TLS sessions");
		httpreq_ctx_free(c);
		return -EIO;
	}
	*out = c;
	return 0;
}

static void conn_free(struct conn *k)
{
	if (k->h)
		curl_easy_cleanup(k->h);
	if (k->m)
		curl_multi_cleanup(k->m);	/* and the connections it kept */
	free(k);
}

void httpreq_ctx_free(struct httpreq_ctx *c)
{
	struct conn *k;
	int i;

	if (!c)
		return;
	while ((k = c->pool)) {
		c->pool = k->next;
		conn_free(k);
	}
	if (c->share)
		curl_share_cleanup(c->share);
	if (c->global)
		curl_global_cleanup();
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_lock[i]);
	pthread_mutex_destroy(&c->pool_lock);
	free(c);
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg);

CURLcode httpreq_curl_common(CURL *h, const struct source_config *cfg,
			     const char *agent, long low_speed, long buffer)
{
	CURLcode rc = CURLE_OK;

#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(h, opt, val); } while (0)
	SET(CURLOPT_NOSIGNAL, 1L);            /* threads: no SIGALRM timeouts */
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	SET(CURLOPT_FOLLOWLOCATION, 1L);
	SET(CURLOPT_MAXREDIRS, (long)cfg->max_redirects);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_CONNECTTIMEOUT, (long)cfg->timeout_s);
	/* a stall ends a transfer, and a trickle below low_speed too */
	SET(CURLOPT_LOW_SPEED_LIMIT, low_speed);
	SET(CURLOPT_LOW_SPEED_TIME, (long)cfg->timeout_s);
	SET(CURLOPT_FILETIME, 1L);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_BUFFERSIZE, buffer);
	SET(CURLOPT_USERAGENT, agent);
	SET(CURLOPT_SSL_VERIFYPEER, cfg->insecure ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, cfg->insecure ? 0L : 2L);
	if (cfg->cacert)
		SET(CURLOPT_CAINFO, cfg->cacert);
#undef SET
	return rc;
}

/* The options every request of this mount has. */
static int conn_setup(struct httpreq_ctx *c, struct conn *k)
{
	CURL *h = k->h;
	CURLcode rc = httpreq_curl_common(h, c->cfg, "samplefs", (long)LOW_SPEED,
					  CURL_BUFFER);

	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, k->err);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	return rc == CURLE_OK ? 0 : -EIO;
}

static struct conn *conn_take(struct httpreq_ctx *c)
{
	struct conn *k;

	pthread_mutex_lock(&c->pool_lock);
	if ((k = c->pool)) {
		c->pool = k->next;
		c->npool--;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (k)
		return k;
	if (!(k = calloc(1, sizeof(*k))))
		return NULL;
	if (!(k->h = curl_easy_init()) || !(k->m = curl_multi_init()) ||
	    conn_setup(c, k)) {
		conn_free(k);
		return NULL;
	}
	return k;
}

static void conn_give(struct httpreq_ctx *c, struct conn *k)
{
	pthread_mutex_lock(&c->pool_lock);
	if (c->npool < POOL_MAX) {
		k->next = c->pool;
		c->pool = k;
		c->npool++;
		k = NULL;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (k)
		conn_free(k);
}

static size_t body_iov(struct xfer *x, const char *p, size_t n)
{
	const struct iovec *v;
	size_t k, left = n;

	if (x->resp->got + n > x->cap) {
		x->overflow = 1;
		return 0;
	}
	while (left) {
		v = &x->req->iov[x->iovi];
		k = v->iov_len - x->iovoff;
		if (k > left)
			k = left;
		memcpy((char *)v->iov_base + x->iovoff, p, k);
		p += k;
		left -= k;
		x->iovoff += k;
		if (x->iovoff == v->iov_len) {
			x->iovi++;
			x->iovoff = 0;
		}
	}
	x->resp->got += n;
	return n;
}

static size_t body_grow(struct xfer *x, const char *p, size_t n)
{
	struct httpresp *r = x->resp;
	size_t want = r->got + n + 1, sz;
	char *b;

	if (r->got + n > x->req->max_body) {
		x->overflow = 1;
		return 0;
	}
	if (want > x->grown) {
		sz = x->grown ? x->grown : 4096;
		while (sz < want)
			sz *= 2;
		if (!(b = realloc(r->body, sz)))
			return 0;
		r->body = b;
		x->grown = sz;
	}
	memcpy(r->body + r->got, p, n);
	r->got += n;
	r->body[r->got] = '\0';
	return n;
}

/* The first bytes of an error's body, which says why (S3's <Code>). */
static void keep_error(struct xfer *x, const char *p, size_t n)
{
	char *e = x->resp->errbody;
	size_t have = x->dropped, room = sizeof(x->resp->errbody) - 1;

	if (have >= room)
		return;
	if (n > room - have)
		n = room - have;
	memcpy(e + have, p, n);
	e[have + n] = '\0';
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	long code = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
	if (code != x->accept) {
		/* a 200 to a Range request is the whole file: do not fetch it */
		if (code >= 200 && code < 300) {
			x->wrong = 1;
			return 0;
		}
		keep_error(x, p, n);
		x->dropped += n;
		return x->dropped > DROP_MAX ? 0 : n;
	}
	return x->req->iov ? body_iov(x, p, n) : body_grow(x, p, n);
}

/* "bytes A-B/T", "bytes A-B/ *", "bytes * /T": httphdr.c. */
static void parse_content_range(const char *v, struct httpresp *r)
{
	r->r_total = -1;
	r->has_range = httphdr_content_range(v, &r->r_from, &r->r_to, &r->r_total);
}

/* The store's CRC32C of the object, if the response names one: GCS
 * sends x-goog-hash once per hash (crc32c, md5), S3 x-amz-checksum-crc32c
 * when asked for (x-amz-checksum-mode: ENABLED, which bucket.c sends). */
static void crc_of(CURL *h, struct httpresp *r)
{
	struct curl_header *hh;
	size_t i, n = 1;

	for (i = 0; i < n && !r->has_crc32c; i++) {
		if (curl_easy_header(h, "x-goog-hash", i, CURLH_HEADER, -1, &hh) != CURLHE_OK)
			break;
		n = hh->amount;
		r->has_crc32c = httphdr_crc32c(hh->value, 1, &r->crc32c);
	}
	if (!r->has_crc32c &&
	    curl_easy_header(h, "x-amz-checksum-crc32c", 0, CURLH_HEADER, -1, &hh) == CURLHE_OK)
		r->has_crc32c = httphdr_crc32c(hh->value, 0, &r->crc32c);
}

/* The CRC32C of the body req's iov (or r->body) holds: r->got bytes. */
static uint32_t body_crc32c(const struct httpreq *req, const struct httpresp *r)
{
	size_t left = r->got, k;
	uint32_t crc = 0;
	int i;

	if (!req->iov)
		return crc32c(0, r->body, r->got);
	for (i = 0; i < req->niov && left; i++) {
		k = req->iov[i].iov_len < left ? req->iov[i].iov_len : left;
		crc = crc32c(crc, req->iov[i].iov_base, k);
		left -= k;
	}
	return crc;
}

/* What the response said, from libcurl. */
static void gather(CURL *h, const struct httpreq *req, struct httpresp *r)
{
	struct curl_header *hh;
	curl_off_t v;
	char *eff = NULL;
	size_t ul = strlen(req->url), el;

	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	if (curl_easy_header(h, "ETag", 0, CURLH_HEADER, -1, &hh) == CURLHE_OK)
		(void)httphdr_etag(hh->value, r->etag, sizeof(r->etag));
	if (curl_easy_header(h, "Content-Range", 0, CURLH_HEADER, -1, &hh) == CURLHE_OK)
		parse_content_range(hh->value, r);
	crc_of(h, r);
	if (curl_easy_header(h, "Accept-Ranges", 0, CURLH_HEADER, -1, &hh) == CURLHE_OK)
		r->accept_ranges = !!strstr(hh->value, "bytes");
	if (curl_easy_getinfo(h, CURLINFO_FILETIME_T, &v) == CURLE_OK && v > 0)
		r->mtime_ns = (int64_t)v * 1000000000;
	r->length = -1;
	if (curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &v) == CURLE_OK)
		r->length = v;
	if (curl_easy_getinfo(h, CURLINFO_STARTTRANSFER_TIME_T, &v) == CURLE_OK)
		r->ttfb_ns = (int64_t)v * 1000;
	if (curl_easy_getinfo(h, CURLINFO_TOTAL_TIME_T, &v) == CURLE_OK)
		r->total_ns = (int64_t)v * 1000;
	if (curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff) {
		el = strlen(eff);
		r->to_dir = el && eff[el - 1] == '/' && ul && req->url[ul - 1] != '/';
	}
}

enum verdict { DONE, RETRY, FAIL };

static int transient(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

int httpreq_transient(int curl_code)
{
	return transient((CURLcode)curl_code);
}

/* A 206 of a ranged read of an opened source: the same source, the range
 * asked for, all of it. */
static enum verdict check_expected(const struct httpreq *req, struct httpresp *r)
{
	const struct source_stamp *st = req->expect;
	uint64_t want = req->to - req->from + 1;

	if (r->status == 200) {
		r->fail = FAIL_NORANGE;
		snprintf(r->cause, sizeof(r->cause), "the server answered 200 (the "
			 "whole file) to a Range request: it ignores Range");
		return FAIL;
	}
	r->fail = FAIL_CHANGED;
	if (r->status == 404 || r->status == 410 || r->status == 416) {
		r->changed = 1;
		snprintf(r->cause, sizeof(r->cause), "HTTP %ld: the file is gone "
			 "or shorter", r->status);
		return FAIL;
	}
	r->fail = FAIL_STATUS;
	if (r->status != 206) {
		snprintf(r->cause, sizeof(r->cause), "HTTP %ld", r->status);
		return FAIL;
	}
	r->fail = FAIL_BODY;
	if (!r->has_range) {
		snprintf(r->cause, sizeof(r->cause), "206 without a Content-Range");
		return FAIL;
	}
	if (r->r_total != (int64_t)st->size) {
		r->fail = FAIL_CHANGED;
		r->changed = 1;
		snprintf(r->cause, sizeof(r->cause), "size is now %" PRId64
			 " bytes, was %" PRIu64, r->r_total, st->size);
		return FAIL;
	}
	if ((st->etag[0] && r->etag[0] && strcmp(st->etag, r->etag)) ||
	    (!st->etag[0] && st->mtime_ns && r->mtime_ns &&
	     st->mtime_ns != r->mtime_ns)) {
		r->fail = FAIL_CHANGED;
		r->changed = 1;
		snprintf(r->cause, sizeof(r->cause), "ETag is now %s, was %s "
			 "(or Last-Modified changed)", r->etag, st->etag);
		return FAIL;
	}
	if (r->r_from != req->from || r->r_to != req->to) {
		snprintf(r->cause, sizeof(r->cause), "the server answered bytes "
			 "%" PRIu64 "-%" PRIu64, r->r_from, r->r_to);
		return FAIL;
	}
	if (r->got != want) {
		snprintf(r->cause, sizeof(r->cause), "short body: %zu of %" PRIu64
			 " bytes", r->got, want);
		return RETRY;
	}
	/* the whole object: the store's checksum of it says whether the
	 * bytes are the ones it holds (TCP's checksum is weak) */
	if (r->has_crc32c && req->from == 0 && want == st->size &&
	    body_crc32c(req, r) != r->crc32c) {
		r->crc32c_failed = 1;
		snprintf(r->cause, sizeof(r->cause), "the body fails the store's "
			 "CRC32C of the object (%08x)", r->crc32c);
		return RETRY;
	}
	r->fail = FAIL_NONE;
	return DONE;
}

static enum verdict judge(const struct httpreq *req, struct httpresp *r,
			  CURLcode cc, const struct xfer *x, const char *err)
{
	if (cc != CURLE_OK && !x->wrong && x->dropped <= DROP_MAX) {
		if (x->overflow) {
			r->fail = FAIL_BODY;
			snprintf(r->cause, sizeof(r->cause), "the server sent more "
				 "than the %zu bytes asked for", x->cap ? x->cap :
				 req->max_body);
			return FAIL;
		}
		/* a body cut short: curl says so, and it is the body's fault */
		r->fail = cc == CURLE_PARTIAL_FILE ? FAIL_BODY : FAIL_NET;
		snprintf(r->cause, sizeof(r->cause), "%s (curl error %d)",
			 *err ? err : curl_easy_strerror(cc), (int)cc);
		return transient(cc) ? RETRY : FAIL;
	}
	if (r->status >= 500 || r->status == 429 || r->status == 408) {
		r->fail = FAIL_STATUS;
		snprintf(r->cause, sizeof(r->cause), "HTTP %ld", r->status);
		return RETRY;
	}
	return req->expect ? check_expected(req, r) : DONE;
}

/* 0 .. 2^64-1, for jitter; a generator per request needs no shared state */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cancelled(const struct httpreq *req)
{
	return req->cancel && atomic_load(&req->cancel->cancelled);
}

/*
 * Exponential backoff with jitter (half to all of it); at least what
 * Retry-After asked, capped at timeout_s.  0 after the wait; -ETIMEDOUT
 * without waiting when it would end past the deadline (the retry would
 * have no time left); -EINTR as soon as the request is cancelled.
 */
static int backoff(const struct httpreq_ctx *c, const struct httpreq *req,
		   unsigned attempt, curl_off_t retry_after, int64_t deadline,
		   uint64_t *rng)
{
	uint64_t ms = BACKOFF_MS << (attempt < 10 ? attempt : 10), cap;
	int64_t until;

	if (ms > BACKOFF_MAX)
		ms = BACKOFF_MAX;
	ms = ms / 2 + next_random(rng) % (ms / 2 + 1);
	if (retry_after > 0) {
		cap = (uint64_t)c->cfg->timeout_s * 1000;
		if ((uint64_t)retry_after * 1000 > ms)
			ms = (uint64_t)retry_after * 1000;
		if (ms > cap)
			ms = cap;
	}
	until = sfs_now_ns() + (int64_t)ms * 1000000;
	if (until >= deadline)
		return -ETIMEDOUT;
	return httpreq_wait_until(until, req->cancel);
}

int httpreq_wait_until(int64_t until, const struct source_cancel *cancel)
{
	struct timespec ts;
	int64_t left;

	while ((left = until - sfs_now_ns()) > 0) {
		if (cancel && atomic_load(&cancel->cancelled))
			return -EINTR;
		if (left > POLL_MS * 1000000LL)
			left = POLL_MS * 1000000LL;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left;
		nanosleep(&ts, NULL);
	}
	return cancel && atomic_load(&cancel->cancelled) ? -EINTR : 0;
}

static size_t iov_total(const struct httpreq *req)
{
	size_t t = 0;
	int i;

	for (i = 0; i < req->niov; i++)
		t += req->iov[i].iov_len;
	return t;
}

/*
 * Runs k's transfer to its end in k's multi handle, looking at the cancel
 * flag at least every POLL_MS (curl_easy_perform would wait up to a second
 * between looks).  libcurl's result; CURLE_ABORTED_BY_CALLBACK when
 * cancelled: the transfer is dropped with its connection.
 */
static CURLcode perform(struct conn *k, const struct httpreq *req)
{
	CURLcode cc = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left;

	if (curl_multi_add_handle(k->m, k->h) != CURLM_OK)
		return CURLE_OUT_OF_MEMORY;
	for (;;) {
		if (curl_multi_perform(k->m, &running) != CURLM_OK) {
			cc = CURLE_OUT_OF_MEMORY;
			break;
		}
		if (!running) {
			while ((msg = curl_multi_info_read(k->m, &left)))
				if (msg->msg == CURLMSG_DONE)
					cc = msg->data.result;
			break;
		}
		if (cancelled(req)) {
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		curl_multi_poll(k->m, NULL, 0, POLL_MS, NULL);
	}
	curl_multi_remove_handle(k->m, k->h);
	return cc;
}

/* Ends the retries early: cancelled (-EINTR), or the deadline would pass
 * before another attempt (-ETIMEDOUT), said after the last cause. */
static void give_up(const struct httpreq_ctx *c, struct httpresp *r, int why)
{
	size_t n = strlen(r->cause);

	if (why == -EINTR) {
		r->fail = FAIL_CANCELLED;
		snprintf(r->cause, sizeof(r->cause), "cancelled: the reader was "
			 "interrupted");
		return;
	}
	if (r->fail == FAIL_NONE)
		r->fail = FAIL_NET;
	snprintf(r->cause + n, sizeof(r->cause) - n, "%sno time left within "
		 "read_timeout=%u s", n ? "; " : "", c->cfg->read_timeout_s);
}

/*
 * A bucket request's signing and headers on h, for one attempt; undone by
 * auth_clear, since h goes back to the pool and serves plain URLs next.
 */
CURLcode httpreq_auth_set(CURL *h, const struct httpauth *a,
			  struct curl_slist **hdrs)
{
	const char *const *l;
	struct curl_slist *n;
	CURLcode cc = CURLE_OK;

	for (l = a->headers; l && *l; l++) {
		if (!(n = curl_slist_append(*hdrs, *l)))
			return CURLE_OUT_OF_MEMORY;
		*hdrs = n;
	}
	/* no redirect: tokens and signatures are for this host */
	cc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	if (cc == CURLE_OK && *hdrs)
		cc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	if (cc == CURLE_OK && a->sigv4) {
		cc = curl_easy_setopt(h, CURLOPT_USERNAME, a->user);
		if (cc == CURLE_OK)
			cc = curl_easy_setopt(h, CURLOPT_PASSWORD, a->password);
		if (cc == CURLE_OK)
			cc = curl_easy_setopt(h, CURLOPT_AWS_SIGV4, a->sigv4);
	}
	return cc;
}

static void auth_clear(CURL *h, struct curl_slist *hdrs)
{
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	curl_easy_setopt(h, CURLOPT_USERNAME, NULL);
	curl_easy_setopt(h, CURLOPT_PASSWORD, NULL);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_slist_free_all(hdrs);
}

/* The wait a response's Retry-After asks for (seconds; 0: none). */
static curl_off_t retry_after_of(CURL *h)
{
	struct curl_header *hh;

	if (curl_easy_header(h, "Retry-After", 0, CURLH_HEADER, -1, &hh) != CURLHE_OK)
		return 0;
	return httphdr_retry_after(hh->value, time(NULL));
}

/* One attempt on handle k, cut at the deadline. */
static enum verdict attempt(struct httpreq_ctx *c, struct conn *k,
			    const struct httpreq *req, struct httpresp *r,
			    int64_t deadline, curl_off_t *retry_after)
{
	struct xfer x = { .h = k->h, .req = req, .resp = r };
	struct curl_slist *hdrs = NULL;
	char range[48];
	uint64_t bytes, ms;
	unsigned stall;
	int64_t left = (deadline - sfs_now_ns()) / 1000000;
	CURLcode cc;

	x.accept = req->ranged ? 206 : 200;
	x.cap = req->iov ? iov_total(req) : 0;
	bytes = req->iov ? x.cap : 1u << 20;
	if (req->ranged)
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, req->from, req->to);
	k->err[0] = '\0';
	curl_easy_setopt(k->h, CURLOPT_URL, req->url);
	if (req->head)
		curl_easy_setopt(k->h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(k->h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(k->h, CURLOPT_RANGE, req->ranged ? range : NULL);
	curl_easy_setopt(k->h, CURLOPT_WRITEDATA, &x);
	stall = req->stall_s && req->stall_s < c->cfg->timeout_s ? req->stall_s :
		c->cfg->timeout_s;
	curl_easy_setopt(k->h, CURLOPT_LOW_SPEED_TIME, (long)stall);
	curl_easy_setopt(k->h, CURLOPT_CONNECTTIMEOUT, (long)stall);
	ms = stall * 1000ull + bytes * 1000 / MIN_RATE;
	if ((int64_t)ms > left)
		ms = left > 1 ? (uint64_t)left : 1;
	curl_easy_setopt(k->h, CURLOPT_TIMEOUT_MS, (long)ms);
	if (req->auth && (cc = httpreq_auth_set(k->h, req->auth, &hdrs)) != CURLE_OK) {
		auth_clear(k->h, hdrs);
		r->fail = FAIL_NET;
		snprintf(r->cause, sizeof(r->cause), "libcurl cannot sign or set "
			 "the headers of this request: %s (curl error %d)",
			 curl_easy_strerror(cc), (int)cc);
		return FAIL;
	}
	cc = perform(k, req);
	if (req->auth)
		auth_clear(k->h, hdrs);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		give_up(c, r, -EINTR);
		return FAIL;
	}
	gather(k->h, req, r);
	*retry_after = retry_after_of(k->h);
	return judge(req, r, cc, &x, k->err);
}

void httpreq_ctx_count(struct httpreq_ctx *c, struct source_counters *ctr)
{
	c->ctr = ctr;
}

/*
 * What one attempt of a request is: attempt() for reads and HEADs,
 * put_attempt() for an upload (arg: its body).  Both answer DONE, FAIL or
 * RETRY, and set *retry_after when the server asked for a wait.
 */
typedef enum verdict (*attempt_fn)(struct httpreq_ctx *c, struct conn *k,
				   const struct httpreq *req, struct httpresp *r,
				   int64_t deadline, curl_off_t *retry_after,
				   const void *arg);

/*
 * The one retry loop of every request: attempts with backoff (and the
 * server's Retry-After) until one is not RETRY, the retries run out, the
 * deadline passes or the request is cancelled.  r holds the last
 * attempt's response; its body is kept only when DONE.
 */
static enum verdict retry_loop(struct httpreq_ctx *c, const struct httpreq *req,
			       int64_t deadline, attempt_fn fn, const void *arg,
			       struct httpresp *r)
{
	uint64_t rng = ((uint64_t)(uintptr_t)r ^ (uint64_t)time(NULL) << 20) | 1;
	curl_off_t retry_after = 0;
	enum verdict v = FAIL;
	struct conn *k;
	unsigned i;
	int rc;

	memset(r, 0, sizeof(*r));
	for (i = 0; i <= c->cfg->retries; i++) {
		if (i && (rc = backoff(c, req, i - 1, retry_after, deadline, &rng))) {
			give_up(c, r, rc);
			break;
		}
		if (sfs_now_ns() >= deadline || cancelled(req)) {
			v = RETRY;	/* out of time, not a verdict on the answer */
			give_up(c, r, cancelled(req) ? -EINTR : -ETIMEDOUT);
			break;
		}
		if (!(k = conn_take(c))) {
			r->fail = FAIL_NET;
			snprintf(r->cause, sizeof(r->cause), "libcurl: no handle "
				 "(out of memory?)");
			return FAIL;
		}
		/* each attempt starts afresh, but keeps the count */
		free(r->body);
		memset(r, 0, sizeof(*r));
		r->attempts = i + 1;
		SOURCE_COUNT(c->ctr, requests);
		if (i)
			SOURCE_COUNT(c->ctr, retries);
		v = fn(c, k, req, r, deadline, &retry_after, arg);
		conn_give(c, k);
		if (r->crc32c_failed)
			SOURCE_COUNT(c->ctr, checksum_failures);
		if (v != RETRY)
			break;
	}
	return v;
}

/* attempt() as an attempt_fn (no argument). */
static enum verdict read_attempt(struct httpreq_ctx *c, struct conn *k,
				 const struct httpreq *req, struct httpresp *r,
				 int64_t deadline, curl_off_t *retry_after,
				 const void *arg)
{
	(void)arg;
	return attempt(c, k, req, r, deadline, retry_after);
}

int httpreq_do(struct httpreq_ctx *c, const struct httpreq *req,
	       struct httpresp *r)
{
	int64_t deadline = req->deadline_ns ? req->deadline_ns : sfs_now_ns() +
			   (int64_t)c->cfg->read_timeout_s * 1000000000;
	enum verdict v = retry_loop(c, req, deadline, read_attempt, NULL, r);

	if (v == DONE)
		return 0;
	if (r->fail != FAIL_CANCELLED)
		SOURCE_COUNT(c->ctr, errors);
	r->retryable = v == RETRY && r->fail != FAIL_CANCELLED;
	free(r->body);
	r->body = NULL;
	r->got = 0;
	return r->fail == FAIL_CANCELLED ? -EINTR : -EIO;
}

/* ---- uploads: one PUT of a buffer (bucket.c's prebuilt index) ---- */

struct upload {
	const char *p;
	uint64_t left;
};

static size_t on_read(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct upload *u = arg;
	size_t n = size * nmemb;

	if (n > u->left)
		n = (size_t)u->left;
	memcpy(buf, u->p, n);
	u->p += n;
	u->left -= n;
	return n;
}

/* One PUT attempt on k: attempt()'s, with a body to send instead of one
 * to receive; the handle's upload options are undone before it goes back
 * to the pool, as auth_clear undoes the signing. */
/* One PUT of the body `arg` points to (a struct upload, sent from its
 * start: each attempt gets its own copy to consume). */
static enum verdict put_attempt(struct httpreq_ctx *c, struct conn *k,
				const struct httpreq *req, struct httpresp *r,
				int64_t deadline, curl_off_t *retry_after,
				const void *arg)
{
	struct xfer x = { .h = k->h, .req = req, .resp = r, .accept = 200 };
	struct upload u = *(const struct upload *)arg;
	uint64_t len = u.left;
	struct curl_slist *hdrs = NULL;
	int64_t left = (deadline - sfs_now_ns()) / 1000000;
	uint64_t ms = c->cfg->timeout_s * 1000ull + len * 1000 / MIN_RATE;
	CURLcode cc = CURLE_OK;

	if ((int64_t)ms > left)
		ms = left > 1 ? (uint64_t)left : 1;
	k->err[0] = '\0';
	curl_easy_setopt(k->h, CURLOPT_URL, req->url);
	curl_easy_setopt(k->h, CURLOPT_RANGE, NULL);
	curl_easy_setopt(k->h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(k->h, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(k->h, CURLOPT_READDATA, &u);
	curl_easy_setopt(k->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(k->h, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(k->h, CURLOPT_TIMEOUT_MS, (long)ms);
	if (req->auth)
		cc = httpreq_auth_set(k->h, req->auth, &hdrs);
	if (cc == CURLE_OK)
		cc = perform(k, req);
	if (req->auth)
		auth_clear(k->h, hdrs);
	curl_easy_setopt(k->h, CURLOPT_UPLOAD, 0L);
	curl_easy_setopt(k->h, CURLOPT_READFUNCTION, NULL);
	curl_easy_setopt(k->h, CURLOPT_READDATA, NULL);
	curl_easy_setopt(k->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)-1);
	gather(k->h, req, r);
	*retry_after = retry_after_of(k->h);
	return judge(req, r, cc, &x, k->err);
}

int httpreq_put(struct httpreq_ctx *c, const char *url, const struct httpauth *auth,
		const void *data, uint64_t len, struct httpresp *r)
{
	const struct httpreq req = { .url = url, .max_body = 4096, .auth = auth };
	const struct upload body = { data, len };
	int64_t deadline = sfs_now_ns() + (int64_t)c->cfg->read_timeout_s * 1000000000 +
			   (int64_t)(len * 1000000000 / MIN_RATE);
	enum verdict v = retry_loop(c, &req, deadline, put_attempt, &body, r);

	free(r->body);
	r->body = NULL;
	r->got = 0;
	return v == DONE ? 0 : -EIO;
}

struct httpreq_count httpreq_attempts(unsigned n)
{
	struct httpreq_count c;

	snprintf(c.s, sizeof(c.s), "%u attempt%s", n, n == 1 ? "" : "s");
	return c;
}
