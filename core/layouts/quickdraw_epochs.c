/*
 * quickdraw_epochs.c - /epochs/<e> of the Quick, Draw! tree
 * (quickdraw_epochs.h): the epochs' permutations (epochs.h's views), the
 * names and inodes under /epochs, and the shards' bytes (vtar.h over the
 * sample files of quickdraw_read.c).
 */
#include "layouts/quickdraw_epochs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mt19937.h"
#include "formats/vtar.h"
#include "layouts/epochs.h"
#include "log.h"

enum { K_EPOCH = QD_K_EPOCH, K_SHARDS, K_VTAR /* + split: 3 of them */ };
#define K_BITS 25
#define K_MAX (UINT64_C(1) << K_BITS)	/* shards a split, at most */
#define NSPLITS 3

static const char *const split_name[NSPLITS] = { "train", "val", "test" };

struct qd_epochs {
	struct epochs cache;
	const struct qd *q;
	uint64_t S, first[NSPLITS], nshards[NSPLITS];
	uint32_t seed;
	/* a sample's members: the first data one and the second (or NULL),
	 * and the bytes of its record, the same for every sample */
	const char *ext, *ext2;
	uint64_t size, size2, rec;
	/* per slot: each split's permutation of its splits/ lines, split
	 * after split (index first[s] + p) */
	uint32_t *ord[EPOCH_SLOTS];
};

/* ---- the views: one permutation a split --------------------------------- */

static int make(void *arg, unsigned slot, uint32_t e)
{
	struct qd_epochs *E = arg;
	uint64_t total = E->q->hd->total, i;
	uint32_t key[2] = { E->seed, e };
	struct mt19937 mt;
	int s;

	E->ord[slot] = malloc(total * sizeof(uint32_t) + 1);
	if (!E->ord[slot])
		return -ENOMEM;
	for (s = 0; s < NSPLITS; s++) {
		uint32_t *ord = E->ord[slot] + E->first[s];

		for (i = 0; i < E->q->hd->nsplit[s]; i++)
			ord[i] = (uint32_t)i;
		mt19937_seed_array(&mt, key, 2);
		mt19937_shuffle_u32(&mt, ord, E->q->hd->nsplit[s]);
	}
	return 0;
}

static void drop(void *arg, unsigned slot, int live)
{
	struct qd_epochs *E = arg;

	(void)live;	/* nothing reads a view past its holder */
	free(E->ord[slot]);
	E->ord[slot] = NULL;
}

static const struct epoch_ops ops = { make, drop };

int qd_epochs_open(struct qd *q, const struct sfs_opts *o)
{
	const struct qd_head *hd = q->hd;
	struct qd_epochs *E;
	struct vtar_entry one = { .stem = "000000", .stem_len = 6 };
	uint64_t first = 0;
	int s;

	if (hd->total > UINT32_MAX)
		return 0;	/* the permutations are u32 (as splits/ is) */
	E = calloc(1, sizeof(*E));
	if (!E)
		return -ENOMEM;
	E->q = q;
	E->S = o->shard_size ? o->shard_size : 10000;
	E->seed = o->has_shard_seed ? o->shard_seed : 0;
	for (s = 0; s < NSPLITS; s++) {
		E->first[s] = first;
		first += hd->nsplit[s];
		E->nshards[s] = (hd->nsplit[s] + E->S - 1) / E->S;
		if (E->nshards[s] > K_MAX) {
			sfs_warn("%s: no /epochs: %s has %llu shards, more than %llu "
				 "(a larger shard_size= gives fewer)", o->source, split_name[s],
				 (unsigned long long)E->nshards[s], (unsigned long long)K_MAX);
			free(E);
			return 0;
		}
	}
	E->ext = hd->has_images ? ".npy" : ".strokes.npy";
	E->size = hd->has_images ? q->img_size : q->stk_size;
	E->ext2 = hd->has_images && hd->has_strokes ? ".strokes.npy" : NULL;
	E->size2 = E->ext2 ? q->stk_size : 0;
	/* every name fits ustar's 100 bytes: one record size for all */
	one.ext = E->ext, one.ext2 = E->ext2, one.size = E->size, one.size2 = E->size2;
	E->rec = vtar_entry_size(&one);
	epochs_init(&E->cache, &ops, E);
	q->epochs = E;
	return 0;
}

