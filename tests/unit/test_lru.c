/*
 * test_lru.c - core/io/lru.c: hits and misses, recency order, the byte bound,
 * ownership of inserted data (leaks show under ASan), the release hook
 * (every block dropped goes through it once, with its length; blocks
 * charged at least the pool's unit), and 8 threads
 * hammering one cache while checking every byte they copy out; caches
 * sharing one pool: one budget, one recency order, the same keys apart,
 * freed apart, and threads on both never copying the other's bytes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/lru.h"

/* Block `key` of length len: bytes derived from both, to catch mix-ups. */
static void *make_block(uint64_t key, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	cr_assert(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(key * 31 + i * 7 + (i >> 8));
	return p;
}

static int block_ok(uint64_t key, size_t off, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(key * 31 + (off + i) * 7 + ((off + i) >> 8)))
			return 0;
	return 1;
}

Test(lru, hit_miss_and_bounds)
{
	struct lru *c = lru_new(1 << 20);
	uint8_t buf[100];

	cr_assert_eq(lru_copy_out(c, 5, 0, buf, 10), 0);
	lru_insert(c, 5, make_block(5, 1000), 1000);
	cr_assert_eq(lru_copy_out(c, 5, 900, buf, 100), 1);
	cr_assert(block_ok(5, 900, buf, 100));
	cr_assert_eq(lru_copy_out(c, 5, 901, buf, 100), -EINVAL);
	cr_assert_eq(lru_copy_out(c, 5, (size_t)-1, buf, 2), -EINVAL);
	cr_assert_eq(lru_copy_out(c, 5, 1000, buf, 0), 1);
	cr_assert_eq(lru_copy_out(c, 6, 0, buf, 10), 0);
	/* a second insert of the same key keeps the first, frees the second */
	lru_insert(c, 5, make_block(77, 1000), 1000);
	cr_assert_eq(lru_copy_out(c, 5, 0, buf, 100), 1);
	cr_assert(block_ok(5, 0, buf, 100));
	lru_insert(c, 9, make_block(9, 0), 0);
	cr_assert_eq(lru_copy_out(c, 9, 0, buf, 0), 1);
	lru_free(c);
}

Test(lru, evicts_least_recently_used)
{
	uint64_t bytes, n;
	/* room for three 1000-byte blocks and their entries, not four */
	struct lru *c = lru_new(3 * 1000 + 3 * 64 + 500);
	uint8_t b[1];

	for (uint64_t k = 1; k <= 3; k++)
		lru_insert(c, k, make_block(k, 1000), 1000);
	lru_usage(c, &bytes, &n);
	cr_assert_eq(n, 3);
	cr_assert_eq(lru_copy_out(c, 1, 0, b, 1), 1);   /* 1 is now newest */
	lru_insert(c, 4, make_block(4, 1000), 1000);    /* evicts 2 */
	cr_assert_eq(lru_copy_out(c, 2, 0, b, 1), 0);
	cr_assert_eq(lru_copy_out(c, 1, 0, b, 1), 1);
	cr_assert_eq(lru_copy_out(c, 3, 0, b, 1), 1);
	cr_assert_eq(lru_copy_out(c, 4, 0, b, 1), 1);
	lru_insert(c, 5, make_block(5, 1000), 1000);    /* evicts 1 */
	cr_assert_eq(lru_copy_out(c, 1, 0, b, 1), 0);
	/* bigger than the whole cache: not kept, nothing evicted */
	lru_insert(c, 6, make_block(6, 100000), 100000);
	cr_assert_eq(lru_copy_out(c, 6, 0, b, 1), 0);
	lru_usage(c, &bytes, &n);
	cr_assert_eq(n, 3);
	lru_free(c);
}

