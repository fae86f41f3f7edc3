/*
 * lock.c - the build lock of an index (see lock.h for the contract).
 *
 * The protocol, for daemons on one machine or on many sharing an index
 * directory over NFS (no lock manager needed, clocks need not agree):
 *
 *  1. Take: create "<index>.lock" with O_CREAT | O_EXCL (atomic on local
 *     file systems and on NFSv3+), write "pid P on HOST" into it for the
 *     others' messages, and start the heartbeat: a thread that sets the
 *     lock's mtime to now (futimens) every second while we build.
 *  2. Wait: when the lock exists, open it and fstat it every 100 ms (an
 *     open revalidates NFS's cached attributes: close-to-open).  A lock
 *     whose inode or mtime changed since the last look is alive; one that
 *     has not changed for stale_s seconds of *our* monotonic clock is dead
 *     (its holder was killed, or its machine is gone): we compare mtimes
 *     with mtimes, never with our clock, so skewed clocks do not matter.
 *  3. Break: a dead lock is renamed to a name of our own (atomic), then
 *     checked to be the very file judged dead (same inode, same mtime) and
 *     removed; if it is not (a new holder created it in between) it is
 *     put back with link(2), which fails rather than overwrite a lock yet
 *     another daemon created meanwhile.  Then we try to take it (1).
 *  4. Release: the holder renames the finished index into place first,
 *     then removes the lock (if it is still its own).  A waiter that sees
 *     the lock gone maps the index; if that fails (the holder failed) it
 *     takes the lock itself and builds.
 *
 * Whatever happens, nobody maps a partial index: indexes are written to
 * temporary files and renamed into place whole (index.c), and the lock only
 * decides who does the work.  In the worst case (the narrow race of step 3,
 * or a holder stopped for stale_s and resumed) two daemons build, each its
 * own complete file, and the last rename wins, as without the lock.
 *
 * Not for: reading or checking index files.
 */
#include "index/lock.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "index/index.h"
#include "log.h"

#define POLL_MS 100
#define BEAT_S 1

struct index_lock {
	int fd;
	char *name;
	pthread_t beat;
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* signalled by release: stop beating */
	int stop;
	int slot;            /* in index.c's list for signal handlers, or -1 */
	dev_t dev;           /* the lock file we created */
	ino_t ino;
};

