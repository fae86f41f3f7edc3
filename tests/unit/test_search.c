/*
 * test_search.c - core/search.h, the one binary search: its partition
 * point against a linear scan (the oracle) over random sorted arrays with
 * runs of equal keys, empty and one-element ranges, sub-ranges, lo > hi,
 * the two idioms of its header (lower bound, last at or before), a test
 * evaluated only inside [lo, hi) and about log2(n) times, and a test that
 * fails part-way (the sticky error of tarindex_lookup).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "search.h"

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

/* n sorted keys in [0, span) with duplicates */
static uint32_t *sorted_keys(uint64_t *s, uint32_t n, uint32_t span)
{
	uint32_t *a = malloc((n ? n : 1) * sizeof(*a)), i, j, t;

	cr_assert(a);
	for (i = 0; i < n; i++)
		a[i] = rnd(s) % span;
	for (i = 1; i < n; i++)	/* insertion sort: n is small */
		for (j = i; j > 0 && a[j - 1] > a[j]; j--)
			t = a[j], a[j] = a[j - 1], a[j - 1] = t;
	return a;
}

Test(search, matches_linear_scan)
{
	uint64_t seed = 42;

	for (int round = 0; round < 2000; round++) {
		uint32_t n = rnd(&seed) % 40, span = 1 + rnd(&seed) % 50;
		uint32_t *a = sorted_keys(&seed, n, span);
		uint32_t lo = n ? rnd(&seed) % (n + 1) : 0;
		uint32_t hi = lo + (n - lo ? rnd(&seed) % (n - lo + 1) : 0);
		uint32_t x = rnd(&seed) % (span + 2), want, got, last;

		/* lower bound in [lo, hi): the first a[i] >= x */
		for (want = lo; want < hi && a[want] < x; want++)
			;
		got = SFS_PARTITION_POINT(uint32_t, lo, hi, i, a[i] < x);
		cr_assert_eq(got, want, "n %u [%u,%u) x %u: %u, linear %u", n, lo, hi,
			     x, got, want);
		/* last at or before x over the whole array (0 when none is) */
		for (last = 0, want = 0; want < n; want++)
			if (a[want] <= x)
				last = want;
		got = SFS_PARTITION_POINT(uint32_t, 1, n, i, a[i] <= x) - 1;
		if (n && a[0] <= x)
			cr_assert_eq(got, last, "n %u x %u: %u, linear %u", n, x, got, last);
		else
			cr_assert_eq(got, 0);
		free(a);
	}
}

Test(search, test_stays_in_range_and_is_logarithmic)
{
	uint64_t a[1000];
	unsigned calls = 0, outside = 0;

	for (int i = 0; i < 1000; i++)
		a[i] = 2 * (uint64_t)i;
	for (uint64_t x = 0; x < 2002; x += 7) {
		uint64_t got;

		calls = 0;
		got = SFS_PARTITION_POINT(uint64_t, 100, 900, i,
					  (outside += i < 100 || i >= 900, calls++,
					   a[i] < x));
		cr_assert_eq(outside, 0);
		cr_assert_eq(got, x <= 200 ? 100 : x > 1798 ? 900 : (x + 1) / 2);
		cr_assert_leq(calls, 10u);	/* ceil(log2(800)) */
	}
}

Test(search, empty_and_reversed_ranges)
{
	int evaluated = 0;

	cr_assert_eq(SFS_PARTITION_POINT(int, 5, 5, i, (evaluated++, 1)), 5);
	cr_assert_eq(SFS_PARTITION_POINT(int, 7, 3, i, (evaluated++, 1)), 7);
	cr_assert_eq(evaluated, 0);
	cr_assert_eq(SFS_PARTITION_POINT(size_t, 0, 1, i, i < 1), 1);
	cr_assert_eq(SFS_PARTITION_POINT(size_t, 0, 1, i, 0), 0);
}

Test(search, sticky_error_ends_the_prefix)
{
	uint32_t a[64];
	int rc = 0;
	uint32_t got;

	for (uint32_t i = 0; i < 64; i++)
		a[i] = i;
	/* element 40 "cannot be read": the search must report it when it
	 * touches it, and never claim a position past it */
	got = SFS_PARTITION_POINT(uint32_t, 0, 64, i,
				  rc == 0 && (i == 40 ? (rc = -5) : 0) == 0 && a[i] < 45);
	cr_assert_eq(rc, -5);
	cr_assert_leq(got, 40u);
	rc = 0;
	got = SFS_PARTITION_POINT(uint32_t, 0, 64, i,
				  rc == 0 && (i == 40 ? (rc = -5) : 0) == 0 && a[i] < 10);
	cr_assert_eq(rc, 0);	/* never looked at 40 */
	cr_assert_eq(got, 10);
}
