/*
 * bucketlist.h - reads one page of a bucket listing: S3's ListObjectsV2
 * and GCS's XML API (both <ListBucketResult>), and the <Error> document
 * either store answers a failed request with.
 *
 * Elements are matched by their local name at their depth under the root
 * (namespaces ignored: AWS puts one on the root, GCS another), so an
 * element of the same name elsewhere (<Owner><ID>) does not count.  Text
 * is what expat gives: entities and character references decoded, UTF-8.
 *
 * Private to core/io (bucket.c).  Not for: any other XML.
 */
#ifndef SFS_IO_BUCKETLIST_H
#define SFS_IO_BUCKETLIST_H

#include <stddef.h>
#include <stdint.h>

#include "io/source.h"

/* One <Contents> (an object) or <CommonPrefixes> (a "directory"). */
struct bucketlist_entry {
	const char *key;             /* Key, or Prefix for a directory */
	int is_prefix;
	struct source_stamp stamp;   /* Size, ETag (quotes kept), LastModified */
	uint64_t generation;         /* GCS's Generation; 0 when none */
};

/* What the page says besides its entries. */
struct bucketlist_page {
	int truncated;               /* IsTruncated: true */
	char *next;                  /* NextContinuationToken (S3) or
				      * NextMarker (GCS), malloc'ed; NULL */
	char *last_key;              /* the last Contents' Key, malloc'ed:
				      * GCS's next marker when it gives none */
	int is_error;                /* the root was <Error> */
	char code[64];               /* its Code (e.g. SignatureDoesNotMatch) */
	char message[256];           /* its Message */
};

/* Called per entry in the page's order, only once the whole text parsed
 * as a listing; nonzero stops and is returned. */
typedef int (*bucketlist_fn)(void *arg, const struct bucketlist_entry *e);

/*
 * Parses text (len bytes).  0 (page filled in; fn called per entry, never
 * for an <Error>), fn's nonzero return, -ENOMEM, or -EBADMSG when the text
 * is neither a listing nor an error document (not XML, another root,
 * an entry without a key, a size that is not a number).  Free the page's
 * strings with bucketlist_page_free, whatever the result.
 */
int bucketlist_parse(const char *text, size_t len, bucketlist_fn fn, void *arg,
		     struct bucketlist_page *page);
void bucketlist_page_free(struct bucketlist_page *page);

/*
 * The <Error> document that may start text (the first bytes of an error's
 * body, perhaps cut short): its Code and Message so far, in page.  0, or
 * -EBADMSG when text does not start as one; -ENOMEM.
 */
int bucketlist_error(const char *text, size_t len, struct bucketlist_page *page);

/* RFC 3339 / ISO 8601 UTC time ("2026-12-02T09:01:47.000Z") in ns since
 * the epoch; 0 when it is not one. */
int64_t bucketlist_time(const char *s);

#endif
