/*
 * tarindex_build.c - builds the compact tar index described in tarindex.h
 * from the sources' tar headers and writes its sections.
 *
 * Building (single-threaded, heap arrays, never used while mounted):
 * Building (single-threaded, heap arrays, never used while mounted):
 *   1. walk every source with tar_walk, expanding nested tars, collecting
 *      one `struct ent` per member with its full path in one arena;
 *   2. sort the entries by path, comparing component by component (so a
 *      directory's descendants follow it: a depth-first preorder with the
 *      children of each directory in name order), then by archive order;
 *      a nested tar whose directory another entry also uses is renamed
 *      back to "P.tar" and the entries sorted again (rename_nested);
 *   3. resolve hard links in archive order, each to the last entry of its
 *      target path before it (binary search in that sorted array), then
 *      keep the last entry of equal paths (tar -x);
 *   4. one pass with a stack of open directories emits the tree items,
 *      creating implicit parents;
 *   5. a stable bucket sort by depth turns the preorder into breadth-first
 *      order, in which the children of every directory are contiguous and
 *      the directories' child ranges tile [1, nnodes) in node order.
 *
 * Not for: lookups and reads in a mapped index (tarindex.c), layout
 * decisions (names of the mount's top level, inodes).
 */
#include "index/tarindex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/source.h"
#include "index/progress.h"
#include "index/tarindex_int.h"
#include "formats/tar.h"

/* ---------------------------------------------------------------- build */

/* One collected member (or nested tar directory). */
struct ent {
	uint64_t path;      /* arena offset of the full path */
	uint64_t link;      /* arena offset of the link target (0: "") */
	uint64_t off, size;
	int64_t mtime;
	uint32_t seq, src;
	union {
		uint32_t sparse;    /* a file: 0, or its map in builder.sparse */
		/* a nested tar's directory: the entries from its walk are
		 * those of seq in [seq, nest_end); 0 for other directories */
		uint32_t nest_end;
	};
	uint8_t type;       /* enum tar_type */
	uint8_t dropped;
};

/* One node of the tree in preorder, before renumbering. */
struct item {
	uint64_t name;      /* arena offset of the name (not NUL-terminated) */
	uint64_t off, size; /* file data / symlink target arena offset+length */
	int64_t mtime;
	uint32_t name_len, parent, src, depth;
	uint32_t sparse;    /* as ent.sparse */
	uint8_t type;       /* enum tarindex_type */
};

/* A sparse member's map: n chunks from builder.chunks[first]. */
struct sparse_map {
	uint64_t first;
	uint32_t n;
};

struct builder {
	char *arena;
	uint64_t arena_len, arena_cap;
	struct ent *ents;
	uint32_t nents, ents_cap;
	struct item *items;
	uint32_t nitems, items_cap;
	struct tar_sparse_chunk *chunks;
	uint64_t nchunks, chunks_cap;
	struct sparse_map *sparse;      /* [0] unused: ent.sparse 0 is none */
	uint32_t nsparse, sparse_cap;
	uint32_t recursive;
	struct progress prog;
	uint64_t bytes_before;  /* sizes of the sources already walked */
	const struct tarindex_source *src;  /* for messages */
};

/* What one tar_walk is walking: a source, or a nested tar inside one. */
struct walkctx {
	struct builder *b;
	struct source *src;
	uint32_t srcno, depth;
	const char *prefix;     /* "" or "dir" for the members' paths */
	const char *what;
};

