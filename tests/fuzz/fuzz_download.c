/*
 * fuzz_download.c - libFuzzer target for core/io/dlnames.c, the
 * downloader's readers of untrusted text.
 *
 * Feeds, by the first byte mod 3, the rest as:
 *  0: a file of URLs (dlnames_urls_parse).  Every URL handed out is one
 *     samplefs opens (source_is_url), no longer than the input, without
 *     blanks at its ends; its name is a single component dlnames_rel_ok
 *     accepts; a refused file hands out nothing; two parses agree; a
 *     callback that stops has its value returned.
 *  1: an x-goog-hash value: an MD5 found is one whose base64 is in the
 *     input, after "md5=".
 *  2: an ETag: an MD5 found is the input's 32 hex digits (quotes aside).
 * Seeds: tests/fuzz/seeds.py (URL files, GCS headers, S3 / GCS ETags).
 */
#include "fuzz.h"
#include "io/dlnames.h"

#include <openssl/evp.h>
#include <strings.h>

struct seen {
	unsigned n, stop_at;
	uint64_t hash;
	size_t max;
};

static int take(void *arg, const char *url, const char *rel)
{
	struct seen *s = arg;
	size_t len = strlen(url);

	FUZZ_CHECK(len > 0 && len <= s->max);
	FUZZ_CHECK(source_is_url(url));
	FUZZ_CHECK(!strchr(" \t\r\n", url[0]) && !strchr(" \t\r\n", url[len - 1]));
	FUZZ_CHECK(dlnames_rel_ok(rel) && !strchr(rel, '/'));
	for (size_t i = 0; i < len; i++)
		s->hash = (s->hash ^ (uint8_t)url[i]) * 1099511628211ull;
	if (++s->n == s->stop_at)
		return 7;
	return 0;
}

static void urls(const char *text, size_t size)
{
	struct seen a = { .hash = 14695981039346656037ull, .max = size }, b = a, c = a;
	int ra, rb, rc;

	ra = dlnames_urls_parse("fuzz/urls.txt", text, size, take, &a);
	FUZZ_CHECK(ra == 0 || ra == -EINVAL || ra == -ENOMEM);
	if (ra)
		FUZZ_CHECK(a.n == 0);
	rb = dlnames_urls_parse("fuzz/urls.txt", text, size, take, &b);
	FUZZ_CHECK(rb == ra && b.n == a.n && b.hash == a.hash);
	if (!ra && a.n) {
		c.stop_at = 1;
		rc = dlnames_urls_parse("fuzz/urls.txt", text, size, take, &c);
		FUZZ_CHECK(rc == 7 && c.n == 1);
	}
}

static void goog(const char *text, size_t size)
{
	unsigned char md5[16];
	char b64[32];
	const char *at;

	if (!dlnames_md5_of_goog_hash(text, size, md5))
		return;
	FUZZ_CHECK(EVP_EncodeBlock((unsigned char *)b64, md5, 16) == 24);
	/* some occurrence of its base64 follows "md5=" (an earlier one may
	 * be another hash's value: "crc32c=<the same text>, md5=...") */
	for (at = text; (at = memmem(at, size - (size_t)(at - text), b64, 24)); at++)
		if (at - text >= 4 && !strncasecmp(at - 4, "md5=", 4))
			break;
	FUZZ_CHECK(at != NULL);
}

static void etag(const char *text, size_t size)
{
	char *s = strndup(text, size), hex[33];
	unsigned char md5[16];
	const char *digits;
	int i;

	FUZZ_CHECK(s);
	if (dlnames_md5_of_etag(s, md5)) {
		digits = s[0] == '"' ? s + 1 : s;
		for (i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", md5[i]);
		FUZZ_CHECK(strlen(s) == 32 || strlen(s) == 34);
		FUZZ_CHECK(!strncasecmp(hex, digits, 32));
	}
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;

	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0: urls(text, size - 1); break;
	case 1: goog(text, size - 1); break;
	default: etag(text, size - 1); break;
	}
	return 0;
}
