/*
 * zsource.c - the decompressing source (zsource.h): a backend that wraps
 * another source, whose bytes a codec of ztable.c's table decompresses.
 *
 * Open: the first bytes choose the codec (magic), but for a raw deflate
 * stream (a zip member: zsource_wrap_deflate), whose caller names the row
 * and gives the size and CRC-32 its pass checks.  A local file is always
 * sniffed (one small pread);
 * a remote one only when its name ends in a compressed suffix, so that
 * remounting a tree of plain URLs still sends no data request.  The
 * access-point table then comes from the mount's store (zsource_store:
 * the index layer), checked; else from the pass, saved to the store.
 *
 * Growing: the pass runs in a thread of the source (struct zrun), started
 * by the first read, source_extent or source_stamp, so that the reads
 * that follow a first open (the tar index build, from the start) take
 * the bytes the pass inflates instead of inflating them again: one
 * inflation at the first mount, the pass (zlib) and the reader on two
 * cores.  The pass hands each span, whole, to the cache as it ends; once
 * a reader has called source_extent (it streams: it will ask at the end
 * whether what it read was sound), a read of bytes the pass has not
 * reached waits for them (its end, error or cancellation wakes the read),
 * and other reads wait for the end (bytes checked, as before); the pass waits when it is `ahead` bytes
 * past the furthest byte asked for, so its memory stays the cache's and
 * a source nobody reads costs nothing.  Until the pass ends the size is
 * unknown: source_stamp waits for the end; source_extent says how far the
 * bytes go so far (the tar walk's bound, formats/tar.c); index
 * fingerprints take source_identity (the compressed file's stamp).  Spans
 * read while the pass ran are noted: when the pass then finds any of them
 * damaged (a CRC-32 known only at a member's end), source_extent fails
 * with EIO, so a build that read them fails as it would have had it read
 * them after the pass (EIO).  A span evicted before its reader got to it
 * makes that reader wait for the end and inflate it from the table.
 *
 * The table (blob, ztable.h) is made by the pass and checked by
 * ztable.c; after the pass it is an unlinked scratch file, mapped, saved
 * to the store and replaced by the store's own mapping when it has one.
 *
 * Reads: the span holding the byte is looked up in the mount's span LRU
 * (one for all sources of the env, keyed by source id and span); a miss
 * inflates it from its point (no lock held: readers of different spans
 * run in parallel; two readers of the same span may both inflate it, and
 * the second copy is dropped), checks its bytes against the pass's
 * CRC-32s (one per 64 KiB), and inserts it.  Spans are inflated, by the
 * pass and by misses alike, into buffers of the mount's pool (zpool.h),
 * which the cache gives back as it evicts them (see struct zenv).  In no-wait mode a miss is
 * -EAGAIN: inflating is left to a thread that may wait.  Codecs that
 * restart only at block or frame starts (xz, zstd, bzip2) read whole
 * spans through a decoder (zcodec.h, dec_*) that zseq.c keeps between
 * reads; spans inside a long block (ZP_SEQ) decode one at a time a
 * source (seq_copy), so a sequential reader decodes the block once.
 *
 * Damage: a member the pass found damaged (CRC-32 or ISIZE mismatch,
 * truncated, not inflatable) marks the spans holding its bytes: reads of
 * them give EIO, said at each read.  A span whose inflated bytes do not
 * match the pass's CRC-32s (the file was rewritten without changing its
 * stamp, a bad disk) gives EIO too.  Bombs: the size is what the pass
 * finds; a span longer than ZSPAN_HARD (no restart point for that long:
 * only crafted streams) fails the open with EFBIG, so a read never holds
 * more than ZSPAN_HARD, and the cache its own bound.
 *
 * Threads: open and close as any source; reads from any thread share the
 * read-only mapped table and the LRU (locked inside lru.c).  While the
 * pass runs, its thread and the readers share struct zrun, under its
 * mutex; the table, the size and the pass's result are written by the
 * pass thread before it clears `growing` (release) and read after a read
 * of it (acquire) or under that mutex.  Close cancels a running pass and
 * joins it.  Per mount: struct zenv (the cache, the store, the engine),
 * set up once.
 *
 * Not for: a codec's format (zgzip.c, zxz.c, zzstd.c, zbz2.c), the pass
 * and the table's checks (ztable.c), kept decoders (zseq.c), writing
 * index files (the store).
 */
