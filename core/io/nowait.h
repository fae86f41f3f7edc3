/*
 * nowait.h - reads that give up instead of waiting for the disk.
 *
 * The FUSE layer serves requests on one polling thread and hands the few
 * that need the disk to worker threads (fs/workers.c).  To know which, it
 * first runs a read in no-wait mode: every source read on the way goes
 * through nowait_pread, which then uses preadv2(RWF_NOWAIT) and fails with
 * EAGAIN when the bytes are not in the page cache.  Callers pass -EAGAIN up
 * untouched and log nothing for it: it is not an error, only "retry where
 * waiting is allowed".
 *
 * The mode is per thread (a thread-local flag, never shared), so layouts
 * need no extra argument and stay unaware of threads.  It is the one piece
 * of mutable state outside the mount context, on purpose: it belongs to
 * the thread running a request, not to any mount.
 */
#ifndef SFS_NOWAIT_H
#define SFS_NOWAIT_H

#include <sys/types.h>

/* Turns no-wait mode on or off for the calling thread. */
void nowait_set(int on);

/* pread(2), except that in no-wait mode it returns -1 with errno EAGAIN
 * rather than wait for I/O.  In that mode it reads all n bytes, or fewer only
 * at end of file, or fails with EAGAIN. */
ssize_t nowait_pread(int fd, void *buf, size_t n, off_t off);

#endif
