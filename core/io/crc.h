/*
 * crc.h - the CRC-32 of gzip and zip (the same polynomial, chained as
 * zlib's crc32()), computed by ISA-L's folding CRC where the build has it
 * (several times zlib's), else by zlib.  One definition for every layer
 * that checks such a CRC: the decompressing sources' spans (zsource.c)
 * and zip members (formats/zipread.c).
 *
 * Not for: the index's own checksums (zlib's crc32 at index.c), CRC32C.
 */
#ifndef SFS_IO_CRC_H
#define SFS_IO_CRC_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>
#ifdef HAVE_ISAL
#include <isa-l/crc.h>
#endif

static inline uint32_t zcrc32(uint32_t crc, const void *p, size_t n)
{
#ifdef HAVE_ISAL
	return crc32_gzip_refl(crc, (const unsigned char *)p, (uint64_t)n);
#else
	return (uint32_t)crc32_z(crc, p, n);
#endif
}

#endif
