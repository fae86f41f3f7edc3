/*
 * tar.c - walks tar headers (v7, ustar, GNU, pax) and reports members with
 * normalised paths and absolute data offsets (see tar.h).
 *
 * Only headers are read: member data is seeked over, so a walk costs one
 * small pread per member however large the members are.  Headers are read
 * through a small window so that runs of small members share one pread.
 * Everything read from the archive is untrusted: every number is range
 * checked against the archive's extent before it is used.
 *
 * Not for: extracting, compressed tars, building the tree (tarindex_build.c).
 */
#include "formats/tar.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/source.h"

#define WINDOW      (128u << 10) /* header read-ahead window */
#define AHEAD       (32u << 20)   /* asynchronous read-ahead while headers are dense */
#define PAX_PEEK    1024          /* a pax record's length and key lie in its first bytes */
#define PAX_NUM_MAX 64            /* longest numeric pax value read */
#define NAME_MAX_   255

/* Offsets of the header fields (POSIX ustar; GNU shares the first 345). */
enum {
	H_NAME = 0, H_MODE = 100, H_MTIME = 136, H_SIZE = 124, H_CHKSUM = 148,
	H_TYPE = 156, H_LINK = 157, H_MAGIC = 257, H_PREFIX = 345,
	H_GNU_SPARSE = 386, H_GNU_ISEXT = 482, H_GNU_REALSIZE = 483,
	H_GNU_EXT_ISEXT = 504,
};
#define GNU_SPARSE_IN_HDR 4   /* map entries in an old GNU 'S' header */
#define GNU_SPARSE_IN_EXT 21  /* ... and in each extension block after it */

/* Header reader over [lo, hi) of a source; one per walk. */
struct reader {
	struct source *src;
	uint64_t lo, hi;
	uint64_t boff;
	size_t blen;
	size_t want;        /* bytes to read on a miss: see rd_get */
	uint64_t ra_end;    /* asked the kernel to read ahead up to here */
	unsigned char buf[WINDOW];
};

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
	struct reader rd;
	const char *what;
	struct pending next;   /* applies to the next member only ('x', 'L', 'K') */
	struct pending global; /* applies to all later members ('g') */
	/* the next member's sparse map, as read (pax 0.x records, or the
	 * map of its 'S' header or 1.0 data); reset after each member */
	struct tar_sparse_chunk *chunks;
	uint32_t nchunks, chunks_cap;
	char path[TAR_PATH_MAX + 1], link[TAR_PATH_MAX + 1];
};

static void pending_clear(struct pending *p)
{
	free(p->path);
	free(p->link);
	free(p->sparse_name);
	memset(p, 0, sizeof(*p));
}

/*
 * While the walk reads whole windows (members are small, so every page of
 * the archive holds a header), asks the kernel to read the next AHEAD bytes
 * in the background: the caller's source may be SOURCE_ADV_RANDOM (tarindex_build.c
 * sets it so that large members are not read), and then each window would
 * be one synchronous 128 KiB read: 150 MB/s cold, where the disk does 700.
 * Asked AHEAD / 2 at a time, so the calls are few.  It may run past the
 * end of the walk's range (at most AHEAD bytes): a nested tar is usually
 * followed by another one, which the next walk reads at once.
 */
static void rd_ahead(struct reader *r, uint64_t off)
{
	uint64_t from = off > r->ra_end ? off : r->ra_end;
	uint64_t to = off + AHEAD;

	if (to < off || to <= from || to - from < AHEAD / 2)
		return;
	source_advise(r->src, from, to - from, SOURCE_ADV_WILLNEED);
	r->ra_end = to;
}

/*
 * Points *p at n (<= WINDOW) bytes at off; -EBADMSG if the range ends first.
 * A miss reads r->want bytes: a whole window while members are small (so
 * one pread serves many headers), one block when they are large (copying
 * a window of data we will skip would cost more than the pread).
 */
