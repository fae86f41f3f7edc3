/*
 * opensrc.h - local files as io/source.h sources, for the criterion unit
 * tests of code that reads through sources.  Test-only: asserts instead of
 * returning errors.
 */
#ifndef SFS_TEST_OPENSRC_H
#define SFS_TEST_OPENSRC_H

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "io/source.h"

static inline struct source *open_src(const char *path)
{
	struct source *s;
	int rc = source_open(NULL, path, &s);

	cr_assert_eq(rc, 0, "source_open %s: %s", path, strerror(-rc));
	return s;
}

/* The file open on fd (an unlinked temporary file too), by its
 * /proc/self/fd name; fd stays the caller's. */
static inline struct source *open_fd_src(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open_src(path);
}

#endif
