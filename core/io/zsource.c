/*
 * zsource.c - the decompressing source (zsource.h): a backend that wraps
 * another source, whose bytes a codec of the table below decompresses.
 *
 * Open: the first bytes choose the codec (magic).  A local file is always
 * sniffed (one small pread); a remote one only when its name ends in a
 * compressed suffix, so that remounting a tree of plain URLs still sends
 * no data request.  The access-point table then comes from the mount's
 * store (zsource_store: the index layer), checked; else from the pass,
 * run there and then, saved to the store.  The pass runs at open because
 * the stamp's size, which every layout reads first, is the uncompressed
 * size, known only at the end of the stream.
 *
 * The table (blob): a header, the windows, then the points (struct
 * zpoint), all little-endian; during the pass the windows go to an
 * unlinked scratch file ($TMPDIR) and only the points stay in memory
 * (40 bytes a span), so the pass's memory is bounded whatever the size.
 * After the pass the scratch file is mapped, saved, and replaced by the
 * store's own mapping when it has one.
 *
 * Reads: the span holding the byte is looked up in the mount's span LRU
 * (one for all sources of the env, keyed by source id and span); a miss
 * inflates it from its point (no lock held: readers of different spans
 * run in parallel; two readers of the same span may both inflate it, and
 * the second copy is dropped), checks its length and CRC-32, and inserts
 * it.  Codecs that restart only at block or frame starts (xz, zstd, bzip2)
 * read through a decoder (zcodec.h, dec_*); a span inside a long block
 * (ZP_SEQ) is decoded on from the block's start, and the decoder is kept
 * where it stopped (one per source, SEQ_KEPT a mount), so that the next
 * span of a sequential reader costs only itself.  In no-wait mode a miss is -EAGAIN: inflating is left to a thread
 * that may wait.
 *
 * Damage: a member the pass found damaged (CRC-32 or ISIZE mismatch,
 * truncated, not inflatable) marks the spans holding its bytes: reads of
 * them give EIO, said once per span.  A span whose inflated bytes do not
 * match the pass's CRC (the file was rewritten without changing its
 * stamp, a bad disk) gives EIO too.  Bombs: the size is what the pass
 * finds; a span longer than ZSPAN_HARD (no restart point for that long:
 * only crafted streams) fails the open with EFBIG, so a read never holds
 * more than ZSPAN_HARD, and the cache its own bound.
 *
 * Threads: open and close as any source; reads from any thread share the
 * read-only mapped table and the LRU (locked inside lru.c); the kept
 * decoder is taken out under the source's seq_lock and used unlocked;
 * ZP_SEQ spans of a source decode one at a time (seq_run), so that the
 * next reader finds its span cached or the decoder just before it.  Per mount:
 * struct zenv (the cache, the store, the engine), set up once.
 *
 * Not for: a codec's format (zgzip.c), writing index files (the store).
 */
#include "io/backend.h"
#include "io/zsource.h"
#include "io/zcodec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "clock.h"
#include "io/lru.h"
#include "log.h"

#define ZSPAN_HARD   (ZSOURCE_SPAN_MAX + (64ull << 20))
#define PASS_READ    (1u << 20)     /* the pass's reads of the source */
#define SPAN_READ    (128u << 10)   /* a span read's reads */
#define SNIFF        16
#define SEQ_KEPT     8              /* decoders kept between reads, a mount */
#define SEQ_WARN     (64ull << 20)  /* a read may decode this far: warned */
#define SEQ_CACHE    4              /* spans decoded on the way, cached */

/* The codec table: sniffed in order. */
static const struct zcodec *const codecs[] = {
	&zcodec_gzip, &zcodec_xz, &zcodec_zstd, &zcodec_bzip2,
};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

static const char *const suffixes[] = {
	".gz", ".tgz", ".bgz", ".gzip", ".xz", ".txz", ".zst", ".tzst",
	".bz2", ".tbz2", ".tbz",
};

