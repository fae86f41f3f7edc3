/*
 * strokes.h - the Quick, Draw! stroke preprocessing of the original pipeline:
 * int16 stroke-3 (dx, dy, pen) -> float32 absolute, centred, scaled to
 * [-100, 100], truncated or zero-padded to stroke_len rows.  Replays numpy's
 * float32 arithmetic (sequential cumsum, buffered pairwise-summed mean) so
 * results are bit-identical to numpy 1.24's.  Not the npy framing.
 */
#ifndef SFS_STROKES_H
#define SFS_STROKES_H

#include <stdint.h>

/* pts: n*3 int16 little-endian (may be unaligned); out: stroke_len*3 floats.
 * n == 0 gives all zeros (numpy raises there).  Allocates nothing. */
void stroke_transform(const uint8_t *pts, uint32_t n, uint32_t stroke_len,
		      float *out);

#endif
