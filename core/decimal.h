/*
 * decimal.h - the length of a number in decimal, once for the layouts and
 * formats that size names and members before writing them (vtar's label
 * members and pax records, Quick, Draw!'s %06d names, ImageNet's
 * shuffled.txt lines).  Like bytes.h it sits at the top of core/ and may
 * be included anywhere.
 *
 * Not for: parsing or printing numbers (strtoull, snprintf).
 */
#ifndef SFS_DECIMAL_H
#define SFS_DECIMAL_H

#include <stdint.h>

/* digits of v in decimal, without sign or leading zeros: 1 for 0 */
static inline unsigned decimal_digits(uint64_t v)
{
	unsigned n = 1;

	for (; v >= 10; v /= 10)
		n++;
	return n;
}

#endif