static int grow(void **p, uint32_t *cap, uint32_t n, size_t elt)
{
	uint32_t c = *cap ? *cap : 1024;
	void *q;

	if (n < *cap)
		return 0;
	while (c <= n)
		c *= 2;
	q = realloc(*p, (size_t)c * elt);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Appends a NUL-terminated string (two pieces joined by '/' if a is set). */
static int arena_put(struct builder *b, const char *a, const char *s,
		     size_t slen, uint64_t *out)
{
	size_t alen = a && *a ? strlen(a) + 1 : 0;
	uint64_t need = b->arena_len + alen + slen + 1;

	/* 8 spare bytes: pathcmp reads whole words */
	if (need + 8 > b->arena_cap) {
		uint64_t c = b->arena_cap ? b->arena_cap : 1 << 20;
		char *q;

		while (c < need + 8)
			c *= 2;
		q = realloc(b->arena, c);
		if (!q)
			return -ENOMEM;
		b->arena = q;
		b->arena_cap = c;
	}
	*out = b->arena_len;
	if (alen) {
		memcpy(b->arena + b->arena_len, a, alen - 1);
		b->arena[b->arena_len + alen - 1] = '/';
	}
	memcpy(b->arena + b->arena_len + alen, s, slen);
	b->arena[need - 1] = '\0';
	b->arena_len = need;
	return 0;
}

/*
 * Symlinks may point anywhere inside the mount, judged lexically from the
 * link's directory prefix/path (an absolute target always leaves).
 */
static int symlink_inside(const char *prefix, const char *path,
			  const char *target)
{
	char buf[3 * TAR_PATH_MAX + 3];
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;

	if (target[0] == '/' || strlen(prefix) + dlen + strlen(target) + 3 > sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%s/%.*s/%s", prefix, (int)dlen, path, target);
	return tar_normalise(buf) != -EINVAL;
}

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
	rc = grow((void **)&b->sparse, &b->sparse_cap, b->nsparse, sizeof(*b->sparse));
	if (rc < 0)
		return rc;
	memcpy(b->chunks + b->nchunks, m->chunks, m->nchunks * sizeof(*m->chunks));
	b->sparse[b->nsparse] = (struct sparse_map){ b->nchunks, m->nchunks };
	b->nchunks = need;
	*id = b->nsparse++;
	return 0;
}

static int add_ent(struct walkctx *c, const struct tar_member *m,
		   const char *path, uint8_t type)
{
	struct builder *b = c->b;
	struct ent *e;
	int rc;

	if (b->nents + 1 >= TARINDEX_MAX_NODES / 2) {
		sfs_err("%s: more than %u members: refusing to index (tar bomb?)",
			c->what, TARINDEX_MAX_NODES / 2);
		return -E2BIG;
	}
	rc = grow((void **)&b->ents, &b->ents_cap, b->nents, sizeof(*e));
	if (rc < 0)
		return rc;
	e = &b->ents[b->nents];
	memset(e, 0, sizeof(*e));
	rc = arena_put(b, c->prefix, path, strlen(path), &e->path);
	if (rc == 0 && m->link[0] && type != TAR_DIR)
		rc = arena_put(b, type == TAR_HARDLINK ? c->prefix : NULL, m->link,
			       strlen(m->link), &e->link);
	if (rc < 0)
		return rc;
	e->off = m->offset;
	e->size = m->size;
	e->mtime = m->mtime;
	e->seq = b->nents;
	e->src = c->srcno;
	e->type = type;
	if (m->sparse && type == TAR_FILE) {
		rc = add_sparse(b, m, &e->sparse);
		if (rc < 0)
			return rc;
	}
	b->nents++;
	return 0;
}

static int walk_cb(void *arg, const struct tar_member *m);

/* Length of the member's path in the tree: the prefix, '/', its path. */
static size_t tree_path_len(const struct walkctx *c, const char *path)
{
	return (c->prefix[0] ? strlen(c->prefix) + 1 : 0) + strlen(path);
}

/*
 * tar_walk bounds a member's own path by TAR_PATH_MAX, but the prefix (the
 * source's directory and the nested tars around it) comes on top.  A path
 * in the tree must fit TAR_PATH_MAX too: a nested tar's prefix is copied
 * into a buffer of that size, and tree_pass's directory stack holds the
 * TAR_PATH_MAX / 2 directories such a path can have.  1 if it fits, else
 * 0 (warned: the member is skipped).
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

static int try_nested(struct walkctx *c, const struct tar_member *m)
{
	size_t len = strlen(m->path);
	char dir[TAR_PATH_MAX + 1], prefix[TAR_PATH_MAX + 1], what[512];
	struct walkctx sub = *c;
	uint32_t at;
	int rc;

	/* walk_cb has skipped members whose path in the tree would not fit
	 * TAR_PATH_MAX (path_fits), so `prefix` below is never cut */
	if (c->depth >= c->b->recursive || !tarindex_member_is_tar(c->src, m))
		return 0;
	memcpy(dir, m->path, len - 4);
	dir[len - 4] = '\0';
	rc = add_ent(c, m, dir, TAR_DIR);
	if (rc < 0)
		return rc;
	at = c->b->nents - 1;
	/* the nested members' prefix: ours + the directory (copied, as the
	 * arena may move while the nested walk adds paths) */
	snprintf(prefix, sizeof(prefix), "%s", c->b->arena + c->b->ents[at].path);
	snprintf(what, sizeof(what), "%s:%s", c->what, m->path);
	sub.depth++;
	sub.what = what;
	sub.prefix = prefix;
	rc = tar_walk(c->src, m->offset, m->size, what, walk_cb, &sub);
	c->b->ents[at].nest_end = c->b->nents;
	if (rc == -EBADMSG)
		sfs_warn("%s: keeping the members before the damage", what);
	/* damaged or empty: the directory stays, with what could be read */
	return rc == -EBADMSG || rc == -EINVAL || rc == 0 ? 1 : rc;
}

static int walk_cb(void *arg, const struct tar_member *m)
{
	struct walkctx *c = arg;
	struct builder *b = c->b;
	int rc;

	progress_update(&b->prog, b->nents, b->bytes_before + m->offset);
	if (!path_fits(c, m))
		return 0;
	switch (m->type) {
	case TAR_FILE:
		if (m->size > TARINDEX_MAX_SIZE) {
			sfs_warn("%s: member '%s' of %llu bytes is too large: skipped",
				 c->what, m->path, (unsigned long long)m->size);
			return 0;
		}
		rc = try_nested(c, m);
		if (rc != 0)
			return rc < 0 ? rc : 0;
		break;
	case TAR_SYMLINK:
		if (!symlink_inside(c->prefix, m->path, m->link)) {
			sfs_warn("%s: symlink '%s' -> '%s' leaves the mount: skipped",
				 c->what, m->path, m->link);
			return 0;
		}
		break;
	default:
		break;
	}
	return add_ent(c, m, m->path, (uint8_t)m->type);
}

/*
 * Path order, component by component: "" < "/" < every other byte.  The
 * sort spends most of its time in long common prefixes ("n01440764/
 * n01440764_..."), so equal 8-byte words without a NUL are skipped first.
 */
