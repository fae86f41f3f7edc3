/*
 * tarindex_zip.c - zip sources in the tar index build (see tarindex.h): the
 * walk that turns a zip's members into the build's entries and the
 * section of members it writes (read at mount by tarindex.c).
 *
 * A member goes through the walk's add_member hook as a tar member does, so names,
 * duplicates (the last wins), implicit directories, symlinks that leave
 * the mount and stored nested tars follow the tar rules.  A member's node
 * keeps the offset of its data; the section, sorted by (source, offset),
 * lists every file member with its method, compressed size and CRC-32,
 * so that every member's bytes are checked (zipread.h), stored ones too.
 * Members no read can give (encrypted, other methods) are named in one
 * warning per zip.  The section is absent for tars, so they pay one test
 * of a zero count per read.
 *
 * Threads: building is single-threaded.
 *
 * Not for: the zip format (formats/zipwalk.c, zipread.c), reads of zip
 * members (tarindex.c), zips inside tars.
 */
#include "index/tarindex/tarindex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "formats/zipread.h"
#include "formats/zipwalk.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"

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

int tarbuild_zip_walk(struct walkctx *c)
{
	struct zwalkctx z = { .c = c };
	int rc;

	c->zip = 1;
	rc = zip_walk(c->src, c->what, zip_member, &z);
	unreadable_say(&z.u, c->what);
	return rc;
}

int tarbuild_zip_write(struct builder *b, struct index_writer *w, uint32_t c)
{
	if (!b->nzips)
		return 0;
	/* sorted by tarindex_zip_cmp before the tree (tarindex_build.c) */
	return index_writer_add(w, TAG(c, 'Z', 'P'), b->zips,
				b->nzips * sizeof(*b->zips));
}
