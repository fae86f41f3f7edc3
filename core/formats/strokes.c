/*
 * strokes.c - the Quick, Draw! stroke preprocessing, bit-exact with numpy:
 *
 *   s = raw.astype(float32); s[:, :2] = cumsum(s[:, :2]);
 *   s[:, :2] -= mean;  s[:, :2] *= 100.0 / max|s[:, :2]|;  pad/truncate.
 *
 * numpy's float32 reductions are not sequential: np.sum / np.mean reduce in
 * buffers of NPY_BUFSIZE (8192) elements, each summed pairwise (8-way
 * unrolled below 128 elements, halved above), the buffer sums added in
 * order.  We replay exactly that order.  The centred values never need to be
 * stored: every pass re-derives the cumulative sum as it walks the points,
 * which also visits the pairwise tree's leaves in order, so a transform
 * needs no memory beyond `out` (no per-sample allocation while mounted).
 *
 * The points are int16 (Quick, Draw!, and any stroke file whose values
 * int16 holds exactly) or float32: other dtypes are cast to float32 when
 * indexed (stroke_to_f4), which is the preprocessing's first step, so the
 * rest replays the same float32 operations.  With float input the signs of
 * zeros, NaN and inf matter too: np.cumsum copies the first value (-0.0
 * stays -0.0), np.max propagates NaN, and a scale 100 / m past float32's
 * range is applied in float64 (numpy 1.x's value-based casting).
 *
 * Not for: the npy framing of the result (the layout writes the header).
 */
#include "formats/strokes.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define NPY_BUFSIZE 8192   /* numpy's default ufunc buffer, in elements */
#define PW_BLOCKSIZE 128   /* numpy's pairwise-summation leaf size */

/* One value of a point as float32: int16 or float32, little-endian. */
static float value_at(const uint8_t *p, int f4)
{
	uint32_t u;
	float f;

	if (!f4)
		return (float)(int16_t)(p[0] | p[1] << 8);
	u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
	memcpy(&f, &u, 4);
	return f;
}

/* Walks one column's cumulative sum, in float32 as np.cumsum does. */
struct cumsum {
	const uint8_t *p;  /* next point's value in this column */
	int f4;            /* values are float32, else int16 */
	float acc;
};

static float cumsum_next(struct cumsum *c)
{
	c->acc += value_at(c->p, c->f4);
	c->p += c->f4 ? 12 : 6;
	return c->acc;
}

/* acc starts at -0.0, the identity of +: np.cumsum's first value is the
 * input's own, a -0.0 included (0.0 + -0.0 would be +0.0). */
static void cumsum_init(struct cumsum *c, const uint8_t *pts, int f4, int col)
{
	c->p = pts + (f4 ? 4 : 2) * col;
	c->f4 = f4;
	c->acc = -0.0f;
}

/* numpy's FLOAT_pairwise_sum over the next n cumulative values. */
static float pairwise_sum(struct cumsum *c, uint32_t n)
{
	float r[8], res = 0.0f;
	uint32_t i, j, n2;

	if (n < 8) {
		for (i = 0; i < n; i++)
			res += cumsum_next(c);
		return res;
	}
	if (n <= PW_BLOCKSIZE) {
		for (j = 0; j < 8; j++)
			r[j] = cumsum_next(c);
		for (i = 8; i < n - n % 8; i += 8)
			for (j = 0; j < 8; j++)
				r[j] += cumsum_next(c);
		res = ((r[0] + r[1]) + (r[2] + r[3])) +
		      ((r[4] + r[5]) + (r[6] + r[7]));
		for (; i < n; i++)
			res += cumsum_next(c);
		return res;
	}
	n2 = n / 2;
	n2 -= n2 % 8;
	res = pairwise_sum(c, n2);   /* left half first: it advances c */
	return res + pairwise_sum(c, n - n2);
}

/* np.mean of the column: buffer-wise pairwise sum, divided in double
 * (float32 scalar / Python int is float64 in numpy 1.x), cast back. */
static float column_mean(const uint8_t *pts, int f4, uint32_t n, int col)
{
	struct cumsum c;
	float sum = 0.0f;   /* np.add.reduce starts from its identity, +0.0 */
	uint32_t done, k;

	cumsum_init(&c, pts, f4, col);
	for (done = 0; done < n; done += k) {
		k = n - done < NPY_BUFSIZE ? n - done : NPY_BUFSIZE;
		sum += pairwise_sum(&c, k);
	}
	return (float)((double)sum / (double)n);
}

/* np.abs(col).max(): a NaN anywhere makes it NaN. */
static float column_maxabs(const uint8_t *pts, int f4, uint32_t n, int col,
			   float mean)
{
	struct cumsum c;
	float m = 0.0f, v;
	uint32_t i;

	cumsum_init(&c, pts, f4, col);
	for (i = 0; i < n; i++) {
		v = fabsf(cumsum_next(&c) - mean);
		if (v > m || isnan(v))
			m = v;
		if (isnan(m))
			break;
	}
	return m;
}

/* `col *= 100.0 / m`: the float64 scale is cast to float32 when numpy's
 * min_scalar_type finds it fits (below 3.4e38, or not finite), else the
 * product is taken in float64 and cast back. */
static float scaled(float x, double scale)
{
	if (scale < 3.4e38 || !isfinite(scale))
		return x * (float)scale;
	return (float)((double)x * scale);
}

