/*
 * bytes.h - little-endian integers read from (and written to) byte
 * buffers, once for every format that stores them (zip, MAT-files, gzip
 * and zstd headers, packed strokes): byte by byte, so alignment and the
 * host's order never matter.  Like clock.h it sits at the top of core/
 * and may be included anywhere.
 *
 * Not for: big-endian fields (none of samplefs's formats has them) or
 * bit streams (the codecs' own).
 */
#ifndef SFS_BYTES_H
#define SFS_BYTES_H

#include <stdint.h>

static inline uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

#endif
