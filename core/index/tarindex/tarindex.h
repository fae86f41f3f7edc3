/*
 * tarindex.h - a compact, persistent index of the members of one or more
 * uncompressed tar files, used in place from the mmap'ed index file.
 *
 * The tree: every source tar is placed at a directory of the mount ("" =
 * the root, else one path component such as "train").  Members whose name
 * ends in ".tar" and that parse as tars are expanded in place, up to
 * `recursive` levels: member "a/b.tar" becomes directory "a/b" holding the
 * nested members, unless the tree has "a/b" or a path under it from
 * elsewhere (a file or directory member "a/b", members "a/b/..." of the
 * outer archive): then the directory keeps the member's name, "a/b.tar",
 * so both stay reachable, with a warning naming both (ratarmount's
 * default name; the same tar twice at one path is no clash: its members
 * merge).  A nested member's data offset is an absolute offset in
 * the OUTER source file, so reading it is one source_pread (or a splice)
 * from that source (a nested tar that is damaged keeps the members before the
 * damage; recursion is capped at TARINDEX_MAX_NEST levels whatever
 * `recursive` says).  Implicit parent directories are created (with the
 * mtime of the member that implied them); for duplicate paths
 * the last member wins (as `tar -x`); a hard link takes what its target
 * path held where the link appears in the archive, as `tar -x` extracts it
 * (a later member of that path does not change it; a link to a missing
 * path or a directory is skipped, warned, and leaves its own path as it
 * was; a link to a symlink is that symlink); the names of one file are
 * listed together (tarindex_hardlink: one inode for the layout, as
 * link(2) makes it; a symlink's are separate nodes); sparse members are files
 * of their real size whose holes read as zeros (never expanded as nested
 * tars); symlinks are kept only if their target stays inside the
 * mount (lexically), others are skipped with a warning.  A path that is
 * both a file and a directory is a directory (the file is hidden, warned).
 * A member whose path in the tree (source directory, nested tars and its
 * own path joined) would pass TAR_PATH_MAX bytes is skipped with a warning,
 * and so is a nested tar whose own path would, with everything in it.
 *
 * On disk (sections of an index file, tags INDEX_TAG(c, 'T', 'x', 'x')
 * where c is the caller's tag_prefix_char, so one index file can hold
 * several tarindexes plus a layout's own sections):
 *   - nodes: struct tarindex_node[nnodes], in breadth-first order with
 *     the children of each directory contiguous and sorted by name
 *     (strcmp order), so lookup is a binary search; node 0 is the root;
 *   - dirs: uint32_t node numbers of the directories in node order (their
 *     child ranges are increasing, so a node's parent is a binary search);
 *   - names: one pool of NUL-terminated names (and symlink targets, equal
 *     targets stored once);
 *   - sources: their sizes at build time (names and stamps are in the
 *     fingerprint);
 *   - sparse files: one struct tarindex_sparse per sparse file node, in
 *     node order, each pointing at its map in the chunk section (hard
 *     links to one member share it): nchunks
 *     struct tarindex_chunk and a last one {size, stored bytes}, so a read
 *     at any offset finds its chunk by binary search, nothing expanded;
 *   - hard links: one struct tarindex_hardlink per file node that shares
 *     its member's data with another node, in node order.
 * 24 bytes per node + the name and its NUL: 44.8 bytes per member measured
 * on 1.28 M ImageNet-named members in 1000 nested class tars.
 *
 * Mounted, the index is used in place and checked as it is used: a
 * directory's child nodes, their names and targets are checked (block
 * checksums, index_map_check, then bounds and order) the first time the
 * directory is listed or looked up in; the root, the small sections
 * (header, directory list, sources, sparse maps, hard links, zips) at
 * tarindex_open.  So a remount reads what its lookups touch, whatever the
 * member count; a damaged block gives EIO to what needs it (said once,
 * naming the index file and section).
 *
 * Threads: after tarindex_open a struct tarindex may be used from any
 * number of threads (source_pread on shared sources); the only state
 * that changes is which directories are checked, set atomically.
 *
 * Zip sources (built by tarindex_zip.c, read by tarindex.c) become trees the same way: their members
 * are walked from the central directory (formats/zipwalk.h); every file
 * member is a file node listed in the zip section and read through
 * formats/zipread.h, which checks its CRC-32 before any byte is served:
 * a stored one is one range of the source (a stored *.tar inside is
 * expanded as a nested tar), spliced once its CRC-32 matched
 * (tarindex_in_place); a deflated one is inflated whole when small, else
 * read through a derived source tarindex_open opens for it (raw deflate
 * over a slice of the zip, access points stored under
 * "ZIP@OFFSET:NAME").  Zips inside tars are plain files.
 *
 * Nested compressed tars (tarindex_znest.c): a member named "*.tar.gz",
 * "*.tgz", "*.tar.xz", "*.txz", "*.tar.zst", "*.tzst", "*.tar.bz2" or
 * "*.tbz2" (tar_archive_suffix) whose bytes decompress to a tar is
 * expanded like a nested tar ("a/b.tar.gz" becomes "a/b", or stays
 * "a/b.tar.gz/" on a clash), within `recursive` levels.  Its members
 * live in a derived source: the member's bytes as a slice of the source
 * holding it, decompressed (io/slice.h, io/zsource.h), numbered after the
 * caller's sources and opened by tarindex_open (its access points come
 * from the store, so a remount decompresses nothing).  Such members are
 * never spliced (no descriptor).  A build that meets one keeps no
 * checkpoint from there on.  A damaged stream keeps the members before
 * the damage; reads of damaged spans give EIO (said by zsource, naming
 * the archive, the member's offset and its path).
 *
 * Checksums (-o checksums; tarindex_sums.c): a build given them reads
 * every byte of the members that are one plain range of a source given
 * (not sparse, not zip members, whose CRC-32 zipread checks, nor members
 * of nested compressed tars, whose streams check their own) and keeps
 * their CRC32C, 4 bytes a node, and for members over 1 MiB one per
 * 64 KiB piece too (4 bytes per 64 KiB).  Mounted
 * with them, tarindex_pread checks what it serves of such a member before
 * it answers: a read of a member up to 1 MiB reads the whole member and
 * checks it (and keeps it, checked, for its next ranged reads: a member
 * read in 128 KiB READs is read and checked once); of a larger one, the
 * 64 KiB pieces the read touches.  A
 * mismatch reads the bytes again once past every cache (source_refetch:
 * the bad copies are replaced), and if they still fail (or the source
 * is a local file, which has no other copy to read) the read gives EIO,
 * said naming the member, the source and the offset, and the copies the
 * refetch left in the caches are dropped (source_forget: the next read
 * fetches anew); both are counted (source_stats).  Such members are never read in place (spliced).
 *
 * cpio and ar archives and ISO 9660 images (formats/arcwalk.h, walked by
 * tarindex_build.c as a zip's members are) are trees the same way, their
 * members read in place like a tar's; 7-Zip, RAR and tars compressed with
 * codecs samplefs has no row for are tars to it (io/codecs/arxsource.h).
 *
 * Not for: compressed tars as sources (core/io reads them as tars),
 * writing tars, deciding inode numbers (layouts do that, typically node
 * number + a constant).
 */
