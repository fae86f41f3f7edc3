/*
 * npy.h - the .npy file format (numpy/lib/format.py): parse a header of any
 * version (1.0, 2.0, 3.0) and emit the version 1.0 header numpy's np.save
 * writes, byte for byte.  Not for object arrays' pickled payload (pickle.h).
 */
#ifndef SFS_NPY_H
#define SFS_NPY_H

#include <stdint.h>
#include <stddef.h>

#define NPY_MAX_DIMS 16

struct npy_header {
	char     descr[32];      /* as written, e.g. "<f4", "|u1", "|O" */
	int      fortran_order;
	int      ndim;
	uint64_t shape[NPY_MAX_DIMS];
	uint32_t itemsize;       /* bytes per element from descr (0 for "|O") */
	uint32_t data_offset;    /* bytes from file start to the first element */
	int      version;        /* 1, 2 or 3 */
};

/*
 * Parses the header at the start of buf (len bytes available; 4 KiB is
 * enough for every header numpy writes, but larger are handled when len
 * allows).  `what` names the file for messages.  Returns 0, -EINVAL with a
 * message naming `what`, the offset and what was expected (h->descr then
 * holds the descr if it was read, so a caller can tell a dtype it does not
 * serve from a broken header), or -EAGAIN when
 * len is too short to hold the header (the caller reads more and retries;
 * *need is then the total bytes required).
 */
int npy_header_parse(const uint8_t *buf, size_t len, const char *what,
		     struct npy_header *h, size_t *need);
/* The same, but a bad header's message (without `what`) goes into why
 * (whylen bytes) instead of being printed, for callers that skip such
 * files with a warning.  why NULL: printed, as npy_header_parse. */
int npy_header_parse_why(const uint8_t *buf, size_t len, const char *what,
			 struct npy_header *h, size_t *need, char *why,
			 size_t whylen);

/* Product of shape[from..ndim), saturating at UINT64_MAX on overflow. */
uint64_t npy_count(const struct npy_header *h, int from);

/*
 * Writes the header np.save would write (version 1.0, numpy >= 1.24 padding)
 * for an array of `descr`, C order, `ndim` dims `shape`, into out.  Returns
 * its length (a multiple of 64) or -ENOSPC if outlen is too small.
 */
int npy_header_emit(char *out, size_t outlen, const char *descr, int ndim,
		    const uint64_t *shape);

/*
 * The descr np.save writes for an array numpy loaded with `descr`, on this
 * (little-endian) machine: "u1" -> "|u1", "=f4" -> "<f4", "?" -> "|b1",
 * ">i4" stays.  0, -EINVAL for a descr npy_header_parse rejects, -ENOSPC.
 */
int npy_descr_normalize(const char *descr, char *out, size_t outlen);

#endif
