/*
 * tarindex_escape.c - which symlinks of a mapped tar index lead out of
 * the mount (tarindex_escaping_links, tarindex.h): every link's target
 * walked as path lookup would, each once for the whole tree.
 *
 * Not for: building the index, lookups, reads (tarindex.c).
 */
#include "index/tarindex/tarindex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "index/tarindex/tarindex_int.h"

#define LINK_HOPS_MAX 40	/* the kernel's limit on links in one walk */

/*
 * Following symlinks as path lookup does, each link's target walked once
 * for the whole tree: a link met on the way is followed from its own
 * directory, as it would be on its own, and what that came to is kept
 * for every other walk that meets it.  That is exact: following a link
 * goes the same way wherever the walk comes from, and a walk that has
 * followed H links fails where following this one would take it past
 * LINK_HOPS_MAX, i.e. iff H + its hops > LINK_HOPS_MAX.  A link met while
 * it is being followed goes round for ever (ELOOP, as over 40 links).
 * So the work is the targets' length, not 40 x 2048 components per link,
 * and the links being followed are a stack on the heap, not recursion.
 */
struct link_outcome {
	uint32_t end;       /* where it led, when r is 0 */
	int8_t r;           /* 1: above the root; 0: ended at end; -1: nowhere */
	uint8_t hops;       /* links followed, itself included (at most
			     * LINK_HOPS_MAX + 1: too many, or a loop) */
	uint8_t state;      /* 0: not yet followed; 1: being followed; 2: known */
};

/* A link being followed: number k among the links, the walk of its
 * target at byte `at` in directory `cur`, links followed so far, and the
 * link it waits for (NONE). */
struct link_frame {
	uint64_t at;
	uint32_t k, cur, hops, wait;
};

struct link_walk {
	const struct tarindex *t;
	uint32_t *links;                /* the symlink nodes, increasing */
	uint32_t *same;                 /* by link number: the first link of
					 * its directory with its target */
	uint32_t nlinks, depth;
	struct link_outcome *o;         /* by link number */
	struct link_frame *st;          /* each link on it once at most */
};

/* The link followed for symlink node `node`: the first of its set. */
static uint32_t link_number(const struct link_walk *w, uint32_t node)
{
	return w->same[tarindex_count_below(w->links, w->nlinks, node)];
}

static void follow(struct link_walk *w, uint32_t k, uint32_t dir)
{
	w->st[w->depth++] = (struct link_frame){ 0, k, dir, 1, NONE };
	w->o[k].state = 1;
}

/* The top link's walk came to r (at node end): known from now on. */
static void settle(struct link_walk *w, int r, uint32_t end)
{
	const struct link_frame *f = &w->st[--w->depth];

	w->o[f->k] = (struct link_outcome){ end, (int8_t)r,
		(uint8_t)(f->hops > LINK_HOPS_MAX ? LINK_HOPS_MAX + 1 : f->hops), 2 };
}

#define GO_ON 2  /* from take and step: the top link's walk goes on */

/*
 * The top link met link j, now known or being followed (a loop): GO_ON,
 * or what the top link's walk came to (as walk_link).
 */
static int take(struct link_walk *w, uint32_t j)
{
	struct link_frame *f = &w->st[w->depth - 1];
	const struct link_outcome *o = &w->o[j];

	f->hops += o->state == 2 ? o->hops : LINK_HOPS_MAX + 1;
	if (f->hops > LINK_HOPS_MAX)
		return -1;
	if (o->r)
		return o->r;
	f->cur = o->end;
	return GO_ON;
}

/*
 * One component of the top link's target (".", "..", a name), or the
 * outcome of the link it waited for: GO_ON, or what its walk came to
 * (1: above the root; 0: ended at *end; -1: nowhere).
 */