Test(lru, byte_bound_holds)
{
	const uint64_t max = 200000;
	struct lru *c = lru_new(max);
	uint64_t bytes, n, maxn = 0;
	uint8_t buf[16];

	srand(1);
	for (uint64_t k = 0; k < 20000; k++) {
		size_t len = (size_t)rand() % 9000;

		lru_insert(c, k, make_block(k, len), len);
		lru_usage(c, &bytes, &n);
		cr_assert_leq(bytes, max, "after %llu inserts: %llu bytes",
			      (unsigned long long)k, (unsigned long long)bytes);
		maxn = n > maxn ? n : maxn;
		if (len >= 16)
			cr_assert_eq(lru_copy_out(c, k, 0, buf, 16), 1);
	}
	cr_assert_geq(maxn, 30, "the cache never filled");
	lru_free(c);
}

/* Many keys hash to few buckets only if the table stops growing. */
Test(lru, many_small_entries)
{
	struct lru *c = lru_new(1 << 30);
	uint64_t bytes, n;
	uint8_t b[4];

	for (uint64_t k = 0; k < 100000; k++)
		lru_insert(c, k << 32 | 3, make_block(k, 4), 4);
	lru_usage(c, &bytes, &n);
	cr_assert_eq(n, 100000);
	for (uint64_t k = 0; k < 100000; k += 7) {
		cr_assert_eq(lru_copy_out(c, k << 32 | 3, 0, b, 4), 1);
		cr_assert(block_ok(k, 0, b, 4));
	}
	lru_free(c);
}

struct hammer {
	struct lru *c;
	unsigned seed;
	int bad;
};

static void *hammer_run(void *arg)
{
	struct hammer *h = arg;
	uint8_t buf[512];

	for (int i = 0; i < 60000; i++) {
		uint64_t key = (uint64_t)rand_r(&h->seed) % 600;
		size_t len = 1000 + key * 13, off = (size_t)rand_r(&h->seed) % (len - 512);
		int r = lru_copy_out(h->c, key, off, buf, 512);

		if (r == 1 && !block_ok(key, off, buf, 512))
			h->bad++;
		else if (r == 0)
			lru_insert(h->c, key, make_block(key, len), len);
		else if (r < 0)
			h->bad++;
	}
	return NULL;
}