static void transform(const uint8_t *pts, int f4, uint32_t n,
		      uint32_t stroke_len, float *out)
{
	struct cumsum cx, cy;
	float mx, my, m, m_y;
	double scale = 1.0;
	uint32_t i, rows = n < stroke_len ? n : stroke_len;
	size_t stride = f4 ? 12 : 6;
	int scale_it;

	memset(out, 0, (size_t)stroke_len * 3 * sizeof(float));
	if (n == 0)
		return;   /* numpy would raise on the empty max; we give zeros */
	mx = column_mean(pts, f4, n, 0);
	my = column_mean(pts, f4, n, 1);
	m = column_maxabs(pts, f4, n, 0, mx);
	m_y = column_maxabs(pts, f4, n, 1, my);
	if (m_y > m)      /* Python's max(a, b): a unless b > a */
		m = m_y;
	scale_it = m > 0.0f;   /* false for NaN; inf scales by 0 */
	if (scale_it)          /* 100.0 / m is a float64 scalar */
		scale = 100.0 / (double)m;
	cumsum_init(&cx, pts, f4, 0);
	cumsum_init(&cy, pts, f4, 1);
	for (i = 0; i < rows; i++) {
		float x = cumsum_next(&cx) - mx, y = cumsum_next(&cy) - my;

		out[3 * i] = scale_it ? scaled(x, scale) : x;
		out[3 * i + 1] = scale_it ? scaled(y, scale) : y;
		out[3 * i + 2] = value_at(pts + (size_t)i * stride + stride / 3 * 2, f4);
	}
}

void stroke_transform(const uint8_t *pts, uint32_t n, uint32_t stroke_len,
		      float *out)
{
	transform(pts, 0, n, stroke_len, out);
}

void stroke_transform_f4(const uint8_t *pts, uint32_t n, uint32_t stroke_len,
			 float *out)
{
	transform(pts, 1, n, stroke_len, out);
}

/* ---- element dtypes ---- */

static const struct {
	const char *name;
	uint8_t size;
} dtypes[] = {
	[STROKE_I1] = { "i1", 1 }, [STROKE_I2] = { "i2", 2 }, [STROKE_I4] = { "i4", 4 },
	[STROKE_I8] = { "i8", 8 }, [STROKE_F2] = { "f2", 2 }, [STROKE_F4] = { "f4", 4 },
	[STROKE_F8] = { "f8", 8 },
};

size_t stroke_dtype_size(enum stroke_dtype t)
{
	return dtypes[t].size;
}

const char *stroke_dtype_name(enum stroke_dtype t)
{
	return dtypes[t].name;
}

int stroke_dtype_parse(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (len == 2 && !memcmp(dtypes[i].name, name, 2))
			return (int)i;
	return -1;
}

static uint64_t load_le(const uint8_t *p, size_t size)
{
	uint64_t v = 0;

	while (size--)
		v = v << 8 | p[size];
	return v;
}

/* IEEE half bits to float, as numpy's npy_halfbits_to_floatbits (exact;
 * a NaN keeps its payload). */
static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = h & 0x7c00u,
		 sig = h & 0x03ffu, bits;
	float f;

	if (exp == 0x7c00u) {
		bits = sign | 0x7f800000u | sig << 13;
	} else if (exp) {
		bits = sign | (((uint32_t)(h & 0x7fffu) + 0x1c000u) << 13);
	} else {
		f = ldexpf((float)sig, -24);   /* zero or subnormal: exact */
		return sign ? -f : f;
	}
	memcpy(&f, &bits, 4);
	return f;
}

/* Value i of src as float32, as astype(np.float32) gives it. */
static float load_f4(const uint8_t *src, enum stroke_dtype t, size_t i)
{
	uint64_t u = load_le(src + i * dtypes[t].size, dtypes[t].size);
	uint32_t u32 = (uint32_t)u;
	double d;
	float f;

	switch (t) {
	case STROKE_I1: return (float)(int8_t)(uint8_t)u;
	case STROKE_I2: return (float)(int16_t)(uint16_t)u;
	case STROKE_I4: return (float)(int32_t)u32;
	case STROKE_I8: return (float)(int64_t)u;
	case STROKE_F2: return half_to_float((uint16_t)u);
	case STROKE_F4:
		memcpy(&f, &u32, 4);
		return f;
	case STROKE_F8:
	default:
		memcpy(&d, &u, 8);
		return (float)d;   /* round to nearest; past FLT_MAX: inf */
	}
}

/* What the transform sees is float32 of each value: when that is an int16
 * (+0.0, not -0.0, whose sign the output can keep), int16 carries it
 * exactly. */
int stroke_to_i2(const uint8_t *src, enum stroke_dtype t, uint32_t n, uint8_t *dst)
{
	size_t i;
	int16_t v;
	float f;

	for (i = 0; i < (size_t)n * 3; i++) {
		f = load_f4(src, t, i);
		/* NaN fails both comparisons */
		if (!(f >= -32768.0f && f <= 32767.0f))
			return -ERANGE;
		v = (int16_t)f;
		if ((float)v != f || (f == 0.0f && signbit(f)))
			return -ERANGE;
		dst[2 * i] = (uint8_t)(uint16_t)v;
		dst[2 * i + 1] = (uint8_t)((uint16_t)v >> 8);
	}
	return 0;
}

void stroke_to_f4(const uint8_t *src, enum stroke_dtype t, uint32_t n, uint8_t *dst)
{
	uint32_t u;
	size_t i;
	float f;

	for (i = 0; i < (size_t)n * 3; i++) {
		f = load_f4(src, t, i);
		memcpy(&u, &f, 4);
		dst[4 * i] = (uint8_t)u;
		dst[4 * i + 1] = (uint8_t)(u >> 8);
		dst[4 * i + 2] = (uint8_t)(u >> 16);
		dst[4 * i + 3] = (uint8_t)(u >> 24);
	}
}
