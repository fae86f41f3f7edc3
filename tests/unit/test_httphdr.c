/*
 * test_httphdr.c - HTTP response header values (core/io/http/httphdr.c):
 * Content-Range, ETag and Retry-After as servers send them and as they
 * must not be read.  Oracles: RFC 9110's grammar and examples (14.4's
 * "bytes 42-1233/1234", "bytes 42-1233/\*", "bytes \*\/1234"; 10.2.3's
 * "120" and "Fri, 31 Dec 1999 23:59:59 GMT"; the three date formats of
 * 5.6.7, all naming 784111777 = 1994-11-06 08:49:37 UTC), and the values
 * written into the cases here.
 */
#include <criterion/criterion.h>

#include "io/http/httphdr.h"

#include <stdint.h>
#include <string.h>

static int cr(const char *v, uint64_t *a, uint64_t *b, int64_t *t)
{
	*a = *b = 777;
	*t = 777;
	return httphdr_content_range(v, a, b, t);
}

Test(httphdr, content_range_valid)
{
	uint64_t a, b;
	int64_t t;

	cr_assert_eq(cr("bytes 42-1233/1234", &a, &b, &t), 1);
	cr_assert(a == 42 && b == 1233 && t == 1234);
	cr_assert_eq(cr("bytes 42-1233/*", &a, &b, &t), 1);
	cr_assert(a == 42 && b == 1233 && t == -1);
	cr_assert_eq(cr("bytes */1234", &a, &b, &t), 1);
	cr_assert(a == 1 && b == 0 && t == 1234, "no range: from > to");
	cr_assert_eq(cr("  bytes 0-0/1 \t", &a, &b, &t), 1);
	cr_assert(a == 0 && b == 0 && t == 1);
	cr_assert_eq(cr("bytes 9223372036854775806-9223372036854775806/9223372036854775807",
			&a, &b, &t), 1);
	cr_assert(a == INT64_MAX - 1 && b == INT64_MAX - 1 && t == INT64_MAX);
}

Test(httphdr, content_range_refused_untouched)
{
	static const char *const bad[] = {
		"", "bytes", "bytes ", "bytes 1-2", "bytes 1-2/", "items 0-1/2",
		"Bytes 0-1/2", "bytes -5-10/100", "bytes 5--10/100", "bytes +5-10/100",
		"bytes 10-5/100", "bytes 0-100/100", "bytes 0-1/2x", "bytes 0-1/2 3",
		"bytes */*", "bytes 0-18446744073709551616/18446744073709551617",
		"bytes 0-9223372036854775808/*", "bytes 0-1/9223372036854775808",
		"bytes 0x1-2/3", "bytes 1 -2/3", "bytes 1-2 /3", "bytes 1-2/ 3",
	};
	uint64_t a, b;
	int64_t t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(cr(bad[i], &a, &b, &t), 0, "\"%s\" taken", bad[i]);
		cr_assert(a == 777 && b == 777 && t == 777, "\"%s\" wrote", bad[i]);
	}
}

