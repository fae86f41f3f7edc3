/*
 * hash.h - FNV-1a, the one non-cryptographic hash of samplefs: index
 * fingerprints (index/index.c), the disk cache's directories of URLs
 * (io/http/diskcache.c), the names of archives kept decompressed
 * (io/codecs/arxsource.c).  Its values are stored in file names and
 * indexes, so it never changes.  Like bytes.h it sits at the top of core/
 * and may be included anywhere.
 *
 * Not for: checking data (io/crc.h: CRC-32, CRC32C), anything an
 * adversary chooses to collide (the callers tell collisions apart).
 */
#ifndef SFS_HASH_H
#define SFS_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SFS_FNV_OFFSET 0xcbf29ce484222325ull
#define SFS_FNV_PRIME  0x100000001b3ull

/* h (SFS_FNV_OFFSET to start) carried over n more bytes at p */
static inline uint64_t sfs_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * SFS_FNV_PRIME;
	return h;
}

#endif
