/*
 * httphdr.h - the values of the HTTP response headers samplefs acts on,
 * parsed from their text alone: Content-Range, ETag, Retry-After, the
 * stores' CRC32C (x-goog-hash, x-amz-checksum-crc32c).  A
 * server's headers are untrusted input: each function takes any NUL-
 * terminated string and either understands all of it or says it does
 * not, never reading past it, never overflowing, never guessing a number
 * (no sign, no leading blanks inside a number, nothing past 2^63-1).
 *
 * httpreq.c looks the headers up (libcurl's curl_easy_header) and hands
 * each value here; the fuzz target (tests/fuzz/fuzz_httphdr.c) and the
 * unit tests (tests/unit/test_httphdr.c) feed values directly.
 *
 * Private to core/io.  Not for: looking headers up, or what a value means
 * to a read (httpreq.c's check of a 206 against the expected stamp).
 */
#ifndef SFS_IO_HTTPHDR_H
#define SFS_IO_HTTPHDR_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * Content-Range of a response (RFC 9110 14.4), blanks around it allowed:
 *   "bytes A-B/T"   A <= B < T          -> 1, *from A, *to B, *total T
 *   "bytes A-B/\*"  A <= B              -> 1, *from A, *to B, *total -1
 *   "bytes \*\/T"   (a 416's: no range) -> 1, *from 1, *to 0 (from > to),
 *                                          *total T
 * Numbers are decimal digits only, each at most INT64_MAX.  Anything else
 * (another unit, a sign, A > B, B >= T, text after it) -> 0, and the
 * outputs are left as they were.
 */
int httphdr_content_range(const char *v, uint64_t *from, uint64_t *to,
			  int64_t *total);

enum httphdr_etag_kind {
	HTTPHDR_ETAG_NONE = 0,     /* not an entity-tag (copied all the same) */
	HTTPHDR_ETAG_STRONG,       /* "x" */
	HTTPHDR_ETAG_WEAK,         /* W/"x" */
};

/*
 * ETag (RFC 9110 8.8.3): out (of outlen > 0 bytes) gets v without the
 * blanks around it, as the server spelled it (quotes and W/ kept: a change
 * check compares whole values), cut at outlen - 1 bytes as stamps keep
 * it (source_stamp.etag), always NUL-terminated.  Says what kind of
 * entity-tag it is: STRONG or WEAK when the whole value is one (etagc
 * characters between the quotes, nothing after them), else NONE; a
 * server's own spelling still names a version, so it is copied anyway.
 */
enum httphdr_etag_kind httphdr_etag(const char *v, char *out, size_t outlen);

#define HTTPHDR_RETRY_AFTER_MAX 86400   /* seconds: a day; more is a day */

/*
 * Retry-After (RFC 9110 10.2.3), blanks around it allowed: delta-seconds
 * (digits only), or an HTTP-date (IMF-fixdate, RFC 850 or asctime, read
 * by libcurl's curl_getdate) taken from `now`.  The seconds to wait, 0 to
 * HTTPHDR_RETRY_AFTER_MAX (a date past is 0, a wait longer than the
 * maximum is the maximum); -1 when v is neither.
 */
int64_t httphdr_retry_after(const char *v, time_t now);

/*
 * An object store's CRC32C of the whole object: `goog` 1 for GCS's
 * x-goog-hash (a comma-separated list: "crc32c=AAAAAA==,md5=..." ), 0 for
 * S3's x-amz-checksum-crc32c (the value alone): the base64 of 4 bytes,
 * big-endian.  1 with *crc set, or 0 when v holds none (or not that
 * shape).
 */
int httphdr_crc32c(const char *v, int goog, uint32_t *crc);

#endif
