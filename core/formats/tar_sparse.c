/*
 * tar_sparse.c - the sparse maps of GNU tar's three sparse formats (old GNU
 * 'S' headers, pax GNU.sparse 0.0/0.1 records, 1.0 maps in the data), read
 * through the walk's reader so a map of any length is never held whole,
 * and checked before a member is reported with it (see tar.h).
 *
 * Not for: filling holes on reads (tarindex.c), the walk itself (tar.c).
 */
#include "formats/tar.h"
#include "formats/tar_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/*
 * The decimal number at *pos, ended by the byte `sep` (consumed) or by
 * `end`: how sparse maps are written (pax 0.1: "off,len,off,len"; 1.0:
 * one number a line).  Read through the reader, so a map of any length
 * is never held whole.  -EBADMSG if malformed.
 */
static int stream_number(struct walk *w, uint64_t *pos, uint64_t end, int sep,
			 uint64_t *v)
{
	const unsigned char *p;
	size_t n = end - *pos < 21 ? (size_t)(end - *pos) : 21, i;
	int rc;

	if (n == 0)
		return -EBADMSG;
	rc = tar_rd_get(&w->rd, *pos, n, &p);
	if (rc < 0)
		return rc;
	for (i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		;
	if (i == 0 || tar_parse_dec((const char *)p, i, v) < 0)
		return -EBADMSG;
	if (i < n && p[i] != sep)
		return -EBADMSG;
	if (i == n && *pos + n != end)
		return -EBADMSG;        /* more than 20 digits */
	*pos += i < n ? i + 1 : i;
	return 0;
}

/* Appends a chunk to the next member's sparse map: 0 or -E2BIG. */
int tar_add_chunk(struct walk *w, uint64_t off, uint64_t len)
{
	if (w->nchunks == w->chunks_cap) {
		uint32_t c = w->chunks_cap ? w->chunks_cap * 2 : 64;
		struct tar_sparse_chunk *q;

		if (w->chunks_cap >= TAR_SPARSE_MAX_CHUNKS)
			return -E2BIG;
		q = realloc(w->chunks, (size_t)c * sizeof(*q));
		if (!q)
			return -ENOMEM;
		w->chunks = q;
		w->chunks_cap = c;
	}
	w->chunks[w->nchunks].off = off;
	w->chunks[w->nchunks].len = len;
	w->nchunks++;
	return 0;
}

/* A sparse map that cannot be read: the member is skipped (warned). */
int tar_bad_map(struct walk *w, struct pending *p, int rc, const char *what,
		uint64_t at)
{
	if (rc != -EBADMSG && rc != -E2BIG)
		return rc;
	if (rc == -E2BIG)
		sfs_warn("%s: %s at offset %llu has more than %u chunks: member skipped",
			 w->what, what, (unsigned long long)at, TAR_SPARSE_MAX_CHUNKS);
	else
		sfs_warn("%s: %s at offset %llu is malformed: member skipped",
			 w->what, what, (unsigned long long)at);
	p->bad = 1;
	return 0;
}

/* pax 0.1's GNU.sparse.map, "off,len,off,len,...", at [pos, end). */
int tar_pax_sparse_map(struct walk *w, struct pending *p, uint64_t pos,
		       uint64_t end)
{
	uint64_t at = pos, off, len;
	int rc = 0;

	while (rc == 0 && pos < end) {
		rc = stream_number(w, &pos, end, ',', &off);
		if (rc == 0)
			rc = stream_number(w, &pos, end, ',', &len);
		if (rc == 0)
			rc = tar_add_chunk(w, off, len);
	}
	return rc ? tar_bad_map(w, p, rc, "GNU.sparse.map", at) : 0;
}

/* Map entries of an old GNU 'S' header or extension block (see below). */
static int old_gnu_entries(struct walk *w, const unsigned char *e, int n,
			   int *done)
{
	int64_t off, len;
	int i, rc;

	for (i = 0; !*done && i < n; i++, e += 24) {
		if (!e[12]) {
			*done = 1;
			break;
		}
		if (tar_parse_num(e, 12, &off) < 0 || off < 0 ||
		    tar_parse_num(e + 12, 12, &len) < 0 || len < 0)
			return -EBADMSG;
		rc = tar_add_chunk(w, (uint64_t)off, (uint64_t)len);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Old GNU sparse ('S'): map entries in the header, then in each extension
 * block that follows it while `isextended` is set; an entry whose size
 * field is empty ends the map (GNU tar's rule).  *data moves past the
 * extension blocks; h is a copy of the header (the reader's window moves).
 */
int tar_old_gnu_map(struct walk *w, const unsigned char *h, uint64_t *data,
		    struct pending *p)
{
	const unsigned char *e = h + TAR_H_GNU_SPARSE;
	int n = TAR_GNU_SPARSE_IN_HDR, more = h[TAR_H_GNU_ISEXT], done = 0, rc = 0, r;

	for (;;) {
		if (rc == 0)
			rc = old_gnu_entries(w, e, n, &done);
		if (!more)
			break;
		r = tar_rd_get(&w->rd, *data, TAR_BLOCK, &e);
		if (r == -EBADMSG)
			sfs_warn("%s: sparse extension block at offset %llu lies "
				 "past the end of the archive: truncated", w->what,
				 (unsigned long long)*data);
		if (r < 0)
			return r;
		more = e[TAR_H_GNU_EXT_ISEXT];
		n = TAR_GNU_SPARSE_IN_EXT;
		*data += TAR_BLOCK;
	}
	return rc ? tar_bad_map(w, p, rc, "old GNU sparse map", *data) : 0;
}

/*
 * pax 1.0: the map opens the member's data, decimal numbers one a line
 * (the count, then offset/size pairs), padded to a block.  Moves *data
 * past it and takes its length off *stored.
 */
int tar_pax1_map(struct walk *w, struct pending *p, uint64_t *data,
		 uint64_t *stored)
{
	uint64_t pos = *data, end = *data + *stored, count, off, len, i, maplen;
	int rc;

	rc = stream_number(w, &pos, end, '\n', &count);
	for (i = 0; rc == 0 && i < count; i++) {
		rc = stream_number(w, &pos, end, '\n', &off);
		if (rc == 0)
			rc = stream_number(w, &pos, end, '\n', &len);
		if (rc == 0)
			rc = tar_add_chunk(w, off, len);
	}
	maplen = (pos - *data + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1);
	if (rc == 0 && maplen > *stored)
		rc = -EBADMSG;
	if (rc)
		return tar_bad_map(w, p, rc, "GNU.sparse 1.0 map in the data", *data);
	*data += maplen;
	*stored -= maplen;
	return 0;
}

/*
 * Drops empty chunks (GNU tar ends a map with one at the real size) and
 * checks the rest: increasing, not overlapping, inside `size`, their
 * lengths adding up to the `stored` bytes.  0, or 1 if the member is to
 * be skipped (warned).
 */
int tar_sparse_check(struct walk *w, struct tar_member *m, uint64_t pos)
{
	uint64_t end = 0, sum = 0;
	uint32_t i, n = 0;

	for (i = 0; i < w->nchunks; i++) {
		const struct tar_sparse_chunk *c = &w->chunks[i];

		if (!c->len)
			continue;
		if (c->off < end || c->len > m->size || c->off > m->size - c->len ||
		    c->len > UINT64_MAX - sum) {
			sfs_warn("%s: sparse member '%s' at offset %llu: chunk %u "
				 "(%llu bytes at %llu) is out of order or past its size "
				 "%llu: skipped", w->what, m->path, (unsigned long long)pos,
				 i, (unsigned long long)c->len, (unsigned long long)c->off,
				 (unsigned long long)m->size);
			return 1;
		}
		end = c->off + c->len;
		sum += c->len;
		w->chunks[n++] = *c;
	}
	if (sum != m->stored) {
		sfs_warn("%s: sparse member '%s' at offset %llu: its map holds %llu "
			 "bytes but %llu are stored: skipped", w->what, m->path,
			 (unsigned long long)pos, (unsigned long long)sum,
			 (unsigned long long)m->stored);
		return 1;
	}
	w->nchunks = n;
	m->sparse = 1;
	m->nchunks = n;
	m->chunks = w->chunks;
	return 0;
}