#ifndef SFS_TARINDEX_H
#define SFS_TARINDEX_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "index/index.h"
#include "formats/tar.h"
#include "io/source.h"
#include "search.h"

struct lru;

enum tarindex_type {
	TARINDEX_DIR = 1,
	TARINDEX_FILE = 2,
	TARINDEX_SYMLINK = 3,
};

/* Bounds that keep a hostile archive from exhausting memory at build time. */
#define TARINDEX_MAX_NODES   (1u << 26)      /* members + directories */
#define TARINDEX_MAX_SOURCES (1u << 20)
#define TARINDEX_MAX_SIZE    ((1ull << 40) - 1) /* larger members: skipped */
#define TARINDEX_MAX_NEST    32              /* cap on `recursive` */

/* meta bit 43: a file whose data is a sparse map (tarindex_sparse_of) */
#define TARINDEX_SPARSE_BIT (1ull << 43)

/* One node as stored on disk (little-endian host assumed, as the index is). */
struct tarindex_node {
	uint32_t name;   /* byte offset of the NUL-terminated name in the pool */
	uint32_t mtime;  /* seconds since the epoch, clamped to [0, 2^32) */
	/* file: absolute data offset in its source; dir: node number of the
	 * first child; symlink: offset of the NUL-terminated target in pool */
	uint64_t off;
	/* bits 0-39: file size, number of children (dir), target length
	 * (symlink); bits 40-42: enum tarindex_type; bit 43: sparse file;
	 * bits 44-63: source number.  A sparse file's `off` is where its
	 * stored chunks start. */
	uint64_t meta;
};

