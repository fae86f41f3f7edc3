/*
 * lru.c - the block caches (see lru.h): a pool holds a chained hash table
 * for O(1) lookup and a doubly linked recency list for O(1) eviction,
 * shared by the caches made in it; an entry names its cache, so a lookup
 * matches (cache, key) and an eviction releases the block the way its own
 * cache says.
 *
 * Threads: every field of a pool and of its caches is guarded by the
 * pool's one mutex, held for each whole call, including the copy out (a
 * few KiB for stroke blocks, at most a span or a small zip member), so a
 * block can never be freed while someone is reading it.  One lock is
 * enough here: the work under it is a hash probe and a memcpy, far cheaper
 * than the inflate or the round trip a miss costs outside it.
 *
 * Memory: entries are per block, allocated on insert and recycled through
 * the pool's free list, so a steady-state miss costs no allocation beyond
 * the block data the caller hands over.  The byte bound counts block data
 * plus entry overhead.  A cache whose blocks come from a pool of buffers
 * (zsource's spans, zpool.h) gives them back through a release hook
 * instead of free(), called under the lock, and charges each the memory
 * its buffer holds.
 *
 * Not for: per-sample objects, or keys the caller cannot make unique
 * within its cache (key_base + block index).
 */
#include "io/lru.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct lru_ent {
	uint64_t key;
	struct lru *owner;             /* the cache it belongs to */
	void *data;
	size_t len;
	struct lru_ent *hnext;         /* hash chain, or the free list */
	struct lru_ent *prev, *next;   /* recency list, most recent first */
};

struct lru_pool {
	pthread_mutex_t lock;
	uint64_t max_bytes, bytes;
	struct lru_ent **tab;
	size_t mask;                   /* buckets - 1, a power of two */
	size_t n;                      /* entries in the table */
	struct lru_ent head;           /* sentinel: head.next = most recent */
	struct lru_ent *free;          /* recycled entries */
	struct lru *caches;            /* made in it, for lru_pool_each */
};

struct lru {
	struct lru_pool *pool;
	int own_pool;                  /* lru_new: freed with the cache */
	const char *name;
	uint64_t bytes, n;             /* this cache's share of the pool */
	struct lru *next;              /* the pool's list of caches */
	void (*release)(void *arg, void *data, size_t len);   /* NULL: free() */
	size_t (*held)(void *arg, size_t len);                /* NULL: len */
	void *release_arg;
};

/* What a block of len bytes is charged: the memory its data holds
 * (lru_set_release) and its entry. */
static uint64_t ent_cost(const struct lru *c, size_t len)
{
	size_t held = c->held ? c->held(c->release_arg, len) : len;

	return (uint64_t)held + sizeof(struct lru_ent);
}

/* Drops a block's data (lock held, or the cache not shared). */
static void drop_data(struct lru *c, void *data, size_t len)
{
	if (c->release)
		c->release(c->release_arg, data, len);
	else
		free(data);
}

void lru_set_release(struct lru *c,
		     void (*release)(void *arg, void *data, size_t len),
		     size_t (*held)(void *arg, size_t len), void *arg)
{
	c->release = release;
	c->held = held;
	c->release_arg = arg;
}

static size_t bucket(const struct lru_pool *p, const struct lru *c, uint64_t key)
{
	key ^= (uint64_t)(uintptr_t)c * 0xff51afd7ed558ccdull;
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ull;   /* keys are dense: spread them */
	return (size_t)(key >> 20) & p->mask;
}

struct lru_pool *lru_pool_new(uint64_t max_bytes)
{
	struct lru_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->mask = 255;
	p->tab = calloc(p->mask + 1, sizeof(*p->tab));
	if (!p->tab) {
		free(p);
		return NULL;
	}
	p->max_bytes = max_bytes;
	p->head.prev = p->head.next = &p->head;
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

void lru_pool_free(struct lru_pool *p)
{
	struct lru_ent *e, *next;

	if (!p)
		return;
	for (e = p->free; e; e = next) {
		next = e->hnext;
		free(e);
	}
	pthread_mutex_destroy(&p->lock);
	free(p->tab);
	free(p);
}

uint64_t lru_pool_size(const struct lru_pool *p)
{
	return p->max_bytes;
}

void lru_pool_each(struct lru_pool *p,
		   void (*fn)(void *arg, const char *name, uint64_t bytes,
			      uint64_t entries), void *arg)
{
	struct lru *c;

	pthread_mutex_lock(&p->lock);
	for (c = p->caches; c; c = c->next)
		fn(arg, c->name, c->bytes, c->n);
	pthread_mutex_unlock(&p->lock);
}

struct lru *lru_new_in(struct lru_pool *p, const char *name, uint64_t own_bytes)
{
	struct lru *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!p) {
		if (!(p = lru_pool_new(own_bytes))) {
			free(c);
			return NULL;
		}
		c->own_pool = 1;
	}
	c->pool = p;
	c->name = name;
	pthread_mutex_lock(&p->lock);
	c->next = p->caches;
	p->caches = c;
	pthread_mutex_unlock(&p->lock);
	return c;
}

struct lru *lru_new(uint64_t max_bytes)
{
	return lru_new_in(NULL, "cache", max_bytes);
}

