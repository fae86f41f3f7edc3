/*
 * tarindex_build.c - builds the compact tar index described in tarindex.h
 * from the sources' tar headers and writes its sections, in bounded
 * memory: whatever the member count, the members are never all held at
 * once, but go through external sorts (spill.h) whose runs are scratch
 * files next to the index.
 *
 * Building (single-threaded, never used while mounted):
 *   1. walk every source with tar_walk (a zip: tarindex_zip.c; cpio, ar,
 *      ISO 9660: formats/arcwalk.h, members in place), expanding nested tars (compressed
 *      ones through derived sources: tarindex_znest.c), adding one
 *      entry record per member (its full path, its link) to a sort by
 *      path, component by component (so a directory's descendants follow
 *      it: a depth-first preorder with the children of each directory in
 *      name order), then by archive order.  Kept aside, in memory: the
 *      nested tars' directories, the hard links and the sparse maps (few
 *      next to the members);
 *   2. one pass over the sorted entries finds the nested tars whose
 *      directory another entry also uses; when some do, a second pass
 *      renames their members back under "P.tar" into a new sort
 *      (rename_nested);
 *   3. when the archive has hard links, one pass gathers the entries of
 *      the paths links name (and the links), which are resolved in memory
 *      in archive order, each to the last entry of its target path before
 *      it (tarindex_links.c);
 *   4. the last pass keeps the last entry of equal paths (tar -x) and,
 *      with a stack of open directories, emits the tree's items in
 *      preorder, creating implicit parents (tarindex_tree.c), writing the
 *      names as it goes and sorting the items by depth: their
 *      breadth-first order, in which the children of every directory are
 *      contiguous and the directories' child ranges tile [1, nnodes);
 *   5. the nodes are written in that order, then the directories, sparse
 *      maps, hard link groups and the header.
 *
 * A compressed source's first walk reads its bytes before its checks
 * have passed (source_extent): when they turn out damaged the build
 * starts over (tarindex_build), and the walk, getting EIO at the damage,
 * keeps the members before it (walk_source).
 *
 * Memory: TARINDEX_BUILD_MEM for the sorts (about 1.6 times that at most
 * while one is read as the next fills), plus what is kept aside.
 *
 * Not for: lookups and reads in a mapped index (tarindex.c), layout
 * decisions (names of the mount's top level, inodes).
 */
#include "index/tarindex/tarindex.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/source.h"
#include "io/codecs/zsource.h"
#include "index/progress.h"
#include "index/spill.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"
#include "formats/arcwalk.h"
#include "formats/tar.h"
#include "formats/zipwalk.h"

static int tarbuild_walk_cb(void *arg, const struct tar_member *m);

/* Keeps a copy of member m's sparse map; *id is its number. */
static int add_sparse(struct builder *b, const struct tar_member *m, uint32_t *id)
{
	uint64_t need = b->nchunks + m->nchunks;
	int rc;

	if (need > b->chunks_cap) {
		uint64_t c = b->chunks_cap ? b->chunks_cap : 1024;
		void *q;

		while (c < need)
			c *= 2;
		q = realloc(b->chunks, c * sizeof(*b->chunks));
		if (!q)
			return -ENOMEM;
		b->chunks = q;
		b->chunks_cap = c;
	}
	if (!b->nsparse)
		b->nsparse = 1;         /* 0 stands for "not sparse" */
	rc = tarbuild_grow((void **)&b->sparse, &b->sparse_cap, b->nsparse, sizeof(*b->sparse));
	if (rc < 0)
		return rc;
	memcpy(b->chunks + b->nchunks, m->chunks, m->nchunks * sizeof(*m->chunks));
	b->sparse[b->nsparse] = (struct sparse_map){ b->nchunks, m->nchunks };
	b->nchunks = need;
	*id = b->nsparse++;
	return 0;
}

