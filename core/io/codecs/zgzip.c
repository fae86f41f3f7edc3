/*
 * zgzip.c - the gzip and raw deflate rows of zsource's codec table
 * (zcodec.h).  gzip: RFC 1952
 * streams of one or more members, so pigz's and bgzip's (BGZF: a member
 * per 64 KiB block) too.
 *
 * The pass inflates with zlib, asking it to stop at every deflate block
 * boundary (Z_BLOCK, as zlib's zran.c does): those are the only places a
 * deflate stream can restart from given the bit offset and the 32 KiB
 * window, and ISA-L's inflater cannot be stopped there.  Each member's
 * CRC-32 and ISIZE are checked at its end; a mismatch, a truncated stream
 * or an inflate error marks the member damaged (its reads give EIO).
 *
 * A span is inflated by ISA-L's igzip when the build has it (HAVE_ISAL;
 * 2-3x zlib on x86) and SAMPLEFS_INFLATE=zlib did not ask for zlib: primed
 * with the point's bits and window (isal_inflate_set_dict), raw deflate,
 * this file parsing the member headers and skipping the trailers between
 * members.  Both give the same bytes; zsource.c checks them against the
 * span's CRC either way.
 *
 * The raw-deflate row (zcodec_deflate) is a zip member's data: one
 * gzip member's deflate stream without header or trailer, the sizes and
 * CRC-32 coming from the zip's directory instead (struct zexpect), so it
 * shares the member pass (scan_member) and the span readers; the pass
 * also stops at the declared size (a bomb is damaged there).
 *
 * Not for: where points go, windows, caching (zsource.c); zips
 * (formats/zipread.c opens their large members with this row).
 */
#include "io/codecs/zcodec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "bytes.h"
#include "log.h"

/* RFC 1952 header flags */
#define F_HCRC    0x02
#define F_EXTRA   0x04
#define F_NAME    0x08
#define F_COMMENT 0x10
#define F_RESERVED 0xe0

static int gz_sniff(const unsigned char *h, size_t n)
{
	return n >= 3 && h[0] == 0x1f && h[1] == 0x8b && h[2] == 8;
}

/* Reads n header bytes (out NULL: skips them), adding them to *crc. */
static int hdr_read(struct zreader *in, void *out, size_t n, uLong *crc)
{
	unsigned char b;
	int rc;

	while (n--) {
		if ((rc = zreader_read(in, &b, 1)) < 0)
			return rc;
		*crc = crc32(*crc, &b, 1);
		if (out)
			*(unsigned char *)out = b, out = (unsigned char *)out + 1;
	}
	return 0;
}

/* Skips a NUL-terminated header field. */
static int skip_cstr(struct zreader *in, uLong *crc)
{
	unsigned char c;
	int rc;

	do {
		if ((rc = hdr_read(in, &c, 1, crc)) < 0)
			return rc;
	} while (c);
	return 0;
}

/* Only zero bytes up to the end of the source (padding): 1, or
 * -EBADMSG at the first other byte, -errno. */
static int zero_padding(struct zreader *in)
{
	unsigned char c;
	int rc;

	do {
		if ((rc = zreader_read(in, &c, 1)) == -EBADMSG)
			return 1;
	} while (rc == 0 && c == 0);
	return rc < 0 ? rc : -EBADMSG;
}

/*
 * Reads a member header at the reader's position: 0, 1 when the stream
 * ends there (nothing but zero padding follows, as tapes and some tools
 * leave), -EBADMSG when the bytes there are not a header (or its FHCRC
 * does not match, as gzip checks it), -errno.
 */
static int member_header(struct zreader *in)
{
	unsigned char h[10], x[2], c[2];
	uLong crc = crc32(0, NULL, 0);
	int rc;

	if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
		return rc < 0 ? rc : 1;
	if (in->buf[in->pos] == 0)
		return zero_padding(in);
	if ((rc = hdr_read(in, h, sizeof(h), &crc)) < 0)
		return rc;
	if (!gz_sniff(h, sizeof(h)) || (h[3] & F_RESERVED))
		return -EBADMSG;
	if ((h[3] & F_EXTRA) && ((rc = hdr_read(in, x, 2, &crc)) < 0 ||
				 (rc = hdr_read(in, NULL, x[0] | x[1] << 8, &crc)) < 0))
		return rc;
	if ((h[3] & F_NAME) && (rc = skip_cstr(in, &crc)) < 0)
		return rc;
	if ((h[3] & F_COMMENT) && (rc = skip_cstr(in, &crc)) < 0)
		return rc;
	if ((h[3] & F_HCRC) && (rc = zreader_read(in, c, 2)) < 0)
		return rc;
	if ((h[3] & F_HCRC) && (uLong)(c[0] | c[1] << 8) != (crc & 0xffff))
		return -EBADMSG;
	return 0;
}

