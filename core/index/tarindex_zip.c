/*
 * tarindex_zip.c - zip sources in the tar index (see tarindex.h): the walk
 * that turns a zip's members into the build's entries, the section of
 * deflated members it writes, and, at mount, that section checked and
 * the reads of deflated members: small ones inflated whole (zipread.c),
 * large ones through derived sources (member_open, called by zipread at
 * a member's first read).
 *
 * A member goes through the same tb_walk_cb as a tar member, so names,
 * duplicates (the last wins), implicit directories, symlinks that leave
 * the mount and stored nested tars follow the tar rules.  A member's node
 * keeps the offset of its data; the section, sorted by (source, offset),
 * lists every file member with its method, compressed size and CRC-32,
 * so that every member's bytes are checked (zipread.h), stored ones too.
 * Members no read can give (encrypted, other methods) are named in one
 * warning per zip.  The section is absent for tars, so they pay one test
 * of a zero count per read.
 *
 * Threads: building is single-threaded; at mount the section is
 * read-only and t->zr locks itself (its cache, its members' sources).
 *
 * Not for: the zip format (formats/zipwalk.c, zipread.c), zips inside tars.
 */
#include "index/tarindex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "formats/zipread.h"
#include "formats/zipwalk.h"
#include "index/tarindex_int.h"
#include "index/tarindex_build_int.h"

/* ---- build ----------------------------------------------------------- */

