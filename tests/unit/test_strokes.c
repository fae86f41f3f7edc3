/*
 * test_strokes.c - core/formats/strokes.c against the pipeline's numpy code, from
 * $SFS_FIXTURES/strokes/cases.bin (tests/fixtures/make_strokes.py): every
 * case must match bit for bit, including strokes longer than numpy's
 * reduction buffer, int16 extremes and m == 0.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/strokes.h"

#define FIXTURE_SUBDIR "strokes"
#include "fixture.h"

/* Runs one case with the points at an odd address (the npz data is not
 * aligned) and canaries around the output. */
static void run_case(const uint8_t *raw, uint32_t n, uint32_t stroke_len,
		     const uint8_t *want_le, size_t ncase)
{
	uint8_t *pts = malloc((size_t)n * 6 + 1);
	float *out = malloc(((size_t)stroke_len * 3 + 2) * sizeof(float));
	float want;

	memcpy(pts + 1, raw, (size_t)n * 6);
	out[0] = out[stroke_len * 3 + 1] = 12345.0f;
	stroke_transform(pts + 1, n, stroke_len, out + 1);
	cr_assert_eq(out[0], 12345.0f);
	cr_assert_eq(out[stroke_len * 3 + 1], 12345.0f, "wrote past stroke_len");
	for (size_t i = 0; i < (size_t)stroke_len * 3; i++) {
		memcpy(&want, want_le + 4 * i, 4);
		cr_assert(out[1 + i] == want,
			  "case %zu (n %u, len %u) row %zu col %zu: %.9g != numpy %.9g",
			  ncase, n, stroke_len, i / 3, i % 3, out[1 + i], want);
	}
	free(pts);
	free(out);
}

Test(strokes, bit_exact_with_numpy)
{
	size_t len, off = 0, ncase = 0, nlong = 0;
	uint8_t *buf = slurp("cases.bin", &len);
	uint32_t n, stroke_len;

	while (off < len) {
		cr_assert_leq(off + 8, len);
		memcpy(&n, buf + off, 4);
		memcpy(&stroke_len, buf + off + 4, 4);
		off += 8;
		cr_assert_leq(off + (size_t)n * 6 + (size_t)stroke_len * 12, len);
		run_case(buf + off, n, stroke_len, buf + off + (size_t)n * 6, ncase);
		off += (size_t)n * 6 + (size_t)stroke_len * 12;
		ncase++;
		nlong += n > 8192;
	}
	cr_assert_geq(ncase, 3000, "only %zu cases", ncase);
	cr_assert_geq(nlong, 5, "no strokes longer than numpy's buffer");
	free(buf);
}

Test(strokes, empty_is_zeros)
{
	float out[130 * 3];
	uint8_t none[1] = { 0 };

	memset(out, 0x7f, sizeof(out));
	stroke_transform(none, 0, 130, out);
	for (size_t i = 0; i < 130 * 3; i++)
		cr_assert_eq(out[i], 0.0f);
}

/* The mean and the scale come from all n points, not just the rows kept. */
Test(strokes, truncation_keeps_whole_stroke_statistics)
{
	int16_t raw[4][3] = { { 0, 0, 0 }, { 10, 0, 0 }, { 10, 0, 0 }, { 10, 0, 1 } };
	float out[3];

	stroke_transform((const uint8_t *)raw, 4, 1, out);
	/* x = 0, 10, 20, 30: mean 15, max |x - 15| = 15 -> (0 - 15) * 100/15 */
	cr_assert_float_eq(out[0], -100.0f, 1e-5);
	cr_assert_eq(out[1], 0.0f);
	cr_assert_eq(out[2], 0.0f);
}
