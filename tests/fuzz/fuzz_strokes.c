/*
 * fuzz_strokes.c - libFuzzer target for the Quick, Draw! stroke path:
 * core/formats/strokepack.c, core/formats/strokes.c and core/index/blockstore.c's reader.
 *
 * Feeds, by the input's first byte (mod 3):
 *   0  the rest as packed points: strokepack_unpack (at most len / 2
 *      points); what unpacks must pack and unpack again to the same points,
 *      and stroke_transform of them (stroke_len from the second byte) must
 *      give finite values in [-100, 100] but for the pen column;
 *   1  the rest as int16 (dx, dy, pen) points: strokepack_pack must fail
 *      with -EINVAL exactly when a pen is not 0 or 1, else unpack to the
 *      same bytes; then stroke_transform as above; and the same bytes
 *      as float32 points (other sketch-rnn sets): stroke_transform_f4,
 *      whose values may be anything (NaN, inf) but whose padding rows
 *      must be zeros;
 *   2  the rest as the three sections of a block store: u32 data length,
 *      u32 block-table length, then data, block table, record table
 *      (copied to aligned memory); if the second byte is odd, every raw
 *      block's adler32 is recomputed first so records can be read;
 *      blockstore_open_sections, then blockstore_len / blockstore_get of
 *      every record through a small LRU, twice (miss, then hit), and a
 *      packed ('P') record is unpacked as the layout does.
 * Seeds: a few hand-made inputs per mode (tests/fuzz/seeds.py); the valid
 * block stores built by the index build are fuzzed by fuzz_index.
 */
#include <math.h>
#include <zlib.h>

#include "index/blockstore.h"
#include "bsread.h"
#include "fuzz.h"
#include "formats/strokepack.h"
#include "formats/strokes.h"

static void transform(const uint8_t *pts, uint32_t n, uint32_t stroke_len)
{
	float *out = malloc((size_t)stroke_len * 3 * sizeof(float));
	uint32_t i;

	FUZZ_CHECK(out);
	stroke_transform(pts, n, stroke_len, out);
	for (i = 0; i < stroke_len; i++) {
		FUZZ_CHECK(isfinite(out[3 * i]) && fabsf(out[3 * i]) <= 100.01f);
		FUZZ_CHECK(isfinite(out[3 * i + 1]) && fabsf(out[3 * i + 1]) <= 100.01f);
		if (i >= n)
			FUZZ_CHECK(out[3 * i] == 0 && out[3 * i + 1] == 0 && out[3 * i + 2] == 0);
	}
	free(out);
}

static void transform_f4(const uint8_t *pts, uint32_t n, uint32_t stroke_len)
{
	float *out = malloc((size_t)stroke_len * 3 * sizeof(float));
	uint32_t i;

	FUZZ_CHECK(out);
	stroke_transform_f4(pts, n, stroke_len, out);
	for (i = n; i < stroke_len; i++)
		FUZZ_CHECK(out[3 * i] == 0 && out[3 * i + 1] == 0 && out[3 * i + 2] == 0);
	free(out);
}

static void packed(const uint8_t *in, size_t len, uint32_t stroke_len)
{
	uint32_t max = (uint32_t)(len / 2 < 1u << 20 ? len / 2 : 1u << 20);
	uint8_t *pts = malloc((size_t)max * 6 + 1), *re = malloc(len + 1),
		*pts2 = malloc((size_t)max * 6 + 1);
	long n, k, n2;

	FUZZ_CHECK(pts && re && pts2);
	n = strokepack_unpack(in, len, pts, max);
	FUZZ_CHECK(n >= 0 || n == -EIO);
	if (n >= 0) {
		FUZZ_CHECK((size_t)n * 2 <= len);
		k = strokepack_pack(pts, (uint32_t)n, re, len + 1);
		FUZZ_CHECK(k >= 0 && (size_t)k <= len);
		n2 = strokepack_unpack(re, (size_t)k, pts2, max);
		FUZZ_CHECK(n2 == n && memcmp(pts, pts2, (size_t)n * 6) == 0);
		transform(pts, (uint32_t)n, stroke_len);
	}
	free(pts);
	free(re);
	free(pts2);
}

