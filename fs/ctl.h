/*
 * ctl.h - the control directory, MOUNT/.samplefs/: what the mount has done
 * since it started, and how it was mounted, as read-only files.
 *
 *     stats.json  counters: FUSE requests by op, bytes served, replies
 *                 spliced or copied, the sizes READs asked for, reads
 *                 that waited and their latency histogram, the sources' requests, retries, errors and
 *                 cache hits (core/io: source_env_stats), index build time
 *     metrics     the same in Prometheus' text format
 *     config      the options in force (fs/opts.h: sfs_opts_print)
 *     version     samplefs's version
 *
 * The directory is reachable by name but absent from the root's listing,
 * as .snapshot on NFS filers.  When the dataset has a member of that name
 * at its root, the member keeps it and the control directory is
 * .samplefs-ctl (a warning at mount names the clash); when that is taken
 * too, there is none.  Inodes are of kind SFS_INO_KIND_CTL
 * (core/layouts/layout.h), which no layout hands out.
 *
 * Contents: stats.json and metrics are made anew at a LOOKUP of their
 * name, each snapshot under an inode of its own (ctl.c: SNAP_INO): the
 * kernel's pages and size of one snapshot never serve another, whatever
 * was listed, stat'ed or read before.  A lookup hands out the latest
 * snapshot again while no READ has been served from it and it is younger
 * than CTL_REUSE_NS (cp stats, opens, and wants the same inode), else a
 * new one.  The entries time out at once, so each open looks the name up
 * again and gets a snapshot made after the last one read; a listing of the directory hands out no inode
 * (readdirplus entries without attributes), as it would otherwise leave
 * entries the next open trusts without a lookup.  Opens are not sent to
 * us (ops.c answers ENOSYS once for all files), hence a new inode rather
 * than direct_io.  A snapshot is freed at its FORGET, or when CTL_SNAPS
 * newer ones have been made: a read of one that old answers ESTALE.
 * config and version never change: made once, at one inode each.
 *
 * Counters: one slot per thread (claimed at its first count, CTL_SLOTS at
 * most; threads past that share one slot, with atomic adds), each written
 * by its own thread only, with relaxed loads and stores: no locked
 * instruction or shared cache line on the read path.  A snapshot sums the
 * slots; each counter is exact, the set is not one instant's.
 *
 * Threads: counting from any request thread; the snapshots under `lock`.
 * Not for: anything a layout serves, or writing (every write is EROFS).
 */
#ifndef SFS_FS_CTL_H
#define SFS_FS_CTL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "layouts/layouts.h"
#include "opts.h"

#define CTL_NAME       ".samplefs"
#define CTL_NAME_CLASH ".samplefs-ctl"	/* when the dataset has CTL_NAME */
#define CTL_SLOTS      128
#define CTL_SNAPS      256	/* snapshots kept at most (see Contents) */
#define CTL_REUSE_NS   1000000000LL	/* an unread snapshot this young is reused */
#define SAMPLEFS_VERSION "0.1"

/* The FUSE requests counted, by op. */
enum ctl_op {
	CTL_LOOKUP, CTL_FORGET, CTL_GETATTR, CTL_READLINK, CTL_OPEN, CTL_READ,
	CTL_READDIR, CTL_READDIRPLUS, CTL_STATFS, CTL_XATTR, CTL_DENIED,
	CTL_NOPS
};

/* Upper bounds of the wait histogram's buckets, in microseconds; the last
 * bucket is everything above. */
#define CTL_HIST 6
extern const uint64_t ctl_hist_us[CTL_HIST - 1];

/* Upper bounds of the buckets of READ request sizes (what the kernel
 * asked, in bytes): 128 KiB is a FUSE mount's read-ahead window by default,
 * 1 MiB libfuse 3.14's largest READ (fs/readahead.h). */
#define CTL_RSIZE 6
extern const uint64_t ctl_rsize[CTL_RSIZE - 1];

struct ctl_slot {
	_Atomic uint64_t ops[CTL_NOPS];
	_Atomic uint64_t bytes, spliced, copied, files, read_errors;
	_Atomic uint64_t waits, wait_ns, hist[CTL_HIST];
	_Atomic uint64_t rsize[CTL_RSIZE], asked;	/* READs by size, their bytes */
	int shared;		/* the overflow slot: atomic adds */
} __attribute__((aligned(64)));

enum { CTL_DIR, CTL_STATS, CTL_METRICS, CTL_CONFIG, CTL_VERSION, CTL_NFILES };

