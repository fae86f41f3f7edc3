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
 * Growing: the first pass runs in a thread while readers take its spans
 * (zrun.c: when it starts, what readers wait for, how it ends).
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
 * stamp, a bad disk) gives EIO too, and is remembered (z->failed: with
 * the rest of its xz block or zstd frame, reached only through it), so
 * later reads of it fail at once instead of decoding it again.  When the
 * compressed bytes came over a network (source_refetches), where a byte
 * may change on its way, a span that fails is first decoded once more
 * from its bytes read again past every cache (source_refetch: counted in
 * checksum_failures and checksum_refetches, as a tar member's -o
 * checksums mismatch is); only a second failure is EIO, and those copies
 * leave the caches (source_forget).  Bombs:
 * the size is what the pass finds; a span longer than ZSPAN_HARD (no
 * restart point for that long: only crafted streams) fails the open with
 * EFBIG, so a read never holds more than ZSPAN_HARD, and the cache its
 * own bound.
 *
 * Threads: open and close as any source; reads from any thread share the
 * read-only mapped table and the LRU (locked inside lru.c).  While the
 * pass runs, its thread and the readers share struct zrun, under its
 * mutex; the table, the size and the pass's result are written by the
 * pass thread before it clears `growing` (release) and read after a read
 * of it (acquire) or under that mutex (zrun.c).  Close cancels a running
 * pass and waits for its end.  Per mount: struct zenv (the cache, the store, the engine),
 * set up once.
 *
 * The refusal of a compression no codec reads (lz4, lzip, .Z, .lzma,
 * lzop: zsource_refuse_other) is here too, by magic like the codecs'.
 *
 * Not for: a codec's format (zgzip.c, zxz.c, zzstd.c, zbz2.c), the pass
 * and the table's checks (ztable.c), kept decoders (zseq.c), writing
 * index files (the store).
 */
#include "io/backend.h"
#include "io/codecs/zseq.h"
#include "io/codecs/zsource.h"
#include "io/codecs/zsource_int.h"
#include "io/codecs/ztable.h"

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
#include "io/codecs/zpool.h"
#include "log.h"
#include "search.h"

#define SPAN_READ    (256u << 10)   /* a span read's reads */
#define SNIFF        16
#define POOL_SPARE   4              /* span buffers kept unused, a mount */

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
	z->failed = calloc(z->npts ? z->npts : 1, sizeof(*z->failed));
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
static void zsrc_save_table(struct zsrc *z)
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
	return SFS_PARTITION_POINT(uint64_t, 1, z->npts, i, z->pts[i].out <= off) - 1;
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
static void *zsrc_span_buf(void *arg, size_t len)
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
		.get = zsrc_span_buf, .arg = z,
	};

	return v;
}

/* The codec's span function, or zseq's decoder, reading the source past
 * every cache when `fresh`: 0 or -errno (*failed: the span the decoder
 * was in, i or one of its block before it; *read_rc: a read of the
 * source that failed, its -errno, else 0). */
static int decode_span(struct zsrc *z, uint64_t i, int fresh,
		       const unsigned char *win, unsigned char *buf, size_t len,
		       uint64_t *failed, int *read_rc)
{
	struct zseq_view v;
	struct zreader in;
	int rc;

	*failed = i;
	*read_rc = 0;
	if (!z->codec->span) {
		v = view_of(z);
		v.fresh = fresh;
		return zseq_span(&z->keep, &v, i, buf, len, failed, read_rc);
	}
	if (zreader_init(&in, z->in, SPAN_READ) < 0)
		return -ENOMEM;
	in.fresh = fresh;
	rc = z->codec->span(&in, &z->pts[i], win, buf, len, z->ze->eng);
	*read_rc = in.read_rc;
	free(in.buf);
	return rc;
}

/* Decodes the first len bytes of span i into buf (decode_span) and checks
 * them: NULL, or why they are not those the pass saw (*rc: the decoder's
 * -errno, 0 when it was the CRC-32s). */
