/*
 * fuzz_pickle.c - libFuzzer target for core/formats/pickle.c (and the stroke
 * packing every element then goes through at index build).
 *
 * Feeds: the input to pickle_parse_strokes, as a bare pickle or, when it
 * starts with the npy magic, as an .npz member: an object-array .npy header
 * (npy_header_parse) and the pickle after it, as quickdraw_build.c reads
 * members.  Every element the callback gets is read in full (ASan sees any
 * pointer past the input or scratch buffer), converted as the index build
 * does (stroke_to_i2, else stroke_to_f4, for dtypes other than int16),
 * packed with strokepack_pack and unpacked again, which must give back the
 * same bytes when every pen value is 0 or 1.  The count returned must be the number of callbacks.
 * Seeds: tests/fixtures/make_npz.py's pickles (qd/ .pkl files) and the raw .npz
 * members (qd/ .raw files).
 */
#include "fuzz.h"
#include "formats/npy.h"
#include "formats/pickle.h"
#include "formats/strokepack.h"

struct seen {
	long calls;
	uint64_t points;
};

static int take(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t)
{
	struct seen *s = arg;
	uint8_t *copy, *packed, *back, *f4;
	size_t cap = (size_t)n * STROKEPACK_MAX_POINT, size = (size_t)n * 3 * stroke_dtype_size(t);
	long len, got;

	s->calls++;
	s->points += n;
	copy = malloc(size > (size_t)n * 6 ? size : (size_t)n * 6 + 1);
	packed = malloc(cap + 1);
	back = malloc((size_t)n * 6 + 1);
	f4 = malloc((size_t)n * 12 + 1);
	FUZZ_CHECK(copy && packed && back && f4);
	memcpy(copy, pts, size);	/* every byte must be readable */
	if (t != STROKE_I2) {
		stroke_to_f4(copy, t, n, f4);
		if (stroke_to_i2(copy, t, n, back)) {
			free(f4);
			goto out;
		}
		memcpy(copy, back, (size_t)n * 6);
	}
	free(f4);
	len = strokepack_pack(copy, n, packed, cap);
	FUZZ_CHECK(len >= 0 || len == -EINVAL);	/* cap is always enough */
	if (len >= 0) {
		got = strokepack_unpack(packed, (size_t)len, back, n);
		FUZZ_CHECK(got == (long)n);
		FUZZ_CHECK(memcmp(back, copy, (size_t)n * 6) == 0);
	}
out:
	free(copy);
	free(packed);
	free(back);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npy_header h;
	struct seen s = { 0, 0 };
	size_t need, off = 0;
	long n;

	if (size >= 6 && memcmp(data, "\x93NUMPY", 6) == 0) {
		if (npy_header_parse(data, size, "fuzz.npz:m.npy", &h, &need))
			return 0;
		off = h.data_offset;
	}
	n = pickle_parse_strokes(data + off, size - off, "fuzz.npz:m.npy", take, &s);
	if (n >= 0)
		FUZZ_CHECK(n == s.calls);
	/* work bounded by the input (issue 8: a small constant times its
	 * size): elements handed out, memo reuse included, at most 64x */
	FUZZ_CHECK(s.points * 6 <= (uint64_t)size * 64);
	return 0;
}
