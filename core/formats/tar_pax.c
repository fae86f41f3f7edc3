/*
 * tar_pax.c - pax extended headers ('x', 'g') and GNU long names ('L', 'K'):
 * what they say about the next member(s), into the walk's pending records.
 * Records are streamed through the walk's reader one at a time, so one we
 * do not keep (an 8 MB xattr) is never held.
 *
 * Not for: the header fields (tar.c), sparse maps (tar_sparse.c).
 */
#include "formats/tar.h"
#include "formats/tar_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

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
	rc = tar_rd_get(&w->rd, voff, (size_t)vlen, &v);
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
	*rc = tar_rd_get(&w->rd, voff, (size_t)vlen, &v);
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
	case K_SP_MAP: return tar_pax_sparse_map(w, p, voff, voff + vlen);
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
	bad = pax_number(w, voff, vlen, buf, &rc) || tar_parse_dec(buf, (size_t)vlen, &v) < 0;
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
	case K_SP_OFFSET: return tar_bad_map(w, p, tar_add_chunk(w, v, 0), key, at);
	case K_SP_NUMBYTES:
		/* 0.0: each numbytes completes the offset just before it */
		if (!w->nchunks || w->chunks[w->nchunks - 1].len)
			return tar_bad_map(w, p, -EBADMSG, key, at);
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
		rc = tar_rd_get(&w->rd, pos, n, &r);
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
		rc = tar_rd_get(&w->rd, pos + len - 1, 1, &r);
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
	rc = tar_rd_get(&w->rd, data, (size_t)size, &v);
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
int tar_ext_header(struct walk *w, int type, uint64_t data, uint64_t size)
{
	if (type == 'L' || type == 'K')
		return long_name(w, type, data, size);
	if (type == 'g')
		return pax_records(w, &w->global, 1, data, data + size);
	return pax_records(w, &w->next, 0, data, data + size);
}
