/*
 * ztable.c - the access-point table of a compressed source (ztable.h):
 * the codec table, the buffered reader codecs read through, the pass's
 * recorder (where points go, their windows, the spans' CRC-32s, damaged
 * ranges) and the blob it writes, and the checker of a blob read back.
 *
 * The pass keeps in memory only the points (48 bytes a span), the window
 * ring and the current span's CRC-32s; windows and CRC-32s go to an
 * unlinked scratch file ($TMPDIR) as they come, so the pass's memory is
 * bounded whatever the stream's size (plus the current span's bytes,
 * when the caller takes them: struct zspans; a codec that asks for
 * zrecorder_outbuf inflates them there, into the buffer the span is kept in,
 * so the span is never copied).  Then the points and the header are
 * written and the file mapped: the blob.
 *
 * Not for: reads, the cache, the store (zsource.c); formats (zgzip.c).
 */
#include "io/codecs/ztable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "clock.h"
#include "io/codecs/zpool.h"
#include "log.h"

#define PASS_READ    (1u << 20)     /* the pass's reads of the source */
#define PASS_OUT     (256u << 10)   /* its scratch output (spans not kept) */

/* The codec table: sniffed in order (raw deflate never matches: it is
 * only opened by name, zsource_wrap_deflate, and found by its id). */
static const struct zcodec *const codecs[] = {
	&zcodec_gzip, &zcodec_xz, &zcodec_zstd, &zcodec_bzip2, &zcodec_deflate,
};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

const struct zcodec *zcodec_sniff(const unsigned char *head, size_t n)
{
	size_t i;

	for (i = 0; i < NCODECS; i++)
		if (codecs[i]->sniff(head, n))
			return codecs[i];
	return NULL;
}

const struct zcodec *zcodec_by_suffix(const char *name)
{
	size_t nl = strlen(name), i, sl;
	const char *const *s;

	for (i = 0; i < NCODECS; i++)
		for (s = codecs[i]->suffixes; s && *s; s++) {
			sl = strlen(*s);
			if (nl > sl && !strcmp(name + nl - sl, *s))
				return codecs[i];
		}
	return NULL;
}

const struct zcodec *zcodec_by_id(uint8_t id)
{
	size_t i;

	for (i = 0; i < NCODECS; i++)
		if (codecs[i]->id == id)
			return codecs[i];
	return NULL;
}

/* ---- the buffered reader lent to codecs ---- */

int zreader_fill(struct zreader *in)
{
	ssize_t got;
	size_t keep = in->len - in->pos, want;

	memmove(in->buf, in->buf + in->pos, keep);
	in->boff += in->pos;
	in->pos = 0;
	in->len = keep;
	if (in->boff + in->len >= in->size || in->len == in->cap)
		return in->len > keep ? 1 : 0;
	/* never past in->size: a reader of one member of a zip (in->size
	 * its end) is not given the next member's bytes */
	want = in->cap - in->len;
	if (want > in->size - (in->boff + in->len))
		want = (size_t)(in->size - (in->boff + in->len));
	got = in->fresh ? source_refetch(in->src, in->buf + in->len, want, in->boff + in->len) :
			  source_pread(in->src, in->buf + in->len, want, in->boff + in->len);
	if (got < 0)
		return in->read_rc = (int)got;
	in->len += (size_t)got;
	return got > 0;
}

int zreader_read(struct zreader *in, void *out, size_t n)
{
	size_t k;
	int rc;

	while (n) {
		if (in->pos == in->len && (rc = zreader_fill(in)) <= 0)
			return rc < 0 ? rc : -EBADMSG;
		k = in->len - in->pos < n ? in->len - in->pos : n;
		if (out) {
			memcpy(out, in->buf + in->pos, k);
			out = (char *)out + k;
		}
		in->pos += k;
		n -= k;
	}
	return 0;
}

void zreader_seek(struct zreader *in, uint64_t off)
{
	if (off >= in->boff && off <= in->boff + in->len) {
		in->pos = (size_t)(off - in->boff);
		return;
	}
	in->boff = off;
	in->pos = in->len = 0;
}

