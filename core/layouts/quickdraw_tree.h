/*
 * quickdraw_tree.h - the mounted Quick, Draw! tree's state (struct qd,
 * made by layout_quickdraw.c's open, read-only after it but for the LRU,
 * which locks itself) and the bytes of its sample files
 * (quickdraw_read.c), which /images, /strokes and the shards of /epochs
 * (quickdraw_epochs.c) all serve.
 *
 * Not for: names, inodes, the index build (layout_quickdraw.c,
 * quickdraw_build.c).
 */
#ifndef SFS_QUICKDRAW_TREE_H
#define SFS_QUICKDRAW_TREE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "index/blockstore.h"
#include "io/lru.h"
#include "layouts/layout.h"
#include "layouts/quickdraw_index.h"

struct qd_epochs;

struct qd {
	struct qd_scan scan;          /* class files: sources, stamps at mount */
	struct index_map map;
	const struct qd_head *hd;
	const struct qd_class *cls;
	const char *names;            /* classes.txt bytes */
	const uint32_t *sorted;       /* class ids in bytewise name order */
	const uint32_t *perm;         /* shuffled gidx: train, val, test */
	const uint64_t *ckpt;
	uint64_t nckpt;
	const uint8_t *xl;            /* long drawings, zlib streams */
	uint64_t xl_len;
	struct blockstore bs;
	struct source *idx;           /* the index again, for the blockstore's reads */
	struct lru *cache;
	int image_uint8;
	uint32_t stroke_len;
	char img_hdr[128], stk_hdr[256];
	uint32_t img_hdr_len, stk_hdr_len;
	uint64_t img_size, stk_size;  /* whole per-sample files */
	float lut[256];               /* uint8 -> float32 / 255.0 */
	struct qd_epochs *epochs;     /* /epochs (quickdraw_epochs.h), or NULL */
};

static inline void attr_dir(struct sfs_attr *a, uint64_t ino, uint32_t nsub, int64_t mtime)
{
	a->ino = ino;
	a->mode = S_IFDIR | 0555;
	a->nlink = 2 + nsub;
	a->size = 0;
	a->mtime = mtime;
	a->hole = 0;
}

static inline void attr_file(struct sfs_attr *a, uint64_t ino, uint64_t size, int64_t mtime)
{
	a->ino = ino;
	a->mode = S_IFREG | 0444;
	a->nlink = 1;
	a->size = size;
	a->mtime = mtime;
	a->hole = 0;
}

/* Copies [off, off + size) of the file hdr ++ body into dst. */
ssize_t qd_copy_range(char *dst, size_t size, uint64_t off, const void *hdr,
		      size_t hlen, const void *body, size_t blen);
/* bytes [off, off + size) of sample gidx's image file (/images/...npy) */
ssize_t qd_read_image(const struct qd *q, uint64_t gidx, char *buf, size_t size,
		      uint64_t off);
/* the same of its stroke file (/strokes/...npy) */
ssize_t qd_read_stroke(const struct qd *q, uint64_t gidx, char *buf, size_t size,
		       uint64_t off);

#endif
