/*
 * http.c - the HTTP(S) backend: a source that is an http:// or https://
 * URL, read with Range requests.
 *
 * Stamp: a HEAD at open gives the size, ETag and Last-Modified, so a
 * remount with a saved index reads no data; a GET of byte 0 only when HEAD
 * is refused or does not say Accept-Ranges: bytes (a 200 there means the
 * server would send the whole file for every read: refused).
 * Every later response is checked against that stamp (httpreq.c), so a
 * source changed on the server reads EIO, never mixed bytes.  Reads go
 * through the block caches (httpcache.c).
 *
 * Names: a URL ending in '/' is a directory; listings are nginx's
 * `autoindex_format json` (autoindex.c).
 *
 * The mount's state (env->http, http_int.h): the request context (a
 * curl_share and pooled handles), the memory and disk caches, the ids of
 * the sources opened, the prefetch threads.
 *
 * Failures are logged here, rate-limited by log.c (one format per cause),
 * naming the URL and what the server said.
 *
 * Not for: local files (file.c), requests and retries (httpreq.c), reads
 * and caching (httpcache.c), JSON (autoindex.c).
 */
#include "io/http/http_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "io/http/autoindex.h"
#include "io/http/diskcache.h"
#include "io/http/httpreq.h"
#include "io/lru.h"
#include "clock.h"
#include "log.h"

#define LIST_MAX  (16u << 20)   /* a directory listing's body */
/* How long a HEAD's answer stands for the same URL (stamp_of). */
#define STAMP_FRESH_NS (1000 * 1000000LL)

/* A source opened in this mount: its id, reused when it is opened again
 * with the same stamp so its cached blocks are found again, and whether a
 * change of its URL was seen (then every source of the URL reads EIO until
 * the unmount: blocks cached under the id are of the old version).  Hashed
 * by URL: a mount may open hundreds of thousands (a listing's files), and
 * a list walked per open made that quadratic.  Entries live until the
 * env is freed, so sources may point at `changed`. */
struct known {
	struct known *next;
	uint64_t hash;
	uint32_t id;
	atomic_int changed;
	struct source_stamp stamp;
	char url[];
};

static int http_claims(const char *uri)
{
	return !strncmp(uri, "http://", 7) || !strncmp(uri, "https://", 8);
}

static int http_env_init(struct source_env *env)
{
	struct http_env *he = calloc(1, sizeof(*he));
	int rc;

	if (!he)
		return -ENOMEM;
	pthread_mutex_init(&he->ids_lock, NULL);
	pthread_mutex_init(&he->q_lock, NULL);
	pthread_cond_init(&he->q_more, NULL);
	env->http = he;
	/* blocks read ahead (and prefetched: three windows) must not push
	 * each other out of the cache before they are read: an eighth of it
	 * per window */
	he->cache_bytes = env->cfg.cache_bytes;
	he->read_timeout_ns = (int64_t)env->cfg.read_timeout_s * 1000000000;
	he->build_timeout_ns = (int64_t)env->cfg.build_timeout_s * 1000000000;
	he->ra_max = env->cfg.cache_bytes / BLOCK / 8 < RA_MAX ?
		     (unsigned)(env->cfg.cache_bytes / BLOCK / 8) : RA_MAX;
	if ((rc = httpreq_ctx_new(&env->cfg, &he->net)))
		return rc;
	httpreq_ctx_count(he->net, &env->ctr);
	if (!(he->mem = lru_new_in(env->mem, "blocks", env->cfg.cache_bytes)))
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
	size_t i;

	if (!he)
		return;
	httpahead_stop(he);
	httpreq_ctx_free(he->net);
	lru_free(he->mem);
	diskcache_close(he->disk);
	for (i = 0; i < STAMP_MEMO; i++)
		free(he->memo[i].url);
	for (i = 0; i < he->nknown; i++)
		while ((k = he->known[i])) {
			he->known[i] = k->next;
			free(k);
		}
	free(he->known);
	pthread_mutex_destroy(&he->ids_lock);
	pthread_mutex_destroy(&he->q_lock);
	pthread_cond_destroy(&he->q_more);
	free(he);
	env->http = NULL;
}

static int same_stamp(const struct source_stamp *a, const struct source_stamp *b)
{
	/* a generation counts where both have one: a HEAD gives none */
	return a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       !strcmp(a->etag, b->etag) &&
	       (!a->generation || !b->generation || a->generation == b->generation);
}

uint64_t http_hash(const char *url)
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a */

	while (*url)
		h = (h ^ (unsigned char)*url++) * 1099511628211ull;
	return h;
}

/* Doubles the table (called with ids_lock held).  0 or -ENOMEM. */
static int known_grow(struct http_env *he)
{
	size_t n = he->nknown ? 2 * he->nknown : 64, i;
	struct known **t = calloc(n, sizeof(*t)), *k;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < he->nknown; i++)
		while ((k = he->known[i])) {
			he->known[i] = k->next;
			k->next = t[k->hash & (n - 1)];
			t[k->hash & (n - 1)] = k;
		}
	free(he->known);
	he->known = t;
	he->nknown = n;
	return 0;
}

