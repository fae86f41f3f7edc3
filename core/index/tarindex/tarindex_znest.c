/*
 * tarindex_znest.c - nested compressed tars ("shard.tar.gz" inside a tar,
 * ImageNet's class tars recompressed as "n01440764.tar.gz"): a member
 * named with a compressed tar's suffix whose bytes decompress to a tar is
 * expanded as a nested tar is, through a derived source: the member's
 * bytes as a slice of the source holding it (io/slice.h), read as their
 * uncompressed bytes by the decompressing source (io/zsource.h), whose
 * access points the mount's store keeps under the derived source's name.
 * Its members' offsets are in those uncompressed bytes; their nodes name
 * the derived source.  The build records each derived source (parent,
 * offset, length; tarindex_int.h) and the mount opens them again, in
 * order, after the sources they are members of.
 *
 * Bounds: a stream is decompressed by zsource's pass, bounded as a
 * compressed source is (memory: a window and its table; a stream with no
 * restart point in 128 MiB refused); a bomb costs the time to decompress
 * it once, at the first mount.  Nesting follows `recursive`.
 *
 * Threads: the build runs on one thread; after tarindex_open the derived
 * sources are read as any source, from any thread.
 *
 * Not for: zips inside tars, gzip inside gzip (zsource reads one level).
 */
#include "index/tarindex/tarindex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/slice.h"
#include "io/codecs/zsource.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"
#include "formats/tar.h"

char *tarindex_derived_name(const char *parent, uint64_t off, const char *path)
{
	int n = snprintf(NULL, 0, "%s@%llu:%s", parent, (unsigned long long)off, path);
	char *s = n < 0 ? NULL : malloc((size_t)n + 1);

	if (s)
		snprintf(s, (size_t)n + 1, "%s@%llu:%s", parent,
			 (unsigned long long)off, path);
	return s;
}

/* ------------------------------------------------------------- build */

/* Failures that stop the build rather than leave the member a file. */
static int stops_build(int rc)
{
	return rc == -ENOMEM || rc == -EINTR || rc == -ETIMEDOUT || rc == -ENOSPC;
}

/* Whether `in` (opened on member m) is a decompressed tar. */
static int is_ztar(struct source *in)
{
	unsigned char hdr[TAR_BLOCK];

	return source_is_decompressed(in) &&
	       source_pread(in, hdr, sizeof(hdr), 0) == sizeof(hdr) &&
	       tar_header_ok(hdr);
}

/* Records the derived source `in`, member m of c's source: its number. */
static int keep_derived(struct walkctx *c, const struct tar_member *m,
			struct source *in, char *what, uint32_t *no)
{
	struct builder *b = c->b;
	struct tarbuild_derived *d;
	uint64_t at;
	int rc = tarbuild_grow((void **)&b->der, &b->der_cap, b->nder, sizeof(*b->der));

	if (rc == 0)
		rc = tarbuild_arena_put(&b->dpaths, NULL, m->path, strlen(m->path), &at);
	if (rc < 0)
		return rc;
	d = &b->der[b->nder];
	memset(d, 0, sizeof(*d));
	d->d.off = m->offset;
	d->d.len = m->size;
	d->d.parent = c->srcno;
	d->d.name = (uint32_t)at;
	d->usize = source_stamp(in)->size;
	d->what = what;
	*no = b->nsrc + b->nder++;
	return 0;
}

int tarbuild_znested(struct walkctx *c, const struct tar_member *m, const char *sfx)
{
	struct builder *b = c->b;
	struct source *in = NULL;
	char *what;
	uint32_t no;
	int rc;

	if (b->nsrc + b->nder >= TARINDEX_MAX_SOURCES || b->dpaths.len > UINT32_MAX) {
		sfs_warn("%s: member '%s': over %u archives: kept as a file",
			 c->what, m->path, TARINDEX_MAX_SOURCES);
		return 0;
	}
	if (!(what = tarindex_derived_name(source_name(c->src), m->offset, m->path)))
		return -ENOMEM;
	rc = source_open_slice(c->src, m->offset, m->size, what, &in);
	if (rc < 0) {
		sfs_warn("%s: member '%s' at offset %llu: cannot read it as a "
			 "compressed tar (%s): kept as a file", c->what, m->path,
			 (unsigned long long)m->offset, strerror(-rc));
		free(what);
		return stops_build(rc) ? rc : 0;
	}
	if (!is_ztar(in)) {
		source_close(in);
		free(what);
		return 0;
	}
	rc = keep_derived(c, m, in, what, &no);
	if (rc < 0) {
		source_close(in);
		free(what);
		return rc;
	}
	/* the derived source is walked now and closed after: the mount
	 * opens it again from its record (and stored access points) */
	rc = c->b->nest_walk(c, m, sfx, in, no);
	source_close(in);
	return rc;
}

