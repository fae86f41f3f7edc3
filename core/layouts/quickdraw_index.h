/*
 * quickdraw_index.h - what layout_quickdraw.c needs from the Quick, Draw!
 * source scan and index build: the on-disk tables of the index, the scan of
 * SOURCE (class list, image headers, open image sources: quickdraw_scan.c),
 * the build (quickdraw_build.c) and the pure helpers (sample names, split
 * sizes, split lines: quickdraw_index.c) that unit tests check.
 *
 * Not the FUSE-facing ops (layout_quickdraw.c).
 */
#ifndef SFS_QUICKDRAW_INDEX_H
#define SFS_QUICKDRAW_INDEX_H

#include <stdint.h>
#include <stddef.h>

#include "index/blockstore.h"
#include "index/index.h"
#include "io/source.h"
#include "options.h"

#define QD_FORMAT     8u         /* bump when a section changes meaning */
#define QD_ROW        784u       /* bytes of one 28x28 uint8 image */
#define QD_CKPT       256u       /* split lines per byte-offset checkpoint */
#define QD_MAX_NAME   250u       /* bytes of a class name (+ ".npz" fits NAME_MAX) */
#define QD_XL_MAGIC   0x4c58u    /* "XL": a redirect record (see below) */
#define QD_XF_MAGIC   0x4658u    /* "XF": the same, to float32 points */

/* Index sections. */
#define QD_TAG_HEAD INDEX_TAG('Q', 'D', 'H', 'D') /* struct qd_head */
#define QD_TAG_CLS  INDEX_TAG('Q', 'D', 'C', 'L') /* struct qd_class[nclass] */
#define QD_TAG_NAME INDEX_TAG('Q', 'D', 'N', 'M') /* classes.txt bytes */
#define QD_TAG_SORT INDEX_TAG('Q', 'D', 'S', 'O') /* u32[nclass]: bytewise name order */
#define QD_TAG_PERM INDEX_TAG('Q', 'D', 'P', 'M') /* u32[total]: shuffled gidx */
#define QD_TAG_CKPT INDEX_TAG('Q', 'D', 'C', 'K') /* u64: split line offsets */
#define QD_TAG_SDAT INDEX_TAG('Q', 'D', 'S', 'D') /* stroke blockstore */
#define QD_TAG_SBLK INDEX_TAG('Q', 'D', 'S', 'B')
#define QD_TAG_SREC INDEX_TAG('Q', 'D', 'S', 'R')
#define QD_TAG_XL   INDEX_TAG('Q', 'D', 'X', 'L') /* long drawings, zlib streams */

/*
 * Stroke records: record gidx holds sample gidx's (dx, dy, pen) points as
 * int16, or as float32 when int16 cannot hold float32 of every value (other
 * sketch-rnn sets: the file's dtype cast as astype(np.float32) does, the
 * preprocessing's first step); its first byte says how:
 *   QD_REC_PACKED  int16 points in strokepack.h's form (2 bytes for most);
 *   QD_REC_RAW     n * 6 bytes of int16 (a pen value other than 0/1);
 *   QD_REC_F32     n * 12 bytes of float32, little-endian;
 *   'X'            a drawing too long for one record (rare) is
 *                  zlib-compressed into section QD_TAG_XL and its record is
 *                  a QD_XL_LEN-byte redirect, little-endian: u32 QD_XL_MAGIC
 *                  (int16 points) or QD_XF_MAGIC (float32; both start with
 *                  'X'), u32 npts, u32 zlen, u64 offset of the stream in
 *                  QD_TAG_XL.
 */
#define QD_REC_PACKED 'P'
#define QD_REC_RAW    'R'
#define QD_REC_F32    'F'
/* the most points a packed record can hold: every point takes >= 2 bytes */
#define QD_PACKED_MAX_PTS ((BLOCKSTORE_BLOCK - 1) / 2)
#define QD_XL_LEN     20u
#define QD_XL_MAX_PTS (64u << 20) / 6 /* one drawing, inflated, at most 64 MiB */

struct qd_head {
	uint32_t format, nclass;
	uint32_t has_images, has_strokes;
	uint64_t total;          /* samples over all classes */
	uint64_t nsplit[3];      /* lines of train, val, test */
	uint64_t split_bytes[3]; /* size of each split file */
	uint64_t ckpt_base[3];   /* first checkpoint of each split in QD_TAG_CKPT */
	uint64_t names_len;      /* bytes of classes.txt */
	/* the classes file the names came from, so a remount reads none of
	 * it while its stamp stays the same (qd_scan's `saved`): a hash of
	 * its name and stamp at the scan (0: the names came from listings,
	 * or the stamp cannot tell versions apart), and one of QD_TAG_NAME,
	 * checked before the names are used: they are read before the
	 * index's checksum is.  The stamp is not in the fingerprint (a
	 * touched classes.txt with the same names keeps the index, as
	 * before), so such a file is read at each mount until the index is
	 * rebuilt for another reason. */
	uint64_t classes_fp, names_fp;
};

struct qd_class {
	uint64_t gidx_base;      /* first global index of the class */
	uint64_t n;              /* samples */
	uint32_t name_off, name_len; /* the name within QD_TAG_NAME */
	/* the image .npy's header, so a remount reads no source bytes (the
	 * fingerprint has the file's stamp): data offset, rows the header
	 * says, whole rows present (used); zero without images */
	uint64_t img_off, img_hdr_rows, img_rows;
};

/* One class's sources, found at mount: O(classes) heap, read-only once
 * the scan returns (the image source checks itself: source_check). */
