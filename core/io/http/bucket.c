/*
 * bucket.c - the bucket backend: a source that is an object in a bucket,
 * s3://BUCKET/KEY (AWS S3, or any store speaking its API: Swift's s3api,
 * GCS with HMAC keys) or gs://BUCKET/KEY (Google Cloud Storage's XML API),
 * and a "directory" that is a prefix (s3://BUCKET/PREFIX/).
 *
 * An object is an HTTP URL read with signed requests: opening one finds
 * its stamp (size, ETag, Last-Modified) in the listing that named it, or
 * by a HEAD, then hands it to the HTTP backend (http_attach), whose block
 * caches, readahead, retries, deadlines and change checks serve it as
 * they serve a URL.  No second HTTP client, and nothing of SigV4 here:
 * libcurl signs (httpreq.c, struct httpauth).
 *
 * Names are URIs as source.h says: the key's bytes percent-encoded where
 * source_join put them, decoded here into the key, which is encoded again
 * by AWS's rules into the request (bucket_encode).
 *
 * Stamps: Last-Modified in whole seconds (a listing gives milliseconds, a
 * HEAD seconds: the same object has the same stamp either way, so an
 * index fingerprinted from one matches the other).  A GCS listing's
 * Generation joins the stamp (size + ETag + generation): an object
 * replaced by the same bytes keeps its ETag, not its generation; a HEAD
 * gives none (x-goog-generation is not read), so a single object's
 * stamp, opened without a listing, is size + ETag as S3's.  A listing's
 * stamps are kept with the HTTP backend's sources by name (http_know), so
 * opening an object a listing named sends no request, and a later listing
 * that shows another stamp is a change, as a read's response showing one
 * is.
 *
 * Credentials (S3) are looked for at the first request, not at mount
 * setup, so a local mount never reads ~/.aws: awscred.c, else anonymous.
 * GCS: a bearer token from GOOGLE_OAUTH_ACCESS_TOKEN, else anonymous.
 * Secrets live in env->bucket only, zeroed when it is freed; messages name
 * the bucket, the key, the endpoint and what the store answered (its
 * <Code> and <Message>), never a credential.
 *
 * Not for: HTTP (httpreq.c), caching (httpcache.c), XML (bucketlist.c),
 * the credentials file (awscred.c).
 */
#include "io/http/bucket.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/http/awscred.h"
#include "io/http/bucketlist.h"
#include "io/http/http_int.h"
#include "io/http/httpreq.h"
#include "log.h"

#define LIST_BODY_MAX (16u << 20)   /* one listing page */
#define PAGES_MAX     1000000       /* a listing that never ends is an error */
#define AWS_DEFAULT_REGION "us-east-1"
#define GCS_ENDPOINT  "https://storage.googleapis.com"

enum store { ST_S3, ST_GS };

/* env->bucket. */
struct bucket_env {
	struct http_env *he;          /* env->http: the requests and caches */
	const struct source_config *cfg;
	pthread_mutex_t lock;         /* the fields below */
	int ready;                    /* 1: set up (credentials looked for) */
	int ready_rc;
	char *base[2];                /* endpoint URLs, without a final '/' */
	int s3_virtual;               /* S3 addressing: bucket in the host name */
	char *region;
	struct awscred cred;
	char *sigv4;                  /* "aws:amz:REGION:s3" */
	char *token_hdr;              /* "x-amz-security-token: ..." */
	char *bearer_hdr;             /* "Authorization: Bearer ..." */
	const char *s3_hdrs[4], *gs_hdrs[2];
	struct httpauth auth[2];      /* per store; unused when anonymous */
	int signed_[2];
	const char *unsigned_why[2];  /* why a store's requests go unsigned */
	/* buckets an answer showed are there (a 200 to a listing or a HEAD),
	 * round robin: a 404 to a HEAD in one of them is a missing key, with
	 * no request to ask whether the bucket is missing instead */
	char *seen[4];
	unsigned nseen;
};

/* A name taken apart. */
struct bname {
	enum store store;
	char *bucket;
	char *key;                    /* decoded; "" for the bucket's root */
};

/* ---- names ---- */

static int bucket_claims(const char *uri)
{
	return source_is_bucket(uri);
}

