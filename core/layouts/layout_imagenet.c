/*
 * layout_imagenet.c - `-o layout=imagenet`: ILSVRC2012 as ImageFolder trees
 * and WebDataset shards, straight out of the release tars.
 *
 * SOURCE (see layout_imagenet.h for detection) holds the train tar of class
 * tars (or train/<wnid>.tar), the val tar and, optionally, the devkit; or
 * it is Kaggle's zip of the same images (imagenet_files.h), whose label
 * files take the devkit's place.
 *   /classes.txt                       "<label>\t<wnid>\t<words>\n"
 *   /train/<wnid>/<member>             bytes of the tar member
 *   /val/<wnid>/ILSVRC2012_val_*.JPEG  (flat /val/<member> without labels)
 *   /shards/<split>/<k>/<label>.<member>  a hard link to the file in /<split>
 *   /shards/<split>-<k:06d>.tar        the same shard as a WebDataset tar
 *   /shuffled/<split>.txt              "<k>/<label>.<member>\n" per sample
 *   /epochs/<e>/shards/<split>-<k:06d>.tar, /epochs/<e>/shuffled/<split>.txt
 *                                      the same, in epoch e's own shuffle
 * Labels are indices into the sorted WNIDs (the devkit's leaf classes, or
 * without it the train class directories).  A split's samples in
 * ImageFolder order (class, then name) are its "canonical" order; shard k
 * holds positions [k*S, (k+1)*S) of the shard order, which is the order of
 * the source tar, or np.random.seed(shard_seed); np.random.shuffle(arange(n))
 * of the canonical order with -o shard_seed.  shuffled/<split>.txt lists the
 * canonical samples in np.random.seed(shuffle_seed) shuffle order.  Shards
 * and shuffled files exist only for labelled splits.  /epochs/<e> (any e
 * below 2^31, written without leading zeros; /epochs lists none) holds
 * shards and a shuffled file whose order is np.random.seed([seed, e]);
 * np.random.shuffle(arange(n)) (seed: shard_seed, or 0), served from
 * per-epoch views (imagenet_epochs.h) by the code that serves /shards.
 *
 * Every node is computed from the two mmap'ed indexes (imagenet_index.h)
 * and the orders, used in place: nothing is allocated per sample.  The
 * orders (ord: shard position -> sample, pos its inverse, shuf the
 * shuffled.txt order) are three flat u32 arrays made once, when /shards or
 * /shuffled is first touched (so a remount and the ImageFolder trees do not
 * wait for them).
 *
 * Inodes (layout.h's scheme): 1..10 are the fixed files and directories
 * (kind 0); the rest are SFS_INO(kind, index), kind saying what (class
 * dir, file, shard dir, vtar) and of which split.
 * The /epochs inodes are kinds 11 and up, their index the epoch (and for
 * a shard e << 25 | k): nothing is allocated per epoch.  A labelled split's
 * sample has one inode and two names, /<split>/<wnid>/<member> and its
 * shard file (nlink 2): `du` counts it once, and a walk of the whole tree
 * makes one kernel inode per sample, not two.
 *
 * Threads: after layout_imagenet_open everything in struct in_layout is
 * read-only, but for the orders, made once under orders_lock (see
 * need_orders); reads are source_preads on shared sources.
 *
 * Not for: finding the sources (imagenet_files.c), building or binding
 * the indexes (imagenet_tars.c, imagenet_build.c, imagenet_index.c), the
 * shards' and shuffled files' bytes (imagenet_shards.c), the epochs'
 * views (imagenet_epochs.c), decoding images, other datasets.
 */
#include "layouts/layout.h"
#include "layouts/layout_imagenet.h"
#include "layouts/imagenet_ahead.h"
#include "layouts/imagenet_build.h"
#include "layouts/imagenet_epochs.h"
#include "layouts/imagenet_files.h"
#include "layouts/imagenet_index.h"
#include "layouts/imagenet_orders.h"
#include "layouts/imagenet_samples.h"
#include "layouts/imagenet_shards.h"
#include "layouts/imagenet_tars.h"
#include "log.h"
#include "index/tarindex/tarindex.h"
#include "search.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_ 512	/* "<label>.<member>": member names are <= 255 */

/* fixed inodes */
enum {
	INO_CLASSES = 2, INO_SPLIT = 3 /* + split */, INO_SHARDS = 5,
	INO_SHUFFLED = 6, INO_SHARDS_SPLIT = 7 /* + split */,
	INO_SHUF_TXT = 9 /* + split */, INO_EPOCHS = 11,
};
/* computed inodes: SFS_INO(kind + split, index) */
enum { K_CLASSDIR = 1, K_FILE = 3, K_SHARDDIR = 5, K_VTAR = 9 };	/* 7: unused */
/* under /epochs/<e>: SFS_INO(kind [+ split], e), and for a shard
 * SFS_INO(K_EPOCH_VTAR + split, e << EPOCH_K_BITS | k): 31 + 25 bits */
