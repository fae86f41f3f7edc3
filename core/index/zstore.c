/*
 * zstore.c - the index layer's store of access-point tables (zstore.h):
 * zsource.h's load/release/save, on index.h's files (temporary file,
 * checksum, rename into place, mapping), so a table is never half-written
 * and two daemons sharing the directory see a whole one or none.  A load
 * goes through index_load (load.c) with no build of its own: the saved
 * table, else the prebuilt index's (-o index=), else -ENOENT and zsource
 * runs its pass, then saves here; or, with -o index_only, -EPERM.
 *
 * Threads: load and release are called from source_open, on the thread
 * opening; save from the thread of a source's first pass (zsource.c),
 * while other threads may load other tables.  Nothing here is shared but
 * the options (read-only); each save writes its own temporary file.
 *
 * Not for: deciding when a table is used (load.c), what it holds
 * (zsource.c, ztable.c).
 */
#include "index/zstore.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "io/codecs/zsource.h"
#include "log.h"

#define ZTAG INDEX_TAG('Z', 'P', 'T', 'S')
#define KTAG INDEX_TAG('Z', 'K', 'E', 'Y')
#define NS INT64_C(1000000000)

/* One table looked for: the store's arguments, for index_load's job. */
struct zlook {
	const char *name;
	const struct source_stamp *st;
	uint64_t span;
};

static void fingerprint(struct index_fp *fp, const struct zlook *k)
{
	index_fp_init(fp, "gz");
	index_fp_add_source(fp, k->name, k->st);
	index_fp_add_u64(fp, k->span);
}

/* The section must be there: zsource checks the blob itself. */
static int attach(void *arg, const struct index_map *m, const char *path)
{
	uint64_t len;

	(void)arg;
	if (!index_map_section(m, ZTAG, &len) || len == 0) {
		sfs_warn("%s: no table of access points in it", path);
		return -EBADMSG;
	}
	return 0;
}

static void stale(void *arg, const struct index_map *peek, char *why, size_t whylen)
{
	const struct zlook *k = arg;
	uint64_t len;
	const void *key = index_map_section(peek, KTAG, &len);

	if (key)
		index_zstore_explain(key, (size_t)len, k->name, k->st, k->span,
				     why, whylen);
}

/* Appends "; " (after the first) and a formatted phrase to why. */
static void say(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *why, size_t whylen, const char *fmt, ...)
{
	size_t n = strnlen(why, whylen);
	va_list ap;

	if (n + 3 >= whylen)
		return;
	if (n)
		n += (size_t)snprintf(why + n, whylen - n, "; ");
	va_start(ap, fmt);
	vsnprintf(why + n, whylen - n, fmt, ap);
	va_end(ap);
}

int index_zstore_explain(const void *sect, size_t len, const char *name,
			 const struct source_stamp *st, uint64_t span,
			 char *why, size_t whylen)
{
	struct zkey k;
	const char *kname = (const char *)sect + sizeof(k);

	if (whylen)
		why[0] = '\0';
	if (len < sizeof(k) + 1)
		return -EBADMSG;
	memcpy(&k, sect, sizeof(k));
	if (k.version != ZKEY_VERSION || k.name_len != len - sizeof(k) - 1 ||
	    kname[k.name_len] || strlen(kname) != k.name_len ||
	    !memchr(k.etag, '\0', sizeof(k.etag)))
		return -EBADMSG;
	if (strcmp(kname, name))
		say(why, whylen, "made for %.200s", kname);
	if (k.span != span)
		say(why, whylen, "made with span %" PRIu64 ", the mount's is %" PRIu64,
		    k.span, span);
	if (k.size != st->size)
		say(why, whylen, "made for %" PRIu64 " compressed bytes, the "
		    "source has %" PRIu64, k.size, st->size);
	if (k.mtime_ns != st->mtime_ns)
		say(why, whylen, "made for mtime %" PRId64 ".%09" PRId64 ", the "
		    "source's is %" PRId64 ".%09" PRId64,
		    k.mtime_ns / NS, k.mtime_ns % NS, st->mtime_ns / NS,
		    st->mtime_ns % NS);
	if (strcmp(k.etag, st->etag))
		say(why, whylen, "made for ETag %s, the source's is %s",
		    k.etag[0] ? k.etag : "none", st->etag[0] ? st->etag : "none");
	if (k.generation != st->generation)
		say(why, whylen, "made for generation %" PRIu64 ", the source's is %"
		    PRIu64, k.generation, st->generation);
	return 0;
}

static int zs_load(void *arg, const char *name, const struct source_stamp *st,
		   uint64_t span, const void **blob, size_t *len, void **hold)
{
	const struct sfs_opts *o = arg;
	struct zlook k = { name, st, span };
	struct index_map *m = malloc(sizeof(*m));
	struct index_fp fp;
	char what[4200];
	struct index_job job = {
		.layout = "gz", .key = name, .fp = &fp, .build = NULL,
		.attach = attach, .arg = &k, .what = what, .stale = stale,
	};
	uint64_t slen;
	int rc;

	if (!m)
		return -ENOMEM;
	fingerprint(&fp, &k);
	snprintf(what, sizeof(what), "the access points of %s", name);
	rc = index_load(o, &job, m);
	if (rc < 0) {
		free(m);
		/* said by index_load; a pass would read the whole source */
		return o->index_only ? -EPERM : rc;
	}
	*blob = index_map_section(m, ZTAG, &slen);
	*len = (size_t)slen;
	*hold = m;
	return 0;
}

static void zs_release(void *arg, void *hold)
{
	(void)arg;
	index_map_close(hold);
	free(hold);
}

/* 'ZKEY' of a table: k in the clear, then its name. */
static int add_key(struct index_writer *w, const struct zlook *k)
{
	struct zkey z;
	int rc;

	memset(&z, 0, sizeof(z));
	z.version = ZKEY_VERSION;
	z.name_len = (uint32_t)strlen(k->name);
	z.size = k->st->size;
	z.mtime_ns = k->st->mtime_ns;
	z.generation = k->st->generation;
	z.span = k->span;
	snprintf(z.etag, sizeof(z.etag), "%s", k->st->etag);
	rc = index_writer_begin(w, KTAG);
	if (rc == 0)
		rc = index_writer_append(w, &z, sizeof(z));
	if (rc == 0)
		rc = index_writer_append(w, k->name, z.name_len + 1ull);
	if (rc == 0)
		rc = index_writer_end(w);
	return rc;
}

static void zs_save(void *arg, const char *name, const struct source_stamp *st,
		    uint64_t span, const void *blob, size_t len)
{
	const struct sfs_opts *o = arg;
	struct zlook k = { name, st, span };
	struct index_writer *w;
	struct index_fp fp;
	char path[4096];
	int rc;

	if ((rc = index_path(o, "gz", name, path, sizeof(path))) < 0) {
		sfs_warn("%s: no place for its access points (%s): they are "
			 "made again at the next mount", name, strerror(-rc));
		return;
	}
	if ((rc = index_writer_open(&w, path)) < 0)
		return;
	rc = index_writer_add(w, ZTAG, blob, len);
	if (rc == 0)
		rc = add_key(w, &k);
	if (rc < 0) {
		index_writer_abort(w);
		return;
	}
	fingerprint(&fp, &k);
	index_writer_commit(w, &fp);
}

static const struct zsource_store ops = { zs_load, zs_release, zs_save };

void index_zstore_attach(struct source_env *env, const struct sfs_opts *o)
{
	source_env_zstore(env, &ops, (void *)o);
}