/* Keeps hard link r (path and target) aside for tarindex_links.c. */
static int keep_link(struct builder *b, const struct entry_rec *r)
{
	struct hlink *l = tarbuild_slot((void **)&b->links, &b->links_cap, b->nlinks,
				  sizeof(*l));
	int rc = l ? tarbuild_entry_strings(&b->side, r, &l->path, &l->link) : -ENOMEM;

	if (rc == 0) {
		l->seq = r->seq;
		b->nlinks++;
	}
	return rc;
}

static int add_ent(struct walkctx *c, const struct tar_member *m,
		   const char *path, uint8_t type, uint64_t *path_at)
{
	struct builder *b = c->b;
	struct entry_rec *r = b->rec;
	char link[2 * TAR_PATH_MAX + 2];
	const char *lk = "";
	size_t plen, len;
	int rc;

	if (b->nents + 1 >= TARINDEX_MAX_NODES / 2) {
		sfs_err("%s: more than %u members: refusing to index (tar bomb?)",
			c->what, TARINDEX_MAX_NODES / 2);
		return -E2BIG;
	}
	memset(r, 0, offsetof(struct entry_rec, s));
	if (m->link[0] && type != TAR_DIR) {
		lk = m->link;
		if (type == TAR_HARDLINK && c->prefix[0]) {
			snprintf(link, sizeof(link), "%s/%s", c->prefix, m->link);
			lk = link;
		}
	}
	plen = (c->prefix[0] ? strlen(c->prefix) + 1 : 0) + strlen(path);
	snprintf(b->path, sizeof(b->path), "%s%s%s", c->prefix,
		 c->prefix[0] ? "/" : "", path);
	len = tarbuild_entry_set(r, b->path, plen, lk, strlen(lk));
	r->off = m->offset;
	r->size = m->size;
	r->mtime = m->mtime;
	r->seq = b->nents;
	r->src = c->srcno;
	r->type = type;
	r->nested = path_at != NULL;
	if (m->sparse && type == TAR_FILE && (rc = add_sparse(b, m, &r->sparse)) < 0)
		return rc;
	if (type == TAR_HARDLINK && (rc = keep_link(b, r)) < 0)
		return rc;
	if (path_at && (rc = tarbuild_arena_put(&b->side, NULL, r->s, plen, path_at)) < 0)
		return rc;
	rc = spill_add(b->ents, r, len);
	if (rc < 0)
		return rc;
	b->nents++;
	return 0;
}


/* Length of the member's path in the tree: the prefix, '/', its path. */
static size_t tree_path_len(const struct walkctx *c, const char *path)
{
	return (c->prefix[0] ? strlen(c->prefix) + 1 : 0) + strlen(path);
}

/*
 * tar_walk bounds a member's own path by TAR_PATH_MAX, but the prefix (the
 * source's directory and the nested tars around it) comes on top.  A path
 * in the tree must fit TAR_PATH_MAX too: a nested tar's prefix is copied
 * into a buffer of that size, and the tree pass's directory stack holds
 * the TAR_PATH_MAX / 2 directories such a path can have.  1 if it fits,
 * else 0 (warned: the member is skipped).
 */
static int path_fits(const struct walkctx *c, const struct tar_member *m)
{
	size_t len = tree_path_len(c, m->path);

	if (len <= TAR_PATH_MAX)
		return 1;
	sfs_warn("%s: member '%.100s%s' in header at offset %llu would be a "
		 "path of %zu bytes in the tree, over %d: skipped", c->what,
		 m->path, strlen(m->path) > 100 ? "..." : "",
		 (unsigned long long)m->header, len, TAR_PATH_MAX);
	return 0;
}

/*
 * A member named "*.tar" that starts with a valid tar header becomes a
 * directory of its members (name minus ".tar").  1 if expanded, 0 if it
 * is to be kept as a plain file, <0 on error.
 */