static int pathcmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;
	unsigned cx, cy;
	uint64_t u, v;

	for (;;) {
		memcpy(&u, x, 8);
		memcpy(&v, y, 8);
		if (u != v || ((u - 0x0101010101010101ull) & ~u & 0x8080808080808080ull))
			break;
		x += 8;
		y += 8;
	}
	while (*x && *x == *y) {
		x++;
		y++;
	}
	cx = *x == '/' ? 1u : *x ? *x + 1u : 0u;
	cy = *y == '/' ? 1u : *y ? *y + 1u : 0u;
	return (int)cx - (int)cy;
}

static int ent_cmp(const void *pa, const void *pb, void *arg)
{
	const struct builder *b = arg;
	const struct ent *x = pa, *y = pb;
	int r = pathcmp(b->arena + x->path, b->arena + y->path);

	if (r)
		return r;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the entries by path, and equal paths in archive order. */
static void sort_ents(struct builder *b)
{
	if (b->nents)   /* an empty archive: ents is NULL */
		qsort_r(b->ents, b->nents, sizeof(*b->ents), ent_cmp, b);
}

/*
 * Hard links skip the links of their target path that failed before
 * them: skip[j] is j for a sorted entry not dropped, else the entry
 * before it of the same path (NONE at the first), followed with path
 * halving, so N failed links of one path cost N steps in all, not each.
 * A link is dropped only when resolved, in archive order, so the entries
 * before one being resolved are settled.
 */
static uint32_t alive_at_or_before(uint32_t *skip, uint32_t j)
{
	while (j != NONE && skip[j] != j) {
		if (skip[j] != NONE)
			skip[j] = skip[skip[j]];
		j = skip[j];
	}
	return j;
}

/*
 * The entry that path held just before archive position `seq`: the last
 * entry of that path that came earlier and was not dropped (a link that
 * failed left its path as it was), or NULL.
 */
static struct ent *ent_before(struct builder *b, uint32_t *skip,
			      const char *path, uint32_t seq)
{
	uint32_t lo = 0, hi = b->nents;

	while (lo < hi) {       /* the first entry at or after (path, seq) */
		uint32_t mid = lo + (hi - lo) / 2;
		const struct ent *e = &b->ents[mid];
		int r = pathcmp(b->arena + e->path, path);

		if (r < 0 || (r == 0 && e->seq < seq))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || strcmp(b->arena + b->ents[lo - 1].path, path))
		return NULL;
	lo = alive_at_or_before(skip, lo - 1);
	return lo == NONE ? NULL : &b->ents[lo];
}

static int seq_cmp(const void *pa, const void *pb, void *arg)
{
	const struct ent *e = arg;
	uint32_t x = e[*(const uint32_t *)pa].seq, y = e[*(const uint32_t *)pb].seq;

	return x < y ? -1 : x > y;
}

/* Whether sorted entry j is path p (plen bytes) or lies under it. */
static int at_or_under(const struct builder *b, uint32_t j, const char *p,
		       size_t plen)
{
	const char *q = b->arena + b->ents[j].path;

	return !strncmp(q, p, plen) && (q[plen] == '\0' || q[plen] == '/');
}

/*
 * What rename_nested needs to know of each sorted entry j: run[j], the
 * first sorted entry of its path; up[j], the sorted index of the nested
 * directory whose walk added it (the innermost), or NONE.  One pass in
 * archive order with a stack of the walks open, as in apply_renames.
 */
struct nesting {
	uint32_t *run, *up;
};

static int nesting_make(const struct builder *b, struct nesting *ns)
{
	struct { uint32_t end, at; } st[TARINDEX_MAX_NEST + 2];
	uint32_t *pos, i, d = 0;

	ns->run = malloc(((size_t)b->nents + 1) * sizeof(*ns->run));
	ns->up = malloc(((size_t)b->nents + 1) * sizeof(*ns->up));
	pos = malloc(((size_t)b->nents + 1) * sizeof(*pos));
	if (!ns->run || !ns->up || !pos) {
		free(pos);
		return -ENOMEM;
	}
	for (i = 0; i < b->nents; i++) {
		ns->run[i] = i && !strcmp(b->arena + b->ents[i - 1].path,
					  b->arena + b->ents[i].path) ? ns->run[i - 1] : i;
		pos[b->ents[i].seq] = i;        /* seqs are 0 .. nents - 1 */
	}
	for (i = 0; i < b->nents; i++) {        /* i: archive order */
		const struct ent *e = &b->ents[pos[i]];

		while (d && e->seq >= st[d - 1].end)
			d--;
		ns->up[pos[i]] = d ? st[d - 1].at : NONE;
		/* nesting is at most TARINDEX_MAX_NEST deep: the stack fits */
		if (e->type == TAR_DIR && e->nest_end && d < TARINDEX_MAX_NEST + 2) {
			st[d].end = e->nest_end;
			st[d].at = pos[i];
			d++;
		}
	}
	free(pos);
	return 0;
}

/*
 * Whether sorted entry j came from a nested tar expanded at the path
 * whose run starts at sorted entry r: it is one of those directories, or
 * the walk of one of them (of that exact path: several when the archive
 * holds the same tar twice, whose members merge) added it.  At most
 * TARINDEX_MAX_NEST + 1 steps.
 */
static int from_nested(const struct builder *b, const struct nesting *ns,
		       uint32_t j, uint32_t r)
{
	for (; j != NONE; j = ns->up[j])
		if (ns->run[j] == r && b->ents[j].type == TAR_DIR &&
		    b->ents[j].nest_end)
			return 1;
	return 0;
}

/*
 * The first sorted entry at or under the path of the run starting at r
 * (a nested directory's) that no nested tar of that path brought (a
 * file, directory or link of the same path, or something under it), or
 * NONE.  The scan passes only entries such a tar brought, and an entry
 * is brought by at most TARINDEX_MAX_NEST + 1 paths (those of the walks
 * around it), so all the runs' scans together pass each entry that often
 * at most, plus one clash each.
 */
static uint32_t nested_clash(const struct builder *b, const struct nesting *ns,
			     uint32_t r)
{
	const char *p = b->arena + b->ents[r].path;
	size_t plen = strlen(p);
	uint32_t j;

	for (j = r; j < b->nents && at_or_under(b, j, p, plen); j++)
		if (!from_nested(b, ns, j, r))
			return j;
	return NONE;
}

/*
 * Puts ".tar" back after each renamed nested directory's path in the
 * string at *s (arena offset): ins[0 .. n - 1] are the lengths of those
 * paths, increasing, each a prefix of *s.
 */
static int reinsert_tar(struct builder *b, uint64_t *s, const uint32_t *ins,
			uint32_t n)
{
	size_t len = strlen(b->arena + *s), need = len + 4 * (size_t)n;
	char *buf = malloc(need + 1), *w;
	uint32_t k, from = 0;
	int rc;

	if (!buf)
		return -ENOMEM;
	for (w = buf, k = 0; k < n; k++) {
		memcpy(w, b->arena + *s + from, ins[k] - from);
		w += ins[k] - from;
		memcpy(w, ".tar", 4);
		w += 4;
		from = ins[k];
	}
	memcpy(w, b->arena + *s + from, len - from);
	rc = arena_put(b, NULL, buf, need, s);
	free(buf);
	return rc;
}

/* Whether string s (arena offset) lies under every renamed path of ins. */
static int under_all(const struct builder *b, uint64_t s, const char *dir,
		     const uint32_t *ins, uint32_t n)
{
	const char *q = b->arena + s;

	return n && !strncmp(q, dir, ins[n - 1]) && q[ins[n - 1]] == '/';
}

/*
 * Renames the renamed nested directories' entries in archive order: a
 * stack of the nested walks around each entry gives the paths that get
 * ".tar" back (hard link targets inside those tars too, as they name
 * their tar's members).  `ren` holds the renamed ones' ents indexes.
 */
static int apply_renames(struct builder *b, const uint8_t *ren)
{
	struct { uint32_t end, len, renamed; } st[TARINDEX_MAX_NEST + 2];
	uint32_t *order, ins[TARINDEX_MAX_NEST + 2], i, d = 0, n, k;
	int rc = 0;

	order = malloc(((size_t)b->nents + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < b->nents; i++)
		order[i] = i;
	qsort_r(order, b->nents, sizeof(*order), seq_cmp, b->ents);
	for (i = 0; rc == 0 && i < b->nents; i++) {
		struct ent *e = &b->ents[order[i]];
		const char *dir = NULL;

		while (d && e->seq >= st[d - 1].end)
			d--;
		/* nesting is at most TARINDEX_MAX_NEST deep: the stack fits */
		if (e->type == TAR_DIR && e->nest_end && d < TARINDEX_MAX_NEST + 2) {
			st[d].end = e->nest_end;
			st[d].len = (uint32_t)strlen(b->arena + e->path);
			st[d].renamed = ren[order[i]];
			d++;
		}
		for (n = 0, k = 0; k < d; k++)
			if (st[k].renamed)
				ins[n++] = st[k].len;
		if (!n)
			continue;
		dir = b->arena + e->path;
		if (e->type == TAR_HARDLINK && under_all(b, e->link, dir, ins, n))
			rc = reinsert_tar(b, &e->link, ins, n);
		if (rc == 0)
			rc = reinsert_tar(b, &e->path, ins, n);
	}
	free(order);
	return rc;
}

/*
 * Step 2b: a nested tar "P.tar" expands to directory P unless the tree
 * has P, or something under it, from elsewhere (a file P, a directory P/,
 * the members of an "P/x" of the outer archive): then, so that nothing
 * hides the other, the tar's members go under "P.tar/" instead, warned
 * naming both.  The entries are sorted again after renaming.
 */
static int rename_nested(struct builder *b)
{
	struct nesting ns = { NULL, NULL };
	uint8_t *ren = NULL;
	uint32_t i, clash = NONE, run = NONE, nren = 0;
	int rc = 0;

	for (i = 0; i < b->nents; i++) {
		const struct ent *e = &b->ents[i];

		if (e->type != TAR_DIR || !e->nest_end)
			continue;
		if (!ns.run && (rc = nesting_make(b, &ns)) < 0)
			goto out;
		if (ns.run[i] != run) { /* once per path: its copies agree */
			run = ns.run[i];
			clash = nested_clash(b, &ns, run);
		}
		if (clash == NONE)
			continue;
		if (!ren && !(ren = calloc(b->nents, 1))) {
			rc = -ENOMEM;
			goto out;
		}
		sfs_warn("%s: nested tar '%s.tar' would be directory '%s', which "
			 "member '%s' also uses: the tar's members are under '%s.tar/'",
			 b->src[e->src].path, b->arena + e->path, b->arena + e->path,
			 b->arena + b->ents[clash].path, b->arena + e->path);
		ren[i] = 1;
		nren++;
	}
	if (nren) {
		rc = apply_renames(b, ren);
		if (rc == 0)
			sort_ents(b);
	}
out:
	free(ns.run);
	free(ns.up);
	free(ren);
	return rc;
}

/*
 * Step 3: each hard link becomes what its target path held where the link
 * appears (as tar -x makes it: link(2) to the file there then).  Links are
 * resolved in archive order, so a link to a link finds it resolved.
 */
static int resolve_links(struct builder *b)
{
	uint32_t *order, *skip, n = 0, i;

	order = malloc(((size_t)b->nents + 1) * sizeof(*order));
	skip = malloc(((size_t)b->nents + 1) * sizeof(*skip));
	if (!order || !skip) {
		free(order);
		free(skip);
		return -ENOMEM;
	}
	for (i = 0; i < b->nents; i++) {
		skip[i] = i;
		if (b->ents[i].type == TAR_HARDLINK)
			order[n++] = i;
	}
	qsort_r(order, n, sizeof(*order), seq_cmp, b->ents);
	for (i = 0; i < n; i++) {
		struct ent *e = &b->ents[order[i]];
		const struct ent *t = ent_before(b, skip, b->arena + e->link, e->seq);
		const char *why = !t ? "no such file before it in the archive" :
			t->type == TAR_FILE || t->type == TAR_SYMLINK ? NULL :
			"the target is a directory";

		if (!why && t->type == TAR_SYMLINK &&
		    !symlink_inside("", b->arena + e->path, b->arena + t->link))
			why = "the target is a symlink that leaves the mount from here";
		if (why) {
			/* names cut: a pax global header gives every link a
			 * 4 KB path for a 512-byte header */
			sfs_warn("%s: hard link '%.200s' -> '%.200s': %s: skipped",
				 b->src[e->src].path, b->arena + e->path,
				 b->arena + e->link, why);
			e->dropped = 1;
			skip[order[i]] = order[i] && !strcmp(b->arena + e->path,
				b->arena + b->ents[order[i] - 1].path) ? order[i] - 1 : NONE;
			continue;
		}
		e->type = t->type;
		e->link = t->link;
		e->off = t->off;
		e->size = t->size;
		e->src = t->src;
		e->sparse = t->sparse;
	}
	free(order);
	free(skip);
	return 0;
}

/* Keeps the last entry of each path that was not dropped (tar -x). */
static void dedupe(struct builder *b)
{
	uint32_t i, n = 0;

	for (i = 0; i < b->nents; i++) {
		if (b->ents[i].dropped)
			continue;
		if (n && !strcmp(b->arena + b->ents[n - 1].path,
				 b->arena + b->ents[i].path))
			n--;
		b->ents[n++] = b->ents[i];
	}
	b->nents = n;
}

static int add_item(struct builder *b, uint64_t name, uint32_t name_len,
		    uint32_t parent, uint32_t depth, uint8_t type,
		    const struct ent *e)
{
	struct item *it;
	int rc;

	if (b->nitems + 1 >= TARINDEX_MAX_NODES) {
		sfs_err("more than %u nodes: refusing to index", TARINDEX_MAX_NODES);
		return -E2BIG;
	}
	rc = grow((void **)&b->items, &b->items_cap, b->nitems, sizeof(*it));
	if (rc < 0)
		return rc;
	it = &b->items[b->nitems++];
	memset(it, 0, sizeof(*it));
	it->name = name;
	it->name_len = name_len;
	it->parent = parent;
	it->depth = depth;
	it->type = type;
	it->mtime = e ? e->mtime : 0;
	if (e && type == TARINDEX_FILE) {
		it->off = e->off;
		it->size = e->size;
		it->src = e->src;
		it->sparse = e->sparse;
	} else if (e && type == TARINDEX_SYMLINK) {
		it->off = e->link;
		it->size = strlen(b->arena + e->link);
	}
	return 0;
}

static uint8_t item_type(uint8_t tar_type)
{
	return tar_type == TAR_DIR ? TARINDEX_DIR :
	       tar_type == TAR_SYMLINK ? TARINDEX_SYMLINK : TARINDEX_FILE;
}

/*
 * The open directories along the current path during tree_pass.  walk_cb
 * keeps paths within TAR_PATH_MAX bytes, so within TAR_PATH_MAX / 2 + 1
 * components ("a/a/.../a"): d[0] is the root, the rest one per directory.
 */
#define DIRSTACK_LEN (TAR_PATH_MAX / 2 + 2)

struct dirstack {
	uint32_t depth;
	struct {
		uint32_t item;
		uint32_t len;   /* length of its full path */
		uint64_t path;  /* arena offset of its full path */
	} d[DIRSTACK_LEN];
};

/*
 * Opens the last item emitted, directory `path` (arena offset, len bytes)
 * of source `src`.  The bound is checked although walk_cb makes it
 * unreachable: should that ever change, the index is refused rather than
 * the stack overrun.
 */
static int push_dir(struct builder *b, struct dirstack *st, uint64_t path,
		    uint32_t len, uint32_t src)
{
	if (st->depth + 1 >= DIRSTACK_LEN) {
		sfs_err("%s: '%.100s...' is more than %d directories deep: "
			"refusing to index", b->src[src].path, b->arena + path,
			DIRSTACK_LEN - 1);
		return -ENAMETOOLONG;
	}
	st->depth++;
	st->d[st->depth].item = b->nitems - 1;
	st->d[st->depth].path = path;
	st->d[st->depth].len = len;
	return 0;
}

/* Whether directory `st->d[k]` is an ancestor of path p. */
static int under(const struct builder *b, const struct dirstack *st,
		 uint32_t k, const char *p)
{
	uint32_t len = st->d[k].len;

	return !memcmp(p, b->arena + st->d[k].path, len) && p[len] == '/';
}

/*
 * Emits the items of one entry (implicit parents first).  `prev` is the
 * previous entry emitted: if this entry lies under it and it is not a
 * directory, the file gives way to the directory (warned).
 */
static int tree_entry(struct builder *b, struct dirstack *st,
		      const struct ent *e, const struct ent *prev)
{
	const char *p = b->arena + e->path;
	uint32_t top, start, end;
	int rc;

	while (st->depth && !under(b, st, st->depth, p))
		st->depth--;
	if (prev && b->items[b->nitems - 1].type != TARINDEX_DIR) {
		const char *q = b->arena + prev->path;
		size_t ql = strlen(q);

		if (!strncmp(p, q, ql) && p[ql] == '/') {
			sfs_warn("%s: '%s' is both a file and a directory: the "
				 "file is hidden", b->src[prev->src].path, q);
			b->items[b->nitems - 1].type = TARINDEX_DIR;
			rc = push_dir(b, st, prev->path, (uint32_t)ql, prev->src);
			if (rc < 0)
				return rc;
		}
	}
	start = st->depth ? st->d[st->depth].len + 1 : 0;
	for (;;) {
		for (end = start; p[end] && p[end] != '/'; end++)
			;
		top = st->d[st->depth].item;
		if (!p[end])
			break;
		rc = add_item(b, e->path + start, end - start, top, st->depth + 1,
			      TARINDEX_DIR, e);
		if (rc == 0)
			rc = push_dir(b, st, e->path, end, e->src);
		if (rc < 0)
			return rc;
		start = end + 1;
	}
	rc = add_item(b, e->path + start, end - start, top, st->depth + 1,
		      item_type(e->type), e);
	if (rc < 0 || e->type != TAR_DIR)
		return rc;
	return push_dir(b, st, e->path, end, e->src);
}

/* Step 4: the preorder item list, item 0 being the root. */
static int tree_pass(struct builder *b, int64_t root_mtime)
{
	struct dirstack *st;
	const struct ent *prev = NULL;
	uint32_t i;
	int rc;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	rc = add_item(b, 0, 0, NONE, 0, TARINDEX_DIR, NULL);
	b->items[0].mtime = root_mtime;
	st->d[0].item = 0;
	for (i = 0; rc == 0 && i < b->nents; i++) {
		if (b->ents[i].dropped)
			continue;
		rc = tree_entry(b, st, &b->ents[i], prev);
		prev = &b->ents[i];
	}
	free(st);
	return rc;
}

/* The built arrays, in the on-disk format. */
struct out {
	struct tarindex_hdr hdr;
	struct tarindex_node *nodes;
	uint32_t *dirs;
	char *pool;
	uint64_t pool_len, pool_cap;
	uint32_t *sparse_of;            /* node -> builder sparse map, or 0 */
	struct tarindex_sparse *sparse;
	struct tarindex_chunk *chunks;
	uint32_t nsparse;
	uint64_t nchunks;
	uint32_t *targets;              /* pool offset + 1 of each symlink
					 * target stored, by hash; 0: free */
	uint32_t targets_mask;
};

static int pool_put(struct out *o, const char *s, size_t n, uint64_t *at)
{
	if (o->pool_len + n + 1 > UINT32_MAX) {
		sfs_err("names of the archive exceed 4 GiB: refusing to index");
		return -E2BIG;
	}
	if (o->pool_len + n + 1 > o->pool_cap) {
		uint64_t c = o->pool_cap ? o->pool_cap * 2 : 1 << 20;
		char *q;

		while (c < o->pool_len + n + 1)
			c *= 2;
		q = realloc(o->pool, c);
		if (!q)
			return -ENOMEM;
		o->pool = q;
		o->pool_cap = c;
	}
	memcpy(o->pool + o->pool_len, s, n);
	o->pool[o->pool_len + n] = '\0';
	*at = o->pool_len;
	o->pool_len += n + 1;
	return 0;
}

/*
 * Stores symlink target s (n bytes) once however many links have it (a
 * pax global header gives every link after it one 4 KB target for 512
 * bytes of header): equal targets share their offset in the pool, which
 * also lets tarindex_escaping_links follow them once.
 */
static int pool_put_target(struct out *o, const char *s, size_t n, uint64_t *at)
{
	struct index_fp h;
	uint32_t k;
	int rc;

	index_fp_init(&h, "target");
	index_fp_add_bytes(&h, s, n);
	for (k = (uint32_t)h.h & o->targets_mask; o->targets[k];
	     k = (k + 1) & o->targets_mask) {
		uint64_t t = o->targets[k] - 1;

		/* the NUL first: then the bytes compared lie in the pool */
		if (t + n < o->pool_len && o->pool[t + n] == '\0' &&
		    !memcmp(o->pool + t, s, n)) {
			*at = t;
			return 0;
		}
	}
	rc = pool_put(o, s, n, at);
	if (rc == 0)
		o->targets[k] = (uint32_t)*at + 1;
	return rc;
}

static uint32_t clamp_time(int64_t t)
{
	return t < 0 ? 0 : t > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* Fills node k from item it (children are counted separately). */
static int make_node(struct builder *b, struct out *o, uint32_t k,
		     const struct item *it)
{
	struct tarindex_node *n = &o->nodes[k];
	uint64_t at, size = 0;
	int rc;

	rc = pool_put(o, b->arena + it->name, it->name_len, &at);
	if (rc < 0)
		return rc;
	n->name = (uint32_t)at;
	n->mtime = clamp_time(it->mtime);
	n->off = 0;
	if (it->type == TARINDEX_FILE) {
		n->off = it->off;
		size = it->size;
		o->hdr.nfiles++;
		o->hdr.total_bytes += it->size;
		o->sparse_of[k] = it->sparse;
	} else if (it->type == TARINDEX_SYMLINK) {
		rc = pool_put_target(o, b->arena + it->off, it->size, &at);
		if (rc < 0)
			return rc;
		n->off = at;
		size = it->size;
	}
	n->meta = size | (uint64_t)it->type << 40 | (uint64_t)it->src << 44 |
		  (it->sparse ? TARINDEX_SPARSE_BIT : 0);
	return 0;
}

/*
 * Step 6: the sparse files' entries in node order, each pointing at its
 * map: its chunks with offsets into the stored data, then {size, stored
 * bytes}.  Hard links to one sparse member share its map, stored once
 * (a copy per link would make N links to a map of M chunks N x M).
 */
static int sparse_sections(struct builder *b, struct out *o)
{
	uint64_t *at = NULL;
	uint32_t k, j, n = 0;
	int rc = -ENOMEM;

	for (k = 0; k < o->hdr.nnodes; k++)
		n += o->sparse_of[k] != 0;
	if (!n)
		return 0;
	/* room for every map of the builder, each with its last entry */
	at = malloc((size_t)b->nsparse * sizeof(*at));
	o->sparse = malloc((size_t)n * sizeof(*o->sparse));
	o->chunks = malloc((b->nchunks + b->nsparse) * sizeof(*o->chunks));
	if (!at || !o->sparse || !o->chunks)
		goto out;
	memset(at, 0xff, (size_t)b->nsparse * sizeof(*at));     /* none yet */
	for (k = 0; k < o->hdr.nnodes; k++) {
		uint32_t id = o->sparse_of[k];
		const struct sparse_map *sm = &b->sparse[id];
		uint64_t data = 0;

		if (!id)
			continue;
		o->sparse[o->nsparse++] = (struct tarindex_sparse){ k, sm->n,
			at[id] != UINT64_MAX ? at[id] : o->nchunks };
		if (at[id] != UINT64_MAX)
			continue;
		at[id] = o->nchunks;
		for (j = 0; j < sm->n; j++) {
			const struct tar_sparse_chunk *c = &b->chunks[sm->first + j];

			o->chunks[o->nchunks++] = (struct tarindex_chunk){ c->off, data };
			data += c->len;
		}
		o->chunks[o->nchunks++] = (struct tarindex_chunk){
			tarindex_node_size(&o->nodes[k]), data };
	}
	rc = 0;
out:
	free(at);
	return rc;
}

/*
 * Step 5: breadth-first numbering by a stable bucket sort on depth, then
 * child counts and first-child numbers (the ranges tile [1, nnodes)).
 */
static int renumber(struct builder *b, struct out *o)
{
	uint32_t *num = NULL, *bucket = NULL, maxd = 0, i, k, nd = 0;
	uint64_t cursor = 1;
	int rc = -ENOMEM;

	for (i = 0; i < b->nitems; i++)
		if (b->items[i].depth > maxd)
			maxd = b->items[i].depth;
	num = malloc((size_t)b->nitems * sizeof(*num));
	bucket = calloc((size_t)maxd + 2, sizeof(*bucket));
	o->nodes = calloc(b->nitems, sizeof(*o->nodes));
	o->sparse_of = calloc(b->nitems, sizeof(*o->sparse_of));
	if (!num || !bucket || !o->nodes || !o->sparse_of)
		goto out;
	for (i = 0; i < b->nitems; i++)
		bucket[b->items[i].depth + 1]++;
	for (i = 1; i <= maxd + 1; i++)
		bucket[i] += bucket[i - 1];
	for (i = 0; i < b->nitems; i++)
		num[i] = bucket[b->items[i].depth]++;
	for (i = 0, k = 0; i < b->nitems; i++)
		k += b->items[i].type == TARINDEX_SYMLINK;
	if (k) {        /* at most half full */
		for (o->targets_mask = 1; o->targets_mask < 2 * (uint64_t)k; )
			o->targets_mask *= 2;
		o->targets = calloc(o->targets_mask--, sizeof(*o->targets));
		if (!o->targets)
			goto out;
	}
	for (i = 0; i < b->nitems; i++) {
		rc = make_node(b, o, num[i], &b->items[i]);
		if (rc < 0)
			goto out;
		if (b->items[i].type == TARINDEX_DIR)
			nd++;
		if (i)  /* count the child in its parent */
			o->nodes[num[b->items[i].parent]].meta++;
	}
	rc = -ENOMEM;
	o->dirs = malloc((size_t)nd * sizeof(*o->dirs));
	if (!o->dirs)
		goto out;
	for (k = 0, nd = 0; k < b->nitems; k++) {
		struct tarindex_node *n = &o->nodes[k];

		if (tarindex_node_type(n) != TARINDEX_DIR)
			continue;
		o->dirs[nd++] = k;
		n->off = cursor;
		cursor += tarindex_node_size(n);
	}
	o->hdr.version = TARINDEX_VERSION;
	o->hdr.nnodes = b->nitems;
	o->hdr.ndirs = nd;
	o->hdr.pool_len = o->pool_len;
	rc = sparse_sections(b, o);
	o->hdr.nsparse = o->nsparse;
	o->hdr.nchunks = o->nchunks;
out:
	free(num);
	free(bucket);
	return rc;
}

static int write_sections(struct index_writer *w, uint32_t c, struct out *o,
			  const uint64_t *sizes)
{
	int rc;

	rc = index_writer_add(w, TAG(c, 'H', 'D'), &o->hdr, sizeof(o->hdr));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'N', 'D'), o->nodes,
				      (uint64_t)o->hdr.nnodes * sizeof(*o->nodes));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'D', 'R'), o->dirs,
				      (uint64_t)o->hdr.ndirs * sizeof(*o->dirs));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'N', 'M'), o->pool, o->pool_len);
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'S', 'R'), sizes,
				      (uint64_t)o->hdr.nsrc * sizeof(*sizes));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'S', 'T'), o->sparse,
				      (uint64_t)o->nsparse * sizeof(*o->sparse));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'S', 'M'), o->chunks,
				      o->nchunks * sizeof(*o->chunks));
	return rc;
}

