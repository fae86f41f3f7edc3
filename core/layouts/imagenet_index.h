/*
 * imagenet_index.h - what layout_imagenet.c needs from the ILSVRC2012
 * source scan, the two index files and the orders: the in-memory layout
 * (struct in_layout, which the mapped layout index is bound into), the
 * functions that find the sources and open (or build) the indexes, and the
 * per-sample helpers the builder and the mounted tree share.
 *
 * Two index files: the tar headers (tarindex, sections 'T' and 'V'),
 * expensive to build and independent of options, and the layout's arrays
 * (cheap, keyed by the shard options).  Per sample the layout index stores
 * at most a u32 node id (samp, omitted when the samples are consecutive
 * nodes, as train usually is); vtar offsets and shuffled.txt offsets are
 * kept every VOFF_STEP / SOFF_STEP samples and the rest recomputed from
 * sizes.  The orders (ord, pos, shuf) are not stored (imagenet_index.c
 * says why).
 *
 * Threads: after layout_imagenet_open a struct in_layout is read-only, but
 * for the orders (orders, ord, pos, shuf of each split, and orders_done),
 * which layout_imagenet.c makes once under orders_lock.  Building runs in
 * the opening thread, before anything else can see the layout.
 *
 * Not the tree (inodes, names, attributes, reads): layout_imagenet.c.
 */
#ifndef SFS_IMAGENET_INDEX_H
#define SFS_IMAGENET_INDEX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/devkit.h"
#include "index/index.h"
#include "options.h"
#include "index/tarindex.h"

enum { TRAIN, VAL, NSPLIT };
extern const char *const imagenet_split_name[NSPLIT];	/* "train", "val" */

#define VOFF_STEP 64	/* vtar prefix offsets kept every 64 positions */
#define SOFF_STEP 256	/* shuffled.txt line offsets kept every 256 lines */
#define WNID_LEN DEVKIT_WNID_MAX

struct in_split_head {
	uint64_t n;		/* samples */
	uint64_t nshards;
	uint64_t txt_size;	/* shuffled/<split>.txt */
	uint32_t labelled;	/* class directories, shards, shuffled */
	uint32_t present;	/* its tar(s) exist */
	uint32_t samp_dense;	/* sample c is node samp_base + c: no samp array */
	uint32_t samp_base;
};

struct in_head {
	uint32_t version, nclasses;
	uint64_t shard_size;
	int64_t mtime;
	uint32_t words, pad;
	struct in_split_head split[NSPLIT];
};

struct in_split {
	struct tarindex t;
	struct tarindex_source *src;	/* owned: paths and dirs strdup'ed */
	size_t nsrc;
	uint32_t recursive;
	/* the rest points into the layout index */
	struct in_split_head h;
	uint32_t ncls;		/* nclasses when labelled, else 0 */
	const uint32_t *samp, *cstart, *ord, *pos, *shuf;
	const uint64_t *voff, *soff;
	uint32_t *orders;	/* owned: ord, pos and shuf, n each */
};

struct in_layout {
	struct source_env *env;		/* the mount's (not owned) */
	struct in_split sp[NSPLIT];
	char *devkit;			/* its path or URL, or NULL */
	struct source_stamp devkit_stamp;
	struct index_map tars, lay;
	const struct in_head *head;
	const char (*wnid)[WNID_LEN];
	const char *classes_txt;
	uint64_t classes_len;
	uint64_t S;
	int64_t mtime;
	uint32_t shard_seed, shuffle_seed;
	int has_shard_seed;
	/* the orders of every labelled split exist once orders_done is set
	 * (with release order, read with acquire); made under the lock */
	pthread_mutex_t orders_lock;
	int orders_done;
};

/* ---- sources and indexes, in the order layout_imagenet_open calls them -- */

/* The train tar (or train/<wnid>.tar), the val tar and the devkit under
 * `root` (a path or URL), into L->sp[].src and L->devkit; nothing opened.
 * Missing ones are not an error.  0 or -ENOMEM. */
int imagenet_find_sources(struct in_layout *L, struct source_env *env,
			  const char *root);

/* Maps the tar index (building it if stale) and opens each split's
 * tarindex; *fph gets the fingerprint the layout index is keyed by. */
int imagenet_open_tars(const struct sfs_opts *o, struct in_layout *L, uint64_t *fph);

/* Maps the layout index (building it if stale) and binds L to it: every
 * value a lookup or read indexes with is checked here.  0 or -errno. */
int imagenet_open_layout_index(const struct sfs_opts *o, struct in_layout *L,
		      uint64_t tars_fp);

/* ---- the orders ---------------------------------------------------------- */

/* Fills sp->orders and the ord/pos/shuf views.  0 or -ENOMEM. */
int imagenet_make_orders(struct in_split *sp, int has_shard_seed,
		uint32_t shard_seed, uint32_t shuffle_seed);
void imagenet_free_orders(struct in_split *sp);

/* ---- per-sample helpers, shared by the builder and the mount ------------ */

/* the tarindex node of canonical sample c: inline, it is in every loop */
static inline uint32_t node_of(const struct in_split *sp, uint64_t c)
{
	return sp->samp ? sp->samp[c] : sp->h.samp_base + (uint32_t)c;
}

/* the label of canonical sample c (sp labelled) */
uint32_t imagenet_label_of(const struct in_split *sp, uint64_t c);
/* a member's WebDataset key: its name up to the last dot */
size_t imagenet_stem_len(const char *name);
/* byte offset of shard position p in the concatenated records of the split */
uint64_t imagenet_cum_offset(const struct in_split *sp, uint64_t p);
/* line j of shuffled/<split>.txt into buf; returns its length */
int imagenet_shuffled_line(const struct in_split *sp, uint64_t S, uint64_t j,
		  char *buf, size_t len);

/* class `name` in a sorted WNID table, or -ENOENT */
int64_t imagenet_find_class_in(const char (*wnid)[WNID_LEN], uint32_t n, const char *name);

#endif
