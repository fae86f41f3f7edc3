/*
 * tarindex_build_int.h - what the files of the tar index build share:
 * tarindex_build.c (the walk, the driver), tarindex_links.c (nested tar
 * renames, hard links), tarindex_tree.c (the tree, the sections),
 * tarindex_zip.c (zip sources), tarindex_znest.c (nested compressed tars),
 * all above tarindex_ents.c (entry records, sorts, arenas).  The driver
 * calls down into the stages; the stages that feed the walk reach it
 * through the builder's hooks (add_member, nest_walk).  Private to them;
 * the contract is tarindex.h.  What they share is named tarbuild_* (the
 * tar index's build), what the mount reads tarindex_*.
 */
#ifndef SFS_INDEX_TARINDEX_BUILD_INT_H
#define SFS_INDEX_TARINDEX_BUILD_INT_H

#include <stdint.h>
#include <stddef.h>

#include "index/checkpoint.h"
#include "index/index.h"
#include "index/progress.h"
#include "index/spill.h"
#include "index/tarindex/tarindex.h"
#include "formats/tar.h"

/* One member (or nested tar directory) as sorted: by path, then seq. */
struct entry_rec {
	uint64_t off, size;
	int64_t mtime;
	uint32_t seq;       /* archive order */
	uint32_t src;
	uint32_t sparse;    /* a file: 0, or its map in builder.sparse */
	uint32_t path_len, link_len;
	uint8_t type;       /* enum tar_type */
	uint8_t nested;     /* a nested tar's directory */
	/* path NUL link NUL (a hard link's target with the prefix; a
	 * symlink's as stored), then 8 zero bytes */
	char s[];
};

/* A growing string arena; offset 0 holds "". */
struct tarbuild_arena {
	char *p;
	uint64_t len, cap;
};

/* A nested tar's directory: its walk added the entries of seq in (seq, end). */
struct nest {
	uint32_t seq, end;
	uint32_t up;        /* the nested walk around it (index), or NONE */
	uint32_t src;
	uint32_t len;       /* its path's length */
	uint8_t renamed;
	const char *sfx;    /* the name's suffix, put back on a rename:
			     * ".tar", ".tar.gz"... (tar_archive_suffix) */
	uint64_t path;      /* in builder.side */
	uint64_t clash;     /* the first other entry at or under it, or 0 */
};

/* A hard link member, kept aside (strings in builder.side). */
struct hlink {
	uint32_t seq;
	uint64_t path, link;
};

/* A sparse member's map: n chunks from builder.chunks[first]. */
struct sparse_map {
	uint64_t first;
	uint32_t n;
};

struct tarbuild_links;        /* tarindex_links.c's resolved hard links */

/* A derived source (a nested compressed tar, tarindex_znest.c): source
 * number builder.nsrc + its place in builder.der. */
struct tarbuild_derived {
	struct tarindex_derived d;  /* as stored; d.name in builder.dpaths */
	uint64_t usize;             /* its uncompressed size */
	char *what;                 /* its source name (tarindex_derived_name) */
};

struct walkctx;

struct builder {
	size_t budget;              /* bytes for each sort */
	char *scratch;              /* prefix of the scratch files */
	struct spill *ents;         /* the entry records (struct entry_rec) */
	uint32_t nents;
	struct entry_rec *rec;           /* SPILL_MAX_REC bytes to build one in */
	char path[TAR_PATH_MAX + 1];
	struct tarbuild_arena side;       /* strings kept aside */
	struct nest *nests;         /* in archive order */
	uint32_t nnests, nests_cap;
	struct hlink *links;        /* in archive order */
	uint32_t nlinks, links_cap;
	struct tar_sparse_chunk *chunks;
	uint64_t nchunks, chunks_cap;
	struct sparse_map *sparse;  /* [0] unused: entry_rec.sparse 0 is none */
	uint32_t nsparse, sparse_cap;
	struct tarbuild_links *res;       /* NULL: no hard links */
	struct tarindex_zip *zips;  /* zip members, in walk order; once the
				     * walks end by tarindex_zip_cmp */
	uint64_t nzips, zips_cap;
	struct tarbuild_derived *der;     /* derived sources, by number - nsrc */
	uint32_t nder, der_cap;
	struct tarbuild_arena dpaths;     /* their member paths (section DN) */
	uint32_t recursive;
	int checksums;              /* tarindex_build_opts.checksums */
	int quiet;                  /* tarindex_build_opts.quiet */
	struct progress prog;
	uint64_t bytes_before;      /* sizes of the sources already walked */
	const struct tarindex_source *src;  /* for messages */
	uint32_t nsrc;
	struct ckpt *ck;            /* saved progress (checkpoint.h), or NULL */
	int resuming;               /* ck has members to replay, up to `resume` */
	int cut;                    /* a walk stopped at damage read over a
				     * network (source_refetches): the
				     * index is not saved (index.h) */
	struct ckpt_resume resume;
	/* the walk's own steps (tarindex_build.c), for the stages that feed
	 * it: a zip's members (tarindex_zip.c) go through add_member, as
	 * tar_walk's do; nest_walk expands member m as a nested tar named
	 * with suffix sfx (its directory, then its members, walked from `in`,
	 * source number inno: a derived source, from its start; or, in NULL,
	 * from m's data in c's source or the checkpoint: 1 or -errno), for
	 * nested compressed tars (tarindex_znest.c).  Called through these
	 * pointers, so those files stand below the walk */
	int (*add_member)(void *walkctx, const struct tar_member *m);
	int (*nest_walk)(struct walkctx *c, const struct tar_member *m,
			 const char *sfx, struct source *in, uint32_t inno);
};

