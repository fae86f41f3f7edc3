/*
 * mt19937.h - numpy's legacy RandomState (MT19937) exactly as
 * `np.random.seed(s); np.random.shuffle(idx)` uses it, so samplefs'
 * split files match the original pipeline line for line.  Not a general RNG.
 */
#ifndef SFS_MT19937_H
#define SFS_MT19937_H

#include <stdint.h>
#include <stddef.h>

struct mt19937 {
	uint32_t key[624];
	int pos;
};

/* np.random.seed(seed) for an integer seed in [0, 2**32). */
void mt19937_seed(struct mt19937 *mt, uint32_t seed);
/* np.random.seed([key[0], ..., key[n-1]]) (init_by_array), n >= 1. */
void mt19937_seed_array(struct mt19937 *mt, const uint32_t *key, size_t n);
uint32_t mt19937_next32(struct mt19937 *mt);
/* numpy's random_interval(max): uniform in [0, max] by masked rejection. */
uint64_t mt19937_interval(struct mt19937 *mt, uint64_t max);
/* np.random.shuffle of a 1-D array of n elements, in place. */
void mt19937_shuffle_u32(struct mt19937 *mt, uint32_t *a, size_t n);

#endif
