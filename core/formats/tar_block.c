/*
 * tar_block.c - the header block reader and the numeric field parsers
 * (see tar_block.h): the one place a tar walk reads the archive.
 *
 * Not for: interpreting headers (tar.c), pax records (tar_pax.c), sparse
 * maps (tar_sparse.c).
 */
#include "formats/tar_block.h"

#include <errno.h>
#include <string.h>

#include "io/source.h"

/*
 * While the walk reads whole windows (members are small, so every page of
 * the archive holds a header), asks the kernel to read the next TAR_AHEAD
 * bytes in the background: the caller's source may be SOURCE_ADV_RANDOM
 * (tarindex_build.c sets it so that large members are not read), and then
 * each window would be one synchronous 128 KiB read: 150 MB/s cold, where
 * the disk does 700.  Asked TAR_AHEAD / 2 at a time, so the calls are few.
 * It may run past the end of the walk's range (at most TAR_AHEAD bytes): a
 * nested tar is usually followed by another one, which the next walk reads
 * at once.
 */
static void rd_ahead(struct tar_reader *r, uint64_t off)
{
	uint64_t from = off > r->ra_end ? off : r->ra_end;
	uint64_t to = off + TAR_AHEAD;

	if (to < off || to <= from || to - from < TAR_AHEAD / 2)
		return;
	source_advise(r->src, from, to - from, SOURCE_ADV_WILLNEED);
	r->ra_end = to;
}

/* hi, grown as far as need allows when the source grows (tar_block.h). */
uint64_t tar_rd_upto(struct tar_reader *r, uint64_t need)
{
	uint64_t have;
	int rc;

	if (!r->grow)
		return r->hi;
	rc = source_extent(r->src, need, &have);
	if (rc < 0)
		r->err = rc;
	if (rc != 0)
		r->grow = 0;	/* the size is known: hi is final */
	r->hi = have;
	return r->hi;
}

/*
 * Points *p at n (<= TAR_WINDOW) bytes at off; -EBADMSG if the range ends
 * first.  A miss reads r->want bytes: a whole window while members are small (so
 * one pread serves many headers), one block when they are large (copying
 * a window of data we will skip would cost more than the pread).
 */
int tar_rd_get(struct tar_reader *r, uint64_t off, size_t n,
	       const unsigned char **p)
{
	size_t want;
	ssize_t got;

	tar_rd_upto(r, off + n);
	if (off < r->lo || off > r->hi || r->hi - off < n)
		return -EBADMSG;
	if (off >= r->boff && off + n <= r->boff + r->blen) {
		*p = r->buf + (off - r->boff);
		return 0;
	}
	want = n > r->want ? n : r->want;
	if (r->hi - off < want)
		want = (size_t)(r->hi - off);
	if (r->want == TAR_WINDOW)
		rd_ahead(r, off);
	got = source_pread(r->src, r->buf, want, off);
	if (got == -EIO && want > n) {	/* damage after the header (a
					 * compressed source's): not its fault */
		want = n;
		got = source_pread(r->src, r->buf, want, off);
	}
	if (got < 0)
		return (int)got;
	r->boff = off;
	r->blen = (size_t)got;
	if ((size_t)got < n)
		return -EBADMSG;
	*p = r->buf;
	return 0;
}

/*
 * A numeric field: octal digits (leading spaces, ended by space or NUL;
 * all-NUL is 0, as GNU tar and Python's tarfile read it) or GNU base-256
 * (first byte 0x80 positive, 0xff negative).  -ERANGE beyond int64.
 */
int tar_parse_num(const unsigned char *f, size_t n, int64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] == 0x80 || f[0] == 0xff) {
		for (i = 1; i < n; i++) {
			if (v >> 55)
				return -ERANGE;
			v = v << 8 | f[i];
		}
		if (f[0] == 0x80) {
			if (v > INT64_MAX)
				return -ERANGE;
			*out = (int64_t)v;
		} else {
			/* two's complement over n-1 bytes: v - 256^(n-1) */
			if (n - 1 < 8)
				v |= ~0ull << (8 * (n - 1));
			*out = (int64_t)v;
			if (*out >= 0)
				return -ERANGE;
		}
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != ' ' && f[i] != '\0')
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

/* A decimal number filling s[0..n): no sign, no spaces, fits 64 bits. */
int tar_parse_dec(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}