enum { K_EPOCH = 11, K_EPOCH_SHARDS = 12, K_EPOCH_SHUFFLED = 13, K_EPOCH_TXT = 14,
       K_EPOCH_VTAR = 16 };
#define EPOCH_K_BITS 25
#define EPOCH_K_MAX (UINT64_C(1) << EPOCH_K_BITS)	/* shards a split, at most */
#define INO(kind, idx) SFS_INO(kind, idx)
#define KIND(ino) SFS_INO_KIND(ino)
#define IDX(ino) SFS_INO_IDX(ino)

/* ---- the tree ---------------------------------------------------------- */

static int labelled(const struct in_layout *L, int s)
{
	return (int)L->sp[s].h.labelled;
}

static int any_labelled(const struct in_layout *L)
{
	return labelled(L, TRAIN) || labelled(L, VAL);
}

/* split of a computed inode of kind base (train) or base + 1 (val), or -1 */
static int split_of(uint64_t ino, uint32_t base)
{
	uint32_t k = KIND(ino);

	return k == base || k == base + 1 ? (int)(k - base) : -1;
}

/* split of a fixed inode base (train) or base + 1 (val), or -1 */
static int fixed_split(uint64_t ino, uint64_t base)
{
	return ino == base || ino == base + 1 ? (int)(ino - base) : -1;
}

static void dir_attr(const struct in_layout *L, uint64_t ino, uint64_t subdirs,
		     struct sfs_attr *a)
{
	*a = (struct sfs_attr){ ino, 0040555, (uint32_t)(2 + subdirs), 0, L->mtime, 0 };
}

static void file_attr(int64_t mtime, uint64_t ino, uint64_t size, struct sfs_attr *a)
{
	*a = (struct sfs_attr){ ino, 0100444, 1, size, mtime, 0 };
}

/* a sample; in a labelled split it is also linked from its shard */
static void sample_attr(const struct in_split *sp, uint64_t c, uint64_t ino,
			struct sfs_attr *a)
{
	const struct tarindex_node *n = tarindex_node(&sp->t, in_split_node(sp, c));

	file_attr(n->mtime, ino, tarindex_node_size(n), a);
	a->nlink = sp->h.labelled ? 2 : 1;
}

static int epoch_attr(const struct in_layout *L, uint64_t ino, struct sfs_attr *a);

static int fixed_attr(const struct in_layout *L, uint64_t ino, struct sfs_attr *a)
{
	int s, n = 0;

	switch (ino) {
	case SFS_ROOT_INO:
		n = L->sp[TRAIN].h.present + L->sp[VAL].h.present + 2 * any_labelled(L) +
		    (L->epochs != NULL);
		dir_attr(L, ino, (uint64_t)n, a);
		return 0;
	case INO_CLASSES:
		file_attr(L->mtime, ino, L->classes_len, a);
		return 0;
	case INO_SHARDS:
	case INO_SHUFFLED:
		if (!any_labelled(L))
			return -ENOENT;
		n = ino == INO_SHARDS ? labelled(L, TRAIN) + labelled(L, VAL) : 0;
		dir_attr(L, ino, (uint64_t)n, a);
		return 0;
	case INO_EPOCHS:	/* lists none of its epochs: see epochs_child */
		if (!L->epochs)
			return -ENOENT;
		dir_attr(L, ino, 0, a);
		return 0;
	}
	s = (int)(ino & 1) ^ 1;	/* 3, 7, 9 are train; 4, 8, 10 are val */
	if (ino == INO_SPLIT + (uint64_t)s && L->sp[s].h.present) {
		dir_attr(L, ino, labelled(L, s) ? L->sp[s].ncls : 0, a);
		return 0;
	}
	if (ino == INO_SHARDS_SPLIT + (uint64_t)s && labelled(L, s)) {
		dir_attr(L, ino, L->sp[s].h.nshards, a);
		return 0;
	}
	if (ino == INO_SHUF_TXT + (uint64_t)s && labelled(L, s)) {
		file_attr(L->mtime, ino, L->sp[s].h.txt_size, a);
		return 0;
	}
	return -ENOENT;
}