int tarindex_member_is_tar(struct source *src, const struct tar_member *m)
{
	unsigned char hdr[TAR_BLOCK];
	size_t len = strlen(m->path);
	const char *base = strrchr(m->path, '/');

	base = base ? base + 1 : m->path;
	return !m->sparse && m->size >= TAR_BLOCK && len >= 5 &&
	       !strcmp(m->path + len - 4, ".tar") &&
	       strlen(base) >= 5 &&
	       source_pread(src, hdr, sizeof(hdr), m->offset) == sizeof(hdr) &&
	       tar_header_ok(hdr);
}

/* Keeps the nested tar's directory being added aside; its index in *at. */
static int keep_nest(struct walkctx *c, uint32_t *at)
{
	struct builder *b = c->b;
	int rc = tarbuild_grow((void **)&b->nests, &b->nests_cap, b->nnests, sizeof(*b->nests));

	if (rc < 0)
		return rc;
	memset(&b->nests[b->nnests], 0, sizeof(*b->nests));
	b->nests[b->nnests].seq = b->nents;
	b->nests[b->nnests].up = c->up;
	b->nests[b->nnests].src = c->srcno;
	*at = b->nnests++;
	return 0;
}

static int replay_walk(struct walkctx *c);

/* Whether the walk expands member m as a nested tar (tarbuild_walk_cb's checks
 * first: a member they skip is never expanded). */
static int expands(const struct walkctx *c, const struct tar_member *m)
{
	return m->type == TAR_FILE && m->size <= TARINDEX_MAX_SIZE &&
	       c->depth < c->b->recursive && !c->deflated &&
	       tree_path_len(c, m->path) <= TAR_PATH_MAX &&
	       tarindex_member_is_tar(c->src, m) == 1;
}

/*
 * Whether member m is a compressed tar the walk tries to expand (named
 * "*.tar.gz" etc., depth permitting; tarbuild_znested looks at its bytes): the
 * suffix, or NULL.
 */
static const char *zexpands(const struct walkctx *c, const struct tar_member *m)
{
	const char *base = strrchr(m->path, '/');
	const char *sfx = tar_archive_suffix(base ? base + 1 : m->path);

	return m->type == TAR_FILE && !m->sparse && m->size <= TARINDEX_MAX_SIZE &&
	       c->depth < c->b->recursive && !c->deflated &&
	       tree_path_len(c, m->path) <= TAR_PATH_MAX &&
	       tar_suffix_compressed(sfx) ? sfx : NULL;
}

static int tarbuild_nest_walk(struct walkctx *c, const struct tar_member *m,
			const char *sfx, struct source *in, uint32_t inno)
{
	size_t len = strlen(m->path) - strlen(sfx);
	char dir[TAR_PATH_MAX + 1], prefix[TAR_PATH_MAX + 1], what[512];
	struct walkctx sub = *c;
	struct nest *n;
	uint64_t path;
	uint32_t at;
	int rc;

	/* tarbuild_walk_cb has skipped members whose path in the tree would not fit
	 * TAR_PATH_MAX (path_fits), so `prefix` below is never cut */
	memcpy(dir, m->path, len);
	dir[len] = '\0';
	rc = keep_nest(c, &at);
	if (rc == 0)
		rc = add_ent(c, m, dir, TAR_DIR, &path);
	if (rc < 0)
		return rc;
	n = &c->b->nests[at];
	n->path = path;
	n->sfx = sfx;
	n->len = (uint32_t)strlen(c->b->side.p + path);
	/* the nested members' prefix: ours + the directory (copied, as the
	 * side arena may move while the nested walk adds links) */
	snprintf(prefix, sizeof(prefix), "%s", c->b->side.p + path);
	snprintf(what, sizeof(what), "%s:%s", c->what, m->path);
	sub.depth++;
	sub.what = what;
	sub.prefix = prefix;
	sub.up = at;
	if (in) {
		sub.src = in;
		sub.srcno = inno;
		sub.prog_at = c->derived ? c->prog_at : m->offset;
		sub.derived = 1;
		rc = tar_walk(in, 0, source_stamp(in)->size, what, tarbuild_walk_cb, &sub);
		/* a damaged stream: its reads give EIO (said by zsource) */
		if (rc == -EIO)
			rc = -EBADMSG;
	} else {
		rc = c->b->resuming ? replay_walk(&sub) :
				      tar_walk(c->src, m->offset, m->size, what, tarbuild_walk_cb, &sub);
	}
	c->b->nests[at].end = c->b->nents;
	if (rc == -EBADMSG)
		sfs_warn("%s: keeping the members before the damage", what);
	if (rc == -EBADMSG && source_refetches(sub.src))
		c->b->cut = 1;
	/* damaged or empty: the directory stays, with what could be read */
	return rc == -EBADMSG || rc == -EINVAL || rc == 0 ? 1 : rc;
}

