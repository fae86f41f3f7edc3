/*
 * zxz.c - the xz row of zsource's codec table (zcodec.h): .xz files of one
 * or more streams (concatenated, with stream padding), each of one block
 * (`xz`) or many (`xz -T0`, pixz).
 *
 * The pass walks the file as liblzma's own stream decoder does, but a
 * block at a time: the stream header (its check type), each block header
 * (lzma_block_header_decode) and its data (lzma_block_decoder, which
 * verifies the block's sizes and its check), then the index
 * (lzma_index_decoder), compared with the blocks walked, and the footer.
 * Every block start is a restart point (the check type goes in the
 * point's cx); inside a block longer than the span the points are ZP_SEQ:
 * a read there decodes on from the block's start (zseq.c keeps the
 * decoder for the next read), so one huge block (plain `xz`) reads well
 * only in order, which the mount says, with the fix (`xz -T0`).
 *
 * Damage (a block that does not decode or whose check fails, a truncated
 * file, bytes after the last stream that are not one): the block's bytes
 * give EIO; when its header gives its sizes (xz -T0 writes them) the pass
 * goes on after it (the missing bytes counted as zeros, zrecorder_fill), else
 * it ends there and the rest is not there.  An index or footer that does not match the blocks
 * is said, but the blocks, each verified, stay readable.
 *
 * Bombs: a block's decoder may ask for at most XZ_MEMLIMIT (the biggest
 * preset, -9, asks for 65 MiB); the output is zsource's to bound.
 *
 * Not for: where points go, caching, CRC-32 of spans (zsource.c).
 */
#include "io/codecs/zcodec.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define OUTCHUNK    (64u << 10)     /* the pass's output buffer */
#define XZ_MEMLIMIT (1ull << 30)    /* a block decoder's or an index's memory */

static int xz_sniff(const unsigned char *h, size_t n)
{
	static const unsigned char magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };

	return n >= sizeof(magic) && !memcmp(h, magic, sizeof(magic));
}

/* A block decoder and the stream it is in. */
struct xzd {
	lzma_stream strm;
	lzma_block block;
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_stream_flags head;  /* the stream's header */
	int in_block;       /* 1: strm decodes a block */
	uint64_t at;        /* compressed offset of the block's header */
	lzma_vli usize;     /* its size, when its header says (xz -T0) */
	lzma_vli total;     /* its compressed size, all in (0: unknown) */
};

static const char *lzma_why(int ret)
{
	switch (ret) {
	case LZMA_BUF_ERROR: return "truncated xz block";
	case LZMA_MEM_ERROR: return "out of memory for an xz block";
	case LZMA_MEMLIMIT_ERROR: return "an xz block needs more than 1 GiB to decode";
	case LZMA_OPTIONS_ERROR: return "unsupported xz block options";
	case LZMA_DATA_ERROR: return "damaged xz block (its data or its check)";
	default: return "bad xz block";
	}
}

/* Reads a stream header into d->head: 0, -EBADMSG, -errno. */
static int stream_header(struct xzd *d, struct zreader *in)
{
	unsigned char h[LZMA_STREAM_HEADER_SIZE];
	int rc = zreader_read(in, h, sizeof(h));

	if (rc < 0)
		return rc;
	return lzma_stream_header_decode(&d->head, h) == LZMA_OK ? 0 : -EBADMSG;
}

/*
 * Skips stream padding and reads the next stream's header: 0, 1 at the
 * end of the file, -EBADMSG when what follows is not a stream, -errno.
 */
static int next_stream(struct xzd *d, struct zreader *in)
{
	unsigned char z[4];
	int rc;

	for (;;) {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
			return rc < 0 ? rc : 1;
		if (in->buf[in->pos] != 0)
			return stream_header(d, in);
		if ((rc = zreader_read(in, z, sizeof(z))) < 0 ||
		    (z[1] | z[2] | z[3]))
			return rc < 0 && rc != -EBADMSG ? rc : -EBADMSG;
	}
}

/*
 * Reads a block header and starts its decoder: 0, 1 when the stream's
 * index is there instead (not read), an lzma_ret > 1 when the
 * header is bad, -errno.
 */
static int block_start(struct xzd *d, struct zreader *in)
{
	unsigned char h[LZMA_BLOCK_HEADER_SIZE_MAX];
	uint64_t need;
	int rc, ret;

	d->at = zreader_tell(in);
	if ((rc = zreader_read(in, h, 1)) < 0)
		return rc == -EBADMSG ? LZMA_BUF_ERROR : rc;
	if (h[0] == 0) {
		zreader_seek(in, d->at);
		return 1;
	}
	memset(&d->block, 0, sizeof(d->block));
	d->block.version = 1;
	d->block.check = d->head.check;
	d->block.filters = d->filters;
	d->block.header_size = lzma_block_header_size_decode(h[0]);
	if ((rc = zreader_read(in, h + 1, d->block.header_size - 1)) < 0)
		return rc == -EBADMSG ? LZMA_BUF_ERROR : rc;
	if ((ret = lzma_block_header_decode(&d->block, NULL, h)) != LZMA_OK)
		return ret;
	d->usize = d->block.uncompressed_size;
	d->total = d->block.compressed_size == LZMA_VLI_UNKNOWN ? 0 :
		   lzma_block_total_size(&d->block);
	need = lzma_raw_decoder_memusage(d->filters);
	ret = need > XZ_MEMLIMIT ? LZMA_MEMLIMIT_ERROR :
	      lzma_block_decoder(&d->strm, &d->block);
	lzma_filters_free(d->filters, NULL);
	d->in_block = ret == LZMA_OK;
	return ret;
}