static int attr_of(const struct in_layout *L, uint64_t ino, struct sfs_attr *a)
{
	uint64_t i = IDX(ino);
	int s;

	if (KIND(ino) == 0)
		return fixed_attr(L, ino, a);
	if ((s = split_of(ino, K_CLASSDIR)) >= 0 && labelled(L, s) && i < L->sp[s].ncls) {
		dir_attr(L, ino, 0, a);
		return 0;
	}
	if ((s = split_of(ino, K_FILE)) >= 0 && i < L->sp[s].h.n) {
		sample_attr(&L->sp[s], i, ino, a);
		return 0;
	}
	if ((s = split_of(ino, K_SHARDDIR)) >= 0 && labelled(L, s) && i < L->sp[s].h.nshards) {
		dir_attr(L, ino, 0, a);
		return 0;
	}
	if ((s = split_of(ino, K_VTAR)) >= 0 && labelled(L, s) && i < L->sp[s].h.nshards) {
		file_attr(L->mtime, ino, 0, a);
		return imagenet_shard_size(L, &L->sp[s], i, &a->size);
	}
	if (KIND(ino) >= K_EPOCH)
		return epoch_attr(L, ino, a);
	return -ENOENT;
}

/* ---- /epochs/<e> -------------------------------------------------------- */

/* epoch e of an /epochs inode, and for a shard its split and index k;
 * -ENOENT when ino is none of them */
static int epoch_of(const struct in_layout *L, uint64_t ino, uint64_t *e, int *s,
		    uint64_t *k)
{
	uint32_t kind = KIND(ino);

	*e = IDX(ino), *k = 0, *s = -1;
	if (!L->epochs || kind < K_EPOCH || kind > K_EPOCH_VTAR + 1)
		return -ENOENT;
	if ((*s = split_of(ino, K_EPOCH_VTAR)) >= 0) {
		*k = *e & (EPOCH_K_MAX - 1);
		*e >>= EPOCH_K_BITS;
		if (*k >= L->sp[*s].h.nshards)
			return -ENOENT;
	} else if ((*s = split_of(ino, K_EPOCH_TXT)) < 0 && kind > K_EPOCH_SHUFFLED) {
		return -ENOENT;
	}
	if (*e > EPOCH_MAX || (*s >= 0 && !labelled(L, *s)))
		return -ENOENT;
	return 0;
}

static int epoch_attr(const struct in_layout *L, uint64_t ino, struct sfs_attr *a)
{
	const struct in_split *ep;
	unsigned slot;
	uint64_t e, k;
	int s, rc = epoch_of(L, ino, &e, &s, &k);

	if (rc)
		return rc;
	if (s < 0) {	/* <e>, <e>/shards, <e>/shuffled */
		dir_attr(L, ino, KIND(ino) == K_EPOCH ? 2 : 0, a);
		return 0;
	}
	if ((rc = imagenet_epoch_get(L->epochs, (uint32_t)e, &ep, &slot)))
		return rc;
	if (KIND(ino) >= K_EPOCH_VTAR) {
		file_attr(L->mtime, ino, 0, a);
		rc = imagenet_shard_size(L, &ep[s], k, &a->size);
	} else {
		file_attr(L->mtime, ino, ep[s].h.txt_size, a);
	}
	imagenet_epoch_put(L->epochs, slot);
	return rc;
}

/* /epochs lists nothing: each of its 2^31 epochs is there when named */
static int epoch_child(const struct in_layout *L, uint64_t dir, uint64_t i, char *name,
		       size_t len, uint64_t *ino)
{
	uint64_t e = IDX(dir);
	int s;

	if (KIND(dir) == K_EPOCH) {
		if (i > 1)
			return -ENOENT;
		snprintf(name, len, "%s", i ? "shuffled" : "shards");
		*ino = INO(i ? K_EPOCH_SHUFFLED : K_EPOCH_SHARDS, e);
		return 0;
	}
	for (s = 0; s < NSPLIT; s++) {
		uint64_t n = KIND(dir) == K_EPOCH_SHARDS ? L->sp[s].h.nshards : 1;

		if (!labelled(L, s))
			continue;
		if (i >= n) {
			i -= n;
			continue;
		}
		if (KIND(dir) == K_EPOCH_SHUFFLED) {
			snprintf(name, len, "%s.txt", imagenet_split_name[s]);
			*ino = INO(K_EPOCH_TXT + s, e);
		} else {
			snprintf(name, len, "%s-%06llu.tar", imagenet_split_name[s],
				 (unsigned long long)i);
			*ino = INO(K_EPOCH_VTAR + s, e << EPOCH_K_BITS | i);
		}
		return 0;
	}
	return -ENOENT;
}

/* ---- the orders, made on first use -------------------------------------- */

/* whether answering about `ino` (or its children) may need the orders */
static int uses_orders(uint64_t ino)
{
	uint32_t k = KIND(ino);

	return (k >= K_SHARDDIR && k <= K_VTAR + 1) || ino == INO_SHARDS ||
	       fixed_split(ino, INO_SHUF_TXT) >= 0;
}

