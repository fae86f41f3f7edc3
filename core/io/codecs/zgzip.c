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
 * A small zip member is read whole, without access points, by the same
 * inflaters (zdeflate_whole, for zsource_inflate_whole: zsource.h), so
 * deflate has one inflater in samplefs whatever the member's size; it
 * stops one byte past the declared size, as the pass does.
 *
 * Not for: where points go, windows, caching (zsource.c); zips
 * (formats/zipread.c opens their large members with this row, and reads
 * small ones whole through zsource_inflate_whole).
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

/*
 * The inflaters: one loop per engine (zlib, ISA-L's igzip), behind one
 * struct zinf, shared by the span readers (span_inflate) and the
 * whole-stream reader (zdeflate_whole, a small zip member's data).
 */
struct zinf {
	enum zengine eng;
	z_stream zs;
#ifdef HAVE_ISAL
	struct inflate_state *st;
#endif
};

/* What zinf_run stopped at (else -errno, the reader's). */
enum { ZI_FULL = 0,	/* out is full */
       ZI_END,		/* the deflate stream ended (the reader just past it) */
       ZI_CUT,		/* the source ended inside the stream */
       ZI_BAD };	/* corrupt data (*why) */

static int zinf_init(struct zinf *z, enum zengine eng)
{
	memset(z, 0, sizeof(*z));
	z->eng = ZENGINE_ZLIB;
#ifdef HAVE_ISAL
	if (eng == ZENGINE_FAST) {
		z->eng = eng;
		if (!(z->st = malloc(sizeof(*z->st))))
			return -ENOMEM;
		isal_inflate_init(z->st);
		z->st->crc_flag = ISAL_DEFLATE;
		return 0;
	}
#else
	(void)eng;
#endif
	return inflateInit2(&z->zs, -15) == Z_OK ? 0 : -ENOMEM;
}

static void zinf_end(struct zinf *z)
{
#ifdef HAVE_ISAL
	if (z->eng == ZENGINE_FAST) {
		free(z->st);
		return;
	}
#endif
	inflateEnd(&z->zs);
}

/* For the next gzip member's stream. */
static void zinf_reset(struct zinf *z)
{
#ifdef HAVE_ISAL
	if (z->eng == ZENGINE_FAST) {
		isal_inflate_reset(z->st);
		z->st->crc_flag = ISAL_DEFLATE;
		return;
	}
#endif
	inflateReset(&z->zs);
	z->zs.avail_in = 0;
}

/* Primes the inflater at point pt (the reader at it): the unused bits of
 * the byte before it, and its window.  0, -EIO, -errno. */
static int zinf_prime(struct zinf *z, struct zreader *in, const struct zpoint *pt,
		      const unsigned char *win)
{
	unsigned char b = 0;
	int rc = 0;

	if (pt->bits && (rc = zreader_read(in, &b, 1)) < 0)
		return rc;
#ifdef HAVE_ISAL
	if (z->eng == ZENGINE_FAST) {
		if (pt->bits) {
			z->st->read_in = b >> (8 - pt->bits);
			z->st->read_in_length = pt->bits;
		}
		if (pt->win_len && isal_inflate_set_dict(z->st, (uint8_t *)win,
							 pt->win_len) != COMP_OK)
			return -EIO;
		return 0;
	}
#endif
	if (pt->bits)
		inflatePrime(&z->zs, pt->bits, b >> (8 - pt->bits));
	if (pt->win_len && inflateSetDictionary(&z->zs, win, pt->win_len) != Z_OK)
		return -EIO;
	return 0;
}

static int zlib_run(z_stream *zs, struct zreader *in, unsigned char *out,
		    size_t len, size_t *done, const char **why)
{
	int ret, rc, eof = 0;
	uInt room;

	for (;;) {
		if (!zs->avail_in) {
			/* at the source's end inflate may still finish from
			 * the bits it holds: it is called once more */
			if ((rc = feed(in, zs)) < 0)
				return rc;
			eof = rc == 0;
		}
		room = len - *done < UINT32_MAX ? (uInt)(len - *done) : UINT32_MAX;
		zs->next_out = out + *done;
		zs->avail_out = room;
		ret = inflate(zs, Z_NO_FLUSH);
		in->pos = (size_t)(zs->next_in - in->buf);
		*done += room - zs->avail_out;
		if (ret == Z_STREAM_END)
			return ZI_END;
		if (*done == len)
			return ZI_FULL;
		if (ret != Z_OK && !(ret == Z_BUF_ERROR && !zs->avail_in)) {
			*why = zs->msg ? zs->msg : "corrupt deflate data";
			return ZI_BAD;
		}
		if (eof && !zs->avail_in)
			return ZI_CUT;
	}
}

#ifdef HAVE_ISAL
/* isal_inflate buffers up to 64 bits ahead: at a stream's end the whole
 * bytes of it are what follows (a gzip trailer), given back to the reader. */
static void isal_unread(struct zreader *in, const struct inflate_state *st)
{
	zreader_seek(in, zreader_tell(in) - (uint64_t)(st->read_in_length / 8));
}

