/*
 * strokepack.c - stroke-3 points as pairs of zigzag varints (strokepack.h).
 * The decoder trusts nothing about its framing: it runs on bytes read back
 * from an index file and gives -EIO, never a crash or an overrun, for
 * bytes that are not whole, minimal, in-range points.  A flipped bit that
 * still frames well decodes to other points: that is for the block store's
 * adler32 and the index checksum to catch.
 */
#include "formats/strokepack.h"

#include "bytes.h"

#include <errno.h>

static uint32_t zigzag(int16_t v)
{
	return ((uint32_t)(uint16_t)v << 1) ^ (uint32_t)(v < 0 ? 0x1ffff : 0);
}

static int16_t unzigzag(uint32_t z)
{
	return (int16_t)(uint16_t)((z >> 1) ^ (0u - (z & 1)));
}

static uint8_t *put_varint(uint8_t *p, uint32_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Reads one varint of at most 3 bytes (17 bits are the most we write);
 * NULL if it runs past end, is longer, or is not minimal (ends in 0x00,
 * which put_varint never writes). */
static const uint8_t *get_varint(const uint8_t *p, const uint8_t *end, uint32_t *v)
{
	uint32_t x = 0;
	int shift;

	for (shift = 0; shift < 21; shift += 7) {
		if (p == end)
			return NULL;
		x |= (uint32_t)(*p & 0x7f) << shift;
		if (!(*p & 0x80)) {
			if (shift && !*p)
				return NULL;
			*v = x;
			return p + 1;
		}
		p++;
	}
	return NULL;
}

static int16_t get16(const uint8_t *p)
{
	return (int16_t)le16(p);
}

static void put16(uint8_t *p, int16_t v)
{
	put_le16(p, (uint16_t)v);
}

long strokepack_pack(const uint8_t *pts, uint32_t n, uint8_t *out, size_t cap)
{
	uint8_t *p = out, tmp[STROKEPACK_MAX_POINT], *q;
	uint32_t i;

	for (i = 0; i < n; i++, pts += 6) {
		int16_t pen = get16(pts + 4);

		if (pen != 0 && pen != 1)
			return -EINVAL;
		q = put_varint(tmp, zigzag(get16(pts)) * 2 + (uint32_t)pen);
		q = put_varint(q, zigzag(get16(pts + 2)));
		if ((size_t)(q - tmp) > cap - (size_t)(p - out))
			return -E2BIG;
		for (uint8_t *t = tmp; t < q; )
			*p++ = *t++;
	}
	return (long)(p - out);
}

long strokepack_unpack(const uint8_t *in, size_t len, uint8_t *pts,
		       uint32_t max_pts)
{
	const uint8_t *p = in, *end = in + len;
	uint32_t a, b;
	long n = 0;

	while (p < end) {
		if (n == (long)max_pts)
			return -EIO;
		if (!(p = get_varint(p, end, &a)) || !(p = get_varint(p, end, &b)) ||
		    a > 0x1ffff || b > 0xffff)
			return -EIO;
		put16(pts, unzigzag(a >> 1));
		put16(pts + 2, unzigzag(b));
		put16(pts + 4, (int16_t)(a & 1));
		pts += 6;
		n++;
	}
	return n;
}
