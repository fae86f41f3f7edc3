/*
 * inval.h - once a source changed while mounted, drops the kernel's cached
 * pages of the files that may hold its bytes, so those read EIO like the
 * rest of the source (docs/choices.md: EIO until the unmount) instead of
 * being served from the page cache, which the kernel keeps across opens here.
 *
 * core/io calls inval_changed (source_env_on_change) where it first sees
 * a change, possibly inside a read of one of those very files, whose page
 * the kernel holds locked until the read is answered: invalidating there
 * would wait on itself.  So inval_changed only notes it, and a thread of
 * its own, started at the first change, walks the tree and sends
 * FUSE_NOTIFY_INVAL_INODE for every regular file but those whose bytes the
 * layout says are a range of a source that has not changed (extent): with
 * no extent op (Quick, Draw!, npy), every file.  A change is rare; a walk
 * of a 1.28 M-file tree takes about a second.
 *
 * Not for: attributes or names (they never change), or anything but pages.
 */
#ifndef SFS_FS_INVAL_H
#define SFS_FS_INVAL_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "layouts/layout.h"

struct inval {
	struct fuse_session *se;
	const struct layout *layout;	/* read only, as by any request */
	pthread_mutex_t lock;		/* guards the fields below */
	pthread_cond_t more;		/* a change, or stop */
	unsigned pending;		/* changes seen since the last walk began */
	int started, stop;
	pthread_t thread;
};

/* Before serving; registers inval_changed with the layout's env. */
void inval_init(struct inval *v, struct fuse_session *se,
		const struct layout *layout);
/* source_change_fn: notes the change and wakes (or starts) the walker. */
void inval_changed(void *arg, const struct source *s);
/* After the session loop: ends a walk early and joins the thread. */
void inval_stop(struct inval *v);

#endif
