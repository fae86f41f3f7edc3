/*
 * zbz2.c - the bzip2 row of zsource's codec table (zcodec.h): .bz2 files
 * of one stream (`bzip2`) or many (`pbzip2`, concatenated files).
 *
 * bzip2 blocks start at any bit (a 48-bit magic, 0x314159265359) and end
 * where the next block's magic or the end-of-stream magic
 * (0x177245385090, then the stream's combined CRC) begins.  The pass scans
 * every bit for them; each block's bits are shifted into a fresh stream
 * of their own ("BZh9", the block, the end-of-stream magic and, as the
 * combined CRC of a one-block stream, the block's own CRC), which libbz2
 * decodes, checking the block's CRC (as seekbzip2 and indexed_bzip2 do).
 * A magic inside a block's data (one chance in 2^48 a bit) is found out
 * because the block, cut there, does not decode: the block then extends
 * to the next magic (TRIES times at most: more is damage).  Each stream's combined CRC is checked too.  Every
 * block start is a restart point (`bits`: the bits of the byte before it
 * that are the block's); a block gives at most ~46 MB (900 kB of runs),
 * so there are no ZP_SEQ points.
 *
 * Damage (a block that does not decode or whose CRC fails, a block longer
 * than BLOCK_MAX, a stream CRC that fails, a truncated file) ends the pass:
 * the bytes before stay readable, the damaged ones give EIO.
 *
 * Not for: where points go, caching, CRC-32 of spans (zsource.c).
 */
#include "io/codecs/zcodec.h"

#include <bzlib.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define OUTCHUNK    (256u << 10)   /* the pass's output buffer */
#define BLOCK_MAX   (4u << 20)     /* a block's compressed bytes (-9: ~910 kB) */
#define BLOCK_MAGIC 0x314159265359ull
#define EOS_MAGIC   0x177245385090ull
#define M48         ((1ull << 48) - 1)
#define HDR         "BZh9"          /* the realigned stream's header */
#define TRIES       8               /* magics a block is taken on past */

static int bz2_sniff(const unsigned char *h, size_t n)
{
	return n >= 10 && h[0] == 'B' && h[1] == 'Z' && h[2] == 'h' &&
	       h[3] >= '1' && h[3] <= '9' &&
	       (!memcmp(h + 4, "\x31\x41\x59\x26\x53\x59", 6) ||
		!memcmp(h + 4, "\x17\x72\x45\x38\x50\x90", 6));
}

/* A bit scanner over the compressed bytes, and the block being decoded. */
struct bzd {
	uint64_t win;          /* the last 64 bits scanned */
	uint64_t bit;          /* file bit offset of the next bit */
	unsigned char cur;     /* the byte being scanned */
	unsigned left;         /* its bits not scanned yet */
	unsigned char *blk;    /* the bytes scanned, from file byte blk_off */
	size_t blen, bcap;
	uint64_t blk_off;
	int in_block;          /* 1: blk keeps every byte from the block's */
	int pending;           /* a magic scanned, not yet used: 1 block, 2 end */
	uint64_t b0;           /* file bit offset of the block's magic */
	unsigned char *re;     /* the block realigned into a stream */
	size_t recap;
	bz_stream bs;
	int live;              /* 1: bs decodes the block */
	uint64_t bout;         /* bytes the block gave */
	int tries;             /* magics it was taken on past */
};

/* Keeps a scanned byte: all of a block's, else the last 8 (a magic's). */
static int keep_byte(struct bzd *d, unsigned char c)
{
	void *q;

	if (!d->in_block && d->blen >= 16) {
		memmove(d->blk, d->blk + d->blen - 8, 8);
		d->blk_off += d->blen - 8;
		d->blen = 8;
	}
	if (d->blen == d->bcap) {
		if (d->bcap >= BLOCK_MAX)
			return -E2BIG;
		if (!(q = realloc(d->blk, d->bcap ? 2 * d->bcap : 64 << 10)))
			return -ENOMEM;
		d->blk = q;
		d->bcap = d->bcap ? 2 * d->bcap : 64 << 10;
	}
	d->blk[d->blen++] = c;
	return 0;
}

/* The next bit: 0 or 1, -ENODATA at the end of the file, -errno. */
static inline int next_bit(struct bzd *d, struct zreader *in)
{
	int rc;

	if (!d->left) {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
			return rc < 0 ? rc : -ENODATA;
		d->cur = in->buf[in->pos++];
		d->left = 8;
		if ((rc = keep_byte(d, d->cur)) < 0)
			return rc;
	}
	d->left--;
	d->bit++;
	d->win = d->win << 1 | (d->cur >> d->left & 1);
	return (int)(d->win & 1);
}