Test(httphdr, etag_kinds_and_copies)
{
	char out[128], small[6];

	cr_assert_eq(httphdr_etag("\"9a0364b9e99bb480dd25e1f0284c8555\"", out,
				  sizeof(out)), HTTPHDR_ETAG_STRONG);
	cr_assert_str_eq(out, "\"9a0364b9e99bb480dd25e1f0284c8555\"");
	cr_assert_eq(httphdr_etag(" W/\"5f7a-1b2c\"\t", out, sizeof(out)), HTTPHDR_ETAG_WEAK);
	cr_assert_str_eq(out, "W/\"5f7a-1b2c\"", "W/ and quotes kept, blanks dropped");
	cr_assert_eq(httphdr_etag("\"\"", out, sizeof(out)), HTTPHDR_ETAG_STRONG);
	cr_assert_eq(httphdr_etag("abc123", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_str_eq(out, "abc123", "an unquoted ETag is still copied");
	cr_assert_eq(httphdr_etag("\"abc", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_eq(httphdr_etag("\"a\"b\"", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_eq(httphdr_etag("\"a b\"", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_eq(httphdr_etag("W/", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_eq(httphdr_etag("\"x\" junk", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_eq(httphdr_etag("", out, sizeof(out)), HTTPHDR_ETAG_NONE);
	cr_assert_str_eq(out, "");
	cr_assert_eq(httphdr_etag("\"abcdefgh\"", small, sizeof(small)), HTTPHDR_ETAG_STRONG,
		     "the kind is the whole value's");
	cr_assert_str_eq(small, "\"abcd", "cut to the buffer, NUL-terminated");
}

Test(httphdr, retry_after)
{
	const time_t now = 946684799 - 60;	/* a minute before RFC 9110's date */

	cr_assert_eq(httphdr_retry_after("120", now), 120);
	cr_assert_eq(httphdr_retry_after(" 0 ", now), 0);
	cr_assert_eq(httphdr_retry_after("000000000000000000000000000007", now), 7);
	cr_assert_eq(httphdr_retry_after("86401", now), HTTPHDR_RETRY_AFTER_MAX);
	cr_assert_eq(httphdr_retry_after("99999999999999999999999999999999", now),
		     HTTPHDR_RETRY_AFTER_MAX, "an overflow is a long wait");
	cr_assert_eq(httphdr_retry_after("Fri, 31 Dec 1999 23:59:59 GMT", now), 60);
	cr_assert_eq(httphdr_retry_after("Fri, 31 Dec 1999 23:59:59 GMT", now + 3600), 0,
		     "a date past is no wait");
	cr_assert_eq(httphdr_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 5), 5);
	cr_assert_eq(httphdr_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", 784111777 - 5), 5);
	cr_assert_eq(httphdr_retry_after("Sun Nov  6 08:49:37 1994", 784111777 - 5), 5);
	cr_assert_eq(httphdr_retry_after("Fri, 31 Dec 2049 23:59:59 GMT", now),
		     HTTPHDR_RETRY_AFTER_MAX);
	cr_assert_eq(httphdr_retry_after("-5", now), -1);
	cr_assert_eq(httphdr_retry_after("30 seconds", now), -1);
	cr_assert_eq(httphdr_retry_after("", now), -1);
	cr_assert_eq(httphdr_retry_after("soon", now), -1);
}

Test(httphdr, crc32c_of_stores)
{
	uint32_t crc = 7;

	/* CRC32C of "123456789" is 0xe3069283: base64 of e3 06 92 83 */
	cr_assert_eq(httphdr_crc32c("4waSgw==", 0, &crc), 1);
	cr_assert_eq(crc, 0xe3069283u);
	crc = 7;
	cr_assert_eq(httphdr_crc32c("crc32c=4waSgw==", 1, &crc), 1);
	cr_assert_eq(crc, 0xe3069283u);
	crc = 7;
	cr_assert_eq(httphdr_crc32c("md5=XrY7u+Ae7tCTyyK7j1rNww==, crc32c=AAAAAQ==", 1, &crc), 1);
	cr_assert_eq(crc, 1u);
	crc = 7;
	cr_assert_eq(httphdr_crc32c(" CRC32C=AAAAAQ== ,md5=x", 1, &crc), 1);
	cr_assert_eq(crc, 1u);
	crc = 7;
	cr_assert_eq(httphdr_crc32c("md5=XrY7u+Ae7tCTyyK7j1rNww==", 1, &crc), 0);
	cr_assert_eq(httphdr_crc32c("crc32c=AAAAAQ", 1, &crc), 0, "no padding");
	cr_assert_eq(httphdr_crc32c("crc32c=AAAAAR==", 1, &crc), 0, "bits past the 4 bytes");
	cr_assert_eq(httphdr_crc32c("crc32c=AAA*AQ==", 1, &crc), 0);
	cr_assert_eq(httphdr_crc32c("AAAAAQ==x", 0, &crc), 0);
	cr_assert_eq(httphdr_crc32c("crc32c=AAAAAQ==", 0, &crc), 0, "S3's is the value alone");
	cr_assert_eq(httphdr_crc32c("", 1, &crc), 0);
	cr_assert_eq(crc, 7u, "untouched when refused");
}

