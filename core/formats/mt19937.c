/*
 * mt19937.c - numpy's legacy RandomState: MT19937 seeded with init_genrand
 * (an integer seed) or init_by_array (an array of them),
 * bounded integers by masked rejection (random_interval) and the
 * Fisher-Yates shuffle of RandomState.shuffle.  Bit-for-bit what
 * `np.random.seed(s); np.random.shuffle(a)` does to a 1-D array, so the
 * split files samplefs generates list the same samples as the original
 * pipeline.  Not for anything needing a good or fast RNG.
 *
 * The state lives in the caller's struct; nothing here is shared.
 */
#include "formats/mt19937.h"

#define MT_N 624
#define MT_M 397
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu

/* init_genrand(): what np.random.seed(int) does for 0 <= seed < 2**32. */
void mt19937_seed(struct mt19937 *mt, uint32_t seed)
{
	int i;

	for (i = 0; i < MT_N; i++) {
		mt->key[i] = seed;
		seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1;
	}
	mt->pos = MT_N;
}

/*
 * init_by_array(): what np.random.seed([k0, k1, ...]) does (each key in
 * [0, 2**32), an array of them seeds from all its bits, where a single
 * integer seed has only 32).
 */
void mt19937_seed_array(struct mt19937 *mt, const uint32_t *key, size_t n)
{
	uint32_t *m = mt->key;
	size_t i = 1, j = 0, k;

	mt19937_seed(mt, 19650218u);
	for (k = MT_N > n ? MT_N : n; k; k--) {
		m[i] = (m[i] ^ ((m[i - 1] ^ (m[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
		if (++i >= MT_N) {
			m[0] = m[MT_N - 1];
			i = 1;
		}
		if (++j >= n)
			j = 0;
	}
	for (k = MT_N - 1; k; k--) {
		m[i] = (m[i] ^ ((m[i - 1] ^ (m[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
		if (++i >= MT_N) {
			m[0] = m[MT_N - 1];
			i = 1;
		}
	}
	m[0] = 0x80000000u;
	mt->pos = MT_N;
}

/* Regenerates all 624 words at once, as numpy's mt19937_gen() does. */
static void mt19937_gen(struct mt19937 *mt)
{
	uint32_t y;
	int i;

	for (i = 0; i < MT_N - MT_M; i++) {
		y = (mt->key[i] & UPPER_MASK) | (mt->key[i + 1] & LOWER_MASK);
		mt->key[i] = mt->key[i + MT_M] ^ (y >> 1) ^ (-(y & 1) & MATRIX_A);
	}
	for (; i < MT_N - 1; i++) {
		y = (mt->key[i] & UPPER_MASK) | (mt->key[i + 1] & LOWER_MASK);
		mt->key[i] = mt->key[i + (MT_M - MT_N)] ^ (y >> 1) ^
			     (-(y & 1) & MATRIX_A);
	}
	y = (mt->key[MT_N - 1] & UPPER_MASK) | (mt->key[0] & LOWER_MASK);
	mt->key[MT_N - 1] = mt->key[MT_M - 1] ^ (y >> 1) ^ (-(y & 1) & MATRIX_A);
	mt->pos = 0;
}

uint32_t mt19937_next32(struct mt19937 *mt)
{
	uint32_t y;

	if (mt->pos >= MT_N)
		mt19937_gen(mt);
	y = mt->key[mt->pos++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

/* numpy's mt19937_next64: the first draw is the high word. */
static uint64_t mt19937_next64(struct mt19937 *mt)
{
	uint64_t hi = mt19937_next32(mt);

	return hi << 32 | mt19937_next32(mt);
}

/*
 * random_interval(): the smallest all-ones mask covering max, then draws
 * until one falls in [0, max].  32-bit draws while max fits in 32 bits,
 * which is what keeps the stream in step with numpy.
 */
uint64_t mt19937_interval(struct mt19937 *mt, uint64_t max)
{
	uint64_t mask = max, v;

	if (max == 0)
		return 0;
	mask |= mask >> 1;
	mask |= mask >> 2;
	mask |= mask >> 4;
	mask |= mask >> 8;
	mask |= mask >> 16;
	mask |= mask >> 32;
	if (max <= 0xffffffffu) {
		while ((v = (mt19937_next32(mt) & mask)) > max)
			;
	} else {
		while ((v = (mt19937_next64(mt) & mask)) > max)
			;
	}
	return v;
}

/* RandomState.shuffle: for i = n-1 down to 1, swap a[i] with a[interval(i)]. */
void mt19937_shuffle_u32(struct mt19937 *mt, uint32_t *a, size_t n)
{
	size_t i, j;
	uint32_t t;

	for (i = n; i-- > 1;) {
		j = (size_t)mt19937_interval(mt, i);
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}
