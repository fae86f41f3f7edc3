/*
 * select.c - what samplefs-download fetches (select.h): the walk of a
 * listing, a file of URLs, and the --include / --classes filter.
 * Everything is read through source.h; nothing is written here.
 *
 * Not for: the transfers (core/io/download.c), parsing URL files
 * (core/io/dlnames.c) or classes files (the Quick, Draw! layout's).
 */
#include "select.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/dlnames.h"
#include "log.h"

#define TEXT_MAX  (64u << 20)   /* a classes file or a file of URLs */
#define DEPTH_MAX 32            /* directories within SOURCE */

/* ---- the filter ---- */

size_t select_class_len(const char *name)
{
	static const char *const suf[] = SELECT_SUFFIXES;
	size_t n = strlen(name), i, m;

	for (i = 0; i < sizeof(suf) / sizeof(suf[0]); i++) {
		m = strlen(suf[i]);
		if (n > m && !strcmp(name + n - m, suf[i]))
			return n - m;
	}
	return 0;
}

struct cls_key {
	const char *p;
	size_t len;
};

static int cmp_key(const void *k, const void *e)
{
	const struct cls_key *a = k;
	const char *b = *(char *const *)e;
	int c = strncmp(a->p, b, a->len);

	return c ? c : b[a->len] ? -1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int select_keep(const struct select *s, const char *rel)
{
	const char *base = strrchr(rel, '/');
	struct cls_key k;
	size_t i;
	int any = !s->nglobs;

	for (i = 0; i < s->nglobs && !any; i++)
		any = !fnmatch(s->globs[i], rel, 0);
	if (!any || !s->classes.n)
		return any;
	k.p = base ? base + 1 : rel;
	if (!(k.len = select_class_len(k.p)))
		return 0;
	return bsearch(&k, s->classes.v, s->classes.n, sizeof(char *), cmp_key) != NULL;
}

/* uri's bytes (at most TEXT_MAX), malloc'ed.  0 or -errno (said). */
static int read_text(struct source_env *env, const char *uri, const char *what,
		     char **buf, size_t *len)
{
	struct source *src;
	ssize_t got;
	int rc = source_open(env, uri, &src);

	*buf = NULL;
	if (rc) {
		sfs_err("%s: cannot open the %s: %s", uri, what, strerror(-rc));
		return rc;
	}
	if (source_stamp(src)->size >= TEXT_MAX) {
		sfs_err("%s: expected a %s under %u bytes", uri, what, TEXT_MAX);
		rc = -EFBIG;
	} else if (!(*buf = malloc(source_stamp(src)->size + 1))) {
		rc = -ENOMEM;
	} else if ((got = source_pread(src, *buf, source_stamp(src)->size, 0)) < 0) {
		rc = (int)got;
		sfs_err("%s: cannot read the %s: %s", uri, what, strerror(-rc));
	} else {
		*len = (size_t)got;
	}
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	source_close(src);
	return rc;
}

int select_read_classes(struct select *s, struct source_env *env, const char *file)
{
	size_t len;
	char *buf;
	int rc;

	if ((rc = read_text(env, file, "classes file", &buf, &len)))
		return rc;
	rc = qd_classes_parse(file, buf, len, &s->classes);
	free(buf);
	if (!rc && !s->classes.n) {
		sfs_err("%s: expected at least one class name", file);
		rc = -EINVAL;
	}
	if (rc)
		return rc;
	qsort(s->classes.v, s->classes.n, sizeof(char *), cmp_str);
	return 0;
}

void select_free(struct select *s)
{
	qd_names_free(&s->classes);
}

/* ---- finding the objects ---- */

/* Adds uri as rel with its stamp.  0 or -ENOMEM. */
static int add(struct select_list *l, const char *uri, const char *rel,
	       const struct source_stamp *st)
{
	struct download_item *it;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;

		if (!(it = realloc(l->v, cap * sizeof(*it))))
			return -ENOMEM;
		l->v = it;
		l->cap = cap;
	}
	it = &l->v[l->n];
	memset(it, 0, sizeof(*it));
	if (!(it->uri = strdup(uri)) || !(it->rel = strdup(rel))) {
		free(it->uri);
		free(it->rel);
		return -ENOMEM;
	}
	it->size = st->size;
	/* a bucket's ETag is its MD5 unless multipart; a web server's is not */
	it->has_md5 = source_is_bucket(uri) && dlnames_md5_of_etag(st->etag, it->md5);
	l->n++;
	return 0;
}

/* uri's stamp (from the listing that named it: no request for buckets; a
 * HEAD for URLs), then adds it.  A name that cannot be stat'ed is counted
 * in l->failed (said): the run goes on without it. */