struct qd_src {
	char *name;
	char *img_path, *stk_path;   /* paths or URLs; NULL when the dataset has none */
	struct source *img;          /* NULL when no images */
	/* from the header: read by qd_scan_images for a build, else taken
	 * from the saved index by qd_scan_attach */
	uint64_t img_off;            /* data offset of the first row */
	uint64_t img_hdr_rows;       /* rows the header says */
	uint64_t img_rows;           /* whole rows present in the file */
	int img_scanned;             /* the three above are set */
	struct source_stamp stk_stamp; /* the stroke file at scan time */
	int64_t img_mtime, stk_mtime;  /* seconds, for attributes */
};

struct qd_scan {
	struct source_env *env;      /* the mount's (not owned) */
	size_t nclass;
	struct qd_src *cls;
	int has_images, has_strokes;
	int64_t root_mtime;
	uint64_t classes_fp;         /* the classes file's, or 0 (qd_head) */
};

/* Finds the classes and their files (SOURCE a path or URL; names joined
 * with source_join) and opens the image files in env, reading none of
 * their bytes.  `saved` (may be NULL): the saved index, mapped without
 * checks (index_map_open's peek); when it was built from the classes file
 * as it is now (same name and stamp), the class names come from it and
 * the file is not read.  0 or -errno (message printed). */
int qd_scan(const struct sfs_opts *o, struct source_env *env,
	    const struct index_map *saved, struct qd_scan *s);
/* Reads and checks the header of every image file not yet read (before a
 * build).  0 or -errno (message printed). */
int qd_scan_images(struct qd_scan *s);
/* Takes the image header facts of the classes not read from the saved
 * index's class table (nclass entries), warning as the read would for a
 * file shorter than its header says; for those read, checks they agree.
 * 0, or -EBADMSG when they do not fit. */
int qd_scan_attach(struct qd_scan *s, const struct qd_class *cls);
void qd_scan_free(struct qd_scan *s);

/* The fingerprint of everything the index depends on (sources, class order,
 * per_class, seed, split). */
int qd_fingerprint(const struct sfs_opts *o, const struct qd_scan *s,
		   struct index_fp *fp);

/* Writes the index's sections into w (reads every image header into s and
 * every stroke file once).  0 or -errno (said). */
int qd_index_build(const struct sfs_opts *o, struct qd_scan *s,
		   struct index_writer *w);

/* ---- pure helpers (quickdraw_index.c) ---- */

/* qd_head's names_fp: a hash of the class names' bytes (QD_TAG_NAME). */
uint64_t qd_names_fp(const char *names, uint64_t len);

/* Sizes of train / val / test: int(p/100.0 * total) for the first two, as
 * Python computes int(0.8 * total); test gets the rest. */
void qd_split_counts(uint64_t total, const uint32_t pct[3], uint64_t out[3]);

/* Parses a sample file name "%06d.npy" strictly (what snprintf would print
 * for the value, nothing else).  0 and *gidx, or -ENOENT. */
int qd_parse_sample_name(const char *name, uint64_t *gidx);
/* Writes "%06llu.npy"; returns its length. */
int qd_sample_name(char *out, size_t outlen, uint64_t gidx);

/* Bytewise order of the sample names of two indices: nonzero if name(a) <
 * name(b). */
int qd_name_less(uint64_t a, uint64_t b);
/* The first name of [lo, hi) in bytewise order, or the one after `prev`;
 * UINT64_MAX when there is none.  Indices below 2^32. */
uint64_t qd_name_first(uint64_t lo, uint64_t hi);
uint64_t qd_name_next(uint64_t lo, uint64_t hi, uint64_t prev);

/* One split line for sample gidx of class `name` with `label`, into out
 * (at least 2 * QD_MAX_NAME + 80 bytes).  Returns its length. */
size_t qd_split_line(char *out, size_t outlen, int has_images, int has_strokes,
		     const char *name, size_t name_len, uint64_t gidx,
		     uint64_t label);
/* Its length, computed without formatting. */
uint64_t qd_split_line_len(int has_images, int has_strokes, size_t name_len,
			   uint64_t gidx, uint64_t label);

/* The class holding gidx (binary search over gidx_base; ncls > 0) and its
 * label.  A gidx past the end gives the last class. */
const struct qd_class *qd_class_of(const struct qd_class *cls, uint32_t ncls,
				   uint64_t gidx, uint32_t *label);

/* Checks one class name (from a classes file or a file name): it must be
 * a directory name of the tree and fit one field of classes.txt and the
 * split files' tab-separated lines: non-empty, at most QD_MAX_NAME bytes,
 * not "." or "..", no '/' and no control character (NUL, TAB, newline,
 * CR, ... 0x01-0x1f, 0x7f).  NULL if fine, else why not. */
const char *qd_name_problem(const char *name, size_t len);
static inline int qd_name_ok(const char *name, size_t len)
{
	return !qd_name_problem(name, len);
}
/* Class names in order (each malloc'ed, NUL-terminated). */
struct qd_names {
	char **v;
	size_t n, cap;
};
void qd_names_free(struct qd_names *ns);

/* Adds the names of a classes file's bytes (read from path, named in
 * messages) to ns: one name per line, a trailing '\r' dropped, blank lines
 * skipped, each checked by qd_name_problem.  0; or -EINVAL (a bad name, or
 * one listed twice: the message names the line's offset), -E2BIG (over
 * 100,000 names), -ENOMEM, with ns emptied.  Work O(n log n) in the names,
 * so a hostile file is refused in time proportional to its size. */
int qd_classes_parse(const char *path, const char *buf, size_t n,
		     struct qd_names *ns);

/* name (len bytes) for a message: C escapes for control characters and
 * non-ASCII bytes, cut at about 80 bytes; out holds QD_NAME_SHOW bytes. */
#define QD_NAME_SHOW 400
void qd_name_show(char *out, const char *name, size_t len);

#endif
