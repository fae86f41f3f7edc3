/*
 * tarindex_int.h - what the two halves of the tar index share: the
 * version, the section tags and the header section that tarindex_build.c
 * writes and tarindex.c checks when it maps them.  Private to those two
 * files; the contract is tarindex.h.
 */
#ifndef SFS_INDEX_TARINDEX_INT_H
#define SFS_INDEX_TARINDEX_INT_H

#include <stdint.h>

#include "index/index.h"

#define TARINDEX_VERSION 3      /* 3: hard links share a sparse map */
#define TAG(c, x, y) INDEX_TAG((c), 'T', (x), (y))
#define NONE UINT32_MAX

/* Section header, stored as section TAG(c, 'H', 'D'). */
struct tarindex_hdr {
	uint32_t version;
	uint32_t nnodes;
	uint32_t ndirs;
	uint32_t nsrc;
	uint64_t pool_len;
	uint64_t nfiles;
	uint64_t total_bytes;
	uint32_t nsparse;       /* sparse files: section TAG(c, 'S', 'T') */
	uint32_t pad;
	uint64_t nchunks;       /* their map entries: TAG(c, 'S', 'M') */
};

#endif
