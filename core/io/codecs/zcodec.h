/*
 * zcodec.h - what a decompressor implements for zsource.c (the contract of
 * a row of its codec table), and the pieces zsource.c lends it: a
 * buffered sequential reader of the compressed source and the recorder of
 * the pass.  Private to core/io.
 *
 * A codec is four things: a name, a magic test, the pass (one sequential
 * read of the whole compressed source, reporting every uncompressed byte
 * in order and every place it could restart from), and the inflation of
 * one span from an access point.  zsource.c decides where points go (one
 * per `span` bytes of output), keeps the 32 KiB window, checks every span
 * it inflates later against the CRC the pass recorded, caches spans and
 * saves the table: a codec never allocates more than its own state and
 * buffers, and never sees the cache or the store.
 *
 * A codec is one file with one `struct zcodec` and one row in ztable.c's
 * table (its suffixes are in its row); zgzip.c holds
 * a second, raw deflate (a zip member's data: no magic, no suffix, the
 * expected size and CRC-32 given by zsource_wrap_deflate).  xz (zxz.c)
 * restarts at block starts, zstd (zzstd.c) at frame starts, bzip2 (zbz2.c) at block starts (a bit offset: `bits`):
 * none needs a window (win_len 0, the points are `member` ones).  xz
 * blocks and zstd frames can be as long as the file, so those codecs
 * also mark points they cannot restart from (zrecorder_seq_point, ZP_SEQ)
 * and read through a decoder (dec_*) that zseq.c keeps between reads.
 */
#ifndef SFS_IO_ZCODEC_H
#define SFS_IO_ZCODEC_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "io/crc.h"
#include "io/source.h"

#define ZWINDOW (32u << 10)   /* deflate's history: the most a window holds */

/* A buffered sequential reader of the compressed bytes. */
struct zreader {
	struct source *src;
	uint64_t size;          /* where its bytes end: the compressed
				 * source's size (a zip member's end for
				 * zdeflate_whole); never read past */
	uint64_t boff;          /* source offset of buf[0] */
	size_t len, pos;        /* bytes in buf, next one to use */
	unsigned char *buf;
	size_t cap;
	int fresh;              /* read past every cache (source_refetch):
				 * a span read again after it failed */
	int read_rc;            /* a read of the source that failed: its
				 * -errno (the bytes were not the cause) */
};
/* Reads more after buf[len]: 1 if some came, 0 at the end, -errno. Keeps
 * the unread bytes [pos, len). */
int zreader_fill(struct zreader *in);
/* Source offset of the next unread byte. */
static inline uint64_t zreader_tell(const struct zreader *in)
{
	return in->boff + in->pos;
}
/* Reads exactly n bytes into out (NULL: skips them): 0, -EBADMSG at the
 * end of the source, -errno. */
int zreader_read(struct zreader *in, void *out, size_t n);
/* Repositions at off (drops the buffer). */
void zreader_seek(struct zreader *in, uint64_t off);

/* An access point, as stored in the blob (little-endian, 48 bytes). */
struct zpoint {
	uint64_t in;          /* compressed offset of the first whole byte */
	uint64_t out;         /* uncompressed offset */
	uint64_t win_off;     /* the window's offset in the blob */
	uint64_t crc_off;     /* the span's CRC-32s in the blob: one uint32
			       * per ZCHUNK of its output, the last partial */
	uint32_t win_len;     /* window bytes (<= ZWINDOW); 0: none needed */
	uint32_t win_stored;  /* bytes at win_off: win_len raw, fewer: deflated */
	uint8_t  bits;        /* bits of the byte at in - 1 not yet used (0-7) */
	uint8_t  flags;       /* ZP_* */
	uint8_t  cx;          /* the codec's own (xz: the stream's check) */
	uint8_t  pad[5];
};
_Static_assert(sizeof(struct zpoint) == 48, "the blob's point layout");
/* The unit of the spans' CRC-32s: a read inflates from its point to the
 * end of the chunk holding its last byte, and checks every chunk. */
#define ZCHUNK (64u << 10)
#define ZP_MEMBER 1   /* a member (gzip header) starts at `in` */
#define ZP_BAD    2   /* the span holds bytes of a damaged member: EIO */
#define ZP_SEQ    4   /* no restart here: the span is read by decoding on
		       * from the last point without ZP_SEQ (inside one long
		       * xz block or zstd frame) */

/* The recorder of the pass (zsource.c). */
struct zrecorder;
/* Every uncompressed byte, in order; *crc gets the chunk's CRC-32 (for
 * the codec's own checks, with crc32_combine).  0 or -errno (-EFBIG: too
 * long without a point, see zsource.c). */
int zrecorder_output(struct zrecorder *p, const void *data, size_t n, uint32_t *crc);
/* Where the codec may put its next output: *avail bytes (> 0) there,
 * inside the buffer of the span being kept (so zrecorder_output of them, at
 * that address, copies nothing) or else a scratch buffer of the
 * recorder's; valid until the next zrecorder_* call but zrecorder_output.  NULL
 * on ENOMEM.  A codec may as well output from its own buffers. */
unsigned char *zrecorder_outbuf(struct zrecorder *p, size_t *avail);
/* 1 if a point here would be kept (span bytes since the last one). */
int zrecorder_want(const struct zrecorder *p);
/* A place the codec can restart from: compressed byte `in`, `bits` of
 * the byte before it unread, `member`: a new member starts here (its
 * window is empty).  0 or -errno. */
