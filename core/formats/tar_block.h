/*
 * tar_block.h - the tar format's lowest layer: its blocks and field
 * offsets, the member record every tar reader reports (struct tar_member),
 * the header block reader over a range of a source (a window that serves
 * runs of small members with one read) and the numeric field parsers.
 *
 * The walker (tar.c, tar_pax.c, tar_sparse.c) stands on this; nothing here
 * knows of pax records, long names or sparse maps.  Users of tar walks
 * include tar.h, which includes this.
 *
 * Not for: walking archives (tar.h), writing tars.
 */
#ifndef SFS_TAR_BLOCK_H
#define SFS_TAR_BLOCK_H

#include <stdint.h>
#include <stddef.h>

struct source;

#define TAR_BLOCK 512
#define TAR_PATH_MAX 4096

enum tar_type {
	TAR_FILE = 1,
	TAR_DIR,
	TAR_HARDLINK,
	TAR_SYMLINK,
};

/* Sparse members: at most this many data chunks (a clear error beyond). */
#define TAR_SPARSE_MAX_CHUNKS (1u << 22)

/* One run of data of a sparse member: `len` bytes at offset `off` of the
 * file as extracted.  Between chunks, and after the last, are holes. */
struct tar_sparse_chunk {
	uint64_t off, len;
};

struct tar_member {
	const char *path;   /* normalised, never empty */
	/* hard link: normalised target path; symlink: target as stored;
	 * otherwise "" */
	const char *link;
	enum tar_type type;
	uint32_t mode;      /* permission bits from the header */
	int64_t mtime;      /* seconds since the epoch */
	uint64_t size;      /* file size as extracted (0 for links and
			     * directories; a sparse file's holes count) */
	uint64_t offset;    /* absolute offset of the data in the file */
	uint64_t stored;    /* data bytes at `offset`: `size` unless sparse */
	uint64_t header;    /* absolute offset of the (first) header block */
	/* where a walk may start to report this member as it is reported
	 * now: the first of its own extended headers ('x', 'L', 'K'), or
	 * UINT64_MAX when a pax global header ('g') before it applies, which
	 * a walk starting later would not see (an index build's checkpoint
	 * resumes there, index/checkpoint.h) */
	uint64_t resume;
	/* sparse: 1, with the non-empty chunks in increasing, non-overlapping
	 * order inside `size`, whose lengths add up to `stored` (the data at
	 * `offset` is their bytes, concatenated).  Valid during the callback. */
	int sparse;
	uint32_t nchunks;
	const struct tar_sparse_chunk *chunks;
};

#define TAR_WINDOW   (128u << 10) /* header read-ahead window */
#define TAR_AHEAD    (32u << 20)  /* asynchronous read-ahead while headers are dense */
#define TAR_NAME_MAX 255          /* longest path component */

/* Offsets of the header fields (POSIX ustar; GNU shares the first 345). */
enum {
	TAR_H_NAME = 0, TAR_H_MODE = 100, TAR_H_SIZE = 124, TAR_H_MTIME = 136,
	TAR_H_CHKSUM = 148, TAR_H_TYPE = 156, TAR_H_LINK = 157,
	TAR_H_MAGIC = 257, TAR_H_PREFIX = 345, TAR_H_GNU_SPARSE = 386,
	TAR_H_GNU_ISEXT = 482, TAR_H_GNU_REALSIZE = 483,
	TAR_H_GNU_EXT_ISEXT = 504,
};
#define TAR_GNU_SPARSE_IN_HDR 4   /* map entries in an old GNU 'S' header */
#define TAR_GNU_SPARSE_IN_EXT 21  /* ... and in each extension block after it */

/* Header reader over [lo, hi) of a source; one per walk. */
struct tar_reader {
	struct source *src;
	uint64_t lo, hi;
	uint64_t boff;
	size_t blen;
	size_t want;        /* bytes to read on a miss: see tar_rd_get */
	uint64_t ra_end;    /* asked the kernel to read ahead up to here */
	int grow;           /* hi is as far as the source is known to go
			     * so far (TAR_TO_END): tar_rd_upto */
	int err;            /* the growing source failed: the walk's result */
	unsigned char buf[TAR_WINDOW];
};

/* Points *p at n (<= the window) bytes at off; -EBADMSG if the range ends first. */
int tar_rd_get(struct tar_reader *r, uint64_t off, size_t n, const unsigned char **p);
/* hi, grown as far as `need` when the source grows (source_extent): the
 * checks against hi then hold as for a source of known size. */
uint64_t tar_rd_upto(struct tar_reader *r, uint64_t need);
/* An octal or base-256 header field of n bytes: 0, -ERANGE, -EINVAL. */
int tar_parse_num(const unsigned char *f, size_t n, int64_t *out);
/* A decimal number filling s[0..n): 0 or -EINVAL. */
int tar_parse_dec(const char *s, size_t n, uint64_t *out);

#endif
