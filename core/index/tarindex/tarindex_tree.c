/*
 * tarindex_tree.c - steps 4 and 5 of the tar index build (see
 * tarindex_build.c): the last pass over the sorted entries places them in
 * the tree, in preorder, writing each item's name to the name section as
 * it comes and sorting the items by (depth, preorder number), which is
 * their breadth-first order; the directories' child counts, known when
 * each is closed, go through a sort of their own in the same order.
 * Then the nodes are written in that order, each directory's children
 * starting where the previous directories' end; with checksums, the
 * plain file nodes go to tarindex_sums.c, which reads their bytes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"

/* An item of the tree, sorted by depth then preorder number. */
struct item {
	uint32_t depth, pre;
	uint32_t name;      /* pool offset */
	uint32_t mtime;
	uint64_t off, size; /* file data; symlink target pool offset, length */
	uint32_t src, sparse;
	uint8_t type;       /* enum tarindex_type */
};

/* A directory's child count, sorted as the items. */
struct dcount {
	uint32_t depth, pre, count;
};

static int key_cmp(const void *pa, const void *pb, void *arg)
{
	const uint32_t *x = pa, *y = pb;  /* depth, pre: both structs start so */

	(void)arg;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/*
 * The open directories along the current path.  Paths in the tree are
 * within TAR_PATH_MAX bytes (walk_cb), so within TAR_PATH_MAX / 2 + 1
 * components: d[0] is the root, the rest one per directory.  Each is a
 * prefix of the deepest one's path, `top`.
 */
#define DIRSTACK_LEN (TAR_PATH_MAX / 2 + 2)
#define PATHBUF (TAR_PATH_MAX + TAR_SUFFIX_MAX * (TARINDEX_MAX_NEST + 2) + 8)
#define POOLBUF (64u << 10)

struct tree {
	struct builder *b;
	struct index_writer *w;
	struct spill *items, *counts;
	uint32_t nitems;
	uint32_t depth;
	struct { uint32_t pre, len, count; } d[DIRSTACK_LEN];
	char top[PATHBUF];
	/* the last item, written when the next comes: a file may yet turn
	 * into a directory */
	int pending;
	struct item it;
	int64_t it_mtime;
	uint32_t name_len, target_len;
	char name[PATHBUF], target[2 * TAR_PATH_MAX + 8];
	char prev[PATHBUF];     /* the last entry placed */
	uint32_t prev_src;
	int have_prev;
	/* names go straight to the name section, through this buffer */
	char *pool;
	size_t pool_buf;
	uint64_t pool_len;
	/* symlink targets stored: pool offset + 1 by hash, 0 free; copies */
	struct tgt { uint64_t h, copy; uint32_t at, len; } *tg;
	uint32_t ntg, tg_mask;
	struct tarbuild_arena tgs;
};

static int pool_flush(struct tree *t)
{
	int rc = index_writer_append(t->w, t->pool, t->pool_buf);

	t->pool_buf = 0;
	return rc;
}

static int pool_put(struct tree *t, const char *s, size_t n, uint32_t *at)
{
	int rc;

	if (t->pool_len + n + 1 > UINT32_MAX) {
		sfs_err("names of the archive exceed 4 GiB: refusing to index");
		return -E2BIG;
	}
	if (t->pool_buf + n + 1 > POOLBUF && (rc = pool_flush(t)) < 0)
		return rc;
	memcpy(t->pool + t->pool_buf, s, n);
	t->pool[t->pool_buf + n] = '\0';
	t->pool_buf += n + 1;
	*at = (uint32_t)t->pool_len;
	t->pool_len += n + 1;
	return 0;
}

static int tg_grow(struct tree *t)
{
	uint32_t cap = t->tg_mask ? 2 * (t->tg_mask + 1) : 1024, i, k;
	struct tgt *q = calloc(cap, sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (i = 0; t->tg && i <= t->tg_mask; i++) {
		if (!t->tg[i].at)
			continue;
		for (k = (uint32_t)t->tg[i].h & (cap - 1); q[k].at; k = (k + 1) & (cap - 1))
			;
		q[k] = t->tg[i];
	}
	free(t->tg);
	t->tg = q;
	t->tg_mask = cap - 1;
	return 0;
}

/*
 * Stores symlink target s (n bytes) once however many links have it (a
 * pax global header gives every link after it one 4 KB target for 512
 * bytes of header): equal targets share their offset in the pool, which
 * also lets tarindex_escaping_links follow them once.  The targets are
 * kept (once each) to compare, the pool being written as it grows.
 */
static int pool_put_target(struct tree *t, const char *s, size_t n, uint32_t *at)
{
	struct index_fp h;
	uint32_t k;
	int rc;

	if (2 * (t->ntg + 1) > t->tg_mask && (rc = tg_grow(t)) < 0)
		return rc;
	index_fp_init(&h, "target");
	index_fp_add_bytes(&h, s, n);
	for (k = (uint32_t)h.h & t->tg_mask; t->tg[k].at; k = (k + 1) & t->tg_mask)
		if (t->tg[k].h == h.h && t->tg[k].len == n &&
		    !memcmp(t->tgs.p + t->tg[k].copy, s, n)) {
			*at = t->tg[k].at - 1;
			return 0;
		}
	rc = pool_put(t, s, n, at);
	if (rc == 0)
		rc = tarbuild_arena_put(&t->tgs, NULL, s, n, &t->tg[k].copy);
	if (rc < 0)
		return rc;
	t->tg[k].h = h.h;
	t->tg[k].len = (uint32_t)n;
	t->tg[k].at = *at + 1;
	t->ntg++;
	return 0;
}

static uint32_t clamp_time(int64_t v)
{
	return v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Writes the pending item: its name (and target) to the pool, it to the sort. */
static int flush_item(struct tree *t)
{
	int rc;

	if (!t->pending)
		return 0;
	t->pending = 0;
	t->it.mtime = clamp_time(t->it_mtime);
	rc = pool_put(t, t->name, t->name_len, &t->it.name);
	if (rc == 0 && t->it.type == TARINDEX_SYMLINK) {
		uint32_t at = 0;

		rc = pool_put_target(t, t->target, t->target_len, &at);
		t->it.off = at;
		t->it.size = t->target_len;
	}
	return rc < 0 ? rc : spill_add(t->items, &t->it, sizeof(t->it));
}

static uint8_t item_type(uint8_t tar_type)
{
	return tar_type == TAR_DIR ? TARINDEX_DIR :
	       tar_type == TAR_SYMLINK ? TARINDEX_SYMLINK : TARINDEX_FILE;
}

/* A new item `name` (len bytes) of type `type` for entry e (NULL: the
 * root) under the deepest open directory. */
static int add_item(struct tree *t, const char *name, uint32_t len,
		    uint8_t type, const struct entry_rec *e)
{
	int rc;

	if (t->nitems + 1 >= TARINDEX_MAX_NODES) {
		sfs_err("more than %u nodes: refusing to index", TARINDEX_MAX_NODES);
		return -E2BIG;
	}
	rc = flush_item(t);
	if (rc < 0)
		return rc;
	memset(&t->it, 0, sizeof(t->it));
	t->it.depth = e ? t->depth + 1 : 0;
	t->it.pre = t->nitems++;
	t->it.type = type;
	t->it_mtime = e ? e->mtime : 0;
	if (e && type == TARINDEX_FILE) {
		t->it.off = e->off;
		t->it.size = e->size;
		t->it.src = e->src;
		t->it.sparse = e->sparse;
	} else if (e && type == TARINDEX_SYMLINK) {
		t->target_len = e->link_len;
		memcpy(t->target, e->s + e->path_len + 1, e->link_len);
	}
	memcpy(t->name, name, len);
	t->name_len = len;
	if (t->it.pre)  /* count the child in its parent */
		t->d[t->depth].count++;
	t->pending = 1;
	return 0;
}

/*
 * Opens the pending item as directory `path` (len bytes) of source
 * `src`.  The bound is checked although walk_cb makes it unreachable:
 * should that ever change, the index is refused rather than the stack
 * overrun.
 */
static int push_dir(struct tree *t, const char *path, uint32_t len, uint32_t src)
{
	if (t->depth + 1 >= DIRSTACK_LEN || len >= PATHBUF) {
		sfs_err("%s: '%.100s...' is more than %d directories deep: "
			"refusing to index", tarbuild_src_what(t->b, src), path,
			DIRSTACK_LEN - 1);
		return -ENAMETOOLONG;
	}
	t->depth++;
	t->d[t->depth].pre = t->it.pre;
	t->d[t->depth].len = len;
	t->d[t->depth].count = 0;
	memcpy(t->top, path, len);
	return 0;
}

/* Closes the deepest open directory: its child count to the sort. */
static int pop_dir(struct tree *t)
{
	struct dcount c = { t->depth, t->d[t->depth].pre, t->d[t->depth].count };

	if (t->depth)
		t->depth--;
	return spill_add(t->counts, &c, sizeof(c));
}

/* Whether open directory k is an ancestor of path p. */
static int under(const struct tree *t, uint32_t k, const char *p)
{
	uint32_t len = t->d[k].len;

	return !memcmp(p, t->top, len) && p[len] == '/';
}

/*
 * Places one entry (implicit parents first).  If it lies under the
 * previous entry placed and that is not a directory, the file gives way
 * to the directory (warned).
 */
static int tree_entry(struct tree *t, const struct entry_rec *e)
{
	const char *p = e->s;
	uint32_t start, end;
	int rc;

	while (t->depth && !under(t, t->depth, p))
		if ((rc = pop_dir(t)) < 0)
			return rc;
	if (t->have_prev && t->it.type != TARINDEX_DIR) {
		size_t ql = strlen(t->prev);

		if (!strncmp(p, t->prev, ql) && p[ql] == '/') {
			sfs_warn("%s: '%s' is both a file and a directory: the "
				 "file is hidden", tarbuild_src_what(t->b, t->prev_src), t->prev);
			t->it.type = TARINDEX_DIR;
			rc = push_dir(t, t->prev, (uint32_t)ql, t->prev_src);
			if (rc < 0)
				return rc;
		}
	}
	start = t->depth ? t->d[t->depth].len + 1 : 0;
	for (;;) {
		for (end = start; p[end] && p[end] != '/'; end++)
			;
		if (!p[end])
			break;
		rc = add_item(t, p + start, end - start, TARINDEX_DIR, e);
		if (rc == 0)
			rc = push_dir(t, p, end, e->src);
		if (rc < 0)
			return rc;
		start = end + 1;
	}
	rc = add_item(t, p + start, end - start, item_type(e->type), e);
	if (rc == 0 && e->type == TAR_DIR)
		rc = push_dir(t, p, end, e->src);
	if (rc == 0) {
		memcpy(t->prev, p, e->path_len + 1);
		t->prev_src = e->src;
		t->have_prev = 1;
	}
	return rc;
}

/*
 * Entry r as placed, into buffer `into`: a hard link as resolved (0 when
 * it was dropped), anything else as it is.  1 or 0.
 */
static int take(const struct builder *b, const struct entry_rec *r, struct entry_rec *into)
{
	const char *link;

	if (r->type != TAR_HARDLINK) {
		memcpy(into, r, offsetof(struct entry_rec, s) + r->path_len + r->link_len + 10);
		return 1;
	}
	if (!tarbuild_link_of(b, r, into, &link))
		return 0;
	tarbuild_entry_set(into, r->s, r->path_len, link, strlen(link));
	return 1;
}

/*
 * Step 4: keeps the last entry of each path that was not dropped (tar
 * -x) and places it: the preorder item list, item 0 being the root.
 */
static int tree_pass(struct tree *t, int64_t root_mtime)
{
	struct builder *b = t->b;
	struct entry_rec *hold = malloc(SPILL_MAX_REC), *next = malloc(SPILL_MAX_REC), *x;
	const struct entry_rec *r;
	int rc = -ENOMEM, held = 0;

	if (!hold || !next)
		goto out;
	rc = add_item(t, "", 0, TARINDEX_DIR, NULL);
	t->it_mtime = root_mtime;
	if (rc == 0)
		rc = spill_rewind(b->ents);
	while (rc == 0 && (rc = tarbuild_next(b->ents, &r)) > 0) {
		rc = 0;
		if (!take(b, r, next))
			continue;
		if (held && strcmp(hold->s, next->s))
			rc = tree_entry(t, hold);
		x = hold;
		hold = next;
		next = x;
		held = 1;
	}
	if (rc == 0 && held)
		rc = tree_entry(t, hold);
	if (rc == 0)
		rc = flush_item(t);
	while (rc == 0 && t->depth)
		rc = pop_dir(t);
	if (rc == 0)
		rc = pop_dir(t);        /* the root */
out:
	free(hold);
	free(next);
	return rc;
}

/* What step 5 collects aside while writing the nodes. */
struct sp_ent {
	uint32_t node, id;
	uint64_t size;
};
struct hl_ent {
	uint32_t src, node;
	uint64_t off;
};
struct aside {
	struct tarbuild_sum *sums;    /* with checksums: the plain file nodes */
	uint32_t nsums, sums_cap;
	struct sp_ent *sp;
	uint32_t nsp, sp_cap;
	struct hl_ent *hl;
	uint32_t nhl, hl_cap;
	uint32_t *dirs;
	uint32_t ndirs, dirs_cap;
	struct spill *dspool;   /* directory numbers, in batches */
};

#define DBATCH 2048

static int dirs_flush(struct aside *a)
{
	int rc = 0;

	if (a->ndirs)
		rc = spill_add(a->dspool, a->dirs, (size_t)a->ndirs * sizeof(*a->dirs));
	a->ndirs = 0;
	return rc;
}

/* Node k from item it (a directory's children from *cursor on, c of them). */
static int make_node(const struct builder *b, struct tarindex_hdr *h,
		     struct aside *a, uint32_t k, const struct item *it,
		     uint32_t count, uint64_t *cursor, struct tarindex_node *n)
{
	uint64_t size = 0;
	int rc = 0;

	n->name = it->name;
	n->mtime = it->mtime;
	n->off = 0;
	if (it->type == TARINDEX_FILE) {
		n->off = it->off;
		size = it->size;
		h->nfiles++;
		h->total_bytes += it->size;
		if (it->sparse && (rc = tarbuild_grow((void **)&a->sp, &a->sp_cap, a->nsp,
						sizeof(*a->sp))) == 0)
			a->sp[a->nsp++] = (struct sp_ent){ k, it->sparse, it->size };
		if (rc == 0 && b->checksums &&
		    tarindex_sums_cover(b->zips, b->nzips, b->nsrc, it->src, it->sparse != 0) &&
		    (rc = tarbuild_grow((void **)&a->sums, &a->sums_cap, a->nsums,
				  sizeof(*a->sums))) == 0)
			a->sums[a->nsums++] = (struct tarbuild_sum){ it->off, it->size, 0,
							       it->src, k };
		if (rc == 0 && tarbuild_link_data(b, it->src, it->off) &&
		    (rc = tarbuild_grow((void **)&a->hl, &a->hl_cap, a->nhl, sizeof(*a->hl))) == 0)
			a->hl[a->nhl++] = (struct hl_ent){ it->src, k, it->off };
	} else if (it->type == TARINDEX_SYMLINK) {
		n->off = it->off;
		size = it->size;
		h->nsymlinks++;
	} else {
		n->off = *cursor;
		*cursor += count;
		size = count;
		h->ndirs++;
		a->dirs[a->ndirs++] = k;
		if (a->ndirs == DBATCH)
			rc = dirs_flush(a);
	}
	n->meta = size | (uint64_t)it->type << 40 | (uint64_t)it->src << 44 |
		  (it->sparse ? TARINDEX_SPARSE_BIT : 0);
	return rc;
}

/* The next child count, which must be directory item it's. */
static int next_count(struct tree *t, const struct item *it, uint32_t *count)
{
	const void *p;
	size_t len;
	int rc = spill_next(t->counts, &p, &len);
	const struct dcount *c = p;

	if (rc < 0)
		return rc;
	if (!rc || c->depth != it->depth || c->pre != it->pre) {
		sfs_err("%s: tar index build: the child count of directory item "
			"%u at depth %u is missing", t->b->scratch, it->pre, it->depth);
		return -EIO;
	}
	*count = c->count;
	return 1;
}

#define NBATCH 4096

/* Step 5a: the nodes in breadth-first order (section ND). */
static int write_nodes(struct tree *t, uint32_t c, struct tarindex_hdr *h,
		       struct aside *a)
{
	struct tarindex_node *nb = malloc(NBATCH * sizeof(*nb));
	uint64_t cursor = 1;
	uint32_t k = 0, nb_len = 0, count = 0;
	const void *p;
	size_t len;
	int rc;

	if (!nb)
		return -ENOMEM;
	rc = spill_rewind(t->items);
	if (rc == 0)
		rc = spill_rewind(t->counts);
	if (rc == 0)
		rc = index_writer_begin(t->w, TAG(c, 'N', 'D'));
	while (rc == 0 && (rc = spill_next(t->items, &p, &len)) > 0) {
		const struct item *it = p;

		rc = it->type == TARINDEX_DIR ? next_count(t, it, &count) : 0;
		if (rc >= 0)
			rc = make_node(t->b, h, a, k++, it, count, &cursor, &nb[nb_len++]);
		if (rc == 0 && nb_len == NBATCH) {
			rc = index_writer_append(t->w, nb, nb_len * sizeof(*nb));
			nb_len = 0;
		}
	}
	if (rc == 0)
		rc = index_writer_append(t->w, nb, nb_len * sizeof(*nb));
	if (rc == 0)
		rc = index_writer_end(t->w);
	h->nnodes = k;
	free(nb);
	return rc;
}

/* Step 5b: the directory numbers, spooled while the nodes were written. */
static int write_dirs(struct tree *t, uint32_t c, struct aside *a, uint32_t left)
{
	const void *p;
	size_t len;
	int rc = dirs_flush(a);

	if (rc == 0)
		rc = spill_rewind(a->dspool);
	if (rc == 0)
		rc = index_writer_begin(t->w, TAG(c, 'D', 'R'));
	/* a batch comes back padded to 8 bytes: the count says how many */
	while (rc == 0 && (rc = spill_next(a->dspool, &p, &len)) > 0) {
		size_t n = len / sizeof(uint32_t) < left ? len / sizeof(uint32_t) : left;

		rc = index_writer_append(t->w, p, n * sizeof(uint32_t));
		left -= (uint32_t)n;
	}
	return rc == 0 ? index_writer_end(t->w) : rc;
}

/*
 * Step 5c: the sparse files' entries in node order, each pointing at its
 * map: its chunks with offsets into the stored data, then {size, stored
 * bytes}.  Hard links to one sparse member share its map, stored once
 * (a copy per link would make N links to a map of M chunks N x M).
 */
static int write_sparse(const struct builder *b, struct index_writer *w,
			uint32_t c, struct tarindex_hdr *h, const struct aside *a)
{
	struct tarindex_sparse *sp = NULL;
	struct tarindex_chunk *ch = NULL;
	uint64_t *at = NULL, nch = 0;
	uint32_t i, j;
	int rc = -ENOMEM;

	if (a->nsp) {
		at = malloc((size_t)b->nsparse * sizeof(*at));
		sp = malloc((size_t)a->nsp * sizeof(*sp));
		ch = malloc((b->nchunks + b->nsparse) * sizeof(*ch));
		if (!at || !sp || !ch)
			goto out;
		memset(at, 0xff, (size_t)b->nsparse * sizeof(*at));   /* none yet */
	}
	for (i = 0; i < a->nsp; i++) {
		uint32_t id = a->sp[i].id;
		const struct sparse_map *sm = &b->sparse[id];
		uint64_t data = 0;

		sp[i] = (struct tarindex_sparse){ a->sp[i].node, sm->n,
			at[id] != UINT64_MAX ? at[id] : nch };
		if (at[id] != UINT64_MAX)
			continue;
		at[id] = nch;
		for (j = 0; j < sm->n; j++) {
			const struct tar_sparse_chunk *k = &b->chunks[sm->first + j];

			ch[nch++] = (struct tarindex_chunk){ k->off, data };
			data += k->len;
		}
		ch[nch++] = (struct tarindex_chunk){ a->sp[i].size, data };
	}
	h->nsparse = a->nsp;
	h->nchunks = nch;
	rc = index_writer_add(w, TAG(c, 'S', 'T'), sp, (uint64_t)a->nsp * sizeof(*sp));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'S', 'M'), ch, nch * sizeof(*ch));
out:
	free(at);
	free(sp);
	free(ch);
	return rc;
}

static int hl_cmp(const void *pa, const void *pb)
{
	const struct hl_ent *x = pa, *y = pb;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->node > y->node) - (x->node < y->node);
}