struct ctl_doc {
	char *buf;
	size_t len;
};

/* A snapshot of stats.json or metrics, at inode SNAP_INO(serial) (ctl.c). */
struct ctl_snap {
	uint64_t serial;	/* 0: free */
	unsigned file;		/* CTL_STATS or CTL_METRICS */
	struct ctl_doc doc;
	uint64_t nlookup;	/* lookups handed out less those forgotten */
	int read;		/* a READ was served from it */
	int64_t made_ns;	/* sfs_now_ns when made */
};

struct ctl {
	const char *name;	/* CTL_NAME, CTL_NAME_CLASH or NULL: none */
	const struct fs_opts *opts;
	const struct layout *layout;
	int64_t start_ns;	/* sfs_now_ns at ctl_init */
	double build_s;		/* layout_open's time: the index build */
	_Atomic unsigned nslots;
	struct ctl_slot slots[CTL_SLOTS];
	struct ctl_slot shared;
	pthread_mutex_t lock;	/* guards docs, snaps and next_serial */
	struct ctl_doc docs[CTL_NFILES];	/* config and version */
	struct ctl_snap snaps[CTL_SNAPS];	/* serial s in snaps[s % CTL_SNAPS] */
	uint64_t next_serial;
	uint64_t latest[CTL_NFILES];	/* each file's newest snapshot's serial */
};

/* After layout_open (which took build_s): looks for the name clash (and
 * warns), makes config and version.  0 or -ENOMEM. */
int ctl_init(struct ctl *c, const struct layout *layout,
	     const struct fs_opts *opts, double build_s);
void ctl_destroy(struct ctl *c);

/* ---- counting (any request thread) ---- */

struct ctl_slot *ctl_slot_claim(struct ctl *c);

/* The calling thread's slot. */
static inline struct ctl_slot *ctl_slot(struct ctl *c)
{
	extern _Thread_local struct ctl_slot *ctl_my_slot;

	return ctl_my_slot ? ctl_my_slot : ctl_slot_claim(c);
}

static inline void ctl_add(struct ctl_slot *s, _Atomic uint64_t *f, uint64_t n)
{
	if (s->shared)
		atomic_fetch_add_explicit(f, n, memory_order_relaxed);
	else
		atomic_store_explicit(f, atomic_load_explicit(f, memory_order_relaxed) + n,
				      memory_order_relaxed);
}

static inline void ctl_op(struct ctl *c, enum ctl_op op)
{
	struct ctl_slot *s = ctl_slot(c);

	ctl_add(s, &s->ops[op], 1);
}

/* A READ asked for `size` bytes (counted by size: read_size_hist). */
void ctl_read_asked(struct ctl *c, size_t size);
/* A read answered: n bytes (0 with err), spliced or copied, from off. */
void ctl_read_done(struct ctl *c, uint64_t off, size_t n, int spliced, int err);
/* A read that waited (handed to a worker) took ns from its request. */
void ctl_waited(struct ctl *c, int64_t ns);

/* ---- the directory (ops.c and read.c call these for kind SFS_INO_KIND_CTL) ---- */

/* 1 if ino is the control directory's or one of its files'. */
static inline int ctl_is(uint64_t ino)
{
	return SFS_INO_KIND(ino) == SFS_INO_KIND_CTL;
}
/* 1 if (parent, name) names the control directory itself. */
int ctl_is_dir_name(const struct ctl *c, uint64_t parent, const char *name);

/* The control directory's attributes (ino 0), or one file's in it by name
 * (stats.json and metrics: a new snapshot at a new inode).  0, -ENOENT or
 * -ENOMEM. */
int ctl_lookup(struct ctl *c, uint64_t parent, const char *name,
	       struct sfs_attr *out);
int ctl_getattr(struct ctl *c, uint64_t ino, struct sfs_attr *out);
/* The kernel forgot nlookup lookups of ino: a snapshot's is freed at 0. */
void ctl_forget(struct ctl *c, uint64_t ino, uint64_t nlookup);
/* 1 if a listing may hand out ino's entry (not a snapshot's file). */
int ctl_listed_link(uint64_t ino);
int ctl_readdir(struct ctl *c, uint64_t ino, uint64_t off, sfs_fill_fn fill,
		void *arg);
/* Copies up to size bytes at off of the file's snapshot: their number, or
 * -errno (-ESTALE: a snapshot no longer kept). */
ssize_t ctl_read(struct ctl *c, uint64_t ino, char *buf, size_t size,
		 uint64_t off);

#endif
