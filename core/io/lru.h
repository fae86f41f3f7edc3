/*
 * lru.h - bounded, thread-safe caches of blocks, keyed by a 64-bit id:
 * inflated stroke blocks (core/index/blockstore), blocks of remote sources
 * (httpcache.c), inflated spans of compressed sources (zsource.c) and
 * whole zip members (zipread.c).  In core/io, the lowest layer, so all can
 * use it.  Callers copy bytes out under the lock, so no reference counts
 * and no use-after-evict.
 *
 * One budget per mount: the caches of a mount are made in one pool
 * (lru_pool_new, -o cache_mem=SIZE, held by the mount's source_env) and
 * share its bytes and its recency order, so the least recently used block
 * of any of them goes first, and the mount's cache memory is the pool's
 * size however many kinds of cache it uses.  lru_new makes a cache with a
 * pool of its own.
 *
 * Not a general map: keys are dense-ish 64-bit ids chosen by the caller,
 * unique within its cache (two caches of a pool may use the same keys).
 */
#ifndef SFS_LRU_H
#define SFS_LRU_H

#include <stdint.h>
#include <stddef.h>

struct lru;
struct lru_pool;

/* A budget of max_bytes for the caches made in it; NULL on ENOMEM. */
struct lru_pool *lru_pool_new(uint64_t max_bytes);
/* Frees the pool; every cache made in it must be freed first. */
void lru_pool_free(struct lru_pool *p);
uint64_t lru_pool_size(const struct lru_pool *p);
/* Calls fn once per cache of the pool with its name and current use
 * (bytes charged, entries), under the pool's lock: fn must not call into
 * the pool. */
void lru_pool_each(struct lru_pool *p,
		   void (*fn)(void *arg, const char *name, uint64_t bytes,
			      uint64_t entries), void *arg);

/* A cache drawing on pool p, called `name` (a string literal: stats.json
 * shows it); p NULL: a pool of its own of own_bytes.  NULL on ENOMEM. */
struct lru *lru_new_in(struct lru_pool *p, const char *name, uint64_t own_bytes);
/* A cache with a pool of its own of max_bytes. */
struct lru *lru_new(uint64_t max_bytes);
/* Frees the cache and its blocks (and its pool, if its own). */
void lru_free(struct lru *c);
/* The bytes this cache may hold: its pool's size. */
uint64_t lru_budget(const struct lru *c);
/* Copies len bytes at off of block `key` into out: 1 on hit, 0 on miss,
 * -EINVAL if [off, off + len) is not inside the cached block. */
int lru_copy_out(struct lru *c, uint64_t key, size_t off, void *out, size_t len);
/* Inserts a block (takes ownership of data, malloc'ed; freed on evict, or
 * given to the release hook). If the key is already present, data is
 * freed.  Blocks larger than the whole cache are freed and not kept. */
void lru_insert(struct lru *c, uint64_t key, void *data, size_t len);
/* Drops block `key` if present (its bytes turned out not to be
 * believed: a remote block read again, httpcache.c). */
void lru_drop(struct lru *c, uint64_t key);
/* For blocks from a pool (zpool.h): who takes an evicted or refused
 * block's data instead of free(), release(arg, data, len), called under
 * the cache's lock (so it must not call back into the cache); and what a
 * block of len bytes is charged, held(arg, len) (the memory its buffer
 * holds, which may be more than len), so the bound counts the memory.
 * Set once, before the cache is used. */
void lru_set_release(struct lru *c,
		     void (*release)(void *arg, void *data, size_t len),
		     size_t (*held)(void *arg, size_t len), void *arg);
/* This cache's current use: bytes charged (data plus per-entry overhead)
 * and entries. */
void lru_usage(struct lru *c, uint64_t *bytes, uint64_t *entries);

#endif
