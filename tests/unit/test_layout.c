/*
 * test_layout.c - core/layouts/layouts.c's table of layouts: each row
 * whole and found by its name, the options of each told apart by whole
 * words, and detection going down the rows in order (a directory with
 * both .npy and .tar files is npy; neither: no layout, EINVAL).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layouts/layouts.h"

static char dir[64];
/* what the tests create in dir, removed after each */
static const char *const made[] = { "b.tar", "a.npy", "ILSVRC2012_img_val.tar" };

static void mkdir_tmp(void)
{
	strcpy(dir, "/tmp/sfs-test-layout.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void rm_tmp(void)
{
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, made[i]);
		unlink(path);
	}
	cr_assert_eq(rmdir(dir), 0, "%s: something left in it", dir);
}

TestSuite(layout, .init = mkdir_tmp, .fini = rm_tmp);

Test(layout, rows_whole_and_found_by_name)
{
	const struct layout_kind *k, *j;
	size_t n = 0;

	for (k = layout_kinds; k->name; k++, n++) {
		cr_expect(k->title && k->detect && k->open && k->options,
			  "row %s is missing a field", k->name);
		cr_expect_eq(layout_kind(k->name), k, "layout_kind(%s)", k->name);
		for (j = layout_kinds; j < k; j++)
			cr_expect_str_neq(j->name, k->name);
	}
	cr_expect_eq(n, 4, "quickdraw, imagenet, npy, tar: %zu rows", n);
	cr_expect_null(layout_kind("bogus"));
	cr_expect_null(layout_kind("np"));
}

Test(layout, options_are_whole_words)
{
	const struct layout_kind *qd = layout_kind("quickdraw"),
				 *in = layout_kind("imagenet"),
				 *npy = layout_kind("npy"), *tar = layout_kind("tar");

	cr_assert(qd && in && npy && tar);
	cr_expect(layout_kind_takes(qd, "seed"));
	cr_expect(!layout_kind_takes(in, "seed"), "shard_seed is not seed");
	cr_expect(layout_kind_takes(in, "shard_seed"));
	cr_expect(layout_kind_takes(in, "shuffle_seed"));
	cr_expect(layout_kind_takes(qd, "shard_seed"), "it seeds /epochs");
	cr_expect(!layout_kind_takes(qd, "shuffle_seed"));
	cr_expect(layout_kind_takes(qd, "per_class") && layout_kind_takes(npy, "per_class"));
	cr_expect(!layout_kind_takes(tar, "per_class"));
	cr_expect(layout_kind_takes(tar, "recursive"));
	cr_expect(!layout_kind_takes(tar, "recursiv"), "a prefix is not the option");
	cr_expect(!layout_kind_takes(qd, "split=80/10/10"));
}

/* an empty file dir/name */
static void touch(const char *name)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert(f = fopen(path, "w"));
	fclose(f);
}

/* The layout chosen for dir; NULL with errno when none. */
static const char *chosen(void)
{
	struct sfs_opts o;

	sfs_opts_default(&o);
	o.source = dir;
	return layout_choose(&o, NULL);
}

Test(layout, detection_goes_down_the_rows)
{
	const char *name;

	errno = 0;
	cr_expect_null(chosen(), "an empty directory has no layout");
	cr_expect_eq(errno, EINVAL);
	touch("b.tar");
	cr_expect_str_eq(chosen(), "tar");
	touch("a.npy");
	name = chosen();
	cr_expect(name && !strcmp(name, "npy"), "npy's row comes before tar's: %s",
		  name ? name : "(none)");
	touch("ILSVRC2012_img_val.tar");
	name = chosen();
	cr_expect(name && !strcmp(name, "imagenet"), "imagenet's before both: %s",
		  name ? name : "(none)");
}
