/*
 * fuzz_httphdr.c - libFuzzer target for core/io/http/httphdr.c: the HTTP
 * response header values a server sends (Content-Range, ETag,
 * Retry-After, the stores' CRC32C), which samplefs acts on.
 *
 * Feeds: the first byte picks the header (mod 5: the three above, then
 * x-goog-hash and x-amz-checksum-crc32c); the rest, up to a NUL,
 * is its value.  Checks:
 * - Content-Range: 1 or 0; on 0 the outputs are untouched; on 1 either a
 *   range (from <= to, and to < total when the total is known) or none
 *   (from 1, to 0, a total), every number at most INT64_MAX, and the
 *   canonical spelling of what was read parses back to the same values.
 * - ETag: the copy is NUL-terminated, at most the buffer, and the value
 *   without its outer blanks cut to fit; STRONG/WEAK only for a quoted
 *   value with no quote inside, as a reference check written here.
 * - Retry-After: -1 or 0..HTTPHDR_RETRY_AFTER_MAX; a value of digits alone
 *   reads as its number (capped); a later `now` never waits longer.
 * - CRC32C: refused, or a value whose canonical spelling reads back the
 *   same.
 * Seeds: tests/fuzz/seeds.py.
 */
#include "fuzz.h"
#include "io/http/httphdr.h"

#define SENTINEL 0x5a5a5a5a5a5a5a5aull

static void content_range(const char *v)
{
	uint64_t from = SENTINEL, to = SENTINEL, f2, t2;
	int64_t total = (int64_t)SENTINEL, tt2;
	char canon[96];
	int ok = httphdr_content_range(v, &from, &to, &total);

	FUZZ_CHECK(ok == 0 || ok == 1);
	if (!ok) {
		FUZZ_CHECK(from == SENTINEL && to == SENTINEL &&
			   total == (int64_t)SENTINEL);
		return;
	}
	FUZZ_CHECK(total >= -1 && from <= (uint64_t)INT64_MAX && to <= (uint64_t)INT64_MAX);
	if (from > to) {	/* "bytes * /T" */
		FUZZ_CHECK(from == 1 && to == 0 && total >= 0);
		snprintf(canon, sizeof(canon), "bytes */%lld", (long long)total);
	} else {
		FUZZ_CHECK(total == -1 || to < (uint64_t)total);
		if (total < 0)
			snprintf(canon, sizeof(canon), "bytes %llu-%llu/*",
				 (unsigned long long)from, (unsigned long long)to);
		else
			snprintf(canon, sizeof(canon), "bytes %llu-%llu/%lld",
				 (unsigned long long)from, (unsigned long long)to,
				 (long long)total);
	}
	FUZZ_CHECK(httphdr_content_range(canon, &f2, &t2, &tt2) == 1);
	FUZZ_CHECK(f2 == from && t2 == to && tt2 == total);
}

static void etag(const char *v)
{
	char out[128];
	const char *s = v, *q;
	size_t n, i;
	enum httphdr_etag_kind want = HTTPHDR_ETAG_NONE,
			       got = httphdr_etag(v, out, sizeof(out));

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	FUZZ_CHECK(strlen(out) == (n < sizeof(out) - 1 ? n : sizeof(out) - 1));
	FUZZ_CHECK(!memcmp(out, s, strlen(out)));
	q = n >= 2 && !memcmp(s, "W/", 2) ? s + 2 : s;
	i = n - (size_t)(q - s);
	if (i >= 2 && q[0] == '"' && q[i - 1] == '"') {
		want = q == s ? HTTPHDR_ETAG_STRONG : HTTPHDR_ETAG_WEAK;
		for (size_t k = 1; k + 1 < i; k++)
			if (q[k] == '"' || (unsigned char)q[k] <= ' ' || q[k] == 0x7f)
				want = HTTPHDR_ETAG_NONE;
	}
	FUZZ_CHECK(got == want);
}

static void retry_after(const char *v)
{
	const time_t now = 1700000000;
	int64_t a = httphdr_retry_after(v, now), later;
	const char *s = v;
	size_t n;

	FUZZ_CHECK(a == -1 || (a >= 0 && a <= HTTPHDR_RETRY_AFTER_MAX));
	FUZZ_CHECK(httphdr_retry_after(v, now) == a);
	later = httphdr_retry_after(v, now + 1000);
	FUZZ_CHECK(later == a || (a >= 0 && later >= 0 && later <= a));
	while (*s == ' ' || *s == '\t')
		s++;
	n = strspn(s, "0123456789");
	if (n && !s[n + strspn(s + n, " \t")]) {
		/* digits alone: their number, capped (18 digits, leading
		 * zeros aside, are below 2^63; more are past the cap) */
		size_t z = strspn(s, "0");
		unsigned long long x = n - (z < n ? z : n) <= 18 ?
				       strtoull(s, NULL, 10) : ~0ull;

		FUZZ_CHECK(a == (int64_t)(x > HTTPHDR_RETRY_AFTER_MAX ?
					  HTTPHDR_RETRY_AFTER_MAX : x));
	}
}

/* Either refused, or a value that reads back the same from its own
 * spelling. */
static void crc32c_of(const char *v, int goog)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t crc = 0, again = 0;
	char canon[32];
	uint64_t x;
	int i;

	if (!httphdr_crc32c(v, goog, &crc))
		return;
	x = (uint64_t)crc << 4;
	memcpy(canon, "crc32c=", 7);
	for (i = 0; i < 6; i++)
		canon[7 + i] = b64[(x >> (6 * (5 - i))) & 63];
	memcpy(canon + 13, "==", 3);
	FUZZ_CHECK(httphdr_crc32c(goog ? canon : canon + 7, goog, &again) == 1);
	FUZZ_CHECK(again == crc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v;

	if (size < 1)
		return 0;
	if (!(v = malloc(size)))
		return 0;
	memcpy(v, data + 1, size - 1);
	v[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		content_range(v);
		break;
	case 1:
		etag(v);
		break;
	case 2:
		retry_after(v);
		break;
	default:
		crc32c_of(v, data[0] % 5 == 3);
		break;
	}
	free(v);
	return 0;
}