static const char *decode_checked(struct zsrc *z, uint64_t i, int fresh,
				  const unsigned char *win, unsigned char *buf,
				  size_t len, uint64_t *failed, int *rc, int *read_rc)
{
	if ((*rc = decode_span(z, i, fresh, win, buf, len, failed, read_rc)) < 0)
		return "the stream does not inflate there";
	if (!chunks_match(z, &z->pts[i], buf, len))
		return "its bytes do not match the CRC-32s of the first pass";
	return NULL;
}

/* Drops the cached copies of the compressed bytes span i was decoded
 * from, from the restart point before span `failed` on (a decoder kept
 * across a block read them all). */
static void forget_span(struct zsrc *z, uint64_t failed, uint64_t i)
{
	uint64_t r = failed, from, to;

	while (r && (z->pts[r].flags & ZP_SEQ))
		r--;
	from = z->pts[r].in ? z->pts[r].in - 1 : 0;	/* its first bits */
	to = i + 1 < z->npts ? z->pts[i + 1].in + 1 : source_stamp(z->in)->size;
	source_forget(z->in, from, to - from);
}

/*
 * Span i failed its check (why) as its compressed bytes came over a
 * network, where a byte may change on its way: counted, said, and decoded
 * once more from bytes read again past every cache (source_refetch, which
 * replaces the cached copies), as a tar member that fails its checksum is
 * (tarindex_sums.c).  NULL when they are right now; else why, and those
 * copies leave the caches (source_forget: the next fetch is anew).
 */
static const char *decode_again(struct zsrc *z, uint64_t i,
				const unsigned char *win, unsigned char *buf,
				size_t len, const char *why, uint64_t *failed,
				int *rc, int *read_rc)
{
	const struct zpoint *pt = &z->pts[i];

	source_count_checksum(z->in, 0);
	sfs_warn("%s: span at uncompressed offset %llu (compressed %llu): %s: "
		 "read again past every cache", source_name(z->in),
		 (unsigned long long)pt->out, (unsigned long long)pt->in, why);
	why = decode_checked(z, i, 1, win, buf, len, failed, rc, read_rc);
	if (*read_rc)
		return why;	/* the refetch failed: said where it did */
	source_count_checksum(z->in, 1);
	if (!why)
		return NULL;	/* damaged on its way only */
	source_count_checksum(z->in, 0);
	forget_span(z, *failed, i);
	return why;
}

/* A read of damaged span i (len bytes): what is lost, where, what reads. */
static void say_damaged(const struct zsrc *z, uint64_t i, size_t len)
{
	uint64_t at = z->pts[i].out;

	sfs_warn("%s: its uncompressed bytes %llu-%llu (%llu MiB in, %llu%%) "
		 "are damaged (%s): reads of them give EIO, the bytes outside "
		 "them read", source_name(z->in), (unsigned long long)at,
		 (unsigned long long)(at + len), (unsigned long long)(at >> 20),
		 (unsigned long long)(z->usize ? at * 100 / z->usize : 0),
		 z->pts[i].flags & ZP_BAD ? "found by the first read-through" :
					    "found by an earlier read");
}

/*
 * A read found span j damaged (the file changed under its stamp, a bad
 * disk): later reads of it fail at once instead of decoding it again (a
 * span inside a 24 MiB xz block decodes from the block's start: a second
 * each).  A decoder kept across a block (xz, zstd) reaches the spans
 * after j in the same block (ZP_SEQ) only through j: they fail too.  Not
 * for a remote source's decoding failure (`read`): its read may have
 * failed, not the bytes (its CRC-32 mismatches are remembered).
 */
static int remember_failed(struct zsrc *z, uint64_t j, int read)
{
	if (!z->failed || (read && source_is_remote(z->in)))
		return 0;
	do
		atomic_store_explicit(&z->failed[j++], 1, memory_order_relaxed);
	while (!z->codec->span && j < z->npts && (z->pts[j].flags & ZP_SEQ));
	return 1;
}

/* 1 if reads of span i give EIO at once (said): the pass or a read found
 * it damaged. */