#include "io/backend.h"
#include "io/zseq.h"
#include "io/zsource.h"
#include "io/ztable.h"

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
#include "io/zpool.h"
#include "log.h"

#define SPAN_READ    (256u << 10)   /* a span read's reads */
#define SNIFF        16
#define POOL_SPARE   4              /* span buffers kept unused, a mount */

static const char *const suffixes[] = {
	".gz", ".tgz", ".bgz", ".gzip", ".xz", ".txz", ".zst", ".tzst",
	".bz2", ".tbz2", ".tbz",
};

/*
 * Per-mount state (env->z).  Span buffers: every span in the cache was
 * inflated into a buffer of the pool (by the pass, zpass_outbuf, or by a
 * read miss), and the cache gives each one it evicts or refuses back to
 * the pool (lru_set_release), which keeps POOL_SPARE of them: once the
 * cache is full, a span is inflated into memory an evicted one held, not
 * into fresh pages.  A buffer is owned by exactly one of: the pool, the
 * cache, or the one thread inflating into it (the pass thread for its
 * current span, a FUSE worker for its miss) until it inserts it.
 */
struct zenv {
	struct lru *cache;
	struct zpool *pool;
	atomic_uint next_id;
	const struct zsource_store *store;
	void *store_arg;
	enum zengine eng;
	uint64_t span;
	uint64_t cache_bytes;         /* the cache's size */
	atomic_uint nseq;             /* decoders kept by its sources (zseq.c) */
	zsource_decoded_fn decoded;   /* set before reads, then only read */
	void *decoded_arg;
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
	int no_pass;                  /* the store forbids a pass (-EPERM) */
	struct zkeep keep;            /* xz, zstd: the decoder kept (zseq.h) */
	struct source *outer;         /* the source z is the priv of */
	struct zrun *run;             /* the first pass, or NULL (stored table) */
	const struct zexpect *want;   /* raw deflate: &want_buf; else NULL */
	struct zexpect want_buf;
	atomic_int growing;           /* 1 until the pass's end is published */
	int pass_rc;                  /* the pass failed: every read gives it */
	int extent_rc;                /* -EIO: bytes read while it ran were
				       * damaged (source_extent says it) */
};

/* The first pass while it runs (see Growing above); under mu. */
struct zrun {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* a span ended, the end, a reader asked */
	uint64_t *starts;             /* span i's first byte, spans ended so far */
	uint8_t *touched;             /* 1: a reader took bytes of span i */
	uint64_t nspans, cap;
	uint64_t frontier;            /* bytes in the spans ended so far */
	uint64_t asked;               /* the furthest byte a reader asked for */
	uint64_t ahead;               /* the pass waits this far past `asked` */
	int started, cancel, done;
	int streamed;                 /* a reader called source_extent: reads
				       * are served at the frontier */
};

_Static_assert(ZSPAN_HARD >= ZSOURCE_SPAN_MAX + (64ull << 20),
	       "a span of span= bytes plus the last block fits");