static inline enum tarindex_type tarindex_node_type(const struct tarindex_node *n)
{
	return (enum tarindex_type)((n->meta >> 40) & 0x7);
}
static inline int tarindex_node_sparse(const struct tarindex_node *n)
{
	return (n->meta & TARINDEX_SPARSE_BIT) != 0;
}
static inline uint64_t tarindex_node_size(const struct tarindex_node *n)
{
	return n->meta & TARINDEX_MAX_SIZE;
}
static inline uint32_t tarindex_node_src(const struct tarindex_node *n)
{
	return (uint32_t)(n->meta >> 44);
}

/* A sparse file node's map: chunks map[0 .. nchunks - 1] of the chunk
 * section, and map[nchunks] = {file size, stored bytes}. */
struct tarindex_sparse {
	uint32_t node;
	uint32_t nchunks;
	uint64_t map;
};

/* One data chunk of a sparse file: bytes from `off` in the file are at
 * `data` past the node's `off` in its source, up to the next chunk's
 * `data`; from there to the next chunk's `off` is a hole. */
struct tarindex_chunk {
	uint64_t off, data;
};

/* A file node with other names (hard links): the group's lowest node
 * number and how many nodes it has. */
struct tarindex_hardlink {
	uint32_t node, first, nlink;
};

/* A file member of a zip source (section TAG(c, 'Z', 'P'), sorted by src
 * then off): the file node whose source is `src` and whose `off` is this
 * one holds this member's data (its size is the uncompressed size;
 * members of other methods or encrypted are listed too, so their reads
 * fail). */
struct tarindex_zip {
	uint64_t off, csize;
	uint32_t src, crc32;
	uint16_t method, flags;  /* as zip has them (ZIP_METHOD_BAD_SIZES) */
	uint32_t pad;
};

/* Where a source tar goes in the tree. */
struct tarindex_source {
	const char *path;  /* the tar file: a path or URL */
	const char *dir;   /* "" = its members at the root, else a relative
			    * directory path such as "train" */
	struct source *src; /* open (tarindex_sources_open), else NULL */
};

/*
 * Opens every source not open yet, in env (NULL: local paths only).  0, or
 * -errno with a message naming the one that failed (those opened stay
 * open: tarindex_sources_close closes them).  They are opened once, for
 * the fingerprint, the build and the mount alike.
 */
int tarindex_sources_open(struct source_env *env, struct tarindex_source *src,
			  size_t nsrc);
void tarindex_sources_close(struct tarindex_source *src, size_t nsrc);

struct tarindex_build_opts {
	uint32_t recursive; /* levels of nested tars to expand (0 = none) */
	int quiet;          /* no progress display */
	const char *what;   /* progress label, e.g. "indexing tar" */
	int checksums;      /* -o checksums: read every member's bytes for
			     * their CRC32C (see "Checksums" above) */
};

/*
 * Bytes each of the build's sorts holds in memory before it spills sorted
 * runs to scratch files next to the index (unlinked at once): the peak is
 * about 1.6 times this, whatever the member count.  The environment's
 * SAMPLEFS_BUILD_MEM (bytes, at least 4096) overrides it, for tests that
 * make the build spill.
 */
#define TARINDEX_BUILD_MEM ((size_t)64 << 20)

/*
 * Adds to `fp` what a tarindex of these (open) sources depends on: each
 * source's name and stamp, its directory, and `recursive`.  0, or -EBADF
 * when a source is not open.
 */
int tarindex_fp_add(struct index_fp *fp, const struct tarindex_source *src,
		    size_t nsrc, uint32_t recursive);

/*
 * Reads the headers of every (open) source, seeking over member data, and writes
 * the tarindex sections with prefix `tag_prefix_char` into `w`.  The caller
 * commits or aborts `w`.  Corrupt or truncated sources keep the members
 * before the damage (with a warning); a source that cannot be opened or is
 * not a tar at all is an error.  0 or -errno (message printed).
 */