/* One member, as the walk reports it or the checkpoint replays it;
 * nested: to be expanded as a nested tar; zsfx: a compressed one's
 * suffix (zexpands), or NULL. */
static int take_member(struct walkctx *c, const struct tar_member *m, int nested,
		       const char *zsfx)
{
	struct builder *b = c->b;
	int rc;

	progress_update(&b->prog, b->prog.files + 1,
			b->bytes_before + (c->derived ? c->prog_at : m->offset));
	if (!path_fits(c, m))
		return 0;
	switch (m->type) {
	case TAR_FILE:
		if (m->size > TARINDEX_MAX_SIZE) {
			sfs_warn("%s: member '%s' of %llu bytes is too large: skipped",
				 c->what, m->path, (unsigned long long)m->size);
			return 0;
		}
		if (nested && c->depth < b->recursive) {
			rc = tarbuild_nest_walk(c, m, ".tar", NULL, 0);
			return rc < 0 ? rc : 0;
		}
		if (zsfx && (rc = tarbuild_znested(c, m, zsfx)) != 0)
			return rc < 0 ? rc : 0;
		break;
	case TAR_SYMLINK:
		if (!tarbuild_symlink_inside(c->prefix, m->path, m->link)) {
			sfs_warn("%s: symlink '%s' -> '%s' leaves the mount: skipped",
				 c->what, m->path, m->link);
			return 0;
		}
		break;
	default:
		break;
	}
	return add_ent(c, m, m->path, (uint8_t)m->type, NULL);
}

/*
 * tar_walk's callback: a top-level member is a boundary the build can
 * resume at (everything before it recorded; its first extended header,
 * unless a pax global header shapes it: then the last boundary before
 * stays the place to resume); each member is recorded in
 * the checkpoint, with whether it is expanded, before it is taken (and
 * before the members of a nested tar, which the recursion records).
 * A build that meets a compressed tar to expand keeps no checkpoint from
 * there on (dropped, as for a zip): a replay would not bring back its
 * derived source, and the stream's own pass is what is worth saving
 * (its access points are, by zsource).
 */
static int tarbuild_walk_cb(void *arg, const struct tar_member *m)
{
	struct walkctx *c = arg;
	struct ckpt *ck = c->b->ck;
	struct ckpt_member cm = { *m, c->srcno, c->depth, expands(c, m) };
	const char *zsfx = cm.nested ? NULL : zexpands(c, m);
	int rc = 0;

	if (ck && zsfx) {
		ckpt_close(ck, 1);
		c->b->ck = ck = NULL;
	}
	if (ck && c->depth == 0 && m->resume != UINT64_MAX)
		rc = ckpt_boundary(ck, c->srcno, m->resume, 0);
	if (ck && rc == 0)
		rc = ckpt_add(ck, &cm);
	return rc ? rc : take_member(c, m, cm.nested, zsfx);
}

/*
 * Replays the checkpoint's members of c's walk (its source, its depth) in
 * their order, through take_member, as the walk reported them.  0 or
 * -errno.
 */
