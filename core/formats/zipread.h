/*
 * zipread.h - the data of one zip member: read whole (stored, or decoded:
 * deflate by the codec layer's inflater, io/zsource.h
 * zsource_inflate_whole, the one large members' spans use too; bzip2,
 * LZMA, zstd, xz by zipmethod.h's table; CRC-32 checked: the .npz reader
 * and small members of archives), or a
 * range of it for layout=tar, through a per-mount struct zipread that
 * keeps an LRU of small members, the sources (access points:
 * io/zsource.h) of large deflated ones, and what it found of each
 * member's CRC-32.  No byte of any member reaches a reader before its
 * CRC-32 matched: a large stored member is read whole once (its first
 * read, per mount) to check it, then in place.
 *
 * Bombs: a member never inflates past its declared size (memory is taken
 * as bytes inflate, never from the declared size alone), and a declared
 * size over deflate's 1032:1 ratio to the compressed size is refused
 * before anything is read.  Bad data is -EIO with a message naming the
 * zip, the member and the offset; never other bytes.
 *
 * Not for: the central directory (zip.c, zipwalk.c), the decoders
 * themselves (io/codecs/zgzip.c, zipmethod.c), encryption.
 */
#ifndef SFS_ZIPREAD_H
#define SFS_ZIPREAD_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "io/source.h"

/* One member's data as the central directory and local header give it. */
struct zip_data {
	struct source *src;
	const char *path;        /* the zip, for messages */
	const char *name;        /* the member, for messages */
	uint64_t off;            /* absolute offset of the data in src */
	uint64_t csize, usize;   /* compressed and declared sizes */
	uint32_t crc32;
	uint16_t method;         /* 0 stored, 8 deflate (ZIP_METHOD_BAD_SIZES) */
	uint16_t flags;          /* general purpose bits (1: encrypted) */
};

/* Not a zip method: a stored member whose sizes disagree and none of
 * whose sizes' bytes match its CRC-32 (zipwalk.c said so); reads EIO. */
#define ZIP_METHOD_BAD_SIZES 0xffffu

/* 1 if member d can never be read (encrypted, a method other than stored
 * and deflate, ZIP_METHOD_BAD_SIZES), with why (a phrase, no names)
 * written to why; else 0. */
int zipread_unreadable(const struct zip_data *d, char *why, size_t len);

/*
 * Reads the whole member into a new malloc'ed buffer of usize (+1) bytes.
 * 0; -EIO (message printed) on an encrypted member, another method, a
 * corrupt or truncated stream, one that inflates past or short of usize,
 * a CRC mismatch, or a declared size past deflate's ratio; -ENOMEM.
 */
int zip_data_read(const struct zip_data *d, uint8_t **out);

/* Members up to this size are read whole, CRC-checked and cached;
 * larger deflated ones are read through access points (zipread_open_fn),
 * larger stored ones in place once checked. */
#define ZIPREAD_WHOLE_MAX ((uint64_t)4 << 20)
/* Bytes of small members a zipread keeps without a mount's pool. */
#define ZIPREAD_CACHE     ((uint64_t)64 << 20)

struct zipread;

/* 1 if d is read through a source of its own (zipread_open_fn): deflated,
 * over ZIPREAD_WHOLE_MAX, not encrypted, within deflate's ratio (others
 * are read whole, or refused by zip_data_read's checks). */
int zipread_large(const struct zip_data *d);

/*
 * Opens large deflated member d as a source of its uncompressed bytes
 * with random access: a slice of the zip (io/slice.h, source_open_range)
 * wrapped by zsource_wrap_deflate (io/zsource.h), named uniquely in the
 * mount (its stored table is kept under the name).  0 or -errno.
 */
typedef int (*zipread_open_fn)(const struct zip_data *d, struct source **out);

/*
 * What a zipread_open_fn does, under a name of the caller's: large member
 * d's data, a slice of the zip, read as raw deflate with the directory's
 * size and CRC-32 (zsource_wrap_deflate), or as the bzip2, zstd or xz
 * stream it is (sniffed as a file is; zipread checks its size and CRC-32
 * at its first read).  0, -EBADMSG when the data is not such a stream
 * (said), or -errno.
 */
int zipread_member_open(const struct zip_data *d, const char *name,
			struct source **out);

/* Members are named by keys below nkeys; a large deflated one (over
 * ZIPREAD_WHOLE_MAX) is opened by `open` at its first read and kept
 * (open NULL: such members give EIO, said).  Small members are cached in
 * the mount's cache memory, mem (io/lru.h; NULL: ZIPREAD_CACHE bytes of
 * their own). */
struct lru_pool;
struct zipread *zipread_new(struct lru_pool *mem, uint64_t nkeys,
			    zipread_open_fn open);
void zipread_free(struct zipread *zr);

/*
 * Reads up to `size` bytes at `off` of member d (which the caller has
 * bounded to d->usize), `key` naming it uniquely in this zipread.  Bytes
 * read, or -EIO / -ENOMEM, or -EAGAIN in no-wait mode where it would
 * wait.  Small members (<= ZIPREAD_WHOLE_MAX): from the cache, else
 * read (inflated) whole and CRC-checked first, so no byte of a member
 * whose CRC fails is ever returned.  Large stored ones: read whole once
 * to check the CRC-32 (one reader; the others wait), then in place.  A
 * member found bad gives EIO at once from then on (said once).  Large deflated ones: through the member's
 * source (opened by its first read); its first pass (that read's, or
 * an earlier mount's, whose table was stored) checks the CRC-32 and the
 * declared size before any byte is served, and every later span read
 * checks its bytes against the pass's CRC-32s: so here too a member whose
 * CRC fails, that is truncated or inflates past its size gives EIO, never
 * bytes.
 * Thread-safe: the cache and the table of sources have their own locks.
 */
ssize_t zipread_pread(struct zipread *zr, uint64_t key, const struct zip_data *d,
		      void *buf, size_t size, uint64_t off);

/* 1 if member `key` is stored and its CRC-32 matched: its bytes may be
 * read in place (spliced) from now on; else 0 (read it through
 * zipread_pread).  zr may be NULL (0). */
int zipread_in_place(struct zipread *zr, uint64_t key);

#endif