static int rd_get(struct reader *r, uint64_t off, size_t n,
		  const unsigned char **p)
{
	size_t want;
	ssize_t got;

	if (off < r->lo || off > r->hi || r->hi - off < n)
		return -EBADMSG;
	if (off >= r->boff && off + n <= r->boff + r->blen) {
		*p = r->buf + (off - r->boff);
		return 0;
	}
	want = n > r->want ? n : r->want;
	if (r->hi - off < want)
		want = (size_t)(r->hi - off);
	if (r->want == WINDOW)
		rd_ahead(r, off);
	got = source_pread(r->src, r->buf, want, off);
	if (got < 0)
		return (int)got;
	r->boff = off;
	r->blen = (size_t)got;
	if ((size_t)got < n)
		return -EBADMSG;
	*p = r->buf;
	return 0;
}

/*
 * A numeric field: octal digits (leading spaces, ended by space or NUL;
 * all-NUL is 0, as GNU tar and Python's tarfile read it) or GNU base-256
 * (first byte 0x80 positive, 0xff negative).  -ERANGE beyond int64.
 */
static int parse_num(const unsigned char *f, size_t n, int64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] == 0x80 || f[0] == 0xff) {
		for (i = 1; i < n; i++) {
			if (v >> 55)
				return -ERANGE;
			v = v << 8 | f[i];
		}
		if (f[0] == 0x80) {
			if (v > INT64_MAX)
				return -ERANGE;
			*out = (int64_t)v;
		} else {
			/* two's complement over n-1 bytes: v - 256^(n-1) */
			if (n - 1 < 8)
				v |= ~0ull << (8 * (n - 1));
			*out = (int64_t)v;
			if (*out >= 0)
				return -ERANGE;
		}
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != ' ' && f[i] != '\0')
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

/*
 * As GNU tar: the stored sum may be of unsigned or of signed bytes, with
 * the checksum field itself counted as spaces.  (Summing all bytes and
 * then correcting for the field keeps the loop simple enough to vectorise:
 * this runs once per member.)
 */
int tar_header_ok(const unsigned char *h)
{
	int64_t stored;
	long us = 0, ss = 0;
	int i;

	if (parse_num(h + H_CHKSUM, 8, &stored) < 0)
		return 0;
	for (i = 0; i < TAR_BLOCK; i++) {
		us += h[i];
		ss += (signed char)h[i];
	}
	for (i = H_CHKSUM; i < H_CHKSUM + 8; i++) {
		us += ' ' - h[i];
		ss += ' ' - (signed char)h[i];
	}
	return stored == us || stored == ss;
}

static int all_zero(const unsigned char *h)
{
	int i;

	for (i = 0; i < TAR_BLOCK; i++)
		if (h[i])
			return 0;
	return 1;
}

int tar_normalise(char *path)
{
	char *r = path, *w = path, *comp;
	size_t n;

	while (*r) {
		while (*r == '/')
			r++;
		comp = r;
		while (*r && *r != '/')
			r++;
		n = (size_t)(r - comp);
		if (n == 0 || (n == 1 && comp[0] == '.'))
			continue;
		if (n > NAME_MAX_)
			return -EINVAL;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			if (w == path)
				return -EINVAL;     /* escapes the root */
			while (w > path && w[-1] != '/')
				w--;
			if (w > path)
				w--;        /* drop the separator too */
			continue;
		}
		if (w != path)
			*w++ = '/';
		memmove(w, comp, n);
		w += n;
	}
	*w = '\0';
	return w == path ? -ENOENT : 0;
}

/* Copies a header string field of at most n bytes (NUL-terminated or full). */
static size_t field_str(char *dst, const unsigned char *f, size_t n)
{
	size_t len = strnlen((const char *)f, n);

	memcpy(dst, f, len);
	dst[len] = '\0';
	return len;
}

