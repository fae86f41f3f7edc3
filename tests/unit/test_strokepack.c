/*
 * test_strokepack.c - core/formats/strokepack.c: packing and unpacking give back
 * the very bytes packed (random drawings, every int16 extreme, empty ones),
 * a pen other than 0/1 and a full buffer are refused, and badly framed or
 * cut bytes give -EIO or fewer whole points, never more points or an overrun.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/strokepack.h"

static void put16(uint8_t *p, int v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)((unsigned)v >> 8);
}

static void round_trip(const uint8_t *pts, uint32_t n)
{
	uint8_t *packed = malloc((size_t)n * STROKEPACK_MAX_POINT + 1);
	uint8_t *back = malloc((size_t)n * 6 + 1);
	long len, k;

	len = strokepack_pack(pts, n, packed, (size_t)n * STROKEPACK_MAX_POINT);
	cr_assert_geq(len, 2 * (long)n, "%u points packed in %ld bytes", n, len);
	k = strokepack_unpack(packed, (size_t)len, back, n);
	cr_assert_eq(k, (long)n);
	cr_assert_eq(memcmp(back, pts, (size_t)n * 6), 0, "points differ");
	if (n)
		cr_assert_eq(strokepack_unpack(packed, (size_t)len, back, n - 1), -EIO,
			     "more points than max_pts");
	free(packed);
	free(back);
}

Test(strokepack, random_drawings_round_trip)
{
	uint8_t pts[3000 * 6];

	srand(7);
	for (int d = 0; d < 2000; d++) {
		uint32_t n = (uint32_t)(rand() % 3000);
		int range = d % 3 == 0 ? 64 : d % 3 == 1 ? 600 : 65536;

		for (uint32_t i = 0; i < n; i++) {
			put16(pts + 6 * i, rand() % range - range / 2);
			put16(pts + 6 * i + 2, rand() % range - range / 2);
			put16(pts + 6 * i + 4, rand() % 5 == 0);
		}
		round_trip(pts, n);
	}
}

Test(strokepack, extremes_round_trip)
{
	static const int v[] = { 0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192,
				 -8193, 32767, -32768 };
	enum { N = sizeof(v) / sizeof(v[0]) };
	uint8_t pts[N * N * 2 * 6];
	uint32_t n = 0;

	for (int a = 0; a < N; a++)
		for (int b = 0; b < N; b++)
			for (int pen = 0; pen < 2; pen++, n++) {
				put16(pts + 6 * n, v[a]);
				put16(pts + 6 * n + 2, v[b]);
				put16(pts + 6 * n + 4, pen);
			}
	round_trip(pts, n);
	round_trip(pts, 0);
}

Test(strokepack, small_deltas_take_two_bytes)
{
	uint8_t pts[6], out[16];

	put16(pts, -31);
	put16(pts + 2, 63);
	put16(pts + 4, 1);
	cr_assert_eq(strokepack_pack(pts, 1, out, sizeof(out)), 2);
}

Test(strokepack, refuses_other_pens_and_full_buffers)
{
	uint8_t pts[2 * 6] = { 0 }, out[16];

	put16(pts + 4, 2);
	cr_assert_eq(strokepack_pack(pts, 2, out, sizeof(out)), -EINVAL);
	put16(pts + 4, -1);
	cr_assert_eq(strokepack_pack(pts, 2, out, sizeof(out)), -EINVAL);
	put16(pts + 4, 0);
	put16(pts + 6, 30000);   /* 3 + 1 bytes */
	cr_assert_eq(strokepack_pack(pts, 2, out, 5), -E2BIG);
	cr_assert_eq(strokepack_pack(pts, 2, out, 6), 6);
}

Test(strokepack, badly_framed_bytes_give_eio)
{
	/* a varint of 4 bytes, one over 17 bits, a dy over 16 bits, a point
	 * with its dy missing, a varint cut in the middle, a 0 written in two
	 * bytes (not minimal) */
	static const uint8_t four[] = { 0x80, 0x80, 0x80, 0x01, 0x00 };
	static const uint8_t long_zero[] = { 0x80, 0x00, 0x00 };
	static const uint8_t big_a[] = { 0xff, 0xff, 0x08, 0x00 };
	static const uint8_t big_b[] = { 0x00, 0x80, 0x80, 0x04 };
	static const uint8_t half[] = { 0x02, 0x02, 0x02 };
	static const uint8_t cut[] = { 0x02, 0x82 };
	uint8_t out[64];

	cr_assert_eq(strokepack_unpack(four, sizeof(four), out, 8), -EIO);
	cr_assert_eq(strokepack_unpack(big_a, sizeof(big_a), out, 8), -EIO);
	cr_assert_eq(strokepack_unpack(big_b, sizeof(big_b), out, 8), -EIO);
	cr_assert_eq(strokepack_unpack(half, sizeof(half), out, 8), -EIO);
	cr_assert_eq(strokepack_unpack(cut, sizeof(cut), out, 8), -EIO);
	cr_assert_eq(strokepack_unpack(long_zero, sizeof(long_zero), out, 8), -EIO);
}

/* Every prefix of a packed drawing: -EIO, or the first k whole points. */
Test(strokepack, every_truncation)
{
	uint8_t pts[200 * 6], packed[200 * STROKEPACK_MAX_POINT], back[200 * 6];
	long len, k;

	srand(3);
	for (int i = 0; i < 200; i++) {
		put16(pts + 6 * i, rand() % 20000 - 10000);
		put16(pts + 6 * i + 2, rand() % 200 - 100);
		put16(pts + 6 * i + 4, rand() % 2);
	}
	len = strokepack_pack(pts, 200, packed, sizeof(packed));
	cr_assert_gt(len, 0);
	for (long cut = 0; cut < len; cut++) {
		k = strokepack_unpack(packed, (size_t)cut, back, 200);
		cr_assert(k == -EIO || (k >= 0 && k < 200), "cut %ld gave %ld", cut, k);
		if (k > 0)
			cr_assert_eq(memcmp(back, pts, (size_t)k * 6), 0);
	}
}