static int replay_walk(struct walkctx *c)
{
	struct ckpt_member *cm;
	uint32_t src, depth;
	int rc;

	while ((rc = ckpt_peek(c->b->ck, &src, &depth)) == 1 &&
	       src == c->srcno && depth == c->depth) {
		if ((rc = ckpt_next(c->b->ck, &cm)) != 1)
			break;
		rc = take_member(c, &cm->m, cm->nested, NULL);
		free(cm);
		if (rc)
			return rc;
	}
	return rc < 0 ? rc : 0;
}

/*
 * Walks source srcno (its size) into the builder: from the checkpoint up to
 * where it stopped, then from the source.  tar_walk's result.
 */
static int walk_from(struct builder *b, struct walkctx *c, uint64_t size)
{
	const struct ckpt_resume *r = &b->resume;
	uint64_t from = 0;
	int rc;

	if (b->resuming && c->srcno <= r->src) {
		rc = replay_walk(c);
		if (rc || c->srcno < r->src)
			return rc;
		b->resuming = 0;	/* the rest is the source's */
		if (r->off > size) {
			sfs_err("%s: the checkpoint resumes at byte %llu, past its end",
				c->what, (unsigned long long)r->off);
			return -ESTALE;
		}
		from = r->off;
		sfs_info("%s: resuming the index build at byte %llu of %llu, after "
			 "the %llu members the checkpoint holds", c->what,
			 (unsigned long long)from, (unsigned long long)size,
			 (unsigned long long)r->members);
	}
	rc = tar_walk(c->src, from, size == TAR_TO_END ? TAR_TO_END : size - from,
		      c->what, tarbuild_walk_cb, c);
	if (rc == -EINVAL && from) {
		sfs_err("%s: no tar header at byte %llu, where the checkpoint "
			"resumes", c->what, (unsigned long long)from);
		return -ESTALE;
	}
	return rc;
}

/*
 * Walks a zip source into the builder (tarindex_zip.c).  A build that
 * meets a zip keeps no checkpoint: a replay would not bring back the
 * deflated members' section (tarbuild_zip_write), and a zip's walk is one read
 * of its central directory, with nothing to resume inside it.
 */
static int walk_zip(struct builder *b, struct walkctx *c)
{
	if (b->resuming) {
		sfs_err("%s: a checkpoint resumes here, but this is a zip: "
			"dropped, the next build starts over", c->what);
		return -ESTALE;
	}
	if (b->ck) {
		ckpt_close(b->ck, 1);
		b->ck = NULL;
	}
	return tarbuild_zip_walk(c);
}

/*
 * Walks a cpio or ar archive or an ISO 9660 image (formats/arcwalk.h):
 * its members in place, as a tar's.  No checkpoint, as for a zip: its
 * walk has no point to resume from that libarchive would take.
 */
static int walk_arc(struct builder *b, struct walkctx *c)
{
	if (b->resuming) {
		sfs_err("%s: a checkpoint resumes here, but this is not a tar: "
			"dropped, the next build starts over", c->what);
		return -ESTALE;
	}
	if (b->ck) {
		ckpt_close(b->ck, 1);
		b->ck = NULL;
	}
	c->arc = 1;
	return arc_walk(c->src, c->what, tarbuild_walk_cb, c);
}

/* The refusal of a source that is not a tar: named after the compression
 * it is in, when it is one samplefs does not read. */
static void not_a_tar(struct source *src, const char *path)
{
	if (source_is_decompressed(src) || !zsource_refuse_other(src, path))
		sfs_err("%s: not a tar archive (no valid header at offset 0)", path);
}

/* A compressed source damaged from uncompressed byte `from` (of size):
 * what the mount keeps, and what reads. */
static void say_damage(const char *path, uint32_t nents, uint64_t from,
		       uint64_t size)
{
	sfs_warn("%s: damaged %llu MiB into its uncompressed bytes (%llu%% of "
		 "them): the tree has the %u members before the damage, those "
		 "after it are lost; a file whose bytes reach into the damage "
		 "gives EIO there", path, (unsigned long long)(from >> 20),
		 (unsigned long long)(size ? from * 100 / size : 0), nents);
}

