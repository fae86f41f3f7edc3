/*
 * tar_int.h - what the three files of the tar walker share (tar.c: header
 * fields and the walk; tar_pax.c: pax records and GNU long names;
 * tar_sparse.c: sparse maps), all three above tar_block.c (the block
 * reader and field parsers).  tar.c calls down into tar_pax.c and
 * tar_sparse.c, tar_pax.c into tar_sparse.c; none calls back up.
 * Private to core/formats/tar*.c.
 *
 * Not for: anyone else (tar.h is the interface).
 */
#ifndef SFS_TAR_INT_H
#define SFS_TAR_INT_H

#include <stdint.h>
#include <stddef.h>

#include "formats/tar_block.h"

#define PAX_PEEK    1024          /* a pax record's length and key lie in its first bytes */
#define PAX_NUM_MAX 64            /* longest numeric pax value read */

/* GNU.sparse pax formats (GNU tar manual, "Storing Sparse Files"). */
enum { SPARSE_NONE, SPARSE_PAX0, SPARSE_PAX1 };

/* What pax and GNU long-name headers say about the next member. */
struct pending {
	char *path, *link;     /* malloc'ed, or NULL */
	int has_size, has_mtime;
	int bad;               /* already warned: skip the member */
	uint64_t size;
	int64_t mtime;
	/* GNU.sparse.* records, taken from 'x' headers only */
	int sparse;            /* SPARSE_* */
	int has_realsize;
	uint64_t realsize;
	char *sparse_name;     /* malloc'ed, or NULL */
};

struct walk {
	struct tar_reader rd;
	const char *what;
	struct pending next;   /* applies to the next member only ('x', 'L', 'K') */
	struct pending global; /* applies to all later members ('g') */
	/* the next member's sparse map, as read (pax 0.x records, or the
	 * map of its 'S' header or 1.0 data); reset after each member */
	struct tar_sparse_chunk *chunks;
	uint32_t nchunks, chunks_cap;
	char path[TAR_PATH_MAX + 1], link[TAR_PATH_MAX + 1];
};

/* tar_pax.c */
/* 'x', 'g', 'L', 'K': the data [data, data + size) that describes the next
 * member(s), applied to w->next or w->global. */
int tar_ext_header(struct walk *w, int type, uint64_t data, uint64_t size);

/* tar_sparse.c */
/* Appends a chunk to the next member's sparse map: 0, -E2BIG or -ENOMEM. */
int tar_add_chunk(struct walk *w, uint64_t off, uint64_t len);
/* A map that cannot be read (rc -EBADMSG or -E2BIG): the member is skipped
 * with a warning, 0; any other rc is returned. */
int tar_bad_map(struct walk *w, struct pending *p, int rc, const char *what,
		uint64_t at);
/* pax 0.1's GNU.sparse.map value at [pos, end). */
int tar_pax_sparse_map(struct walk *w, struct pending *p, uint64_t pos,
		       uint64_t end);
/* Old GNU 'S' header h and its extension blocks; moves *data past them. */
int tar_old_gnu_map(struct walk *w, const unsigned char *h, uint64_t *data,
		    struct pending *p);
/* pax 1.0's map at the start of the data; moves *data, shrinks *stored. */
int tar_pax1_map(struct walk *w, struct pending *p, uint64_t *data,
		 uint64_t *stored);
/* Checks the map read for m and attaches it; 1 if m is to be skipped. */
int tar_sparse_check(struct walk *w, struct tar_member *m, uint64_t pos);

#endif