/*
 * Decodes the current block into out (cap bytes) until out is full or
 * the block ends: its lzma_ret (LZMA_OK: out is full; LZMA_BUF_ERROR: the
 * file ended), *got bytes written; -errno for the source's failures.
 */
static int block_code(struct xzd *d, struct zreader *in, unsigned char *out,
		      size_t cap, size_t *got)
{
	int ret = LZMA_OK, rc;

	d->strm.next_out = out;
	d->strm.avail_out = cap;
	while (ret == LZMA_OK && d->strm.avail_out) {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0) {
			ret = rc < 0 ? rc : LZMA_BUF_ERROR;
			break;
		}
		d->strm.next_in = in->buf + in->pos;
		d->strm.avail_in = in->len - in->pos;
		ret = lzma_code(&d->strm, LZMA_RUN);
		in->pos = (size_t)(d->strm.next_in - in->buf);
	}
	*got = cap - d->strm.avail_out;
	if (ret == LZMA_STREAM_END)
		d->in_block = 0;
	return ret;
}

/*
 * The index and the footer: 0 with the
 * index in *idx (NULL: not wanted), an lzma_ret > 1 when they are bad,
 * -errno.
 */
static int stream_tail(struct zreader *in, lzma_index **idx, lzma_stream_flags *foot)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_index *i = NULL;
	unsigned char f[LZMA_STREAM_HEADER_SIZE];
	int ret, rc = 0;

	if ((ret = lzma_index_decoder(&s, &i, XZ_MEMLIMIT)) != LZMA_OK)
		return ret;
	do {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
			break;
		s.next_in = in->buf + in->pos;
		s.avail_in = in->len - in->pos;
		ret = lzma_code(&s, LZMA_RUN);
		in->pos = (size_t)(s.next_in - in->buf);
	} while (ret == LZMA_OK);
	lzma_end(&s);
	if (rc < 0 || ret != LZMA_STREAM_END) {
		lzma_index_end(i, NULL);
		return rc < 0 ? rc : ret == LZMA_OK ? LZMA_BUF_ERROR : ret;
	}
	if ((rc = zreader_read(in, f, sizeof(f))) < 0 ||
	    lzma_stream_footer_decode(foot, f) != LZMA_OK) {
		lzma_index_end(i, NULL);
		return rc < 0 && rc != -EBADMSG ? rc : LZMA_DATA_ERROR;
	}
	if (idx)
		*idx = i;
	else
		lzma_index_end(i, NULL);
	return 0;
}

/* ---- the pass ---- */

struct xzscan {
	struct xzd d;
	struct zreader *in;
	struct zrecorder *p;
	unsigned char *out;
	uint64_t total;       /* output so far */
	uint64_t blocks, sout;  /* this stream's blocks and output */
};

/* Says the damage (from uncompressed offset `from`) and ends the pass. */
static int damaged(struct xzscan *x, uint64_t from, const char *why, uint64_t at)
{
	zrecorder_damaged(x->p, from, why, at);
	return 1;
}

/*
 * A damaged block whose header gives its sizes: the rest of its bytes
 * counted as zeros (zrecorder_fill), the reader after it: 0 (the pass goes
 * on), 1 when that cannot be, -errno.
 */
static int block_recover(struct xzscan *x, uint64_t got)
{
	int rc;

	if (!x->d.total || x->d.usize == LZMA_VLI_UNKNOWN || x->d.usize < got)
		return 1;
	if ((rc = zrecorder_fill(x->p, x->d.usize - got)) < 0)
		return rc == -EFBIG ? 1 : rc;
	x->total += x->d.usize - got;
	x->sout += x->d.usize - got;
	x->d.in_block = 0;
	zreader_seek(x->in, x->d.at + x->d.total);
	return 0;
}

/* One block, its header read: 0, 1 damaged (said) and the pass ends,
 * -errno. */
static int scan_block(struct xzscan *x)
{
	uint64_t from = x->total;
	uint32_t crc;   /* unused: xz checks its own */
	size_t got;
	int ret, rc;

	for (;;) {
		ret = block_code(&x->d, x->in, x->out, OUTCHUNK, &got);
		if (ret < 0)
			return ret;
		if (got && (rc = zrecorder_output(x->p, x->out, got, &crc)) < 0)
			return rc;
		x->total += got;
		x->sout += got;
		if (ret == LZMA_STREAM_END)
			return 0;
		if (ret != LZMA_OK) {
			rc = block_recover(x, x->total - from);
			if (rc >= 0)
				zrecorder_damaged(x->p, from, lzma_why(ret), x->d.at);
			return rc;
		}
		if ((rc = zrecorder_seq_point(x->p, zreader_tell(x->in))) < 0)
			return rc;
	}
}