void qd_epochs_close(struct qd *q)
{
	if (!q->epochs)
		return;
	epochs_destroy(&q->epochs->cache);
	free(q->epochs);
	q->epochs = NULL;
}

/* ---- names and inodes --------------------------------------------------- */

int qd_epochs_owns(uint64_t ino)
{
	uint32_t k = SFS_INO_KIND(ino);

	return ino == QD_INO_EPOCHS || (k >= K_EPOCH && k < K_VTAR + NSPLITS);
}

/* epoch e of an /epochs inode, and for a shard its split and k (s -1:
 * a directory); -ENOENT when it is none */
static int decode(const struct qd_epochs *E, uint64_t ino, uint64_t *e, int *s,
		  uint64_t *k)
{
	uint32_t kind = SFS_INO_KIND(ino);

	*e = SFS_INO_IDX(ino), *s = -1, *k = 0;
	if (kind >= K_VTAR) {
		*s = (int)(kind - K_VTAR);
		*k = *e & (K_MAX - 1);
		*e >>= K_BITS;
		if (*k >= E->nshards[*s])
			return -ENOENT;
	}
	return *e > EPOCH_MAX ? -ENOENT : 0;
}

static uint64_t shard_len(const struct qd_epochs *E, int s, uint64_t k)
{
	uint64_t n = E->q->hd->nsplit[s] - k * E->S;

	return n < E->S ? n : E->S;
}

int qd_epochs_getattr(const struct qd *q, uint64_t ino, struct sfs_attr *a)
{
	const struct qd_epochs *E = q->epochs;
	int64_t t = q->scan.root_mtime;
	uint64_t e, k;
	int s;

	if (!E)
		return -ENOENT;
	if (ino == QD_INO_EPOCHS) {	/* lists none of its epochs */
		attr_dir(a, ino, 0, t);
		return 0;
	}
	if (decode(E, ino, &e, &s, &k))
		return -ENOENT;
	if (s < 0)
		attr_dir(a, ino, SFS_INO_KIND(ino) == K_EPOCH, t);
	else
		attr_file(a, ino, vtar_archive_size(shard_len(E, s, k) * E->rec), t);
	return 0;
}

/* child i of an epoch directory: "shards", or the shards split by split */
static int child(const struct qd_epochs *E, uint64_t dir, uint64_t i, char *name,
		 size_t len, uint64_t *ino)
{
	uint64_t e = SFS_INO_IDX(dir);
	int s;

	if (SFS_INO_KIND(dir) == K_EPOCH) {
		if (i)
			return -ENOENT;
		snprintf(name, len, "shards");
		*ino = SFS_INO(K_SHARDS, e);
		return 0;
	}
	for (s = 0; s < NSPLITS; i -= E->nshards[s], s++)
		if (i < E->nshards[s]) {
			snprintf(name, len, "%s-%06llu.tar", split_name[s], (unsigned long long)i);
			*ino = SFS_INO(K_VTAR + (uint32_t)s, e << K_BITS | i);
			return 0;
		}
	return -ENOENT;
}

int qd_epochs_lookup(const struct qd *q, uint64_t parent, const char *name,
		     struct sfs_attr *a)
{
	const struct qd_epochs *E = q->epochs;
	uint64_t e, k;
	uint32_t e32;
	int s, rc = qd_epochs_getattr(q, parent, a);

	if (rc)
		return rc;
	if (!S_ISDIR(a->mode))
		return -ENOTDIR;
	if (parent == QD_INO_EPOCHS)
		return epochs_parse(name, &e32) ? -ENOENT :
			qd_epochs_getattr(q, SFS_INO(K_EPOCH, e32), a);
	e = SFS_INO_IDX(parent);
	if (SFS_INO_KIND(parent) == K_EPOCH)
		return strcmp(name, "shards") ? -ENOENT : qd_epochs_getattr(q, SFS_INO(K_SHARDS, e), a);
	for (s = 0; s < NSPLITS; s++)
		if (!epochs_parse_shard(name, split_name[s], &k) && k < E->nshards[s])
			return qd_epochs_getattr(q, SFS_INO(K_VTAR + (uint32_t)s, e << K_BITS | k), a);
	return -ENOENT;
}