int zreader_init(struct zreader *in, struct source *src, size_t cap)
{
	memset(in, 0, sizeof(*in));
	in->src = src;
	in->size = source_stamp(src)->size;
	in->cap = cap;
	in->buf = malloc(cap);
	return in->buf ? 0 : -ENOMEM;
}

/* ---- the pass's recorder ---- */

struct zrecorder {
	struct source *in;            /* for messages */
	const struct zcodec *codec;
	const struct zexpect *want;   /* raw deflate's sizes and CRC, or NULL */
	uint64_t span;
	uint64_t out;                 /* bytes so far */
	uint32_t ccrc;                /* of the current chunk so far */
	size_t cfill;                 /* its bytes */
	uint32_t *crcs;               /* the current span's chunks' */
	size_t ncrc;
	unsigned char ring[ZWINDOW];  /* the last ZWINDOW bytes of the member */
	size_t rpos, rfill;
	struct zpoint *pts;
	uint64_t npts, cap;
	uint8_t cx;                   /* zrecorder_codec_byte */
	int fd;                       /* the scratch file */
	uint64_t woff;                /* its end */
	struct { uint64_t from, to; } *bad;
	size_t nbad, badcap;
	const struct zspans *keep;    /* NULL, or where the spans go */
	unsigned char *kbuf;          /* the current span's bytes, for keep
				       * (keep->get's, grown by realloc) */
	size_t klen, kcap;
	unsigned char *obuf;          /* zrecorder_outbuf's when not keeping */
	int kskip;                    /* the current span's bytes are not
				       * kept (keep said so, or ENOMEM) */
};

/* The CRC-32s of the span's chunks, ZCHUNK bytes each, n bytes at
 * uncompressed offset pos: each seeded with its chunk's offset
 * (zchunk_seed), so a table whose offsets were altered fails the check
 * even where the bytes inflate the same. */
static void chunk_crcs(struct zrecorder *p, const unsigned char *d, size_t n,
		       uint64_t pos)
{
	size_t k;

	while (n) {
		if (!p->cfill)
			p->ccrc = zchunk_seed(pos);
		k = ZCHUNK - p->cfill < n ? ZCHUNK - p->cfill : n;
		p->ccrc = zcrc32(p->ccrc, d, k);
		p->cfill += k;
		d += k;
		n -= k;
		pos += k;
		if (p->cfill == ZCHUNK) {
			p->crcs[p->ncrc++] = p->ccrc;
			p->cfill = 0;
		}
	}
}

/* The last ZWINDOW bytes of output, for the next point's window. */
static void ring_put(struct zrecorder *p, const unsigned char *d, size_t n)
{
	size_t k;

	if (n >= ZWINDOW) {
		memcpy(p->ring, d + n - ZWINDOW, ZWINDOW);
		p->rpos = 0;
		p->rfill = ZWINDOW;
		return;
	}
	while (n) {
		k = ZWINDOW - p->rpos < n ? ZWINDOW - p->rpos : n;
		memcpy(p->ring + p->rpos, d, k);
		p->rpos = (p->rpos + k) % ZWINDOW;
		p->rfill = p->rfill + k > ZWINDOW ? ZWINDOW : p->rfill + k;
		d += k;
		n -= k;
	}
}

/* Room for n more bytes in the kept span's buffer (got from keep->get at
 * the span's first byte, doubled by realloc when full): 0, or -ENOMEM,
 * and the span is not kept (only a saving lost). */
static int keep_room(struct zrecorder *p, size_t n)
{
	size_t c = p->kcap ? p->kcap : zspan_buf(p->span);
	void *q;

	if (p->kbuf && p->klen + n <= p->kcap)
		return 0;
	while (c < p->klen + n)
		c *= 2;
	q = p->kbuf ? realloc(p->kbuf, c) : p->keep->get(p->keep->arg, c);
	if (!q) {
		p->kskip = 1;
		free(p->kbuf);
		p->kbuf = NULL;
		p->klen = p->kcap = 0;
		return -ENOMEM;
	}
	p->kbuf = q;
	p->kcap = c;
	return 0;
}

/* The current span's bytes, for keep: already there when the codec
 * inflated them in place (zrecorder_outbuf), else copied. */
