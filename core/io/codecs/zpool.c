/*
 * zpool.c - the span buffer pool (zpool.h): a LIFO free list of cap-byte
 * buffers under one mutex.  LIFO so that the buffer given back last (its
 * pages hot in the cache) is the next one used.
 *
 * Memory: at most max_free unused buffers are kept; the rest of the
 * buffers live in the span cache (bounded by its bytes) or with a pass or
 * a read inflating into them (one each).
 *
 * Not for: other block sizes or other caches.
 */
#include "io/codecs/zpool.h"

#include <pthread.h>
#include <stdlib.h>

struct zpool {
	pthread_mutex_t mu;           /* guards everything below */
	size_t cap;
	unsigned max_free, nfree;
	unsigned long made;           /* cap-byte buffers malloc'ed so far */
	void **free;                  /* max_free slots, nfree used */
};

struct zpool *zpool_new(size_t cap, unsigned max_free)
{
	struct zpool *p = calloc(1, sizeof(*p));

	if (!p || !(p->free = calloc(max_free ? max_free : 1, sizeof(void *)))) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	p->cap = cap;
	p->max_free = max_free;
	return p;
}

void zpool_free(struct zpool *p)
{
	unsigned i;

	if (!p)
		return;
	for (i = 0; i < p->nfree; i++)
		free(p->free[i]);
	pthread_mutex_destroy(&p->mu);
	free(p->free);
	free(p);
}

size_t zpool_held(const struct zpool *p, size_t len)
{
	return zpool_sized(p->cap, len) ? p->cap : len;
}

void *zpool_get(struct zpool *p, size_t len)
{
	void *buf = NULL;

	if (!zpool_sized(p->cap, len))
		return malloc(len ? len : 1);
	pthread_mutex_lock(&p->mu);
	if (p->nfree)
		buf = p->free[--p->nfree];
	pthread_mutex_unlock(&p->mu);
	if (buf || !(buf = malloc(p->cap)))
		return buf;
	pthread_mutex_lock(&p->mu);	/* a fresh one: rare once warm */
	p->made++;
	pthread_mutex_unlock(&p->mu);
	return buf;
}

void zpool_put(struct zpool *p, void *buf, size_t len)
{
	if (!buf)
		return;
	if (zpool_sized(p->cap, len)) {
		pthread_mutex_lock(&p->mu);
		if (p->nfree < p->max_free) {
			p->free[p->nfree++] = buf;
			buf = NULL;
		}
		pthread_mutex_unlock(&p->mu);
	}
	free(buf);
}

void zpool_usage(struct zpool *p, unsigned long *made, unsigned *kept)
{
	pthread_mutex_lock(&p->mu);
	*made = p->made;
	*kept = p->nfree;
	pthread_mutex_unlock(&p->mu);
}

size_t zpool_cap(const struct zpool *p)
{
	return p->cap;
}
