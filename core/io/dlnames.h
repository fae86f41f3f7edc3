/*
 * dlnames.h - what samplefs-download reads besides listings, all of it
 * untrusted text: a file of URLs, an object's MD5 in an S3 / GCS ETag or
 * GCS's x-goog-hash header, and the relative paths it writes under DEST.
 * Pure functions: no I/O, no state (tests/unit/test_download.c,
 * tests/fuzz/fuzz_download.c).
 *
 * Private to core/io (download.c) and the downloader (tools/download).
 * Not for: the transfers (download.h), listings (bucketlist.h,
 * autoindex.h).
 */
#ifndef SFS_IO_DLNAMES_H
#define SFS_IO_DLNAMES_H

#include <stddef.h>

/* One URL of a URL file and the name it gets under DEST. */
typedef int (*dlnames_url_fn)(void *arg, const char *url, const char *rel);

/*
 * A file of URLs (path names it in messages): one per line, surrounding
 * blanks and a trailing '\r' dropped, blank lines and lines starting with
 * '#' skipped.  Each must be a URL samplefs opens (http, https, s3, gs);
 * its name under DEST is its last path segment (before any '?' or '#'),
 * percent-decoded, which must be a file name download_rel_ok accepts,
 * without '/'.  fn per URL, in order, only once the whole text passed.
 * 0, fn's nonzero return, -EINVAL (logged, naming the line), -ENOMEM.
 */
int dlnames_urls_parse(const char *path, const char *text, size_t len,
		       dlnames_url_fn fn, void *arg);

/* An S3 / GCS ETag that is an object's MD5: 32 hex digits, quotes allowed
 * ("\"d41d8cd98f00b204e9800998ecf8427e\""); a multipart ("...-3") or
 * another form is not.  1 and md5 filled, else 0. */
int dlnames_md5_of_etag(const char *etag, unsigned char md5[16]);

/* GCS's x-goog-hash header value ("crc32c=n03x6A==, md5=1B2M2Y8AsgTpgAmY7PhCfg==",
 * one hash per header or several, comma separated; len bytes, not
 * NUL-terminated): its md5, base64 of 16 bytes.  1 and md5 filled, else 0. */
int dlnames_md5_of_goog_hash(const char *value, size_t len, unsigned char md5[16]);

/* 1 when rel is a relative path the downloader writes: not empty, no
 * leading '/', no component "", "." or "..", no control character. */
int dlnames_rel_ok(const char *rel);

#endif
