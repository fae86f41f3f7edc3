/*
 * test_strokes.c - core/formats/strokes.c against the pipeline's numpy code, from
 * $SFS_FIXTURES/strokes/cases.bin (tests/fixtures/make_strokes.py): every
 * case must match bit for bit, including strokes longer than numpy's
 * reduction buffer, int16 extremes and m == 0.  And dtypes.bin, drawings
 * of the other sketch-rnn dtypes (int8/16/32/64, float16/32/64) taken the
 * way the index build takes them (stroke_to_i2, else stroke_to_f4 and
 * stroke_transform_f4): byte for byte, -0.0 and NaN included.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/strokes.h"
#include <errno.h>

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

/* One dtypes.bin case as the build and the layout take it, compared byte
 * for byte (a -0.0 or a NaN's bits must be numpy's too).  Returns 1 when
 * it went through float32 points. */
static int run_dtype_case(enum stroke_dtype t, const uint8_t *raw, uint32_t n,
			  uint32_t stroke_len, const uint8_t *want, size_t ncase)
{
	size_t vsize = stroke_dtype_size(t);
	uint8_t *src = malloc((size_t)n * 3 * vsize + 1), *conv = malloc((size_t)n * 12 + 1);
	float *out = malloc((size_t)stroke_len * 12 + 1);
	int f4 = 0;

	cr_assert(src && conv && out);
	memcpy(src + 1, raw, (size_t)n * 3 * vsize);   /* unaligned, as in a pickle */
	if (stroke_to_i2(src + 1, t, n, conv + 1) == 0) {
		stroke_transform(conv + 1, n, stroke_len, out);
	} else {
		f4 = 1;
		stroke_to_f4(src + 1, t, n, conv + 1);
		stroke_transform_f4(conv + 1, n, stroke_len, out);
	}
	for (size_t i = 0; i < (size_t)stroke_len * 3; i++) {
		float w;

		memcpy(&w, want + 4 * i, 4);
		cr_assert(!memcmp(&out[i], want + 4 * i, 4),
			  "dtype case %zu (%s, n %u, len %u, %s) row %zu col %zu: %.9g != numpy %.9g",
			  ncase, stroke_dtype_name(t), n, stroke_len, f4 ? "float32" : "int16",
			  i / 3, i % 3, out[i], w);
	}
	free(src);
	free(conv);
	free(out);
	return f4;
}

Test(strokes, every_dtype_bit_exact_with_numpy)
{
	size_t len, off = 0, ncase = 0, nf4 = 0, ni2 = 0, per[STROKE_F8 + 1] = { 0 };
	uint8_t *buf = slurp("dtypes.bin", &len);
	uint32_t n, stroke_len;
	int t;

	while (off < len) {
		cr_assert_leq(off + 10, len);
		t = stroke_dtype_parse((const char *)buf + off, 2);
		cr_assert(t >= 0, "case %zu: unknown dtype %.2s", ncase, buf + off);
		memcpy(&n, buf + off + 2, 4);
		memcpy(&stroke_len, buf + off + 6, 4);
		off += 10;
		cr_assert_leq(off + (size_t)n * 3 * stroke_dtype_size(t) + (size_t)stroke_len * 12, len);
		if (run_dtype_case(t, buf + off, n, stroke_len,
				   buf + off + (size_t)n * 3 * stroke_dtype_size(t), ncase))
			nf4++;
		else
			ni2++;
		per[t]++;
		off += (size_t)n * 3 * stroke_dtype_size(t) + (size_t)stroke_len * 12;
		ncase++;
	}
	for (t = STROKE_I1; t <= STROKE_F8; t++)
		cr_assert_geq(per[t], 150, "only %zu cases of %s", per[t], stroke_dtype_name(t));
	cr_assert_geq(nf4, 300, "only %zu cases went through float32", nf4);
	cr_assert_geq(ni2, 300, "only %zu cases went through int16", ni2);
	free(buf);
}

/* What may go as int16 and what may not. */
Test(strokes, int16_only_when_exact)
{
	double ok[3] = { -32768.0, 32767.0, 0.0 }, neg0[3] = { 1, 2, -0.0 },
	       frac[3] = { 1, 2.5, 0 }, big[3] = { 32768.0, 0, 0 };
	int32_t i4[3] = { 5, -32769, 0 };
	uint8_t dst[6];

	cr_assert_eq(stroke_to_i2((const uint8_t *)ok, STROKE_F8, 1, dst), 0);
	cr_assert_eq(dst[0] | dst[1] << 8, 0x8000);
	cr_assert_eq(stroke_to_i2((const uint8_t *)neg0, STROKE_F8, 1, dst), -ERANGE);
	cr_assert_eq(stroke_to_i2((const uint8_t *)frac, STROKE_F8, 1, dst), -ERANGE);
	cr_assert_eq(stroke_to_i2((const uint8_t *)big, STROKE_F8, 1, dst), -ERANGE);
	cr_assert_eq(stroke_to_i2((const uint8_t *)i4, STROKE_I4, 1, dst), -ERANGE);
}
