/*
 * bsread.h - reads every record of an open block store, for
 * fuzz_strokes.c and fuzz_index.c: blockstore_len and blockstore_get of
 * each through a small LRU, twice (the first pass inflates blocks, the
 * second hits the cache), then one past the end (-ENOENT).  A get gives the
 * record's length or -EIO (a block that fails its check), nothing else;
 * a packed stroke record ('P', quickdraw_index.h) is unpacked as the
 * layout would.
 */
#ifndef SFS_FUZZ_BSREAD_H
#define SFS_FUZZ_BSREAD_H

#include "index/blockstore.h"
#include "fuzz.h"
#include "io/lru.h"
#include "formats/strokepack.h"

static void bsread(const struct blockstore *bs, uint64_t cache_bytes)
{
	static uint8_t out[BLOCKSTORE_BLOCK], pts[BLOCKSTORE_BLOCK * 3];
	struct lru *cache = lru_new(cache_bytes);
	uint64_t id, n = blockstore_count(bs);

	FUZZ_CHECK(cache);
	for (int pass = 0; pass < 2; pass++)
		for (id = 0; id < n; id++) {
			int64_t l = blockstore_len(bs, id), g;

			FUZZ_CHECK(l >= 0 && l <= BLOCKSTORE_BLOCK);
			g = blockstore_get(bs, cache, id, out, sizeof(out));
			FUZZ_CHECK(g == l || g == -EIO);
			if (g > 1 && out[0] == 'P')
				(void)strokepack_unpack(out + 1, (size_t)g - 1, pts,
							(uint32_t)(sizeof(pts) / 6));
		}
	FUZZ_CHECK(blockstore_len(bs, n) == -ENOENT);
	lru_free(cache);
}

#endif
