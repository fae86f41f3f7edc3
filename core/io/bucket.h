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

#endif