/* Keeps member e aside for the section. */
static int keep_member(struct builder *b, uint32_t srcno, const struct zip_entry *e)
{
	if (b->nzips == b->zips_cap) {
		uint64_t cap = b->zips_cap ? 2 * b->zips_cap : 1024;
		struct tarindex_zip *q = realloc(b->zips, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		b->zips = q;
		b->zips_cap = cap;
	}
	b->zips[b->nzips++] = (struct tarindex_zip){
		.off = e->data.off, .csize = e->data.csize, .src = srcno,
		.crc32 = e->data.crc32, .method = e->data.method,
		.flags = e->data.flags,
	};
	return 0;
}

/* The members of one zip no read can give, said in one warning at the
 * end of its walk: how many, why, and the first few names. */
#define UNREADABLE_NAMED 5
struct unreadable {
	uint64_t n;
	char why[160];          /* the first one's reason */
	char names[512];
};

static void unreadable_add(struct unreadable *u, const struct zip_entry *e)
{
	size_t len = strlen(u->names);
	char why[160];

	if (!zipread_unreadable(&e->data, why, sizeof(why)))
		return;
	if (u->n++ == 0)
		snprintf(u->why, sizeof(u->why), "%s", why);
	if (u->n <= UNREADABLE_NAMED && len + 8 < sizeof(u->names))
		snprintf(u->names + len, sizeof(u->names) - len, "%s'%.100s'",
			 len ? ", " : "", e->path);
}

static void unreadable_say(const struct unreadable *u, const char *what)
{
	if (u->n == 1)
		sfs_warn("%s: member %s cannot be read: %s; it is listed, and its "
			 "reads give EIO", what, u->names, u->why);
	else if (u->n > 1)
		sfs_warn("%s: %llu members cannot be read (the first: %s); they are "
			 "listed, and their reads give EIO: %s%s", what,
			 (unsigned long long)u->n, u->why, u->names,
			 u->n > UNREADABLE_NAMED ? ", ..." : "");
}

struct zwalkctx {
	struct walkctx *c;
	struct unreadable u;
};

/* zip_walk's callback: one member, as a tar member. */
static int zip_member(void *arg, const struct zip_entry *e)
{
	struct zwalkctx *z = arg;
	struct walkctx *c = z->c;
	struct tar_member m = {
		.path = e->path, .link = e->link, .type = e->type, .mode = e->mode,
		.mtime = e->mtime, .size = e->data.usize, .offset = e->data.off,
		.stored = e->data.usize, .header = e->header,
	};
	int rc;

	if (e->type == TAR_FILE) {
		/* every file member is listed, so that its CRC-32 is checked;
		 * one that cannot be read is listed too, so that its reads
		 * fail rather than show compressed bytes or ciphertext */
		rc = keep_member(c->b, c->srcno, e);
		if (rc < 0)
			return rc;
		unreadable_add(&z->u, e);
		/* only stored members may hold a nested tar */
		c->deflated = e->data.method != 0 || (e->data.flags & 1);
	}
	rc = c->b->add_member(c, &m);
	c->deflated = 0;
	return rc;
}

int tb_zip_walk(struct walkctx *c)
{
	struct zwalkctx z = { .c = c };
	int rc;

	c->zip = 1;
	rc = zip_walk(c->src, c->what, zip_member, &z);
	unreadable_say(&z.u, c->what);
	return rc;
}

static int zip_cmp(const void *pa, const void *pb)
{
	const struct tarindex_zip *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	return (a->off > b->off) - (a->off < b->off);
}

int tb_zip_write(struct builder *b, struct index_writer *w, uint32_t c)
{
	if (!b->nzips)
		return 0;
	qsort(b->zips, b->nzips, sizeof(*b->zips), zip_cmp);
	return index_writer_add(w, TAG(c, 'Z', 'P'), b->zips,
				b->nzips * sizeof(*b->zips));
}

/* ---- mount ----------------------------------------------------------- */

/*
 * Large member d as a derived source (zipread_member_open), named as a
 * nested compressed tar is, after the zip, the data's offset and the
 * member ("x.zip@1234:big.bin"): its access points are stored under that
 * name and the zip's stamp, so a remount finds them without a pass, and
 * the pass's messages name all three.
 */
static int member_open(const struct zip_data *d, struct source **out)
{
	char *name = tarindex_derived_name(d->path, d->off, d->name);
	int rc;

	if (!name)
		return -ENOMEM;
	rc = zipread_member_open(d, name, out);
	free(name);
	return rc;
}

int tarindex_zip_open(struct tarindex *t, const struct index_map *m, uint32_t c,
		      struct lru_pool *mem)
{
	uint64_t len = 0, k;

	t->zips = index_map_section(m, TAG(c, 'Z', 'P'), &len);
	if (!t->zips)
		return 0;
	if (len % sizeof(*t->zips)) {
		sfs_warn("tar index: zip section of %llu bytes: rebuilding",
			 (unsigned long long)len);
		return -EBADMSG;
	}
	t->nzips = len / sizeof(*t->zips);
	for (k = 0; k < t->nzips; k++) {
		if (t->zips[k].src >= t->nsrc ||
		    (k && zip_cmp(&t->zips[k - 1], &t->zips[k]) >= 0) ||
		    t->zips[k].off > t->src_sizes[t->zips[k].src] ||
		    t->zips[k].csize > t->src_sizes[t->zips[k].src] - t->zips[k].off) {
			sfs_warn("tar index: zip entry %llu out of order or past its "
				 "source: rebuilding", (unsigned long long)k);
			return -EBADMSG;
		}
	}
	/* keys: an entry's number + 1 */
	t->zr = t->nzips ? zipread_new(mem, t->nzips + 1, member_open) : NULL;
	return t->nzips && !t->zr ? -ENOMEM : 0;
}

void tarindex_zip_close(struct tarindex *t)
{
	zipread_free(t->zr);
	t->zr = NULL;
}

/* The zip entry of file node i, or NULL when its data is a plain range. */
const struct tarindex_zip *tarindex_zip_of(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *n = &t->nodes[i];
	struct tarindex_zip key = { .off = n->off, .src = tarindex_node_src(n) };

	if (!t->nzips || tarindex_node_type(n) != TARINDEX_FILE)
		return NULL;
	return bsearch(&key, t->zips, t->nzips, sizeof(*t->zips), zip_cmp);
}

/* Entry z of file node i as zipread reads it. */
static struct zip_data data_of(const struct tarindex *t, uint32_t i,
			       const struct tarindex_zip *z)
{
	return (struct zip_data){
		.src = t->srcs[z->src], .path = source_name(t->srcs[z->src]),
		.name = tarindex_name(t, i), .off = z->off, .csize = z->csize,
		.usize = tarindex_node_size(&t->nodes[i]), .crc32 = z->crc32,
		.method = z->method, .flags = z->flags,
	};
}

int tarindex_in_place(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_zip *z;

	if (tarindex_node_type(&t->nodes[i]) != TARINDEX_FILE ||
	    tarindex_node_sparse(&t->nodes[i]))
		return 0;
	if (!(z = tarindex_zip_of(t, i)))
		return 1;
	return zipread_in_place(t->zr, (uint64_t)(z - t->zips) + 1);
}

int tarindex_zipped(const struct tarindex *t, uint32_t i)
{
	return tarindex_zip_of(t, i) != NULL;
}

ssize_t tarindex_zip_pread(const struct tarindex *t, uint32_t i,
			   const struct tarindex_zip *z, void *buf, size_t size,
			   uint64_t off)
{
	struct zip_data d = data_of(t, i, z);

	/* the entry's number names the member in the cache */
	return zipread_pread(t->zr, (uint64_t)(z - t->zips) + 1, &d, buf, size, off);
}
