/*
 * index_int.h - the index file's format on disk, shared by its writer
 * (index.c) and its reader (index_map.c), and nothing else: the contract
 * is index.h.
 *
 * On disk (native byte order: an index is a local cache, and a foreign one
 * fails the version check and is rebuilt):
 *
 *   header (64 bytes)  magic "SFSIDX\0\1", version, header size, fingerprint,
 *                      nsect, crc, table offset, total length, nblocks,
 *                      block shift
 *   sections           each starting on a 64-byte boundary, zero padded
 *   section table      nsect x {tag, first block, offset, length}
 *   block checksums    nblocks x crc32: each section cut in blocks of
 *                      1 << block shift bytes from its start (the last one
 *                      shorter), the sections' blocks in table order
 *
 * The table comes last because sections are streamed and their number is
 * known only at commit.  The header's crc covers the table and the block
 * checksums, and is checked at every map; a block is checked the first time
 * a caller uses bytes in it (index_map_check, or the whole section at
 * index_map_section), so a mount reads and checks what it touches, not the
 * whole file (a 20 M-member tar index is ~900 MB).  Checksums are computed
 * while writing, so committing never re-reads the file.
 */
#ifndef SFS_INDEX_INDEX_INT_H
#define SFS_INDEX_INDEX_INT_H

#include <stdint.h>

#define INDEX_MAGIC "SFSIDX\0\1"
#define INDEX_VERSION 2u	/* 2: block checksums, checked on first use */
#define INDEX_ALIGN 64u
#define INDEX_MAX_SECT 4096u
/* 4 KiB: a lookup checks a few; a directory's names may be spread over
 * the pool (a tar's order), one block each; the checksums are a 1/1024 of
 * the file, checked at every map */
#define INDEX_BLOCK_SHIFT 12u

struct index_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint64_t fp;
	uint32_t nsect;
	uint32_t crc;       /* crc32 of bytes [table_off, total_len) */
	uint64_t table_off;
	uint64_t total_len;
	uint32_t nblocks;   /* block checksums after the table */
	uint32_t block_shift;
	uint8_t pad[8];
};

struct index_sect {
	uint32_t tag;
	uint32_t block;     /* its first block's number among the checksums */
	uint64_t off;
	uint64_t len;
};

/* What index_map keeps of each block: checked yet, and how it went. */
enum { BLOCK_UNSEEN, BLOCK_GOOD, BLOCK_BAD };

_Static_assert(sizeof(struct index_hdr) == INDEX_ALIGN, "header is 64 bytes");
_Static_assert(sizeof(struct index_sect) == 24, "section entry is 24 bytes");

#endif
