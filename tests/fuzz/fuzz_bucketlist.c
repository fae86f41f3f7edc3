/*
 * fuzz_bucketlist.c - libFuzzer target for core/io/http/bucketlist.c, the
 * reader of S3 and GCS bucket listings and <Error> documents (what a store
 * sends us), through libexpat, and for bucket.c's key encoding.
 *
 * Feeds: the input as a listing page, then as the start of an error body,
 * then (up to its first NUL) as a key.  Checks: a parse that fails hands
 * out no entries; two parses agree (entries, page fields); keys are
 * NUL-terminated and no longer than the input; an <Error> hands out no
 * entries; a stopping callback's value comes back; a key encoded by AWS's
 * rules holds only unreserved bytes and %XX, and decodes back to itself.
 * Seeds: tests/fuzz/seeds.py (pages as Swift's s3api, AWS and GCS write
 * them: many pages, prefixes, entities, errors).
 */
#include "fuzz.h"
#include "io/http/bucket.h"
#include "io/http/bucketlist.h"

struct seen {
	unsigned n;
	uint64_t hash;
	unsigned stop_at;
	size_t max;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 1099511628211ull;
	return h;
}

static int take(void *arg, const struct bucketlist_entry *e)
{
	struct seen *s = arg;
	size_t len = strlen(e->key);

	FUZZ_CHECK(len <= s->max);
	FUZZ_CHECK(e->is_prefix == 0 || e->is_prefix == 1);
	FUZZ_CHECK(strnlen(e->stamp.etag, sizeof(e->stamp.etag)) < sizeof(e->stamp.etag));
	s->hash = mix(s->hash, e->key, len + 1);
	s->hash = mix(s->hash, &e->stamp.size, sizeof(e->stamp.size));
	s->hash = mix(s->hash, &e->stamp.mtime_ns, sizeof(e->stamp.mtime_ns));
	s->hash = mix(s->hash, e->stamp.etag, strlen(e->stamp.etag));
	s->hash = mix(s->hash, &e->generation, sizeof(e->generation));
	if (++s->n == s->stop_at)
		return 7;
	return 0;
}

static void same_page(const struct bucketlist_page *a, const struct bucketlist_page *b)
{
	FUZZ_CHECK(a->truncated == b->truncated && a->is_error == b->is_error);
	FUZZ_CHECK(!a->next == !b->next && (!a->next || !strcmp(a->next, b->next)));
	FUZZ_CHECK(!a->last_key == !b->last_key &&
		   (!a->last_key || !strcmp(a->last_key, b->last_key)));
	FUZZ_CHECK(!strcmp(a->code, b->code) && !strcmp(a->message, b->message));
}

static void keys(const char *s)
{
	char *e = bucket_encode(s, 1), *q = bucket_encode(s, 0), *d;
	const char *p;

	FUZZ_CHECK(e && q);
	for (p = q; *p; p++)
		FUZZ_CHECK(*p != '/' && *p != ' ' && *p != '+' && *p != '=' &&
			   (unsigned char)*p < 0x80);
	FUZZ_CHECK((d = bucket_decode(e)) && !strcmp(d, s));
	free(d);
	FUZZ_CHECK((d = bucket_decode(q)) && !strcmp(d, s));
	free(d);
	free(e);
	free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a = { .hash = 14695981039346656037ull, .max = size };
	struct seen b = a;
	struct bucketlist_page pa, pb;
	const char *t = (const char *)data;
	char *str;
	int ra, rb;

	ra = bucketlist_parse(t, size, take, &a, &pa);
	FUZZ_CHECK(ra == 0 || ra == -EBADMSG || ra == -ENOMEM);
	if (ra || pa.is_error)
		FUZZ_CHECK(a.n == 0);	/* a damaged page, an error: no entries */
	rb = bucketlist_parse(t, size, take, &b, &pb);
	FUZZ_CHECK(rb == ra && b.n == a.n && b.hash == a.hash);
	if (!ra)
		same_page(&pa, &pb);
	if (ra == 0 && a.n > 0) {
		struct seen c = { .hash = 14695981039346656037ull, .max = size,
				  .stop_at = 1 };
		struct bucketlist_page pc;

		FUZZ_CHECK(bucketlist_parse(t, size, take, &c, &pc) == 7 && c.n == 1);
		bucketlist_page_free(&pc);
	}
	bucketlist_page_free(&pa);
	bucketlist_page_free(&pb);
	ra = bucketlist_error(t, size, &pa);
	FUZZ_CHECK(ra == 0 || ra == -EBADMSG || ra == -ENOMEM);
	FUZZ_CHECK(ra || pa.is_error);
	bucketlist_page_free(&pa);
	if ((str = strndup(t, size))) {
		(void)bucketlist_time(str);
		keys(str);
		free(str);
	}
	return 0;
}