/* Points zlib at the reader's unread bytes, reading more when none are
 * left: 1, 0 at the end of the source (none given), -errno. */
static int feed(struct zreader *in, z_stream *zs)
{
	int rc = 1;

	if (in->pos == in->len && (rc = zreader_fill(in)) <= 0) {
		zs->next_in = in->buf + in->pos;	/* the buffer moved */
		zs->avail_in = 0;
		return rc;
	}
	zs->next_in = in->buf + in->pos;
	zs->avail_in = (uInt)(in->len - in->pos);
	return 1;
}

/*
 * One member's deflate data, in the pass: 0 at its end (*crc, *isize
 * of what it gave), 1 when it is damaged (said), -errno.  zlib inflates
 * straight into the buffer of the span being kept (zrecorder_outbuf).  It
 * gives at most `limit` bytes: with one more to come (inflate is offered
 * a byte past the limit, never handed on) the stream is damaged, so a raw
 * stream never gives more than its directory declares (a bomb costs no
 * more than the declared size).  `cut`: what a truncated one is called.
 */
static int scan_member(struct zreader *in, struct zrecorder *p, z_stream *zs,
		       uint64_t mstart, uLong *crc, uint64_t *isize,
		       uint64_t limit, const char *cut)
{
	unsigned char *out;
	uint64_t left;
	int ret, rc;
	uint32_t c;
	size_t got, room;

	for (;;) {
		/* at the source's end inflate may still finish: a raw stream's
		 * last block ends with its last byte (gzip's trailer follows) */
		if (!zs->avail_in && (rc = feed(in, zs)) < 0)
			return rc;
		if (!(out = zrecorder_outbuf(p, &room)))
			return -ENOMEM;
		left = limit - *isize;
		if (room > left)	/* room for one byte past the limit */
			room = (size_t)left + 1;
		zs->next_out = out;
		zs->avail_out = room < UINT32_MAX ? (uInt)room : UINT32_MAX;
		room = zs->avail_out;
		ret = inflate(zs, Z_BLOCK);
		in->pos = (size_t)(zs->next_in - in->buf);
		got = room - zs->avail_out;
		if (got > left) {	/* the declared bytes, then the damage */
			if (left && (rc = zrecorder_output(p, out, (size_t)left, &c)) < 0)
				return rc;
			*isize += left;
			zrecorder_damaged(p, mstart, "inflates past its declared size",
				      zreader_tell(in));
			return 1;
		}
		if (got) {
			if ((rc = zrecorder_output(p, out, got, &c)) < 0)
				return rc;
			*crc = crc32_combine(*crc, c, (z_off_t)got);
			*isize += got;
		}
		if (ret == Z_STREAM_END)
			return 0;
		if (ret == Z_BUF_ERROR && !zs->avail_in && in->pos == in->len &&
		    zreader_tell(in) >= in->size) {
			zrecorder_damaged(p, mstart, cut, zreader_tell(in));
			return 1;
		}
		if (ret != Z_OK && !(ret == Z_BUF_ERROR && !zs->avail_in)) {
			zrecorder_damaged(p, mstart, zs->msg ? zs->msg : "inflate error",
				      zreader_tell(in));
			return 1;
		}
		/* a block boundary other than after the last block: zran's test */
		if ((zs->data_type & 128) && !(zs->data_type & 64) && zrecorder_want(p) &&
		    (rc = zrecorder_point(p, zreader_tell(in), zs->data_type & 7, 0)) < 0)
			return rc;
	}
}

/* The member trailer: CRC-32 and ISIZE of what the member gave. 0, 1
 * damaged (said), -errno. */
static int check_trailer(struct zreader *in, struct zrecorder *p, uint64_t mstart,
			 uLong crc, uint64_t isize)
{
	unsigned char t[8];
	uint64_t at = zreader_tell(in);
	int rc = zreader_read(in, t, sizeof(t));

	if (rc == -EBADMSG) {
		zrecorder_damaged(p, mstart, "truncated gzip trailer", at);
		return 1;
	}
	if (rc < 0)
		return rc;
	if (le32(t) != (uint32_t)crc) {
		zrecorder_damaged(p, mstart, "gzip member CRC-32 mismatch", at);
		return 0;	/* its extent is sound: the next member follows */
	}
	if (le32(t + 4) != (uint32_t)isize)
		zrecorder_damaged(p, mstart, "gzip member ISIZE mismatch", at + 4);
	return 0;
}

