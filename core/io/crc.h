/*
 * crc.h - the CRC-32 of gzip and zip (the same polynomial, chained as
 * zlib's crc32()), computed by ISA-L's folding CRC where the build has it
 * (several times zlib's), else by zlib.  One definition for every layer
 * that checks such a CRC: the decompressing sources' spans (zsource.c)
 * and zip members (formats/zipread.c).
 *
 * And CRC32C (Castagnoli, iSCSI's), the members' checksums of a tar index
 * (-o checksums: index/tarindex/tarindex_sums.c) and the one S3 and GCS
 * give for objects: ISA-L's crc32_iscsi where the build has it, else a
 * table here (slow, but the same numbers).  Chained as zcrc32: crc32c(0,
 * p, n) of a buffer, crc32c(that, q, m) to go on.
 *
 * Not for: the index's own checksums (zlib's crc32 at index.c).
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

/* CRC32C, chained as zcrc32 (pre- and post-inverted: the usual value,
 * 0xe3069283 for "123456789"). */
static inline uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;

	crc = ~crc;
#ifdef HAVE_ISAL
	/* crc32_iscsi neither inverts nor takes more than INT_MAX bytes */
	while (n) {
		size_t k = n > (1u << 30) ? (1u << 30) : n;

		crc = crc32_iscsi((unsigned char *)b, (int)k, crc);
		b += k;
		n -= k;
	}
#else
	while (n--) {
		int k;

		crc ^= *b++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
#endif
	return ~crc;
}

#endif
