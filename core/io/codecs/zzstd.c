/*
 * zzstd.c - the zstd row of zsource's codec table (zcodec.h): .zst files
 * of one frame (`zstd`, `zstd -T0`) or many (`pzstd`, the seekable
 * format, concatenated files), with skippable frames anywhere.
 *
 * The pass walks the frames in order: a skippable frame (magic
 * 0x184D2A5?, the seekable format's seek table among them) is stepped
 * over by its length, every other frame decoded with libzstd's streaming
 * decoder, which stops at the frame's end and checks its content
 * checksum and size when the frame has them.  Every frame start is a
 * restart point; inside a frame longer than the span the points are
 * ZP_SEQ (read by decoding on from the frame's start, the decoder kept
 * between reads by zsource), so one huge frame reads well only in order,
 * which the mount says, with the fix (`pzstd`).  The seek table is not
 * needed: the pass decodes every byte anyway (zsource's CRC-32 of each
 * span) and finds the same frame starts.
 *
 * Damage (a frame that does not decode or whose checksum fails, a
 * truncated file): the frame's bytes give EIO; when its header gives its
 * content size (zstd's does for files; pzstd's do not, but a failed
 * checksum means the whole frame was decoded) and its block headers lead
 * to its end, the pass goes on after it (the missing bytes counted as zeros,
 * zrecorder_fill), else it ends there and the rest is not there.  Bombs: a frame
 * may ask for at most libzstd's default window limit (128 MiB); the
 * output is zsource's to bound.
 *
 * Not for: where points go, caching, CRC-32 of spans (zsource.c).
 */
#include "io/codecs/zcodec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY	/* ZSTD_getFrameHeader: in Debian's .so */
#include <zstd.h>
#include <zstd_errors.h>	/* ZSTD_getErrorCode: a failed checksum */

#include "bytes.h"
#include "log.h"

#define OUTCHUNK   (64u << 10)     /* the pass's output buffer */
#define SKIP_MAGIC 0x184D2A50u     /* skippable frames: this | 0-15 */

/* A zstd frame, or a skippable one (pzstd starts with one) before a zstd
 * frame or reaching past the bytes sniffed. */
static int zstd_sniff(const unsigned char *h, size_t n)
{
	uint64_t next;

	if (n >= 4 && le32(h) == ZSTD_MAGICNUMBER)
		return 1;
	if (n < 8 || (le32(h) & ~15u) != SKIP_MAGIC)
		return 0;
	next = 8 + (uint64_t)le32(h + 4);
	return next + 4 > n || le32(h + next) == ZSTD_MAGICNUMBER;
}

/* A streaming decoder and where its frame began. */
struct zd {
	ZSTD_DCtx *dc;
	int flushing;       /* 1: it may hold output not given yet */
	uint64_t at;        /* compressed offset of the frame */
	size_t err;         /* libzstd's error, when frame_code said 2 */
};

/*
 * Decodes into out (cap bytes) until out is full or the frame ends: 0 at
 * the frame's end, 1 when out is full, 2 when the frame is damaged or
 * truncated (*why), -errno; *got bytes written.
 */
static int frame_code(struct zd *d, struct zreader *in, unsigned char *out,
		      size_t cap, size_t *got, const char **why)
{
	ZSTD_outBuffer ob = { out, cap, 0 };
	ZSTD_inBuffer ib;
	size_t r;
	int rc;

	for (;;) {
		if (in->pos == in->len && !d->flushing &&
		    (rc = zreader_fill(in)) <= 0) {
			*got = ob.pos;
			*why = "truncated zstd frame";
			return rc < 0 ? rc : 2;
		}
		ib = (ZSTD_inBuffer){ in->buf + in->pos, in->len - in->pos, 0 };
		r = ZSTD_decompressStream(d->dc, &ob, &ib);
		in->pos += ib.pos;
		*got = ob.pos;
		if (ZSTD_isError(r)) {
			*why = ZSTD_getErrorName(r);
			d->err = r;
			return 2;
		}
		d->flushing = ob.pos == ob.size;
		if (r == 0)
			return 0;
		if (ob.pos == ob.size)
			return 1;
	}
}