/*
 * The values the third-last byte scanned (bits 16-23 of the window) takes
 * when a magic ends in the last one, at any of its 8 bit shifts (16 of
 * 256): a byte whose window misses them ends no magic, so a scan tests
 * one bit per byte, not 8 shifts (a read scans its whole block for its
 * end; its CPU, decoding included, went down ~5%).
 */
static const uint32_t magic_mid[8] = {
	0x00100400, 0x01040340, 0x00001000, 0x00010020,
	0x02100020, 0x00000000, 0x00000404, 0x00000002,
};

/* Scans whole bytes to the end of the next magic (scan_magic's). */
static int scan_bytes(struct bzd *d, struct zreader *in)
{
	uint64_t m;
	unsigned char c;
	unsigned b;
	int k, rc;

	for (;;) {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
			return rc;
		c = in->buf[in->pos++];
		if ((rc = keep_byte(d, c)) < 0)
			return rc;
		d->win = d->win << 8 | c;
		d->bit += 8;
		b = (unsigned)(d->win >> 16 & 0xff);
		if (!(magic_mid[b >> 5] >> (b & 31) & 1))
			continue;
		for (k = 7; k >= 0; k--) {	/* the earliest end first */
			m = d->win >> k & M48;
			if (m == BLOCK_MAGIC || m == EOS_MAGIC) {
				d->cur = c;
				d->left = (unsigned)k;
				d->bit -= (unsigned)k;
				d->win >>= k;
				return m == BLOCK_MAGIC ? 1 : 2;
			}
		}
	}
}

/* Scans to the end of the next magic: 1 a block's, 2 an end of stream,
 * 0 the end of the file, -E2BIG a block too long, -errno. */
static int scan_magic(struct bzd *d, struct zreader *in)
{
	int rc;

	if (d->pending) {
		rc = d->pending;
		d->pending = 0;
		return rc;
	}
	while (d->left) {	/* the rest of the byte a magic ended in */
		next_bit(d, in);
		if ((d->win & M48) == BLOCK_MAGIC)
			return 1;
		if ((d->win & M48) == EOS_MAGIC)
			return 2;
	}
	return scan_bytes(d, in);
}

/* The 32 bits after an end-of-stream magic (the stream's CRC). */
static int stream_crc(struct bzd *d, struct zreader *in, uint32_t *crc)
{
	int i, rc;

	for (i = 0; i < 32; i++)
		if ((rc = next_bit(d, in)) < 0)
			return rc;
	*crc = (uint32_t)d->win;
	return 0;
}

/* n bits (<= 32) of blk at file bit offset `at`. */
static uint32_t bits_at(const struct bzd *d, uint64_t at, unsigned n)
{
	uint32_t v = 0;
	uint64_t b;

	for (b = at; b < at + n; b++)
		v = v << 1 | (d->blk[b / 8 - d->blk_off] >> (7 - b % 8) & 1);
	return v;
}

static void put_bits(unsigned char *p, uint64_t *pos, uint64_t v, unsigned n)
{
	while (n--) {
		if (v >> n & 1)
			p[*pos / 8] |= (unsigned char)(0x80 >> (*pos % 8));
		(*pos)++;
	}
}

/* The block's CRC, stored after its magic. */
static uint32_t block_crc(const struct bzd *d)
{
	return bits_at(d, d->b0 + 48, 32);
}

/*
 * The block [b0, e) as a stream of its own in d->re, and a decoder
 * started on it: 0, -EBADMSG too short to be a block, -errno.
 */