static int step(struct link_walk *w, uint32_t *end)
{
	const struct tarindex *t = w->t;
	struct link_frame *f = &w->st[w->depth - 1];
	uint64_t len = 0;
	const char *path = tarindex_link(t, w->links[f->k], &len);
	char comp[256];
	size_t a = f->at, b, n;
	uint32_t j;
	int64_t c;

	if (f->wait != NONE) {
		j = f->wait;
		f->wait = NONE;
		return take(w, j);
	}
	if (a == 0 && len && path[0] == '/')
		return 1;
	while (a < len && path[a] == '/')
		a++;
	*end = f->cur;
	if (a >= len)
		return 0;
	for (b = a; b < len && path[b] != '/'; b++)
		;
	f->at = b;
	n = b - a;
	if (n == 1 && path[a] == '.')
		return GO_ON;
	if (tarindex_node_type(&t->nodes[f->cur]) != TARINDEX_DIR)
		return -1;
	if (n == 2 && path[a] == '.' && path[a + 1] == '.') {
		if (f->cur == TARINDEX_ROOT)
			return 1;
		f->cur = tarindex_parent(t, f->cur);
		return GO_ON;
	}
	if (n >= sizeof(comp))
		return -1;
	memcpy(comp, path + a, n);
	comp[n] = '\0';
	if ((c = tarindex_lookup(t, f->cur, comp)) < 0)
		return -1;
	if (tarindex_node_type(&t->nodes[c]) != TARINDEX_SYMLINK) {
		f->cur = (uint32_t)c;
		return GO_ON;
	}
	/* followed from its own directory, f->cur */
	j = link_number(w, (uint32_t)c);
	if (w->o[j].state != 0)
		return take(w, j);
	f->wait = j;
	follow(w, j, f->cur);
	return GO_ON;
}

/* A link's directory and target, and its number (for sorting). */
struct link_key {
	uint64_t target;
	uint32_t dir, k;
};

static int link_key_cmp(const void *pa, const void *pb)
{
	const struct link_key *x = pa, *y = pb;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/*
 * Links of one directory with one target go the same way: w->same names
 * the first of each such set, followed for all.  Targets are compared by
 * their place in the pool, where the build stores equal ones once
 * (pool_put_target); an index that does not only follows more.
 */
static int same_links(struct link_walk *w)
{
	struct link_key *key = malloc((size_t)w->nlinks * sizeof(*key));
	uint32_t k;

	if (!key)
		return -ENOMEM;
	for (k = 0; k < w->nlinks; k++)
		key[k] = (struct link_key){ w->t->nodes[w->links[k]].off,
					    tarindex_parent(w->t, w->links[k]), k };
	qsort(key, w->nlinks, sizeof(*key), link_key_cmp);
	for (k = 0; k < w->nlinks; k++)
		w->same[key[k].k] = k && key[k].dir == key[k - 1].dir &&
			key[k].target == key[k - 1].target ? w->same[key[k - 1].k] : key[k].k;
	free(key);
	return 0;
}

int tarindex_escaping_links(const struct tarindex *t, uint32_t **out,
			    uint32_t *nout)
{
	struct link_walk w = { .t = t };
	uint32_t i, k, n = 0;
	int rc = -ENOMEM;

	*out = NULL;
	*nout = 0;
	if (!t->nsymlinks)	/* the usual case: no node is read */
		return 0;
	/* every node is read to find the links: checked first (a damaged
	 * block fails the mount, said) */
	if ((rc = index_map_check(t->map, t->nodes,
				  (uint64_t)t->nnodes * sizeof(*t->nodes))) < 0)
		return rc;
	for (i = 0; i < t->nnodes; i++)
		w.nlinks += tarindex_node_type(&t->nodes[i]) == TARINDEX_SYMLINK;
	if (!w.nlinks)
		return 0;
	w.links = malloc((size_t)w.nlinks * sizeof(*w.links));
	w.same = malloc((size_t)w.nlinks * sizeof(*w.same));
	w.o = calloc(w.nlinks, sizeof(*w.o));
	w.st = malloc((size_t)w.nlinks * sizeof(*w.st));
	if (!w.links || !w.same || !w.o || !w.st)
		goto out;
	for (i = 0, k = 0; i < t->nnodes; i++)
		if (tarindex_node_type(&t->nodes[i]) == TARINDEX_SYMLINK)
			w.links[k++] = i;
	if (same_links(&w) < 0)
		goto out;
	for (k = 0; k < w.nlinks; k++) {
		uint32_t j = w.same[k];

		if (w.o[j].state == 0)
			follow(&w, j, tarindex_parent(t, w.links[j]));
		while (w.depth) {
			uint32_t end = 0;
			int r = step(&w, &end);

			if (r != GO_ON)
				settle(&w, r, end);
		}
		n += w.o[j].r == 1;
	}
	rc = 0;
	if (n && !(*out = malloc((size_t)n * sizeof(**out))))
		rc = -ENOMEM;
	for (k = 0; rc == 0 && k < w.nlinks; k++)
		if (w.o[w.same[k]].r == 1)
			(*out)[(*nout)++] = w.links[k];
out:
	free(w.links);
	free(w.same);
	free(w.o);
	free(w.st);
	return rc;
}