/* The blob's header. */
#define ZBLOB_MAGIC   "SFSZIDX\1"
#define ZBLOB_VERSION 1
struct zblob_hdr {
	char magic[8];
	uint32_t version;
	uint8_t codec;
	uint8_t pad[3];
	uint64_t csize;       /* the compressed source's size */
	uint64_t usize;       /* uncompressed */
	uint64_t span;
	uint64_t npoints;
	uint64_t points_off;  /* 8-aligned, after the windows */
};

/* Per-mount state (env->z). */
struct zenv {
	struct lru *cache;
	atomic_uint next_id;
	const struct zsource_store *store;
	void *store_arg;
	enum zengine eng;
	uint64_t span;
	atomic_uint nseq;             /* decoders kept by its sources */
};

/* Per-source state (s->priv). */
struct zsrc {
	struct source *in;            /* the compressed bytes */
	const struct zcodec *codec;
	struct zenv *ze;
	uint64_t id;                  /* the cache's key base */
	const uint8_t *blob;          /* the table, mapped */
	size_t blob_len;
	const struct zpoint *pts;
	uint64_t npts, usize;
	void *hold;                   /* the store's mapping, or NULL */
	int own_map;                  /* 1: blob is our own mmap */
	pthread_mutex_t seq_lock;     /* guards seq */
	pthread_mutex_t seq_run;      /* held while a ZP_SEQ span decodes */
	struct zseq *seq;             /* a dec_* decoder kept between reads */
};

/* A codec's decoder (dec_*) where the last read left it: the next read
 * of a later span of the same block or frame goes on from here. */
struct zseq {
	struct zin in;
	void *dec;
	uint64_t out;                 /* uncompressed offset of its next byte */
};

/* ---- the buffered reader lent to codecs ---- */

int zin_fill(struct zin *in)
{
	ssize_t got;
	size_t keep = in->len - in->pos;

	memmove(in->buf, in->buf + in->pos, keep);
	in->boff += in->pos;
	in->pos = 0;
	in->len = keep;
	if (in->boff + in->len >= in->size || in->len == in->cap)
		return in->len > keep ? 1 : 0;
	got = source_pread(in->src, in->buf + in->len, in->cap - in->len,
			   in->boff + in->len);
	if (got < 0)
		return (int)got;
	in->len += (size_t)got;
	return got > 0;
}

