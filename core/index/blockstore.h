/*
 * blockstore.h - variable-length records packed into independently
 * compressed blocks, for random access to one record without inflating more
 * than one block (zran.c-style access points are far too coarse for
 * per-sample reads).  Blocks hold at most BLOCKSTORE_BLOCK bytes inflated,
 * deflated with zlib, or stored raw when that is not smaller.
 *
 * Built once (into index sections), then read from the mmap'ed index, or
 * with source_pread from the index file opened as a local source
 * (blockstore_read_from), which also gives no-wait reads.
 * Not for: what the records mean (the layout knows).
 */
#ifndef SFS_BLOCKSTORE_H
#define SFS_BLOCKSTORE_H

#include <stdint.h>
#include <stddef.h>

#include "index/index.h"
#include "io/lru.h"

struct source;

/*
 * A random read that misses the cache inflates one whole block, so the
 * block size sets the miss cost (zlib inflates ~250 MB/s here).  Blocks
 * close once they hold BLOCKSTORE_FILL bytes; one record up to
 * BLOCKSTORE_BLOCK gets a block of its own.  Measured serving 20k random
 * stroke files of 345 x 3000 packed drawings (1 thread, warm, files/s,
 * medians of 3): fill 4 KiB 14.8k, 2 KiB 16.8k, 1 KiB 17.7k; index 147.4 /
 * 148.5 / 155.1 MB against 238.5 MB of .npz; build 2.7 / 2.8 / 3.5 s.
 * BLOCKSTORE_BLOCK is at most 65535 (record offsets are u16).
 */
#define BLOCKSTORE_BLOCK (8u << 10)
#define BLOCKSTORE_FILL (2u << 10)

/*
 * Building: records are appended in id order (0, 1, 2...).  Block bytes are
 * streamed into the index writer as section `data_tag` as blocks fill; the
 * block table and record table are kept in memory and written at finish as
 * sections `blk_tag` and `rec_tag`.  A record may not exceed BLOCKSTORE_BLOCK.
 */
struct blockstore_builder;
int blockstore_builder_new(struct blockstore_builder **b, struct index_writer *w,
			   uint32_t data_tag);
/* returns the record id (>= 0) or -errno; -E2BIG if len > BLOCKSTORE_BLOCK */
int64_t blockstore_builder_add(struct blockstore_builder *b, const void *rec,
			       uint32_t len);
/* flushes the last block, ends the data section, writes blk/rec sections, frees b */
int blockstore_builder_finish(struct blockstore_builder *b, uint32_t blk_tag,
			      uint32_t rec_tag);
void blockstore_builder_abort(struct blockstore_builder *b);

/* Reading: a view over the three sections of a mapped index. */
struct blockstore {
	const uint8_t *data; uint64_t data_len;
	const void *blk; uint64_t nblk;   /* block table (private layout) */
	const void *rec; uint64_t nrec;   /* record table (private layout) */
	uint64_t key_base;                /* distinguishes stores in one LRU */
	struct source *src;               /* see blockstore_read_from */
	uint64_t src_off;
	const struct index_map *map;      /* blockstore_open's: names damage */
};
/* 0 or -EBADMSG if the sections are inconsistent (checked once, here). */
int blockstore_open(struct blockstore *bs, const struct index_map *m,
		    uint32_t data_tag, uint32_t blk_tag, uint32_t rec_tag,
		    uint64_t key_base);
/* The same over sections found some other way (blk 8-byte aligned). */
int blockstore_open_sections(struct blockstore *bs, const void *data,
			     uint64_t data_len, const void *blk, uint64_t blk_len,
			     const void *rec, uint64_t rec_len, uint64_t key_base);
/*
 * Reads compressed blocks with source_pread from src, the index file
 * (opened as a local source) whose data section starts at offset `off`,
 * instead of through the mapping: random reads through a mapping leave
 * every page they (and the kernel's fault-around) touch in the daemon's
 * RSS, and cannot say "would block".  src stays the caller's; it must hold
 * the same bytes as the mapping.  NULL: back to the mapping.
 */
void blockstore_read_from(struct blockstore *bs, struct source *src, uint64_t off);
uint64_t blockstore_count(const struct blockstore *bs);
/* length of record id, or -ENOENT */
int64_t blockstore_len(const struct blockstore *bs, uint64_t id);
/* copies record id into out (outlen >= its length); inflates its block
 * through the cache on a miss.  Returns length, -ENOENT, -EIO (corrupt). */
int64_t blockstore_get(const struct blockstore *bs, struct lru *cache,
		       uint64_t id, void *out, size_t outlen);

#endif