static int add_stat(struct select_list *l, struct source_env *env, const char *uri,
		    const char *rel)
{
	struct source_info info;
	int rc = source_stat(env, uri, &info);

	if (!rc && info.is_dir)
		rc = -EISDIR;
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		sfs_err("[FAIL] %s: %s", uri, strerror(-rc));
		l->failed++;
		return 0;
	}
	return add(l, uri, rel, &info.stamp);
}

struct entries {
	char **name;
	unsigned char *is_dir;
	size_t n, cap;
};

static int on_entry(void *arg, const char *name, int is_dir)
{
	struct entries *e = arg;

	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		char **nv = realloc(e->name, cap * sizeof(*nv));
		unsigned char *dv;

		if (!nv)
			return -ENOMEM;
		e->name = nv;
		if (!(dv = realloc(e->is_dir, cap)))
			return -ENOMEM;
		e->is_dir = dv;
		e->cap = cap;
	}
	if (!(e->name[e->n] = strdup(name)))
		return -ENOMEM;
	e->is_dir[e->n++] = (unsigned char)is_dir;
	return 0;
}

static void entries_free(struct entries *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->name[i]);
	free(e->name);
	free(e->is_dir);
}

/* The objects under dir (a directory's name, ending in '/'), as prefix +
 * their names. */
static int walk(const struct select *s, struct source_env *env, const char *dir,
		const char *prefix, unsigned depth, struct select_list *l)
{
	struct entries e = {0};
	char *uri = NULL, *rel = NULL;
	size_t i;
	int rc = source_list(env, dir, on_entry, &e);

	if (rc) {
		if (rc != -ENOMEM)
			sfs_err("%s: cannot list: %s", dir, strerror(-rc));
		goto out;
	}
	for (i = 0; i < e.n && !rc; i++) {
		if (asprintf(&rel, "%s%s%s", prefix, e.name[i], e.is_dir[i] ? "/" : "") < 0 ||
		    !(uri = source_join(dir, e.name[i]))) {
			rel = NULL;
			rc = -ENOMEM;
			break;
		}
		if (e.is_dir[i] && depth < DEPTH_MAX) {
			char *sub = NULL;

			rc = asprintf(&sub, "%s/", uri) < 0 ? -ENOMEM :
			     walk(s, env, sub, rel, depth + 1, l);
			free(sub);
		} else if (e.is_dir[i]) {
			sfs_warn("%s: more than %u directories deep: skipped", uri, DEPTH_MAX);
		} else if (select_keep(s, rel)) {
			rc = add_stat(l, env, uri, rel);
		}
		free(uri);
		free(rel);
		uri = rel = NULL;
	}
out:
	entries_free(&e);
	return rc;
}

struct urls {
	const struct select *s;
	struct source_env *env;
	struct select_list *l;
};

static int on_url(void *arg, const char *url, const char *rel)
{
	struct urls *u = arg;

	return select_keep(u->s, rel) ? add_stat(u->l, u->env, url, rel) : 0;
}

static int cmp_rel(const void *a, const void *b)
{
	return strcmp(((const struct download_item *)a)->rel,
		      ((const struct download_item *)b)->rel);
}

int select_find(const struct select *s, struct source_env *env, const char *source,
		struct select_list *l)
{
	struct urls u = { s, env, l };
	struct source_info info;
	size_t len, i;
	char *buf, *dir;
	int rc = source_stat(env, source, &info);

	memset(l, 0, sizeof(*l));
	if (rc) {
		sfs_err("%s: %s", source, strerror(-rc));
		return rc;
	}
	if (info.is_dir && !source_is_url(source)) {
		sfs_err("%s: a local directory (SOURCE is a URL, or a file of URLs)", source);
		return -EINVAL;
	}
	if (info.is_dir) {
		size_t n = strlen(source);

		if (asprintf(&dir, "%s%s", source, n && source[n - 1] == '/' ? "" : "/") < 0)
			return -ENOMEM;
		rc = walk(s, env, dir, "", 0, l);
		free(dir);
	} else if (!(rc = read_text(env, source, "file of URLs", &buf, &len))) {
		rc = dlnames_urls_parse(source, buf, len, on_url, &u);
		free(buf);
	}
	if (rc)
		return rc;
	qsort(l->v, l->n, sizeof(*l->v), cmp_rel);
	for (i = 1; i < l->n; i++)
		if (!strcmp(l->v[i - 1].rel, l->v[i].rel)) {
			sfs_err("%s and %s: both would be %s", l->v[i - 1].uri,
				l->v[i].uri, l->v[i].rel);
			return -EINVAL;
		}
	return 0;
}

void select_list_free(struct select_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].uri);
		free(l->v[i].rel);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}
