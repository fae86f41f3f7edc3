/*
 * layout.h - the contract between a layout (a virtual tree built from a
 * source) and the FUSE layer.
 *
 * A layout owns an index and answers questions by inode number.  It knows
 * nothing of FUSE: fs/ops.c translates requests into these calls and replies.
 * Inode numbers are computed by the layout from what a node is (e.g. class,
 * sample, kind), never allocated per lookup, so the FUSE layer keeps no inode
 * table and `forget` is a no-op.  SFS_ROOT_INO (1) is the root directory;
 * every layout numbers its nodes in the one scheme below (SFS_INO).
 *
 * Threads: after *_open returns, every op may be called from many threads at
 * once.  A layout's own mutable state (caches) must be locked by the layout.
 *
 * The table of layouts, detection and opening by name: layouts.h.
 *
 * Errors: ops return 0 / a byte count, or a negative errno.  -ENOENT for an
 * unknown name or inode, -EIO when the source cannot give the right bytes
 * (truncated, changed while mounted, corrupt block): never wrong bytes.
 */
#ifndef SFS_LAYOUT_H
#define SFS_LAYOUT_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "options.h"
#include "io/source.h"

#define SFS_ROOT_INO 1

/*
 * Inode numbers, one scheme for every layout: bits 56-63 say a kind of
 * node, bits 0-55 which one.  Kind 0 holds SFS_ROOT_INO and what a layout
 * numbers from 2 up (its fixed files and directories, or all of its nodes:
 * a tar's node i is 1 + i); kinds 1 to SFS_INO_KIND_MAX are the layout's
 * own (a class directory, a sample, a shard, ...).  Kind SFS_INO_KIND_CTL
 * is reserved for the FUSE layer's control directory: no layout hands out
 * an inode of that kind, and all of them answer -ENOENT for one.
 */
#define SFS_INO_KIND_SHIFT 56
#define SFS_INO(kind, idx) ((uint64_t)(kind) << SFS_INO_KIND_SHIFT | (uint64_t)(idx))
#define SFS_INO_KIND(ino) ((uint32_t)((ino) >> SFS_INO_KIND_SHIFT))
#define SFS_INO_IDX(ino) ((ino) & ((UINT64_C(1) << SFS_INO_KIND_SHIFT) - 1))
#define SFS_INO_KIND_MAX 0xfeu
#define SFS_INO_KIND_CTL 0xffu

struct sfs_attr {
	uint64_t ino;
	uint32_t mode;    /* S_IFDIR | 0555, S_IFREG | 0444 or S_IFLNK | 0777 */
	uint32_t nlink;   /* 1 for files (or their names: hard links); 2 +
			   * subdirectories for directories */
	uint64_t size;    /* exact byte size the reads will produce */
	int64_t  mtime;   /* seconds since the epoch (the source's mtime) */
	uint64_t hole;    /* bytes of size stored nowhere (a sparse file's
			   * holes, which st_blocks leaves out); else 0 */
};

/*
 * readdir callback: called once per entry in directory order.  `cookie` is
 * the value to pass back as `off` to continue *after* this entry.  Returns
 * nonzero when the reply buffer is full; the layout must then stop at once
 * (that entry was not taken and will be asked for again).
 */
typedef int (*sfs_fill_fn)(void *arg, const char *name,
			   const struct sfs_attr *attr, uint64_t cookie);

struct layout_ops {
	const char *name;
	/* 1 when a directory is a list of samples that loaders list and then
	 * read in full (glob, then np.load of each); 0 for trees that are
	 * mostly browsed (find, ls).  The FUSE layer uses it to choose whether
	 * a listing gives every entry its attributes. */
	int listed_then_read;
	/* attributes of an inode */
	int (*getattr)(void *priv, uint64_t ino, struct sfs_attr *out);
	/* child `name` of directory `parent`; -ENOENT if none, -ENOTDIR */
	int (*lookup)(void *priv, uint64_t parent, const char *name,
		      struct sfs_attr *out);
	/* entries of `dir` from position `off` (0 = first entry; "." and ".."
	 * are added by the FUSE layer, not by the layout) */
	int (*readdir)(void *priv, uint64_t dir, uint64_t off,
		       sfs_fill_fn fill, void *arg);
	/* up to `size` bytes at `off` into buf; returns bytes (short only at
	 * end of file) or -errno */
	ssize_t (*read)(void *priv, uint64_t ino, char *buf, size_t size,
			uint64_t off);
	/* optional (may be NULL): when a file's bytes are one contiguous range
	 * of a source, say which, so the FUSE layer can splice (if the source
	 * has a descriptor: source_fd).  Returns 0 and sets *src / *base (the
	 * source offset of byte 0), -ENOTSUP, or -EIO when the source changed
	 * since mounting (source_check).
	 * The one gap in "never wrong bytes": a change between this check
	 * and the splice goes out (the bytes are not copied, so there is
	 * nothing to check after); docs/limitations.md says so. */
	int (*extent)(void *priv, uint64_t ino, struct source **src,
		      uint64_t *base);
	/* optional: symlink target into buf (NUL-terminated); -EINVAL if not */
	int (*readlink)(void *priv, uint64_t ino, char *buf, size_t size);
	/* optional: the tars the tree is read from, for samplefs-inspect
	 * --verify: up to max of their names (owned by the layout) and the
	 * nested tar levels each expands; returns how many there are (max 0:
	 * only that).  NULL for layouts with no tars behind them (their tree
	 * is read instead). */
	size_t (*tars)(void *priv, const char **names, uint32_t *depth,
		       size_t max);
	/* optional: how many files have checksums their reads are checked
	 * against (-o checksums: tarindex.h), for samplefs-inspect --verify's
	 * scrub; NULL or 0: none */
	uint64_t (*checksummed)(void *priv);
	/* number of virtual inodes and total bytes, for statfs */
	void (*statfs)(void *priv, uint64_t *files, uint64_t *bytes);
	void (*destroy)(void *priv);
};

struct layout {
	const struct layout_ops *ops;
	void *priv;
	/* the mount's source environment (connections, caches), made from
	 * o->remote by layout_open, freed by layout_close after the layout */
	struct source_env *env;
};

/* Each layout's constructor and detection (core/layouts/layout_<name>.c,
 * imagenet_files.h), for the table. */
int layout_quickdraw_open(const struct sfs_opts *o, struct source_env *env,
			  struct layout *out);
int layout_npy_open(const struct sfs_opts *o, struct source_env *env,
		    struct layout *out);
/* The length of name's shard suffix (".tar", ".zip": layout_tar.c's one
 * table), or 0 when it is no shard of layout=tar. */
size_t layout_tar_shard_suffix(const char *name);
int layout_tar_open(const struct sfs_opts *o, struct source_env *env,
		    struct layout *out);
int layout_imagenet_open(const struct sfs_opts *o, struct source_env *env,
			 struct layout *out);
int layout_quickdraw_detect(struct source_env *env, const char *source,
			    const struct source_info *info);

#endif
