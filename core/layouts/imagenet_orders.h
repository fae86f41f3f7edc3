/*
 * imagenet_orders.h - the three orders of a labelled ImageNet split, made
 * at build time (to compute the stored offsets) and again when mounted, on
 * first use: ord (shard position -> canonical sample: the tar order, or an
 * MT19937 shuffle with -o shard_seed), pos (its inverse) and shuf (the
 * shuffled.txt order, a shuffle with -o shuffle_seed).
 *
 * They are not stored: they would cost 12 bytes a sample on disk and are
 * quicker to derive (~50 ms for 1.28 M samples) than to read cold.
 *
 * Threads: the caller serialises (layout_imagenet.c's orders_lock).
 */
#ifndef SFS_IMAGENET_ORDERS_H
#define SFS_IMAGENET_ORDERS_H

#include <stdint.h>

#include "layouts/imagenet_index.h"

/* Fills sp->orders and the ord/pos/shuf views.  0 or -ENOMEM. */
int imagenet_make_orders(struct in_split *sp, int has_shard_seed,
			 uint32_t shard_seed, uint32_t shuffle_seed);
/* Epoch e's: ord = np.random.seed([seed, e]) shuffle, pos its inverse,
 * shuf = ord.  0 or -ENOMEM. */
int imagenet_make_epoch_orders(struct in_split *sp, uint32_t seed, uint32_t e);
void imagenet_free_orders(struct in_split *sp);

#endif
