/*
 * strokepack.h - the compact form of one drawing's stroke-3 points in the
 * Quick, Draw! index, before the block store deflates it.
 *
 * A point is int16 (dx, dy, pen), 6 bytes in the .npz; most deltas are
 * small and pen is 0 or 1, so each point is written as two LEB128 varints,
 * zigzag(dx) * 2 + pen and zigzag(dy): 2 bytes for most points.  Three
 * times fewer bytes to deflate when indexing, and to inflate per read.
 * Lossless: unpacking gives back the same int16 bytes, which the stroke
 * transform then turns into floats exactly as before.
 *
 * Not for: drawings whose pen column holds anything but 0 and 1 (the caller
 * stores those raw), the record framing (quickdraw_index.h).
 */
#ifndef SFS_STROKEPACK_H
#define SFS_STROKEPACK_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes one point can take (zigzag(dx) * 2 + 1 < 2^17: 3 bytes). */
#define STROKEPACK_MAX_POINT 6u

/*
 * Packs n points (n*3 int16 little-endian, may be unaligned) into out.
 * Returns the bytes written, -EINVAL if a pen value is not 0 or 1, or
 * -E2BIG if they do not fit in cap.
 */
long strokepack_pack(const uint8_t *pts, uint32_t n, uint8_t *out, size_t cap);

/*
 * Unpacks len bytes into pts (n*3 int16 little-endian), at most max_pts
 * points.  Returns the number of points, or -EIO if the bytes are not a
 * whole number of well-formed points (a varint longer than 3 bytes or out
 * of int16 range, a point cut short) or hold more than max_pts.
 */
long strokepack_unpack(const uint8_t *in, size_t len, uint8_t *pts,
		       uint32_t max_pts);

#endif