/*
 * At a frame boundary: steps over skippable frames.  0 when a frame
 * starts at the reader's position, 1 at the end of the file, -EBADMSG
 * when a skippable frame is cut short, -errno.
 */
static int skip_skippable(struct zreader *in)
{
	unsigned char h[8];
	int rc;

	for (;;) {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
			return rc < 0 ? rc : 1;
		if (in->len - in->pos < 4 && (rc = zreader_fill(in)) < 0)
			return rc;
		if (in->len - in->pos < 4 ||
		    (le32(in->buf + in->pos) & ~15u) != SKIP_MAGIC)
			return 0;
		if ((rc = zreader_read(in, h, sizeof(h))) < 0 ||
		    (rc = zreader_read(in, NULL, le32(h + 4))) < 0)
			return rc;
	}
}

static int zd_init(struct zd *d)
{
	memset(d, 0, sizeof(*d));
	d->dc = ZSTD_createDCtx();
	return d->dc ? 0 : -ENOMEM;
}

/* ---- the pass ---- */

/* The frame header at the reader's position, when it is one: 0 or -1. */
static int frame_header(struct zreader *in, ZSTD_frameHeader *fh)
{
	if (in->len - in->pos < ZSTD_FRAMEHEADERSIZE_MAX && zreader_fill(in) < 0)
		return -1;
	return ZSTD_getFrameHeader(fh, in->buf + in->pos, in->len - in->pos) ? -1 : 0;
}

/* Steps over the frame at `at` by its block headers (the data may be
 * damaged, its framing not): 0, or -1 when the framing is bad too. */
static int frame_skip(struct zreader *in, uint64_t at, const ZSTD_frameHeader *fh)
{
	unsigned char h[3];
	uint32_t b;

	zreader_seek(in, at + fh->headerSize);
	do {
		if (zreader_read(in, h, sizeof(h)) < 0)
			return -1;
		b = h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16;
		if ((b >> 1 & 3) == 3 ||
		    zreader_read(in, NULL, (b >> 1 & 3) == 1 ? 1 : b >> 3) < 0)
			return -1;
	} while (!(b & 1));
	return fh->checksumFlag && zreader_read(in, NULL, 4) < 0 ? -1 : 0;
}

/*
 * The content size of the frame at `at`, decoded again without checking
 * its checksum (the error may come before its last bytes are given), or
 * ZSTD_CONTENTSIZE_UNKNOWN.  The bytes are not kept: the frame is damaged.
 */
static uint64_t frame_size(struct zreader *in, uint64_t at)
{
	struct zd d;
	unsigned char *out = malloc(OUTCHUNK);
	uint64_t size = 0;
	const char *why;
	size_t got;
	int end = 1;

	if (!out || zd_init(&d) < 0) {
		free(out);
		return ZSTD_CONTENTSIZE_UNKNOWN;
	}
	ZSTD_DCtx_setParameter(d.dc, ZSTD_d_forceIgnoreChecksum,
			       ZSTD_d_ignoreChecksum);
	zreader_seek(in, at);
	while (end == 1) {
		end = frame_code(&d, in, out, OUTCHUNK, &got, &why);
		size += got;
	}
	ZSTD_freeDCtx(d.dc);
	free(out);
	return end == 0 ? size : ZSTD_CONTENTSIZE_UNKNOWN;
}

/*
 * A damaged frame whose content size is known: its header gives it, or
 * (pzstd's frames do not) its checksum failed, so every byte of it was
 * decoded.  The rest of its bytes counted as zeros (zrecorder_fill), the
 * reader after it, the decoder reset: 0 (the pass goes on), 1 when that
 * cannot be, -errno.
 */
