/*
 * http.c - the HTTP(S) backend: a source that is an http:// or https://
 * URL, read with Range requests (httpreq.c) through a block cache.
 *
 * Stamp: one GET of byte 0 at open gives the size (Content-Range's total),
 * ETag and Last-Modified, and shows that the server honours Range (a 200
 * there means it would send the whole file for every read: refused).
 * Every later response is checked against that stamp (httpreq.c), so a
 * source changed on the server reads EIO, never mixed bytes.
 *
 * Cache: the source is cut into BLOCK-aligned blocks kept in the mount's
 * LRU (cfg.cache_bytes, index/lru.h, keyed by the source's id and the
 * block number) and, with cfg.cache_dir, on disk (diskcache.c).  A read
 * takes what the caches have and fetches each run of missing blocks with
 * one request; when reads of a source go forward block after block, the
 * request also takes the next blocks (a window doubling from RA_START to
 * RA_MAX), so a sequential pass streams in large ranges.  Threads that miss
 * the same blocks at once wait for the one fetching them instead of
 * fetching them again.  In no-wait mode a read is served only from memory,
 * else -EAGAIN at once (the FUSE layer retries it on a worker thread).
 *
 * Failures are logged here, rate-limited by log.c (one format per cause),
 * naming the URL, the byte range and the last cause; the read gives EIO.
 *
 * Not for: local files (file.c), the request and retry policy (httpreq.c),
 * JSON listings (autoindex.c).
 */
#include "io/backend.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "io/autoindex.h"
#include "io/diskcache.h"
#include "io/httpreq.h"
#include "index/lru.h"
#include "log.h"

/*
 * 128 KiB: a random read of a small member pulls in at most two blocks,
 * and readahead makes sequential requests large anyway.
 */
#define BLOCK     (128u << 10)
#define RA_START  2             /* blocks read ahead once reads go forward */
#define RA_MAX    32            /* 4 MiB */
#define RUN_MAX   64            /* blocks in one request: 8 MiB */
#define NFLIGHT   8             /* fetches of one source tracked at once */
#define WAITS_MAX 3             /* for others' fetches, in one read */
#define LIST_MAX  (16u << 20)   /* a directory listing's body */

/* A source opened in this mount: its id, reused when it is opened again
 * with the same stamp so its cached blocks are found again. */
struct known {
	struct known *next;
	uint32_t id;
	struct source_stamp stamp;
	char url[];
};

struct http_env {
	struct httpreq_ctx *net;
	struct lru *mem;
	struct diskcache *disk;         /* NULL without cache_dir */
	unsigned ra_max;                /* RA_MAX, or less in a small cache */
	pthread_mutex_t ids_lock;
	struct known *known;
	uint32_t next_id;
};

struct http_src {
	struct http_env *he;
	uint32_t id;
	int disk;                       /* the stamp can tell versions apart */
	pthread_mutex_t lock;           /* the fields below */
	pthread_cond_t landed;          /* a fetch ended */
	struct { uint64_t lo, hi; int used; } flight[NFLIGHT];
	uint64_t ra_next;               /* block where the last read ended */
	unsigned ra_seq;                /* reads in a row that went on from it */
	unsigned ra_win;
};

static int http_claims(const char *uri)
{
	return source_is_url(uri);
}

static int http_env_init(struct source_env *env)
{
	struct http_env *he = calloc(1, sizeof(*he));
	int rc;

	if (!he)
		return -ENOMEM;
	pthread_mutex_init(&he->ids_lock, NULL);
	env->http = he;
	/* blocks read ahead must not push each other out of the cache before
	 * they are read: a quarter of it at most */
	he->ra_max = env->cfg.cache_bytes / BLOCK / 4 < RA_MAX ?
		     (unsigned)(env->cfg.cache_bytes / BLOCK / 4) : RA_MAX;
	if ((rc = httpreq_ctx_new(&env->cfg, &he->net)))
		return rc;
	if (!(he->mem = lru_new(env->cfg.cache_bytes)))
		return -ENOMEM;
	if (env->cfg.cache_dir &&
	    (rc = diskcache_open(env->cfg.cache_dir, env->cfg.cache_dir_bytes,
				 &he->disk)))
		return rc;
	return 0;
}

