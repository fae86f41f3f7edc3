/*
 * statdoc.c - the minimal stats.json reader of statdoc.h.  Bounded by len
 * everywhere: the fuzz target (tests/fuzz/fuzz_statdoc.c) feeds it bytes
 * with no terminator.
 */
#include "statdoc.h"

#include <stdlib.h>
#include <string.h>

/* The end of the string whose opening quote is at doc[i]: the index of its
 * closing quote, or len when it has none. */
static size_t string_end(const char *doc, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (doc[i] == '\\')
			i++;
		else if (doc[i] == '"')
			return i;
	}
	return len;
}

static size_t skip_space(const char *doc, size_t len, size_t i)
{
	while (i < len && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' ||
			   doc[i] == '\r'))
		i++;
	return i;
}

/* A JSON number at doc[i..len) into *out: 0 or -1. */
static int number_at(const char *doc, size_t len, size_t i, double *out)
{
	char tmp[64], *end;
	size_t n = 0;
	double v;

	while (i + n < len && n < sizeof(tmp) - 1 &&
	       strchr("0123456789+-.eE", doc[i + n]) && doc[i + n])
		n++;
	if (n == 0 || n == sizeof(tmp) - 1)
		return -1;
	memcpy(tmp, doc + i, n);
	tmp[n] = '\0';
	v = strtod(tmp, &end);
	if (end != tmp + n)
		return -1;	/* "-0.5e" and the like: *out untouched */
	*out = v;
	return 0;
}

int statdoc_get(const char *doc, size_t len, const char *key, double *out)
{
	size_t klen = strlen(key), i = 0, e, j;

	while (i < len) {
		if (doc[i] != '"') {
			i++;
			continue;
		}
		e = string_end(doc, len, i);
		if (e >= len)
			return -1;
		j = skip_space(doc, len, e + 1);
		if (j < len && doc[j] == ':' && e - i - 1 == klen &&
		    !memcmp(doc + i + 1, key, klen))
			return number_at(doc, len, skip_space(doc, len, j + 1), out);
		i = e + 1;
	}
	return -1;
}
