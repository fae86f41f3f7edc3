/*
 * bucket.h - what the bucket backend (bucket.c) shares with its tests:
 * how an object's key becomes a URL's path and a listing's query, by
 * AWS's rules (SigV4 signs the path and query exactly as they are sent,
 * so they must be encoded as the store will encode them to check).
 *
 * Private to core/io.
 */
#ifndef SFS_IO_BUCKET_H
#define SFS_IO_BUCKET_H

#include <stddef.h>

struct source_env;
struct httpauth;

/*
 * s percent-encoded by AWS's rules (SigV4 "UriEncode"): A-Z a-z 0-9 - . _ ~
 * as they are, every other byte %XX in upper case; '/' kept when
 * keep_slash (a path), else %2F (a query value).  malloc'ed; NULL on
 * ENOMEM.
 */
char *bucket_encode(const char *s, int keep_slash);

/* "%XX" sequences of s decoded (others kept as they are); malloc'ed, NULL
 * on ENOMEM. */
char *bucket_decode(const char *s);

/*
 * Where a request for the object `uri` (s3://BUCKET/KEY, gs://BUCKET/KEY)
 * goes and what it carries, as the mount's own reads of it would: *url
 * (malloc'ed, the caller's) and *auth (env's, valid until env is freed;
 * NULL: unsigned).  For the downloader (download.c), which sends its own
 * requests.  0, -EINVAL (not an object: logged), -ENOMEM, or the
 * credentials' error.
 */
int bucket_request(struct source_env *env, const char *uri, char **url,
		   const struct httpauth **auth);

#endif