int zrecorder_point(struct zrecorder *p, uint64_t in, unsigned bits, int member);
/* A block or frame start (xz, zstd, bzip2): a restart point, however
 * short of `span` the output since the last one is, so that a span holds
 * one block and a random read decodes only the block holding it (the
 * tools' blocks are 100 kB to 24 MiB of output; pbzip2 adds one of 19
 * bytes to every 900 kB).  Only runs of blocks shorter than ZBLOCK_MIN
 * (a file of tiny frames) share a span, until it holds ZBLOCK_MIN: the
 * table has at most two points per ZBLOCK_MIN of output.  0 or -errno. */
#define ZBLOCK_MIN ZCHUNK
int zrecorder_block(struct zrecorder *p, uint64_t in, unsigned bits);
/* n bytes of a damaged block whose size is known (xz and zstd headers say
 * it), counted as zeros so that the offsets after it stay right (the
 * codec then says zrecorder_damaged; the bytes are never read).  0, -EFBIG
 * past ZFILL_MAX, -errno. */
#define ZFILL_MAX (1ull << 30)
int zrecorder_fill(struct zrecorder *p, uint64_t n);
/* The codec's byte (struct zpoint cx) of the points made from now on. */
void zrecorder_codec_byte(struct zrecorder *p, uint8_t cx);
/* A point the codec cannot restart from (inside a long block or frame;
 * `in`: about where the codec is), only when zrecorder_want: its span is
 * read by decoding on from the last restart point (zseq.c keeps a
 * decoder per source for sequential readers).  0 or -errno. */
int zrecorder_seq_point(struct zrecorder *p, uint64_t in);
/* The member whose output began at uncompressed offset `from` is damaged
 * (`why`, said with the offset): reads of its bytes give EIO. */
void zrecorder_damaged(struct zrecorder *p, uint64_t from, const char *why,
		   uint64_t at);

/*
 * What a raw deflate stream (a zip member: zsource_wrap_deflate) must
 * give, from the zip's central directory: it has no header or trailer
 * of its own.  The pass (zcodec_deflate) stops at usize bytes (a stream
 * going on past them is damaged: bombs are bounded by the directory) and
 * checks the size and CRC-32 at its end.
 */
struct zexpect {
	uint64_t usize;
	uint32_t crc32;
};
/* The expectations the pass was given (ztable_build), or NULL. */
const struct zexpect *zrecorder_expect(const struct zrecorder *p);

/* Which inflater a span read uses (SAMPLEFS_INFLATE=zlib forces zlib). */
enum zengine { ZENGINE_FAST, ZENGINE_ZLIB };

struct zcodec {
	const char *name;
	uint8_t id;               /* stored in the blob: never reuse one */
	/* the names its files end in, NULL-terminated (a URL whose first
	 * bytes are not fetched yet is taken as compressed by them) */
	const char *const *suffixes;
	/* 1 if the source's first n bytes are this format */
	int (*sniff)(const unsigned char *head, size_t n);
	/* the pass over in (at offset 0): 0; damage is reported with
	 * zrecorder_damaged and ends the pass with 0 (the bytes before it stay
	 * readable); -errno for failures of the source itself */
	int (*scan)(struct zreader *in, struct zrecorder *p);
	/* inflates exactly len bytes from point pt (its window win, raw)
	 * into out: 0, or -EIO (said, with the source's name and offset) */
	int (*span)(struct zreader *in, const struct zpoint *pt,
		    const unsigned char *win, unsigned char *out, size_t len,
		    enum zengine eng);
	/*
	 * Instead of span (which is then NULL): a decoder that starts at a
	 * restart point and gives its output in order, across blocks,
	 * frames and streams, so that zseq.c can keep it for the next
	 * sequential read.  dec_open: 0 or -errno; dec_read: exactly len
	 * more bytes, 0 or -EIO (said, with the source's name and offset).
	 */
	int (*dec_open)(struct zreader *in, const struct zpoint *pt, void **dec);
	int (*dec_read)(void *dec, struct zreader *in, unsigned char *out,
			size_t len);
	void (*dec_free)(void *dec);
	/* said at mount when a restart point is far behind a read: how to
	 * make the file seekable (NULL: it never is) */
	const char *seq_fix;
	/* 1: decoding is cheap next to what a kept decoder and passed spans
	 * save (zstd: memory speed), so a random read inside a long frame
	 * decodes only up to its end (zsource.c span_copy); 0 (xz: later
	 * reads of the same 24 MiB block reuse them, measured 0.77x without) */
	int seq_prefix;
};

extern const struct zcodec zcodec_gzip;
extern const struct zcodec zcodec_xz;
extern const struct zcodec zcodec_zstd;
extern const struct zcodec zcodec_bzip2;
/* Raw deflate (zgzip.c): never sniffed (no magic), opened by
 * zsource_wrap_deflate with a struct zexpect. */
extern const struct zcodec zcodec_deflate;

/*
 * A raw deflate stream read whole (zsource_inflate_whole's work, in
 * zgzip.c with the span readers' inflaters): from the reader's position to
 * in->size, exactly usize bytes into a new malloc'ed buffer (*out, usize
 * + 1 bytes, grown as bytes inflate).  0; -EBADMSG (*why) when the stream
 * gives more or fewer bytes, is truncated, corrupt, or ends before in->size;
 * -ENOMEM, -EFBIG, the reader's -errno (*why).
 */
int zdeflate_whole(struct zreader *in, uint64_t usize, enum zengine eng,
		   uint8_t **out, const char **why);

#endif
