/*
 * lock.h - one builder per index among the daemons sharing an index
 * directory (local or NFS): a lock file next to the index, with a
 * heartbeat, so that of many daemons starting at once the first builds
 * (or fetches) the index and the others wait for it and map the result.
 * The protocol is described at the top of lock.c.
 *
 * Not for: what is built, or checking it (load.c maps only a renamed,
 * checksummed index, whoever wrote it); nor for locking sources.
 */
#ifndef SFS_INDEX_LOCK_H
#define SFS_INDEX_LOCK_H

/* A holder whose heartbeat has not moved for this long is dead. */
#define INDEX_LOCK_STALE_S 10

struct index_lock;

/*
 * Takes the build lock of the index file `path` ("<path>.lock"), waiting
 * while another process holds it and is alive (its heartbeat, the lock's
 * mtime, moves at least every stale_s seconds, on this process's clock);
 * a lock whose heartbeat stopped is broken, with a warning.
 *   0   held: *lk is set; the heartbeat runs until index_lock_release.
 *   1   another process held it and let it go (it built the index, or
 *       failed): map the index again, and take the lock if it still
 *       needs building.  *lk is NULL.
 *   -errno (said, naming the lock file): the lock cannot be created.
 */
int index_lock_take(const char *path, unsigned stale_s, struct index_lock **lk);

/* Stops the heartbeat, removes the lock file (if it is still ours) and
 * frees lk.  NULL is fine. */
void index_lock_release(struct index_lock *lk);

#endif