/*
 * The entry of (url, stamp) in this mount, made if new; NULL on ENOMEM.
 * The URL opened before with another stamp changed while mounted: every
 * entry of it is marked changed.
 */
static struct known *source_known(struct http_env *he, const char *url,
				  const struct source_stamp *st)
{
	uint64_t h = http_hash(url);
	struct known *k, *found = NULL;
	int changed = 0;

	pthread_mutex_lock(&he->ids_lock);
	for (k = he->nknown ? he->known[h & (he->nknown - 1)] : NULL; k; k = k->next) {
		if (k->hash != h || strcmp(k->url, url))
			continue;
		if (same_stamp(&k->stamp, st))
			found = k;
		else
			changed = 1;
		changed |= atomic_load(&k->changed);
	}
	if (!found && (he->count < he->nknown || !known_grow(he)) &&
	    (found = calloc(1, sizeof(*found) + strlen(url) + 1))) {
		found->id = ++he->next_id;
		found->hash = h;
		found->stamp = *st;
		strcpy(found->url, url);
		found->next = he->known[h & (he->nknown - 1)];
		he->known[h & (he->nknown - 1)] = found;
		he->count++;
	}
	if (found && changed)
		for (k = he->known[h & (he->nknown - 1)]; k; k = k->next)
			if (k->hash == h && !strcmp(k->url, url))
				atomic_store(&k->changed, 1);
	pthread_mutex_unlock(&he->ids_lock);
	return found;
}

int http_know(struct http_env *he, const char *name,
	      const struct source_stamp *st)
{
	return source_known(he, name, st) ? 0 : -ENOMEM;
}

int http_known_stamp(struct http_env *he, const char *name,
		     struct source_stamp *st)
{
	uint64_t h = http_hash(name);
	struct known *k;
	int found = 0;

	pthread_mutex_lock(&he->ids_lock);
	/* entries are put at the head of their chain: the first is the newest */
	for (k = he->nknown ? he->known[h & (he->nknown - 1)] : NULL; k; k = k->next)
		if (k->hash == h && !strcmp(k->url, name)) {
			*st = k->stamp;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&he->ids_lock);
	return found;
}

static void stamp_from(const struct httpresp *r, uint64_t size,
		       struct source_stamp *st)
{
	memset(st, 0, sizeof(*st));
	st->size = size;
	st->mtime_ns = r->mtime_ns;
	memcpy(st->etag, r->etag, sizeof(st->etag));
}