/* Walks one source tar into the builder. */
static int walk_source(struct builder *b, const struct tarindex_source *s,
		       uint32_t srcno, uint64_t *size, int64_t *mtime)
{
	struct walkctx c = { .b = b, .src = s->src, .srcno = srcno, .what = s->path };
	char dir[TAR_PATH_MAX + 1];
	int rc = 0;

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
	*size = source_stamp(s->src)->size;
	*mtime = source_stamp_sec(source_stamp(s->src));
	/* we read one header per member and skip the data: readahead would
	 * read the data we skip */
	source_advise(s->src, 0, 0, SOURCE_ADV_RANDOM);
	rc = tar_walk(s->src, 0, *size, s->path, walk_cb, &c);
	if (rc == -EINVAL)
		sfs_err("%s: not a tar archive (no valid header at offset 0)", s->path);
	else if (rc == -EBADMSG)
		sfs_warn("%s: keeping the %u members before the damage", s->path,
			 b->nents);
	if (rc == -EBADMSG)
		rc = 0;
	source_advise(s->src, 0, 0, SOURCE_ADV_NORMAL);
	b->bytes_before += *size;
	return rc;
}

static void builder_free(struct builder *b, struct out *o)
{
	free(b->arena);
	free(b->ents);
	free(b->items);
	free(b->chunks);
	free(b->sparse);
	free(o->nodes);
	free(o->dirs);
	free(o->pool);
	free(o->sparse_of);
	free(o->targets);
	free(o->sparse);
	free(o->chunks);
}

