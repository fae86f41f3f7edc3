/*
 * capture.h - stderr into a temporary file from capture_start until
 * capture_end, which returns what was printed (malloc'ed), so a unit test
 * can check a warning or error message.  Test-only; not thread-safe (it
 * moves fd 2 of the whole process).
 */
#ifndef SFS_TEST_CAPTURE_H
#define SFS_TEST_CAPTURE_H

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct capture {
	FILE *tmp;
	int saved;
};

static inline void capture_start(struct capture *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	c->saved = dup(2);
	cr_assert(c->tmp && c->saved >= 0);
	dup2(fileno(c->tmp), 2);
}

static inline char *capture_end(struct capture *c)
{
	long n;
	char *text;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	n = ftell(c->tmp);
	text = calloc(1, (size_t)n + 1);
	cr_assert(text && n >= 0);
	rewind(c->tmp);
	cr_assert_eq(fread(text, 1, (size_t)n, c->tmp), (size_t)n);
	fclose(c->tmp);
	return text;
}

#endif