static void keep_put(struct zrecorder *p, const void *d, size_t n)
{
	if (!p->keep || p->kskip)
		return;
	if (p->kbuf && d == p->kbuf + p->klen) {
		p->klen += n;
		return;
	}
	if (keep_room(p, n) < 0)
		return;
	memcpy(p->kbuf + p->klen, d, n);
	p->klen += n;
}

unsigned char *zrecorder_outbuf(struct zrecorder *p, size_t *avail)
{
	if (p->keep && !p->kskip && keep_room(p, 1) == 0) {
		*avail = p->kcap - p->klen;
		return p->kbuf + p->klen;
	}
	if (!p->obuf && !(p->obuf = malloc(PASS_OUT)))
		return NULL;
	*avail = PASS_OUT;
	return p->obuf;
}

/* A kept span's buffer holds what the pool's rule says a buffer of its
 * length holds (zpool.h), so the cache charges it and gives it back
 * right: one got whole for a short span (the last, a short stream) or
 * grown past it is cut to the span's length (in place: realloc shrinks
 * without copying); NULL when that fails, the span not kept. */
static void *keep_fit(struct zrecorder *p)
{
	void *q;

	if (p->kcap == zspan_buf(p->span) && zpool_sized(p->kcap, p->klen))
		return p->kbuf;
	if (!(q = realloc(p->kbuf, p->klen ? p->klen : 1)))
		free(p->kbuf);
	return q;
}

/* Span i (len bytes) has ended: its bytes go to keep, which says whether
 * it wants the next span's.  0 or keep's -errno. */
static int keep_span(struct zrecorder *p, uint64_t i, size_t len)
{
	void *buf;
	int rc;

	if (!p->keep)
		return 0;
	buf = p->kskip || !p->kbuf ? NULL : keep_fit(p);
	if (p->kskip)
		free(p->kbuf);
	p->kbuf = NULL;
	p->klen = p->kcap = 0;
	rc = p->keep->keep(p->keep->arg, i, buf, len);
	p->kskip = rc == 0;
	return rc < 0 ? rc : 0;
}

int zrecorder_output(struct zrecorder *p, const void *data, size_t n, uint32_t *crc)
{
	*crc = zcrc32(0, data, n);
	p->out += n;
	if (p->npts && p->out - p->pts[p->npts - 1].out > ZSPAN_HARD) {
		sfs_err("%s: no %s restart point in %llu MiB of output at "
			"offset %llu: not supported (a crafted stream?)",
			source_name(p->in), p->codec->name,
			(unsigned long long)(ZSPAN_HARD >> 20),
			(unsigned long long)p->out);
		return -EFBIG;
	}
	chunk_crcs(p, data, n, p->out - n);
	ring_put(p, data, n);
	keep_put(p, data, n);
	return 0;
}

int zrecorder_seq_point(struct zrecorder *p, uint64_t in)
{
	int rc;

	if (!zrecorder_want(p))
		return 0;
	if ((rc = zrecorder_point(p, in, 0, 1)) < 0)
		return rc;
	p->pts[p->npts - 1].flags = ZP_SEQ;
	return 0;
}

int zrecorder_fill(struct zrecorder *p, uint64_t n)
{
	static const unsigned char zeros[64 << 10];
	uint32_t crc;
	size_t k;
	int rc = n > ZFILL_MAX ? -EFBIG : 0;

	for (; rc == 0 && n; n -= k) {
		k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
		rc = zrecorder_output(p, zeros, k, &crc);
	}
	return rc;
}

void zrecorder_codec_byte(struct zrecorder *p, uint8_t cx)
{
	p->cx = cx;
}

int zrecorder_want(const struct zrecorder *p)
{
	return !p->npts || p->out - p->pts[p->npts - 1].out >= p->span;
}

/* The window, oldest byte first, into w: its length. */
static size_t ring_linear(const struct zrecorder *p, unsigned char *w)
{
	size_t start = (p->rpos + ZWINDOW - p->rfill) % ZWINDOW;
	size_t first = ZWINDOW - start < p->rfill ? ZWINDOW - start : p->rfill;

	memcpy(w, p->ring + start, first);
	memcpy(w + first, p->ring, p->rfill - first);
	return p->rfill;
}