int http_status_errno(long status)
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

	if (httpreq_do(he->net, &req, &r)) {
		snprintf(why, whylen, "%s (%s)", r.cause,
			 httpreq_attempts(r.attempts).s);
		return -EIO;
	}
	if ((rc = http_status_errno(r.status))) {
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

/*
 * The stamp of url, by HEAD: its length, ETag and Last-Modified, and
 * whether the server says it serves ranges (Accept-Ranges: bytes).  Only
 * when HEAD is refused or says less is a ranged GET of byte 0 sent (probe),
 * so mounting from a server like nginx sends no data GET.  A server that
 * says it serves ranges and then does not is caught by the first read.
 * 0 or -errno, with what went wrong in why (no message here).
 */
static int stamp_asked(struct http_env *he, const char *url, struct source_stamp *st,
		       int *is_dir, char *why, size_t whylen)
{
	struct httpreq req = { .url = url, .head = 1 };
	struct httpresp r;
	int rc;

	*is_dir = 0;
	if (httpreq_do(he->net, &req, &r)) {
		snprintf(why, whylen, "%s (%s)", r.cause,
			 httpreq_attempts(r.attempts).s);
		return -EIO;
	}
	if (r.status == 405 || r.status == 501)	/* no HEAD here */
		return probe(he, url, st, is_dir, why, whylen);
	if ((rc = http_status_errno(r.status))) {
		snprintf(why, whylen, "HTTP %ld", r.status);
		return rc;
	}
	if ((*is_dir = r.to_dir))
		return 0;	/* redirected to "name/" */
	if (r.status == 200 && r.length >= 0 && r.accept_ranges) {
		stamp_from(&r, (uint64_t)r.length, st);
		return 0;
	}
	return probe(he, url, st, is_dir, why, whylen);
}

/*
 * A mount's start asks for one URL's stamp up to four times (the layout's
 * choice of source, the layout's own look, the open, the saved index's
 * check), each a round trip that waits for the one before: 80 ms of every
 * mount at 20 ms a request, where one HEAD says it all.  So an answer
 * stands for STAMP_FRESH_NS.  Not how changes are noticed: every response
 * is checked against the stamp (httpreq.c), and a later look asks again.
 */
int http_memo_get(struct http_env *he, const char *url, struct source_stamp *st,
		  int *is_dir)
{
	int64_t now = sfs_now_ns();
	int found = 0;
	unsigned i;

	pthread_mutex_lock(&he->ids_lock);
	for (i = 0; i < STAMP_MEMO && !found; i++) {
		struct stamp_memo *m = &he->memo[i];

		if (m->url && now - m->at_ns < STAMP_FRESH_NS && !strcmp(m->url, url)) {
			*st = m->st;
			*is_dir = m->is_dir;
			found = 1;
		}
	}
	pthread_mutex_unlock(&he->ids_lock);
	return found;
}

void http_memo_put(struct http_env *he, const char *url, const struct source_stamp *st,
		   int is_dir)
{
	char *copy = strdup(url);
	struct stamp_memo *m;

	if (!copy)
		return;		/* only a HEAD more */
	pthread_mutex_lock(&he->ids_lock);
	m = &he->memo[he->memo_next++ % STAMP_MEMO];
	free(m->url);
	*m = (struct stamp_memo){ copy, sfs_now_ns(), is_dir, *st };
	pthread_mutex_unlock(&he->ids_lock);
}

/* stamp_asked's answer, or one given for the same URL just before */
static int stamp_of(struct http_env *he, const char *url, struct source_stamp *st,
		    int *is_dir, char *why, size_t whylen)
{
	int rc;

	if (http_memo_get(he, url, st, is_dir))
		return 0;
	if ((rc = stamp_asked(he, url, st, is_dir, why, whylen)) == 0)
		http_memo_put(he, url, st, *is_dir);
	return rc;
}

static int http_open(struct source *s)
{
	struct http_env *he = s->env ? s->env->http : NULL;
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
	if ((rc = stamp_of(he, s->name, &s->stamp, &is_dir, why, sizeof(why)))) {
		sfs_err("%s: %s", s->name, why);
		return rc;
	}
	if (is_dir)
		return -EISDIR;
	return http_attach(s, s->name, NULL);
}

int http_attach(struct source *s, const char *url, const struct httpauth *auth)
{
	struct http_env *he = s->env ? s->env->http : NULL;
	struct http_src *h;
	struct known *k;
	pthread_condattr_t ca;

	if (!he)
		return -EINVAL;
	if (s->stamp.size / BLOCK > UINT32_MAX) {
		sfs_err("%s: %" PRIu64 " bytes: larger than samplefs reads over HTTP",
			s->name, s->stamp.size);
		return -EFBIG;
	}
	if (!(h = calloc(1, sizeof(*h))) || !(h->url = strdup(url))) {
		free(h);
		return -ENOMEM;
	}
	h->he = he;
	h->auth = auth;
	/* known by the name, as the disk cache: a bucket object's name
	 * (s3://...) is what it is, whichever URL reaches it */
	if (!(k = source_known(he, s->name, &s->stamp))) {
		free(h->url);
		free(h);
		return -ENOMEM;
	}
	h->id = k->id;
	h->url_changed = &k->changed;
	/* without ETag or Last-Modified, blocks on disk could be of another
	 * version of the same size */
	h->disk = he->disk && (s->stamp.etag[0] || s->stamp.mtime_ns);
	h->ra_next = UINT64_MAX;
	pthread_mutex_init(&h->lock, NULL);
	/* reads wait on it until their deadline, a CLOCK_MONOTONIC time */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->landed, &ca);
	pthread_condattr_destroy(&ca);
	s->priv = h;
	httpahead_start(he);
	return 0;
}

void http_close(struct source *s)
{
	struct http_src *h = s->priv;

	if (!h)
		return;
	httpahead_forget(s);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->landed);
	free(h->url);
	free(h);
}

int http_changed(struct source *s)
{
	struct http_src *h = s->priv;

	return atomic_load(&s->changed) || atomic_load(h->url_changed);
}

/* ---- names ---- */

static int http_stat(struct source_env *env, const char *uri,
		     struct source_info *out)
{
	struct http_env *he = env ? env->http : NULL;
	size_t len = strlen(uri);
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
	/* absent is an answer, not an error: callers look names up */
	if ((rc = stamp_of(he, uri, &out->stamp, &out->is_dir, why, sizeof(why))) &&
	    rc != -ENOENT)
		sfs_err("%s: %s", uri, why);
	return rc;
}

static void http_seen(struct source_env *env, const char *uri,
		      const struct source_info *info)
{
	if (env && env->http)
		http_memo_put(env->http, uri, &info->stamp, info->is_dir);
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
		sfs_err("%s: listing: %s (%s)", url, r.cause,
			httpreq_attempts(r.attempts).s);
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

/* WILLNEED prefetches; WALK starts a walk, NORMAL and RANDOM end it
 * (httpahead.c); the block cache decides the rest. */
void http_advise(struct source *s, uint64_t off, uint64_t len,
			enum source_advice adv)
{
	if (adv == SOURCE_ADV_WILLNEED)
		httpahead_willneed(s, off, len);
	else
		httpahead_walk(s, adv == SOURCE_ADV_WALK);
}

const struct source_backend source_http_backend = {
	.name = "http",
	.claims = http_claims,
	.open = http_open,
	.pread = httpcache_pread,
	.refetch = httpcache_refetch,
	.forget = httpcache_forget,
	.changed = http_changed,
	.close = http_close,
	.advise = http_advise,
	.stat = http_stat,
	.seen = http_seen,
	.list = http_list,
	.env_init = http_env_init,
	.env_fini = http_env_fini,
};
