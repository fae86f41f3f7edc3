/*
 * ops.h - the FUSE low-level operations of samplefs.  Each one translates a
 * request into calls on the mounted struct layout and replies; none knows
 * any file format.
 */
#ifndef SFS_FS_OPS_H
#define SFS_FS_OPS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "ctl.h"
#include "devpoll.h"
#include "inval.h"
#include "layouts/layout.h"
#include "opts.h"
#include "rdplus.h"
#include "workers.h"

/* The session's userdata.  Filled before mounting, read-only afterwards
 * but for io, rdp, inval and ctl, which lock themselves. */
struct zpool;

struct sfs_fs {
	struct fs_opts opts;	/* opts.core is what the layout was opened with */
	struct layout layout;
	uid_t uid;		/* of the mounting user, for every inode */
	gid_t gid;
	double timeout;		/* entry and attr timeouts: nothing changes */
	struct devpoll dp;	/* -o poll: how the session thread reads */
	struct workers *io;	/* reads that wait for the disk; NULL: inline */
	int adaptive;		/* listings' attributes chosen by rdp (RDPLUS_ADAPTIVE) */
	struct rdplus rdp;	/* locks itself */
	struct inval inval;	/* locks itself */
	struct ctl ctl;		/* the control directory; counts lock-free,
				 * locks its documents */
	struct zpool *replies;	/* buffers of copied read replies over
				 * STACK_READ (read.c), reused; locks itself */
	size_t pipe_max;	/* the largest pipe, found at init (ops.c's
				 * pipe_limit): the largest reply libfuse
				 * can splice (read.c) */
};

extern const struct fuse_lowlevel_ops sfs_ll_ops;

#endif
