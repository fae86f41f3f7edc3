/*
 * fixture.h - reading the oracle fixtures that tests/fixtures/make_*.py
 * write into $SFS_FIXTURES, for the criterion unit tests.  Each test
 * defines FIXTURE_SUBDIR (its folder under $SFS_FIXTURES) before including
 * this.  Manifests are text files of space-separated words, one fixture a
 * line, the first word saying what kind of check the line is for.
 * Test-only code: asserts instead of returning errors.
 */
#ifndef SFS_TEST_FIXTURE_H
#define SFS_TEST_FIXTURE_H

#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURE_SUBDIR
#error define FIXTURE_SUBDIR before including fixture.h
#endif

#define MAXTOK 24

struct line {
	int ntok;
	char *tok[MAXTOK];
};

static inline char *fixture_path(const char *name)
{
	const char *dir = getenv("SFS_FIXTURES");
	char *p;

	cr_assert(dir, "SFS_FIXTURES is not set (run tests/fixtures/make_*.py DIR)");
	cr_assert(asprintf(&p, "%s/%s/%s", dir, FIXTURE_SUBDIR, name) > 0);
	return p;
}

/* The whole fixture file, malloc'ed and NUL-terminated (for text oracles). */
static inline uint8_t *slurp(const char *name, size_t *len)
{
	char *path = fixture_path(name);
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert(buf);
	cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	free(path);
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

/* Calls fn for every line of manifest.txt whose first word is `kind`;
 * returns how many there were. */
static inline int each(const char *kind, void (*fn)(struct line *))
{
	char *path = fixture_path("manifest.txt");
	FILE *f = fopen(path, "r");
	char buf[1024], *save;
	struct line l;
	int count = 0;

	cr_assert(f, "cannot open %s", path);
	while (fgets(buf, sizeof(buf), f)) {
		l.ntok = 0;
		for (char *t = strtok_r(buf, " \n", &save); t && l.ntok < MAXTOK;
		     t = strtok_r(NULL, " \n", &save))
			l.tok[l.ntok++] = t;
		if (l.ntok && !strcmp(l.tok[0], kind)) {
			fn(&l);
			count++;
		}
	}
	fclose(f);
	free(path);
	return count;
}

#endif