/*
 * Step 5d: the file nodes a hard link made one file (link(2) under tar
 * -x): those whose data is at the same offset of the same source, since
 * every member's data starts at an offset of its own (only where a link
 * resolved to, gathered while writing the nodes).  Each gets an entry, in
 * node order, naming the group's lowest node and its size.
 */
static int write_hardlinks(struct index_writer *w, uint32_t c,
			   struct tarindex_hdr *h, struct aside *a)
{
	struct tarindex_hardlink *hl = NULL;
	uint32_t i, j, k;
	int rc;

	if (a->nhl && !(hl = malloc((size_t)a->nhl * sizeof(*hl))))
		return -ENOMEM;
	if (a->nhl)
		qsort(a->hl, a->nhl, sizeof(*a->hl), hl_cmp);
	for (i = 0; i < a->nhl; i = j) {
		for (j = i + 1; j < a->nhl && a->hl[j].src == a->hl[i].src &&
		     a->hl[j].off == a->hl[i].off; j++)
			;
		for (k = i; j - i > 1 && k < j; k++)
			hl[h->nhardlinks++] = (struct tarindex_hardlink){
				a->hl[k].node, a->hl[i].node, j - i };
	}
	if (hl)
		qsort(hl, h->nhardlinks, sizeof(*hl), hardlink_cmp);
	rc = index_writer_add(w, TAG(c, 'H', 'L'), hl,
			      (uint64_t)h->nhardlinks * sizeof(*hl));
	free(hl);
	return rc;
}