static int gz_scan(struct zreader *in, struct zrecorder *p)
{
	z_stream zs;
	uint64_t total = 0, isize, hoff;
	uLong crc;
	int rc = -ENOMEM;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, -15) != Z_OK)
		goto out;
	for (;;) {
		hoff = zreader_tell(in);
		rc = member_header(in);
		if (rc == 1) {
			rc = 0;
			break;
		}
		if (rc == -EBADMSG) {
			zrecorder_damaged(p, total, total ? "bytes after the last gzip "
				      "member are not a gzip header" :
				      "bad gzip header", hoff);
			rc = 0;
			break;
		}
		if (rc < 0 || (rc = zrecorder_point(p, hoff, 0, 1)) < 0)
			break;
		inflateReset(&zs);
		zs.avail_in = 0;
		crc = crc32(0, NULL, 0);
		isize = 0;
		rc = scan_member(in, p, &zs, total, &crc, &isize,
				 UINT64_MAX, "truncated gzip member");
		if (rc == 0)
			rc = check_trailer(in, p, total, crc, isize);
		total += isize;
		if (rc) {
			rc = rc > 0 ? 0 : rc;
			break;
		}
	}
out:
	inflateEnd(&zs);
	return rc;
}

/* After a member's deflate data ends inside a span: its trailer and the
 * next member's header.  0, or -EIO when the stream does not go on. */
static int next_member(struct zreader *in)
{
	int rc = zreader_read(in, NULL, 8);

	if (rc == 0)
		rc = member_header(in);
	return rc ? -EIO : 0;
}

/* The span readers: `members` 1 when another gzip member may follow the
 * end of a deflate stream inside the span (gzip), 0 when that end is the
 * source's (raw deflate: more to inflate is -EIO). */
static int span_zlib(struct zreader *in, const struct zpoint *pt,
		     const unsigned char *win, unsigned char *out, size_t len,
		     int members)
{
	z_stream zs;
	unsigned char b = 0;
	int ret, rc = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, -15) != Z_OK)
		return -ENOMEM;
	if (pt->bits && (rc = zreader_read(in, &b, 1)) == 0)
		inflatePrime(&zs, pt->bits, b >> (8 - pt->bits));
	if (rc == 0 && pt->win_len &&
	    inflateSetDictionary(&zs, win, pt->win_len) != Z_OK)
		rc = -EIO;
	zs.next_out = out;
	zs.avail_out = (uInt)len;
	while (rc == 0 && zs.avail_out) {
		if (!zs.avail_in && (rc = feed(in, &zs)) <= 0) {
			rc = -EIO;
			break;
		}
		rc = 0;
		ret = inflate(&zs, Z_NO_FLUSH);
		in->pos = (size_t)(zs.next_in - in->buf);
		if (ret == Z_STREAM_END && zs.avail_out) {
			zs.avail_in = 0;
			if (!members)
				rc = -EIO;
			else if ((rc = next_member(in)) == 0)
				inflateReset(&zs);
		} else if (ret != Z_OK && ret != Z_STREAM_END &&
			   !(ret == Z_BUF_ERROR && !zs.avail_in)) {
			rc = -EIO;
		}
	}
	inflateEnd(&zs);
	return rc < 0 ? -EIO : 0;
}

#ifdef HAVE_ISAL
/* isal_inflate buffers up to 64 bits ahead: at a member's end the whole
 * bytes of it are the trailer's, given back to the reader. */
static void isal_unread(struct zreader *in, const struct inflate_state *st)
{
	zreader_seek(in, zreader_tell(in) - (uint64_t)(st->read_in_length / 8));
}

static int span_isal(struct zreader *in, const struct zpoint *pt,
		     const unsigned char *win, unsigned char *out, size_t len,
		     int members)
{
	struct inflate_state *st = malloc(sizeof(*st));
	unsigned char b = 0;
	size_t done = 0;
	int rc = 0, ret;

	if (!st)
		return -ENOMEM;
	isal_inflate_init(st);
	st->crc_flag = ISAL_DEFLATE;
	if (pt->bits && (rc = zreader_read(in, &b, 1)) == 0) {
		st->read_in = b >> (8 - pt->bits);
		st->read_in_length = pt->bits;
	}
	if (rc == 0 && pt->win_len &&
	    isal_inflate_set_dict(st, (uint8_t *)win, pt->win_len) != COMP_OK)
		rc = -EIO;
	while (rc == 0 && done < len) {
		if (in->pos == in->len && st->block_state != ISAL_BLOCK_FINISH &&
		    (rc = zreader_fill(in)) <= 0) {
			rc = -EIO;
			break;
		}
		rc = 0;
		st->next_in = in->buf + in->pos;
		st->avail_in = (uint32_t)(in->len - in->pos);
		st->next_out = out + done;
		st->avail_out = (uint32_t)(len - done);
		ret = isal_inflate(st);
		in->pos = (size_t)(st->next_in - in->buf);
		done = len - st->avail_out;
		if (ret < 0) {
			rc = -EIO;
		} else if (st->block_state == ISAL_BLOCK_FINISH && done < len) {
			isal_unread(in, st);
			if (!members)
				rc = -EIO;
			else if ((rc = next_member(in)) == 0) {
				isal_inflate_reset(st);
				st->crc_flag = ISAL_DEFLATE;
			}
		}
	}
	free(st);
	return rc < 0 ? -EIO : 0;
}
#endif

