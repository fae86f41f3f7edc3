/*
 * arxread.h - libarchive reading a source through source_pread: the read,
 * seek and skip callbacks over a position, so that an archive libarchive
 * walks may be a local file, a URL or an object in a bucket alike.  Used
 * by arxsource.c (archives decompressed once) and formats/arcwalk.c
 * (archives read in place).
 *
 * Not for: choosing formats or filters (the caller sets them on the
 * archive before arxread_open), writing.
 */
#ifndef SFS_IO_ARXREAD_H
#define SFS_IO_ARXREAD_H

#include <stdatomic.h>
#include <stdint.h>

#include "io/source.h"

struct archive;

struct arxread {
	struct source *src;
	uint64_t pos;           /* the next byte the read callback gives */
	unsigned char *buf;
	const atomic_int *stop; /* optional: nonzero ends reads (EINTR) */
};

/*
 * Opens archive a (archive_read_new'ed, its formats and filters set) on
 * src through r: ARCHIVE_OK, or libarchive's status (its error string says
 * why).  r must outlive a's use; arxread_fini frees its buffer.
 */
int arxread_open(struct arxread *r, struct archive *a, struct source *src,
		 const atomic_int *stop);
void arxread_fini(struct arxread *r);
/*
 * Hard links kept as path -> target while walking an archive whose data
 * may come with a later name of the file (cpio: newc stores it with the
 * last name, odc with every name), so the names kept can follow it.
 * At most ARXLINKS_MAX.  Kept by target in a balanced tree (tsearch), so
 * a keep or a take costs O(log n) whatever names a hostile archive
 * chooses: n links are never O(n^2).  A zeroed struct is empty.
 */
#define ARXLINKS_MAX 65536
struct arxlinks {
	void *root;     /* tsearch tree of struct arxtarget, by target */
	size_t n;       /* links kept */
};
/* 0, 1 when full (not kept), -ENOMEM. */
int arxlinks_keep(struct arxlinks *l, const char *path, const char *target);
/* The oldest kept link to target, taken out of l: its path (malloc'ed:
 * free it), or NULL when none is left. */
char *arxlinks_take(struct arxlinks *l, const char *target);
void arxlinks_free(struct arxlinks *l);

/* libarchive's words for a's last error, never NULL. */
const char *arxread_why(struct archive *a);

#endif