static void tree_free(struct tree *t, struct aside *a)
{
	spill_close(t->items);
	spill_close(t->counts);
	spill_close(a->dspool);
	free(t->pool);
	free(t->tg);
	free(t->tgs.p);
	free(a->sums);
	free(a->sp);
	free(a->hl);
	free(a->dirs);
	free(t);
}

int tarbuild_tree_write(struct builder *b, struct index_writer *w, uint32_t c,
		  int64_t root_mtime, const uint64_t *sizes)
{
	struct tree *t = calloc(1, sizeof(*t));
	struct aside a = { 0 };
	struct tarindex_hdr h = { .version = TARINDEX_VERSION, .nsrc = b->nsrc,
				  .nderived = b->nder };
	uint32_t at;
	int rc = -ENOMEM;

	if (!t)
		return -ENOMEM;
	t->b = b;
	t->w = w;
	t->pool = malloc(POOLBUF);
	a.dirs = malloc(DBATCH * sizeof(*a.dirs));
	if (!t->pool || !a.dirs)
		goto out;
	rc = tarbuild_sort_open(b, &t->items, b->budget / 2, key_cmp);
	if (rc == 0)
		rc = tarbuild_sort_open(b, &t->counts, b->budget / 8, key_cmp);
	if (rc == 0)
		rc = tarbuild_sort_open(b, &a.dspool, b->budget / 16, NULL);
	if (rc == 0)    /* the names; offset 0: "" */
		rc = index_writer_begin(w, TAG(c, 'N', 'M'));
	if (rc == 0)
		rc = pool_put(t, "", 0, &at);
	if (rc == 0)
		rc = tree_pass(t, root_mtime);
	if (rc == 0)
		rc = pool_flush(t);
	if (rc == 0)
		rc = index_writer_end(w);
	h.pool_len = t->pool_len;
	if (rc == 0)
		rc = write_nodes(t, c, &h, &a);
	if (rc == 0)
		rc = write_dirs(t, c, &a, h.ndirs);
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'S', 'R'), sizes,
				      ((uint64_t)h.nsrc + h.nderived) * sizeof(*sizes));
	if (rc == 0)
		rc = write_sparse(b, w, c, &h, &a);
	if (rc == 0)
		rc = write_hardlinks(w, c, &h, &a);
	if (rc == 0 && b->checksums)
		rc = tarbuild_sums_write(b, w, c, a.sums, a.nsums, h.nnodes);
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'H', 'D'), &h, sizeof(h));
out:
	tree_free(t, &a);
	return rc;
}