uint64_t lru_budget(const struct lru *c)
{
	return c->pool->max_bytes;
}

static struct lru_ent **find_slot(struct lru_pool *p, const struct lru *c,
				  uint64_t key)
{
	struct lru_ent **pp = &p->tab[bucket(p, c, key)];

	while (*pp && ((*pp)->key != key || (*pp)->owner != c))
		pp = &(*pp)->hnext;
	return pp;
}

static void list_unlink(struct lru_ent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void list_push_front(struct lru_pool *p, struct lru_ent *e)
{
	e->prev = &p->head;
	e->next = p->head.next;
	p->head.next->prev = e;
	p->head.next = e;
}

/* Drops entry e (*pp points at it); its struct goes to the free list. */
static void remove_ent(struct lru_pool *p, struct lru_ent **pp, struct lru_ent *e)
{
	struct lru *c = e->owner;
	uint64_t cost = ent_cost(c, e->len);

	*pp = e->hnext;
	list_unlink(e);
	p->bytes -= cost;
	p->n--;
	c->bytes -= cost;
	c->n--;
	drop_data(c, e->data, e->len);
	e->data = NULL;
	e->owner = NULL;
	e->hnext = p->free;
	p->free = e;
}

/* Drops the least recently used entry of any cache of the pool. */
static void evict_one(struct lru_pool *p)
{
	struct lru_ent *e = p->head.prev;

	remove_ent(p, find_slot(p, e->owner, e->key), e);
}

void lru_free(struct lru *c)
{
	struct lru_pool *p;
	struct lru_ent *e, *prev;
	struct lru **cp;

	if (!c)
		return;
	p = c->pool;
	pthread_mutex_lock(&p->lock);
	for (e = p->head.prev; e != &p->head && c->n; e = prev) {
		prev = e->prev;
		if (e->owner == c)
			remove_ent(p, find_slot(p, c, e->key), e);
	}
	for (cp = &p->caches; *cp; cp = &(*cp)->next)
		if (*cp == c) {
			*cp = c->next;
			break;
		}
	pthread_mutex_unlock(&p->lock);
	if (c->own_pool)
		lru_pool_free(p);
	free(c);
}

void lru_drop(struct lru *c, uint64_t key)
{
	struct lru_pool *p = c->pool;
	struct lru_ent **pp, *e;

	pthread_mutex_lock(&p->lock);
	pp = find_slot(p, c, key);
	if ((e = *pp))
		remove_ent(p, pp, e);
	pthread_mutex_unlock(&p->lock);
}

/* Doubles the table when it holds more entries than buckets.  On ENOMEM the
 * old table stays: chains just get longer. */
static void maybe_grow(struct lru_pool *p)
{
	size_t i, newmask = 2 * p->mask + 1;
	struct lru_ent **old = p->tab, *e, *next;

	if (p->n <= p->mask + 1)
		return;
	p->tab = calloc(newmask + 1, sizeof(*p->tab));
	if (!p->tab) {
		p->tab = old;
		return;
	}
	p->mask = newmask;
	for (i = 0; i <= newmask / 2; i++) {
		for (e = old[i]; e; e = next) {
			size_t b = bucket(p, e->owner, e->key);

			next = e->hnext;
			e->hnext = p->tab[b];
			p->tab[b] = e;
		}
	}
	free(old);
}

int lru_copy_out(struct lru *c, uint64_t key, size_t off, void *out, size_t len)
{
	struct lru_pool *p = c->pool;
	struct lru_ent *e;
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	e = *find_slot(p, c, key);
	if (e && (off > e->len || len > e->len - off)) {
		ret = -EINVAL;
	} else if (e) {
		if (len)
			memcpy(out, (const char *)e->data + off, len);
		list_unlink(e);
		list_push_front(p, e);
		ret = 1;
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void lru_insert(struct lru *c, uint64_t key, void *data, size_t len)
{
	struct lru_pool *p = c->pool;
	struct lru_ent **pp, *e;
	uint64_t cost = ent_cost(c, len);

	if (cost > p->max_bytes) {
		drop_data(c, data, len);
		return;
	}
	pthread_mutex_lock(&p->lock);
	pp = find_slot(p, c, key);
	if (*pp) {   /* another thread inflated the same block first */
		drop_data(c, data, len);
		goto out;
	}
	e = p->free;
	if (e)
		p->free = e->hnext;
	else if (!(e = malloc(sizeof(*e)))) {
		drop_data(c, data, len);   /* uncached is still correct */
		goto out;
	}
	while (p->bytes + cost > p->max_bytes)
		evict_one(p);
	e->key = key;
	e->owner = c;
	e->data = data;
	e->len = len;
	pp = find_slot(p, c, key);   /* evictions may have changed the chain */
	e->hnext = NULL;
	*pp = e;
	list_push_front(p, e);
	p->bytes += cost;
	p->n++;
	c->bytes += cost;
	c->n++;
	maybe_grow(p);
out:
	pthread_mutex_unlock(&p->lock);
}

void lru_usage(struct lru *c, uint64_t *bytes, uint64_t *entries)
{
	pthread_mutex_lock(&c->pool->lock);
	*bytes = c->bytes;
	*entries = c->n;
	pthread_mutex_unlock(&c->pool->lock);
}
