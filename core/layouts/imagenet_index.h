/*
 * imagenet_index.h - the ImageNet layout's index in memory: struct
 * in_layout (the sources, the two mapped index files and the views into
 * them), the layout index's sections, and binding it (loading it is
 * imagenet_build.h's).  The other ImageNet files (imagenet_files.h,
 * _tars.h, _build.h, _samples.h, _orders.h) work on these types.
 *
 * Two index files: the tar headers (tarindex, imagenet_tars.h), expensive
 * to build and independent of options, and the layout's arrays (cheap,
 * keyed by the shard options).  Per sample the layout index stores at
 * most a u32 node id (samp, omitted when the samples are consecutive
 * nodes, as train usually is); vtar offsets and shuffled.txt offsets are
 * kept every VOFF_STEP / SOFF_STEP samples and the rest recomputed from
 * sizes.  The orders (ord, pos, shuf) are not stored (imagenet_orders.h).
 *
 * Threads: after layout_imagenet_open a struct in_layout is read-only, but
 * for the orders (orders, ord, pos, shuf of each split, and orders_done),
 * which layout_imagenet.c makes once under orders_lock, and the readers'
 * streams (ahead), under their own lock.  Building runs in
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
#include "index/tarindex/tarindex.h"

enum { TRAIN, VAL, NSPLIT };
struct in_epochs;
extern const char *const imagenet_split_name[NSPLIT];	/* "train", "val" */

/* The layout index: its version and section tags (IN_TAG: of the whole
 * layout, IN_STAG: of split s). */
#define IN_LAYOUT_VERSION 4
#define IN_TAG(a, b, c) INDEX_TAG('I', a, b, c)
#define IN_STAG(s, a, b) INDEX_TAG('I', "tv"[s], a, b)

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
	/* the directory node of the split's samples: the root, or in Kaggle's
	 * zip ILSVRC/Data/CLS-LOC/<split> (set when the tarindex opens) */
	uint32_t root;
	/* the rest points into the layout index */
	struct in_split_head h;
	uint32_t ncls;		/* nclasses when labelled, else 0 */
	const uint32_t *samp, *cstart, *ord, *pos, *shuf;
	const uint64_t *voff, *soff;
	uint32_t *orders;	/* owned: ord, pos and shuf, n each */
};

/* the tarindex node of canonical sample c: inline, it is in every loop */
static inline uint32_t in_split_node(const struct in_split *sp, uint64_t c)
{
	return sp->samp ? sp->samp[c] : sp->h.samp_base + (uint32_t)c;
}

/*
 * Where the readers of shards are (imagenet_ahead.c): one slot per shard
 * being streamed, the least recently used taken over by a new stream, so
 * the state is bounded whatever is read; and the thread that asks for
 * what they read next.  Under `lock`.
 */
#define IN_STREAMS 16
#define IN_ADVISORS 4	/* threads asking for members, per mount */
#define IN_HINTS 16	/* hints ahead of a reader counted, at most */
struct in_stream {
	uint64_t ino;		/* the vtar's inode; 0: free */
	/* the shard: split sp's positions [first, first + n), whose records
	 * start at byte `base` of the split's records */
	const struct in_split *sp;
	uint64_t first, n, base;
	int dirty;		/* read since the advisor last caught up */
	uint64_t next;		/* end of the furthest read in the stream */
	uint64_t cur_i;		/* the record (index in the shard) holding next;
				 * UINT64_MAX: not found yet */
	uint64_t cur_off;	/* its offset in the vtar */
	uint64_t ahead_i;	/* the first record not advised yet */
	uint64_t ahead_off;	/* its offset in the vtar */
	uint64_t used;		/* tick of the last read */
	int64_t read_ns;	/* and its time (sfs_now_ns) */
	/* the hints advised ahead of the reader, oldest first: the last
	 * record of each (a ring of nhints from hint0), for the depth */
	uint64_t hint_last[IN_HINTS];
	unsigned hint0, nhints;
};
struct in_ahead {
	pthread_mutex_t lock;
	uint64_t budget;	/* bytes advised ahead of a reader; 0: off */
	uint64_t depth;		/* hints (one range of a source each, one or
				 * more records) ahead of a reader, at most;
				 * past IN_HINTS: no bound */
	int shared;		/* the budget is the streams' together */
	uint64_t tick;
	struct in_stream s[IN_STREAMS];
	pthread_cond_t more;	/* a stream is dirty, or stopping */
	pthread_t advisor[IN_ADVISORS];
	int started, stopping;	/* advisors running; stop them */
};

struct in_layout {
	struct source_env *env;		/* the mount's (not owned) */
	struct in_split sp[NSPLIT];
	char *devkit;			/* its path or URL, or NULL */
	/* Kaggle's zip: both splits' source, labels from its LOC_ files */
	int kaggle;
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
	struct in_ahead ahead;		/* its own lock */
	/* /epochs (imagenet_epochs.h; its own lock): NULL when not served;
	 * epoch e's permutation is seeded by (epoch_seed, e) */
	struct in_epochs *epochs;
	uint32_t epoch_seed;
};

/* Binds L to its mapped layout index (L->lay): every value a lookup or
 * read indexes with is checked here.  0 or -EBADMSG. */
int imagenet_bind_layout(struct in_layout *L);

#endif
