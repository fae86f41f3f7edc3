/*
 * imagenet_shards.h - the bytes of the ImageNet layout's generated files:
 * shard k of a split view as a WebDataset tar (vtar.h), read with prefetch
 * in the shard's order (imagenet_ahead.h), and its shuffled.txt.  A split
 * view is a split (L->sp[s], /shards) or an epoch's copy of it with the
 * epoch's orders (imagenet_epochs.h, /epochs/<e>): the same code serves both.
 *
 * Not for: names, inodes and attributes (layout_imagenet.c).
 */
#ifndef SFS_IMAGENET_SHARDS_H
#define SFS_IMAGENET_SHARDS_H

#include <stdint.h>
#include <sys/types.h>

#include "formats/vtar.h"
#include "layouts/imagenet_index.h"

/* samples in shard k (k < nshards) */
uint64_t imagenet_shard_len(const struct in_layout *L, const struct in_split *sp, uint64_t k);
/* the size of shard k's tar.  0 or -errno. */
int imagenet_shard_size(const struct in_layout *L, const struct in_split *sp, uint64_t k,
			uint64_t *size);
/* bytes of shard k's tar, the file `ino` (its prefetch stream's key);
 * with o (may be NULL), members in place in a local source are left as
 * spans to splice (vtar_read_spans) */
ssize_t imagenet_shard_read(struct in_layout *L, const struct in_split *sp, uint64_t k,
			    uint64_t ino, char *buf, size_t size, uint64_t off,
			    struct vtar_spans *o);
/* bytes of sp's shuffled.txt */
ssize_t imagenet_shuffled_read(const struct in_layout *L, const struct in_split *sp,
			       char *buf, size_t size, uint64_t off);

#endif