/* A decimal number filling s[0..n): no sign, no spaces, fits 64 bits. */
static int parse_dec(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

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
	rc = rd_get(&w->rd, *pos, n, &p);
	if (rc < 0)
		return rc;
	for (i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		;
	if (i == 0 || parse_dec((const char *)p, i, v) < 0)
		return -EBADMSG;
	if (i < n && p[i] != sep)
		return -EBADMSG;
	if (i == n && *pos + n != end)
		return -EBADMSG;        /* more than 20 digits */
	*pos += i < n ? i + 1 : i;
	return 0;
}

/* Appends a chunk to the next member's sparse map: 0 or -E2BIG. */
static int add_chunk(struct walk *w, uint64_t off, uint64_t len)
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
static int bad_map(struct walk *w, struct pending *p, int rc, const char *what,
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
static int pax_sparse_map(struct walk *w, struct pending *p, uint64_t pos,
			  uint64_t end)
{
	uint64_t at = pos, off, len;
	int rc = 0;

	while (rc == 0 && pos < end) {
		rc = stream_number(w, &pos, end, ',', &off);
		if (rc == 0)
			rc = stream_number(w, &pos, end, ',', &len);
		if (rc == 0)
			rc = add_chunk(w, off, len);
	}
	return rc ? bad_map(w, p, rc, "GNU.sparse.map", at) : 0;
}

/* The pax keys we act on; every other record is passed over unread. */
enum pax_key {
	K_PATH, K_LINKPATH, K_SIZE, K_MTIME, K_SP_NAME, K_SP_SIZE,
	K_SP_REALSIZE, K_SP_MAJOR, K_SP_OFFSET, K_SP_NUMBYTES, K_SP_MAP,
	K_SP_OTHER, K_OTHER,
};

static enum pax_key pax_key(const char *key, int global)
{
	static const struct { const char *name; enum pax_key key; } keys[] = {
		{ "path", K_PATH }, { "linkpath", K_LINKPATH },
		{ "size", K_SIZE }, { "mtime", K_MTIME },
		{ "GNU.sparse.name", K_SP_NAME }, { "GNU.sparse.size", K_SP_SIZE },
		{ "GNU.sparse.realsize", K_SP_REALSIZE },
		{ "GNU.sparse.major", K_SP_MAJOR },
		{ "GNU.sparse.offset", K_SP_OFFSET },
		{ "GNU.sparse.numbytes", K_SP_NUMBYTES },
		{ "GNU.sparse.map", K_SP_MAP },
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i].name))
			return global && keys[i].key >= K_SP_NAME ? K_OTHER : keys[i].key;
	/* minor, numblocks: implied by the others */
	if (!global && !strncmp(key, "GNU.sparse.", 11))
		return K_SP_OTHER;
	return K_OTHER;
}

/* A name-like value (path, linkpath, GNU.sparse.name) into *dst. */
static int pax_name(struct walk *w, struct pending *p, const char *key,
		    char **dst, uint64_t voff, uint64_t vlen, uint64_t at)
{
	const unsigned char *v;
	int rc;

	free(*dst);
	*dst = NULL;
	if (vlen > TAR_PATH_MAX) {
		sfs_warn("%s: pax %s of %llu bytes at offset %llu is over %d: "
			 "member skipped", w->what, key, (unsigned long long)vlen,
			 (unsigned long long)at, TAR_PATH_MAX);
		p->bad = 1;
		return 0;
	}
	rc = rd_get(&w->rd, voff, (size_t)vlen, &v);
	if (rc < 0)
		return rc;
	if (memchr(v, '\0', (size_t)vlen)) {
		sfs_warn("%s: pax %s with a NUL byte at offset %llu: member skipped",
			 w->what, key, (unsigned long long)at);
		p->bad = 1;
		return 0;
	}
	*dst = strndup((const char *)v, (size_t)vlen);
	return *dst ? 0 : -ENOMEM;
}

/* A numeric value; 1 if it is no number (warned by the caller). */
static int pax_number(struct walk *w, uint64_t voff, uint64_t vlen, char *buf,
		      int *rc)
{
	const unsigned char *v;

	*rc = 0;
	if (vlen == 0 || vlen > PAX_NUM_MAX)
		return 1;
	*rc = rd_get(&w->rd, voff, (size_t)vlen, &v);
	if (*rc < 0)
		return 1;
	memcpy(buf, v, (size_t)vlen);
	buf[vlen] = '\0';
	return 0;
}