/*
 * Makes the orders of every labelled split, once; concurrent callers wait
 * on the lock.  A failure (ENOMEM) is not remembered: the next call tries
 * again.  0 or -errno.
 */
static int need_orders(struct in_layout *L, uint64_t ino)
{
	int s, rc = 0;

	if (!uses_orders(ino) || __atomic_load_n(&L->orders_done, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&L->orders_lock);
	for (s = 0; !rc && !L->orders_done && s < NSPLIT; s++)
		if (labelled(L, s) && !L->sp[s].orders)
			rc = imagenet_make_orders(&L->sp[s], L->has_shard_seed, L->shard_seed,
					 L->shuffle_seed);
	if (!rc)
		__atomic_store_n(&L->orders_done, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&L->orders_lock);
	return rc;
}

/* ---- directory entries ------------------------------------------------- */

static int root_child(const struct in_layout *L, uint64_t i, char *name,
		      size_t len, uint64_t *ino)
{
	static const char *const names[] = { "classes.txt", "train", "val", "shards", "shuffled",
					     "epochs" };
	static const uint64_t inos[] = { INO_CLASSES, INO_SPLIT, INO_SPLIT + 1, INO_SHARDS,
					 INO_SHUFFLED, INO_EPOCHS };
	int present[] = { 1, (int)L->sp[TRAIN].h.present, (int)L->sp[VAL].h.present,
			  any_labelled(L), any_labelled(L), L->epochs != NULL };
	size_t k;

	for (k = 0; k < 6; k++) {
		if (!present[k] || i--)
			continue;
		snprintf(name, len, "%s", names[k]);
		*ino = inos[k];
		return 0;
	}
	return -ENOENT;
}

/* /shards: per labelled split, its directory then its vtars */
static int shards_child(const struct in_layout *L, uint64_t i, char *name,
			size_t len, uint64_t *ino)
{
	int s;

	for (s = 0; s < NSPLIT; s++) {
		if (!labelled(L, s))
			continue;
		if (i == 0) {
			snprintf(name, len, "%s", imagenet_split_name[s]);
			*ino = INO_SHARDS_SPLIT + (uint64_t)s;
			return 0;
		}
		if (i <= L->sp[s].h.nshards) {
			snprintf(name, len, "%s-%06llu.tar", imagenet_split_name[s], (unsigned long long)(i - 1));
			*ino = INO(K_VTAR + s, i - 1);
			return 0;
		}
		i -= 1 + L->sp[s].h.nshards;
	}
	return -ENOENT;
}

static int shuffled_child(const struct in_layout *L, uint64_t i, char *name,
			  size_t len, uint64_t *ino)
{
	int s;

	for (s = 0; s < NSPLIT; s++) {
		if (!labelled(L, s) || i--)
			continue;
		snprintf(name, len, "%s.txt", imagenet_split_name[s]);
		*ino = INO_SHUF_TXT + (uint64_t)s;
		return 0;
	}
	return -ENOENT;
}

static int file_child(const struct in_split *sp, int s, uint64_t c, char *name,
		      size_t len, uint64_t *ino)
{
	snprintf(name, len, "%s", tarindex_name(&sp->t, in_split_node(sp, c)));
	*ino = INO(K_FILE + s, c);
	return 0;
}

/* canonical range of a class (or the whole unlabelled split) */
static void class_range(const struct in_split *sp, uint64_t l, uint64_t *lo,
			uint64_t *hi)
{
	*lo = sp->h.labelled ? sp->cstart[l] : 0;
	*hi = sp->h.labelled ? sp->cstart[l + 1] : sp->h.n;
}

static int split_child(const struct in_layout *L, uint64_t dir, uint64_t i,
		       char *name, size_t len, uint64_t *ino)
{
	const struct in_split *sp;
	uint64_t lo, hi, k;
	int s;

	if ((s = fixed_split(dir, INO_SPLIT)) >= 0) {
		sp = &L->sp[s];
		if (!labelled(L, s))
			return i < sp->h.n ? file_child(sp, s, i, name, len, ino) : -ENOENT;
		if (i >= sp->ncls)
			return -ENOENT;
		snprintf(name, len, "%s", L->wnid[i]);
		*ino = INO(K_CLASSDIR + s, i);
		return 0;
	}
	if ((s = fixed_split(dir, INO_SHARDS_SPLIT)) >= 0) {
		if (i >= L->sp[s].h.nshards)
			return -ENOENT;
		snprintf(name, len, "%llu", (unsigned long long)i);
		*ino = INO(K_SHARDDIR + s, i);
		return 0;
	}
	if ((s = split_of(dir, K_CLASSDIR)) >= 0) {
		sp = &L->sp[s];
		class_range(sp, IDX(dir), &lo, &hi);
		return i < hi - lo ? file_child(sp, s, lo + i, name, len, ino) : -ENOENT;
	}
	if ((s = split_of(dir, K_SHARDDIR)) < 0)
		return -ENOENT;
	sp = &L->sp[s];
	k = IDX(dir) * L->S + i;
	if (i >= imagenet_shard_len(L, sp, IDX(dir)))
		return -ENOENT;
	snprintf(name, len, "%u.%s", imagenet_label_of(sp, sp->ord[k]),
		 tarindex_name(&sp->t, in_split_node(sp, sp->ord[k])));
	*ino = INO(K_FILE + s, sp->ord[k]);
	return 0;
}

/* Child i of directory `dir` (already known to be one). */
static int child_at(const struct in_layout *L, uint64_t dir, uint64_t i,
		    char *name, size_t len, uint64_t *ino)
{
	switch (dir) {
	case SFS_ROOT_INO:
		return root_child(L, i, name, len, ino);
	case INO_SHARDS:
		return shards_child(L, i, name, len, ino);
	case INO_SHUFFLED:
		return shuffled_child(L, i, name, len, ino);
	case INO_EPOCHS:
		return -ENOENT;
	default:
		if (KIND(dir) >= K_EPOCH)
			return epoch_child(L, dir, i, name, len, ino);
		return split_child(L, dir, i, name, len, ino);
	}
}

static int in_readdir(void *priv, uint64_t dir, uint64_t off, sfs_fill_fn fill,
		      void *arg)
{
	const struct in_layout *L = priv;
	struct sfs_attr a;
	char name[NAME_MAX_];
	uint64_t ino, i;
	int rc = need_orders(priv, dir);

	if (!rc)
		rc = attr_of(L, dir, &a);

	if (rc)
		return rc;
	if (!(a.mode & 0040000))
		return -ENOTDIR;
	for (i = off; child_at(L, dir, i, name, sizeof(name), &ino) == 0; i++) {
		if ((rc = attr_of(L, ino, &a)))
			return rc;
		if (fill(arg, name, &a, i + 1))
			break;
	}
	return 0;
}

/* ---- lookup ------------------------------------------------------------ */

/* canonical sample named `name` in [lo, hi) (name order), or -ENOENT */
static int64_t find_member(const struct in_split *sp, uint64_t lo, uint64_t hi,
			   const char *name)
{
	uint64_t i = SFS_PARTITION_POINT(uint64_t, lo, hi, m,
		strcmp(tarindex_name(&sp->t, in_split_node(sp, m)), name) < 0);

	return i < hi && !strcmp(tarindex_name(&sp->t, in_split_node(sp, i)), name) ?
	       (int64_t)i : -ENOENT;
}

/* "123" -> 123; no sign, no leading zeros, no overflow */
static int parse_u64(const char *s, const char *end, uint64_t *v)
{
	*v = 0;
	if (s == end || (*s == '0' && end - s > 1) || end - s > 15)
		return -ENOENT;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -ENOENT;
		*v = *v * 10 + (uint64_t)(*s - '0');
	}
	return 0;
}

