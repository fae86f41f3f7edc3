/*
 * zsource.h - decompressing sources: source_open of a compressed file (a
 * gzip stream, single or multi-member, BGZF; xz, zstd, bzip2) gives a
 * struct source of its uncompressed bytes, with random access, over any
 * backend (file, HTTP, bucket), so every layout and the tar index read
 * it unchanged.
 *
 * How: zran.c's design.  One sequential pass over the compressed bytes
 * (after the first open, in a thread of the source, feeding a reader that
 * streams it: source_extent in io/source.h) records access points: for every ~span bytes of
 * output (default 1 MiB, -o span=), a place where inflating can start
 * again: the compressed offset (byte and bit), the uncompressed offset,
 * and the 32 KiB of output before it (the window, stored deflated where
 * that is smaller), plus a CRC-32 of every 64 KiB of the span that
 * starts there (chained to its offset).  A read inflates from the access
 * point before it to the end of the 64 KiB holding its last byte, checks
 * those CRC-32s (so a damaged or replaced stream gives EIO, never wrong
 * bytes), and keeps what it inflated in an LRU of spans (-o
 * span_cache=SIZE); readers of different spans inflate in parallel.
 *
 * The table of access points is one flat blob (ztable.h; checked by
 * zsource_blob_check below): a header, the windows and CRC-32s, the
 * points; the source exports it after the pass
 * and imports it (mapped, never copied) at later opens, through the
 * store the mount registers on the env (source_env_zstore): the index
 * layer, which owns the files samplefs writes (core/index/zstore.c).
 * Without a store the blob lives in an unlinked scratch file for the
 * life of the source.
 *
 * Codecs come from a table (zcodec.h; ztable.c lists them), chosen by
 * the first bytes of the source (magic), not by its name: a row each for
 * gzip, xz, zstd and bzip2 (the last three restart at block or frame
 * starts and need no window); and raw deflate, which has no magic and is
 * only opened by zsource_wrap_deflate below (and read whole, without
 * points, by zsource_inflate_whole: a small zip member's data).
 *
 * Not for: finding compressed members inside an archive (the tar index
 * opens those as slices, io/slice.h, which source_open_slice wraps here
 * as a file is), writing.
 */
#ifndef SFS_ZSOURCE_H
#define SFS_ZSOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "io/source.h"

/* Default and bounds of -o span=. */
#define ZSOURCE_SPAN_DEFAULT  (1ull << 20)
#define ZSOURCE_SPAN_MIN      (64ull << 10)
#define ZSOURCE_SPAN_MAX      (64ull << 20)

/*
 * Where access-point tables are kept across mounts, keyed by the
 * compressed source's name and stamp and the span (any change of one is
 * a different table).  load: 0 with *blob (len bytes, valid until
 * release(arg, *hold)), -ENOENT when there is none, -EPERM when there is
 * none and no pass may be run (-o index_only: the open then fails with
 * it, the store having said why), another -errno; the blob is checked
 * again by zsource.  save: best effort (says why on failure).  load is
 * called from source_open, on the opening thread; save from the thread
 * of the source's first pass (zsource.c), once, while the opening thread
 * may be using other stores' files.
 */
struct zsource_store {
	int (*load)(void *arg, const char *name, const struct source_stamp *st,
		    uint64_t span, const void **blob, size_t *len, void **hold);
	void (*release)(void *arg, void *hold);
	void (*save)(void *arg, const char *name, const struct source_stamp *st,
		     uint64_t span, const void *blob, size_t len);
};

/* Registers the store (NULL: none) for env's later opens; ops and arg
 * must outlive env.  Before any source_open on env. */
void source_env_zstore(struct source_env *env, const struct zsource_store *ops,
		       void *arg);

