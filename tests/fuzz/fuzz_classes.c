/*
 * fuzz_classes.c - libFuzzer target for qd_classes_parse
 * (core/layouts/quickdraw_scan.c), the reader of a Quick, Draw! classes
 * file: classes.txt next to the data (local, or over HTTP) or -o classes=.
 *
 * Feeds: the input as the file's bytes.  Checks it against a reference
 * reading written here, line by line: the names are the non-blank lines,
 * one trailing '\r' dropped, in order; a line qd_name_problem refuses, or a
 * name on two lines, gives -EINVAL; over 100,000 names -E2BIG; a refusal
 * leaves no names.  Parsing the same bytes twice agrees.  Seeds:
 * tests/fuzz/seeds.py (classes files as the dataset and users write them).
 */
#include "fuzz.h"
#include "layouts/quickdraw_index.h"

#define NAMES_MAX 100000

struct line {
	const char *p;
	size_t len;
};

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->p, y->p, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The reference: the lines' names into l (room for size + 1), their count,
 * and the errno qd_classes_parse must give (0 when none). */
static int reference(const char *buf, size_t size, struct line *l, size_t *n)
{
	struct line *sorted;
	const char *p = buf, *end = buf + size, *nl;
	size_t i;
	int bad = 0;

	*n = 0;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		l[*n] = (struct line){ p, (size_t)(nl - p) };
		if (l[*n].len && p[l[*n].len - 1] == '\r')
			l[*n].len--;
		if (l[*n].len) {
			if (qd_name_problem(l[*n].p, l[*n].len))
				return EINVAL;	/* the first bad line ends the parse */
			if (++*n > NAMES_MAX)
				bad = E2BIG;
		}
		p = nl + 1;
		if (bad)
			return bad;
	}
	sorted = malloc((*n + 1) * sizeof(*sorted));
	FUZZ_CHECK(sorted);
	memcpy(sorted, l, *n * sizeof(*sorted));
	qsort(sorted, *n, sizeof(*sorted), cmp_line);
	for (i = 1; i < *n && !bad; i++)
		if (!cmp_line(&sorted[i - 1], &sorted[i]))
			bad = EINVAL;
	free(sorted);
	return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qd_names a = {0}, b = {0};
	struct line *l = malloc((size + 1) * sizeof(*l));
	size_t n, i;
	int want, ra, rb;

	FUZZ_CHECK(l);
	want = reference((const char *)data, size, l, &n);
	ra = qd_classes_parse("fuzz/classes.txt", (const char *)data, size, &a);
	if (ra == -ENOMEM)
		goto out;
	FUZZ_CHECK(ra == -want);
	if (ra) {
		FUZZ_CHECK(a.n == 0 && a.v == NULL);
		goto out;
	}
	FUZZ_CHECK(a.n == n);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(strlen(a.v[i]) == l[i].len && !memcmp(a.v[i], l[i].p, l[i].len));
	rb = qd_classes_parse("fuzz/classes.txt", (const char *)data, size, &b);
	FUZZ_CHECK(rb == 0 && b.n == a.n);
	for (i = 0; i < n; i++)
		FUZZ_CHECK(!strcmp(a.v[i], b.v[i]));
out:
	qd_names_free(&a);
	qd_names_free(&b);
	free(l);
	return 0;
}
