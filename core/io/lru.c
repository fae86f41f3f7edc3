/*
 * lru.c - the block cache (see lru.h): a chained hash table for O(1)
 * lookup plus a doubly linked recency list for O(1) eviction.
 *
 * Threads: every field of struct lru is guarded by its one mutex, held for
 * each whole call, including the copy out (a few KiB for stroke blocks, at
 * most a 32 KiB remote block), so a block can never be freed while
 * someone is reading it.  One lock is enough here: the work under it is a
 * hash probe and a memcpy, far cheaper than the inflate or the round trip
 * a miss costs outside it.
 *
 * Memory: entries are per block, allocated on insert and recycled through a
 * free list, so a steady-state miss costs no allocation beyond the block
 * data the caller hands over.  The byte bound counts block data plus entry
 * overhead.  A cache whose blocks come from a pool (zsource's spans,
 * zpool.h) gives them back through a release hook instead of free(),
 * called under the lock, and charges each the memory its buffer holds.
 * Not for: per-sample objects, or keys the caller cannot make
 * unique (key_base + block index).
 */
#include "io/lru.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct lru_ent {
	uint64_t key;
	void *data;
	size_t len;
	struct lru_ent *hnext;         /* hash chain, or the free list */
	struct lru_ent *prev, *next;   /* recency list, most recent first */
};

struct lru {
	pthread_mutex_t lock;
	uint64_t max_bytes, bytes;
	struct lru_ent **tab;
	size_t mask;                   /* buckets - 1, a power of two */
	size_t n;                      /* entries in the table */
	struct lru_ent head;           /* sentinel: head.next = most recent */
	struct lru_ent *free;          /* recycled entries */
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

static size_t bucket(const struct lru *c, uint64_t key)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ull;   /* keys are dense: spread them */
	return (size_t)(key >> 20) & c->mask;
}

struct lru *lru_new(uint64_t max_bytes)
{
	struct lru *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->mask = 255;
	c->tab = calloc(c->mask + 1, sizeof(*c->tab));
	if (!c->tab) {
		free(c);
		return NULL;
	}
	c->max_bytes = max_bytes;
	c->head.prev = c->head.next = &c->head;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void lru_free(struct lru *c)
{
	struct lru_ent *e, *next;

	if (!c)
		return;
	for (e = c->head.next; e != &c->head; e = next) {
		next = e->next;
		drop_data(c, e->data, e->len);
		free(e);
	}
	for (e = c->free; e; e = next) {
		next = e->hnext;
		free(e);
	}
	pthread_mutex_destroy(&c->lock);
	free(c->tab);
	free(c);
}

static struct lru_ent **find_slot(struct lru *c, uint64_t key)
{
	struct lru_ent **pp = &c->tab[bucket(c, key)];

	while (*pp && (*pp)->key != key)
		pp = &(*pp)->hnext;
	return pp;
}

static void list_unlink(struct lru_ent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void list_push_front(struct lru *c, struct lru_ent *e)
{
	e->prev = &c->head;
	e->next = c->head.next;
	c->head.next->prev = e;
	c->head.next = e;
}

/* Drops entry e (*pp points at it); its struct goes to the free list. */
static void remove_ent(struct lru *c, struct lru_ent **pp, struct lru_ent *e)
{
	*pp = e->hnext;
	list_unlink(e);
	c->bytes -= ent_cost(c, e->len);
	c->n--;
	drop_data(c, e->data, e->len);
	e->data = NULL;
	e->hnext = c->free;
	c->free = e;
}

/* Drops the least recently used entry. */
static void evict_one(struct lru *c)
{
	struct lru_ent *e = c->head.prev;

	remove_ent(c, find_slot(c, e->key), e);
}

void lru_drop(struct lru *c, uint64_t key)
{
	struct lru_ent **pp, *e;

	pthread_mutex_lock(&c->lock);
	pp = find_slot(c, key);
	if ((e = *pp))
		remove_ent(c, pp, e);
	pthread_mutex_unlock(&c->lock);
}

/* Doubles the table when it holds more entries than buckets.  On ENOMEM the
 * old table stays: chains just get longer. */
static void maybe_grow(struct lru *c)
{
	size_t i, newmask = 2 * c->mask + 1;
	struct lru_ent **old = c->tab, *e, *next;

	if (c->n <= c->mask + 1)
		return;
	c->tab = calloc(newmask + 1, sizeof(*c->tab));
	if (!c->tab) {
		c->tab = old;
		return;
	}
	c->mask = newmask;
	for (i = 0; i <= newmask / 2; i++) {
		for (e = old[i]; e; e = next) {
			size_t b = bucket(c, e->key);

			next = e->hnext;
			e->hnext = c->tab[b];
			c->tab[b] = e;
		}
	}
	free(old);
}

int lru_copy_out(struct lru *c, uint64_t key, size_t off, void *out, size_t len)
{
	struct lru_ent *e;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	e = *find_slot(c, key);
	if (e && (off > e->len || len > e->len - off)) {
		ret = -EINVAL;
	} else if (e) {
		if (len)
			memcpy(out, (const char *)e->data + off, len);
		list_unlink(e);
		list_push_front(c, e);
		ret = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void lru_insert(struct lru *c, uint64_t key, void *data, size_t len)
{
	struct lru_ent **pp, *e;

	if (ent_cost(c, len) > c->max_bytes) {
		drop_data(c, data, len);
		return;
	}
	pthread_mutex_lock(&c->lock);
	pp = find_slot(c, key);
	if (*pp) {   /* another thread inflated the same block first */
		drop_data(c, data, len);
		goto out;
	}
	e = c->free;
	if (e)
		c->free = e->hnext;
	else if (!(e = malloc(sizeof(*e)))) {
		drop_data(c, data, len);   /* uncached is still correct */
		goto out;
	}
	while (c->bytes + ent_cost(c, len) > c->max_bytes)
		evict_one(c);
	e->key = key;
	e->data = data;
	e->len = len;
	pp = find_slot(c, key);   /* evictions may have changed the chain */
	e->hnext = NULL;
	*pp = e;
	list_push_front(c, e);
	c->bytes += ent_cost(c, len);
	c->n++;
	maybe_grow(c);
out:
	pthread_mutex_unlock(&c->lock);
}

void lru_usage(struct lru *c, uint64_t *bytes, uint64_t *entries)
{
	pthread_mutex_lock(&c->lock);
	*bytes = c->bytes;
	*entries = c->n;
	pthread_mutex_unlock(&c->lock);
}