static int aws_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

char *bucket_encode(const char *s, int keep_slash)
{
	char *out = malloc(3 * strlen(s) + 1), *p = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (aws_plain(c) || (keep_slash && c == '/'))
			*p++ = (char)c;
		else
			p += sprintf(p, "%%%02X", c);
	}
	*p = '\0';
	return out;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *bucket_decode(const char *s)
{
	char *out = malloc(strlen(s) + 1), *p = out;

	if (!out)
		return NULL;
	while (*s) {
		if (s[0] == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*p++ = (char)(hexval(s[1]) << 4 | hexval(s[2]));
			s += 3;
		} else {
			*p++ = *s++;
		}
	}
	*p = '\0';
	return out;
}

static void bname_free(struct bname *n)
{
	free(n->bucket);
	free(n->key);
}

/* s3://bucket/key or gs://bucket/key.  0, -EINVAL (logged), -ENOMEM. */
static int bname_parse(const char *uri, struct bname *n)
{
	const char *b = uri + 5, *slash = strchr(b, '/'), *c;
	size_t bl = slash ? (size_t)(slash - b) : strlen(b);

	memset(n, 0, sizeof(*n));
	n->store = uri[0] == 's' ? ST_S3 : ST_GS;
	/* the bucket goes into a host name (virtual-hosted S3): letters,
	 * digits, '.', '-' and '_' only */
	for (c = b; c < b + bl; c++)
		if (!aws_plain((unsigned char)*c) || *c == '~')
			break;
	if (!bl || c != b + bl) {
		sfs_err("%s: not a bucket name (%s://BUCKET/KEY: a bucket is "
			"letters, digits, '.', '-', '_')", uri, n->store == ST_S3 ? "s3" : "gs");
		return -EINVAL;
	}
	if (!(n->bucket = strndup(b, bl)) ||
	    !(n->key = bucket_decode(slash ? slash + 1 : ""))) {
		bname_free(n);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The URL of key (encoded by AWS's rules) in n's bucket, with query (already
 * encoded and sorted, or NULL) after it.  malloc'ed, NULL on ENOMEM.
 */
static char *url_of(const struct bucket_env *b, const struct bname *n,
		    const char *key, const char *query)
{
	const char *base = b->base[n->store], *host;
	char *k = bucket_encode(key, 1), *u = NULL;
	const char *q = query ? "?" : "", *qs = query ? query : "";
	int rc;

	if (!k)
		return NULL;
	if (n->store == ST_S3 && b->s3_virtual && (host = strstr(base, "://"))) {
		host += 3;
		rc = asprintf(&u, "%.*s%s.%s/%s%s%s", (int)(host - base), base,
			      n->bucket, host, k, q, qs);
	} else if (*key) {
		rc = asprintf(&u, "%s/%s/%s%s%s", base, n->bucket, k, q, qs);
	} else {	/* the bucket itself: no '/' after its name */
		rc = asprintf(&u, "%s/%s%s%s", base, n->bucket, q, qs);
	}
	free(k);
	return rc < 0 ? NULL : u;
}

/* ---- the mount's state ---- */

static int bucket_env_init(struct source_env *env)
{
	struct bucket_env *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	b->he = env->http;
	b->cfg = &env->cfg;
	env->bucket = b;
	return 0;
}

static void bucket_env_fini(struct source_env *env)
{
	struct bucket_env *b = env->bucket;

	if (!b)
		return;
	for (unsigned i = 0; i < sizeof(b->seen) / sizeof(b->seen[0]); i++)
		free(b->seen[i]);
	awscred_free(&b->cred);
	awscred_zfree(b->token_hdr);
	awscred_zfree(b->bearer_hdr);
	free(b->sigv4);
	free(b->region);
	free(b->base[ST_S3]);
	free(b->base[ST_GS]);
	pthread_mutex_destroy(&b->lock);
	free(b);
	env->bucket = NULL;
}

static char *trimmed_url(const char *u)
{
	size_t n = strlen(u);

	while (n && u[n - 1] == '/')
		n--;
	return strndup(u, n);
}

static const char *first_env(const char *a, const char *b)
{
	const char *v = getenv(a);

	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

/* The S3 side: endpoint, region, addressing, credentials.  0 or -errno. */
static int setup_s3(struct bucket_env *b)
{
	const struct source_config *cfg = b->cfg;
	const char *ep = cfg->endpoint ? cfg->endpoint : first_env("AWS_ENDPOINT_URL", NULL);
	const char *rg = cfg->region ? cfg->region :
			 first_env("AWS_REGION", "AWS_DEFAULT_REGION");
	size_t h = 0;
	int rc;

	if (!(b->region = strdup(rg ? rg : AWS_DEFAULT_REGION)))
		return -ENOMEM;
	if (ep)
		b->base[ST_S3] = trimmed_url(ep);
	else if (asprintf(&b->base[ST_S3], "https://s3.%s.amazonaws.com", b->region) < 0)
		b->base[ST_S3] = NULL;
	if (!b->base[ST_S3])
		return -ENOMEM;
	b->s3_virtual = cfg->addressing ? cfg->addressing == 2 : !ep;
	b->unsigned_why[ST_S3] = "-o anonymous";
	if (cfg->anonymous)
		return 0;
	rc = awscred_load(cfg->profile, &b->cred);
	if (rc == -ENOENT && cfg->profile)
		return -EACCES;	/* said: the profile asked for is not there */
	b->unsigned_why[ST_S3] = "no credentials found: none in AWS_ACCESS_KEY_ID "
				 "and AWS_SECRET_ACCESS_KEY, nor in the credentials "
				 "file's profile (AWS_PROFILE, else default)";
	if (rc == -ENOENT)
		return 0;	/* no credentials anywhere: anonymous */
	if (rc)
		return rc;
	if (asprintf(&b->sigv4, "aws:amz:%s:s3", b->region) < 0) {
		b->sigv4 = NULL;
		return -ENOMEM;
	}
	/* curl 7.88 signs the headers it is given but adds neither of these:
	 * S3 wants the payload's hash (none here: UNSIGNED-PAYLOAD), and a
	 * session's token */
	b->s3_hdrs[h++] = "x-amz-content-sha256: UNSIGNED-PAYLOAD";
	/* S3 sends an object's x-amz-checksum-crc32c only when asked; an
	 * answer holding the whole object is then checked against it
	 * (httpreq.c), a range or a multipart object's composite ("...-N")
	 * never is */
	b->s3_hdrs[h++] = "x-amz-checksum-mode: ENABLED";
	if (b->cred.token) {
		if (asprintf(&b->token_hdr, "x-amz-security-token: %s", b->cred.token) < 0) {
			b->token_hdr = NULL;
			return -ENOMEM;
		}
		b->s3_hdrs[h++] = b->token_hdr;
	}
	b->s3_hdrs[h] = NULL;
	b->auth[ST_S3] = (struct httpauth){ .sigv4 = b->sigv4, .user = b->cred.access_key,
					    .password = b->cred.secret,
					    .headers = b->s3_hdrs };
	b->signed_[ST_S3] = 1;
	return 0;
}

/* The GCS side: endpoint and an optional bearer token.  0 or -errno. */
static int setup_gs(struct bucket_env *b)
{
	const char *tok = first_env("GOOGLE_OAUTH_ACCESS_TOKEN", NULL);

	if (!(b->base[ST_GS] = trimmed_url(b->cfg->endpoint ? b->cfg->endpoint :
					   GCS_ENDPOINT)))
		return -ENOMEM;
	b->unsigned_why[ST_GS] = b->cfg->anonymous ? "-o anonymous" :
				 "no GOOGLE_OAUTH_ACCESS_TOKEN in the environment";
	if (b->cfg->anonymous || !tok)
		return 0;
	if (asprintf(&b->bearer_hdr, "Authorization: Bearer %s", tok) < 0) {
		b->bearer_hdr = NULL;
		return -ENOMEM;
	}
	b->gs_hdrs[0] = b->bearer_hdr;
	b->gs_hdrs[1] = NULL;
	b->auth[ST_GS] = (struct httpauth){ .headers = b->gs_hdrs };
	b->signed_[ST_GS] = 1;
	return 0;
}

/* env->bucket, set up at its first use.  NULL with *rc set. */
static struct bucket_env *ready(struct source_env *env, int *rc)
{
	struct bucket_env *b = env ? env->bucket : NULL;

	if (!b || !b->he) {
		sfs_err("bucket sources need a source environment (source_env_new)");
		*rc = -EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&b->lock);
	if (!b->ready) {
		b->ready = 1;
		if (!(b->ready_rc = setup_s3(b)))
			b->ready_rc = setup_gs(b);
	}
	*rc = b->ready_rc;
	pthread_mutex_unlock(&b->lock);
	return *rc ? NULL : b;
}

static const struct httpauth *auth_of(const struct bucket_env *b, enum store st)
{
	return b->signed_[st] ? &b->auth[st] : NULL;
}

/* ---- requests ---- */

static void saw_bucket(struct bucket_env *b, const char *bucket)
{
	const unsigned max = sizeof(b->seen) / sizeof(b->seen[0]);
	unsigned i;
	char *d;

	pthread_mutex_lock(&b->lock);
	for (i = 0; i < max && b->seen[i]; i++)
		if (!strcmp(b->seen[i], bucket))
			goto out;
	if ((d = strdup(bucket))) {	/* best effort: else asked again */
		i = b->nseen++ % max;
		free(b->seen[i]);
		b->seen[i] = d;
	}
out:
	pthread_mutex_unlock(&b->lock);
}

static int seen_bucket(struct bucket_env *b, const char *bucket)
{
	const unsigned max = sizeof(b->seen) / sizeof(b->seen[0]);
	unsigned i;
	int yes = 0;

	pthread_mutex_lock(&b->lock);
	for (i = 0; i < max && b->seen[i] && !yes; i++)
		yes = !strcmp(b->seen[i], bucket);
	pthread_mutex_unlock(&b->lock);
	return yes;
}

/* 1 when a 404's <Error> body says the bucket itself is missing (S3's and
 * GCS's XML APIs both say NoSuchBucket): a mount's one error, not an
 * absent name among others. */
static int no_such_bucket(const struct httpresp *r)
{
	struct bucketlist_page pg;
	int yes;

	if (r->status != 404 || !r->errbody[0] ||
	    bucketlist_error(r->errbody, strlen(r->errbody), &pg))
		return 0;
	yes = !strcmp(pg.code, "NoSuchBucket");
	bucketlist_page_free(&pg);
	return yes;
}

static int64_t whole_seconds(int64_t ns)
{
	return ns - ns % 1000000000;
}

/* "HTTP 403 SignatureDoesNotMatch: The request signature ..." from a
 * response's status and <Error> body (when it has one). */
static void what_said(const struct httpresp *r, char *out, size_t len)
{
	struct bucketlist_page pg;
	int ok = r->errbody[0] && !bucketlist_error(r->errbody, strlen(r->errbody),
						    &pg) && pg.code[0];

	if (ok)
		snprintf(out, len, "HTTP %ld %s%s%s", r->status, pg.code,
			 pg.message[0] ? ": " : "", pg.message);
	else
		snprintf(out, len, "HTTP %ld", r->status);
	if (r->errbody[0])
		bucketlist_page_free(&pg);
}

/*
 * What to add to a refusal (status) of a store's request: which
 * credentials signed it, or that it went unsigned, why, and how to give
 * some.  A store answers an unsigned request for a private bucket with
 * 403, or with 400 or 412 (Swift's s3api, some gateways): any 4xx but 404
 * gets the unsigned hint.  Nothing for other statuses.
 */
static void auth_hint(const struct bucket_env *b, enum store st, long status,
		      char *out, size_t len)
{
	if (b->signed_[st] && (status == 401 || status == 403))
		snprintf(out, len, " (signed with the credentials of %s: wrong or "
			 "without access%s; another profile of the credentials "
			 "file: samplefs -o profile=NAME, samplefs-download "
			 "--profile NAME)",
			 st == ST_S3 ? b->cred.from : "GOOGLE_OAUTH_ACCESS_TOKEN",
			 st == ST_S3 ? ", or region= differs" : "");
	else if (!b->signed_[st] && status / 100 == 4 && status != 404)
		snprintf(out, len, " (anonymous: the request was unsigned: %s; a private "
			 "bucket wants credentials: %s)", b->unsigned_why[st],
			 st == ST_S3 ? "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
			 "in the environment, or a profile of ~/.aws/credentials "
			 "(samplefs -o profile=NAME, samplefs-download --profile NAME)" :
			 "GOOGLE_OAUTH_ACCESS_TOKEN in the environment");
}

/*
 * The line for a request that failed: names the object (uri) and the
 * endpoint, what the store said, and what may be wrong.  A HEAD's answer
 * has no body: its status alone, unless a GET of one byte says more.
 */
static void report(struct bucket_env *b, const struct bname *n, const char *uri,
		   const char *what, const struct httpresp *r)
{
	char said[400], hint[600] = "";

	what_said(r, said, sizeof(said));
	if (r->status == 301 || r->status == 307)
		snprintf(hint, sizeof(hint), " (the bucket is elsewhere: region= or endpoint=)");
	else
		auth_hint(b, n->store, r->status, hint, sizeof(hint));
	sfs_err("%s: %s: bucket %s, key \"%s\" at %s: %s%s", uri, what, n->bucket,
		n->key, b->base[n->store], said, hint);
}

/* HEAD of n's key: its stamp.  0, -ENOENT (not logged), or -errno
 * (logged, naming the object and what the store said). */
static int head(struct bucket_env *b, const struct bname *n, const char *uri,
		struct source_stamp *st)
{
	char *url = url_of(b, n, n->key, NULL);
	struct httpreq req = { .head = 1, .auth = auth_of(b, n->store) };
	struct httpresp r;
	char one;
	struct iovec iov = { &one, 1 };
	/* a HEAD's error has no body: one byte's GET of the key says why */
	const struct httpreq byte = { .url = url, .ranged = 1, .iov = &iov, .niov = 1,
				      .auth = auth_of(b, n->store) };
	long said;
	int rc;

	if (!(req.url = url))
		return -ENOMEM;
	if (httpreq_do(b->he->net, &req, &r)) {
		sfs_err("%s: bucket %s, key \"%s\" at %s: %s (%s)", uri,
			n->bucket, n->key, b->base[n->store], r.cause,
			httpreq_attempts(r.attempts).s);
		rc = -EIO;
		goto out;
	}
	if (r.status == 200 && r.length >= 0) {
		saw_bucket(b, n->bucket);
		memset(st, 0, sizeof(*st));
		st->size = (uint64_t)r.length;
		st->mtime_ns = whole_seconds(r.mtime_ns);
		memcpy(st->etag, r.etag, sizeof(st->etag));
		rc = 0;
		goto out;
	}
	said = r.status;
	if ((rc = http_status_errno(r.status)) == -ENOENT) {
		if (seen_bucket(b, n->bucket))
			goto out;
		/* the key, or the whole bucket?  Asked once per bucket that
		 * turns out to be there */
		free(r.body);
		r.body = NULL;
		if (!httpreq_do(b->he->net, &byte, &r) && no_such_bucket(&r)) {
			report(b, n, uri, "HEAD", &r);
			rc = -EIO;
		} else if (r.status == 404) {
			saw_bucket(b, n->bucket);
		}
		goto out;
	}
	if (!rc)
		rc = -EIO;	/* a 2xx without a length */
	free(r.body);
	r.body = NULL;
	if (said / 100 != 2 && !httpreq_do(b->he->net, &byte, &r) && r.status == said)
		report(b, n, uri, "HEAD", &r);
	else {
		char hint[600] = "";

		auth_hint(b, n->store, said, hint, sizeof(hint));
		sfs_err("%s: bucket %s, key \"%s\" at %s: HEAD answered HTTP %ld%s%s",
			uri, n->bucket, n->key, b->base[n->store], said,
			said / 100 == 2 ? " without a length" : "", hint);
	}
out:
	free(r.body);
	free(url);
	return rc;
}

/* ---- listings ---- */

struct lister {
	struct bucket_env *b;
	const char *dir_uri;
	const char *prefix;          /* the key prefix listed, ending in '/' or "" */
	source_list_fn fn;
	void *arg;
	size_t entries;
};

static int on_entry(void *arg, const struct bucketlist_entry *e)
{
	struct lister *l = arg;
	size_t pl = strlen(l->prefix), nl;
	char *name, *uri;
	struct source_stamp st;
	int rc;

	if (strncmp(e->key, l->prefix, pl))
		return 0;	/* not under the prefix: a store's mistake */
	if (!(name = strdup(e->key + pl)))
		return -ENOMEM;
	nl = strlen(name);
	if (e->is_prefix && nl && name[nl - 1] == '/')
		name[--nl] = '\0';
	/* "dir/" objects (folder markers), and names no directory holds */
	if (!nl || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		free(name);
		return 0;
	}
	l->entries++;
	if (!e->is_prefix && (uri = source_join(l->dir_uri, name))) {
		st = e->stamp;
		st.mtime_ns = whole_seconds(st.mtime_ns);
		st.generation = e->generation;	/* GCS's; 0 elsewhere */
		/* best effort: without it, opening the object HEADs it */
		(void)http_know(l->b->he, uri, &st);
		free(uri);
	}
	rc = l->fn(l->arg, name, e->is_prefix);
	free(name);
	return rc;
}

/* One page's query, sorted and encoded as SigV4 signs it. */
static char *list_query(const struct bucket_env *b, enum store st,
			const char *prefix, const char *next, unsigned max_keys)
{
	char *p = bucket_encode(prefix, 0), *t = next ? bucket_encode(next, 0) : NULL;
	char *q = NULL;
	int rc;

	if (!p || (next && !t)) {
		free(p);
		free(t);
		return NULL;
	}
	if (st == ST_S3)
		rc = asprintf(&q, "%s%s%sdelimiter=%%2F&list-type=2&max-keys=%u&prefix=%s",
			      t ? "continuation-token=" : "", t ? t : "", t ? "&" : "",
			      max_keys, p);
	else
		rc = asprintf(&q, "delimiter=%%2F%s%s&max-keys=%u&prefix=%s",
			      t ? "&marker=" : "", t ? t : "", max_keys, p);
	free(p);
	free(t);
	return rc < 0 ? NULL : q;
}

/* Every page of the listing of l->prefix, with the delimiter '/' (so
 * "subdirectories" come as prefixes).  0, fn's nonzero, or -errno (logged,
 * but for a 404 when quiet_404). */
static int list_pages(struct lister *l, const struct bname *n, const char *uri,
		      unsigned max_keys, int quiet_404)
{
	struct bucket_env *b = l->b;
	struct bucketlist_page pg = {0};
	struct httpreq req = { .max_body = LIST_BODY_MAX, .auth = auth_of(b, n->store) };
	struct httpresp r = {0};
	char *next = NULL, *q = NULL, *url = NULL;
	unsigned page;
	int rc = 0;

	for (page = 0; page < PAGES_MAX; page++) {
		if (!(q = list_query(b, n->store, l->prefix, next, max_keys)) ||
		    !(url = url_of(b, n, "", q))) {
			rc = -ENOMEM;
			goto out;
		}
		req.url = url;
		if (httpreq_do(b->he->net, &req, &r)) {
			sfs_err("%s: listing bucket %s, prefix \"%s\" at %s: %s (%s)",
				uri, n->bucket, l->prefix, b->base[n->store], r.cause,
				httpreq_attempts(r.attempts).s);
			rc = -EIO;
			goto out;
		}
		if (r.status != 200) {
			/* a missing bucket is the mount's error, said once: not
			 * -ENOENT, which callers take for one absent name */
			if (no_such_bucket(&r)) {
				report(b, n, uri, "listing", &r);
				rc = -EIO;
				goto out;
			}
			if (!(quiet_404 && r.status == 404))
				report(b, n, uri, "listing", &r);
			rc = http_status_errno(r.status);
			rc = rc ? rc : -EIO;
			goto out;
		}
		saw_bucket(b, n->bucket);
		rc = bucketlist_parse(r.body ? r.body : "", r.got, on_entry, l, &pg);
		if (rc == -EBADMSG || (!rc && pg.is_error))
			sfs_err("%s: listing bucket %s, prefix \"%s\" at %s: not a "
				"bucket listing (ListBucketResult)", uri, n->bucket,
				l->prefix, b->base[n->store]);
		if (!rc && pg.is_error)
			rc = -EIO;
		if (rc || !pg.truncated)
			goto out;
		free(next);
		/* GCS gives NextMarker only with a delimiter; the last key
		 * is the marker otherwise */
		next = pg.next ? pg.next : pg.last_key;
		if (pg.next)
			pg.next = NULL;
		else
			pg.last_key = NULL;
		if (!next) {
			sfs_err("%s: listing bucket %s at %s: a truncated page "
				"without a continuation", uri, n->bucket, b->base[n->store]);
			rc = -EIO;
			goto out;
		}
		bucketlist_page_free(&pg);
		free(r.body);
		r.body = NULL;
		free(q);
		free(url);
		q = url = NULL;
	}
	rc = -EIO;
out:
	bucketlist_page_free(&pg);
	free(r.body);
	free(next);
	free(q);
	free(url);
	return rc;
}

/* The key prefix a directory name lists: "" or ending in '/'. */
static char *prefix_of(const char *key)
{
	size_t n = strlen(key);
	char *p = malloc(n + 2);

	if (!p)
		return NULL;
	memcpy(p, key, n);
	if (n && key[n - 1] != '/')
		p[n++] = '/';
	p[n] = '\0';
	return p;
}

/* Lists the "directory" n->key names (the keys under key + '/'), fn per
 * entry; *entries: how many were handed out.  As list_pages. */
static int list_dir(struct bucket_env *b, const struct bname *n, const char *uri,
		    source_list_fn fn, void *arg, unsigned max_keys, int quiet_404,
		    size_t *entries)
{
	struct lister l = { .b = b, .dir_uri = uri, .fn = fn, .arg = arg };
	char *prefix = prefix_of(n->key);
	int rc;

	if (!(l.prefix = prefix))
		return -ENOMEM;
	rc = list_pages(&l, n, uri, max_keys, quiet_404);
	*entries = l.entries;
	free(prefix);
	return rc;
}

static int bucket_list(struct source_env *env, const char *uri, source_list_fn fn,
		       void *arg)
{
	struct bucket_env *b;
	struct bname n;
	size_t entries;
	int rc;

	if (!(b = ready(env, &rc)))
		return rc;
	if ((rc = bname_parse(uri, &n)))
		return rc;
	rc = list_dir(b, &n, uri, fn, arg, b->cfg->max_keys, 0, &entries);
	/* as readdir of a directory that is not there */
	if (!rc && !entries && *n.key)
		rc = -ENOENT;
	bname_free(&n);
	return rc;
}

static int count_one(void *arg, const char *name, int is_dir)
{
	(void)arg;
	(void)name;
	(void)is_dir;
	return 1;	/* one is enough */
}

/* ---- the backend ---- */

static int bucket_stat(struct source_env *env, const char *uri,
		       struct source_info *out)
{
	struct bucket_env *b;
	struct bname n;
	size_t len = strlen(uri), entries;
	int rc;

	if (!(b = ready(env, &rc)))
		return rc;
	/* as for URLs: a name ending in '/' is a directory; listing it tells
	 * what is there (and any error the store gives) */
	if (len && uri[len - 1] == '/') {
		out->is_dir = 1;
		return 0;
	}
	if (http_known_stamp(b->he, uri, &out->stamp) ||
	    http_memo_get(b->he, uri, &out->stamp, &out->is_dir))
		return 0;
	if ((rc = bname_parse(uri, &n)))
		return rc;
	if (!*n.key) {	/* s3://bucket */
		out->is_dir = 1;
		goto out;
	}
	if ((rc = head(b, &n, uri, &out->stamp)) != -ENOENT) {
		if (!rc)
			http_memo_put(b->he, uri, &out->stamp, 0);
		goto out;
	}
	/* no such object: a directory if some key starts with key + "/";
	 * quiet when nothing is there: the name is just absent (callers
	 * look names up), and the HEAD's 404 said so already */
	rc = list_dir(b, &n, uri, count_one, NULL, 1, 1, &entries);
	if (rc == 1 || (rc == 0 && entries)) {
		out->is_dir = 1;
		rc = 0;
	} else if (rc == 0) {
		rc = -ENOENT;
	}
out:
	bname_free(&n);
	return rc;
}

/* source_stat_seen: an object's HEAD in layout_choose's environment
 * (only objects are remembered: a directory is a listing's answer) */
static void bucket_seen(struct source_env *env, const char *uri,
			const struct source_info *info)
{
	struct bucket_env *b;
	int rc;

	if (!info->is_dir && (b = ready(env, &rc)))
		http_memo_put(b->he, uri, &info->stamp, 0);
}

static int bucket_open(struct source *s)
{
	struct bucket_env *b;
	struct bname n;
	char *url = NULL;
	size_t len = strlen(s->name);
	int rc, is_dir = 0;

	if (!(b = ready(s->env, &rc)))
		return rc;
	if (len && s->name[len - 1] == '/')
		return -EISDIR;
	if ((rc = bname_parse(s->name, &n)))
		return rc;
	if (!*n.key) {
		rc = -EISDIR;
		goto out;
	}
	if (!http_known_stamp(b->he, s->name, &s->stamp) &&
	    !http_memo_get(b->he, s->name, &s->stamp, &is_dir) &&
	    (rc = head(b, &n, s->name, &s->stamp))) {
		if (rc == -ENOENT)
			sfs_err("%s: no such object: bucket %s, key \"%s\" at %s",
				s->name, n.bucket, n.key, b->base[n.store]);
		goto out;
	}
	if (!(url = url_of(b, &n, n.key, NULL))) {
		rc = -ENOMEM;
		goto out;
	}
	rc = http_attach(s, url, auth_of(b, n.store));
out:
	free(url);
	bname_free(&n);
	return rc;
}

int bucket_request(struct source_env *env, const char *uri, char **url,
		   const struct httpauth **auth)
{
	struct bucket_env *b;
	struct bname n;
	int rc;

	if (!(b = ready(env, &rc)))
		return rc;
	if ((rc = bname_parse(uri, &n)))
		return rc;
	*auth = auth_of(b, n.store);
	if (!*n.key) {
		sfs_err("%s: a bucket, not an object", uri);
		rc = -EINVAL;
	} else if (!(*url = url_of(b, &n, n.key, NULL))) {
		rc = -ENOMEM;
	}
	bname_free(&n);
	return rc;
}

/* A PUT of the whole object (a prebuilt index: prebuilt.c).  Not through
 * the HTTP backend's caches: nothing of it is read back by this mount. */
static int bucket_upload(struct source_env *env, const char *uri, const void *data,
			 uint64_t len)
{
	struct bucket_env *b;
	struct httpresp r;
	struct bname n;
	char *url = NULL;
	int rc;

	if (!(b = ready(env, &rc)))
		return rc;
	if ((rc = bname_parse(uri, &n)))
		return rc;
	if (!*n.key || n.key[strlen(n.key) - 1] == '/') {
		sfs_err("%s: an upload needs a key (%s://BUCKET/KEY)", uri,
			n.store == ST_S3 ? "s3" : "gs");
		rc = -EISDIR;
		goto out;
	}
	if (!(url = url_of(b, &n, n.key, NULL))) {
		rc = -ENOMEM;
		goto out;
	}
	if (httpreq_put(b->he->net, url, auth_of(b, n.store), data, len, &r)) {
		sfs_err("%s: upload: bucket %s, key \"%s\" at %s: %s (%s)",
			uri, n.bucket, n.key, b->base[n.store], r.cause,
			httpreq_attempts(r.attempts).s);
		rc = -EIO;
	} else if (r.status != 200) {
		report(b, &n, uri, "upload", &r);
		rc = http_status_errno(r.status);
		rc = rc ? rc : -EIO;
	}
out:
	free(url);
	bname_free(&n);
	return rc;
}

const struct source_backend source_bucket_backend = {
	.name = "bucket",
	.claims = bucket_claims,
	.open = bucket_open,
	.pread = httpcache_pread,
	.refetch = httpcache_refetch,
	.forget = httpcache_forget,
	.changed = http_changed,
	.close = http_close,
	.advise = http_advise,
	.stat = bucket_stat,
	.seen = bucket_seen,
	.list = bucket_list,
	.upload = bucket_upload,
	.env_init = bucket_env_init,
	.env_fini = bucket_env_fini,
};
