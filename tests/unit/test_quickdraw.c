/*
 * test_quickdraw.c - the pure parts of the Quick, Draw! layout against what
 * Python and numpy say (fixtures from tests/fixtures/make_quickdraw.py):
 * split sizes, the bytewise order of sample names across digit widths,
 * split lines; and strict sample-name parsing.  The mounted tree itself is
 * checked by tests/integration/test_quickdraw.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layouts/quickdraw_index.h"

static FILE *fixture(const char *name)
{
	char path[4096];
	const char *dir = getenv("SFS_FIXTURES");
	FILE *f;

	cr_assert(dir, "SFS_FIXTURES is not set (run tests/fixtures/make_quickdraw.py)");
	snprintf(path, sizeof(path), "%s/quickdraw/%s", dir, name);
	f = fopen(path, "r");
	cr_assert(f, "cannot open fixture %s", path);
	return f;
}

Test(quickdraw, split_counts_match_python)
{
	FILE *f = fixture("splits.txt");
	unsigned long long t, e[3];
	uint32_t p[3];
	uint64_t got[3];
	int cases = 0;

	while (fscanf(f, "%llu %u %u %u %llu %llu %llu", &t, &p[0], &p[1], &p[2],
		      &e[0], &e[1], &e[2]) == 7) {
		qd_split_counts(t, p, got);
		for (int i = 0; i < 3; i++)
			cr_expect_eq(got[i], e[i], "total %llu split %u/%u/%u part %d: %" PRIu64
				     ", python says %llu", t, p[0], p[1], p[2], i, got[i], e[i]);
		cases++;
	}
	fclose(f);
	cr_assert_gt(cases, 100);
}

Test(quickdraw, readdir_order_matches_python_sorted)
{
	FILE *f = fixture("names.txt");
	static char line[1 << 16];
	unsigned long long lo, hi, want;
	char *p, *end;
	uint64_t g;
	int ranges = 0, n;

	while (fgets(line, sizeof(line), f)) {
		lo = strtoull(line, &p, 10);
		hi = strtoull(p, &p, 10);
		g = qd_name_first(lo, hi);
		for (n = 0;; n++) {
			want = strtoull(p, &end, 10);
			if (end == p)
				break;
			p = end;
			cr_assert_eq(g, want, "range [%llu, %llu) entry %d: %" PRIu64
				     ", python sorted() says %llu", lo, hi, n, g, want);
			g = qd_name_next(lo, hi, g);
		}
		cr_assert_eq(g, UINT64_MAX, "range [%llu, %llu): more than %d names", lo, hi, n);
		ranges++;
	}
	fclose(f);
	cr_assert_gt(ranges, 5);
}

Test(quickdraw, name_less_agrees_with_strcmp)
{
	static const uint64_t v[] = { 0, 5, 99999, 100000, 999999, 1000000, 1000001,
				      9999999, 10000000, 100000, 123456, 1234567, 4294967295u };
	char a[32], b[32];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (size_t j = 0; j < sizeof(v) / sizeof(v[0]); j++) {
			qd_sample_name(a, sizeof(a), v[i]);
			qd_sample_name(b, sizeof(b), v[j]);
			cr_expect_eq(!!qd_name_less(v[i], v[j]), strcmp(a, b) < 0,
				     "%s vs %s", a, b);
		}
}

Test(quickdraw, sample_names_parse_strictly)
{
	static const char *const bad[] = {
		"1.npy", "00001.npy", "0000001.npy", "00000a.npy", "000000.npz",
		"000000.npy.x", "", ".npy", "-00001.npy", "+00001.npy", " 00001.npy",
		"000000", "000000.NPY", "0123456.npy", "99999999999999999999.npy",
	};
	char name[32];
	uint64_t g;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(qd_parse_sample_name(bad[i], &g), -ENOENT, "accepted '%s'", bad[i]);
	for (uint64_t v = 0; v < 3000000; v += 999) {
		qd_sample_name(name, sizeof(name), v);
		cr_assert_eq(qd_parse_sample_name(name, &g), 0, "rejected %s", name);
		cr_assert_eq(g, v);
	}
	cr_expect_eq(qd_parse_sample_name("1000000.npy", &g), 0);
	cr_expect_eq(g, 1000000);
	cr_expect_eq(qd_parse_sample_name("000042.npy", &g), 0);
	cr_expect_eq(g, 42);
}

Test(quickdraw, split_lines_match_python)
{
	FILE *f = fixture("lines.txt");
	char buf[4096], out[2 * QD_MAX_NAME + 80], *bar, *cls;
	unsigned long long g, label;
	int im, st, off, cases = 0;

	while (fgets(buf, sizeof(buf), f)) {
		cr_assert_eq(sscanf(buf, "%d %d %llu %llu %n", &im, &st, &g, &label, &off), 4);
		cls = buf + off;
		bar = strchr(cls, '|');
		cr_assert(bar);
		size_t len = qd_split_line(out, sizeof(out), im, st, cls, (size_t)(bar - cls),
					   g, label);
		cr_expect_str_eq(out, bar + 1);
		cr_expect_eq(len, strlen(bar + 1));
		cr_expect_eq(qd_split_line_len(im, st, (size_t)(bar - cls), g, label), len);
		cases++;
	}
	fclose(f);
	cr_assert_gt(cases, 5);
}

Test(quickdraw, class_of_skips_empty_classes)
{
	struct qd_class c[4] = {
		{ .gidx_base = 0, .n = 3 }, { .gidx_base = 3, .n = 0 },
		{ .gidx_base = 3, .n = 0 }, { .gidx_base = 3, .n = 5 },
	};
	uint32_t label;

	for (uint64_t g = 0; g < 8; g++) {
		qd_class_of(c, 4, g, &label);
		cr_expect_eq(label, g < 3 ? 0u : 3u, "gidx %" PRIu64 " -> %u", g, label);
	}
}

Test(quickdraw, class_names_checked)
{
	cr_expect(qd_name_ok("The Eiffel Tower", 16));
	cr_expect(qd_name_ok("t-shirt", 7));
	cr_expect(!qd_name_ok("", 0));
	cr_expect(!qd_name_ok(".", 1));
	cr_expect(!qd_name_ok("..", 2));
	cr_expect(!qd_name_ok("a/b", 3));
	cr_expect(!qd_name_ok("a\nb", 3));
	cr_expect(!qd_name_ok("a\tb", 3), "a TAB would split a split-file line");
	cr_expect(!qd_name_ok("a\rb", 3));
	cr_expect(!qd_name_ok("a\0b", 3));
	cr_expect(!qd_name_ok("a\x7f", 2));
	cr_expect(qd_name_ok("caf\xc3\xa9", 5), "UTF-8 is fine");
	{
		char big[QD_MAX_NAME + 1], show[QD_NAME_SHOW];

		memset(big, 'x', sizeof(big));
		cr_expect(qd_name_ok(big, QD_MAX_NAME));
		cr_expect(!qd_name_ok(big, QD_MAX_NAME + 1));
		cr_expect(strstr(qd_name_problem(big, QD_MAX_NAME + 1), "250 bytes"));
		qd_name_show(show, "a\tb\nc\x01", 6);
		cr_expect_str_eq(show, "a\\tb\\nc\\x01");
	}
}