/* What a waiter sees of a lock. */
struct lock_seen {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char holder[128];
};

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void *heartbeat(void *arg)
{
	struct index_lock *lk = arg;
	struct timespec until;

	pthread_mutex_lock(&lk->mu);
	while (!lk->stop) {
		futimens(lk->fd, NULL);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += BEAT_S;
		while (!lk->stop &&
		       pthread_cond_timedwait(&lk->cv, &lk->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&lk->mu);
	return NULL;
}

/* Creates the lock file: 0 with lk->fd set, -EEXIST when someone holds
 * it, or another -errno (said). */
static int lock_create(struct index_lock *lk)
{
	char host[64] = "?", text[128];
	sigset_t all, old;
	int n;

	/* a stop signal removes the lock with the temporary index files
	 * (index_remove_unfinished): held until it is listed there */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	lk->fd = open(lk->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (lk->fd >= 0)
		lk->slot = index_unfinished_add(lk->name);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (lk->fd < 0) {
		int err = errno;

		if (err != EEXIST)
			sfs_err("%s: cannot create the index's build lock: %s%s", lk->name,
				strerror(err),
				err == EROFS || err == EACCES || err == EPERM ?
				" (-o index_dir=DIR: a writable directory)" : "");
		return -err;
	}
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	n = snprintf(text, sizeof(text), "pid %ld on %s\n", (long)getpid(), host);
	/* the text is for messages only: a short write costs nothing */
	if (write(lk->fd, text, (size_t)n) < 0)
		sfs_warn("%s: write: %s", lk->name, strerror(errno));
	return 0;
}

/* Looks at the lock: 0 with *s filled, -ENOENT when there is none. */
static int lock_look(const char *name, struct lock_seen *s)
{
	struct stat st;
	ssize_t n;
	int fd = open(name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->mtime = st.st_mtim;
	n = read(fd, s->holder, sizeof(s->holder) - 1);
	close(fd);
	s->holder[n > 0 ? n : 0] = '\0';
	s->holder[strcspn(s->holder, "\n")] = '\0';
	if (!s->holder[0])	/* created, not written yet */
		snprintf(s->holder, sizeof(s->holder), "another process");
	return 0;
}

static int same_lock(const struct lock_seen *a, const struct lock_seen *b)
{
	return a->dev == b->dev && a->ino == b->ino &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Breaks the lock judged dead from `dead` (step 3 of the protocol). */
static void lock_break(const char *name, const struct lock_seen *dead, unsigned stale_s)
{
	struct lock_seen moved;
	struct timespec ts;
	char *aside;

	/* a name of ours: pid and time, as pids repeat across machines */
	clock_gettime(CLOCK_REALTIME, &ts);
	if (asprintf(&aside, "%s.stale.%ld.%ld", name, (long)getpid(), (long)ts.tv_nsec) < 0)
		return;
	if (rename(name, aside) < 0)	/* ENOENT: broken or released already */
		goto out;
	if (lock_look(aside, &moved) == 0 && same_lock(&moved, dead)) {
		sfs_warn("%s: breaking the lock of %s: no heartbeat for %u s (a build "
			 "that died)", name, dead->holder, stale_s);
	} else if (link(aside, name) < 0 && errno != EEXIST) {
		sfs_warn("%s: cannot put back a live lock moved aside: %s", name,
			 strerror(errno));
	}
	unlink(aside);
out:
	free(aside);
}

static void lock_free(struct index_lock *lk)
{
	if (lk->fd >= 0)
		close(lk->fd);
	pthread_mutex_destroy(&lk->mu);
	pthread_cond_destroy(&lk->cv);
	free(lk->name);
	free(lk);
}

/* Waits while the lock of lk->name is held by a live holder: 1 when it
 * was let go, 0 when it was broken (take it now). */
static int lock_wait(struct index_lock *lk, const char *path, unsigned stale_s)
{
	struct lock_seen last, cur;
	double changed = sfs_now_s(), said = 0;
	int rc;

	if (lock_look(lk->name, &last) < 0)
		return 0;	/* gone before we looked: try to take it */
	for (;;) {
		if (!said || sfs_now_s() - said >= 30) {
			sfs_info("%s: waiting for %s, who is building it", path, last.holder);
			said = sfs_now_s();
		}
		nap_ms(POLL_MS);
		rc = lock_look(lk->name, &cur);
		if (rc == -ENOENT)
			return 1;
		if (rc < 0)	/* cannot look (NFS hiccup): as if unchanged */
			cur = last;
		if (!same_lock(&cur, &last)) {
			last = cur;
			changed = sfs_now_s();
		} else if (sfs_now_s() - changed >= stale_s) {
			lock_break(lk->name, &last, stale_s);
			return 0;
		}
	}
}

int index_lock_take(const char *path, unsigned stale_s, struct index_lock **out)
{
	struct index_lock *lk = calloc(1, sizeof(*lk));
	struct lock_seen me;
	pthread_condattr_t ca;
	int rc = -ENOMEM;

	*out = NULL;
	if (!lk)
		return -ENOMEM;
	lk->fd = -1;
	lk->slot = -1;
	pthread_mutex_init(&lk->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lk->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (asprintf(&lk->name, "%s.lock", path) < 0) {
		lk->name = NULL;
		goto out;
	}
	while ((rc = lock_create(lk)) == -EEXIST)
		if (lock_wait(lk, path, stale_s) == 1) {
			rc = 1;
			goto out;
		}
	if (rc < 0)
		goto out;
	if (lock_look(lk->name, &me) == 0) {	/* to remove only ours */
		lk->dev = me.dev;
		lk->ino = me.ino;
	}
	rc = -pthread_create(&lk->beat, NULL, heartbeat, lk);
	if (rc < 0) {
		sfs_err("%s: cannot start the lock's heartbeat: %s", lk->name, strerror(-rc));
		index_unfinished_drop(lk->slot);
		unlink(lk->name);
		goto out;
	}
	*out = lk;
	return 0;
out:
	lock_free(lk);
	return rc;
}

void index_lock_release(struct index_lock *lk)
{
	struct lock_seen cur;

	if (!lk)
		return;
	pthread_mutex_lock(&lk->mu);
	lk->stop = 1;
	pthread_cond_signal(&lk->cv);
	pthread_mutex_unlock(&lk->mu);
	pthread_join(lk->beat, NULL);
	/* ours still: not broken and retaken by another while we were stopped */
	index_unfinished_drop(lk->slot);
	if (lock_look(lk->name, &cur) == 0 && cur.dev == lk->dev && cur.ino == lk->ino)
		unlink(lk->name);
	lock_free(lk);
}