static int isal_run(struct inflate_state *st, struct zreader *in,
		    unsigned char *out, size_t len, size_t *done, const char **why)
{
	uint32_t room;
	int rc, eof;

	for (;;) {
		eof = 0;
		if (in->pos == in->len) {
			if ((rc = zreader_fill(in)) < 0)
				return rc;
			eof = rc == 0;
		}
		room = len - *done < UINT32_MAX ? (uint32_t)(len - *done) : UINT32_MAX;
		st->next_in = in->buf + in->pos;
		st->avail_in = (uint32_t)(in->len - in->pos);
		st->next_out = out + *done;
		st->avail_out = room;
		rc = isal_inflate(st);
		in->pos = (size_t)(st->next_in - in->buf);
		*done += room - st->avail_out;
		if (rc < 0) {
			*why = "invalid deflate data";
			return ZI_BAD;
		}
		if (st->block_state == ISAL_BLOCK_FINISH) {
			isal_unread(in, st);
			return ZI_END;
		}
		if (*done == len)
			return ZI_FULL;
		if (eof)
			return ZI_CUT;
	}
}
#endif

/* Inflates from the reader into out[*done, len), advancing *done: ZI_*,
 * or the reader's -errno. */
static int zinf_run(struct zinf *z, struct zreader *in, unsigned char *out,
		    size_t len, size_t *done, const char **why)
{
#ifdef HAVE_ISAL
	if (z->eng == ZENGINE_FAST)
		return isal_run(z->st, in, out, len, done, why);
#endif
	return zlib_run(&z->zs, in, out, len, done, why);
}

/* A span from point pt, the reader at it, with the engine asked for:
 * `members` 1 when another gzip member may follow the end of a deflate
 * stream inside the span (gzip), 0 when that end is the source's (raw
 * deflate: more to inflate is -EIO).  0, -EIO, -ENOMEM. */
static int span_inflate(struct zreader *in, const struct zpoint *pt,
			const unsigned char *win, unsigned char *out, size_t len,
			enum zengine eng, int members)
{
	const char *why = NULL;
	struct zinf z;
	size_t done = 0;
	int rc;

	if ((rc = zinf_init(&z, eng)) < 0) {
		zinf_end(&z);
		return rc;
	}
	rc = zinf_prime(&z, in, pt, win);
	while (rc == 0 && done < len) {
		rc = zinf_run(&z, in, out, len, &done, &why);
		if (rc == ZI_END && done < len) {
			rc = members ? next_member(in) : -EIO;
			if (rc == 0)
				zinf_reset(&z);
		} else if (rc == ZI_END) {
			rc = 0;
		}
	}
	zinf_end(&z);
	return rc ? -EIO : 0;
}

/* The first output buffer of a whole stream; it doubles as bytes come,
 * up to the declared size. */
#define WHOLE_FIRST ((size_t)64 << 10)

/* Room past *cap (< usize): doubled, at most usize (+1: malloc(0)). */
static int whole_grow(uint8_t **buf, size_t *cap, uint64_t usize)
{
	size_t n = *cap < WHOLE_FIRST ? WHOLE_FIRST : *cap * 2;
	uint8_t *p;

	if (n > usize)
		n = (size_t)usize;
	if (!(p = realloc(*buf, n + 1)))
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/* What ended a whole stream's inflation (rc: zinf_run's), against its
 * declared size: 0 or -EBADMSG (*why), or the reader's -errno. */
static int whole_verdict(int rc, struct zreader *in, size_t done, size_t extra,
			 uint64_t usize, const char **why)
{
	if (rc < 0) {
		*why = "cannot read compressed data";
		return rc;
	}
	if (extra)
		*why = "decodes to more than its declared size";
	else if (rc == ZI_CUT)
		*why = "stream is truncated";
	else if (rc == ZI_END && done != usize)
		*why = "stream ends before the declared size";
	else if (rc == ZI_END && zreader_tell(in) < in->size)
		*why = "compressed size is larger than its stream";
	else if (rc != ZI_BAD)
		return 0;
	return -EBADMSG;
}

int zdeflate_whole(struct zreader *in, uint64_t usize, enum zengine eng,
		   uint8_t **out, const char **why)
{
	uint8_t *buf = NULL, sink;
	size_t cap = 0, done = 0, extra = 0;
	struct zinf z;
	int rc;

	*out = NULL;
	if (usize > SIZE_MAX - 1)
		return -EFBIG;
	if ((rc = zinf_init(&z, eng)) < 0 || (rc = whole_grow(&buf, &cap, usize)) < 0)
		goto out;
	rc = ZI_FULL;
	while (rc == ZI_FULL && done < usize) {
		if (done == cap && (rc = whole_grow(&buf, &cap, usize)) < 0)
			goto out;
		rc = zinf_run(&z, in, buf, cap, &done, why);
	}
	/* usize bytes out: a byte more means the stream is longer (a bomb,
	 * or a directory that lies), and it stops there */
	if (rc == ZI_FULL)
		rc = zinf_run(&z, in, &sink, 1, &extra, why);
	rc = whole_verdict(rc, in, done, extra, usize, why);
out:
	zinf_end(&z);
	if (rc == 0)
		*out = buf;
	else
		free(buf);
	return rc;
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