static int64_t find_class(const struct in_layout *L, const char *name)
{
	return imagenet_find_class_in(L->wnid, L->head->nclasses, name);
}

/* "<label>.<member>" in shard directory k */
static int64_t find_shard_file(const struct in_layout *L, int s, uint64_t k,
			       const char *name)
{
	const struct in_split *sp = &L->sp[s];
	const char *dot = strchr(name, '.');
	uint64_t label, lo, hi;
	int64_t c;

	if (!dot || parse_u64(name, dot, &label) || label >= sp->ncls)
		return -ENOENT;
	class_range(sp, label, &lo, &hi);
	c = find_member(sp, lo, hi, dot + 1);
	if (c < 0 || sp->pos[c] / L->S != k)
		return -ENOENT;
	return (int64_t)INO(K_FILE + s, c);
}

/* "<split>-<k:06d>.tar" of /epochs/<e>/shards, exactly as listed */
static int64_t find_epoch_vtar(const struct in_layout *L, uint64_t e, const char *name)
{
	uint64_t k;
	int s;

	for (s = 0; s < NSPLIT; s++)
		if (labelled(L, s) && !epochs_parse_shard(name, imagenet_split_name[s], &k) &&
		    k < L->sp[s].h.nshards)
			return (int64_t)INO(K_EPOCH_VTAR + s, e << EPOCH_K_BITS | k);
	return -ENOENT;
}

