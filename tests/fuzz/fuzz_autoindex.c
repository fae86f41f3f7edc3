/*
 * fuzz_autoindex.c - libFuzzer target for core/io/http/autoindex.c, the reader
 * of nginx's JSON directory listings (what an HTTP server sends us).
 *
 * Feeds: the input as a listing.  Every name handed out must be one a
 * directory can hold (not "", ".", "..", no '/', NUL-terminated within
 * the input's length); a parse that fails hands out nothing; parsing the
 * same text twice gives the same names; a callback that stops the listing
 * has its value returned.  Seeds: tests/fuzz/seeds.py (listings as nginx
 * writes them, with escapes and surrogate pairs).
 */
#include "fuzz.h"
#include "io/http/autoindex.h"

struct seen {
	unsigned n;
	uint64_t hash;	/* of the names in order */
	unsigned stop_at;
	size_t max;
};

static int take(void *arg, const char *name, int is_dir)
{
	struct seen *s = arg;
	size_t len = strlen(name);

	FUZZ_CHECK(len > 0 && len <= s->max * 3);	/* \uXXXX: 3 bytes from 6 */
	FUZZ_CHECK(strcmp(name, ".") && strcmp(name, ".."));
	FUZZ_CHECK(!strchr(name, '/'));
	FUZZ_CHECK(is_dir == 0 || is_dir == 1);
	for (size_t i = 0; i < len; i++)
		s->hash = (s->hash ^ (uint8_t)name[i]) * 1099511628211ull;
	s->hash = (s->hash ^ (uint64_t)is_dir) * 1099511628211ull;
	if (++s->n == s->stop_at)
		return 7;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a = { .hash = 14695981039346656037ull, .max = size };
	struct seen b = a;
	int ra, rb;

	ra = autoindex_parse((const char *)data, size, take, &a);
	FUZZ_CHECK(ra == 0 || ra == -ENOTSUP || ra == -ENOMEM);
	if (ra)
		FUZZ_CHECK(a.n == 0);	/* a damaged listing gives no names */
	rb = autoindex_parse((const char *)data, size, take, &b);
	FUZZ_CHECK(rb == ra && b.n == a.n && b.hash == a.hash);
	if (ra == 0 && a.n > 0) {
		struct seen c = { .hash = 14695981039346656037ull, .max = size,
				  .stop_at = 1 };

		FUZZ_CHECK(autoindex_parse((const char *)data, size, take, &c) == 7);
		FUZZ_CHECK(c.n == 1);
	}
	return 0;
}
