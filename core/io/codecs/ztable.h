/*
 * ztable.h - the access-point table of a compressed source, between
 * zsource.c (which reads through it) and ztable.c (which makes and checks
 * it).  Private to core/io.
 *
 * The blob: this header, then the windows and each span's CRC-32s (one
 * uint32 per ZCHUNK of output) in the order the pass met them, then the
 * points (struct zpoint, zcodec.h), all little-endian, self-contained so
 * the store can save it as it is and map it back.
 */
#ifndef SFS_IO_ZTABLE_H
#define SFS_IO_ZTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "io/codecs/zcodec.h"

/* The longest span: a stream with no restart point in this much output
 * is refused (EFBIG), so a read never holds more. */
#define ZSPAN_HARD   (128ull << 20)   /* span= at most 64 MiB, + 64 MiB */

#define ZBLOB_MAGIC   "SFSZIDX\1"
#define ZBLOB_VERSION 4   /* 4: xz, zstd, bzip2 spans of one block (zrecorder_block) */
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

/* The codec whose magic the first n bytes are, or NULL. */
const struct zcodec *zcodec_sniff(const unsigned char *head, size_t n);
/* The codec a blob names, or NULL. */
const struct zcodec *zcodec_by_id(uint8_t id);
/* The codec whose suffixes name ends in (its row's), or NULL. */
const struct zcodec *zcodec_by_suffix(const char *name);

/* A reader over src, cap bytes at a time: 0 or -ENOMEM (free in->buf). */
int zreader_init(struct zreader *in, struct source *src, size_t cap);

/*
 * Where the pass's output also goes, span by span: keep(arg, i, buf, len)
 * as soon as span i ends (buf from get, the callee owns it; NULL when
 * it could not be kept, ENOMEM: the span's length still says where the
 * next one starts), so that a reader going through the file in order
 * while the pass runs (a tar index build: zsource.c) takes its bytes
 * instead of inflating them again.  The callee may wait there (the pass
 * then waits: its memory stays bounded).  keep returns 1 for the next
 * span's bytes, 0 for its length only (nobody is reading in order: no
 * copy), or -errno, which ends the pass (the source was closed).  The
 * first span's bytes are always given.  get(arg, len) gives the buffer a
 * kept span is inflated into (zrecorder_outbuf: no copy), of at least len
 * bytes (zspan_buf: a buffer of zsource's pool, zpool.h); one a span
 * outgrows is grown by realloc, and keep gets a buffer holding what the
 * pool's rule says one of its length holds (cut to it when not).
 */
struct zspans {
	int (*keep)(void *arg, uint64_t i, void *buf, size_t len);
	void *(*get)(void *arg, size_t len);
	void *arg;
};

/* The size of a span buffer for spans of `span` bytes: the span ends at
 * the first restart point past `span` bytes, mostly less than a deflate
 * block later (longer ones get buffers of their own); at most 1.25 span,
 * so that a whole span is always more than 3/4 of a buffer (zpool.h:
 * pooled). */
static inline size_t zspan_buf(uint64_t span)
{
	return (size_t)(span + (span / 4 < ZCHUNK ? span / 4 : ZCHUNK));
}

/*
 * The pass: reads the whole of src with codec c, a point every `span`
 * bytes of output, and maps the blob it made (*blob, *len: munmap when
 * done); want: what a raw deflate stream must give (zcodec.h; NULL for
 * the codecs whose streams say it themselves); out (NULL: none) gets
 * every span's bytes.  0, or -errno said (the source failing, EFBIG, no
 * scratch file; not keep's own -errno).
 */
int ztable_build(struct source *src, const struct zcodec *c, uint64_t span,
		 const struct zexpect *want, const struct zspans *out,
		 const uint8_t **blob, size_t *len);

/* zsource_blob_check's work (zsource.h). */
int ztable_check(const void *blob, size_t len, uint64_t csize, char *why,
		 size_t whylen);

/* End of span i of n (the next point's start, or usize). */
static inline uint64_t span_end(const struct zpoint *pts, uint64_t n,
				uint64_t i, uint64_t usize)
{
	return i + 1 < n ? pts[i + 1].out : usize;
}

/* The CRC-32 a chunk's bytes are chained to: that of its uncompressed
 * offset (8 bytes, little-endian). */
static inline uint32_t zchunk_seed(uint64_t off)
{
	return zcrc32(0, &off, sizeof(off));
}

/* Chunks (CRC-32s) of a span of that many bytes. */
static inline uint64_t nchunks(uint64_t len)
{
	return (len + ZCHUNK - 1) / ZCHUNK;
}

#endif