static int is_damaged(const struct zsrc *z, uint64_t i)
{
	return (z->pts[i].flags & ZP_BAD) ||
	       (z->failed && atomic_load_explicit(&z->failed[i], memory_order_relaxed));
}

static int known_damaged(const struct zsrc *z, uint64_t i, size_t len)
{
	if (!is_damaged(z, i))
		return 0;
	say_damaged(z, i, len);
	return 1;
}

/* Inflates the first len bytes of span i (whole chunks, or the whole
 * span) into a buffer of the pool, checked: 0 or -errno (said). */
static int inflate_span(struct zsrc *z, uint64_t i, size_t len,
			unsigned char **out)
{
	const struct zpoint *pt = &z->pts[i];
	unsigned char *buf = zpool_get(z->ze->pool, len ? len : 1);
	unsigned char *win = malloc(ZWINDOW);
	const char *why = NULL;
	uint64_t failed = i;
	int kept, again = 0, rd = 0, rc = 0;

	if (!buf || !win) {
		rc = -ENOMEM;
		goto out;
	}
	if (window_of(z, pt, win) < 0)
		why = "its stored window does not inflate";
	else if ((why = decode_checked(z, i, 0, win, buf, len, &failed, &rc, &rd)) &&
		 !rd && rc != -ENOMEM && source_refetches(z->in)) {
		again = 1;
		why = decode_again(z, i, win, buf, len, why, &failed, &rc, &rd);
	}
	if (why) {
		(void)source_check(z->in);	/* a replaced file says so too */
		/* not a failure to get memory: the next read may have it */
		kept = rc != -ENOMEM && remember_failed(z, failed, rc < 0);
		rc = -EIO;
		(again && !rd ? sfs_err : sfs_warn)("%s: span at uncompressed "
			"offset %llu (compressed %llu): %s%s: EIO%s",
			source_name(z->in), (unsigned long long)pt->out,
			(unsigned long long)pt->in, why, again && !rd ? ", read again too" : "",
			kept ? " (and at once for later reads of it)" : "");
		goto out;
	}
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	zpool_put(z->ze->pool, buf, len ? len : 1);
	free(win);
	return rc;
}

/* span_copy of a ZP_SEQ span (want bytes of its len: the whole span, or
 * the chunks up to the read's end when the read looks random, since the
 * rest would be decoded for nobody and the decoder then is not at a span
 * start to keep): one reader of the source at a time, so that readers of
 * the same or the next spans (the kernel's read-ahead) find them cached,
 * or the decoder where the last one left it, instead of decoding again
 * from the block's start. */
static int seq_copy(struct zsrc *z, uint64_t i, size_t len, size_t want,
		    void *dst, size_t off, size_t n)
{
	uint64_t key = z->id << 33 | i << 1;
	unsigned char *buf;
	int rc = 0;

	pthread_mutex_lock(&z->keep.run);
	if (known_damaged(z, i, len))	/* by the reader before us */
		rc = -EIO;
	else if (lru_copy_out(z->ze->cache, key | 1, off, dst, n) != 1 &&
		 (rc = inflate_span(z, i, want, &buf)) == 0) {
		memcpy(dst, buf + off, n);
		lru_insert(z->ze->cache, want == len ? key | 1 : key, buf, want);
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
 * zstd, bzip2) inflate whole spans (zseq.c keeps them at span starts),
 * but inside a long zstd frame (ZP_SEQ, codec->seq_prefix) the rule above
 * holds: the whole span when the reads go in order.
 */
static int span_copy(struct zsrc *z, uint64_t i, size_t off, void *dst, size_t n)
{
	uint64_t key = z->id << 33 | i << 1;
	size_t len = (size_t)(span_end(z->pts, z->npts, i, z->usize) - z->pts[i].out);
	size_t want;
	unsigned char *buf, probe;
	int rc, part;

	if (known_damaged(z, i, len))
		return -EIO;
	if (lru_copy_out(z->ze->cache, key | 1, off, dst, n) == 1 ||
	    (part = lru_copy_out(z->ze->cache, key, off, dst, n)) == 1)
		return 0;
	if (source_nowait_mode())
		return -EAGAIN;
	want = (off + n + ZCHUNK - 1) / ZCHUNK * ZCHUNK;
	if (part == -EINVAL || want > len ||
	    (!z->codec->span &&
	     !(z->codec->seq_prefix && (z->pts[i].flags & ZP_SEQ))) ||
	    (i && lru_copy_out(z->ze->cache, (key - 2) | 1, 0, &probe, 0) == 1))
		want = len;
	if (z->pts[i].flags & ZP_SEQ)
		return seq_copy(z, i, len, want, dst, off, n);
	if ((rc = inflate_span(z, i, want, &buf)) < 0)
		return rc;
	memcpy(dst, buf + off, n);
	lru_insert(z->ze->cache, want == len ? key | 1 : key, buf, want);
	return 0;
}

static ssize_t z_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct zsrc *z = s->priv;
	size_t done = 0, k;
	uint64_t i, end;
	int rc;

	if (atomic_load_explicit(&z->growing, memory_order_acquire) &&
	    ((rc = zrun_read(z, buf, n, off, &done)) < 0 || done == n))
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
		if (rc < 0) {
			atomic_store_explicit(&z->refused, rc == -EIO &&
					      is_damaged(z, i), memory_order_relaxed);
			return rc;
		}
		done += k;
	}
	return (ssize_t)done;
}

