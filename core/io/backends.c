/*
 * backends.c - sources reached by name: the table of backends (the first
 * that claims a name opens it), the mount's environment they share,
 * source_open (which wraps a compressed file in zsource.c's backend, so it
 * reads as its uncompressed bytes), stat, list and upload by URI, and the
 * URI helpers.  See source.h for the contract.
 *
 * Not for: an open source's reads and checks (source.c): this file stands
 * above every backend, compressed ones included, and no backend calls it
 * back.
 */
#include "io/backend.h"
#include "io/codecs/arxsource.h"
#include "io/lru.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Tried in order; the local file backend claims whatever is not a URL. */
static const struct source_backend *const backends[] = {
	&source_http_backend,
	&source_bucket_backend,
	&source_file_backend,
	&source_z_backend,	/* claims nothing: wraps (zsource_wrap) */
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

static const struct source_backend *backend_of(const char *uri)
{
	size_t i;

	for (i = 0; i < NBACKENDS; i++)
		if (backends[i]->claims(uri))
			return backends[i];
	return NULL;
}

int source_is_bucket(const char *uri)
{
	return !strncmp(uri, "s3://", 5) || !strncmp(uri, "gs://", 5);
}

int source_is_url(const char *uri)
{
	return !strncmp(uri, "http://", 7) || !strncmp(uri, "https://", 8) ||
	       source_is_bucket(uri);
}

char *source_resolve(const char *uri)
{
	return source_is_url(uri) ? strdup(uri) : realpath(uri, NULL);
}

const char *source_default_region(void)
{
	const char *v = getenv("AWS_REGION");

	if (!v || !*v)
		v = getenv("AWS_DEFAULT_REGION");
	return v && *v ? v : "us-east-1";
}

int source_env_new(const struct source_config *cfg, struct source_env **out)
{
	struct source_env *env = calloc(1, sizeof(*env));
	size_t i;
	int rc = 0;

	if (!env)
		return -ENOMEM;
	if (cfg)
		env->cfg = *cfg;
	if (!env->cfg.timeout_s)
		env->cfg.timeout_s = 30;
	if (!env->cfg.retries)
		env->cfg.retries = 5;
	if (!env->cfg.read_timeout_s)
		env->cfg.read_timeout_s = 2 * env->cfg.timeout_s;
	if (!env->cfg.build_timeout_s)
		env->cfg.build_timeout_s = 600;
	if (!env->cfg.cache_bytes)
		env->cfg.cache_bytes = SOURCE_CACHE_DEFAULT;
	if (!env->cfg.cache_dir_bytes)
		env->cfg.cache_dir_bytes = 1ull << 30;
	if (!env->cfg.max_redirects)
		env->cfg.max_redirects = 8;
	if (!env->cfg.max_keys || env->cfg.max_keys > 1000)
		env->cfg.max_keys = 1000;
	if (!env->cfg.region)	/* bucket.c reads it; the control dir shows it */
		env->cfg.region = source_default_region();
	if (!(env->mem = lru_pool_new(env->cfg.cache_bytes)))
		rc = -ENOMEM;
	for (i = 0; i < NBACKENDS && !rc; i++)
		if (backends[i]->env_init)
			rc = backends[i]->env_init(env);
	if (rc) {
		source_env_free(env);
		return rc;
	}
	*out = env;
	return 0;
}

const struct source_config *source_env_config(const struct source_env *env)
{
	return &env->cfg;
}

uint64_t source_env_decompressed(const struct source_env *env)
{
	return atomic_load_explicit(&env->ctr.decompressed, memory_order_relaxed);
}

struct lru_pool *source_env_cache(struct source_env *env)
{
	return env ? env->mem : NULL;
}

/* A source just opened, wrapped when compressed: counted if it was (the
 * wrapper is a new source; a plain one comes back as it went in). */
int source_counted_wrap(struct source *s, struct source **out)
{
	struct source_env *env = s->env;	/* s may be closed on failure */
	int rc = zsource_wrap(s, out);

	/* an archive libarchive reads and decompresses once (arxsource.h) */
	if (rc == 0 && *out == s && env)
		rc = arxsource_wrap(s, out);
	if (rc == 0 && *out != s && env)
		SOURCE_COUNT(&env->ctr, decompressed);
	return rc;
}

void source_env_stats(const struct source_env *env, struct source_stats *out)
{
	const struct source_counters *c = &env->ctr;

	out->requests = atomic_load_explicit(&c->requests, memory_order_relaxed);
	out->retries = atomic_load_explicit(&c->retries, memory_order_relaxed);
	out->errors = atomic_load_explicit(&c->errors, memory_order_relaxed);
	out->mem_hits = atomic_load_explicit(&c->mem_hits, memory_order_relaxed);
	out->mem_misses = atomic_load_explicit(&c->mem_misses, memory_order_relaxed);
	out->disk_hits = atomic_load_explicit(&c->disk_hits, memory_order_relaxed);
	out->disk_misses = atomic_load_explicit(&c->disk_misses, memory_order_relaxed);
	out->checksum_failures = atomic_load_explicit(&c->checksum_failures,
						      memory_order_relaxed);
	out->checksum_refetches = atomic_load_explicit(&c->checksum_refetches,
						       memory_order_relaxed);
	out->prefetch_hints = atomic_load_explicit(&c->prefetch_hints, memory_order_relaxed);
}

void source_env_on_change(struct source_env *env, source_change_fn fn,
			  void *arg)
{
	env->on_change = fn;
	env->on_change_arg = arg;
}

void source_env_free(struct source_env *env)
{
	size_t i;

	if (!env)
		return;
	for (i = 0; i < NBACKENDS; i++)
		if (backends[i]->env_fini)
			backends[i]->env_fini(env);
	lru_pool_free(env->mem);	/* after every cache made in it */
	free(env);
}

int source_open(struct source_env *env, const char *uri, struct source **out)
{
	const struct source_backend *be = backend_of(uri);
	struct source *s;
	int rc;

	*out = NULL;
	if (!be)
		return -EPROTONOSUPPORT;
	if (!(s = calloc(1, sizeof(*s))) || !(s->name = strdup(uri))) {
		free(s);
		return -ENOMEM;
	}
	s->be = be;
	s->env = env;
	if ((rc = be->open(s)) < 0) {
		free(s->name);
		free(s);
		return rc;
	}
	/* a compressed file reads as its uncompressed bytes */
	return source_counted_wrap(s, out);
}

int source_stat(struct source_env *env, const char *uri, struct source_info *out)
{
	const struct source_backend *be = backend_of(uri);

	memset(out, 0, sizeof(*out));
	return be ? be->stat(env, uri, out) : -EPROTONOSUPPORT;
}

void source_stat_seen(struct source_env *env, const char *uri,
		      const struct source_info *info)
{
	const struct source_backend *be = backend_of(uri);

	if (be && be->seen)
		be->seen(env, uri, info);
}

int source_upload(struct source_env *env, const char *uri, const void *data,
		  uint64_t len)
{
	const struct source_backend *be = backend_of(uri);

	if (!be || !be->upload) {
		sfs_err("%s: cannot upload there: only s3:// and gs:// objects "
			"are written", uri);
		return -EOPNOTSUPP;
	}
	return be->upload(env, uri, data, len);
}

int source_list(struct source_env *env, const char *dir_uri, source_list_fn fn,
		void *arg)
{
	const struct source_backend *be = backend_of(dir_uri);

	return be ? be->list(env, dir_uri, fn, arg) : -EPROTONOSUPPORT;
}

/* RFC 3986 unreserved characters pass; everything else is %XX. */
static int url_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

char *source_join(const char *dir_uri, const char *name)
{
	size_t dl = strlen(dir_uri), nl = strlen(name), i;
	int url = source_is_url(dir_uri);
	char *out, *p;

	while (dl > 1 && dir_uri[dl - 1] == '/')
		dl--;
	/* worst case every byte of name becomes %XX */
	if (!(out = malloc(dl + 1 + 3 * nl + 1)))
		return NULL;
	memcpy(out, dir_uri, dl);
	p = out + dl;
	if (!(dl == 1 && dir_uri[0] == '/'))
		*p++ = '/';
	for (i = 0; i < nl; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!url || url_plain(c) || c == '/')
			*p++ = (char)c;
		else
			p += sprintf(p, "%%%02X", c);
	}
	*p = '\0';
	return out;
}
