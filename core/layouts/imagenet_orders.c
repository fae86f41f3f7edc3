/*
 * imagenet_orders.c - the shard and shuffle orders of an ImageNet split
 * (imagenet_orders.h): the tar order is a radix sort of the samples' data
 * offsets; the seeded ones are numpy's shuffle (mt19937.h), an epoch's
 * seeded by (seed, e).
 */
#include "layouts/imagenet_orders.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mt19937.h"
#include "layouts/imagenet_samples.h"

struct ordctx {
	const struct tarindex *t;
	const struct in_split *sp;
};

/* tar order: source number, then data offset (the fallback of tar_order) */
static int cmp_tar_order(const void *a, const void *b, void *arg)
{
	const struct ordctx *c = arg;
	const struct tarindex_node *x = tarindex_node(c->t, in_split_node(c->sp, *(const uint32_t *)a));
	const struct tarindex_node *y = tarindex_node(c->t, in_split_node(c->sp, *(const uint32_t *)b));

	if (tarindex_node_src(x) != tarindex_node_src(y))
		return tarindex_node_src(x) < tarindex_node_src(y) ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

#define RADIX_BITS 11

/* One stable counting-sort pass on bits [shift, shift + RADIX_BITS). */
static void radix_pass(const uint64_t *key, const uint32_t *idx, uint64_t *key2,
		       uint32_t *idx2, uint64_t n, unsigned shift)
{
	uint32_t cnt[1u << RADIX_BITS], sum = 0, d;
	uint64_t i;

	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < n; i++)
		cnt[(key[i] >> shift) & ((1u << RADIX_BITS) - 1)]++;
	for (d = 0; d < (1u << RADIX_BITS); d++) {
		uint32_t c = cnt[d];

		cnt[d] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++) {
		uint32_t at = cnt[(key[i] >> shift) & ((1u << RADIX_BITS) - 1)]++;

		key2[at] = key[i];
		idx2[at] = idx[i];
	}
}

/*
 * ord = the samples sorted by (source, data offset), ties in canonical
 * order: an LSD radix sort of src << 40 | offset over the bits that vary
 * (3 passes for one 5 GB tar, ~20 ms for 1.28 M samples, where qsort_r
 * takes 10 times as long).  `tmp` is n spare u32s.  Offsets past 2^40 or
 * sources past 2^24 do not fit that key: then qsort_r.
 */
static int tar_order(const struct in_split *sp, uint32_t *ord, uint32_t *tmp)
{
	uint64_t n = sp->h.n, i, all = UINT64_MAX, any = 0, *buf, *key, *key2;
	uint32_t *cur = ord, *other = tmp, *t;
	unsigned shift;

	for (i = 0; i < n; i++)
		ord[i] = (uint32_t)i;
	buf = malloc((2 * n + 1) * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	key = buf, key2 = buf + n;
	for (i = 0; i < n; i++) {
		const struct tarindex_node *x = tarindex_node(&sp->t, in_split_node(sp, i));
		struct ordctx ctx = { &sp->t, sp };

		if (x->off >> 40 || tarindex_node_src(x) >> 24) {
			free(buf);
			qsort_r(ord, n, sizeof(uint32_t), cmp_tar_order, &ctx);
			return 0;
		}
		key[i] = (uint64_t)tarindex_node_src(x) << 40 | x->off;
		all &= key[i];
		any |= key[i];
	}
	for (shift = 0; shift < 64; shift += RADIX_BITS) {
		if (!(((all ^ any) >> shift) & ((1u << RADIX_BITS) - 1)))
			continue;	/* a digit every key shares */
		radix_pass(key, cur, key2, other, n, shift);
		key = key2, key2 = key == buf ? buf + n : buf;
		t = cur, cur = other, other = t;
	}
	if (cur != ord)
		memcpy(ord, cur, n * sizeof(uint32_t));
	free(buf);
	return 0;
}

/*
 * Fills sp->orders (and the ord/pos/shuf views) for the split's samples:
 * the same arrays at build time, which derives the stored offsets from
 * them, and when mounted, on first use (need_orders, layout_imagenet.c).
 */
int imagenet_make_orders(struct in_split *sp, int has_shard_seed,
		uint32_t shard_seed, uint32_t shuffle_seed)
{
	uint64_t n = sp->h.n, i;
	uint32_t *ord, *pos, *shuf;
	struct mt19937 mt;
	int rc = 0;

	sp->orders = malloc((3 * n + 1) * sizeof(uint32_t));
	if (!sp->orders)
		return -ENOMEM;
	ord = sp->orders, pos = ord + n, shuf = pos + n;
	if (has_shard_seed) {
		for (i = 0; i < n; i++)
			ord[i] = (uint32_t)i;
		mt19937_seed(&mt, shard_seed);
		mt19937_shuffle_u32(&mt, ord, n);
	} else {
		rc = tar_order(sp, ord, pos);
	}
	if (rc) {
		free(sp->orders);
		sp->orders = NULL;
		return rc;
	}
	for (i = 0; i < n; i++) {
		pos[ord[i]] = (uint32_t)i;
		shuf[i] = (uint32_t)i;
	}
	mt19937_seed(&mt, shuffle_seed);
	mt19937_shuffle_u32(&mt, shuf, n);
	sp->ord = ord, sp->pos = pos, sp->shuf = shuf;
	return 0;
}

/*
 * Epoch e's orders (imagenet_epochs.h): ord is np.random.seed([seed, e]);
 * np.random.shuffle(arange(n)) of the canonical order, and shuf is ord
 * itself (the epoch's shuffled.txt lists its shards' samples in their
 * order), so only ord and pos are made: 8 bytes a sample.
 */
int imagenet_make_epoch_orders(struct in_split *sp, uint32_t seed, uint32_t e)
{
	uint64_t n = sp->h.n, i;
	uint32_t key[2] = { seed, e }, *ord, *pos;
	struct mt19937 mt;

	sp->orders = malloc((2 * n + 1) * sizeof(uint32_t));
	if (!sp->orders)
		return -ENOMEM;
	ord = sp->orders, pos = ord + n;
	for (i = 0; i < n; i++)
		ord[i] = (uint32_t)i;
	mt19937_seed_array(&mt, key, 2);
	mt19937_shuffle_u32(&mt, ord, n);
	for (i = 0; i < n; i++)
		pos[ord[i]] = (uint32_t)i;
	sp->ord = sp->shuf = ord, sp->pos = pos;
	return 0;
}

void imagenet_free_orders(struct in_split *sp)
{
	free(sp->orders);
	sp->orders = NULL;
	sp->ord = sp->pos = sp->shuf = NULL;
}