static int frame_recover(struct zd *d, struct zreader *in, struct zrecorder *p,
			 const ZSTD_frameHeader *fh, uint64_t got, uint64_t *total)
{
	uint64_t size = fh->frameContentSize;
	int rc;

	if (size == ZSTD_CONTENTSIZE_UNKNOWN &&
	    ZSTD_getErrorCode(d->err) == ZSTD_error_checksum_wrong)
		size = frame_size(in, d->at);
	if (fh->frameType != ZSTD_frame || size == ZSTD_CONTENTSIZE_UNKNOWN ||
	    size < got || frame_skip(in, d->at, fh) < 0)
		return 1;
	if ((rc = zrecorder_fill(p, size - got)) < 0)
		return rc == -EFBIG ? 1 : rc;
	*total += size - got;
	ZSTD_DCtx_reset(d->dc, ZSTD_reset_session_only);
	d->flushing = 0;
	return 0;
}

/* One frame at the reader's position: 0, 1 damaged (said) and the pass
 * ends, -errno. */
static int scan_frame(struct zd *d, struct zreader *in, struct zrecorder *p,
		      unsigned char *out, uint64_t *total)
{
	uint64_t from = *total;
	const char *why = NULL;
	ZSTD_frameHeader fh;
	int rc, end, hdr;
	uint32_t crc;   /* unused: zstd checks its own */
	size_t got;

	d->at = zreader_tell(in);
	if ((rc = zrecorder_block(p, d->at, 0)) < 0)
		return rc;
	hdr = frame_header(in, &fh);
	do {
		end = frame_code(d, in, out, OUTCHUNK, &got, &why);
		if (end < 0)
			return end;
		if (got && (rc = zrecorder_output(p, out, got, &crc)) < 0)
			return rc;
		*total += got;
		if (end == 2) {
			rc = hdr < 0 ? 1 : frame_recover(d, in, p, &fh,
							 *total - from, total);
			if (rc >= 0)
				zrecorder_damaged(p, from, why, d->at);
			return rc;
		}
		if (end == 1 && (rc = zrecorder_seq_point(p, zreader_tell(in))) < 0)
			return rc;
	} while (end);
	return 0;
}

static int zstd_scan(struct zreader *in, struct zrecorder *p)
{
	unsigned char *out = malloc(OUTCHUNK);
	struct zd d;
	uint64_t total = 0, at;
	int rc = zd_init(&d);

	if (!out || rc < 0) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		at = zreader_tell(in);
		rc = skip_skippable(in);
		if (rc == -EBADMSG)
			zrecorder_damaged(p, total, "truncated skippable zstd frame", at);
		if (rc || (rc = scan_frame(&d, in, p, out, &total)))
			break;
	}
	rc = rc < 0 && rc != -EBADMSG ? rc : 0;
out:
	ZSTD_freeDCtx(d.dc);
	free(out);
	return rc;
}

/* ---- reads ---- */

static int zstd_dec_open(struct zreader *in, const struct zpoint *pt, void **dec)
{
	struct zd *d = malloc(sizeof(*d));

	if (!d || zd_init(d) < 0) {
		free(d);
		return -ENOMEM;
	}
	d->at = pt->in;
	zreader_seek(in, pt->in);
	*dec = d;
	return 0;
}

static int zstd_dec_read(void *dec, struct zreader *in, unsigned char *out,
			 size_t len)
{
	struct zd *d = dec;
	const char *why = NULL;
	size_t got;
	int end;

	while (len) {
		end = frame_code(d, in, out, len, &got, &why);
		out += got;
		len -= got;
		if (end < 0 || end == 2) {
			sfs_warn("%s: zstd frame after offset %llu: %s",
				 source_name(in->src), (unsigned long long)d->at,
				 end < 0 ? strerror(-end) : why);
			return -EIO;
		}
		if (end == 0)
			d->at = zreader_tell(in);
	}
	return 0;
}

static void zstd_dec_free(void *dec)
{
	struct zd *d = dec;

	ZSTD_freeDCtx(d->dc);
	free(d);
}

static const char *const zstd_suffixes[] = { ".zst", ".tzst", NULL };

const struct zcodec zcodec_zstd = {
	.name = "zstd",
	.suffixes = zstd_suffixes,
	.id = 3,
	.sniff = zstd_sniff,
	.scan = zstd_scan,
	.dec_open = zstd_dec_open,
	.dec_read = zstd_dec_read,
	.dec_free = zstd_dec_free,
	.seq_fix = "`pzstd` writes frames a read can start at",
	.seq_prefix = 1,
};