static int write_all(int fd, const void *data, size_t n, uint64_t off)
{
	ssize_t w;

	while (n) {
		if ((w = pwrite(fd, data, n, (off_t)off)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data = (const char *)data + w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Appends the window (deflated when that is smaller) to the scratch file. */
static int put_window(struct zrecorder *p, struct zpoint *pt)
{
	unsigned char raw[ZWINDOW], packed[ZWINDOW];
	uLongf plen = sizeof(packed);
	const unsigned char *w = raw;
	int rc;

	pt->win_len = (uint32_t)ring_linear(p, raw);
	pt->win_stored = pt->win_len;
	pt->win_off = p->woff;
	if (!pt->win_len)
		return 0;
	if (compress2(packed, &plen, raw, pt->win_len, 1) == Z_OK &&
	    plen < pt->win_len) {
		w = packed;
		pt->win_stored = (uint32_t)plen;
	}
	if ((rc = write_all(p->fd, w, pt->win_stored, p->woff)) < 0)
		return rc;
	p->woff += pt->win_stored;
	return 0;
}

/* Ends the span of the last point: its chunks' CRC-32s go to the
 * scratch file after the windows before them. */
static int close_span(struct zrecorder *p)
{
	int rc;

	if (!p->npts)
		return 0;
	if ((rc = keep_span(p, p->npts - 1,
			    (size_t)(p->out - p->pts[p->npts - 1].out))) != 0)
		return rc;
	if (p->cfill)
		p->crcs[p->ncrc++] = p->ccrc;
	p->pts[p->npts - 1].crc_off = p->woff;
	if ((rc = write_all(p->fd, p->crcs, p->ncrc * sizeof(*p->crcs), p->woff)) < 0)
		return rc;
	p->woff += p->ncrc * sizeof(*p->crcs);
	p->ncrc = p->cfill = 0;
	p->ccrc = 0;
	return 0;
}

/* 1 if the last point is a ZP_SEQ one (zrecorder_seq_point). */
static int after_seq(const struct zrecorder *p)
{
	return p->npts && (p->pts[p->npts - 1].flags & ZP_SEQ);
}

/* A ZP_SEQ point with no output after it yet gives its place to the
 * restart point made there (1): its span is empty, its CRC-32s unwritten. */
static int drop_empty_seq(struct zrecorder *p)
{
	if (!after_seq(p) || p->pts[p->npts - 1].out != p->out)
		return 0;
	p->npts--;
	return 1;
}

/* Records a point at in (the filters are the callers'). */
static int add_point(struct zrecorder *p, uint64_t in, unsigned bits, int member)
{
	struct zpoint *pt;
	int rc;

	if (p->npts == p->cap) {
		uint64_t c = p->cap ? 2 * p->cap : 1024;
		void *q = realloc(p->pts, c * sizeof(*p->pts));

		if (!q)
			return -ENOMEM;
		p->pts = q;
		p->cap = c;
	}
	if (!drop_empty_seq(p) && (rc = close_span(p)) < 0)
		return rc;
	pt = &p->pts[p->npts];
	memset(pt, 0, sizeof(*pt));
	pt->in = in;
	pt->out = p->out;
	pt->bits = (uint8_t)bits;
	pt->flags = member ? ZP_MEMBER : 0;
	pt->cx = p->cx;
	if ((rc = put_window(p, pt)) < 0)
		return rc;
	p->npts++;
	return 0;
}

int zrecorder_point(struct zrecorder *p, uint64_t in, unsigned bits, int member)
{
	/* a block or frame start after a ZP_SEQ point is always kept (a
	 * short span), so that damage never spills into the next frame */
	if (member) {
		p->rfill = p->rpos = 0;	/* no history crosses members */
		if (!zrecorder_want(p) && !after_seq(p))
			return 0;
	}
	return add_point(p, in, bits, member);
}

/* Span j's length so far (j < npts). */
static uint64_t span_len(const struct zrecorder *p, uint64_t j)
{
	return (j + 1 < p->npts ? p->pts[j + 1].out : p->out) - p->pts[j].out;
}

int zrecorder_block(struct zrecorder *p, uint64_t in, unsigned bits)
{
	uint64_t n = p->npts;

	/* a short span is closed here when the one before it is long (or
	 * it is the first): a short block between two long ones (pbzip2's
	 * 19-byte ones) keeps a span of its own; after two short spans the
	 * blocks share one until it holds ZBLOCK_MIN */
	p->rfill = p->rpos = 0;
	if (n && !span_len(p, n - 1)) {	/* an empty frame's: moved here */
		p->pts[n - 1].in = in;
		p->pts[n - 1].bits = (uint8_t)bits;
		p->pts[n - 1].flags = ZP_MEMBER;
		p->pts[n - 1].cx = p->cx;
		return 0;
	}
	if (n && span_len(p, n - 1) < ZBLOCK_MIN && !after_seq(p) &&
	    n >= 2 && span_len(p, n - 2) < ZBLOCK_MIN)
		return 0;
	return add_point(p, in, bits, 1);
}

void zrecorder_damaged(struct zrecorder *p, uint64_t from, const char *why, uint64_t at)
{
	sfs_warn("%s: %s at compressed offset %llu (uncompressed bytes from "
		 "%llu): reads of them give EIO", source_name(p->in), why,
		 (unsigned long long)at, (unsigned long long)from);
	if (p->nbad && from <= p->bad[p->nbad - 1].to) {
		p->bad[p->nbad - 1].to = p->out;
		return;
	}
	if (p->nbad == p->badcap) {
		size_t c = p->badcap ? 2 * p->badcap : 8;
		void *q = realloc(p->bad, c * sizeof(*p->bad));

		if (!q) {	/* the last range then grows to cover it */
			if (p->nbad)
				p->bad[p->nbad - 1].to = p->out;
			return;
		}
		p->bad = q;
		p->badcap = c;
	}
	p->bad[p->nbad].from = from;
	p->bad[p->nbad].to = p->out;
	p->nbad++;
}

/* Flags the spans that hold damaged bytes (the ranges are in order and
 * merged; an empty one damages nothing). */
static void mark_bad(struct zrecorder *p)
{
	uint64_t i, lo, hi;
	size_t b = 0;

	for (i = 0; i < p->npts && b < p->nbad; i++) {
		lo = p->pts[i].out;
		hi = span_end(p->pts, p->npts, i, p->out);
		while (b < p->nbad && p->bad[b].to <= lo)
			b++;
		if (b < p->nbad && p->bad[b].from < hi && p->bad[b].to > p->bad[b].from)
			p->pts[i].flags |= ZP_BAD;
	}
}

static int scratch_open(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

/* Finishes the blob in the scratch file (points after the windows,
 * header at 0) and maps it. */
static int pass_finish(struct zrecorder *p, const uint8_t **blob, size_t *blob_len)
{
	struct zblob_hdr h;
	uint64_t len;
	void *m;
	int rc;

	if ((rc = close_span(p)) < 0)
		return rc;
	mark_bad(p);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ZBLOB_MAGIC, sizeof(h.magic));
	h.version = ZBLOB_VERSION;
	h.codec = p->codec->id;
	h.csize = source_stamp(p->in)->size;
	h.usize = p->out;
	h.span = p->span;
	h.npoints = p->npts;
	h.points_off = (p->woff + 7) & ~7ull;
	len = h.points_off + p->npts * sizeof(struct zpoint);
	if ((rc = write_all(p->fd, p->pts, p->npts * sizeof(struct zpoint),
			    h.points_off)) < 0 ||
	    (rc = write_all(p->fd, &h, sizeof(h), 0)) < 0)
		return rc;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, p->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	*blob = m;
	*blob_len = (size_t)len;
	return 0;
}

const struct zexpect *zrecorder_expect(const struct zrecorder *p)
{
	return p->want;
}

int ztable_build(struct source *src, const struct zcodec *c, uint64_t span,
		 const struct zexpect *want, const struct zspans *keep,
		 const uint8_t **blob, size_t *len)
{
	struct zrecorder *p = calloc(1, sizeof(*p));
	struct zreader in = { 0 };
	double t0 = sfs_now_s();
	int rc = -ENOMEM;

	if (!p || (rc = zreader_init(&in, src, PASS_READ)) < 0)
		goto out;
	p->in = src;
	p->codec = c;
	p->want = want;
	p->span = span;
	p->keep = keep;
	if (!(p->crcs = malloc((ZSPAN_HARD / ZCHUNK + 2) * sizeof(*p->crcs))))
		goto out;
	p->woff = sizeof(struct zblob_hdr);
	if ((p->fd = scratch_open()) < 0) {
		rc = p->fd;
		sfs_err("%s: cannot make a scratch file for its access points: %s",
			source_name(src), strerror(-rc));
		goto out;
	}
	source_advise(src, 0, 0, SOURCE_ADV_WILLNEED);
	rc = c->scan(&in, p);
	source_advise(src, 0, 0, SOURCE_ADV_NORMAL);
	if (rc == 0)
		rc = pass_finish(p, blob, len);
	if (rc == 0)
		sfs_info("%s: %s, %llu bytes uncompressed, %llu access points, "
			 "in %.1f s", source_name(src), c->name,
			 (unsigned long long)p->out, (unsigned long long)p->npts,
			 sfs_now_s() - t0);
out:
	if (p && p->fd > 0)
		close(p->fd);   /* the mapping keeps the file */
	if (p) {
		free(p->pts);
		free(p->bad);
		free(p->crcs);
		free(p->kbuf);
		free(p->obuf);
	}
	free(p);
	free(in.buf);
	return rc;
}

/* ---- the blob ---- */

static int why_bad(char *why, size_t whylen, const char *what)
{
	snprintf(why, whylen, "%s", what);
	return -EBADMSG;
}

/* One point: inside the blob, after the one before it. */
static int point_ok(const struct zpoint *pt, const struct zpoint *prev,
		    const struct zblob_hdr *h, size_t len)
{
	if (pt->bits > 7 || pt->win_len > ZWINDOW || pt->win_stored > pt->win_len ||
	    (pt->win_len && !pt->win_stored) || pt->in > h->csize ||
	    (pt->bits && !pt->in) || pt->out > h->usize ||
	    pt->win_off < sizeof(*h) || pt->win_off > h->points_off ||
	    pt->win_stored > h->points_off - pt->win_off || pt->win_off > len)
		return 0;
	if (!prev)
		return pt->out == 0 && !(pt->flags & ZP_SEQ);
	return pt->out > prev->out && pt->out - prev->out <= ZSPAN_HARD &&
	       pt->in >= prev->in;
}

/* A point's CRC-32s lie between the header and the points. */
static int crcs_ok(const struct zpoint *pt, uint64_t end,
		   const struct zblob_hdr *h)
{
	return pt->crc_off >= sizeof(*h) && pt->crc_off <= h->points_off &&
	       nchunks(end - pt->out) <= (h->points_off - pt->crc_off) / 4;
}

int ztable_check(const void *blob, size_t len, uint64_t csize, char *why,
		 size_t whylen)
{
	struct zblob_hdr h;
	const struct zpoint *pts;
	uint64_t i;

	if (len < sizeof(h))
		return why_bad(why, whylen, "shorter than its header");
	memcpy(&h, blob, sizeof(h));
	if (memcmp(h.magic, ZBLOB_MAGIC, sizeof(h.magic)) || h.version != ZBLOB_VERSION)
		return why_bad(why, whylen, "bad magic or version");
	if (!zcodec_by_id(h.codec))
		return why_bad(why, whylen, "unknown codec");
	if (h.csize != csize)
		return why_bad(why, whylen, "made for another compressed size");
	if (h.points_off % 8 || h.points_off < sizeof(h) || h.points_off > len ||
	    h.npoints > (len - h.points_off) / sizeof(struct zpoint) ||
	    h.points_off + h.npoints * sizeof(struct zpoint) != len)
		return why_bad(why, whylen, "points out of bounds");
	if (!h.npoints && h.usize)
		return why_bad(why, whylen, "no access points");
	pts = (const struct zpoint *)((const uint8_t *)blob + h.points_off);
	for (i = 0; i < h.npoints; i++)
		if (!point_ok(&pts[i], i ? &pts[i - 1] : NULL, &h, len))
			return why_bad(why, whylen, "a bad access point");
	if (h.npoints && h.usize - pts[h.npoints - 1].out > ZSPAN_HARD)
		return why_bad(why, whylen, "a span too long");
	for (i = 0; i < h.npoints; i++)
		if (!crcs_ok(&pts[i], span_end(pts, h.npoints, i, h.usize), &h))
			return why_bad(why, whylen, "CRC-32s out of bounds");
	return 0;
}