int qd_epochs_readdir(const struct qd *q, uint64_t dir, uint64_t off, sfs_fill_fn fill,
		      void *arg)
{
	struct sfs_attr a;
	uint64_t ino, i;
	char name[64];
	int rc = qd_epochs_getattr(q, dir, &a);

	if (rc)
		return rc;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	if (dir == QD_INO_EPOCHS)
		return 0;
	for (i = off; child(q->epochs, dir, i, name, sizeof(name), &ino) == 0; i++) {
		if ((rc = qd_epochs_getattr(q, ino, &a)))
			return rc;
		if (fill(arg, name, &a, i + 1))
			break;
	}
	return 0;
}

/* ---- the shards' bytes -------------------------------------------------- */

/* what the vtar callbacks are given: shard positions [first, first + n)
 * of split s in an epoch's permutation ord */
struct qvt {
	const struct qd_epochs *E;
	const uint32_t *ord;
	int s;
	uint64_t first, n;
	char stem[24];
};

/* the gidx at shard index i, or -EIO for an index that says otherwise */
static int gidx_of(const struct qvt *v, uint64_t i, uint64_t *g)
{
	const struct qd *q = v->E->q;
	uint64_t line = v->ord[v->E->first[v->s] + v->first + i];

	*g = q->perm[v->E->first[v->s] + line];
	return *g < q->hd->total ? 0 : -EIO;
}

static int qvt_entry(void *arg, uint64_t i, struct vtar_entry *e)
{
	struct qvt *v = arg;
	const struct qd *q = v->E->q;
	uint64_t g;
	int rc = gidx_of(v, i, &g);

	if (rc)
		return rc;
	e->stem_len = (size_t)snprintf(v->stem, sizeof(v->stem), "%06llu", (unsigned long long)g);
	e->stem = v->stem;
	qd_class_of(q->cls, q->hd->nclass, g, &e->label);
	e->ext = v->E->ext, e->size = v->E->size;
	e->ext2 = v->E->ext2, e->size2 = v->E->size2;
	return 0;
}

static int qvt_offset(void *arg, uint64_t i, uint64_t *off)
{
	const struct qvt *v = arg;

	*off = i * v->E->rec;
	return 0;
}

static int qvt_find(void *arg, uint64_t off, uint64_t *i, uint64_t *start)
{
	const struct qvt *v = arg;

	*i = off / v->E->rec;
	if (*i >= v->n)
		*i = v->n - 1;
	*start = *i * v->E->rec;
	return 0;
}

static ssize_t qvt_pread(void *arg, uint64_t i, unsigned part, void *buf, size_t len,
			 uint64_t off)
{
	const struct qvt *v = arg;
	const struct qd *q = v->E->q;
	uint64_t g;
	int rc = gidx_of(v, i, &g);

	if (rc)
		return rc;
	if (part == 0 && q->hd->has_images)
		return qd_read_image(q, g, buf, len, off);
	return qd_read_stroke(q, g, buf, len, off);
}

ssize_t qd_epochs_read(const struct qd *q, uint64_t ino, char *buf, size_t size,
		       uint64_t off)
{
	struct qd_epochs *E = q->epochs;
	struct vtar_shard vs;
	struct qvt v;
	unsigned slot;
	uint64_t e, k;
	ssize_t r;
	int s, rc;

	if (!E || decode(E, ino, &e, &s, &k))
		return -ENOENT;
	if (s < 0)
		return -EISDIR;
	if ((rc = epochs_get(&E->cache, (uint32_t)e, &slot)))
		return rc;
	v = (struct qvt){ E, E->ord[slot], s, k * E->S, shard_len(E, s, k), "" };
	vs = (struct vtar_shard){ v.n, q->scan.root_mtime, &v, qvt_entry, qvt_offset,
				  qvt_pread, qvt_find, NULL, NULL };
	r = vtar_read(&vs, buf, size, off);
	epochs_put(&E->cache, slot);
	return r;
}
