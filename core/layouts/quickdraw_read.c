/*
 * quickdraw_read.c - the bytes of a Quick, Draw! sample's files
 * (quickdraw_tree.h): an image row read from its class .npy and scaled,
 * a drawing's points from the index's stroke records, transformed; each
 * behind its .npy header.
 */
#include "layouts/quickdraw_tree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "formats/strokepack.h"
#include "formats/strokes.h"
#include "io/source.h"
#include "log.h"


ssize_t qd_copy_range(char *dst, size_t size, uint64_t off, const void *hdr,
		      size_t hlen, const void *body, size_t blen)
{
	size_t n = 0, k;

	if (off < hlen) {
		k = hlen - off < size ? hlen - (size_t)off : size;
		memcpy(dst, (const char *)hdr + off, k);
		n = k;
		off = hlen;
	}
	if (off - hlen < blen && n < size) {
		k = blen - (off - hlen);
		if (k > size - n)
			k = size - n;
		memcpy(dst + n, (const char *)body + (off - hlen), k);
		n += k;
	}
	return (ssize_t)n;
}

/*
 * An epoch in gidx order reads class after class, each from its own file.
 * Readahead within a file keeps the reader fed, but the next class's file
 * would start cold: over HTTP, round trips before its first bytes come.  So
 * when a reader reaches the row NEXT_CLASS_AHEAD bytes before the end of
 * its class, the first NEXT_CLASS_AHEAD bytes of the next class are asked
 * for (a hint: fetched in the background, or fadvise'd locally).  Only that
 * one row triggers it, so random readers almost never do.
 */
#define NEXT_CLASS_AHEAD (1u << 20)

static void hint_next_class(const struct qd *q, const struct qd_class *c,
			    uint32_t label, uint64_t row)
{
	uint64_t rows = NEXT_CLASS_AHEAD / QD_ROW;
	const struct qd_src *next;
	uint64_t len;

	if (row != (c->n > rows ? c->n - rows : 0) || label + 1 >= q->hd->nclass)
		return;
	next = &q->scan.cls[label + 1];
	len = next->img_rows * QD_ROW;
	if (next->img && len)
		source_advise(next->img, next->img_off,
			      len < NEXT_CLASS_AHEAD ? len : NEXT_CLASS_AHEAD,
			      SOURCE_ADV_WILLNEED);
}

ssize_t qd_read_image(const struct qd *q, uint64_t gidx, char *buf, size_t size,
		      uint64_t off)
{
	const struct qd_src *s;
	const struct qd_class *c;
	uint8_t row[QD_ROW];
	float f[QD_ROW];
	uint64_t at;
	uint32_t label, i;
	ssize_t got;

	if (off >= q->img_size)
		return 0;
	c = qd_class_of(q->cls, q->hd->nclass, gidx, &label);
	s = &q->scan.cls[label];
	at = s->img_off + (gidx - c->gidx_base) * QD_ROW;
	if (off == 0)
		hint_next_class(q, c, label, gidx - c->gidx_base);
	got = source_pread(s->img, row, QD_ROW, at);
	if (got == -EAGAIN)
		return -EAGAIN;
	/* checked after the read, so bytes of a file changed meanwhile are
	 * never served; a changed file is the usual cause of a short read.
	 * The class file must still be what was scanned: same size and mtime. */
	if (source_check(s->img) < 0)
		return -EIO;
	if (got != QD_ROW) {
		sfs_err("%s: offset %" PRIu64 ": expected %u bytes, got %zd",
			s->img_path, at, QD_ROW, got);
		return -EIO;
	}
	if (q->image_uint8)
		return qd_copy_range(buf, size, off, q->img_hdr, q->img_hdr_len, row, QD_ROW);
	for (i = 0; i < QD_ROW; i++)
		f[i] = q->lut[row[i]];
	return qd_copy_range(buf, size, off, q->img_hdr, q->img_hdr_len, f, sizeof(f));
}

/* A long drawing's points, inflated from the XL section into *owned;
 * *f4 says they are float32. */