static void http_env_fini(struct source_env *env)
{
	struct http_env *he = env->http;
	struct known *k;

	if (!he)
		return;
	httpreq_ctx_free(he->net);
	lru_free(he->mem);
	diskcache_close(he->disk);
	while ((k = he->known)) {
		he->known = k->next;
		free(k);
	}
	pthread_mutex_destroy(&he->ids_lock);
	free(he);
	env->http = NULL;
}

static int same_stamp(const struct source_stamp *a, const struct source_stamp *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       !strcmp(a->etag, b->etag);
}

/* The id of (url, stamp) in this mount; 0 on ENOMEM (ids start at 1). */
static uint32_t source_id(struct http_env *he, const char *url,
			  const struct source_stamp *st)
{
	struct known *k;
	uint32_t id = 0;

	pthread_mutex_lock(&he->ids_lock);
	for (k = he->known; k; k = k->next)
		if (!strcmp(k->url, url) && same_stamp(&k->stamp, st))
			break;
	if (!k && (k = malloc(sizeof(*k) + strlen(url) + 1))) {
		k->id = ++he->next_id;
		k->stamp = *st;
		strcpy(k->url, url);
		k->next = he->known;
		he->known = k;
	}
	if (k)
		id = k->id;
	pthread_mutex_unlock(&he->ids_lock);
	return id;
}

static void stamp_from(const struct httpresp *r, uint64_t size,
		       struct source_stamp *st)
{
	memset(st, 0, sizeof(*st));
	st->size = size;
	st->mtime_ns = r->mtime_ns;
	memcpy(st->etag, r->etag, sizeof(st->etag));
}

/* The errno an answer to a file's request means (0: a success). */
static int status_errno(long status)
{
	if (status == 404 || status == 410)
		return -ENOENT;
	if (status == 401 || status == 403)
		return -EACCES;
	return status >= 200 && status < 300 ? 0 : -EIO;
}

/*
 * GET byte 0 of url: its stamp, and whether the server serves ranges.
 * 0 or -errno, with what went wrong in why (no message here).
 */
static int probe(struct http_env *he, const char *url, struct source_stamp *st,
		 int *is_dir, char *why, size_t whylen)
{
	char one;
	struct iovec iov = { &one, 1 };
	struct httpreq req = { .url = url, .ranged = 1, .from = 0, .to = 0,
			       .iov = &iov, .niov = 1 };
	struct httpresp r;
	int rc;

	*is_dir = 0;
	if (httpreq_do(he->net, &req, &r)) {
		snprintf(why, whylen, "%s (%u attempts)", r.cause, r.attempts);
		return -EIO;
	}
	if ((rc = status_errno(r.status))) {
		snprintf(why, whylen, "HTTP %ld", r.status);
		return rc;
	}
	if ((*is_dir = r.to_dir))
		return 0;	/* redirected to "name/" */
	if (r.status == 206 && r.has_range && r.r_total >= 0 && r.got == 1) {
		stamp_from(&r, (uint64_t)r.r_total, st);
		return 0;
	}
	if (r.status == 200 && r.length == 0) {	/* empty: nothing to range */
		stamp_from(&r, 0, st);
		return 0;
	}
	if (r.status == 200)
		snprintf(why, whylen, "the server answered a Range request with "
			 "200 and the whole file: it ignores Range, so the file "
			 "cannot be read in parts");
	else
		snprintf(why, whylen, "HTTP %ld without a usable Content-Range "
			 "(the size is not known)", r.status);
	return -EIO;
}

static int http_open(struct source *s)
{
	struct http_env *he = s->env ? s->env->http : NULL;
	struct http_src *h;
	size_t len = strlen(s->name);
	char why[400];
	int rc, is_dir;

	if (!he) {
		sfs_err("%s: opened without a source environment (source_env_new)",
			s->name);
		return -EINVAL;
	}
	if (len && s->name[len - 1] == '/')
		return -EISDIR;
	if ((rc = probe(he, s->name, &s->stamp, &is_dir, why, sizeof(why)))) {
		sfs_err("%s: %s", s->name, why);
		return rc;
	}
	if (is_dir)
		return -EISDIR;
	if (s->stamp.size / BLOCK > UINT32_MAX) {
		sfs_err("%s: %" PRIu64 " bytes: larger than samplefs reads over HTTP",
			s->name, s->stamp.size);
		return -EFBIG;
	}
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	h->he = he;
	if (!(h->id = source_id(he, s->name, &s->stamp))) {
		free(h);
		return -ENOMEM;
	}
	/* without ETag or Last-Modified, blocks on disk could be of another
	 * version of the same size */
	h->disk = he->disk && (s->stamp.etag[0] || s->stamp.mtime_ns);
	h->ra_next = UINT64_MAX;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->landed, NULL);
	s->priv = h;
	return 0;
}

