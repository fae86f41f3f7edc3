/*
 * lru.h - a bounded, thread-safe cache of blocks, keyed by a 64-bit id:
 * inflated stroke blocks (core/index/blockstore, -o cache=SIZE) and blocks
 * of remote sources (httpcache.c, -o cache_mem=SIZE).  In core/io, the
 * lowest layer, so both can use it.  Callers copy bytes out under the
 * cache's lock, so no reference counts and no use-after-evict.  Bounded by
 * total bytes.  Not a general map: keys are dense-ish 64-bit ids chosen by
 * the caller.
 */
#ifndef SFS_LRU_H
#define SFS_LRU_H

#include <stdint.h>
#include <stddef.h>

struct lru;

struct lru *lru_new(uint64_t max_bytes);
void lru_free(struct lru *c);
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
/* Current use: bytes charged (data plus per-entry overhead) and entries. */
void lru_usage(struct lru *c, uint64_t *bytes, uint64_t *entries);

#endif