static int realign(struct bzd *d, uint64_t e)
{
	uint64_t nbits = e - d->b0, j, pos, nbytes = (nbits + 7) / 8;
	size_t s = (size_t)(d->b0 / 8 - d->blk_off), need = 4 + nbytes + 12;
	unsigned sh = d->b0 % 8;
	void *q;

	if (nbits < 80)
		return -EBADMSG;
	if (need > d->recap) {
		if (!(q = realloc(d->re, need)))
			return -ENOMEM;
		d->re = q;
		d->recap = need;
	}
	memset(d->re, 0, need);
	memcpy(d->re, HDR, 4);
	for (j = 0; j < nbytes; j++)	/* blk holds the magic after e too */
		d->re[4 + j] = (unsigned char)(d->blk[s + j] << sh |
			       (sh ? d->blk[s + j + 1] >> (8 - sh) : 0));
	if (nbits % 8)
		d->re[4 + nbytes - 1] &= (unsigned char)(0xff00 >> (nbits % 8));
	pos = 32 + nbits;
	put_bits(d->re, &pos, EOS_MAGIC, 48);
	put_bits(d->re, &pos, block_crc(d), 32);
	if (d->live)
		BZ2_bzDecompressEnd(&d->bs);
	memset(&d->bs, 0, sizeof(d->bs));
	if (BZ2_bzDecompressInit(&d->bs, 0, 0) != BZ_OK) {
		d->live = 0;
		return -ENOMEM;
	}
	d->live = 1;
	d->bs.next_in = (char *)d->re;
	d->bs.avail_in = (unsigned)((pos + 7) / 8);
	d->bout = 0;
	return 0;
}

/* Takes the bytes to the next magic into the block: 0, 1 no more
 * (the file ends, the block is too long), -errno. */
static int block_extend(struct bzd *d, struct zreader *in)
{
	int rc = scan_magic(d, in);

	if (rc < 0 && rc != -E2BIG)
		return rc;
	if (rc <= 0)
		return 1;
	d->pending = rc;
	return realign(d, d->bit - 48) == 0 ? 0 : 1;
}

/* Starts the block whose magic was just scanned: 0, 1 when it has no end
 * (truncated, too long), -errno. */
static int block_open(struct bzd *d, struct zreader *in)
{
	size_t k;

	d->b0 = d->bit - 48;
	k = (size_t)(d->b0 / 8 - d->blk_off);
	memmove(d->blk, d->blk + k, d->blen - k);
	d->blen -= k;
	d->blk_off += k;
	d->in_block = 1;
	d->tries = 0;
	return block_extend(d, in);
}

static void block_close(struct bzd *d)
{
	if (d->live)
		BZ2_bzDecompressEnd(&d->bs);
	d->live = 0;
	d->in_block = 0;
}

/*
 * Decodes the open block into out (cap bytes) until out is full or the
 * block ends: 0 out full, 1 the block ended (closed), 2 damaged (*why,
 * closed), -errno; *got bytes written.  A block that gives nothing and
 * does not decode is taken on to the next magic (one inside its data).
 */
static int block_out(struct bzd *d, struct zreader *in, unsigned char *out,
		     size_t cap, size_t *got, const char **why)
{
	int r, rc;

	for (;;) {
		d->bs.next_out = (char *)out;
		d->bs.avail_out = (unsigned)cap;
		r = BZ2_bzDecompress(&d->bs);
		*got = cap - d->bs.avail_out;
		d->bout += *got;
		if (r == BZ_STREAM_END) {
			block_close(d);
			return 1;
		}
		if (r == BZ_OK && !d->bs.avail_out)
			return 0;
		if (!d->bout && d->pending && d->tries++ < TRIES) {
			/* cut at a magic inside its data? */
			d->pending = 0;
			if ((rc = block_extend(d, in)) < 0)
				return rc;
			if (rc == 0)
				continue;
		}
		*why = r == BZ_OK ? "truncated bzip2 block" :
		       "damaged bzip2 block (its data or its CRC)";
		block_close(d);
		return 2;
	}
}

static void bzd_free(struct bzd *d)
{
	block_close(d);
	free(d->blk);
	free(d->re);
}

/* ---- the pass ---- */

struct bzscan {
	struct bzd d;
	struct zreader *in;
	struct zrecorder *p;
	unsigned char *out;
	uint64_t total;        /* output so far */
	uint64_t sfrom;        /* where the stream's output began */
	uint32_t comb;         /* the stream's combined CRC so far */
	int blocks;            /* of this stream */
};

static int damaged(struct bzscan *x, uint64_t from, const char *why, uint64_t bit)
{
	zrecorder_damaged(x->p, from, why, bit / 8);
	return 1;
}

