/*
 * inval.c - the page-cache invalidation of inval.h: a walker thread, a
 * depth-first walk of the layout's tree, one notification per file.  Not a
 * general notifier: only pages, only after a change.
 */
#include "inval.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "io/source.h"
#include "log.h"

/* Directories still to list: a stack grown as needed. */
struct walk {
	struct inval *v;
	uint64_t *dirs;
	size_t n, cap;
	int nomem;
};

static int stopping(struct inval *v)
{
	int stop;

	pthread_mutex_lock(&v->lock);
	stop = v->stop;
	pthread_mutex_unlock(&v->lock);
	return stop;
}

/* Whether a file's bytes may hold a changed source's: unless the layout
 * says they are a range of a source that is unchanged. */
static int may_hold_changed(const struct layout *l, uint64_t ino)
{
	struct source *src;
	uint64_t base;

	return !l->ops->extent || l->ops->extent(l->priv, ino, &src, &base) != 0;
}

static int visit(void *arg, const char *name, const struct sfs_attr *a,
		 uint64_t cookie)
{
	struct walk *w = arg;
	uint64_t *d;

	(void)name;
	(void)cookie;
	if (S_ISDIR(a->mode)) {
		if (w->n == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 64;
			if (!(d = realloc(w->dirs, w->cap * sizeof(*d)))) {
				w->nomem = 1;
				return 1;
			}
			w->dirs = d;
		}
		w->dirs[w->n++] = a->ino;
	} else if (S_ISREG(a->mode) && may_hold_changed(w->v->layout, a->ino)) {
		/* -ENOENT: the kernel has no such inode cached, nothing to drop */
		fuse_lowlevel_notify_inval_inode(w->v->se, a->ino, 0, 0);
	}
	return 0;
}

/* One walk of the whole tree; 0, or -ENOMEM (said). */
static int walk_tree(struct inval *v)
{
	struct walk w = { .v = v };
	const struct layout *l = v->layout;
	uint64_t dir = SFS_ROOT_INO;
	int rc = 0;

	for (;;) {
		/* a layout's readdir gives all entries while visit takes them */
		l->ops->readdir(l->priv, dir, 0, visit, &w);
		if (w.nomem) {
			sfs_err("cannot drop the kernel's cached pages after a change: "
				"out of memory");
			rc = -ENOMEM;
			break;
		}
		if (!w.n || stopping(v))
			break;
		dir = w.dirs[--w.n];
	}
	free(w.dirs);
	return rc;
}

static void *walker(void *arg)
{
	struct inval *v = arg;

	pthread_mutex_lock(&v->lock);
	for (;;) {
		while (!v->pending && !v->stop)
			pthread_cond_wait(&v->more, &v->lock);
		if (v->stop)
			break;
		v->pending = 0;	/* changes seen from now on get a walk of their own */
		pthread_mutex_unlock(&v->lock);
		walk_tree(v);
		pthread_mutex_lock(&v->lock);
	}
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

void inval_init(struct inval *v, struct fuse_session *se,
		const struct layout *layout)
{
	v->se = se;
	v->layout = layout;
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->more, NULL);
	v->pending = 0;
	v->started = v->stop = 0;
	if (layout->env)
		source_env_on_change(layout->env, inval_changed, v);
}

void inval_changed(void *arg, const struct source *s)
{
	struct inval *v = arg;
	sigset_t all, old;

	(void)s;
	pthread_mutex_lock(&v->lock);
	v->pending++;
	if (!v->started && !v->stop) {
		/* signals go to the session thread, as for the workers */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		v->started = !pthread_create(&v->thread, NULL, walker, v);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_cond_signal(&v->more);
	pthread_mutex_unlock(&v->lock);
}

void inval_stop(struct inval *v)
{
	int started;

	if (!v->se)
		return;	/* never initialised */
	pthread_mutex_lock(&v->lock);
	v->stop = 1;
	started = v->started;
	pthread_cond_signal(&v->more);
	pthread_mutex_unlock(&v->lock);
	if (started)
		pthread_join(v->thread, NULL);
	/* no read runs now, and the walker is gone: nothing calls it */
	if (v->layout->env)
		source_env_on_change(v->layout->env, NULL, NULL);
	pthread_cond_destroy(&v->more);
	pthread_mutex_destroy(&v->lock);
}
