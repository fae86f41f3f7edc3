/*
 * imagenet_epochs.h - ImageNet's views behind /epochs/<e>
 * (layout_imagenet.c), kept by epochs.h's cache: per epoch, a copy of each
 * labelled split whose orders and sparse offsets are that epoch's
 * (imagenet_make_epoch_orders: the shard_seed shuffle seeded by (seed, e)),
 * so that the shards' code (imagenet_shards.h, imagenet_ahead.h) serves
 * them as it serves /shards.  An epoch's views cost 8 bytes a sample and
 * take about as long to make as the mount's own shard orders.
 *
 * Threads: epochs.h's.  A slot's split copies live as long as the mount
 * (the prefetch advisors read their tarindex unlocked); their orders are
 * freed only after their prefetch streams end (imagenet_ahead_forget).
 *
 * Not for: the tree's names and inodes (layout_imagenet.c).
 */
#ifndef SFS_IMAGENET_EPOCHS_H
#define SFS_IMAGENET_EPOCHS_H

#include <stdint.h>

#include "layouts/epochs.h"
#include "layouts/imagenet_index.h"

struct in_epochs {
	struct epochs cache;
	const struct in_layout *L;
	struct in_ahead *ahead;
	struct in_split sp[EPOCH_SLOTS][NSPLIT];	/* views of the labelled splits */
	uint64_t *offs[EPOCH_SLOTS][NSPLIT];		/* owned: voff, then soff */
};

/* NULL on ENOMEM */
struct in_epochs *imagenet_epochs_new(const struct in_layout *L, struct in_ahead *ahead);
/* after imagenet_ahead_destroy: no advisor left to read a view */
void imagenet_epochs_free(struct in_epochs *E);

/* Epoch e's split views (views[s], s labelled), held in *slot until put.
 * 0 or -ENOMEM. */
int imagenet_epoch_get(struct in_epochs *E, uint32_t e, const struct in_split **views,
		       unsigned *slot);
void imagenet_epoch_put(struct in_epochs *E, unsigned slot);

#endif
