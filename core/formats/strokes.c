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
 * Not for: the npy framing of the result (the layout writes the header).
 */
#include "formats/strokes.h"

#include <math.h>
#include <string.h>

#define NPY_BUFSIZE 8192   /* numpy's default ufunc buffer, in elements */
#define PW_BLOCKSIZE 128   /* numpy's pairwise-summation leaf size */

/* Walks one column's cumulative sum, in float32 as np.cumsum does. */
struct cumsum {
	const uint8_t *p;  /* next point's int16 in this column */
	float acc;
};

static float cumsum_next(struct cumsum *c)
{
	int16_t v = (int16_t)(c->p[0] | c->p[1] << 8);

	c->p += 6;
	c->acc += (float)v;
	return c->acc;
}

static void cumsum_init(struct cumsum *c, const uint8_t *pts, int col)
{
	c->p = pts + 2 * col;
	c->acc = 0.0f;
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
static float column_mean(const uint8_t *pts, uint32_t n, int col)
{
	struct cumsum c;
	float sum = 0.0f;
	uint32_t done, k;

	cumsum_init(&c, pts, col);
	for (done = 0; done < n; done += k) {
		k = n - done < NPY_BUFSIZE ? n - done : NPY_BUFSIZE;
		sum += pairwise_sum(&c, k);
	}
	return (float)((double)sum / (double)n);
}

static float column_maxabs(const uint8_t *pts, uint32_t n, int col, float mean)
{
	struct cumsum c;
	float m = 0.0f, v;
	uint32_t i;

	cumsum_init(&c, pts, col);
	for (i = 0; i < n; i++) {
		v = fabsf(cumsum_next(&c) - mean);
		if (v > m)
			m = v;
	}
	return m;
}

void stroke_transform(const uint8_t *pts, uint32_t n, uint32_t stroke_len,
		      float *out)
{
	struct cumsum cx, cy;
	float mx, my, m, m_y, scale = 1.0f;
	uint32_t i, rows = n < stroke_len ? n : stroke_len;
	int scaled;

	memset(out, 0, (size_t)stroke_len * 3 * sizeof(float));
	if (n == 0)
		return;   /* numpy would raise on the empty max; we give zeros */
	mx = column_mean(pts, n, 0);
	my = column_mean(pts, n, 1);
	m = column_maxabs(pts, n, 0, mx);
	m_y = column_maxabs(pts, n, 1, my);
	if (m_y > m)
		m = m_y;
	/* 100.0 / m is a float64 scalar; `s *= scalar` casts it to float32 */
	scaled = m > 0.0f;
	if (scaled)
		scale = (float)(100.0 / (double)m);
	cumsum_init(&cx, pts, 0);
	cumsum_init(&cy, pts, 1);
	for (i = 0; i < rows; i++) {
		const uint8_t *p = pts + (size_t)i * 6 + 4;
		float x = cumsum_next(&cx) - mx, y = cumsum_next(&cy) - my;

		out[3 * i] = scaled ? x * scale : x;
		out[3 * i + 1] = scaled ? y * scale : y;
		out[3 * i + 2] = (float)(int16_t)(p[0] | p[1] << 8);
	}
}