/* the big directories: binary searches; the small ones: a scan */
static int64_t find_child(const struct in_layout *L, uint64_t dir, const char *name)
{
	char buf[NAME_MAX_];
	uint64_t lo, hi, ino, i;
	uint32_t e;
	int64_t r;
	int s;

	if ((s = fixed_split(dir, INO_SPLIT)) >= 0) {
		if (!labelled(L, s))
			return (r = find_member(&L->sp[s], 0, L->sp[s].h.n, name)) < 0 ? r :
				(int64_t)INO(K_FILE + s, r);
		return (r = find_class(L, name)) < 0 ? r : (int64_t)INO(K_CLASSDIR + s, r);
	}
	if ((s = split_of(dir, K_CLASSDIR)) >= 0) {
		class_range(&L->sp[s], IDX(dir), &lo, &hi);
		return (r = find_member(&L->sp[s], lo, hi, name)) < 0 ? r :
			(int64_t)INO(K_FILE + s, r);
	}
	if ((s = split_of(dir, K_SHARDDIR)) >= 0)
		return find_shard_file(L, s, IDX(dir), name);
	if ((s = fixed_split(dir, INO_SHARDS_SPLIT)) >= 0)
		return parse_u64(name, name + strlen(name), &i) || i >= L->sp[s].h.nshards ?
			-ENOENT : (int64_t)INO(K_SHARDDIR + s, i);
	if (dir == INO_EPOCHS)
		return epochs_parse(name, &e) ? -ENOENT : (int64_t)INO(K_EPOCH, e);
	if (KIND(dir) == K_EPOCH_SHARDS)
		return find_epoch_vtar(L, IDX(dir), name);
	for (i = 0; child_at(L, dir, i, buf, sizeof(buf), &ino) == 0; i++)
		if (!strcmp(buf, name))
			return (int64_t)ino;
	return -ENOENT;
}

static int in_lookup(void *priv, uint64_t parent, const char *name,
		     struct sfs_attr *out)
{
	const struct in_layout *L = priv;
	int64_t ino;
	int rc = need_orders(priv, parent);

	if (!rc)
		rc = attr_of(L, parent, out);

	if (rc)
		return rc;
	if (!(out->mode & 0040000))
		return -ENOTDIR;
	ino = find_child(L, parent, name);
	return ino < 0 ? (int)ino : attr_of(L, (uint64_t)ino, out);
}

static int in_getattr(void *priv, uint64_t ino, struct sfs_attr *out)
{
	int rc = need_orders(priv, ino);

	return rc ? rc : attr_of(priv, ino, out);
}

/* ---- reads ------------------------------------------------------------- */

/* a shard or shuffled file of /epochs/<e>, from the epoch's views */
static ssize_t epoch_read(struct in_layout *L, uint64_t ino, char *buf, size_t size,
			  uint64_t off, struct vtar_spans *o)
{
	const struct in_split *ep;
	unsigned slot;
	uint64_t e, k;
	ssize_t r;
	int s, rc = epoch_of(L, ino, &e, &s, &k);

	if (rc || s < 0)
		return rc ? rc : -EISDIR;
	if ((rc = imagenet_epoch_get(L->epochs, (uint32_t)e, &ep, &slot)))
		return rc;
	if (KIND(ino) >= K_EPOCH_VTAR)
		r = imagenet_shard_read(L, &ep[s], k, ino, buf, size, off, o);
	else
		r = o ? -ENOTSUP : imagenet_shuffled_read(L, &ep[s], buf, size, off);
	imagenet_epoch_put(L->epochs, slot);
	return r;
}

/* 1 when split sp's shards may splice members: a local source (one with
 * a descriptor; a split's sources are all local or all URLs) and no
 * checksums (checked members are copied).  Else spans would give every
 * byte copied, and the FUSE layer had better answer such a read as it
 * answers any other (from memory when it can). */
static int shard_splices(const struct in_split *sp)
{
	uint64_t base;
	int fd;

	return sp->t.nsrc > 0 && tarindex_nsummed(&sp->t) == 0 &&
	       source_fd(tarindex_src(&sp->t, 0), &fd, &base) == 0;
}

/* A file's bytes; with o, a shard's members in place left as spans (the
 * other files: -ENOTSUP) */
static ssize_t read_to(void *priv, uint64_t ino, char *buf, size_t size, uint64_t off,
		       struct vtar_spans *o)
{
	struct in_layout *L = priv;
	uint64_t i = IDX(ino);
	struct sfs_attr a;
	int s, rc = need_orders(priv, ino);