static int z_extent(struct source *s, uint64_t want, uint64_t *have)
{
	struct zsrc *z = s->priv;

	if (atomic_load_explicit(&z->growing, memory_order_acquire) &&
	    !zrun_extent(z, want, have))
		return 0;
	*have = z->usize;
	return z->pass_rc ? z->pass_rc : z->extent_rc ? z->extent_rc : 1;
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
	zrun_stop(z->run);
	zdecoder_cache_fini(&z->keep, z->codec);
	free(z->failed);
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

/* The inflater asked for: ISA-L's unless SAMPLEFS_INFLATE=zlib. */
static enum zengine engine_asked(void)
{
	const char *e = getenv("SAMPLEFS_INFLATE");

	return e && !strcmp(e, "zlib") ? ZENGINE_ZLIB : ZENGINE_FAST;
}

static int z_env_init(struct source_env *env)
{
	struct zenv *ze = calloc(1, sizeof(*ze));

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
	ze->eng = engine_asked();
	ze->cache_bytes = env->cfg.cache_bytes ? env->cfg.cache_bytes :
			  SOURCE_CACHE_DEFAULT;
	if (!(ze->pool = zpool_new(zspan_buf(ze->span), POOL_SPARE)) ||
	    !(ze->cache = lru_new_in(env->mem, "spans", ze->cache_bytes))) {
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

/* 1 if h (n bytes) starts like an lzma-alone (.lzma) file: no magic, so
 * its 13-byte header: properties, a dictionary size of 2^n or 2^n + 2^(n-1)
 * bytes (as xz-utils and the LZMA SDK write), the size or -1 (streamed). */
int zsource_lzma_alone(const unsigned char *h, size_t n)
{
	uint32_t d;
	uint64_t u = 0;
	int i;

	if (n < 13 || h[0] >= 9 * 5 * 5)
		return 0;
	d = (uint32_t)h[1] | (uint32_t)h[2] << 8 | (uint32_t)h[3] << 16 |
	    (uint32_t)h[4] << 24;
	for (i = 12; i >= 5; i--)
		u = u << 8 | h[i];
	if (u != UINT64_MAX && u >> 48)
		return 0;
	for (i = 12; i < 31; i++)
		if (d == 1u << i || d == (1u << i) + (1u << (i - 1)))
			return 1;
	return 0;
}

static const char *other_codec(struct source *s, const char **unpack)
{
	static const struct {
		const char *name, *unpack;
		size_t len;
		const char *magic;
	} other[] = {
		{ "compress (.Z)", "gzip -dc", 2, "\x1f\x9d" },
		{ "lz4", "lz4 -dc", 4, "\x04\x22\x4d\x18" },
		{ "lz4 (its legacy format)", "lz4 -dc", 4, "\x02\x21\x4c\x18" },
		{ "lzip", "lzip -dc", 4, "LZIP" },
		{ "lzop", "lzop -dc", 9, "\x89LZO\0\r\n\x1a\n" },
	};
	unsigned char h[SNIFF];
	ssize_t got = source_pread(s, h, sizeof(h), 0);
	size_t i;

	for (i = 0; got > 0 && i < sizeof(other) / sizeof(other[0]); i++)
		if ((size_t)got >= other[i].len &&
		    !memcmp(h, other[i].magic, other[i].len)) {
			*unpack = other[i].unpack;
			return other[i].name;
		}
	if (got > 0 && zsource_lzma_alone(h, (size_t)got)) {
		*unpack = "xz -dc";
		return "lzma (.lzma, lzma-alone)";
	}
	return NULL;
}

int zsource_refuse_other(struct source *s, const char *what)
{
	const char *unpack, *codec = other_codec(s, &unpack);

	if (!codec)
		return 0;
	sfs_err("%s: compressed with %s, which samplefs does not decompress (it "
		"reads tars compressed with gzip, xz, zstd or bzip2): recompress it "
		"(`%s %s | zstd -T0 -o x.tar.zst`) or decompress it first (`%s %s "
		">x.tar`)", what, codec, unpack, what, unpack, what);
	return 1;
}

int zsource_damage(struct source *s, uint64_t *from)
{
	const struct zsrc *z;
	uint64_t i;

	if (!source_is_decompressed(s))
		return 0;
	z = s->priv;
	if (atomic_load_explicit(&z->growing, memory_order_acquire) || z->pass_rc ||
	    !atomic_load_explicit(&z->refused, memory_order_relaxed))
		return 0;
	for (i = 0; i < z->npts; i++)
		if ((z->pts[i].flags & ZP_BAD) ||
		    (z->failed && atomic_load_explicit(&z->failed[i],
						       memory_order_relaxed))) {
			*from = z->pts[i].out;
			return 1;
		}
	return 0;
}

/* 1 if the name ends in a compressed format's suffix (the codecs' rows). */
static int named_compressed(const char *name)
{
	return zcodec_by_suffix(name) != NULL;
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
static void zsrc_bound(struct zsrc *z)
{
	struct zseq_view v;

	bind_blob(z);
	v = view_of(z);
	zseq_warn_far(&v);
}

/* The first pass made the table (zrun.c, through zrun_hooks). */
static void table_made(struct zsrc *z)
{
	zsrc_save_table(z);
	zsrc_bound(z);
}

static const struct zrun_hooks run_hooks = {
	.span_buf = zsrc_span_buf,
	.table_made = table_made,
};

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
	zdecoder_cache_init(&z->keep, &z->ze->nseq);
	if (!(s = calloc(1, sizeof(*s))) || !(s->name = strdup(in->name)))
		goto fail;
	z->id = atomic_fetch_add(&z->ze->next_id, 1);
	z->outer = s;
	if (z->blob)
		zsrc_bound(z);
	else if (z->no_pass) {
		rc = -EPERM;	/* the store said why (-o index_only) */
		goto fail;
	} else if ((rc = zrun_init(z, &run_hooks)) < 0)
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

/* The whole-stream read buffer: at most this, at most the stream. */
#define WHOLE_IN ((uint64_t)64 << 10)

int zsource_inflate_whole(struct source *src, uint64_t off, uint64_t csize,
			  uint64_t usize, uint8_t **out, const char **why)
{
	struct zenv *ze = src->env ? src->env->z : NULL;
	enum zengine eng = ze ? ze->eng : engine_asked();
	struct zreader in;
	int rc;

	*out = NULL;
	*why = "out of memory";
	if (off > UINT64_MAX - csize)
		return -EINVAL;
	if ((rc = zreader_init(&in, src, (size_t)(csize < WHOLE_IN ? csize + 1 : WHOLE_IN))) < 0)
		return rc;
	in.boff = off;
	in.size = off + csize;
	rc = zdeflate_whole(&in, usize, eng, out, why);
	free(in.buf);
	return rc;
}