static void http_close(struct source *s)
{
	struct http_src *h = s->priv;

	if (!h)
		return;
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->landed);
	free(h);
}

/* ---- reading ---- */

/* One read: [off, end) of a source of `size` bytes, into buf. */
struct rd {
	struct source *s;
	struct http_src *h;
	char *buf;
	uint64_t off, end, size;
};

static uint64_t key_of(const struct http_src *h, uint64_t b)
{
	return (uint64_t)h->id << 32 | b;
}

static size_t block_len(const struct rd *r, uint64_t b)
{
	uint64_t left = r->size - b * BLOCK;

	return left < BLOCK ? (size_t)left : BLOCK;
}

/* Copies the part of block b (its bytes at data) that the read wants. */
static void take_piece(const struct rd *r, uint64_t b, const char *data)
{
	uint64_t lo = b * BLOCK, hi = lo + block_len(r, b);

	if (lo < r->off)
		lo = r->off;
	if (hi > r->end)
		hi = r->end;
	if (lo < hi)
		memcpy(r->buf + (lo - r->off), data + (lo - b * BLOCK), hi - lo);
}

/* Block b's piece from memory: 1, or 0 when it is not there. */
static int from_memory(const struct rd *r, uint64_t b)
{
	uint64_t lo = b * BLOCK, hi = lo + block_len(r, b);

	if (lo < r->off)
		lo = r->off;
	if (hi > r->end)
		hi = r->end;
	return lru_copy_out(r->h->he->mem, key_of(r->h, b), lo - b * BLOCK,
			    r->buf + (lo - r->off), hi - lo) == 1;
}

static int in_memory(const struct rd *r, uint64_t b)
{
	char none;

	return lru_copy_out(r->h->he->mem, key_of(r->h, b), 0, &none, 0) == 1;
}

/* Block b from the disk cache into memory, and its piece: 1, or 0. */
static int from_disk(const struct rd *r, uint64_t b)
{
	size_t len = block_len(r, b);
	char *data;

	if (!r->h->disk || !(data = malloc(len)))
		return 0;
	if (!diskcache_get(r->h->he->disk, r->s->name, &r->s->stamp, b, data, len)) {
		free(data);
		return 0;
	}
	take_piece(r, b, data);
	lru_insert(r->h->he->mem, key_of(r->h, b), data, len);
	return 1;
}

/*
 * Notes a read of blocks b0..b1 for readahead: the window to read ahead
 * with.  A read that goes on where the last one ended (the same block or
 * the next) is sequential; from the second in a row the window opens and
 * doubles with each.  Not from the first: two reads of one member of an
 * archive, read at random, should not pull in the members after it.
 */
static unsigned note_read(struct http_src *h, uint64_t b0, uint64_t b1)
{
	unsigned win;

	pthread_mutex_lock(&h->lock);
	if (h->ra_next != UINT64_MAX && (b0 == h->ra_next || b0 == h->ra_next + 1))
		h->ra_seq++;
	else
		h->ra_seq = 0;
	if (h->ra_seq < 2)
		h->ra_win = 0;
	else
		h->ra_win = h->ra_win ? h->ra_win * 2 : RA_START;
	if (h->ra_win > h->he->ra_max)
		h->ra_win = h->he->ra_max;
	h->ra_next = b1;
	win = h->ra_win;
	pthread_mutex_unlock(&h->lock);
	return win;
}

static int overlaps(const struct http_src *h, uint64_t lo, uint64_t hi)
{
	int i;

	for (i = 0; i < NFLIGHT; i++)
		if (h->flight[i].used && h->flight[i].lo <= hi && lo <= h->flight[i].hi)
			return 1;
	return 0;
}

/*
 * Before fetching blocks lo..need (and readahead up to *hi): when another
 * thread is fetching some of lo..need, waits for it and returns 1 (look in
 * the cache again).  Else trims *hi before others' fetches, records this
 * one (its slot in *slot, -1 when all are taken) and returns 0.
 */
