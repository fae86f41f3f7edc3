/*
 * tarhdr.h - one tar header block written byte by byte, for the unit
 * tests that make tars no tool would (test_tar.c, test_tarindex.c,
 * test_tarindex_written.c, test_tarsums.c): a header in POSIX ustar or GNU
 * form, and its checksum as Python's tarfile writes it, also after a test
 * changed a field.  Static inline functions: a test includes what it uses.
 *
 * Not for: well-formed fixtures (tests/fixtures/make_tars.py writes those
 * with tarfile), nor the headers samplefs itself writes (core/formats/
 * vtar.c, checked against tarfile and GNU tar in test_vtar.c).
 */
#ifndef SFS_TEST_TARHDR_H
#define SFS_TEST_TARHDR_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TARHDR_BLOCK 512
#define TARHDR_MTIME 1600000000u	/* what tarhdr_fill writes as mtime */

enum tarhdr_magic { TARHDR_POSIX, TARHDR_GNU };

/* Sets the checksum of the header block at h: the sum of its bytes with
 * the checksum field taken as spaces, "%06o" then a NUL (tarfile's). */
static inline void tarhdr_sum(unsigned char *h)
{
	unsigned sum = 0;
	int i;

	memset(h + 148, ' ', 8);
	for (i = 0; i < TARHDR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* v as `width` - 1 octal digits, zero-padded, then a NUL (tarfile's) */
static inline void tarhdr_octal(unsigned char *field, int width, uint64_t v)
{
	int i;

	field[width - 1] = '\0';
	for (i = width - 2; i >= 0; i--, v >>= 3)
		field[i] = (unsigned char)('0' + (v & 7));
}

/* Fills the 512 bytes at h with the header of member `name` (its first 99
 * bytes) of `type` and `size` data bytes: mode 0644, uid and gid 0, mtime
 * TARHDR_MTIME, link target `link` (NULL: none), the magic of `magic`
 * ("ustar\0" "00", or GNU's "ustar  \0"), and its checksum. */
static inline void tarhdr_fill(unsigned char *h, const char *name, char type, size_t size,
			       const char *link, enum tarhdr_magic magic)
{
	memset(h, 0, TARHDR_BLOCK);
	memcpy(h, name, strnlen(name, 99));
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	tarhdr_octal(h + 124, 12, size);
	tarhdr_octal(h + 136, 12, TARHDR_MTIME);
	h[156] = (unsigned char)type;
	if (link)
		memcpy(h + 157, link, strnlen(link, 99));
	memcpy(h + 257, magic == TARHDR_GNU ? "ustar  " : "ustar\0" "00", 8);
	tarhdr_sum(h);
}

#endif