int tarindex_build(struct index_writer *w, uint32_t tag_prefix_char,
		   const struct tarindex_source *src, size_t nsrc,
		   const struct tarindex_build_opts *bo)
{
	struct builder b = { .recursive = bo->recursive, .src = src };
	struct out o = { .hdr.nsrc = (uint32_t)nsrc };
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
	sizes = calloc(nsrc + 1, sizeof(*sizes));
	if (!sizes)
		return -ENOMEM;
	for (i = 0; i < nsrc; i++)
		total += source_stamp(src[i].src)->size;
	progress_start(&b.prog, bo->what ? bo->what : "indexing tar", 0, total,
		       bo->quiet);
	/* the root's name: "" at offset 0 of the pool and of the arena */
	rc = pool_put(&o, "", 0, &at);
	if (rc == 0)
		rc = arena_put(&b, NULL, "", 0, &at);
	for (i = 0; rc == 0 && i < nsrc; i++) {
		mtime = 0;
		rc = walk_source(&b, &src[i], (uint32_t)i, &sizes[i], &mtime);
		if (mtime > root_mtime)
			root_mtime = mtime;
	}
	progress_finish(&b.prog);
	if (rc < 0)
		goto out;
	sort_ents(&b);
	rc = rename_nested(&b);
	if (rc == 0)
		rc = resolve_links(&b);
	dedupe(&b);
	if (rc == 0)
		rc = tree_pass(&b, root_mtime);
	if (rc == 0)
		rc = renumber(&b, &o);
	if (rc == 0)
		rc = write_sections(w, tag_prefix_char, &o, sizes);
out:
	builder_free(&b, &o);
	free(sizes);
	return rc;
}

int tarindex_fp_add(struct index_fp *fp, const struct tarindex_source *src,
		    size_t nsrc, uint32_t recursive)
{
	size_t i;

	index_fp_add_str(fp, "tarindex");
	index_fp_add_u64(fp, TARINDEX_VERSION);
	index_fp_add_u64(fp, recursive);
	index_fp_add_u64(fp, nsrc);
	for (i = 0; i < nsrc; i++) {
		if (!src[i].src)
			return -EBADF;
		index_fp_add_source(fp, src[i].path, source_stamp(src[i].src));
		index_fp_add_str(fp, src[i].dir ? src[i].dir : "");
	}
	return 0;
}