int tarindex_build(struct index_writer *w, uint32_t tag_prefix_char,
		   const struct tarindex_source *src, size_t nsrc,
		   const struct tarindex_build_opts *bo);

/* A mounted tarindex: views into the map plus the open sources. */
struct tarindex {
	const struct tarindex_node *nodes;
	uint32_t nnodes;
	const uint32_t *dirs;    /* directory node numbers, increasing */
	uint32_t ndirs;
	const char *pool;
	uint64_t pool_len;
	uint32_t nsrc;           /* source numbers: the caller's, then derived */
	uint32_t ntop;           /* the caller's sources */
	const uint64_t *src_sizes;       /* sizes at build time, from the map */
	const struct tarindex_sparse *sparse;   /* by node number */
	uint32_t nsparse;
	const struct tarindex_chunk *chunks;
	uint64_t nchunks;
	const struct tarindex_hardlink *hardlinks;	/* by node number */
	uint32_t nhardlinks;
	const struct tarindex_zip *zips;        /* sorted by (src, off) */
	uint64_t nzips;
	/* reads of deflated members: its own locks (zipread.h); NULL when
	 * there are none */
	struct zipread *zr;
	/* srcs[source number]: the caller's, then the derived sources
	 * (nested compressed tars), which are the tarindex's own */
	struct source **srcs;
	uint64_t nfiles;         /* regular files */
	uint64_t total_bytes;    /* sum of regular file sizes */
	uint32_t nsymlinks;      /* symlink nodes */
	/* the members' CRC32C (-o checksums: tarindex_sums.c), NULL when
	 * the index has none; pieces of the large ones */
	const uint32_t *sums;
	const struct tarindex_pieced *pieced;
	uint32_t npieced;
	const uint32_t *piece_sums;
	uint64_t npiece_sums;
	uint64_t nsummed;        /* file nodes checksummed */
	/* members up to 1 MiB read whole and checked for a ranged read,
	 * kept for the member's next reads (the mount's cache memory,
	 * "checked members"); NULL without checksums */
	struct lru *checked_members;
	const struct index_map *map;	/* for index_map_check */
	uint8_t *checked;        /* by node number, one bit: a directory whose
				  * children have been checked */
};

/*
 * Maps the sections with prefix `tag_prefix_char` in `m`, checking the
 * small ones (the nodes and names are checked a directory at a time, as
 * they are used: see above), and takes the open sources, which must be the same list, in the same
 * order, as at build time, and opens the derived ones (nested compressed
 * tars) on them.  -EBADMSG when the sections are missing or
 * inconsistent, or a source's size is not the one indexed (rebuild).
 * The map and the sources must outlive the tarindex.
 */
int tarindex_open(struct tarindex *t, const struct index_map *m,
		  uint32_t tag_prefix_char, const struct tarindex_source *src,
		  size_t nsrc);
/* Frees what tarindex_open allocated; the map and sources are the caller's. */
void tarindex_close(struct tarindex *t);

/*
 * The open source of source number `src`.  tarindex_pread checks it with
 * source_check after reading; anything that reads it otherwise (a splice
 * through its descriptor) must call source_check before.  Limits: a
 * change between that check and a splice still goes out, and a same-size
 * rewrite within the file system's mtime granularity of the open is not
 * seen.
 */
/* How many of the n increasing numbers a[] are below x (binary search):
 * node lists (the directories, the hidden symlinks) are such arrays. */
static inline uint32_t tarindex_count_below(const uint32_t *a, uint32_t n,
					    uint64_t x)
{
	return SFS_PARTITION_POINT(uint32_t, 0, n, i, a[i] < x);
}

static inline struct source *tarindex_src(const struct tarindex *t, uint32_t src)
{
	return t->srcs[src];
}

#define TARINDEX_ROOT 0u

/* Node i, as it is: checked when its directory was first listed or looked
 * up in (tarindex_children); a caller that has node numbers from
 * elsewhere (its own sections) checks them with tarindex_node_check. */
static inline const struct tarindex_node *tarindex_node(const struct tarindex *t,
							uint32_t i)
{
	return &t->nodes[i];
}
/* Checks node i (i < nnodes), its name and a symlink's target: 0, -EIO
 * when their index blocks are damaged (said), -EBADMSG when they are out
 * of bounds (said). */
