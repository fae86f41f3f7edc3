/*
 * test_mt19937.c - core/formats/mt19937.c against numpy's legacy RandomState: raw
 * outputs, random_interval and shuffle, from fixtures written by
 * tests/fixtures/make_rng.py into $SFS_FIXTURES/rng.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mt19937.h"

#define FIXTURE_SUBDIR "rng"
#include "fixture.h"

static const uint32_t seeds[] = { 0, 1, 42, 4294967295u };
static const size_t sizes[] = { 0, 1, 2, 10, 1000, 100003 };

Test(mt19937, raw_stream_matches_numpy)
{
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		char name[64];
		size_t len;
		uint32_t *want;
		struct mt19937 mt;

		snprintf(name, sizeof(name), "raw_%u.u32", seeds[s]);
		want = (void *)slurp(name, &len);
		cr_assert_eq(len, 2000 * 4);
		mt19937_seed(&mt, seeds[s]);
		for (size_t i = 0; i < len / 4; i++)
			cr_assert_eq(mt19937_next32(&mt), want[i],
				     "seed %u draw %zu", seeds[s], i);
		free(want);
	}
}

Test(mt19937, interval_matches_numpy)
{
	size_t nmax, len;
	uint64_t *max = (void *)slurp("interval_max.u64", &nmax);

	nmax /= 8;
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		char name[64];
		uint64_t *want;
		struct mt19937 mt;

		snprintf(name, sizeof(name), "interval_%u.u64", seeds[s]);
		want = (void *)slurp(name, &len);
		cr_assert_eq(len / 8, nmax);
		mt19937_seed(&mt, seeds[s]);
		for (size_t i = 0; i < nmax; i++) {
			uint64_t v = mt19937_interval(&mt, max[i]);

			cr_assert_eq(v, want[i], "seed %u max %llu: %llu != %llu",
				     seeds[s], (unsigned long long)max[i],
				     (unsigned long long)v,
				     (unsigned long long)want[i]);
			cr_assert_leq(v, max[i]);
		}
		free(want);
	}
	free(max);
}

static void check_shuffle(uint32_t seed, size_t n)
{
	char name[64];
	size_t len;
	uint32_t *want, *a32;
	struct mt19937 mt;

	snprintf(name, sizeof(name), "shuffle_%u_%zu.u32", seed, n);
	want = (void *)slurp(name, &len);
	cr_assert_eq(len, n * 4, "%s: %zu bytes", name, len);
	a32 = malloc(n * 4 + 4);
	for (size_t i = 0; i < n; i++)
		a32[i] = (uint32_t)i;
	mt19937_seed(&mt, seed);
	mt19937_shuffle_u32(&mt, a32, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(a32[i], want[i], "seed %u n %zu at %zu", seed, n, i);
	free(a32);
	free(want);
}

Test(mt19937, shuffle_matches_numpy)
{
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			check_shuffle(seeds[s], sizes[k]);
}

/* np.random.seed([seed, e]): the permutation of epochs/<e> */
Test(mt19937, array_seed_matches_numpy)
{
	static const uint32_t keys[][2] = { { 0, 0 }, { 0, 1 }, { 3, 2147483647u },
					    { 4294967295u, 7 } };

	for (size_t s = 0; s < sizeof(keys) / sizeof(keys[0]); s++) {
		char name[64];
		size_t len;
		uint32_t *want, a[1000];
		struct mt19937 mt;

		snprintf(name, sizeof(name), "epoch_%u_%u.u32", keys[s][0], keys[s][1]);
		want = (void *)slurp(name, &len);
		cr_assert_eq(len, sizeof(a), "%s: %zu bytes", name, len);
		for (size_t i = 0; i < 1000; i++)
			a[i] = (uint32_t)i;
		mt19937_seed_array(&mt, keys[s], 2);
		mt19937_shuffle_u32(&mt, a, 1000);
		cr_assert_arr_eq(a, want, sizeof(a), "%s differs", name);
		free(want);
	}
}

/* A reseed restarts the stream: the split files depend on it. */
Test(mt19937, reseed_restarts)
{
	struct mt19937 mt;
	uint32_t a, b;

	mt19937_seed(&mt, 7);
	a = mt19937_next32(&mt);
	for (int i = 0; i < 1000; i++)
		mt19937_next32(&mt);
	mt19937_seed(&mt, 7);
	b = mt19937_next32(&mt);
	cr_assert_eq(a, b);
}
