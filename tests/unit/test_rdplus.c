/*
 * test_rdplus.c - fs/rdplus.c, the guess of whether a listing's files get
 * their attributes: replayed request sequences of the tools it is for.
 * `find` (lists, never stats files) must never get attributes; `du` and
 * `ls -lR` (list a directory, then stat every file) must get them from the
 * second directory on, with only the probes left for lookups; a tool that
 * changes mid-walk is followed within one directory.
 */
#include <criterion/criterion.h>

#include "rdplus.h"

#define FILES 100

/* Lists `dir` of FILES files in replies of `per_reply` entries; returns
 * how many were given attributes; looks up the names given none when
 * `stat_after` (what the kernel would ask for them). */
static int walk_dir(struct rdplus *r, uint64_t dir, int per_reply, int stat_after)
{
	int attrs = 0, probes = 0, i;

	for (i = 0; i < FILES; i++) {
		if (i % per_reply == 0)
			rdplus_listing(r, dir, (uint64_t)i);
		if (rdplus_file_entry(r, dir))
			attrs++;
		else
			probes++;
	}
	for (i = 0; stat_after && i < probes; i++)
		rdplus_lookup(r, dir);
	return attrs;
}

Test(rdplus, find_never_gets_attributes)
{
	struct rdplus r;

	rdplus_init(&r);
	for (uint64_t d = 10; d < 20; d++)
		cr_assert_eq(walk_dir(&r, d, 30, 0), 0, "dir %lu", (unsigned long)d);
	rdplus_destroy(&r);
}

Test(rdplus, du_gets_attributes_from_the_second_directory)
{
	struct rdplus r;
	int a;

	rdplus_init(&r);
	cr_assert_eq(walk_dir(&r, 10, 30, 1), 0, "the first directory is a probe");
	for (uint64_t d = 11; d < 20; d++) {
		a = walk_dir(&r, d, 30, 1);
		/* every file but the probes of each listing */
		cr_assert_eq(a, FILES - 8, "dir %lu: %d with attributes", (unsigned long)d, a);
	}
	rdplus_destroy(&r);
}

Test(rdplus, a_tool_that_stops_stating_is_followed)
{
	struct rdplus r;

	rdplus_init(&r);
	walk_dir(&r, 1, 50, 1);
	cr_assert_gt(walk_dir(&r, 2, 50, 1), 0);
	/* find over the next directory: its probes get no lookups */
	cr_assert_gt(walk_dir(&r, 3, 50, 0), 0, "the guess is made before");
	cr_assert_eq(walk_dir(&r, 4, 50, 0), 0, "then names only");
	cr_assert_eq(walk_dir(&r, 5, 50, 1), 0);
	cr_assert_gt(walk_dir(&r, 6, 50, 1), 0, "and back to attributes");
	rdplus_destroy(&r);
}

Test(rdplus, directories_of_directories_change_nothing)
{
	struct rdplus r;

	rdplus_init(&r);
	walk_dir(&r, 1, 50, 1);
	/* a listing of subdirectories only: no file entries, no evidence */
	rdplus_listing(&r, 2, 0);
	cr_assert_gt(walk_dir(&r, 3, 50, 1), 0, "still on after the parent");
	rdplus_destroy(&r);
}

Test(rdplus, lookups_elsewhere_are_not_evidence)
{
	struct rdplus r;

	rdplus_init(&r);
	walk_dir(&r, 1, 50, 0);
	/* a loader opening files of other directories */
	for (int i = 0; i < 1000; i++)
		rdplus_lookup(&r, 99);
	cr_assert_eq(walk_dir(&r, 2, 50, 0), 0);
	cr_assert_eq(walk_dir(&r, 3, 50, 0), 0);
	rdplus_destroy(&r);
}