/*
 * Instrumentation, for tests and the bench: fn(arg, s, from, to) after a
 * read of an xz, zstd or bzip2 source s missed the span cache and its
 * decoder produced the uncompressed bytes [from, to) (from the restart
 * point of the block holding the read, or from where the decoder kept by
 * the last read stopped), on the reading thread.  NULL: none.  Before
 * any source_open on env.
 */
typedef void (*zsource_decoded_fn)(void *arg, const struct source *s,
				   uint64_t from, uint64_t to);
void source_env_zdecoded(struct source_env *env, zsource_decoded_fn fn,
			 void *arg);

/* The span buffers env's decompressing sources have made so far and the
 * unused ones its pool keeps now (zpool.h; for tests and stats). */
void source_env_zbuffers(struct source_env *env, unsigned long *made,
			 unsigned *spare);

/* 1 if s reads the uncompressed bytes of a compressed source. */
int source_is_decompressed(const struct source *s);

/* 1 with *from, the first uncompressed byte whose reads give EIO because
 * the stream is damaged there (found by the pass, or by an earlier read),
 * when s is a decompressed source whose pass has ended and whose last
 * failed read failed for that damage (not the source's own failure: a
 * server's); else 0. */
int zsource_damage(struct source *s, uint64_t *from);

/* When s (named `what`) starts with a compression format samplefs does
 * not decompress (compress's .Z, lz4, lzip, lzma-alone, lzop): says so,
 * naming it and the commands that make it readable, and 1; else 0.
 * Reads s's first bytes. */
int zsource_refuse_other(struct source *s, const char *what);

/* 1 if h (n bytes) starts like an lzma-alone (.lzma) file, which has no
 * magic: its header's properties, dictionary size and size (arxsource.c
 * opens such files). */
int zsource_lzma_alone(const unsigned char *h, size_t n);

/*
 * Wraps `in`, a raw deflate stream (a zip member's data: a slice of the
 * zip, io/slice.h source_open_range), as a source of its uncompressed
 * bytes, with access points like a gzip file's (the row zcodec_deflate):
 * the stream has no header or trailer, so its declared size and CRC-32
 * (the zip's directory) come from the caller and the pass checks them; a
 * stream that differs, is truncated or inflates past usize is damaged
 * (its reads give EIO, said naming in's name).  The table is the store's
 * when it has one for in's name and stamp (no pass), else made by the
 * first read's pass.  Takes in (closed on failure).  0, -EINVAL when
 * in's env decompresses nothing, -ENOMEM, -EPERM (-o index_only and no
 * table: said).
 */
int zsource_wrap_deflate(struct source *in, uint64_t usize, uint32_t crc32,
			 struct source **out);

/*
 * Inflates the raw deflate stream of csize bytes at off of src (a small
 * zip member's data, read whole: formats/zipread.c) into a new malloc'ed
 * buffer of exactly usize bytes (+1), *out, with the inflater the spans
 * use (ISA-L's unless SAMPLEFS_INFLATE=zlib; zgzip.c).  Memory is taken
 * as bytes inflate (from 64 KiB, doubling), never from usize alone, so a
 * directory that lies costs what the stream really gives.  0; -EBADMSG
 * with *why (a phrase, no names) when the stream decodes to more than
 * usize, ends before it, is truncated or corrupt, or is shorter than
 * csize; -ENOMEM; a failed read's -errno (-EAGAIN and -EINTR as they
 * came), *why saying so.  The caller says it, naming the file.
 */
int zsource_inflate_whole(struct source *src, uint64_t off, uint64_t csize,
			  uint64_t usize, uint8_t **out, const char **why);

/*
 * The blob's fixed header, for the store and the fuzz target:
 * zsource_blob_check says whether len bytes at blob are a well-formed
 * table (every offset inside the blob, points in order, windows at most
 * 32 KiB) for a source of `csize` compressed bytes: 0 or -EBADMSG, why
 * written to why (a sentence without the file name).
 */
int zsource_blob_check(const void *blob, size_t len, uint64_t csize,
		       char *why, size_t whylen);

#endif