int tarbuild_derived_write(struct builder *b, struct index_writer *w, uint32_t c)
{
	uint32_t k;
	int rc;

	if (!b->nder)
		return 0;
	rc = index_writer_begin(w, TAG(c, 'D', 'V'));
	for (k = 0; rc == 0 && k < b->nder; k++)
		rc = index_writer_append(w, &b->der[k].d, sizeof(b->der[k].d));
	if (rc == 0)
		rc = index_writer_end(w);
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'D', 'N'), b->dpaths.p, b->dpaths.len);
	return rc;
}

void tarbuild_derived_free(struct builder *b)
{
	uint32_t k;

	for (k = 0; k < b->nder; k++)
		free(b->der[k].what);
	free(b->der);
	free(b->dpaths.p);
}

/* ------------------------------------------------------------- mount */

/* Derived record k is one the mount can open: its parent before it, its
 * range inside the parent's size, its path inside the names section. */
static int derived_ok(const struct tarindex *t, const struct tarindex_derived *d,
		      uint32_t k, const char *names, uint64_t nlen)
{
	uint64_t psize;

	if (d->parent >= t->ntop + k || d->name >= nlen ||
	    !memchr(names + d->name, '\0', nlen - d->name))
		return 0;
	psize = t->src_sizes[d->parent];
	return d->off <= psize && d->len <= psize - d->off;
}

/* Opens derived source k into t->srcs[t->ntop + k]. */
static int derived_open_one(struct tarindex *t, const struct tarindex_derived *d,
			    uint32_t k, const char *names)
{
	struct source *parent = t->srcs[d->parent], *s = NULL;
	uint64_t want = t->src_sizes[t->ntop + k];
	char *name = tarindex_derived_name(source_name(parent), d->off, names + d->name);
	int rc;

	if (!name)
		return -ENOMEM;
	rc = source_open_slice(parent, d->off, d->len, name, &s);
	if (rc < 0) {
		sfs_err("%s: cannot open: %s", name, strerror(-rc));
		goto out;
	}
	t->srcs[t->ntop + k] = s;
	if (!source_is_decompressed(s) || source_stamp(s)->size != want) {
		sfs_warn("%s: %llu bytes uncompressed, the index says %llu: "
			 "rebuilding", name,
			 (unsigned long long)source_stamp(s)->size,
			 (unsigned long long)want);
		rc = -EBADMSG;
	}
out:
	free(name);
	return rc;
}

int tarindex_derived_open(struct tarindex *t, const struct index_map *m,
			  uint32_t c, uint32_t nderived)
{
	uint64_t dlen = 0, nlen = 0;
	const struct tarindex_derived *d = index_map_section(m, TAG(c, 'D', 'V'), &dlen);
	const char *names = index_map_section(m, TAG(c, 'D', 'N'), &nlen);
	uint32_t k;
	int rc = 0;

	if (!nderived)
		return 0;
	if (!d || !names || dlen != (uint64_t)nderived * sizeof(*d)) {
		sfs_warn("tar index: derived sources missing or of another size: "
			 "rebuilding");
		return -EBADMSG;
	}
	for (k = 0; rc == 0 && k < nderived; k++) {
		if (!derived_ok(t, &d[k], k, names, nlen)) {
			sfs_warn("tar index: derived source %u is not one: rebuilding", k);
			return -EBADMSG;
		}
		rc = derived_open_one(t, &d[k], k, names);
	}
	return rc;
}

void tarindex_derived_close(struct tarindex *t)
{
	uint32_t k;

	/* the last first: a derived source reads through its parent */
	for (k = t->nsrc; t->srcs && k-- > t->ntop; ) {
		source_close(t->srcs[k]);
		t->srcs[k] = NULL;
	}
}