/* Applies one record `key` whose value is [voff, voff + vlen). */
static int pax_apply(struct walk *w, struct pending *p, enum pax_key k,
		     const char *key, uint64_t voff, uint64_t vlen, uint64_t at)
{
	char buf[PAX_NUM_MAX + 1], *end;
	uint64_t v = 0;
	int rc = 0, bad;

	if (k >= K_SP_NAME && k <= K_SP_OTHER && !p->sparse)
		p->sparse = SPARSE_PAX0;
	switch (k) {
	case K_PATH: return pax_name(w, p, key, &p->path, voff, vlen, at);
	case K_LINKPATH: return pax_name(w, p, key, &p->link, voff, vlen, at);
	case K_SP_NAME: return pax_name(w, p, key, &p->sparse_name, voff, vlen, at);
	case K_SP_MAP: return pax_sparse_map(w, p, voff, voff + vlen);
	case K_SP_OTHER: case K_OTHER: return 0;
	case K_MTIME:
		if (pax_number(w, voff, vlen, buf, &rc) == 0) {
			p->mtime = strtoll(buf, &end, 10);
			p->has_mtime = end != buf;
		}
		return rc;
	default:
		break;
	}
	/* the rest are whole decimal numbers */
	bad = pax_number(w, voff, vlen, buf, &rc) || parse_dec(buf, (size_t)vlen, &v) < 0;
	if (rc < 0)
		return rc;
	if (bad && k == K_SIZE) {
		sfs_warn("%s: bad pax size at offset %llu: ignored", w->what,
			 (unsigned long long)at);
		return 0;
	}
	if (bad) {
		sfs_warn("%s: bad pax %s at offset %llu: member skipped", w->what,
			 key, (unsigned long long)at);
		p->bad = 1;
		return 0;
	}
	switch (k) {
	case K_SIZE: p->size = v; p->has_size = 1; break;
	case K_SP_SIZE: case K_SP_REALSIZE: p->realsize = v; p->has_realsize = 1; break;
	case K_SP_MAJOR: p->sparse = v == 1 ? SPARSE_PAX1 : SPARSE_PAX0; break;
	case K_SP_OFFSET: return bad_map(w, p, add_chunk(w, v, 0), key, at);
	case K_SP_NUMBYTES:
		/* 0.0: each numbytes completes the offset just before it */
		if (!w->nchunks || w->chunks[w->nchunks - 1].len)
			return bad_map(w, p, -EBADMSG, key, at);
		w->chunks[w->nchunks - 1].len = v;
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Parses the pax records "%d %s=%s\n" of an 'x' or 'g' header whose data
 * is [pos, end), one at a time through the reader, so that a record we do
 * not keep (an 8 MB xattr, a comment) is never held.  A malformed record
 * ends the set with a warning (the records before it stay applied).
 */
static int pax_records(struct walk *w, struct pending *p, int global,
		       uint64_t pos, uint64_t end)
{
	char key[PAX_PEEK];
	const unsigned char *r, *eq;
	uint64_t len;
	size_t n, i;
	int rc;

	while (pos < end) {
		n = end - pos < PAX_PEEK ? (size_t)(end - pos) : PAX_PEEK;
		rc = rd_get(&w->rd, pos, n, &r);
		if (rc < 0)
			return rc;
		if (r[0] == '\0')
			break;  /* NUL padding after the last record */
		for (i = 0, len = 0; i < n && i < 19 && r[i] >= '0' && r[i] <= '9'; i++)
			len = len * 10 + (uint64_t)(r[i] - '0');
		eq = i + 1 < n ? memchr(r + i + 1, '=', n - i - 1) : NULL;
		/* a record holds its length, a space and a newline at least */
		if (i == 0 || i >= n || r[i] != ' ' || len <= i + 1 || len > end - pos ||
		    (eq && (uint64_t)(eq - r) >= len - 1) || (!eq && len <= n)) {
			sfs_warn("%s: malformed pax record at offset %llu: rest ignored",
				 w->what, (unsigned long long)pos);
			return 0;
		}
		if (eq) {       /* else a key over PAX_PEEK bytes: none we keep */
			memcpy(key, r + i + 1, (size_t)(eq - r) - i - 1);
			key[eq - r - i - 1] = '\0';
		}
		rc = rd_get(&w->rd, pos + len - 1, 1, &r);
		if (rc < 0)
			return rc;
		if (r[0] != '\n') {
			sfs_warn("%s: pax record at offset %llu does not end in a "
				 "newline: rest ignored", w->what, (unsigned long long)pos);
			return 0;
		}
		if (eq) {
			uint64_t voff = pos + strlen(key) + i + 2;

			rc = pax_apply(w, p, pax_key(key, global), key, voff,
				       pos + len - 1 - voff, pos);
			if (rc < 0)
				return rc;
		}
		pos += len;
	}
	return 0;
}

/*
 * 'L', 'K': a GNU long name or link name for the next member, kept up to
 * TAR_PATH_MAX bytes (and its NUL); a longer one skips the member.
 */
static int long_name(struct walk *w, int type, uint64_t data, uint64_t size)
{
	char **dst = type == 'L' ? &w->next.path : &w->next.link;
	const unsigned char *v;
	int rc;

	free(*dst);
	*dst = NULL;
	if (size > TAR_PATH_MAX + 1) {
		sfs_warn("%s: GNU long %s of %llu bytes in the header at offset %llu "
			 "is over %d: member skipped", w->what, type == 'L' ? "name" :
			 "link name", (unsigned long long)size,
			 (unsigned long long)(data - TAR_BLOCK), TAR_PATH_MAX);
		w->next.bad = 1;
		return 0;
	}
	rc = rd_get(&w->rd, data, (size_t)size, &v);
	if (rc == -EBADMSG)
		sfs_warn("%s: the file ends inside the %llu data bytes of the %c header "
			 "at offset %llu: archive truncated there", w->what,
			 (unsigned long long)size, type, (unsigned long long)(data - TAR_BLOCK));
	if (rc < 0)
		return rc;
	/* NUL-terminated at the first NUL, as tarfile */
	*dst = strndup((const char *)v, (size_t)size);
	return *dst ? 0 : -ENOMEM;
}

/* 'x', 'g', 'L', 'K': data that describes the next member(s). */
static int ext_header(struct walk *w, int type, uint64_t data, uint64_t size)
{
	if (type == 'L' || type == 'K')
		return long_name(w, type, data, size);
	if (type == 'g')
		return pax_records(w, &w->global, 1, data, data + size);
	return pax_records(w, &w->next, 0, data, data + size);
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
		if (parse_num(e, 12, &off) < 0 || off < 0 ||
		    parse_num(e + 12, 12, &len) < 0 || len < 0)
			return -EBADMSG;
		rc = add_chunk(w, (uint64_t)off, (uint64_t)len);
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
static int old_gnu_map(struct walk *w, const unsigned char *h, uint64_t *data,
		       struct pending *p)
{
	const unsigned char *e = h + H_GNU_SPARSE;
	int n = GNU_SPARSE_IN_HDR, more = h[H_GNU_ISEXT], done = 0, rc = 0, r;

	for (;;) {
		if (rc == 0)
			rc = old_gnu_entries(w, e, n, &done);
		if (!more)
			break;
		r = rd_get(&w->rd, *data, TAR_BLOCK, &e);
		if (r == -EBADMSG)
			sfs_warn("%s: sparse extension block at offset %llu lies "
				 "past the end of the archive: truncated", w->what,
				 (unsigned long long)*data);
		if (r < 0)
			return r;
		more = e[H_GNU_EXT_ISEXT];
		n = GNU_SPARSE_IN_EXT;
		*data += TAR_BLOCK;
	}
	return rc ? bad_map(w, p, rc, "old GNU sparse map", *data) : 0;
}

/*
 * pax 1.0: the map opens the member's data, decimal numbers one a line
 * (the count, then offset/size pairs), padded to a block.  Moves *data
 * past it and takes its length off *stored.
 */
static int pax1_map(struct walk *w, struct pending *p, uint64_t *data,
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
			rc = add_chunk(w, off, len);
	}
	maplen = (pos - *data + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1);
	if (rc == 0 && maplen > *stored)
		rc = -EBADMSG;
	if (rc)
		return bad_map(w, p, rc, "GNU.sparse 1.0 map in the data", *data);
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
static int sparse_check(struct walk *w, struct tar_member *m, uint64_t pos)
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

static const char *type_name(int t)
{
	switch (t) {
	case '3': return "character device";
	case '4': return "block device";
	case '6': return "fifo";
	default: return "member of unknown type";
	}
}

/* Fills m->path / m->link from the header and pending records. */
static int member_names(struct walk *w, const unsigned char *h,
			struct tar_member *m)
{
	const char *lp = w->next.sparse_name ? w->next.sparse_name :
			 w->next.path ? w->next.path : w->global.path;
	const char *ll = w->next.link ? w->next.link : w->global.link;
	size_t n = 0;

	if (lp) {
		if (strlen(lp) > TAR_PATH_MAX)
			return -ENAMETOOLONG;
		strcpy(w->path, lp);
	} else {
		if (!memcmp(h + H_MAGIC, "ustar", 5) && memcmp(h + H_MAGIC + 5, "  ", 2) &&
		    h[H_PREFIX]) {
			n = field_str(w->path, h + H_PREFIX, 155);
			w->path[n++] = '/';
		}
		field_str(w->path + n, h + H_NAME, 100);
	}
	if (ll) {
		if (strlen(ll) > TAR_PATH_MAX)
			return -ENAMETOOLONG;
		strcpy(w->link, ll);
	} else {
		field_str(w->link, h + H_LINK, 100);
	}
	m->path = w->path;
	m->link = w->link;
	return 0;
}

/* The length of path's longest '/'-separated component. */
static size_t longest_component(const char *path)
{
	size_t n, max = 0;

	while (*path) {
		n = strcspn(path, "/");
		if (n > max)
			max = n;
		path += n + (path[n] == '/');
	}
	return max;
}

/* Normalises the names of m; 1 if it is to be reported, 0 if skipped. */
static int member_path_ok(struct walk *w, struct tar_member *m, uint64_t pos)
{
	/* measured first: tar_normalise rewrites the name as it goes */
	size_t longest = longest_component(w->path);
	int rc = tar_normalise(w->path);

	if (rc == -ENOENT && m->type == TAR_DIR)
		return 0;       /* "./": the root itself */
	if (rc == -EINVAL && longest > NAME_MAX_) {
		sfs_warn("%s: name '%s' in header at offset %llu has a component "
			 "of %zu bytes, over the %d a file name may have: skipped",
			 w->what, m->path, (unsigned long long)pos, longest, NAME_MAX_);
		return 0;
	}
	if (rc < 0) {
		sfs_warn("%s: unsafe or empty name '%s' in header at offset %llu: skipped",
			 w->what, m->path, (unsigned long long)pos);
		return 0;
	}
	if (m->type == TAR_HARDLINK && tar_normalise(w->link) < 0) {
		sfs_warn("%s: hard link '%s' to unsafe name in header at offset %llu: skipped",
			 w->what, m->path, (unsigned long long)pos);
		return 0;
	}
	if (m->type == TAR_SYMLINK && !w->link[0]) {
		sfs_warn("%s: symlink '%s' with empty target at offset %llu: skipped",
			 w->what, m->path, (unsigned long long)pos);
		return 0;
	}
	return 1;
}

/* The data size: the header's (octal or base-256), or the pax record's. */
static int member_size(struct walk *w, const unsigned char *h, uint64_t pos,
		       uint64_t *size)
{
	int64_t v;

	if (parse_num(h + H_SIZE, 12, &v) < 0 || v < 0) {
		sfs_warn("%s: bad size field in header at offset %llu", w->what,
			 (unsigned long long)pos);
		return -EBADMSG;
	}
	*size = (uint64_t)v;
	if (w->next.has_size || w->global.has_size)
		*size = w->next.has_size ? w->next.size : w->global.size;
	return 0;
}

/*
 * Sets m->type from the type flag; 1 if the member is to be skipped
 * (warned, but for volume labels).  Links and directories carry no data
 * (as tarfile reads them), devices and fifos neither; a GNU dumpdir ('D')
 * is a directory whose data (a listing) is skipped over; other unknown
 * types are regular files, as GNU tar extracts them.
 */
static int member_type(struct walk *w, int type, uint64_t pos,
		       struct tar_member *m, uint64_t *size, int warn)
{
	switch (type) {
	case '0': case '\0': case '7': case 'S':
		m->type = TAR_FILE;
		if (type == '\0' && m->path[0] && m->path[strlen(m->path) - 1] == '/')
			m->type = TAR_DIR;
		return 0;
	case '1': m->type = TAR_HARDLINK; *size = 0; return 0;
	case '2': m->type = TAR_SYMLINK; *size = 0; return 0;
	case '5': m->type = TAR_DIR; *size = 0; return 0;
	case 'D': m->type = TAR_DIR; return 0;
	case 'V': return 1;     /* a volume label: GNU tar extracts nothing */
	case '3': case '4': case '6':
		if (warn)
			sfs_warn("%s: %s '%s' at offset %llu: skipped", w->what,
				 type_name(type), m->path, (unsigned long long)pos);
		*size = 0;
		return 1;
	}
	if (warn)
		sfs_warn("%s: member '%s' of unknown type '%c' at offset %llu: "
			 "a regular file, as GNU tar extracts it", w->what, m->path,
			 type >= 32 && type < 127 ? type : '?', (unsigned long long)pos);
	m->type = TAR_FILE;
	return 0;
}

/*
 * A sparse member's map and sizes: from its 'S' header, its pax 0.x
 * records or the start of its data (1.0).  m->size becomes the real size,
 * *data and *stored where its chunks' bytes lie.  1 if it is to be skipped.
 */
static int member_sparse(struct walk *w, const unsigned char *h, int type,
			 struct tar_member *m, uint64_t *data, uint64_t *stored)
{
	struct pending *p = &w->next;
	int64_t v;
	int rc;

	if (type == 'S') {
		if (parse_num(h + H_GNU_REALSIZE, 12, &v) < 0 || v < 0) {
			sfs_warn("%s: bad real size in the sparse header at offset %llu: "
				 "skipped", w->what, (unsigned long long)m->header);
			return 1;
		}
		m->size = (uint64_t)v;
	} else if (p->has_realsize) {
		m->size = p->realsize;
	} else {
		sfs_warn("%s: pax sparse member '%s' at offset %llu has no real size: "
			 "skipped", w->what, m->path, (unsigned long long)m->header);
		return 1;
	}
	if (p->sparse == SPARSE_PAX1 && !p->bad) {
		rc = pax1_map(w, p, data, stored);
		if (rc < 0)
			return rc;
	}
	if (p->bad)
		return 1;
	m->stored = *stored;
	return sparse_check(w, m, m->header);
}

/*
 * Turns the header at `pos` into a member; returns 1 to report it, 0 to
 * skip it (warned), <0 on error.  *next is where the next header starts.
 */
static int member(struct walk *w, const unsigned char *hdr, uint64_t pos,
		  struct tar_member *m, uint64_t *next)
{
	unsigned char h[TAR_BLOCK];     /* the reader's window moves */
	int type = hdr[H_TYPE], rc, skip = 0;
	uint64_t size, data = pos + TAR_BLOCK, stored;
	int64_t v;

	memcpy(h, hdr, TAR_BLOCK);
	rc = member_size(w, h, pos, &size);
	if (rc < 0)
		return rc;
	memset(m, 0, sizeof(*m));
	m->header = pos;
	m->mode = parse_num(h + H_MODE, 8, &v) == 0 ? (uint32_t)v & 07777 : 0644;
	m->mtime = parse_num(h + H_MTIME, 12, &v) == 0 ? v : 0;
	if (w->next.has_mtime || w->global.has_mtime)
		m->mtime = w->next.has_mtime ? w->next.mtime : w->global.mtime;
	if (type == 'S' && (rc = old_gnu_map(w, h, &data, &w->next)) < 0)
		return rc;
	if (member_names(w, h, m) < 0) {
		sfs_warn("%s: name over %d bytes in header at offset %llu: skipped",
			 w->what, TAR_PATH_MAX, (unsigned long long)pos);
		skip = 1;
	}
	if (member_type(w, type, pos, m, &size, !skip))
		skip = 1;
	if (!skip && (w->next.bad || w->global.bad))
		skip = 1;       /* already warned */
	if (size > w->rd.hi - data) {
		sfs_warn("%s: member '%s' at offset %llu needs %llu bytes but the "
			 "archive ends at %llu: truncated", w->what, m->path,
			 (unsigned long long)pos, (unsigned long long)size,
			 (unsigned long long)w->rd.hi);
		return -EBADMSG;
	}
	*next = data + ((size + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1));
	if (m->type != TAR_HARDLINK && m->type != TAR_SYMLINK)
		w->link[0] = '\0';     /* GNU tar ignores the field for others */
	if (skip || m->type != TAR_FILE) {
		m->offset = data;
		return skip ? 0 : member_path_ok(w, m, pos);
	}
	m->size = stored = size;
	if (type == 'S' || w->next.sparse) {
		rc = member_sparse(w, h, type, m, &data, &stored);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	m->offset = data;
	m->stored = stored;
	return member_path_ok(w, m, pos);
}

/* Reports the end of the archive: a zero block (and warns on a lone one). */
static void end_marker(struct walk *w, uint64_t pos)
{
	const unsigned char *h;

	if (pos + 2 * TAR_BLOCK <= w->rd.hi &&
	    rd_get(&w->rd, pos + TAR_BLOCK, TAR_BLOCK, &h) == 0 && !all_zero(h))
		sfs_warn("%s: lone zero block at offset %llu: archive ends there",
			 w->what, (unsigned long long)pos);
}

static int walk_loop(struct walk *w, tar_member_fn fn, void *arg)
{
	const unsigned char *h;
	struct tar_member m;
	uint64_t pos = w->rd.lo, hdr = pos, next, first = pos;
	int nhdr = 0, rc, type;

	/* pos > hi when the data of the last header lacks its padding:
	 * tested first, as hi - pos would wrap */
	while (pos <= w->rd.hi && w->rd.hi - pos >= TAR_BLOCK) {
		rc = rd_get(&w->rd, pos, TAR_BLOCK, &h);
		if (rc == -EBADMSG && nhdr)
			sfs_warn("%s: the file ends before the header at offset %llu: "
				 "archive truncated there", w->what, (unsigned long long)pos);
		if (rc < 0)
			return rc == -EBADMSG && !nhdr ? -EINVAL : rc;
		hdr = pos;
		if (all_zero(h)) {
			end_marker(w, pos);
			return 0;       /* at pos 0: an empty archive, as GNU tar */
		}
		if (!tar_header_ok(h)) {
			if (!nhdr)
				return -EINVAL;
			sfs_warn("%s: bad header checksum at offset %llu: archive "
				 "truncated there", w->what, (unsigned long long)pos);
			return -EBADMSG;
		}
		nhdr++;
		type = h[H_TYPE];
		if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
			int64_t size;

			if (parse_num(h + H_SIZE, 12, &size) < 0 || size < 0 ||
			    (uint64_t)size > w->rd.hi - pos - TAR_BLOCK) {
				sfs_warn("%s: bad or truncated %c header at offset %llu",
					 w->what, type, (unsigned long long)pos);
				return -EBADMSG;
			}
			if (type == 'g')
				pending_clear(&w->global);
			rc = ext_header(w, type, pos + TAR_BLOCK, (uint64_t)size);
			if (rc < 0)
				return rc;
			pos += TAR_BLOCK + (((uint64_t)size + TAR_BLOCK - 1) &
					    ~(uint64_t)(TAR_BLOCK - 1));
			if (type == 'g')
				first = pos;	/* 'g' is not this member's */
			continue;
		}
		rc = member(w, h, pos, &m, &next);
		pending_clear(&w->next);
		w->nchunks = 0;
		if (rc < 0)
			return rc;
		/* a walk from `first` reports it again, unless a 'g' record
		 * before it shaped it */
		m.resume = w->global.path || w->global.link || w->global.has_size ||
			   w->global.has_mtime || w->global.bad ? UINT64_MAX : first;
		first = next;
		if (rc > 0 && (rc = fn(arg, &m)) != 0)
			return rc;
		w->rd.want = next - pos > WINDOW / 2 ? TAR_BLOCK : WINDOW;
		pos = next;
	}
	if (pos > w->rd.hi) {
		sfs_warn("%s: the data of the header at offset %llu is padded to offset "
			 "%llu, but the archive ends at %llu: truncated", w->what,
			 (unsigned long long)hdr, (unsigned long long)pos,
			 (unsigned long long)w->rd.hi);
		return -EBADMSG;
	}
	if (pos < w->rd.hi) {
		sfs_warn("%s: %llu stray bytes at offset %llu after the last member",
			 w->what, (unsigned long long)(w->rd.hi - pos),
			 (unsigned long long)pos);
		return nhdr ? -EBADMSG : -EINVAL;
	}
	return nhdr ? 0 : -EINVAL;
}

int tar_walk(struct source *src, uint64_t base, uint64_t len, const char *what,
	     tar_member_fn fn, void *arg)
{
	struct walk *w;
	int rc;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->rd.src = src;
	w->rd.lo = base;
	w->rd.hi = base + len;
	w->rd.want = WINDOW;
	w->what = what;
	rc = walk_loop(w, fn, arg);
	pending_clear(&w->next);
	pending_clear(&w->global);
	free(w->chunks);
	free(w);
	return rc;
}
