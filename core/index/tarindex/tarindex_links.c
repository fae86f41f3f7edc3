/*
 * tarindex_links.c - steps 2 and 3 of the tar index build (see
 * tarindex_build.c): nested tars renamed back to "P.tar" when their
 * directory clashes, and hard links resolved.  Both read the sorted
 * entries in passes and keep in memory only what the nested tars and the
 * links concern, never every member.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"
#include "search.h"

/* ------------------------------------------------------ nested renames */

static int byp_cmp(const void *pa, const void *pb, void *arg)
{
	const struct builder *b = arg;
	const struct nest *x = &b->nests[*(const uint32_t *)pa];
	const struct nest *y = &b->nests[*(const uint32_t *)pb];
	int r = strcmp(b->side.p + x->path, b->side.p + y->path);

	if (r)
		return r;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The first of byp[0 .. n) (nests by path) whose path is p[0 .. len), or NONE. */
static uint32_t find_path(const struct builder *b, const uint32_t *byp,
			  uint32_t n, const char *p, size_t len)
{
	/* the first path not below p[0 .. len) (a longer one is above) */
	uint32_t lo = SFS_PARTITION_POINT(uint32_t, 0, n, i,
				strncmp(b->side.p + b->nests[byp[i]].path, p, len) < 0);

	return lo < n && b->nests[byp[lo]].len == len &&
	       !strncmp(b->side.p + b->nests[byp[lo]].path, p, len) ? lo : NONE;
}

/*
 * Whether entry r came from a nested tar expanded at its prefix of len
 * bytes: it is one of those directories, or the walk of one of them (of
 * that exact path: several when the archive holds the same tar twice,
 * whose members merge) added it.  The walks around r have prefixes of
 * its path, so the length tells the path.
 */
static int brought(const struct builder *b, const struct entry_rec *r, size_t len)
{
	uint32_t i;

	if (r->nested && r->path_len == len)
		return 1;
	for (i = tarbuild_enclosing(b, r->seq); i != NONE; i = b->nests[i].up)
		if (b->nests[i].len == len)
			return 1;
	return 0;
}

/* Marks the nests of path byp[j] (and those after it of that path) clashing with r. */
static int mark_clash(struct builder *b, const uint32_t *byp, uint32_t n,
		      uint32_t j, const struct entry_rec *r)
{
	uint64_t at;
	int rc = tarbuild_arena_put(&b->side, NULL, r->s, r->path_len, &at);
	const char *p;

	if (rc < 0)
		return rc;
	p = b->side.p + b->nests[byp[j]].path;
	for (; j < n && !strcmp(b->side.p + b->nests[byp[j]].path, p); j++)
		b->nests[byp[j]].clash = at;
	return 0;
}

/*
 * One pass in path order: for every entry, each of its prefixes that is
 * a nested directory's path and did not bring it is a clash, the first
 * such entry the one named.
 */
static int find_clashes(struct builder *b, const uint32_t *byp)
{
	const struct entry_rec *r;
	int rc = spill_rewind(b->ents);

	while (rc == 0 && (rc = tarbuild_next(b->ents, &r)) > 0) {
		size_t k;

		rc = 0;
		for (k = 1; rc == 0 && k <= r->path_len; k++) {
			uint32_t j;

			if (k < r->path_len && r->s[k] != '/')
				continue;
			j = find_path(b, byp, b->nnests, r->s, k);
			if (j != NONE && !b->nests[byp[j]].clash && !brought(b, r, k))
				rc = mark_clash(b, byp, b->nnests, j, r);
		}
	}
	return rc;
}

/* The nest of nested directory entry seq (nests are in archive order). */
static uint32_t nest_at(const struct builder *b, uint32_t seq)
{
	uint32_t lo = tarbuild_nests_before(b, seq);

	return lo < b->nnests && b->nests[lo].seq == seq ? lo : NONE;
}

/*
 * The lengths of the renamed directories' paths around entry r (itself
 * included when it is one), increasing, in ins, and their suffixes in
 * sfx; how many.
 */
static uint32_t renamed_around(const struct builder *b, const struct entry_rec *r,
			       uint32_t *ins, const char **sfx)
{
	uint32_t chain[TARINDEX_MAX_NEST + 2], n = 0, k = 0, i;

	i = r->nested ? nest_at(b, r->seq) : NONE;
	if (i == NONE)
		i = tarbuild_enclosing(b, r->seq);
	for (; i != NONE && n < TARINDEX_MAX_NEST + 2; i = b->nests[i].up)
		chain[n++] = i;
	while (n--)
		if (b->nests[chain[n]].renamed) {
			sfx[k] = b->nests[chain[n]].sfx;
			ins[k++] = b->nests[chain[n]].len;
		}
	return k;
}

/* Puts the suffix sfx[k] (".tar", ".tar.gz"...) back after each of the n
 * lengths ins[k] in s (len bytes) into out. */
static size_t reinsert_tar(const char *s, size_t len, const uint32_t *ins,
			   const char *const *sfx, uint32_t n, char *out)
{
	uint32_t k, from = 0;
	size_t sl;
	char *w = out;

	for (k = 0; k < n; k++) {
		memcpy(w, s + from, ins[k] - from);
		w += ins[k] - from;
		sl = strlen(sfx[k]);
		memcpy(w, sfx[k], sl);
		w += sl;
		from = ins[k];
	}
	memcpy(w, s + from, len - from);
	w += len - from;
	*w = '\0';
	return (size_t)(w - out);
}

/* Links kept aside by archive position (they are in archive order). */
static int hlink_cmp(const void *pk, const void *pe)
{
	uint32_t k = *(const uint32_t *)pk, seq = ((const struct hlink *)pe)->seq;

	return (k > seq) - (k < seq);
}

#define RENAMED_MAX (2 * TAR_PATH_MAX + TAR_SUFFIX_MAX * (TARINDEX_MAX_NEST + 2) + 2)

/*
 * Entry r with ".tar" (".tar.gz"...) back after its renamed directories, added to s
 * (hard link targets inside those tars too, as they name their tar's
 * members; the link kept aside follows).
 */
static int rename_one(struct builder *b, struct spill *s, const struct entry_rec *r)
{
	static char path[RENAMED_MAX], link[RENAMED_MAX];
	const char *sfx[TARINDEX_MAX_NEST + 2];
	uint32_t ins[TARINDEX_MAX_NEST + 2], n = renamed_around(b, r, ins, sfx);
	const char *lk = r->s + r->path_len + 1;
	size_t plen, llen = r->link_len;
	struct hlink *h;
	int rc;

	if (!n)         /* as it is: its strings, NULs and 8 zero bytes */
		return spill_add(s, r, offsetof(struct entry_rec, s) + r->path_len +
				 r->link_len + 10);
	if (r->type == TAR_HARDLINK && !strncmp(lk, r->s, ins[n - 1]) && lk[ins[n - 1]] == '/') {
		llen = reinsert_tar(lk, llen, ins, sfx, n, link);
		lk = link;
	}
	plen = reinsert_tar(r->s, r->path_len, ins, sfx, n, path);
	memcpy(b->rec, r, offsetof(struct entry_rec, s));
	rc = spill_add(s, b->rec, tarbuild_entry_set(b->rec, path, plen, lk, llen));
	if (rc < 0 || r->type != TAR_HARDLINK)
		return rc;
	h = bsearch(&r->seq, b->links, b->nlinks, sizeof(*h), hlink_cmp);
	if (!h)
		return 0;
	rc = tarbuild_arena_put(&b->side, NULL, path, plen, &h->path);
	if (rc == 0)
		rc = tarbuild_arena_put(&b->side, NULL, lk, llen, &h->link);
	return rc;
}

/* Sorts the entries again with the renamed ones' new paths. */
static int apply_renames(struct builder *b)
{
	struct spill *s;
	const struct entry_rec *r;
	int rc = tarbuild_ents_open(b, &s);

	if (rc == 0)
		rc = spill_rewind(b->ents);
	while (rc == 0 && (rc = tarbuild_next(b->ents, &r)) > 0)
		rc = rename_one(b, s, r);
	if (rc < 0) {
		spill_close(s);
		return rc;
	}
	spill_close(b->ents);
	b->ents = s;
	return 0;
}

/*
 * Step 2: a nested tar "P.tar" expands to directory P unless the tree
 * has P, or something under it, from elsewhere (a file P, a directory P/,
 * the members of an "P/x" of the outer archive): then, so that nothing
 * hides the other, the tar's members go under "P.tar/" instead, warned
 * naming both.  The entries are sorted again after renaming.
 */
int tarbuild_rename_nested(struct builder *b)
{
	uint32_t *byp, i, nren = 0;
	int rc;

	if (!b->nnests)
		return 0;
	byp = malloc((size_t)b->nnests * sizeof(*byp));
	if (!byp)
		return -ENOMEM;
	for (i = 0; i < b->nnests; i++)
		byp[i] = i;
	qsort_r(byp, b->nnests, sizeof(*byp), byp_cmp, b);
	rc = find_clashes(b, byp);
	for (i = 0; rc == 0 && i < b->nnests; i++) {
		struct nest *n = &b->nests[byp[i]];
		const char *p = b->side.p + n->path;

		if (!n->clash)
			continue;
		sfs_warn("%s: nested tar '%s%s' would be directory '%s', which "
			 "member '%s' also uses: the tar's members are under '%s%s/'",
			 tarbuild_src_what(b, n->src), p, n->sfx, p,
			 b->side.p + n->clash, p, n->sfx);
		n->renamed = 1;
		nren++;
	}
	free(byp);
	return rc == 0 && nren ? apply_renames(b) : rc;
}

/* ---------------------------------------------------------- hard links */

/* What a hard link takes from its target: the one inode's type, data
 * (source, offset, size, sparse map) and mtime. */
struct link_data {
	uint64_t off, size;
	int64_t mtime;
	uint32_t src, sparse;
	uint8_t type;
};

/* An entry of a path some link names (or a link), as resolve needs it. */
struct link_entry {
	uint64_t path, link;    /* in tarbuild_links.ar */
	struct link_data d;     /* a link's: its target's, once resolved */
	uint32_t seq;
	uint8_t dropped;
};

static struct link_data data_of(const struct entry_rec *r)
{
	return (struct link_data){ .off = r->off, .size = r->size,
				   .mtime = r->mtime, .src = r->src,
				   .sparse = r->sparse, .type = r->type };
}

static void data_to(struct entry_rec *r, const struct link_data *d)
{
	r->off = d->off;
	r->size = d->size;
	r->mtime = d->mtime;
	r->src = d->src;
	r->sparse = d->sparse;
	r->type = d->type;
}

struct tarbuild_data {
	uint64_t off;
	uint32_t src;
};

struct tarbuild_links {
	struct tarbuild_arena ar;
	struct link_entry *e;         /* sorted by path, then seq */
	uint32_t n, cap;
	uint32_t *lk;           /* the links among them, in archive order */
	uint32_t nlk;
	struct tarbuild_data *data;   /* where resolved links share file data, sorted */
	uint32_t ndata;
};

static int str_cmp(const void *pa, const void *pb, void *arg)
{
	const char *p = arg;

	return strcmp(p + *(const uint64_t *)pa, p + *(const uint64_t *)pb);
}

static int in_set(const struct builder *b, const uint64_t *set, uint32_t n,
		  const char *path)
{
	uint32_t i = SFS_PARTITION_POINT(uint32_t, 0, n, m,
					 strcmp(b->side.p + set[m], path) < 0);

	return i < n && !strcmp(b->side.p + set[i], path);
}

static int keep_link_entry(struct tarbuild_links *L, const struct entry_rec *r)
{
	struct link_entry *e = tarbuild_slot((void **)&L->e, &L->cap, L->n, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	rc = tarbuild_entry_strings(&L->ar, r, &e->path, &e->link);
	if (rc < 0)
		return rc;
	e->d = data_of(r);
	e->seq = r->seq;
	L->n++;
	return 0;
}

/* One pass: the entries of the paths the links name and of the links. */
static int gather(struct builder *b, struct tarbuild_links *L)
{
	uint64_t *set = malloc(2 * (size_t)b->nlinks * sizeof(*set));
	const struct entry_rec *r;
	uint32_t i, n = 0;
	uint64_t at;
	int rc;

	if (!set)
		return -ENOMEM;
	for (i = 0; i < b->nlinks; i++) {
		set[n++] = b->links[i].path;
		set[n++] = b->links[i].link;
	}
	qsort_r(set, n, sizeof(*set), str_cmp, b->side.p);
	rc = tarbuild_arena_put(&L->ar, NULL, "", 0, &at);    /* offset 0: "" */
	if (rc == 0)
		rc = spill_rewind(b->ents);
	while (rc == 0 && (rc = tarbuild_next(b->ents, &r)) > 0)
		rc = in_set(b, set, n, r->s) ? keep_link_entry(L, r) : 0;
	free(set);
	return rc;
}

/*
 * Hard links skip the links of their target path that failed before
 * them: skip[j] is j for an entry not dropped, else the entry before it
 * of the same path (NONE at the first), followed with path halving, so N
 * failed links of one path cost N steps in all, not each.  A link is
 * dropped only when resolved, in archive order, so the entries before
 * one being resolved are settled.
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
static struct link_entry *ent_before(struct tarbuild_links *L, uint32_t *skip,
			       const char *path, uint32_t seq)
{
	const struct link_entry *e;
	int r;
	/* the first entry at or after (path, seq) */
	uint32_t lo = SFS_PARTITION_POINT(uint32_t, 0, L->n, i,
		(e = &L->e[i], r = tarbuild_pathcmp(L->ar.p + e->path, path)) < 0 ||
		(r == 0 && e->seq < seq));

	if (!lo || strcmp(L->ar.p + L->e[lo - 1].path, path))
		return NULL;
	lo = alive_at_or_before(skip, lo - 1);
	return lo == NONE ? NULL : &L->e[lo];
}

static int seq_cmp(const void *pa, const void *pb, void *arg)
{
	const struct link_entry *e = arg;
	uint32_t x = e[*(const uint32_t *)pa].seq, y = e[*(const uint32_t *)pb].seq;

	return x < y ? -1 : x > y;
}

/* Why link e cannot be resolved to t, or NULL. */
static const char *link_fails(const struct tarbuild_links *L, const struct link_entry *e,
			      const struct link_entry *t)
{
	if (!t)
		return "no such file before it in the archive";
	if (t->d.type != TAR_FILE && t->d.type != TAR_SYMLINK)
		return "the target is a directory";
	if (t->d.type == TAR_SYMLINK &&
	    !tarbuild_symlink_inside("", L->ar.p + e->path, L->ar.p + t->link))
		return "the target is a symlink that leaves the mount from here";
	return NULL;
}

/*
 * Each link becomes what its target path held where the link appears (as
 * tar -x makes it: link(2) to the file there then).  Links are resolved
 * in archive order, so a link to a link finds it resolved.
 */
static int resolve(const struct builder *b, struct tarbuild_links *L)
{
	uint32_t *skip = malloc(((size_t)L->n + 1) * sizeof(*skip)), i;

	L->lk = malloc(((size_t)L->n + 1) * sizeof(*L->lk));
	if (!skip || !L->lk) {
		free(skip);
		return -ENOMEM;
	}
	for (i = 0; i < L->n; i++) {
		skip[i] = i;
		if (L->e[i].d.type == TAR_HARDLINK)
			L->lk[L->nlk++] = i;
	}
	qsort_r(L->lk, L->nlk, sizeof(*L->lk), seq_cmp, L->e);
	for (i = 0; i < L->nlk; i++) {
		uint32_t j = L->lk[i];
		struct link_entry *e = &L->e[j];
		const struct link_entry *t = ent_before(L, skip, L->ar.p + e->link, e->seq);
		const char *why = link_fails(L, e, t);

		if (why) {
			/* names cut: a pax global header gives every link a
			 * 4 KB path for a 512-byte header */
			sfs_warn("%s: hard link '%.200s' -> '%.200s': %s: skipped",
				 tarbuild_src_what(b, e->d.src), L->ar.p + e->path,
				 L->ar.p + e->link, why);
			e->dropped = 1;
			skip[j] = j && !strcmp(L->ar.p + e->path,
				L->ar.p + L->e[j - 1].path) ? j - 1 : NONE;
			continue;
		}
		e->d = t->d;	/* one inode: one mtime too, the target's */
		e->link = t->link;
	}
	free(skip);
	return 0;
}

static int data_cmp(const void *pa, const void *pb)
{
	const struct tarbuild_data *x = pa, *y = pb;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return (x->off > y->off) - (x->off < y->off);
}

/* Where the resolved links share file data, sorted, for step 5. */
static int shared_data(struct tarbuild_links *L)
{
	uint32_t i;

	L->data = malloc(((size_t)L->nlk + 1) * sizeof(*L->data));
	if (!L->data)
		return -ENOMEM;
	for (i = 0; i < L->nlk; i++) {
		const struct link_entry *e = &L->e[L->lk[i]];

		if (!e->dropped && e->d.type == TAR_FILE)
			L->data[L->ndata++] = (struct tarbuild_data){ e->d.off, e->d.src };
	}
	qsort(L->data, L->ndata, sizeof(*L->data), data_cmp);
	return 0;
}

/*
 * Step 3: the hard links, resolved in memory among the entries of the
 * paths they name (gathered in one pass), for the last pass to look up.
 */
int tarbuild_resolve_links(struct builder *b)
{
	struct tarbuild_links *L;
	int rc;

	if (!b->nlinks)
		return 0;
	L = calloc(1, sizeof(*L));
	if (!L)
		return -ENOMEM;
	b->res = L;
	rc = gather(b, L);
	if (rc == 0)
		rc = resolve(b, L);
	if (rc == 0)
		rc = shared_data(L);
	return rc;
}

int tarbuild_link_of(const struct builder *b, const struct entry_rec *r, struct entry_rec *out,
	       const char **link)
{
	const struct tarbuild_links *L = b->res;
	uint32_t lo = SFS_PARTITION_POINT(uint32_t, 0, L ? L->nlk : 0, i,
					  L->e[L->lk[i]].seq < r->seq);
	const struct link_entry *e;

	if (!L || lo == L->nlk || L->e[L->lk[lo]].seq != r->seq)
		return 0;
	e = &L->e[L->lk[lo]];
	if (e->dropped)
		return 0;
	memcpy(out, r, offsetof(struct entry_rec, s));
	data_to(out, &e->d);
	*link = L->ar.p + e->link;
	return 1;
}

int tarbuild_link_data(const struct builder *b, uint32_t src, uint64_t off)
{
	const struct tarbuild_links *L = b->res;
	struct tarbuild_data key = { off, src };

	return L && L->ndata &&
	       bsearch(&key, L->data, L->ndata, sizeof(key), data_cmp) != NULL;
}

void tarbuild_links_free(struct builder *b)
{
	struct tarbuild_links *L = b->res;

	if (!L)
		return;
	free(L->ar.p);
	free(L->e);
	free(L->lk);
	free(L->data);
	free(L);
	b->res = NULL;
}
