/*
 * test_spill.c - core/index/spill.c: records come back in order (checked
 * against qsort of the same records) and complete, whether they fit in
 * memory or are spilled to many runs merged in several passes; a spool
 * keeps the order of adding; a second read gives the same; no scratch
 * file is left in the directory.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/spill.h"

static char dir[64], prefix[128];

static void mkdir_tmp(void)
{
	strcpy(dir, "/tmp/sfs-test-spill.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(prefix, sizeof(prefix), "%s/x.sfsidx", dir);
}

/* The directory must be empty: every scratch file was unlinked. */
static void rm_tmp(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	cr_expect_eq(n, 0, "%d files left in %s", n, dir);
	rmdir(dir);
}

TestSuite(spill, .init = mkdir_tmp, .fini = rm_tmp);

/* A record: a key, its number and a variable tail of key-derived bytes. */
struct rec {
	uint32_t key, no, tail;
	unsigned char bytes[];
};

static int rec_cmp(const void *a, const void *b, void *arg)
{
	const struct rec *x = a, *y = b;

	(void)arg;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->no > y->no) - (x->no < y->no);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Adds n records, reads them twice, checks order, count and contents. */
static void sort_check(size_t budget, uint32_t n, int sorted, uint32_t *runs)
{
	struct spill *s;
	uint64_t *want = malloc(n * sizeof(*want));
	unsigned char buf[sizeof(struct rec) + 600];
	struct rec *r = (struct rec *)buf;
	uint32_t i, pass;

	srand(7);
	cr_assert_eq(spill_open(&s, prefix, budget, sorted ? rec_cmp : NULL, NULL), 0);
	for (i = 0; i < n; i++) {
		r->key = (uint32_t)rand() % (n / 4 + 1);
		r->no = i;
		r->tail = (uint32_t)rand() % 600;
		memset(r->bytes, (int)(r->key + r->no), r->tail);
		want[i] = (uint64_t)r->key << 32 | i;
		cr_assert_eq(spill_add(s, r, sizeof(*r) + r->tail), 0);
	}
	if (sorted)
		qsort(want, n, sizeof(*want), u64_cmp);
	else
		for (i = 0; i < n; i++)
			want[i] = i;
	for (pass = 0; pass < 2; pass++) {
		const void *p;
		size_t len;
		int rc;

		cr_assert_eq(spill_rewind(s), 0);
		for (i = 0; (rc = spill_next(s, &p, &len)) == 1; i++) {
			const struct rec *g = p;
			uint32_t k;

			cr_assert_lt(i, n);
			cr_assert_eq((uintptr_t)p % 8, 0);
			cr_assert_geq(len, sizeof(*g) + g->tail);
			cr_assert_eq(g->no, (uint32_t)want[i], "record %u: got no %u", i, g->no);
			for (k = 0; k < g->tail; k++)
				cr_assert_eq(g->bytes[k], (unsigned char)(g->key + g->no));
		}
		cr_assert_eq(rc, 0);
		cr_assert_eq(i, n);
	}
	cr_assert_eq(spill_count(s), n);
	*runs = spill_runs(s);
	spill_close(s);
	free(want);
}

Test(spill, in_memory_when_it_fits)
{
	uint32_t runs;

	sort_check(64 << 20, 5000, 1, &runs);
	cr_assert_eq(runs, 0);
}

Test(spill, many_runs_merged_in_passes)
{
	uint32_t runs;

	/* ~1.2 MB of records in 8 KiB runs: hundreds of runs, fan-in 2 */
	sort_check(8 << 10, 4000, 1, &runs);
	cr_assert_eq(runs, 2, "merged down to the fan-in: %u runs", runs);
}

Test(spill, merged_in_one_pass_when_fanin_allows)
{
	uint32_t runs;

	sort_check(1 << 20, 8000, 1, &runs);
	cr_assert_gt(runs, 1);
	cr_assert_leq(runs, 16);
}

Test(spill, spool_keeps_the_order_added)
{
	uint32_t runs;

	sort_check(8 << 10, 3000, 0, &runs);
	cr_assert_gt(runs, 1);
}

Test(spill, empty_and_oversized)
{
	struct spill *s;
	const void *p;
	size_t len;
	static char big[SPILL_MAX_REC + 1];

	cr_assert_eq(spill_open(&s, prefix, 4096, rec_cmp, NULL), 0);
	cr_assert_eq(spill_add(s, big, sizeof(big)), -EINVAL);
	cr_assert_eq(spill_rewind(s), 0);
	cr_assert_eq(spill_next(s, &p, &len), 0);
	spill_close(s);
}

Test(spill, scratch_dir_missing_is_an_error)
{
	struct spill *s;
	char bad[200];
	int rc = 0;
	uint32_t i;

	snprintf(bad, sizeof(bad), "%s/none/x.sfsidx", dir);
	cr_assert_eq(spill_open(&s, bad, 4096, rec_cmp, NULL), 0);
	for (i = 0; rc == 0 && i < 1000; i++) {
		struct rec r = { i, i, 0 };

		rc = spill_add(s, &r, sizeof(r));
	}
	cr_assert_eq(rc, -ENOENT);
	spill_close(s);
}