static int claim(struct http_src *h, uint64_t lo, uint64_t need, uint64_t *hi,
		 int *waits, int *slot)
{
	uint64_t b;
	int i;

	pthread_mutex_lock(&h->lock);
	if (overlaps(h, lo, need) && *waits < WAITS_MAX) {
		++*waits;
		while (overlaps(h, lo, need))
			pthread_cond_wait(&h->landed, &h->lock);
		pthread_mutex_unlock(&h->lock);
		return 1;
	}
	for (b = need + 1; b <= *hi; b++)
		if (overlaps(h, b, b))
			break;
	*hi = b - 1;
	*slot = -1;
	for (i = 0; i < NFLIGHT && *slot < 0; i++)
		if (!h->flight[i].used)
			*slot = i;
	if (*slot >= 0) {
		h->flight[*slot].lo = lo;
		h->flight[*slot].hi = *hi;
		h->flight[*slot].used = 1;
	}
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static void release(struct http_src *h, int slot)
{
	if (slot < 0)
		return;
	pthread_mutex_lock(&h->lock);
	h->flight[slot].used = 0;
	pthread_cond_broadcast(&h->landed);
	pthread_mutex_unlock(&h->lock);
}

/* Logs a read that failed and gives its errno (-EIO). */
static int read_failed(const struct rd *r, const struct httpreq *req,
		       const struct httpresp *resp)
{
	if (resp->changed) {
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s", r->s->name,
			req->from, req->to, resp->cause);
		source_mark_changed(r->s);
		return source_check(r->s);	/* its one warning */
	}
	sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; giving EIO after %u "
		"attempts", r->s->name, req->from, req->to, resp->cause,
		resp->attempts);
	return -EIO;
}

/* Fetches blocks lo..hi with one request: the pieces the read wants into
 * its buffer, every block into the caches.  0 or -EIO. */
static int fetch(const struct rd *r, uint64_t lo, uint64_t hi)
{
	struct iovec iov[RUN_MAX + RA_MAX];
	struct httpreq req = { .url = r->s->name, .ranged = 1, .iov = iov,
			       .expect = &r->s->stamp };
	struct httpresp resp;
	unsigned n = (unsigned)(hi - lo + 1), i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		iov[i].iov_len = block_len(r, lo + i);
		if (!(iov[i].iov_base = malloc(iov[i].iov_len))) {
			rc = -ENOMEM;
			n = i;
			goto out;
		}
	}
	req.niov = (int)n;
	req.from = lo * BLOCK;
	req.to = (hi + 1) * BLOCK < r->size ? (hi + 1) * BLOCK - 1 : r->size - 1;
	if (httpreq_do(r->h->he->net, &req, &resp)) {
		rc = read_failed(r, &req, &resp);
		goto out;
	}
	for (i = 0; i < n; i++) {
		take_piece(r, lo + i, iov[i].iov_base);
		if (r->h->disk)
			diskcache_put(r->h->he->disk, r->s->name, &r->s->stamp,
				      lo + i, iov[i].iov_base, iov[i].iov_len);
		lru_insert(r->h->he->mem, key_of(r->h, lo + i), iov[i].iov_base,
			   iov[i].iov_len);
		iov[i].iov_base = NULL;
	}
out:
	for (i = 0; i < n; i++)
		free(iov[i].iov_base);
	return rc;
}

/* The blocks to fetch from b: the run of missing ones (at most RUN_MAX),
 * and, when it ends the read, `win` more not cached yet.  *need is the
 * run's last block; returns the request's last. */
static uint64_t plan(const struct rd *r, uint64_t b, uint64_t b1, unsigned win,
		     uint64_t *need)
{
	uint64_t last = (r->size - 1) / BLOCK, m = b;

	while (m < b1 && m - b + 1 < RUN_MAX && !from_memory(r, m + 1) &&
	       !from_disk(r, m + 1))
		m++;
	*need = m;
	if (m != b1)
		return m;
	while (win-- && m < last && !in_memory(r, m + 1))
		m++;
	return m;
}