int zsource_blob_check(const void *blob, size_t len, uint64_t csize, char *why,
		       size_t whylen)
{
	return ztable_check(blob, len, csize, why, whylen);
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

	if (!st)
		return -ENOENT;
	rc = st->load(z->ze->store_arg, source_name(z->in), source_stamp(z->in),
		      z->ze->span, &blob, &len, &z->hold);
	z->no_pass = rc == -EPERM;	/* -o index_only: said by the store */
	if (rc < 0)
		return -ENOENT;
	rc = ztable_check(blob, len, source_stamp(z->in)->size, why,
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

/* After a pass: saves the table for later mounts.  This source keeps
 * reading its own copy (the pass's scratch mapping): mapping the saved
 * file again would only swap one copy for another, and say "using the
 * saved index" of a table this mount has just made. */
static void save_table(struct zsrc *z)
{
	const struct zsource_store *st = z->ze->store;

	if (st)
		st->save(z->ze->store_arg, source_name(z->in), source_stamp(z->in),
			 z->ze->span, z->blob, z->blob_len);
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

/* Chunk c's CRC-32s of span i as the pass recorded it. */
static uint32_t chunk_crc(const struct zsrc *z, const struct zpoint *pt,
			  uint64_t c)
{
	uint32_t v;

	memcpy(&v, z->blob + pt->crc_off + 4 * c, sizeof(v));
	return v;
}

/* The first len bytes of span i are those the pass saw there: 1 or 0. */
static int chunks_match(const struct zsrc *z, const struct zpoint *pt,
			const unsigned char *buf, size_t len)
{
	uint64_t c;
	size_t k;

	for (c = 0; c < nchunks(len); c++) {
		k = len - c * ZCHUNK < ZCHUNK ? len - c * ZCHUNK : ZCHUNK;
		if (zcrc32(zchunk_seed(pt->out + c * ZCHUNK), buf + c * ZCHUNK, k) !=
		    chunk_crc(z, pt, c))
			return 0;
	}
	return 1;
}

/* A span zseq.c decoded on the way to another: cached when it checks. */
static void seq_passed(void *arg, uint64_t j, unsigned char *buf, size_t len)
{
	struct zsrc *z = arg;

	if (!(z->pts[j].flags & ZP_BAD) && chunks_match(z, &z->pts[j], buf, len)) {
		lru_insert(z->ze->cache, z->id << 33 | j << 1 | 1, buf, len);
		return;
	}
	zpool_put(z->ze->pool, buf, len);
}

/* A span buffer for len bytes (zpool.h), for the pass and zseq.c. */
static void *span_buf(void *arg, size_t len)
{
	struct zsrc *z = arg;

	return zpool_get(z->ze->pool, len);
}

/* What a span read decoded (zseq.c), to the env's instrumentation. */
static void seq_decoded(void *arg, uint64_t from, uint64_t to)
{
	struct zsrc *z = arg;

	if (z->ze->decoded)
		z->ze->decoded(z->ze->decoded_arg, z->outer, from, to);
}

static struct zseq_view view_of(struct zsrc *z)
{
	struct zseq_view v = {
		.in = z->in, .codec = z->codec, .pts = z->pts, .npts = z->npts,
		.usize = z->usize, .passed = seq_passed, .decoded = seq_decoded,
		.get = span_buf, .arg = z,
	};

	return v;
}

/* The codec's span function, or zseq's decoder: 0 or -errno. */
static int decode_span(struct zsrc *z, uint64_t i, struct zin *in,
		       const unsigned char *win, unsigned char *buf, size_t len)
{
	struct zseq_view v;

	if (z->codec->span)
		return z->codec->span(in, &z->pts[i], win, buf, len, z->ze->eng);
	v = view_of(z);
	return zseq_span(&z->keep, &v, i, buf, len);
}

/* Inflates the first len bytes of span i (whole chunks, or the whole
 * span) into a buffer of the pool, checked: 0 or -errno (said). */
static int inflate_span(struct zsrc *z, uint64_t i, size_t len,
			unsigned char **out)
{
	const struct zpoint *pt = &z->pts[i];
	unsigned char *buf = zpool_get(z->ze->pool, len ? len : 1);
	unsigned char *win = malloc(ZWINDOW);
	struct zin in;
	const char *why = NULL;
	int rc = zin_init(&in, z->in, SPAN_READ);

	if (!buf || !win || rc < 0) {
		rc = -ENOMEM;
		goto out;
	}
	if (window_of(z, pt, win) < 0)
		why = "its stored window does not inflate";
	else if ((rc = decode_span(z, i, &in, win, buf, len)) < 0)
		why = "the stream does not inflate there";
	else if (!chunks_match(z, pt, buf, len))
		why = "its bytes do not match the CRC-32s of the first pass";
	if (why) {
		(void)source_check(z->in);	/* a replaced file says so too */
		rc = -EIO;
		sfs_warn("%s: span at uncompressed offset %llu (compressed %llu): "
			 "%s: EIO", source_name(z->in), (unsigned long long)pt->out,
			 (unsigned long long)pt->in, why);
		goto out;
	}
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	zpool_put(z->ze->pool, buf, len ? len : 1);
	free(win);
	free(in.buf);
	return rc;
}

/* span_copy of a ZP_SEQ span, whole: one reader of the source at a
 * time, so that readers of the same or the next spans (the kernel's
 * read-ahead) find them cached, or the decoder where the last one left
 * it, instead of decoding again from the block's start. */
static int seq_copy(struct zsrc *z, uint64_t i, size_t len, void *dst,
		    size_t off, size_t n)
{
	uint64_t key = z->id << 33 | i << 1 | 1;
	unsigned char *buf;
	int rc = 0;

	pthread_mutex_lock(&z->keep.run);
	if (lru_copy_out(z->ze->cache, key, off, dst, n) != 1 &&
	    (rc = inflate_span(z, i, len, &buf)) == 0) {
		memcpy(dst, buf + off, n);
		lru_insert(z->ze->cache, key, buf, len);
	}
	pthread_mutex_unlock(&z->keep.run);
	return rc;
}

/*
 * Copies n bytes at off within span i into dst.  The cache holds a span
 * whole (key bit 0 set) or its first chunks (clear): a miss inflates up
 * to the end of the chunk holding the read's last byte (a random read
 * pays for the bytes before it, not for the rest of the span), or the
 * whole span when a prefix of it was cached already (reads going through
 * it in order: each span is inflated at most twice).  Decoders (xz,
 * zstd, bzip2) inflate whole spans: zseq.c keeps them at span starts.
 */
static int span_copy(struct zsrc *z, uint64_t i, size_t off, void *dst, size_t n)
{
	uint64_t key = z->id << 33 | i << 1;
	size_t len = (size_t)(span_end(z->pts, z->npts, i, z->usize) - z->pts[i].out);
	size_t want;
	unsigned char *buf, probe;
	int rc, part;

	if (z->pts[i].flags & ZP_BAD) {
		sfs_warn("%s: uncompressed bytes %llu-%llu are in a damaged "
			 "member: EIO", source_name(z->in),
			 (unsigned long long)z->pts[i].out,
			 (unsigned long long)(z->pts[i].out + len));
		return -EIO;
	}
	if (lru_copy_out(z->ze->cache, key | 1, off, dst, n) == 1 ||
	    (part = lru_copy_out(z->ze->cache, key, off, dst, n)) == 1)
		return 0;
	if (source_nowait_mode())
		return -EAGAIN;
	if (z->pts[i].flags & ZP_SEQ)
		return seq_copy(z, i, len, dst, off, n);
	want = (off + n + ZCHUNK - 1) / ZCHUNK * ZCHUNK;
	if (part == -EINVAL || want > len || !z->codec->span ||
	    (i && lru_copy_out(z->ze->cache, (key - 2) | 1, 0, &probe, 0) == 1))
		want = len;
	if ((rc = inflate_span(z, i, want, &buf)) < 0)
		return rc;
	memcpy(dst, buf + off, n);
	lru_insert(z->ze->cache, want == len ? key | 1 : key, buf, want);
	return 0;
}

/* ---- reads while the pass runs ---- */

/* The span holding off among those ended (off < frontier); mu held. */
static uint64_t run_span(const struct zrun *r, uint64_t off)
{
	uint64_t lo = 0, hi = r->nspans;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (r->starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void *pass_main(void *arg);

/* Starts the pass on the first demand; mu held.  A thread that cannot be
 * made publishes the end at once, with the error. */
static void run_start(struct zsrc *z)
{
	struct zrun *r = z->run;
	int rc;

	if (r->started)
		return;
	r->started = 1;
	if ((rc = pthread_create(&r->tid, NULL, pass_main, z)) != 0) {
		r->started = 0;
		sfs_err("%s: cannot start its first pass: %s", source_name(z->in),
			strerror(rc));
		z->pass_rc = -rc;
		r->done = 1;
		atomic_store_explicit(&z->growing, 0, memory_order_release);
	}
}

/* A reader asks for the bytes before `end`: the pass may go on to there
 * (and `ahead` past it); mu held. */
static void run_ask(struct zsrc *z, uint64_t end)
{
	struct zrun *r = z->run;

	run_start(z);
	if (end > r->asked) {
		r->asked = end;
		pthread_cond_broadcast(&r->cv);
	}
}

/*
 * The bytes [off, off + n) the pass has inflated, from the cache, waiting
 * for the pass to reach them; *done: how many were copied.  Stops short
 * (0) when the pass has ended meanwhile (the table reads the rest) or a
 * span was evicted (after waiting for the end, for the same reason);
 * -EAGAIN in no-wait mode where it would wait.  Only for a source a
 * reader streams (source_extent called: that reader learns at the end
 * whether the bytes were damaged); other reads wait for the end, so they
 * get bytes the pass has checked, as before the pass ran in a thread.
 */
static int run_read(struct zsrc *z, void *buf, size_t n, uint64_t off,
		    size_t *done)
{
	struct zrun *r = z->run;
	uint64_t j, lo, hi, at;
	size_t k;
	int hit = 1;

	pthread_mutex_lock(&r->mu);
	if (!r->streamed)	/* verified bytes only: after the pass */
		off = UINT64_MAX - n;
	if (!r->done && r->frontier < off + n && source_nowait_mode()) {
		pthread_mutex_unlock(&r->mu);
		return -EAGAIN;
	}
	run_ask(z, off + n);
	while (!r->done && r->frontier < off + n)
		pthread_cond_wait(&r->cv, &r->mu);
	while (!r->done && *done < n && hit) {
		at = off + *done;
		j = run_span(r, at);
		lo = r->starts[j];
		hi = j + 1 < r->nspans ? r->starts[j + 1] : r->frontier;
		r->touched[j] = 1;
		pthread_mutex_unlock(&r->mu);
		k = hi - at < n - *done ? (size_t)(hi - at) : n - *done;
		hit = lru_copy_out(z->ze->cache, z->id << 33 | j << 1 | 1,
				   (size_t)(at - lo), (char *)buf + *done, k) == 1;
		if (hit)
			*done += k;
		pthread_mutex_lock(&r->mu);
	}
	if (!hit)	/* evicted unread: the table will have it */
		run_ask(z, UINT64_MAX);
	while (!r->done && *done < n)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

static ssize_t z_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct zsrc *z = s->priv;
	size_t done = 0, k;
	uint64_t i, end;
	int rc;

	if (atomic_load_explicit(&z->growing, memory_order_acquire) &&
	    ((rc = run_read(z, buf, n, off, &done)) < 0 || done == n))
		return rc < 0 ? rc : (ssize_t)n;
	if (z->pass_rc)
		return z->pass_rc;
	if (off + done >= z->usize)
		return (ssize_t)done;
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

static int z_extent(struct source *s, uint64_t want, uint64_t *have)
{
	struct zsrc *z = s->priv;
	struct zrun *r = z->run;
	int rc = 0;

	if (atomic_load_explicit(&z->growing, memory_order_acquire)) {
		pthread_mutex_lock(&r->mu);
		if (want != UINT64_MAX)
			r->streamed = 1;
		run_ask(z, want);
		while (!r->done && r->frontier < want)
			pthread_cond_wait(&r->cv, &r->mu);
		*have = r->frontier;
		rc = r->done;
		pthread_mutex_unlock(&r->mu);
		if (!rc)
			return 0;
	}
	*have = z->usize;
	return z->pass_rc ? z->pass_rc : z->extent_rc ? z->extent_rc : 1;
}

static int z_changed(struct source *s)
{
	struct zsrc *z = s->priv;

	return source_check(z->in) < 0;
}

/* Cancels the pass (it ends at its next span) and joins it. */
static void run_stop(struct zrun *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->cancel = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->started)
		pthread_join(r->tid, NULL);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->starts);
	free(r->touched);
	free(r);
}

static void zsrc_free(struct zsrc *z)
{
	if (!z)
		return;
	run_stop(z->run);
	zkeep_fini(&z->keep, z->codec);
	if (z->blob)
		unbind_blob(z);
	source_close(z->in);
	free(z);
}

static void z_close(struct source *s)
{
	zsrc_free(s->priv);
}

/* The stamp a compressed source is known by before its size: the inner
 * one, whose ETag records the codec and the compressed size too. */
static void stamp_of(const struct zsrc *z, struct source_stamp *out)
{
	const struct source_stamp *in = source_stamp(z->in);

	*out = *in;
	snprintf(out->etag, sizeof(out->etag), "%s:%llu:%.96s",
		 z->codec->name, (unsigned long long)in->size, in->etag);
}

static void z_identity(const struct source *s, struct source_stamp *out)
{
	stamp_of(s->priv, out);
}

/* ---- the backend row: per-mount state only (zsource_wrap opens) ---- */

static int z_claims(const char *uri)
{
	return 0;	/* chosen by content, in zsource_wrap */
}

/* The span cache's release hook: evicted spans go back to the pool. */
static void pool_release(void *arg, void *data, size_t len)
{
	zpool_put(arg, data, len);
}

/* What the cache charges a span buffer: the memory it holds. */
static size_t pool_held(void *arg, size_t len)
{
	return zpool_held(arg, len);
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
	ze->cache_bytes = cache ? cache : ZSOURCE_CACHE_DEFAULT;
	if (!(ze->pool = zpool_new(zspan_buf(ze->span), POOL_SPARE)) ||
	    !(ze->cache = lru_new(ze->cache_bytes))) {
		zpool_free(ze->pool);
		free(ze);
		return -ENOMEM;
	}
	lru_set_release(ze->cache, pool_release, pool_held, ze->pool);
	env->z = ze;
	return 0;
}

static void z_env_fini(struct source_env *env)
{
	struct zenv *ze = env->z;

	if (!ze)
		return;
	lru_free(ze->cache);	/* gives its spans to the pool: first */
	zpool_free(ze->pool);
	free(ze);
	env->z = NULL;
}

const struct source_backend source_z_backend = {
	.name = "decompressed",
	.claims = z_claims,
	.pread = z_pread,
	.changed = z_changed,
	.close = z_close,
	.extent = z_extent,
	.identity = z_identity,
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

void source_env_zdecoded(struct source_env *env, zsource_decoded_fn fn,
			 void *arg)
{
	struct zenv *ze = env->z;

	ze->decoded = fn;
	ze->decoded_arg = arg;
}

void source_env_zbuffers(struct source_env *env, unsigned long *made,
			 unsigned *spare)
{
	struct zenv *ze = env->z;

	zpool_usage(ze->pool, made, spare);
}

int source_is_decompressed(const struct source *s)
{
	return s->be == &source_z_backend;
}

/* 1 if the name ends in a compressed format's suffix. */
static int named_compressed(const char *name)
{
	size_t nl = strlen(name), i, sl;

	for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		sl = strlen(suffixes[i]);
		if (nl > sl && !strcmp(name + nl - sl, suffixes[i]))
			return 1;
	}
	return 0;
}

/* The codec whose magic the source starts with, or NULL. */
static const struct zcodec *sniff(struct source *in)
{
	unsigned char head[SNIFF];
	ssize_t got = source_pread(in, head, sizeof(head), 0);

	return got > 0 ? zcodec_sniff(head, (size_t)got) : NULL;
}

/* The codec a checked blob was made by. */
static const struct zcodec *codec_of(const uint8_t *blob)
{
	struct zblob_hdr h;

	memcpy(&h, blob, sizeof(h));
	return zcodec_by_id(h.codec);
}

/*
 * Which codec, and its table: a local file is sniffed first (a pread of
 * what the page cache likely holds); a remote one, which is only
 * considered when its name says it is compressed, asks the store first,
 * so a remount reads no data.  1 with z->codec (and maybe a table), 0
 * when the source is not compressed.
 */
static int choose(struct zsrc *z)
{
	int remote = source_is_remote(z->in);

	if (remote && !named_compressed(source_name(z->in)))
		return 0;
	if (remote && load_stored(z) == 0) {
		z->codec = codec_of(z->blob);
		return 1;
	}
	if (!(z->codec = sniff(z->in)))
		return 0;
	if (!remote)
		load_stored(z);
	return 1;
}

/* After the table is bound: the warning about long blocks (zseq.c). */
static void bound(struct zsrc *z)
{
	struct zseq_view v;

	bind_blob(z);
	v = view_of(z);
	zseq_warn_far(&v);
}

/* Span i of the pass has ended (struct zspans): into the cache, readers
 * woken; waits while the pass is `ahead` past what was asked.  The next
 * span is wanted only while a reader streams and has not asked for the
 * end (then nobody reads the spans in order: copying them is waste). */
static int pass_keep(void *arg, uint64_t i, void *buf, size_t len)
{
	struct zsrc *z = arg;
	struct zrun *r = z->run;
	uint64_t c;
	void *q;
	int rc = 0;

	if (buf)
		lru_insert(z->ze->cache, z->id << 33 | i << 1 | 1, buf, len);
	pthread_mutex_lock(&r->mu);
	if (r->nspans == r->cap) {
		c = r->cap ? 2 * r->cap : 1024;
		if ((q = realloc(r->starts, c * sizeof(*r->starts))))
			r->starts = q;
		if (q && (q = realloc(r->touched, c)))
			r->touched = q;
		if (q)
			r->cap = c;
		else
			rc = -ENOMEM;
	}
	if (rc == 0 && i != r->nspans)
		rc = -EPROTO;	/* the pass ends its spans in order */
	if (rc == 0) {
		r->starts[r->nspans] = r->frontier;
		r->touched[r->nspans++] = 0;
		r->frontier += len;
	}
	pthread_cond_broadcast(&r->cv);
	while (rc == 0 && !r->cancel && r->frontier > r->asked &&
	       r->frontier - r->asked > r->ahead)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->cancel)
		rc = -ECANCELED;
	else if (rc == 0)
		rc = r->streamed && r->asked != UINT64_MAX;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* The spans read while the pass ran that it found damaged: -EIO (said),
 * else 0; mu held, the table bound. */
static int damage_read(struct zsrc *z)
{
	const struct zrun *r = z->run;
	uint64_t j;

	for (j = 0; j < r->nspans && j < z->npts; j++)
		if (r->touched[j] && (z->pts[j].flags & ZP_BAD)) {
			sfs_err("%s: uncompressed bytes from %llu, read while its "
				"first pass ran, are in a damaged member: EIO",
				source_name(z->in), (unsigned long long)z->pts[j].out);
			return -EIO;
		}
	return 0;
}

/* The pass's thread: the table, saved and bound, then the end published. */
static void *pass_main(void *arg)
{
	struct zsrc *z = arg;
	struct zrun *r = z->run;
	struct zspans out = { pass_keep, span_buf, z };
	const uint8_t *blob = NULL;
	size_t len = 0;
	int rc = ztable_build(z->in, z->codec, z->ze->span, z->want, &out,
			      &blob, &len);

	if (rc == 0) {
		z->blob = blob;
		z->blob_len = len;
		z->own_map = 1;
		save_table(z);
		bound(z);
	}
	pthread_mutex_lock(&r->mu);
	z->pass_rc = rc;
	if (rc == 0)
		z->extent_rc = damage_read(z);
	z->outer->stamp.size = z->usize;
	r->done = 1;
	atomic_store_explicit(&z->growing, 0, memory_order_release);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* The pass, made ready to run on the first demand (run_start). */
static int run_init(struct zsrc *z)
{
	struct zrun *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->ahead = z->ze->cache_bytes / 4;
	z->run = r;
	atomic_store(&z->growing, 1);
	return 0;
}

/*
 * A raw deflate stream's stored table is taken only if this row made it
 * and it gives no more than the declared size (the name and stamp keyed
 * it already: this guards against a table saved for other bytes).
 */
static int raw_choose(struct zsrc *z)
{
	struct zblob_hdr h;

	z->codec = &zcodec_deflate;
	if (load_stored(z) < 0)
		return 1;
	memcpy(&h, z->blob, sizeof(h));
	if (codec_of(z->blob) != &zcodec_deflate || h.usize > z->want->usize) {
		sfs_warn("%s: its saved access points are not those of a %llu-byte "
			 "deflate stream: reading it through again",
			 source_name(z->in), (unsigned long long)z->want->usize);
		unbind_blob(z);
	}
	return 1;
}

/* zsource_wrap's work; want: a raw deflate stream's (no sniffing). */
static int wrap(struct source *in, const struct zexpect *want,
		struct source **out)
{
	struct zsrc *z = NULL;
	struct source *s = NULL;
	int rc = -ENOMEM;

	*out = in;
	if (!in->env || !in->env->z)
		return want ? -EINVAL : 0;
	if (!(z = calloc(1, sizeof(*z)))) {
		source_close(in);
		goto fail;
	}
	z->in = in;
	z->ze = in->env->z;
	if (want) {
		z->want_buf = *want;
		z->want = &z->want_buf;
	}
	if (!(want ? raw_choose(z) : choose(z))) {
		free(z);
		return 0;
	}
	zkeep_init(&z->keep, &z->ze->nseq);
	if (!(s = calloc(1, sizeof(*s))) || !(s->name = strdup(in->name)))
		goto fail;
	z->id = atomic_fetch_add(&z->ze->next_id, 1);
	z->outer = s;
	if (z->blob)
		bound(z);
	else if (z->no_pass) {
		rc = -EPERM;	/* the store said why (-o index_only) */
		goto fail;
	} else if ((rc = run_init(z)) < 0)
		goto fail;
	s->be = &source_z_backend;
	s->env = in->env;
	s->priv = z;
	stamp_of(z, &s->stamp);
	s->stamp.size = z->usize;	/* 0 while growing: source_stamp waits */
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

int zsource_wrap(struct source *in, struct source **out)
{
	return wrap(in, NULL, out);
}

int zsource_wrap_deflate(struct source *in, uint64_t usize, uint32_t crc32,
			 struct source **out)
{
	struct zexpect want = { .usize = usize, .crc32 = crc32 };
	int rc = wrap(in, &want, out);

	if (rc == -EINVAL) {	/* no decompressing state in its env */
		source_close(in);
		*out = NULL;
	}
	return rc;
}