Test(lru, eight_thread_hammer)
{
	/* holds about a third of the 600 blocks: hits, misses and evictions */
	struct lru *c = lru_new(1 << 20);
	struct hammer h[8];
	pthread_t t[8];
	uint64_t bytes, n;

	for (int i = 0; i < 8; i++) {
		h[i] = (struct hammer){ c, (unsigned)i * 7919 + 1, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, hammer_run, &h[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(h[i].bad, 0, "thread %d read wrong bytes", i);
	}
	lru_usage(c, &bytes, &n);
	cr_assert_leq(bytes, 1 << 20);
	cr_assert_gt(n, 50);
	lru_free(c);
}

/* What the release hook saw: blocks by key (their first byte's value
 * tells the key), and their lengths. */
struct released {
	int n;
	size_t bytes;
	uint8_t first[16];
};

static void on_release(void *arg, void *data, size_t len)
{
	struct released *r = arg;

	cr_assert(r->n < 16);
	r->first[r->n++] = len ? *(uint8_t *)data : 0;
	r->bytes += len;
	free(data);
}

Test(lru, release_hook_takes_every_dropped_block)
{
	struct released r = { 0 };
	struct lru *c = lru_new(3 * 1000 + 3 * 64 + 500);
	uint8_t b[1];

	lru_set_release(c, on_release, NULL, &r);
	lru_insert(c, 1, make_block(1, 1000), 1000);
	lru_insert(c, 2, make_block(2, 1000), 1000);
	lru_insert(c, 3, make_block(3, 1000), 1000);
	cr_assert_eq(r.n, 0);
	lru_insert(c, 4, make_block(4, 1000), 1000);	/* evicts 1 */
	cr_assert_eq(r.n, 1);
	cr_assert_eq(r.first[0], (uint8_t)(1 * 31), "the evicted block, key 1");
	cr_assert_eq(r.bytes, 1000);
	lru_insert(c, 4, make_block(9, 999), 999);	/* present: refused */
	cr_assert_eq(r.n, 2);
	cr_assert_eq(r.first[1], (uint8_t)(9 * 31));
	cr_assert_eq(r.bytes, 1999);
	lru_insert(c, 5, make_block(5, 10000), 10000);	/* larger than all */
	cr_assert_eq(r.n, 3);
	cr_assert_eq(r.bytes, 11999);
	cr_assert_eq(lru_copy_out(c, 4, 0, b, 1), 1);
	cr_assert(block_ok(4, 0, b, 1), "the kept block is untouched");
	lru_free(c);	/* 2, 3, 4 */
	cr_assert_eq(r.n, 6);
	cr_assert_eq(r.bytes, 14999);
}

/* As a pool of 4000-byte buffers says: blocks of 2001-4000 bytes hold
 * 4000, others their length. */
static size_t held4000(void *arg, size_t len)
{
	return len > 2000 && len <= 4000 ? 4000 : len;
}

/* Blocks are charged what they hold: the bound counts the pool's
 * buffers, not the bytes in them. */
Test(lru, release_charges_the_buffer)
{
	struct released r = { 0 };
	struct lru *c = lru_new(3 * (4000 + 64) + 200);
	uint64_t bytes, n;

	lru_set_release(c, on_release, held4000, &r);
	lru_insert(c, 1, make_block(1, 2100), 2100);
	lru_insert(c, 2, make_block(2, 2100), 2100);
	lru_insert(c, 3, make_block(3, 2100), 2100);
	lru_usage(c, &bytes, &n);
	cr_assert_eq(n, 3);
	cr_assert(bytes >= 3 * 4000, "charged %llu", (unsigned long long)bytes);
	lru_insert(c, 6, make_block(6, 50), 50);	/* short: its length */
	cr_assert_eq(r.n, 0, "room for a short one");
	lru_insert(c, 4, make_block(4, 2100), 2100);	/* a fourth buffer: evicts 1 */
	cr_assert_eq(r.n, 1);
	cr_assert_eq(r.first[0], (uint8_t)31);
	lru_insert(c, 5, make_block(5, 5000), 5000);	/* evicts 2 and 3 */
	lru_usage(c, &bytes, &n);
	cr_assert_eq(n, 3);
	cr_assert(bytes > 4000 + 50 + 5000 && bytes - (4000 + 50 + 5000) < 3 * 128,
		  "charged %llu: 4, 6 and 5 as they hold, and 3 entries",
		  (unsigned long long)bytes);
	lru_free(c);
	cr_assert_eq(r.bytes, 4 * 2100 + 50 + 5000);
}

/* ---- caches sharing one pool (one memory budget per mount) ----------- */

static void sum_use(void *arg, const char *name, uint64_t bytes, uint64_t entries)
{
	uint64_t *t = arg;

	(void)name;
	t[0] += bytes;
	t[1] += entries;
	t[2]++;
}

Test(lru, caches_in_one_pool_share_its_bytes_and_its_recency)
{
	/* room for three 1000-byte blocks and their entries, not four */
	struct lru_pool *p = lru_pool_new(3 * 1000 + 3 * 128);
	struct lru *a = lru_new_in(p, "a", 0), *b = lru_new_in(p, "b", 0);
	uint64_t ab, an, bb, bn, t[3] = { 0 };
	uint8_t buf[10];

	cr_assert(p && a && b);
	cr_assert_eq(lru_budget(a), lru_pool_size(p));
	lru_insert(a, 1, make_block(1, 1000), 1000);
	lru_insert(a, 2, make_block(2, 1000), 1000);
	/* the same key in another cache is another block */
	lru_insert(b, 1, make_block(101, 1000), 1000);
	cr_assert_eq(lru_copy_out(a, 1, 0, buf, 10), 1);
	cr_assert(block_ok(1, 0, buf, 10));
	cr_assert_eq(lru_copy_out(b, 1, 0, buf, 10), 1);
	cr_assert(block_ok(101, 0, buf, 10));
	/* a's block 2 is the least recently used of the pool: b's insert
	 * evicts it, though b holds less than a */
	lru_insert(b, 2, make_block(102, 1000), 1000);
	cr_assert_eq(lru_copy_out(a, 2, 0, buf, 10), 0);
	cr_assert_eq(lru_copy_out(a, 1, 0, buf, 10), 1);
	cr_assert_eq(lru_copy_out(b, 2, 0, buf, 10), 1);
	lru_usage(a, &ab, &an);
	lru_usage(b, &bb, &bn);
	cr_assert_eq(an, 1);
	cr_assert_eq(bn, 2);
	cr_assert(ab + bb <= lru_pool_size(p));
	lru_pool_each(p, sum_use, t);
	cr_assert_eq(t[0], ab + bb);
	cr_assert_eq(t[1], 3);
	cr_assert_eq(t[2], 2);
	lru_free(a);
	lru_free(b);
	lru_pool_free(p);
}

static int released[2];

static void count_release(void *arg, void *data, size_t len)
{
	(void)len;
	released[(intptr_t)arg]++;
	free(data);
}

Test(lru, freeing_one_cache_of_a_pool_drops_its_blocks_only)
{
	struct lru_pool *p = lru_pool_new(1 << 20);
	struct lru *a = lru_new_in(p, "a", 0), *b = lru_new_in(p, "b", 0);
	uint64_t t[3] = { 0 };
	uint8_t buf[10];

	cr_assert(p && a && b);
	lru_set_release(a, count_release, NULL, (void *)0);
	lru_set_release(b, count_release, NULL, (void *)1);
	for (uint64_t k = 0; k < 50; k++) {
		lru_insert(k % 2 ? a : b, k, make_block(k, 100), 100);
	}
	lru_free(a);
	cr_assert_eq(released[0], 25, "a released %d", released[0]);
	cr_assert_eq(released[1], 0);
	for (uint64_t k = 0; k < 50; k += 2) {
		cr_assert_eq(lru_copy_out(b, k, 0, buf, 10), 1);
		cr_assert(block_ok(k, 0, buf, 10));
	}
	lru_pool_each(p, sum_use, t);
	cr_assert_eq(t[1], 25);
	cr_assert_eq(t[2], 1);
	lru_free(b);
	cr_assert_eq(released[1], 25);
	lru_pool_free(p);
}

struct pooled {
	struct lru *c;
	uint64_t salt;
	int bad;
};

static void *pooled_hammer(void *arg)
{
	struct pooled *h = arg;
	uint8_t buf[512];
	unsigned seed = (unsigned)h->salt;

	for (int i = 0; i < 20000; i++) {
		uint64_t key = (uint64_t)(rand_r(&seed) % 200);
		size_t len = 200 + key;

		if (lru_copy_out(h->c, key, 0, buf, len) == 1) {
			if (!block_ok(key + h->salt, 0, buf, len))
				h->bad = 1;
		} else {
			lru_insert(h->c, key, make_block(key + h->salt, len), len);
		}
	}
	return NULL;
}

Test(lru, threads_on_caches_of_one_pool_never_see_anothers_bytes)
{
	/* small: blocks of both caches keep evicting each other */
	struct lru_pool *p = lru_pool_new(64 << 10);
	struct lru *c[2] = { lru_new_in(p, "a", 0), lru_new_in(p, "b", 0) };
	struct pooled h[8];
	pthread_t t[8];
	uint64_t use[3] = { 0 };

	for (int i = 0; i < 8; i++) {
		/* same keys in both caches, other bytes (salt) */
		h[i] = (struct pooled){ c[i % 2], (uint64_t)(i % 2) * 1000, 0 };
		cr_assert(pthread_create(&t[i], NULL, pooled_hammer, &h[i]) == 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		cr_assert(!h[i].bad, "thread %d copied another cache's bytes", i);
	}
	lru_pool_each(p, sum_use, use);
	cr_assert(use[0] <= lru_pool_size(p));
	lru_free(c[0]);
	lru_free(c[1]);
	lru_pool_free(p);
}