int tarindex_node_check(const struct tarindex *t, uint32_t i);
static inline const char *tarindex_name(const struct tarindex *t, uint32_t i)
{
	return t->pool + t->nodes[i].name;
}

/*
 * Children of directory `dir`: node numbers *first .. *first + *count - 1,
 * in name order, checked (the first call for a directory checks them).
 * 0, -ENOTDIR, or -EIO when the index is damaged there (said).
 */
int tarindex_children(const struct tarindex *t, uint32_t dir, uint32_t *first,
		      uint32_t *count);
/* Child `name` of `dir`: its node number (>= 0), -ENOENT, -ENOTDIR or
 * -EIO (tarindex_children). */
int64_t tarindex_lookup(const struct tarindex *t, uint32_t dir, const char *name);
/* Node at "a/b/c" ("" = root; no leading '/'), or -ENOENT / -ENOTDIR. */
int64_t tarindex_find(const struct tarindex *t, const char *path);
/* Parent directory of node i (the root is its own parent). */
uint32_t tarindex_parent(const struct tarindex *t, uint32_t i);
/*
 * Whether member m of the tar `src` is one the index expands as a
 * nested tar (depth permitting): not sparse, a name "*.tar" whose base is
 * at least 5 bytes, and data that starts with a valid tar header.  Any other member
 * is a plain file.
 */
int tarindex_member_is_tar(struct source *src, const struct tar_member *m);
/* Symlink target of node i (NUL-terminated, *len bytes) or NULL. */
const char *tarindex_link(const struct tarindex *t, uint32_t i, uint64_t *len);
/*
 * The symlink nodes that, followed as the kernel would inside this tree,
 * climb above the root at some point: their numbers, increasing, in *out
 * (malloc'ed; NULL when none), how many in *n.  0 or -ENOMEM.  The build
 * skips links whose target leaves on its own; this finds the ones that
 * leave through other links (`up -> ..` is inside, `out -> up/../..` is
 * not).  A target that goes nowhere (a missing name, a file with more to
 * come, over 40 links, a loop) does not leave.  Work: the targets' length
 * (each link is followed once for all), not 40 targets per link.
 */
int tarindex_escaping_links(const struct tarindex *t, uint32_t **out, uint32_t *n);

/* The hard link group of file node i, or NULL when it has one name. */
const struct tarindex_hardlink *tarindex_hardlink(const struct tarindex *t,
						 uint32_t i);
/* Bytes of file node i its source stores: its size, or a sparse file's
 * data chunks (the holes are stored nowhere). */
uint64_t tarindex_stored(const struct tarindex *t, uint32_t i);

/* 1 if file node i has a checksum that its reads are checked against
 * (the index has them, and i is a plain range of a source given). */
int tarindex_summed(const struct tarindex *t, uint32_t i);
/* How many file nodes have checksums (0: the index has none). */
uint64_t tarindex_nsummed(const struct tarindex *t);

/* 1 if file node i is a zip member (its bytes go through zipread, which
 * checks their CRC-32); else 0. */
int tarindex_zipped(const struct tarindex *t, uint32_t i);
/* 1 if file node i's bytes may be read (spliced) in place as one range of
 * its source: a file, not sparse, and not a zip member unless a stored one
 * whose CRC-32 has matched (zipread_in_place); else 0. */
int tarindex_in_place(const struct tarindex *t, uint32_t i);

/*
 * Reads up to `size` bytes at `off` of file node i (a sparse file's holes
 * read as zeros): bytes read (short only at the end of the member), -EISDIR / -EINVAL for non-files, -EIO when the
 * source is shorter than the index says (truncated or changed since), or
 * a deflated member's data is bad (zipread.h: named in a message).
 */
ssize_t tarindex_pread(const struct tarindex *t, uint32_t i, void *buf,
		       size_t size, uint64_t off);
/* tarindex_pread without its change check after reading: *from is the
 * source read (set when bytes were), whose source_check is the caller's,
 * once after the last of many reads and before any byte is served.  For
 * a virtual shard's reply of hundreds of members: a check each was an
 * fstat each, 7 % of a streamed shard's CPU at 3 KB members. */
ssize_t tarindex_pread_unchecked(const struct tarindex *t, uint32_t i, void *buf,
				 size_t size, uint64_t off, struct source **from);

#endif