/* Walks one source tar (or zip) into the builder. */
static int walk_source(struct builder *b, const struct tarindex_source *s,
		       uint32_t srcno, uint64_t *size, int64_t *mtime)
{
	struct walkctx c = { .b = b, .src = s->src, .srcno = srcno, .what = s->path,
			     .up = NONE };
	char dir[TAR_PATH_MAX + 1];
	struct source_stamp id;
	uint64_t from;
	uint32_t first = b->nents;
	int rc = 0, grow, grown;

	if (s->dir && strlen(s->dir) >= sizeof(dir)) {
		sfs_err("%s: directory name for it is over %d bytes", s->path,
			TAR_PATH_MAX);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", s->dir ? s->dir : "");
	if (dir[0] && tar_normalise(dir) < 0) {
		sfs_err("%s: bad directory name '%s' for it", s->path, s->dir);
		return -EINVAL;
	}
	c.prefix = dir;
	/* a source whose size is found as it is read (a compressed one at
	 * its first mount: source_extent) is walked as it grows */
	grow = source_extent(s->src, 0, size) == 0;
	source_identity(s->src, &id);
	*mtime = source_stamp_sec(&id);
	/* we read one header per member and skip the data: a local file's
	 * readahead would read the data we skip; a remote source reads
	 * through the gaps its link delivers within a round trip rather than
	 * paying one per header (source.h) */
	source_advise(s->src, 0, 0, SOURCE_ADV_WALK);
	rc = zip_sniff(s->src);
	if (rc == 1)
		rc = walk_zip(b, &c);
	else if (rc == 0 && (rc = arc_sniff(s->src)) == 1)
		rc = walk_arc(b, &c);
	else if (rc == 0)
		rc = walk_from(b, &c, grow ? TAR_TO_END : *size);
	if (grow && (rc == 0 || rc == -EBADMSG || rc == -EINVAL) &&
	    (grown = source_extent(s->src, UINT64_MAX, size)) < 0)
		rc = grown;	/* said: the source failed, or damage was read */
	if (rc == -EIO && zsource_damage(s->src, &from) && b->nents > first) {
		/* the pass has ended: its size is known, even when the grown
		 * extent above failed (a pass that ended damaged before the
		 * walk streamed it leaves *size at what was known then) */
		*size = source_stamp(s->src)->size;
		say_damage(s->path, b->nents - first, from, *size);
		rc = 0;
	} else if (rc == -EIO && zsource_damage(s->src, &from)) {
		sfs_err("%s: damaged %llu MiB into its uncompressed bytes, before "
			"its first member: nothing of it can be read", s->path,
			(unsigned long long)(from >> 20));
	} else if (rc == -EINVAL && !c.zip && !c.arc)
		not_a_tar(s->src, s->path);
	else if (rc == -EBADMSG)
		sfs_warn("%s: keeping the %u members before the damage", s->path,
			 b->nents - first);
	if (rc == -EBADMSG && source_refetches(s->src))
		b->cut = 1;	/* the network's damage, maybe: not saved */
	if (rc == -EBADMSG)
		rc = 0;
	source_advise(s->src, 0, 0, SOURCE_ADV_NORMAL);
	b->bytes_before += *size;
	if (rc == 0 && b->ck && !b->resuming)	/* its end: resume after it */
		rc = ckpt_boundary(b->ck, srcno + 1, 0, 1);
	return rc;
}

/* The sort budget: $SAMPLEFS_BUILD_MEM (bytes), else the default. */
static size_t build_budget(void)
{
	const char *e = getenv("SAMPLEFS_BUILD_MEM");
	unsigned long long v;
	char *end;

	if (e && *e) {
		v = strtoull(e, &end, 10);
		if (!*end && v)
			return (size_t)v;
	}
	return TARINDEX_BUILD_MEM;
}

/*
 * The build's checkpoint (checkpoint.h): opened for the sources' stamps
 * and options, resumed from when one fits.  A checkpoint that cannot be
 * written leaves the build without one (said), never fails it.
 */
static void ckpt_start(struct builder *b, struct index_writer *w, uint32_t part)
{
	struct index_fp fp;
	int rc;

	index_fp_init(&fp, "tarindex-checkpoint");
	if (tarindex_fp_add(&fp, b->src, b->nsrc, b->recursive) < 0)
		return;
	rc = ckpt_open(&b->ck, index_writer_path(w), part, fp.h, &b->resume);
	b->resuming = rc == 1;
}

/* Whether a build that ended with rc leaves its checkpoint: when it
 * failed for what the next mount may not meet (the network, a signal,
 * memory), not for what the sources are (not a tar, a tar bomb), nor for
 * a full index_dir (ENOSPC, EDQUOT): there the checkpoint would hold the
 * very space the user must free, and a refused mount leaves index_dir as
 * it found it (test_faults.sh). */
static int ckpt_worth_keeping(int rc)
{
	return rc == -EIO || rc == -ETIMEDOUT || rc == -EINTR || rc == -ENOMEM ||
	       rc == -EAGAIN;
}

/* After the walks: every member the checkpoint replays was taken. */
static int ckpt_used_up(struct builder *b)
{
	uint32_t src, depth;

	if (!b->ck || ckpt_peek(b->ck, &src, &depth) == 0)
		return 0;
	sfs_err("%s: the checkpoint's members do not fit the sources' walk: "
		"dropped, the next build starts over", b->scratch);
	return -ESTALE;
}

static void builder_free(struct builder *b)
{
	ckpt_close(b->ck, 0);
	spill_close(b->ents);
	free(b->side.p);
	free(b->nests);
	free(b->links);
	free(b->chunks);
	free(b->sparse);
	free(b->rec);
	free(b->zips);
	free(b->scratch);
	tarbuild_derived_free(b);
	tarbuild_links_free(b);
}

/* The sizes of the sources, then of the derived ones (freed on failure). */
static uint64_t *grow_sizes(const struct builder *b, uint64_t *sizes)
{
	uint64_t *n = realloc(sizes, ((size_t)b->nsrc + b->nder + 1) * sizeof(*n));
	uint32_t k;

	if (!n) {
		free(sizes);
		return NULL;
	}
	for (k = 0; k < b->nder; k++)
		n[b->nsrc + k] = b->der[k].usize;
	return n;
}

/* One build (tarindex_build's): -ERESTART when a source turned out
 * damaged where its walk had read (zsource.h: start again). */
static int build_once(struct index_writer *w, uint32_t tag_prefix_char,
		      const struct tarindex_source *src, size_t nsrc,
		      const struct tarindex_build_opts *bo)
{
	struct builder b = { .recursive = bo->recursive, .checksums = bo->checksums,
			     .quiet = bo->quiet,
			     .src = src, .nsrc = (uint32_t)nsrc,
			     .add_member = tarbuild_walk_cb, .nest_walk = tarbuild_nest_walk };
	uint64_t *sizes, total = 0, at;
	int64_t mtime, root_mtime = 0;
	size_t i;
	int rc = -ENOMEM;

	if (nsrc > TARINDEX_MAX_SOURCES) {
		sfs_err("%zu tar files: at most %u are supported", nsrc,
			TARINDEX_MAX_SOURCES);
		return -E2BIG;
	}
	if (b.recursive > TARINDEX_MAX_NEST) {
		sfs_warn("recursive=%u: expanding nested tars %u levels at most",
			 b.recursive, TARINDEX_MAX_NEST);
		b.recursive = TARINDEX_MAX_NEST;
	}
	b.budget = build_budget();
	sizes = calloc(nsrc + 1, sizeof(*sizes));
	b.rec = malloc(SPILL_MAX_REC);
	b.scratch = strdup(index_writer_path(w));
	if (!sizes || !b.rec || !b.scratch)
		goto out;
	rc = tarbuild_ents_open(&b, &b.ents);
	if (rc == 0)    /* offset 0 of the side arena: "" */
		rc = tarbuild_arena_put(&b.side, NULL, "", 0, &at);
	if (rc < 0)
		goto out;
	for (i = 0; i < nsrc; i++) {	/* what is known: no wait */
		(void)source_extent(src[i].src, 0, &at);
		total += at;
	}
	ckpt_start(&b, w, tag_prefix_char);
	progress_start(&b.prog, bo->what ? bo->what : "indexing tar", 0, total,
		       bo->quiet);
	for (i = 0; rc == 0 && i < nsrc; i++) {
		mtime = 0;
		rc = walk_source(&b, &src[i], (uint32_t)i, &sizes[i], &mtime);
		if (mtime > root_mtime)
			root_mtime = mtime;
	}
	progress_finish(&b.prog);
	if (rc == 0)
		rc = ckpt_used_up(&b);
	if (rc == 0 && b.nder && !(sizes = grow_sizes(&b, sizes)))
		rc = -ENOMEM;
	if (rc == 0)
		rc = tarbuild_rename_nested(&b);
	if (rc == 0)
		rc = tarbuild_resolve_links(&b);
	if (rc == 0 && b.nzips)	/* the tree asks tarindex_sums_cover */
		qsort(b.zips, b.nzips, sizeof(*b.zips), tarindex_zip_cmp);
	if (rc == 0)
		rc = tarbuild_tree_write(&b, w, tag_prefix_char, root_mtime, sizes);
	if (rc == 0)
		rc = tarbuild_zip_write(&b, w, tag_prefix_char);
	if (rc == 0)
		rc = tarbuild_derived_write(&b, w, tag_prefix_char);
	if (rc == 0 && b.cut)
		index_writer_set_unsaved(w, "a walk of a tar read over the network "
					 "stopped at damage, which may have been "
					 "the network's");
	/* a build that succeeded keeps it until its index file is in place */
	if (rc == 0 && b.ck && index_writer_drop_at_commit(w, ckpt_path(b.ck)) < 0)
		rc = -ENOMEM;
	ckpt_close(b.ck, rc != 0 && !ckpt_worth_keeping(rc));
	b.ck = NULL;
out:
	builder_free(&b);
	free(sizes);
	return rc;
}

/*
 * A compressed source's first walk reads its bytes as its pass makes them,
 * before the stream's checks have passed; when they turn out damaged
 * (-ERESTART) every member taken may be garbage, so the build starts over:
 * the passes that have ended are not run again, and the walk now gets EIO
 * at the damage and keeps the members before it (walk_source).  Each
 * restart is a source whose pass ended: at most nsrc of them.
 */
int tarindex_build(struct index_writer *w, uint32_t tag_prefix_char,
		   const struct tarindex_source *src, size_t nsrc,
		   const struct tarindex_build_opts *bo)
{
	size_t tries = 0;
	int rc;

	while ((rc = build_once(w, tag_prefix_char, src, nsrc, bo)) == -ERESTART &&
	       tries++ < nsrc)
		;
	return rc == -ERESTART ? -EIO : rc;
}

int tarindex_fp_add(struct index_fp *fp, const struct tarindex_source *src,
		    size_t nsrc, uint32_t recursive)
{
	struct source_stamp id;
	size_t i;

	index_fp_add_str(fp, "tarindex");
	index_fp_add_u64(fp, TARINDEX_VERSION);
	index_fp_add_u64(fp, recursive);
	index_fp_add_u64(fp, nsrc);
	for (i = 0; i < nsrc; i++) {
		if (!src[i].src)
			return -EBADF;
		/* the identity, not the stamp: a compressed source's size is
		 * not known until it has been read through (source.h) */
		source_identity(src[i].src, &id);
		index_fp_add_source(fp, src[i].path, &id);
		index_fp_add_str(fp, src[i].dir ? src[i].dir : "");
	}
	return 0;
}
