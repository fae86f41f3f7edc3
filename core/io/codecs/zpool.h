/*
 * zpool.h - the span buffers of a mount's decompressing sources
 * (zsource.c): a bounded free list of equal buffers, so that the first
 * pass and read misses inflate into memory already faulted in instead of
 * a fresh 1 MiB malloc (mmap'ed and faulted page by page) per span.
 * Also the daemon's read replies that do not fit its stack (fs/read.c's
 * reply_get: any READ's, in a buffer of the largest), for the same
 * reason.
 *
 * Ownership: a buffer from zpool_get is plain malloc'ed memory holding
 * zpool_held(len) bytes: a pooled one of cap bytes when len is more than
 * 3/4 of cap and at most cap (a span, or most of one), else exactly len
 * (a short prefix of a span is not worth a whole buffer); whoever holds
 * it may free() it or give it back with zpool_put, with the length it
 * has now (a buffer realloc'ed since must hold zpool_held of that).  Every buffer in the span cache comes from here,
 * so the cache's release hook (lru_set_release) gives evicted spans back.
 * Threads: any; one mutex around the free list.
 *
 * Not for: blocks of other sizes (a buffer got for more than cap bytes
 * is freed when given back), the cache itself (lru.c).
 */
#ifndef SFS_IO_ZPOOL_H
#define SFS_IO_ZPOOL_H

#include <stddef.h>

struct zpool;

/* A pool of buffers of cap bytes, keeping at most max_free unused ones:
 * NULL on ENOMEM. */
struct zpool *zpool_new(size_t cap, unsigned max_free);
void zpool_free(struct zpool *p);
/* 1 if a buffer for len bytes is a pooled one of cap bytes: more than
 * 3/4 of it used. */
static inline int zpool_sized(size_t cap, size_t len)
{
	return len > cap - cap / 4 && len <= cap;
}
/* The bytes a buffer for len bytes holds (what a cache charges for it). */
size_t zpool_held(const struct zpool *p, size_t len);
/* A buffer for len bytes (see above); NULL on ENOMEM. */
void *zpool_get(struct zpool *p, size_t len);
/* Gives back a buffer of len bytes (NULL: nothing): kept when it is a
 * pooled one and fewer than max_free are kept, else freed.  Never blocks
 * on anything but the pool's own mutex (called under the cache's lock). */
void zpool_put(struct zpool *p, void *buf, size_t len);
/* Buffers made and buffers kept unused now (tests, stats). */
void zpool_usage(struct zpool *p, unsigned long *made, unsigned *kept);
/* The buffers' size. */
size_t zpool_cap(const struct zpool *p);

#endif