static void points(const uint8_t *in, size_t len, uint32_t stroke_len)
{
	uint32_t n = (uint32_t)(len / 6 < 1u << 20 ? len / 6 : 1u << 20), i;
	size_t cap = (size_t)n * STROKEPACK_MAX_POINT;
	uint8_t *buf = malloc(cap + 1), *back = malloc((size_t)n * 6 + 1);
	int pens_ok = 1;
	long k;

	FUZZ_CHECK(buf && back);
	for (i = 0; i < n; i++)
		if ((in[6 * i + 4] | in[6 * i + 5] << 8) > 1)
			pens_ok = 0;
	k = strokepack_pack(in, n, buf, cap);
	FUZZ_CHECK(pens_ok ? k >= 0 : k == -EINVAL);
	if (k >= 0) {
		FUZZ_CHECK(strokepack_unpack(buf, (size_t)k, back, n) == (long)n);
		FUZZ_CHECK(memcmp(back, in, (size_t)n * 6) == 0);
		/* one point short of room is an error, never an overrun */
		if (n && k > 0)
			FUZZ_CHECK(strokepack_pack(in, n, buf, (size_t)k - 1) == -E2BIG);
	}
	transform(in, n, stroke_len);
	transform_f4(in, (uint32_t)(len / 12 < 1u << 20 ? len / 12 : 1u << 20), stroke_len);
	free(buf);
	free(back);
}

struct blk24 {	/* blockstore.c's struct bs_blk, for the adler fix */
	uint64_t off;
	uint32_t first, adler, zlen, rawlen;
};

static void blocks(const uint8_t *in, size_t len, int fix)
{
	uint64_t *blk = NULL;
	uint16_t *rec = NULL;
	uint8_t *data = NULL;
	struct blockstore bs;
	size_t dlen, blen, rlen, i;

	if (len < 8)
		return;
	dlen = (size_t)in[0] | (size_t)in[1] << 8 | (size_t)in[2] << 16 | (size_t)in[3] << 24;
	blen = (size_t)in[4] | (size_t)in[5] << 8 | (size_t)in[6] << 16 | (size_t)in[7] << 24;
	in += 8;
	len -= 8;
	if (dlen > len || blen > len - dlen)
		return;
	rlen = len - dlen - blen;
	data = malloc(dlen + 1);
	blk = malloc(blen + 8);
	rec = malloc(rlen + 2);
	FUZZ_CHECK(data && blk && rec);
	memcpy(data, in, dlen);
	memcpy(blk, in + dlen, blen);
	memcpy(rec, in + dlen + blen, rlen);
	if (fix) {
		struct blk24 *b = (struct blk24 *)blk;

		for (i = 0; i < blen / sizeof(*b); i++)
			if (b[i].zlen == b[i].rawlen && b[i].off <= dlen &&
			    b[i].zlen <= dlen - b[i].off)
				b[i].adler = (uint32_t)adler32(adler32(0, NULL, 0),
							       data + b[i].off, b[i].zlen);
	}
	if (blockstore_open_sections(&bs, data, dlen, blk, blen, rec, rlen, 0) == 0) {
		FUZZ_CHECK(blockstore_count(&bs) == bs.nrec);
		bsread(&bs, 64u << 10);
	}
	free(data);
	free(blk);
	free(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t stroke_len;

	if (size < 2)
		return 0;
	stroke_len = 1 + data[1];
	switch (data[0] % 3) {
	case 0: packed(data + 2, size - 2, stroke_len); break;
	case 1: points(data + 2, size - 2, stroke_len); break;
	default: blocks(data + 2, size - 2, data[1] & 1); break;
	}
	return 0;
}