/* A span from point pt, the reader at it, with the engine asked for. */
static int span_inflate(struct zreader *in, const struct zpoint *pt,
			const unsigned char *win, unsigned char *out, size_t len,
			enum zengine eng, int members)
{
#ifdef HAVE_ISAL
	if (eng == ZENGINE_FAST)
		return span_isal(in, pt, win, out, len, members);
#endif
	return span_zlib(in, pt, win, out, len, members);
}

static int gz_span(struct zreader *in, const struct zpoint *pt,
		   const unsigned char *win, unsigned char *out, size_t len,
		   enum zengine eng)
{
	zreader_seek(in, pt->bits ? pt->in - 1 : pt->in);
	if ((pt->flags & ZP_MEMBER) && member_header(in) != 0)
		return -EIO;
	return span_inflate(in, pt, win, out, len, eng, 1);
}

static const char *const gzip_suffixes[] = { ".gz", ".tgz", ".bgz", ".gzip", NULL };

const struct zcodec zcodec_gzip = {
	.name = "gzip",
	.suffixes = gzip_suffixes,
	.id = 1,
	.sniff = gz_sniff,
	.scan = gz_scan,
	.span = gz_span,
};

/* ---- raw deflate: a zip member (zcodec_deflate) ---- */

static int raw_sniff(const unsigned char *h, size_t n)
{
	(void)h;
	(void)n;
	return 0;	/* no magic: opened by zsource_wrap_deflate only */
}

/* The end of a raw stream against its directory (damage said). */
static void raw_check(struct zreader *in, struct zrecorder *p,
		      const struct zexpect *want, uLong crc, uint64_t isize)
{
	char why[160];

	if (isize != want->usize) {
		snprintf(why, sizeof(why), "deflate stream ends after %llu bytes, "
			 "the zip declares %llu", (unsigned long long)isize,
			 (unsigned long long)want->usize);
		zrecorder_damaged(p, 0, why, zreader_tell(in));
	} else if ((uint32_t)crc != want->crc32) {
		snprintf(why, sizeof(why), "CRC-32 mismatch (the zip says %08x, "
			 "the data gives %08x)", want->crc32, (unsigned)crc);
		zrecorder_damaged(p, 0, why, zreader_tell(in));
	} else if (zreader_tell(in) != in->size) {
		snprintf(why, sizeof(why), "compressed size is %llu bytes larger "
			 "than its deflate stream",
			 (unsigned long long)(in->size - zreader_tell(in)));
		zrecorder_damaged(p, 0, why, zreader_tell(in));
	}
}

/* The pass over one raw deflate stream: the gzip member's, with the
 * directory's sizes and CRC-32 for a header and trailer. */
static int raw_scan(struct zreader *in, struct zrecorder *p)
{
	const struct zexpect *want = zrecorder_expect(p);
	uint64_t isize = 0;
	uLong crc = crc32(0, NULL, 0);
	z_stream zs;
	int rc = -ENOMEM;

	memset(&zs, 0, sizeof(zs));
	if (!want) {
		rc = -EINVAL;	/* a caller's bug: zsource gives it */
		goto out;
	}
	if (inflateInit2(&zs, -15) != Z_OK)
		goto out;
	if ((rc = zrecorder_point(p, 0, 0, 1)) < 0)
		goto out;
	rc = scan_member(in, p, &zs, 0, &crc, &isize, want->usize,
			 "truncated deflate stream");
	if (rc == 0)
		raw_check(in, p, want, crc, isize);
	rc = rc > 0 ? 0 : rc;
out:
	inflateEnd(&zs);
	return rc;
}

/* A span of a raw stream: its first point is at the stream's start
 * (flagged a member: no window), with no header to read there. */
static int raw_span(struct zreader *in, const struct zpoint *pt,
		    const unsigned char *win, unsigned char *out, size_t len,
		    enum zengine eng)
{
	zreader_seek(in, pt->bits ? pt->in - 1 : pt->in);
	return span_inflate(in, pt, win, out, len, eng, 0);
}

const struct zcodec zcodec_deflate = {
	.name = "deflate",
	.id = 5,
	.sniff = raw_sniff,
	.scan = raw_scan,
	.span = raw_span,
};
