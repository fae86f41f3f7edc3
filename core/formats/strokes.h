/*
 * strokes.h - the Quick, Draw! stroke preprocessing of the original pipeline:
 * stroke-3 (dx, dy, pen) -> float32 absolute, centred, scaled to
 * [-100, 100], truncated or zero-padded to stroke_len rows.  Replays numpy's
 * float32 arithmetic (sequential cumsum, buffered pairwise-summed mean) so
 * results are bit-identical to numpy 1.24's.  Also the element dtypes
 * sketch-rnn files hold (int8/16/32/64, float16/32/64) and their exact
 * conversions: to int16 when nothing is lost, else to float32 as
 * `astype(np.float32)`, the preprocessing's first step.  Not the npy framing.
 */
#ifndef SFS_STROKES_H
#define SFS_STROKES_H

#include <stddef.h>
#include <stdint.h>

/* An element array's dtype (little-endian, numpy's kind and itemsize). */
enum stroke_dtype {
	STROKE_I1, STROKE_I2, STROKE_I4, STROKE_I8, STROKE_F2, STROKE_F4, STROKE_F8,
};

/* Bytes of one value. */
size_t stroke_dtype_size(enum stroke_dtype t);
/* numpy's short name ("i2", "f8", ...: len bytes) -> type, or -1. */
int stroke_dtype_parse(const char *name, size_t len);
/* The short name, for messages. */
const char *stroke_dtype_name(enum stroke_dtype t);

/* n*3 values of type t (little-endian, may be unaligned) into int16 (n*3
 * little-endian), when every value is an integer in int16's range (and not
 * -0.0): float32 of each is then the same as float32 of the original, so
 * the transform gives the same bytes.  0, or -ERANGE (dst undefined). */
int stroke_to_i2(const uint8_t *src, enum stroke_dtype t, uint32_t n, uint8_t *dst);
/* n*3 values of type t into float32 (little-endian), rounded as numpy's
 * astype(np.float32) rounds (to nearest even; out of range gives inf). */
void stroke_to_f4(const uint8_t *src, enum stroke_dtype t, uint32_t n, uint8_t *dst);

/* pts: n*3 int16 little-endian (may be unaligned); out: stroke_len*3 floats.
 * n == 0 gives all zeros (numpy raises there).  Allocates nothing. */
void stroke_transform(const uint8_t *pts, uint32_t n, uint32_t stroke_len,
		      float *out);
/* The same for n*3 float32 points (stroke_to_f4's output). */
void stroke_transform_f4(const uint8_t *pts, uint32_t n, uint32_t stroke_len,
			 float *out);

#endif