int zin_read(struct zin *in, void *out, size_t n)
{
	size_t k;
	int rc;

	while (n) {
		if (in->pos == in->len && (rc = zin_fill(in)) <= 0)
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

void zin_seek(struct zin *in, uint64_t off)
{
	if (off >= in->boff && off <= in->boff + in->len) {
		in->pos = (size_t)(off - in->boff);
		return;
	}
	in->boff = off;
	in->pos = in->len = 0;
}

static int zin_init(struct zin *in, struct source *src, size_t cap)
{
	memset(in, 0, sizeof(*in));
	in->src = src;
	in->size = source_stamp(src)->size;
	in->cap = cap;
	in->buf = malloc(cap);
	return in->buf ? 0 : -ENOMEM;
}

/* ---- the pass's recorder ---- */

struct zpass {
	struct zsrc *z;
	uint64_t span;
	uint64_t out;                 /* bytes so far */
	uLong crc;                    /* of the current span */
	unsigned char ring[ZWINDOW];  /* the last ZWINDOW bytes of the member */
	size_t rpos, rfill;
	struct zpoint *pts;
	uint64_t npts, cap;
	uint8_t cx;                   /* zpass_codec_byte */
	int fd;                       /* the scratch file */
	uint64_t woff;                /* its end */
	struct { uint64_t from, to; } *bad;
	size_t nbad, badcap;
};

int zpass_output(struct zpass *p, const void *data, size_t n)
{
	const unsigned char *d = data;
	size_t k;

	p->crc = crc32(p->crc, d, (uInt)n);
	p->out += n;
	if (p->npts && p->out - p->pts[p->npts - 1].out > ZSPAN_HARD) {
		sfs_err("%s: no %s restart point in %llu MiB of output at "
			"offset %llu: not supported (a crafted stream?)",
			source_name(p->z->in), p->z->codec->name,
			(unsigned long long)(ZSPAN_HARD >> 20),
			(unsigned long long)p->out);
		return -EFBIG;
	}
	if (n >= ZWINDOW) {
		memcpy(p->ring, d + n - ZWINDOW, ZWINDOW);
		p->rpos = 0;
		p->rfill = ZWINDOW;
		return 0;
	}
	while (n) {
		k = ZWINDOW - p->rpos < n ? ZWINDOW - p->rpos : n;
		memcpy(p->ring + p->rpos, d, k);
		p->rpos = (p->rpos + k) % ZWINDOW;
		p->rfill = p->rfill + k > ZWINDOW ? ZWINDOW : p->rfill + k;
		d += k;
		n -= k;
	}
	return 0;
}

int zpass_seq_point(struct zpass *p, uint64_t in)
{
	int rc;

	if (!zpass_want(p) || (rc = zpass_point(p, in, 0, 1)) < 0)
		return zpass_want(p) ? rc : 0;
	p->pts[p->npts - 1].flags = ZP_SEQ;
	return 0;
}

int zpass_fill(struct zpass *p, uint64_t n)
{
	static const unsigned char zeros[64 << 10];
	size_t k;
	int rc = n > ZFILL_MAX ? -EFBIG : 0;

	for (; rc == 0 && n; n -= k) {
		k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
		rc = zpass_output(p, zeros, k);
	}
	return rc;
}

void zpass_codec_byte(struct zpass *p, uint8_t cx)
{
	p->cx = cx;
}

int zpass_want(const struct zpass *p)
{
	return !p->npts || p->out - p->pts[p->npts - 1].out >= p->span;
}

/* The window, oldest byte first, into w: its length. */
static size_t ring_linear(const struct zpass *p, unsigned char *w)
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
static int put_window(struct zpass *p, struct zpoint *pt)
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

/* A restart point close after a ZP_SEQ one takes its place (1), so that
 * a block or frame start is always one: the span before it grows by less
 * than a span, its CRC-32 joined. */
static int drop_seq(struct zpass *p)
{
	struct zpoint *last = p->npts ? &p->pts[p->npts - 1] : NULL;

	if (p->npts < 2 || !(last->flags & ZP_SEQ))
		return 0;
	p->crc = crc32_combine(last[-1].crc, p->crc, (z_off_t)(p->out - last->out));
	p->npts--;
	return 1;
}

int zpass_point(struct zpass *p, uint64_t in, unsigned bits, int member)
{
	struct zpoint *pt;
	int rc;

	if (member) {
		p->rfill = p->rpos = 0;	/* no history crosses members */
		if (!zpass_want(p) && !drop_seq(p))
			return 0;
	}
	if (p->npts == p->cap) {
		uint64_t c = p->cap ? 2 * p->cap : 1024;
		void *q = realloc(p->pts, c * sizeof(*p->pts));

		if (!q)
			return -ENOMEM;
		p->pts = q;
		p->cap = c;
	}
	if (p->npts)
		p->pts[p->npts - 1].crc = (uint32_t)p->crc;
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
	p->crc = crc32(0, NULL, 0);
	return 0;
}

void zpass_damaged(struct zpass *p, uint64_t from, const char *why, uint64_t at)
{
	sfs_warn("%s: %s at compressed offset %llu (uncompressed bytes from "
		 "%llu): reads of them give EIO", source_name(p->z->in), why,
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

/* End of span i (the next point's start, or the end). */
static uint64_t span_end(const struct zpoint *pts, uint64_t n, uint64_t i,
			 uint64_t usize)
{
	return i + 1 < n ? pts[i + 1].out : usize;
}

/* Flags the spans that hold damaged bytes (the ranges are in order and
 * merged; an empty one damages nothing). */
static void mark_bad(struct zpass *p)
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
 * header at 0) and maps it into z. */
static int pass_finish(struct zpass *p)
{
	struct zsrc *z = p->z;
	struct zblob_hdr h;
	uint64_t len;
	void *m;
	int rc;

	if (p->npts)
		p->pts[p->npts - 1].crc = (uint32_t)p->crc;
	mark_bad(p);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ZBLOB_MAGIC, sizeof(h.magic));
	h.version = ZBLOB_VERSION;
	h.codec = z->codec->id;
	h.csize = source_stamp(z->in)->size;
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
	z->blob = m;
	z->blob_len = len;
	z->own_map = 1;
	return 0;
}

/* The pass: builds z's table from the whole compressed stream. */
static int run_pass(struct zsrc *z)
{
	struct zpass *p = calloc(1, sizeof(*p));
	struct zin in = { 0 };
	double t0 = sfs_now_s();
	int rc = -ENOMEM;

	if (!p || (rc = zin_init(&in, z->in, PASS_READ)) < 0)
		goto out;
	p->z = z;
	p->span = z->ze->span;
	p->crc = crc32(0, NULL, 0);
	p->woff = sizeof(struct zblob_hdr);
	if ((p->fd = scratch_open()) < 0) {
		rc = p->fd;
		sfs_err("%s: cannot make a scratch file for its access points: %s",
			source_name(z->in), strerror(-rc));
		goto out;
	}
	source_advise(z->in, 0, 0, SOURCE_ADV_WILLNEED);
	rc = z->codec->scan(&in, p);
	source_advise(z->in, 0, 0, SOURCE_ADV_NORMAL);
	if (rc == 0)
		rc = pass_finish(p);
	if (rc == 0)
		sfs_info("%s: %s, %llu bytes uncompressed, %llu access points, "
			 "in %.1f s", source_name(z->in), z->codec->name,
			 (unsigned long long)p->out, (unsigned long long)p->npts,
			 sfs_now_s() - t0);
out:
	if (p && p->fd > 0)
		close(p->fd);   /* the mapping keeps the file */
	if (p) {
		free(p->pts);
		free(p->bad);
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

int zsource_blob_check(const void *blob, size_t len, uint64_t csize, char *why,
		       size_t whylen)
{
	struct zblob_hdr h;
	const struct zpoint *pts;
	uint64_t i;
	size_t c;

	if (len < sizeof(h))
		return why_bad(why, whylen, "shorter than its header");
	memcpy(&h, blob, sizeof(h));
	if (memcmp(h.magic, ZBLOB_MAGIC, sizeof(h.magic)) || h.version != ZBLOB_VERSION)
		return why_bad(why, whylen, "bad magic or version");
	for (c = 0; c < NCODECS && codecs[c]->id != h.codec; c++)
		;
	if (c == NCODECS)
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
	return 0;
}

/* Binds a checked blob to z. */
static void bind_blob(struct zsrc *z)
{
	struct zblob_hdr h;

	memcpy(&h, z->blob, sizeof(h));
	z->usize = h.usize;
	z->npts = h.npoints;
	z->pts = (const struct zpoint *)(z->blob + h.points_off);
}

static void unbind_blob(struct zsrc *z)
{
	if (z->own_map)
		munmap((void *)z->blob, z->blob_len);
	else if (z->hold)
		z->ze->store->release(z->ze->store_arg, z->hold);
	z->blob = NULL;
	z->hold = NULL;
	z->own_map = 0;
}

/* The store's table for z, checked: 0 bound, -ENOENT none that fits. */
static int load_stored(struct zsrc *z)
{
	const struct zsource_store *st = z->ze->store;
	const void *blob;
	size_t len;
	char why[128];
	int rc;

	if (!st || st->load(z->ze->store_arg, source_name(z->in),
			    source_stamp(z->in), z->ze->span, &blob, &len,
			    &z->hold) < 0)
		return -ENOENT;
	rc = zsource_blob_check(blob, len, source_stamp(z->in)->size, why,
				sizeof(why));
	if (rc < 0) {
		sfs_warn("%s: its saved access points are unusable (%s): "
			 "reading it through again", source_name(z->in), why);
		st->release(z->ze->store_arg, z->hold);
		z->hold = NULL;
		return -ENOENT;
	}
	z->blob = blob;
	z->blob_len = len;
	return 0;
}

/* After a pass: saves the table and uses the store's copy from then on
 * (the scratch file goes), when the store keeps it. */
static void save_table(struct zsrc *z)
{
	const struct zsource_store *st = z->ze->store;
	const uint8_t *mine = z->blob;
	size_t len = z->blob_len;

	if (!st)
		return;
	st->save(z->ze->store_arg, source_name(z->in), source_stamp(z->in),
		 z->ze->span, z->blob, z->blob_len);
	z->blob = NULL;
	if (load_stored(z) == 0) {
		munmap((void *)mine, len);
		z->own_map = 0;
	} else {
		z->blob = mine;
	}
}

/* ---- reads ---- */

/* The span holding uncompressed offset off (off < usize). */
static uint64_t find_span(const struct zsrc *z, uint64_t off)
{
	uint64_t lo = 0, hi = z->npts;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (z->pts[mid].out <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The raw window of pt into w (ZWINDOW bytes). */
static int window_of(const struct zsrc *z, const struct zpoint *pt,
		     unsigned char *w)
{
	uLongf n = ZWINDOW;

	if (pt->win_stored == pt->win_len) {
		memcpy(w, z->blob + pt->win_off, pt->win_len);
		return 0;
	}
	if (uncompress(w, &n, z->blob + pt->win_off, pt->win_stored) != Z_OK ||
	    n != pt->win_len)
		return -EIO;
	return 0;
}

/* ---- spans of codecs that read through a decoder (dec_*) ---- */

/* The last restart point at or before span i (the first never is ZP_SEQ). */
static uint64_t restart_of(const struct zsrc *z, uint64_t i)
{
	while (i && (z->pts[i].flags & ZP_SEQ))
		i--;
	return i;
}

static void seq_free(const struct zsrc *z, struct zseq *q)
{
	if (!q)
		return;
	if (q->dec)
		z->codec->dec_free(q->dec);
	free(q->in.buf);
	free(q);
}

/* A decoder at or before span i's start and not before its restart
 * point: the one kept, when it is, else a new one at the restart point. */
static int seq_take(struct zsrc *z, uint64_t i, struct zseq **qp)
{
	const struct zpoint *r = &z->pts[restart_of(z, i)];
	struct zseq *q;
	int rc;

	pthread_mutex_lock(&z->seq_lock);
	q = z->seq;
	if (q && q->out >= r->out && q->out <= z->pts[i].out) {
		z->seq = NULL;
		atomic_fetch_sub(&z->ze->nseq, 1);
	} else {
		q = NULL;
	}
	pthread_mutex_unlock(&z->seq_lock);
	if (q) {
		*qp = q;
		return 0;
	}
	if (!(q = calloc(1, sizeof(*q))) ||
	    (rc = zin_init(&q->in, z->in, SPAN_READ)) < 0) {
		free(q);
		return -ENOMEM;
	}
	if ((rc = z->codec->dec_open(&q->in, r, &q->dec)) < 0) {
		seq_free(z, q);
		return rc;
	}
	q->out = r->out;
	*qp = q;
	return 0;
}

/* Keeps q for the next read (in place of an older one), unless the
 * mount keeps SEQ_KEPT already: their memory is a dictionary each. */
static void seq_keep(struct zsrc *z, struct zseq *q)
{
	struct zseq *old;

	pthread_mutex_lock(&z->seq_lock);
	old = z->seq;
	if (old || atomic_fetch_add(&z->ze->nseq, 1) < SEQ_KEPT) {
		z->seq = q;
		q = NULL;
	} else {
		atomic_fetch_sub(&z->ze->nseq, 1);
	}
	pthread_mutex_unlock(&z->seq_lock);
	seq_free(z, old ? old : q);
}

/*
 * Decodes span j, which q is at, on the way to a later one: cached when
 * it is one of the SEQ_CACHE spans just before (the kernel's read-ahead
 * asks for spans out of order), else decoded into buf (cap bytes) and
 * dropped.
 */
static int seq_pass_span(struct zsrc *z, struct zseq *q, uint64_t j,
			 uint64_t i, unsigned char *buf, size_t cap)
{
	size_t len = (size_t)(z->pts[j + 1].out - z->pts[j].out), k, done;
	unsigned char *keep = i - j <= SEQ_CACHE ? malloc(len) : NULL;
	int rc = 0;

	for (done = 0; rc == 0 && done < len; done += k) {
		k = keep ? len : len - done < cap ? len - done : cap;
		rc = z->codec->dec_read(q->dec, &q->in, keep ? keep : buf, k);
	}
	q->out += len;
	if (rc == 0 && keep &&
	    crc32(crc32(0, NULL, 0), keep, (uInt)len) == z->pts[j].crc &&
	    !(z->pts[j].flags & ZP_BAD)) {
		lru_insert(z->ze->cache, z->id << 32 | j, keep, len);
		keep = NULL;
	}
	free(keep);
	return rc;
}

/* Decodes span i (len bytes) into buf: 0 or -errno. */
static int seq_span(struct zsrc *z, uint64_t i, unsigned char *buf, size_t len)
{
	struct zseq *q;
	uint64_t j;
	int rc;

	if ((rc = seq_take(z, i, &q)) < 0)
		return rc;
	for (j = find_span(z, q->out); rc == 0 && q->out < z->pts[i].out; j++)
		rc = seq_pass_span(z, q, j, i, buf, len);
	if (rc == 0)
		rc = z->codec->dec_read(q->dec, &q->in, buf, len);
	q->out += len;
	if (rc == 0)
		seq_keep(z, q);
	else
		seq_free(z, q);
	return rc;
}

/* Inflates span i into a new buffer, checked: 0 or -errno (said). */
static int inflate_span(struct zsrc *z, uint64_t i, unsigned char **out,
			size_t *outlen)
{
	const struct zpoint *pt = &z->pts[i];
	size_t len = (size_t)(span_end(z->pts, z->npts, i, z->usize) - pt->out);
	unsigned char *buf = malloc(len ? len : 1), *win = malloc(ZWINDOW);
	struct zin in;
	const char *why = NULL;
	int rc = zin_init(&in, z->in, SPAN_READ);

	if (!buf || !win || rc < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if (window_of(z, pt, win) < 0)
		why = "its stored window does not inflate";
	else if ((rc = z->codec->span ?
		      z->codec->span(&in, pt, win, buf, len, z->ze->eng) :
		      seq_span(z, i, buf, len)) < 0)
		why = "the stream does not inflate there";
	else if (crc32(crc32(0, NULL, 0), buf, (uInt)len) != pt->crc)
		why = "its bytes do not match the CRC-32 of the first pass";
	if (why) {
		(void)source_check(z->in);	/* a replaced file says so too */
		rc = -EIO;
		sfs_warn("%s: span at uncompressed offset %llu (compressed %llu): "
			 "%s: EIO", source_name(z->in), (unsigned long long)pt->out,
			 (unsigned long long)pt->in, why);
		goto out;
	}
	*out = buf;
	*outlen = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	free(win);
	free(in.buf);
	return rc;
}

/* span_copy of a ZP_SEQ span: one reader of the source at a time, so
 * that readers of the same or the next spans (the kernel's read-ahead)
 * find them cached, or the decoder where the last one left it, instead
 * of decoding again from the block's start. */
static int seq_copy(struct zsrc *z, uint64_t i, size_t off, void *dst, size_t n)
{
	uint64_t key = z->id << 32 | i;
	unsigned char *buf;
	size_t len;
	int rc = 0;

	pthread_mutex_lock(&z->seq_run);
	if (lru_copy_out(z->ze->cache, key, off, dst, n) != 1 &&
	    (rc = inflate_span(z, i, &buf, &len)) == 0) {
		memcpy(dst, buf + off, n);
		lru_insert(z->ze->cache, key, buf, len);
	}
	pthread_mutex_unlock(&z->seq_run);
	return rc;
}

/* Copies n bytes at off within span i into dst. */
static int span_copy(struct zsrc *z, uint64_t i, size_t off, void *dst, size_t n)
{
	uint64_t key = z->id << 32 | i;
	unsigned char *buf;
	size_t len;
	int rc;

	if (z->pts[i].flags & ZP_BAD) {
		sfs_warn("%s: uncompressed bytes %llu-%llu are in a damaged "
			 "member: EIO", source_name(z->in),
			 (unsigned long long)z->pts[i].out,
			 (unsigned long long)span_end(z->pts, z->npts, i, z->usize));
		return -EIO;
	}
	if (lru_copy_out(z->ze->cache, key, off, dst, n) == 1)
		return 0;
	if (source_nowait_mode())
		return -EAGAIN;
	if (z->pts[i].flags & ZP_SEQ)
		return seq_copy(z, i, off, dst, n);
	if ((rc = inflate_span(z, i, &buf, &len)) < 0)
		return rc;
	memcpy(dst, buf + off, n);
	lru_insert(z->ze->cache, key, buf, len);
	return 0;
}

static ssize_t z_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct zsrc *z = s->priv;
	size_t done = 0, k;
	uint64_t i, end;
	int rc;

	if (off >= z->usize)
		return 0;
	if (n > z->usize - off)
		n = (size_t)(z->usize - off);
	while (done < n) {
		i = find_span(z, off + done);
		end = span_end(z->pts, z->npts, i, z->usize);
		k = end - (off + done) < n - done ? (size_t)(end - (off + done)) : n - done;
		rc = span_copy(z, i, (size_t)(off + done - z->pts[i].out),
			       (char *)buf + done, k);
		if (rc < 0)
			return rc;
		done += k;
	}
	return (ssize_t)done;
}

static int z_changed(struct source *s)
{
	struct zsrc *z = s->priv;

	return source_check(z->in) < 0;
}

static void zsrc_free(struct zsrc *z)
{
	if (!z)
		return;
	if (z->seq) {
		seq_free(z, z->seq);
		atomic_fetch_sub(&z->ze->nseq, 1);
	}
	pthread_mutex_destroy(&z->seq_lock);
	pthread_mutex_destroy(&z->seq_run);
	if (z->blob)
		unbind_blob(z);
	source_close(z->in);
	free(z);
}

static void z_close(struct source *s)
{
	zsrc_free(s->priv);
}

/* ---- the backend row: per-mount state only (zsource_wrap opens) ---- */

static int z_claims(const char *uri)
{
	return 0;	/* chosen by content, in zsource_wrap */
}

static int z_env_init(struct source_env *env)
{
	struct zenv *ze = calloc(1, sizeof(*ze));
	const char *e = getenv("SAMPLEFS_INFLATE");
	uint64_t cache = env->cfg.span_cache_bytes;

	if (!ze)
		return -ENOMEM;
	ze->span = env->cfg.span_bytes ? env->cfg.span_bytes : ZSOURCE_SPAN_DEFAULT;
	if (ze->span < ZSOURCE_SPAN_MIN || ze->span > ZSOURCE_SPAN_MAX) {
		sfs_err("span=%llu: must be from %llu to %llu bytes",
			(unsigned long long)ze->span,
			(unsigned long long)ZSOURCE_SPAN_MIN,
			(unsigned long long)ZSOURCE_SPAN_MAX);
		free(ze);
		return -EINVAL;
	}
	ze->eng = e && !strcmp(e, "zlib") ? ZENGINE_ZLIB : ZENGINE_FAST;
	if (!(ze->cache = lru_new(cache ? cache : ZSOURCE_CACHE_DEFAULT))) {
		free(ze);
		return -ENOMEM;
	}
	env->z = ze;
	return 0;
}

static void z_env_fini(struct source_env *env)
{
	struct zenv *ze = env->z;

	if (!ze)
		return;
	lru_free(ze->cache);
	free(ze);
	env->z = NULL;
}

const struct source_backend source_z_backend = {
	.name = "decompressed",
	.claims = z_claims,
	.pread = z_pread,
	.changed = z_changed,
	.close = z_close,
	.env_init = z_env_init,
	.env_fini = z_env_fini,
};

void source_env_zstore(struct source_env *env, const struct zsource_store *ops,
		       void *arg)
{
	struct zenv *ze = env->z;

	ze->store = ops;
	ze->store_arg = arg;
}

int source_is_decompressed(const struct source *s)
{
	return s->be == &source_z_backend;
}

/* The codec whose magic the source starts with, or NULL. */
static const struct zcodec *sniff(struct source *in)
{
	unsigned char head[SNIFF];
	const char *name = source_name(in);
	size_t nl = strlen(name), i, sl;
	ssize_t got;
	int named = 0;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		sl = strlen(suffixes[i]);
		named |= nl > sl && !strcmp(name + nl - sl, suffixes[i]);
	}
	if (source_is_remote(in) && !named)
		return NULL;
	if ((got = source_pread(in, head, sizeof(head), 0)) <= 0)
		return NULL;
	for (i = 0; i < NCODECS; i++)
		if (codecs[i]->sniff(head, (size_t)got))
			return codecs[i];
	return NULL;
}

/* Says at open when a read may decode far: a restart point more than
 * SEQ_WARN before the end of a span after it (one xz block, one zstd
 * frame for the whole file), with the codec's fix. */
static void warn_far(const struct zsrc *z)
{
	uint64_t i, r = 0, far = 0, d;

	for (i = 0; i < z->npts && z->codec->seq_fix; i++) {
		if (!(z->pts[i].flags & ZP_SEQ))
			r = i;
		d = span_end(z->pts, z->npts, i, z->usize) - z->pts[r].out;
		far = d > far ? d : far;
	}
	if (far > SEQ_WARN)
		sfs_warn("%s: up to %llu MiB of it in one %s block or frame: "
			 "sequential reads are fast, a random read decodes up "
			 "to that much; %s", source_name(z->in),
			 (unsigned long long)(far >> 20), z->codec->name,
			 z->codec->seq_fix);
}

/* The outer source's stamp: the inner's, with the uncompressed size; its
 * ETag records the compressed size too, for the index fingerprints. */
static void outer_stamp(struct source *s, const struct zsrc *z)
{
	const struct source_stamp *in = source_stamp(z->in);

	s->stamp = *in;
	s->stamp.size = z->usize;
	snprintf(s->stamp.etag, sizeof(s->stamp.etag), "%s:%llu:%.96s",
		 z->codec->name, (unsigned long long)in->size, in->etag);
}

int zsource_wrap(struct source *in, struct source **out)
{
	const struct zcodec *c = in->env && in->env->z ? sniff(in) : NULL;
	struct zsrc *z = NULL;
	struct source *s = NULL;
	int rc = -ENOMEM;

	*out = in;
	if (!c)
		return 0;
	if (!(z = calloc(1, sizeof(*z))) || !(s = calloc(1, sizeof(*s))) ||
	    !(s->name = strdup(in->name))) {
		source_close(in);
		goto fail;
	}
	pthread_mutex_init(&z->seq_lock, NULL);
	pthread_mutex_init(&z->seq_run, NULL);
	z->in = in;
	z->codec = c;
	z->ze = in->env->z;
	z->id = atomic_fetch_add(&z->ze->next_id, 1);
	if (load_stored(z) < 0) {
		if ((rc = run_pass(z)) < 0)
			goto fail;
		save_table(z);
	}
	bind_blob(z);
	warn_far(z);
	s->be = &source_z_backend;
	s->env = in->env;
	s->priv = z;
	outer_stamp(s, z);
	*out = s;
	return 0;
fail:
	*out = NULL;
	zsrc_free(z);
	if (s)
		free(s->name);
	free(s);
	return rc;
}