static int long_points(const struct qd *q, uint64_t gidx, const uint8_t *rec,
		       uint8_t **owned, uint32_t *n, int *f4)
{
	uint32_t magic, npts, zlen;
	uint64_t off;
	uLongf len, want;

	memcpy(&magic, rec, 4);
	memcpy(&npts, rec + 4, 4);
	memcpy(&zlen, rec + 8, 4);
	memcpy(&off, rec + 12, 8);
	if ((magic != QD_XL_MAGIC && magic != QD_XF_MAGIC) || npts > QD_XL_MAX_PTS ||
	    off > q->xl_len || zlen > q->xl_len - off)
		goto bad;
	*f4 = magic == QD_XF_MAGIC;
	want = len = (uLongf)npts * (*f4 ? 12 : 6);
	*owned = malloc(len ? len : 1);
	if (!*owned)
		return -ENOMEM;
	if (uncompress(*owned, &len, q->xl + off, zlen) != Z_OK || len != want) {
		free(*owned);
		*owned = NULL;
		goto bad;
	}
	*n = npts;
	return 0;
bad:
	sfs_err("stroke record %" PRIu64 ": corrupt long-drawing entry in the index", gidx);
	return -EIO;
}

/* The points of sample gidx (int16, or float32 when *f4): in rec (its
 * record), unpacked into `unpacked` (QD_PACKED_MAX_PTS * 6 bytes), or
 * inflated into *owned (long drawings; the caller frees). */
static int stroke_points(const struct qd *q, uint64_t gidx, uint8_t *rec,
			 uint8_t *unpacked, const uint8_t **pts, uint32_t *n,
			 uint8_t **owned, int *f4)
{
	int64_t len = blockstore_get(&q->bs, q->cache, gidx, rec, BLOCKSTORE_BLOCK);
	long k;
	int rc;

	*owned = NULL;
	*f4 = 0;
	if (len < 0)
		return len == -EAGAIN ? -EAGAIN : -EIO;
	if (len >= 1 && rec[0] == QD_REC_PACKED) {
		k = strokepack_unpack(rec + 1, (size_t)len - 1, unpacked, QD_PACKED_MAX_PTS);
		if (k < 0)
			goto bad;
		*pts = unpacked;
		*n = (uint32_t)k;
		return 0;
	}
	if (len >= 1 && rec[0] == QD_REC_RAW && (len - 1) % 6 == 0) {
		*pts = rec + 1;
		*n = (uint32_t)((len - 1) / 6);
		return 0;
	}
	if (len >= 1 && rec[0] == QD_REC_F32 && (len - 1) % 12 == 0) {
		*pts = rec + 1;
		*n = (uint32_t)((len - 1) / 12);
		*f4 = 1;
		return 0;
	}
	if (len != QD_XL_LEN)
		goto bad;
	rc = long_points(q, gidx, rec, owned, n, f4);
	*pts = *owned;
	return rc;
bad:
	sfs_err("stroke record %" PRIu64 ": %" PRId64 " bytes that are not a "
		"drawing's points", gidx, len);
	return -EIO;
}

ssize_t qd_read_stroke(const struct qd *q, uint64_t gidx, char *buf, size_t size,
		       uint64_t off)
{
	uint8_t rec[BLOCKSTORE_BLOCK], *owned;
	uint8_t unpacked[QD_PACKED_MAX_PTS * 6];
	float small[130 * 3], *f = small;
	size_t flen = (size_t)q->stroke_len * 3 * sizeof(float);
	const uint8_t *pts;
	uint32_t n;
	ssize_t rc;
	int f4;

	if (off >= q->stk_size)
		return 0;
	rc = stroke_points(q, gidx, rec, unpacked, &pts, &n, &owned, &f4);
	if (rc)
		return rc;
	if (flen > sizeof(small) && !(f = malloc(flen))) {
		free(owned);
		return -ENOMEM;
	}
	if (f4)
		stroke_transform_f4(pts, n, q->stroke_len, f);
	else
		stroke_transform(pts, n, q->stroke_len, f);
	rc = qd_copy_range(buf, size, off, q->stk_hdr, q->stk_hdr_len, f, flen);
	if (f != small)
		free(f);
	free(owned);
	return rc;
}
