/*
 * imagenet_epochs.h - the views behind /epochs/<e> (layout_imagenet.c):
 * per epoch, a copy of each labelled split whose orders and sparse
 * offsets are that epoch's (imagenet_make_epoch_orders: the shard_seed
 * shuffle seeded by (seed, e)), so that the shards' code (vtar callbacks,
 * imagenet_samples.h, imagenet_ahead.h) serves them as it serves /shards.
 *
 * Nothing is made per epoch until one of its shards or shuffled files is
 * asked about; then its orders (8 bytes a sample) and offsets are made
 * at once (~0.1 s for ImageNet's 1.28 M train samples) and kept in one of
 * IN_EPOCHS slots, the least recently used with no user taken over.
 *
 * Threads: get and put under the cache's lock; a view is read-only while
 * held (refs > 0), and its orders are freed only when no one holds it,
 * after its prefetch streams are ended (imagenet_ahead_forget).  A caller
 * holds one view at a time (get waits for a slot while all are held).
 *
 * Not for: the tree's names and inodes (layout_imagenet.c).
 */
#ifndef SFS_IMAGENET_EPOCHS_H
#define SFS_IMAGENET_EPOCHS_H

#include <pthread.h>
#include <stdint.h>

#include "layouts/imagenet_index.h"

#define IN_EPOCHS 4

struct in_epoch {
	uint32_t e;
	int valid, refs;		/* under the cache's lock */
	uint64_t used;
	struct in_split sp[NSPLIT];	/* views of the labelled splits */
	uint64_t *offs[NSPLIT];		/* owned: voff, then soff */
};

struct in_epochs {
	pthread_mutex_t lock;
	pthread_cond_t freed;		/* a slot's refs went to 0 */
	uint64_t tick;
	const struct in_layout *L;
	struct in_ahead *ahead;
	struct in_epoch slot[IN_EPOCHS];
};

/* NULL on ENOMEM */
struct in_epochs *imagenet_epochs_new(const struct in_layout *L, struct in_ahead *ahead);
void imagenet_epochs_free(struct in_epochs *E);

/* Epoch e's views, held until put.  0 or -ENOMEM. */
int imagenet_epoch_get(struct in_epochs *E, uint32_t e, struct in_epoch **out);
void imagenet_epoch_put(struct in_epochs *E, struct in_epoch *ep);

#endif
