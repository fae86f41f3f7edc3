/*
 * imagenet_samples.h - what one ImageNet sample is, computed from the
 * mapped indexes: its label, WebDataset key, place in the
 * shards' vtar bytes and line of shuffled/<split>.txt.  Shared by the
 * layout index's build (which sums them into sparse offsets) and the
 * mounted tree (which recomputes the rest between those offsets).
 *
 * Not for: the orders they index with (imagenet_orders.h).
 */
#ifndef SFS_IMAGENET_SAMPLES_H
#define SFS_IMAGENET_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include "layouts/imagenet_index.h"

/* the label of canonical sample c (sp labelled) */
uint32_t imagenet_label_of(const struct in_split *sp, uint64_t c);
/* a member's WebDataset key: its name up to the last dot */
size_t imagenet_stem_len(const char *name);
/* bytes of the vtar record at shard position p (the orders made) */
uint64_t imagenet_record_bytes(const struct in_split *sp, uint64_t p);
/* byte offset of shard position p in the concatenated records of the split */
uint64_t imagenet_cum_offset(const struct in_split *sp, uint64_t p);
/* line j of shuffled/<split>.txt into buf; returns its length */
int imagenet_shuffled_line(const struct in_split *sp, uint64_t S, uint64_t j,
			   char *buf, size_t len);
/* the sparse offsets of sp's orders (voff: n / VOFF_STEP + 1 of them,
 * soff: n / SOFF_STEP + 1) and the shuffled.txt size.  0 or -ENOMEM. */
int imagenet_make_offsets(const struct in_split *sp, uint64_t S, uint64_t *voff,
			  uint64_t *soff, uint64_t *txt_size);

/* class `name` in a sorted WNID table, or -ENOENT */
int64_t imagenet_find_class_in(const char (*wnid)[WNID_LEN], uint32_t n, const char *name);

#endif