	if (!rc)
		rc = attr_of(L, ino, &a);
	if (rc)
		return rc;
	if (a.mode & 0040000)
		return -EISDIR;
	if (o && (s = split_of(ino, K_VTAR)) < 0 && (s = split_of(ino, K_EPOCH_VTAR)) < 0)
		return -ENOTSUP;	/* not a shard */
	if (o && o->max == 0)	/* layout.h: only whether it has spans */
		return shard_splices(&L->sp[s]) ? 0 : -ENOTSUP;
	if (ino == INO_CLASSES) {
		if (off >= L->classes_len)
			return 0;
		size = size < L->classes_len - off ? size : (size_t)(L->classes_len - off);
		memcpy(buf, L->classes_txt + off, size);
		return (ssize_t)size;
	}
	if ((s = fixed_split(ino, INO_SHUF_TXT)) >= 0)
		return imagenet_shuffled_read(L, &L->sp[s], buf, size, off);
	if ((s = split_of(ino, K_FILE)) >= 0)
		return tarindex_pread(&L->sp[s].t, in_split_node(&L->sp[s], i), buf, size, off);
	if ((s = split_of(ino, K_VTAR)) >= 0)
		return imagenet_shard_read(L, &L->sp[s], i, ino, buf, size, off, o);
	return epoch_read(L, ino, buf, size, off, o);
}

static ssize_t in_read(void *priv, uint64_t ino, char *buf, size_t size, uint64_t off)
{
	return read_to(priv, ino, buf, size, off, NULL);
}

static ssize_t in_spans(void *priv, uint64_t ino, char *buf, size_t size, uint64_t off,
			struct source_span *sp, unsigned max, unsigned *n)
{
	struct vtar_spans o = { sp, max, 0, VTAR_SPAN_MIN };
	ssize_t r = read_to(priv, ino, buf, size, off, &o);

	*n = o.n;
	return r;
}

static int in_extent(void *priv, uint64_t ino, struct source **src, uint64_t *base)
{
	const struct in_layout *L = priv;
	const struct in_split *sp;
	const struct tarindex_node *n;
	uint64_t i = IDX(ino);
	int s;

	if (need_orders(priv, ino))
		return -ENOTSUP;	/* the read path says why */
	if ((s = split_of(ino, K_FILE)) >= 0 && i < L->sp[s].h.n)
		n = tarindex_node(&L->sp[s].t, in_split_node(&L->sp[s], i));
	else
		return -ENOTSUP;
	if (!tarindex_in_place(&L->sp[s].t, in_split_node(&L->sp[s], i)))
		return -ENOTSUP;	/* sparse, deflated, or a zip member not yet checked */
	/* a source that changed since mounting would splice other bytes, or
	 * short (which the kernel would take for the end of the file) */
	sp = &L->sp[s];
	if (source_check(tarindex_src(&sp->t, tarindex_node_src(n))) < 0)
		return -EIO;
	*src = tarindex_src(&sp->t, tarindex_node_src(n));
	*base = n->off;
	return 0;
}

static void in_statfs(void *priv, uint64_t *files, uint64_t *bytes)
{
	const struct in_layout *L = priv;
	int s;

	*files = 0;
	*bytes = 0;
	for (s = 0; s < NSPLIT; s++) {
		*files += L->sp[s].h.n + L->sp[s].h.nshards;	/* shard files are links */
		/* Kaggle's splits index one zip: its bytes once */
		*bytes += L->kaggle && s == VAL ? 0 : L->sp[s].t.total_bytes;
	}
}

static void in_destroy(void *priv)
{
	struct in_layout *L = priv;
	size_t s, i;

	if (!L)
		return;
	/* first: the advisors read the indexes and advise the sources */
	imagenet_ahead_destroy(&L->ahead);
	imagenet_epochs_free(L->epochs);
	for (s = 0; s < NSPLIT; s++) {
		imagenet_free_orders(&L->sp[s]);
		tarindex_close(&L->sp[s].t);
		tarindex_sources_close(L->sp[s].src, L->sp[s].nsrc);
		for (i = 0; i < L->sp[s].nsrc; i++) {
			free((char *)L->sp[s].src[i].path);
			free((char *)L->sp[s].src[i].dir);
		}
		free(L->sp[s].src);
	}
	index_map_close(&L->lay);
	index_map_close(&L->tars);
	free(L->devkit);
	pthread_mutex_destroy(&L->orders_lock);
	free(L);
}

/* the train tar(s), then the val tar; the train tar holds class tars */
static size_t in_tars(void *priv, const char **names, uint32_t *depth,
		      size_t max)
{
	const struct in_layout *L = priv;
	size_t n = 0, s, i;

	for (s = 0; s < NSPLIT; s++)
		for (i = 0; i < L->sp[s].nsrc; i++, n++)
			if (n < max) {
				names[n] = L->sp[s].src[i].path;
				depth[n] = L->sp[s].recursive;
			}
	return n;
}