static ssize_t http_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct rd r = { s, s->priv, buf, off, 0, s->stamp.size };
	uint64_t b0, b1, b, need, hi;
	int waits = 0, slot, rc;
	unsigned win;

	if (atomic_load(&s->changed))
		return -EIO;
	if (off >= r.size || n == 0)
		return 0;
	if (n > r.size - off)
		n = (size_t)(r.size - off);
	r.end = off + n;
	b0 = off / BLOCK;
	b1 = (r.end - 1) / BLOCK;
	if (source_nowait_mode()) {
		for (b = b0; b <= b1; b++)
			if (!from_memory(&r, b))
				return -EAGAIN;
		note_read(r.h, b0, b1);
		return (ssize_t)n;
	}
	win = note_read(r.h, b0, b1);
	for (b = b0; b <= b1;) {
		if (from_memory(&r, b) || from_disk(&r, b)) {
			b++;
			continue;
		}
		hi = plan(&r, b, b1, win, &need);
		if (claim(r.h, b, need, &hi, &waits, &slot))
			continue;	/* another thread fetched it: look again */
		rc = fetch(&r, b, hi);
		release(r.h, slot);
		if (rc)
			return rc;
		b = need + 1;
	}
	return (ssize_t)n;
}

static int http_changed(struct source *s)
{
	return atomic_load(&s->changed);
}

/* ---- names ---- */

static int http_stat(struct source_env *env, const char *uri,
		     struct source_info *out)
{
	struct http_env *he = env ? env->http : NULL;
	size_t len = strlen(uri);
	struct httpreq req = { .url = uri, .head = 1 };
	struct httpresp r;
	char why[400];
	int rc;

	if (!he)
		return -EINVAL;
	/* HTTP has no directories: what a server answers for "dir/" (a
	 * listing, 403, 404, an index page) says nothing of the files under
	 * it, so the name decides, and opening those files tells */
	if (len && uri[len - 1] == '/') {
		out->is_dir = 1;
		return 0;
	}
	if (httpreq_do(he->net, &req, &r)) {
		sfs_err("%s: %s (%u attempts)", uri, r.cause, r.attempts);
		return -EIO;
	}
	if ((rc = status_errno(r.status)) == -EIO && r.status != 405 &&
	    r.status != 501) {
		sfs_err("%s: HTTP %ld", uri, r.status);
		return rc;
	}
	if (rc && rc != -EIO)
		return rc;
	if ((out->is_dir = r.to_dir))
		return 0;
	if (!rc && r.length >= 0) {
		stamp_from(&r, (uint64_t)r.length, &out->stamp);
		return 0;
	}
	/* no HEAD, or no length: what open would see */
	if ((rc = probe(he, uri, &out->stamp, &out->is_dir, why, sizeof(why))) &&
	    rc != -ENOENT)
		sfs_err("%s: %s", uri, why);
	return rc;
}

static int http_list(struct source_env *env, const char *uri, source_list_fn fn,
		     void *arg)
{
	struct http_env *he = env ? env->http : NULL;
	struct httpreq req = { .max_body = LIST_MAX };
	struct httpresp r;
	size_t len = strlen(uri);
	char *url;
	int rc;

	if (!he)
		return -EINVAL;
	if (asprintf(&url, "%s%s", uri, len && uri[len - 1] == '/' ? "" : "/") < 0)
		return -ENOMEM;
	req.url = url;
	if (httpreq_do(he->net, &req, &r)) {
		sfs_err("%s: listing: %s (%u attempts)", url, r.cause, r.attempts);
		rc = -EIO;
	} else if (r.status == 404 || r.status == 410) {
		rc = -ENOENT;
	} else if (r.status != 200) {
		sfs_err("%s: HTTP %ld to a listing request: the server gives no "
			"listing (nginx: autoindex on; autoindex_format json;)",
			url, r.status);
		rc = r.status == 401 || r.status == 403 ? -ENOTSUP : -EIO;
	} else if ((rc = autoindex_parse(r.body ? r.body : "", r.got, fn, arg)) ==
		   -ENOTSUP) {
		sfs_err("%s: not a JSON directory listing (nginx: autoindex on; "
			"autoindex_format json;)", url);
	}
	free(r.body);
	free(url);
	return rc;
}

const struct source_backend source_http_backend = {
	.name = "http",
	.claims = http_claims,
	.open = http_open,
	.pread = http_pread,
	.changed = http_changed,
	.close = http_close,
	.stat = http_stat,
	.list = http_list,
	.env_init = http_env_init,
	.env_fini = http_env_fini,
};
