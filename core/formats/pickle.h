/*
 * pickle.h - a tiny, allowlisted pickle interpreter for the object arrays in
 * Quick, Draw! and other sketch-rnn .npz files: a 1-D object ndarray whose
 * elements are (n, 3) ndarrays of int8/16/32/64 or float16/32/64
 * (little-endian; Quick, Draw! has int16, other sketch-rnn sets float64).
 * Understands protocols 2-5 as written by Python 2 (BINSTRING/SHORT_BINSTRING
 * raw bytes), Python 3 re-saves (protocol 2 with
 * _codecs.encode(str, 'latin1'), BINBYTES/SHORT_BINBYTES, FRAME, MEMOIZE,
 * STACK_GLOBAL, BINUNICODE) and numpy 1 or 2 module names
 * (numpy.core.multiarray / numpy._core.multiarray _reconstruct, numpy.ndarray,
 * numpy.dtype).  Any other global or opcode is an error naming the file,
 * member and offset.  Nothing is ever executed or imported.
 */
#ifndef SFS_PICKLE_H
#define SFS_PICKLE_H

#include <stdint.h>
#include <stddef.h>

#include "formats/strokes.h"

/*
 * Called once per element array, in order.  `pts` points at n*3 values of
 * type t, little-endian, row-major (dx, dy, pen), NOT necessarily aligned
 * (read with memcpy), valid only during the call: it points into buf when
 * the pickle holds the raw bytes, else into a scratch buffer (latin-1 text
 * of Python 3 protocol 2 pickles, Fortran-ordered elements).  Elements are
 * passed as they are appended, before the end of the pickle is checked:
 * on a negative return, discard what the callback collected.  Return 0 to
 * go on, or -errno to stop the parse (that value is returned).
 */
typedef int (*pickle_stroke_fn)(void *arg, const uint8_t *pts, uint32_t n,
				enum stroke_dtype t);

/*
 * Parses the pickle in buf[0..len) (the bytes after the .npy header of a
 * member with descr '|O').  `what` is "file:member" for messages.
 * Calls fn for each element; returns the number of elements or -EINVAL
 * (disallowed opcode/global, malformed, element not (n,3) of a stroke
 * dtype, absurd
 * sizes: any count larger than the bytes that could back it, a memo or
 * object table over one entry per 4 bytes, elements adding up to more
 * bytes than buf holds).
 */
long pickle_parse_strokes(const uint8_t *buf, size_t len, const char *what,
			  pickle_stroke_fn fn, void *arg);

#endif