/* What one tar_walk is walking: a source, or a nested tar inside one. */
struct walkctx {
	struct builder *b;
	struct source *src;
	uint32_t srcno, depth;
	uint32_t up;            /* the nested walk this is (index), or NONE */
	const char *prefix;     /* "" or "dir" for the members' paths */
	const char *what;
	int deflated;           /* the member being added is (no nested tar) */
	int zip;                /* the source is a zip */
	int arc;                /* the source is a cpio, ar or ISO 9660
				 * archive (formats/arcwalk.h) */
	int derived;            /* the source is a derived one: progress
				 * stays at prog_at, the outer member's offset */
	uint64_t prog_at;
};

/* tarindex_ents.c: what every stage works on */
int tarbuild_grow(void **p, uint32_t *cap, uint32_t n, size_t elt);
void *tarbuild_slot(void **p, uint32_t *cap, uint32_t n, size_t elt);
int tarbuild_arena_put(struct tarbuild_arena *ar, const char *a, const char *s, size_t slen,
		 uint64_t *out);
int tarbuild_pathcmp(const char *a, const char *b);
size_t tarbuild_entry_set(struct entry_rec *r, const char *path, size_t plen,
		   const char *link, size_t llen);
int tarbuild_entry_strings(struct tarbuild_arena *ar, const struct entry_rec *r, uint64_t *path,
		    uint64_t *link);
int tarbuild_sort_open(struct builder *b, struct spill **s, size_t budget,
		 spill_cmp_fn cmp);
int tarbuild_ents_open(struct builder *b, struct spill **s);
int tarbuild_next(struct spill *s, const struct entry_rec **r);
int tarbuild_symlink_inside(const char *prefix, const char *path, const char *target);
uint32_t tarbuild_nests_before(const struct builder *b, uint32_t seq);
uint32_t tarbuild_enclosing(const struct builder *b, uint32_t seq);

/* The name of source number src, for messages. */
const char *tarbuild_src_what(const struct builder *b, uint32_t src);

/* tarindex_znest.c */
/*
 * Member m, named with the compressed suffix sfx: expanded as a nested
 * tar (1) when its bytes decompress to a tar, through a derived source
 * recorded in the builder; else 0 (a plain file; a stream that does not
 * open is warned); -errno for what stops the build (memory, a signal).
 */
int tarbuild_znested(struct walkctx *c, const struct tar_member *m, const char *sfx);
/* Writes the derived sources' sections, when there are any. */
int tarbuild_derived_write(struct builder *b, struct index_writer *w, uint32_t c);
void tarbuild_derived_free(struct builder *b);

/* tarindex_links.c */
int tarbuild_rename_nested(struct builder *b);

/* tarindex_zip.c */
/* Walks the zip source of c into the builder (see tarindex.h). */
int tarbuild_zip_walk(struct walkctx *c);
/* Writes the zip section (sorted), when there are deflated members. */
int tarbuild_zip_write(struct builder *b, struct index_writer *w, uint32_t c);
int tarbuild_resolve_links(struct builder *b);
/*
 * Hard link r as resolved: 0 when it was dropped, else 1 with *out filled
 * (a copy of r with its target's type, data and mtime; *link the symlink
 * target).  r must be a hard link of the sorted entries.
 */
int tarbuild_link_of(const struct builder *b, const struct entry_rec *r, struct entry_rec *out,
	       const char **link);
/* Whether a resolved hard link shares file data at (src, off). */
int tarbuild_link_data(const struct builder *b, uint32_t src, uint64_t off);
void tarbuild_links_free(struct builder *b);

/* tarindex_sums.c: a file node whose bytes a build with checksums reads
 * (collected by tarindex_tree.c in node order: those tarindex_sums_cover
 * covers), and the sections made from them: reads the bytes of every
 * e[0 .. n), e[] reordered.  0 or -errno (said). */
struct tarbuild_sum {
	uint64_t off, size;
	uint64_t first;     /* its piece CRCs' place, or UINT64_MAX */
	uint32_t src, node;
};
int tarbuild_sums_write(struct builder *b, struct index_writer *w, uint32_t c,
		  struct tarbuild_sum *e, uint32_t n, uint32_t nnodes);

/* tarindex_tree.c: steps 4 and 5 (the tree, the sections). */
int tarbuild_tree_write(struct builder *b, struct index_writer *w, uint32_t c,
		  int64_t root_mtime, const uint64_t *sizes);

#endif