/* members with checksums (-o checksums), both splits */
static uint64_t in_checksummed(void *priv)
{
	const struct in_layout *L = priv;
	uint64_t n = 0;
	int s;

	for (s = 0; s < NSPLIT; s++)
		n += tarindex_nsummed(&L->sp[s].t);
	return n;
}

/* /shards and /epochs: virtual shards of the members under train/, val/ */
static int in_view(void *priv, uint64_t ino)
{
	(void)priv;
	return ino == INO_SHARDS || ino == INO_EPOCHS;
}

static const struct layout_ops imagenet_ops = {
	.name = "imagenet",
	.getattr = in_getattr,
	.lookup = in_lookup,
	.readdir = in_readdir,
	.read = in_read,
	.extent = in_extent,
	.spans = in_spans,
	.tars = in_tars,
	.checksummed = in_checksummed,
	.view = in_view,
	.statfs = in_statfs,
	.destroy = in_destroy,
};

/* -o shard_prefetch=, but for URL sources no more than half the block
 * cache, which must keep what was fetched until the reader gets there */
static uint64_t ahead_budget(const struct sfs_opts *o)
{
	/* 0: -o cache_mem= not given, the default of source_env_new */
	uint64_t half = (o->remote.cache_bytes ? o->remote.cache_bytes :
			 SOURCE_CACHE_DEFAULT) / 2;

	if (source_is_url(o->source) && o->shard_prefetch > half)
		return half;
	return o->shard_prefetch;
}

/* /epochs, when a split has shards and its shard inodes fit (EPOCH_K_BITS) */
static int open_epochs(struct in_layout *L, const struct sfs_opts *o)
{
	int s;

	L->epoch_seed = o->has_shard_seed ? o->shard_seed : 0;
	if (!any_labelled(L))
		return 0;
	for (s = 0; s < NSPLIT; s++)
		if (labelled(L, s) && L->sp[s].h.nshards > EPOCH_K_MAX) {
			sfs_warn("%s: no /epochs: %s has %llu shards, more than %llu "
				 "(a larger shard_size= gives fewer)", o->source,
				 imagenet_split_name[s], (unsigned long long)L->sp[s].h.nshards,
				 (unsigned long long)EPOCH_K_MAX);
			return 0;
		}
	L->epochs = imagenet_epochs_new(L, &L->ahead);
	return L->epochs ? 0 : -ENOMEM;
}

int layout_imagenet_open(const struct sfs_opts *o, struct source_env *env,
			 struct layout *out)
{
	struct in_layout *L = calloc(1, sizeof(*L));
	uint64_t fph = 0;
	int rc, s;

	if (!L)
		return -ENOMEM;
	L->env = env;
	L->S = o->shard_size ? o->shard_size : 10000;
	L->has_shard_seed = o->has_shard_seed;
	L->shard_seed = o->shard_seed;
	L->shuffle_seed = o->shuffle_seed;
	pthread_mutex_init(&L->orders_lock, NULL);
	imagenet_ahead_init(&L->ahead, ahead_budget(o), source_is_url(o->source));
	rc = imagenet_find_sources(L, env, o->source);
	if (!rc && !L->sp[TRAIN].nsrc && !L->sp[VAL].nsrc) {
		sfs_err("%s: no " IMAGENET_TRAIN_TAR ", " IMAGENET_VAL_TAR
			" or train/<wnid>.tar", o->source);
		rc = -ENOENT;
	} else if (!rc) {
		imagenet_say_unserved(L, env, o->source);
	}
	for (s = 0; !rc && s < NSPLIT; s++)
		rc = tarindex_sources_open(env, L->sp[s].src, L->sp[s].nsrc);
	if (!rc)
		rc = imagenet_open_tars(o, L, &fph);
	if (!rc)
		rc = imagenet_open_layout_index(o, L, fph);
	if (!rc)
		rc = open_epochs(L, o);
	if (rc) {
		in_destroy(L);
		return rc;
	}
	out->ops = &imagenet_ops;
	out->priv = L;
	return 0;
}

int layout_imagenet_summary(const struct layout *l, struct imagenet_summary *s)
{
	const struct in_layout *L;

	if (!l || l->ops != &imagenet_ops)
		return -EINVAL;
	L = l->priv;
	memset(s, 0, sizeof(*s));
	s->classes = L->head->nclasses;
	s->train = L->sp[TRAIN].h.n;
	s->val = L->sp[VAL].h.n;
	s->val_labelled = labelled(L, VAL);
	s->words = (int)L->head->words;
	s->nshards[TRAIN] = L->sp[TRAIN].h.nshards;
	s->nshards[VAL] = L->sp[VAL].h.nshards;
	return 0;
}
