/*
 * test_arxlinks.c - the hard links an archive walk keeps until their
 * data comes (core/io/codecs/arxread.h, arxlinks): keeps and takes in a
 * random order against a plain list (the oracle: a take gives the oldest
 * link kept to that target), the bound ARXLINKS_MAX, and a walk's worst
 * case: the bound's worth of links kept and many more takes (most of
 * them of targets nothing links to, as every data entry of a big cpio
 * asks).  A linear search there does 65536 x 300,000 string compares,
 * minutes; the tree a few million: the test's timeout tells them apart,
 * no time is measured.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/codecs/arxread.h"

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

struct kept {
	char path[32], target[32];
	int gone;
};

Test(arxlinks, matches_a_list)
{
	static struct kept m[20000];
	struct arxlinks l = { 0 };
	size_t nm = 0, live = 0, i;
	uint64_t seed = 7;
	char t[32], *r;

	for (int op = 0; op < 40000; op++) {
		snprintf(t, sizeof(t), "d/t%u", rnd(&seed) % 50);
		if (rnd(&seed) % 2 && nm < sizeof(m) / sizeof(m[0])) {
			snprintf(m[nm].path, sizeof(m[nm].path), "p%d", op);
			strcpy(m[nm].target, t);
			cr_assert_eq(arxlinks_keep(&l, m[nm].path, t), 0);
			nm++, live++;
			continue;
		}
		for (i = 0; i < nm && (m[i].gone || strcmp(m[i].target, t)); i++)
			;
		r = arxlinks_take(&l, t);
		if (i == nm) {
			cr_assert_null(r, "op %d: %s taken for %s, none kept", op, r, t);
			continue;
		}
		cr_assert_not_null(r, "op %d: nothing for %s, %s kept", op, t, m[i].path);
		cr_assert_str_eq(r, m[i].path, "op %d: target %s", op, t);
		m[i].gone = 1;
		live--;
		free(r);
	}
	cr_assert_eq(l.n, live);
	arxlinks_free(&l);	/* what is left: ASan tells a leak */
	cr_assert_eq(l.n, 0);
	cr_assert_null(arxlinks_take(&l, "d/t0"));
}

Test(arxlinks, bounded)
{
	struct arxlinks l = { 0 };
	char p[32], *r;

	for (unsigned i = 0; i < ARXLINKS_MAX; i++) {
		snprintf(p, sizeof(p), "p%u", i);
		cr_assert_eq(arxlinks_keep(&l, p, i % 2 ? "odd" : "even"), 0);
	}
	cr_assert_eq(arxlinks_keep(&l, "one more", "odd"), 1, "past ARXLINKS_MAX");
	r = arxlinks_take(&l, "odd");
	cr_assert_str_eq(r, "p1");
	free(r);
	cr_assert_eq(arxlinks_keep(&l, "one more", "odd"), 0, "room again");
	for (unsigned i = 0; i < ARXLINKS_MAX / 2; i++) {
		r = arxlinks_take(&l, "even");
		snprintf(p, sizeof(p), "p%u", 2 * i);
		cr_assert_str_eq(r, p, "in the order kept");
		free(r);
	}
	cr_assert_null(arxlinks_take(&l, "even"));
	arxlinks_free(&l);
}

Test(arxlinks, many_links_many_takes)
{
	struct arxlinks l = { 0 };
	char p[48], t[48], *r;
	unsigned i;

	for (i = 0; i < ARXLINKS_MAX; i++) {
		snprintf(p, sizeof(p), "dir/link%u", i);
		snprintf(t, sizeof(t), "dir/file%u", i);
		cr_assert_eq(arxlinks_keep(&l, p, t), 0);
	}
	for (i = 0; i < 300000; i++) {
		snprintf(t, sizeof(t), "dir/other%u", i);
		cr_assert_null(arxlinks_take(&l, t));
	}
	for (i = ARXLINKS_MAX; i-- > 0;) {
		snprintf(t, sizeof(t), "dir/file%u", i);
		snprintf(p, sizeof(p), "dir/link%u", i);
		r = arxlinks_take(&l, t);
		cr_assert_not_null(r, "%s", t);
		cr_assert_str_eq(r, p);
		free(r);
	}
	cr_assert_eq(l.n, 0);
	arxlinks_free(&l);
}