/* The block whose magic was just scanned: 0, 1 damaged (said), -errno. */
static int scan_block(struct bzscan *x)
{
	struct bzd *d = &x->d;
	uint64_t from = x->total, b0 = d->bit - 48;
	const char *why = NULL;
	uint32_t crc;   /* unused: bzip2 checks its own */
	size_t got;
	int rc, end;

	if ((rc = zrecorder_block(x->p, (b0 + 7) / 8, (8 - b0 % 8) % 8)) < 0 ||
	    (rc = block_open(d, x->in)) < 0)
		return rc;
	if (rc)
		return damaged(x, from, "truncated bzip2 block, or one longer "
			       "than 4 MiB", b0);
	x->comb = (x->comb << 1 | x->comb >> 31) ^ block_crc(d);
	do {
		end = block_out(d, x->in, x->out, OUTCHUNK, &got, &why);
		if (end < 0)
			return end;
		if (got && (rc = zrecorder_output(x->p, x->out, got, &crc)) < 0)
			return rc;
		x->total += got;
	} while (end == 0);
	x->blocks++;
	return end == 2 ? damaged(x, from, why, b0) : 0;
}

/* An end of stream: its combined CRC against the blocks'. */
static int scan_end(struct bzscan *x)
{
	uint64_t at = x->d.bit - 48;
	uint32_t crc;
	int rc = stream_crc(&x->d, x->in, &crc);

	if (rc == -ENODATA)
		return damaged(x, x->total, "truncated bzip2 stream end", at);
	if (rc < 0)
		return rc;
	if (crc != x->comb)
		return damaged(x, x->sfrom, "bzip2 stream CRC mismatch", at);
	x->comb = 0;
	x->blocks = 0;
	x->sfrom = x->total;
	return 0;
}

static int bz2_scan(struct zreader *in, struct zrecorder *p)
{
	struct bzscan x = { .in = in, .p = p };
	int rc = -ENOMEM;

	if (!(x.out = malloc(OUTCHUNK)))
		goto out;
	for (;;) {
		rc = scan_magic(&x.d, in);
		if (rc == 1)
			rc = scan_block(&x);
		else if (rc == 2)
			rc = scan_end(&x);
		else if (rc == 0 && x.blocks)
			rc = damaged(&x, x.total, "truncated bzip2 stream", x.d.bit);
		else if (rc == 0)
			break;
		if (rc)
			break;
	}
	rc = rc > 0 ? 0 : rc;
out:
	bzd_free(&x.d);
	free(x.out);
	return rc;
}

/* ---- reads ---- */

static int bz2_dec_open(struct zreader *in, const struct zpoint *pt, void **dec)
{
	struct bzd *d = calloc(1, sizeof(*d));
	unsigned char c;
	int rc;

	if (!d)
		return -ENOMEM;
	d->bit = pt->in * 8;
	d->blk_off = pt->in;
	zreader_seek(in, pt->in);
	if (pt->bits) {
		d->bit -= pt->bits;
		d->blk_off--;
		zreader_seek(in, pt->in - 1);
		if ((rc = zreader_read(in, &c, 1)) < 0 || (rc = keep_byte(d, c)) < 0) {
			bzd_free(d);
			free(d);
			return rc == -EBADMSG ? -EIO : rc;
		}
		d->cur = c;
		d->left = pt->bits;
	}
	*dec = d;
	return 0;
}

static int bz2_dec_read(void *dec, struct zreader *in, unsigned char *out,
			size_t len)
{
	struct bzd *d = dec;
	const char *why = "no bzip2 block there";
	uint32_t crc;
	size_t got;
	int rc = 0;

	while (len) {
		while (!d->live && (rc = scan_magic(d, in)) == 2 &&
		       (rc = stream_crc(d, in, &crc)) == 0)
			;
		if (!d->live && (rc != 1 || (rc = block_open(d, in)) != 0))
			goto fail;
		rc = block_out(d, in, out, len, &got, &why);
		out += got;
		len -= got;
		if (rc < 0 || rc == 2)
			goto fail;
	}
	return 0;
fail:
	sfs_warn("%s: bzip2 block at bit %llu: %s", source_name(in->src),
		 (unsigned long long)d->b0, rc < 0 ? strerror(-rc) : why);
	return -EIO;
}

static void bz2_dec_free(void *dec)
{
	bzd_free(dec);
	free(dec);
}

static const char *const bzip2_suffixes[] = { ".bz2", ".tbz2", ".tbz", NULL };

const struct zcodec zcodec_bzip2 = {
	.name = "bzip2",
	.suffixes = bzip2_suffixes,
	.id = 4,
	.sniff = bz2_sniff,
	.scan = bz2_scan,
	.dec_open = bz2_dec_open,
	.dec_read = bz2_dec_read,
	.dec_free = bz2_dec_free,
};
