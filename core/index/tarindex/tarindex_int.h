/*
 * tarindex_int.h - what the two halves of the tar index share: the
 * version, the section tags and the header section that tarindex_build.c
 * writes and tarindex.c checks when it maps them.  Private to those two
 * files; the contract is tarindex.h.
 */
#ifndef SFS_INDEX_TARINDEX_INT_H
#define SFS_INDEX_TARINDEX_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "search.h"
#include "index/index.h"
#include "index/tarindex/tarindex.h"

#define TARINDEX_VERSION 8      /* 4: hard link groups, a link's mtime its target's;
				 * 5: zip sources, section ZP;
				 * 6: derived sources, sections DV and DN;
				 * 7: stored zip members in ZP too (CRC-checked);
				 * 8: nsymlinks in the header (a mount with none
				 *    walks no nodes) */
#define TAG(c, x, y) INDEX_TAG((c), 'T', (x), (y))
#define NONE UINT32_MAX

/* Section header, stored as section TAG(c, 'H', 'D'). */
struct tarindex_hdr {
	uint32_t version;
	uint32_t nnodes;
	uint32_t ndirs;
	uint32_t nsrc;
	uint64_t pool_len;
	uint64_t nfiles;
	uint64_t total_bytes;
	uint32_t nsparse;       /* sparse files: section TAG(c, 'S', 'T') */
	uint32_t nhardlinks;    /* linked files: TAG(c, 'H', 'L') */
	uint64_t nchunks;       /* their map entries: TAG(c, 'S', 'M') */
	uint32_t nderived;      /* derived sources: TAG(c, 'D', 'V') */
	uint32_t nsymlinks;     /* symlink nodes */
};

/*
 * A derived source: the uncompressed bytes of a nested compressed tar,
 * a member of source `parent` (a number below its own: a source or an
 * earlier derived one).  Derived source k is source number nsrc + k; the
 * sizes section holds its uncompressed size after the sources'.
 * Opened at tarindex_open as a slice of the parent (io/slice.h), named
 * tarindex_derived_name.
 */
struct tarindex_derived {
	uint64_t off, len;      /* the member's bytes in the parent */
	uint32_t parent;
	uint32_t name;          /* the member's path: offset in TAG(c, 'D', 'N') */
};

/*
 * The source name of a derived source, "<parent's name>@<off>:<member
 * path>": malloc'ed or NULL.  Messages name the archive, the offset and
 * the member with it, and the stored access-point table is keyed by it
 * (with the parent's stamp).  It ends in the member's compressed suffix,
 * which is how zsource knows to look for one.
 */
char *tarindex_derived_name(const char *parent, uint64_t off, const char *path);

/* tarindex_znest.c, for tarindex.c: maps, checks and opens the derived
 * sources into t->srcs[t->ntop ...] (t->srcs holds the sources); the
 * close closes them. */
int tarindex_derived_open(struct tarindex *t, const struct index_map *m,
			  uint32_t c, uint32_t nderived);
void tarindex_derived_close(struct tarindex *t);

/*
 * The members' checksums (-o checksums: tarindex_sums.c), optional
 * sections, so an index built without them is byte for byte what it was
 * before they existed (and TARINDEX_VERSION did not change):
 *   TAG(c, 'C', 'H'): struct tarindex_sums_hdr, present when they are;
 *   TAG(c, 'C', 'K'): uint32_t[nnodes], the CRC32C of each file node's
 *       bytes when it is checksummed (tarindex_summed), else 0;
 *   TAG(c, 'P', 'X'): struct tarindex_pieced[], sorted by node: the file
 *       nodes over SUMS_PIECED bytes, whose CRC32C per
 *       SUMS_PIECE bytes (the last piece shorter) are
 *   TAG(c, 'P', 'C'): uint32_t[], at `first` on.
 */
struct tarindex_sums_hdr {   /* TAG(c, 'C', 'H') */
	uint32_t piece, pieced;  /* SUMS_PIECE, SUMS_PIECED */
	uint64_t nsummed;        /* file nodes checksummed */
	uint64_t npieces;        /* CRCs in PC */
};
struct tarindex_pieced {
	uint32_t node, pad;
	uint64_t first;
};

/* tarindex_sums.c, for tarindex.c: maps the sections (none: t->sums
 * stays NULL); 0 or -EBADMSG (said) when they do not fit. */
int tarindex_sums_open(struct tarindex *t, const struct index_map *m, uint32_t c);
/* Once the sources are open: the cache of checked members, in the pool
 * `mem` (NULL: one of its own); 0 or -ENOMEM.  The close frees it. */
int tarindex_sums_start(struct tarindex *t, struct lru_pool *mem);
void tarindex_sums_close(struct tarindex *t);
/* Reads [off, off + size) of checksummed file node i (named `name`, its
 * fsize bytes a plain range of source src at `at`) into buf, checked
 * (tarindex.h); 0 or -errno. */
int tarindex_sums_read(const struct tarindex *t, uint32_t i, const char *name,
		       uint32_t src, uint64_t at, uint64_t fsize, char *buf,
		       size_t size, uint64_t off);
/* The sizes of the pieces (tarindex.h, "Checksums"), as stored. */
#define SUMS_PIECE  (64u << 10)
#define SUMS_PIECED (1u << 20)

/* Zip entries in (source, offset) order: how tarindex_zip.c writes the
 * section and tarindex.c searches it (tarindex.c). */
int tarindex_zip_cmp(const void *pa, const void *pb);

/*
 * The one rule of -o checksums: whether a file node (sparse or not, of
 * source src) has a CRC32C.  The build computes them for these
 * (tarindex_tree.c hands them to tarindex_sums.c) and a mount reads them
 * for these (tarindex_summed).  Not sparse; of a source the caller gave
 * (src < ntop: a derived source, a nested compressed tar, has its
 * stream's CRCs); and not of a zip, a source with entries in zips[0 ..
 * nzips), sorted by tarindex_zip_cmp (a zip's entries carry a CRC-32 of
 * their own, which zipread checks, and so do a tar stored in one and the
 * members it expands to, which are of the zip's source too).
 */
static inline int tarindex_sums_cover(const struct tarindex_zip *zips,
				      uint64_t nzips, uint32_t ntop,
				      uint32_t src, int sparse)
{
	uint64_t k = SFS_PARTITION_POINT(uint64_t, 0, nzips, m, zips[m].src < src);

	return !sparse && src < ntop && !(k < nzips && zips[k].src == src);
}

/* Hard link entries by node number: sorted so at build, searched so at mount. */
static inline int hardlink_cmp(const void *pa, const void *pb)
{
	uint32_t i = ((const struct tarindex_hardlink *)pa)->node;
	uint32_t j = ((const struct tarindex_hardlink *)pb)->node;

	return (i > j) - (i < j);
}

#endif