/* The stream's index and footer against what its blocks were. */
static int scan_tail(struct xzscan *x)
{
	lzma_stream_flags foot;
	lzma_index *idx = NULL;
	uint64_t at = zreader_tell(x->in);
	int rc = stream_tail(x->in, &idx, &foot);

	if (rc < 0)
		return rc;
	if (rc > 0)
		return damaged(x, x->total, rc == LZMA_BUF_ERROR ?
			       "truncated xz index" : "bad xz index or footer", at);
	if (lzma_index_block_count(idx) != x->blocks ||
	    lzma_index_uncompressed_size(idx) != x->sout ||
	    lzma_index_size(idx) != foot.backward_size ||
	    lzma_stream_flags_compare(&x->d.head, &foot) != LZMA_OK)
		sfs_warn("%s: the xz index at offset %llu does not list the "
			 "blocks before it (%llu blocks, %llu bytes): the blocks "
			 "are read as they are", source_name(x->in->src),
			 (unsigned long long)at, (unsigned long long)x->blocks,
			 (unsigned long long)x->sout);
	lzma_index_end(idx, NULL);
	return 0;
}

/* One stream, its header read: 0, 1 damaged (said), -errno. */
static int scan_stream(struct xzscan *x)
{
	int rc;

	zrecorder_codec_byte(x->p, (uint8_t)x->d.head.check);
	x->blocks = x->sout = 0;
	for (;;) {
		rc = block_start(&x->d, x->in);
		if (rc < 0)
			return rc;
		if (rc == 1)
			return scan_tail(x);
		if (rc > 1)
			return damaged(x, x->total, lzma_why(rc), x->d.at);
		if ((rc = zrecorder_block(x->p, x->d.at, 0)) < 0 ||
		    (rc = scan_block(x)) != 0)
			return rc;
		x->blocks++;
	}
}

static int xz_scan(struct zreader *in, struct zrecorder *p)
{
	struct xzscan x = { .d.strm = LZMA_STREAM_INIT, .in = in, .p = p };
	uint64_t at = 0;
	int rc = -ENOMEM;

	if (!(x.out = malloc(OUTCHUNK)))
		goto out;
	rc = stream_header(&x.d, in);
	while (rc == 0 && (rc = scan_stream(&x)) == 0) {
		at = zreader_tell(in);
		rc = next_stream(&x.d, in);
	}
	if (rc == -EBADMSG)
		rc = damaged(&x, x.total, at ? "bytes after the last xz stream "
			     "are not an xz stream" : "bad xz stream header", at);
	rc = rc > 0 ? 0 : rc;
out:
	lzma_end(&x.d.strm);
	free(x.out);
	return rc;
}

/* ---- reads ---- */

static int xz_dec_open(struct zreader *in, const struct zpoint *pt, void **dec)
{
	struct xzd *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->strm = (lzma_stream)LZMA_STREAM_INIT;
	d->head.check = (lzma_check)pt->cx;
	zreader_seek(in, pt->in);
	*dec = d;
	return 0;
}

/* Moves to the next block, across the end of a stream: 0 or -errno/-EIO
 * (an lzma_ret > 1 as -EIO). */
static int dec_next_block(struct xzd *d, struct zreader *in)
{
	lzma_stream_flags foot;
	int rc;

	while ((rc = block_start(d, in)) == 1) {
		if ((rc = stream_tail(in, NULL, &foot)) != 0 ||
		    (rc = next_stream(d, in)) != 0)
			break;
	}
	return rc == 0 ? 0 : rc < 0 && rc != -EBADMSG ? rc : -EIO;
}

static int xz_dec_read(void *dec, struct zreader *in, unsigned char *out, size_t len)
{
	struct xzd *d = dec;
	size_t got;
	int ret;

	while (len) {
		if (!d->in_block && (ret = dec_next_block(d, in)) < 0)
			goto fail;
		ret = block_code(d, in, out, len, &got);
		out += got;
		len -= got;
		if (ret != LZMA_OK && ret != LZMA_STREAM_END)
			goto fail;
	}
	return 0;
fail:
	sfs_warn("%s: xz block at offset %llu: %s", source_name(in->src),
		 (unsigned long long)d->at, ret < 0 ? strerror(-ret) : lzma_why(ret));
	return -EIO;
}

static void xz_dec_free(void *dec)
{
	struct xzd *d = dec;

	lzma_end(&d->strm);
	free(d);
}

static const char *const xz_suffixes[] = { ".xz", ".txz", NULL };

const struct zcodec zcodec_xz = {
	.name = "xz",
	.suffixes = xz_suffixes,
	.id = 2,
	.sniff = xz_sniff,
	.scan = xz_scan,
	.dec_open = xz_dec_open,
	.dec_read = xz_dec_read,
	.dec_free = xz_dec_free,
	.seq_fix = "`xz -T0 --block-size=1MiB` (or pixz) writes blocks a read can start at",
};
