/*
 * tar.c - walks tar headers (v7, ustar, GNU, pax) and reports members with
 * normalised paths and absolute data offsets (see tar.h): the header
 * reader, the header fields and the walk.  pax records and GNU long names
 * are parsed in tar_pax.c, sparse maps in tar_sparse.c.
 *
 * Only headers are read: member data is seeked over, so a walk costs one
 * small pread per member however large the members are.  Headers are read
 * through a small window so that runs of small members share one pread.
 * Everything read from the archive is untrusted: every number is range
 * checked against the archive's extent before it is used; a header that
 * fails its checksum is read again from a remote source (header_again).
 *
 * Not for: extracting, compressed tars, building the tree (tarindex_build.c).
 */
#include "formats/tar.h"
#include "formats/tar_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/source.h"

static void pending_clear(struct pending *p)
{
	free(p->path);
	free(p->link);
	free(p->sparse_name);
	memset(p, 0, sizeof(*p));
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

	if (tar_parse_num(h + TAR_H_CHKSUM, 8, &stored) < 0)
		return 0;
	for (i = 0; i < TAR_BLOCK; i++) {
		us += h[i];
		ss += (signed char)h[i];
	}
	for (i = TAR_H_CHKSUM; i < TAR_H_CHKSUM + 8; i++) {
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
		if (n > TAR_NAME_MAX)
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

/* Archive names by suffix: a new compressed form is one line here (and a
 * codec in core/io/codecs/ztable.c reading it). */
static const char *const archive_suffixes[] = {
	".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.zst", ".tzst",
	".tar.bz2", ".tbz2",
};

const char *tar_archive_suffix(const char *name)
{
	size_t n = strlen(name), k, i;

	for (i = 0; i < sizeof(archive_suffixes) / sizeof(*archive_suffixes); i++) {
		k = strlen(archive_suffixes[i]);
		if (n > k && !strcmp(name + n - k, archive_suffixes[i]))
			return archive_suffixes[i];
	}
	return NULL;
}

const char *tar_archive_suffix_nth(size_t i)
{
	return i < sizeof(archive_suffixes) / sizeof(*archive_suffixes) ?
	       archive_suffixes[i] : NULL;
}

int tar_suffix_compressed(const char *suffix)
{
	return suffix && suffix != archive_suffixes[0];
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
		if (!memcmp(h + TAR_H_MAGIC, "ustar", 5) &&
		    memcmp(h + TAR_H_MAGIC + 5, "  ", 2) && h[TAR_H_PREFIX]) {
			n = field_str(w->path, h + TAR_H_PREFIX, 155);
			w->path[n++] = '/';
		}
		field_str(w->path + n, h + TAR_H_NAME, 100);
	}
	if (ll) {
		if (strlen(ll) > TAR_PATH_MAX)
			return -ENAMETOOLONG;
		strcpy(w->link, ll);
	} else {
		field_str(w->link, h + TAR_H_LINK, 100);
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
	if (rc == -EINVAL && longest > TAR_NAME_MAX) {
		sfs_warn("%s: name '%s' in header at offset %llu has a component "
			 "of %zu bytes, over the %d a file name may have: skipped",
			 w->what, m->path, (unsigned long long)pos, longest, TAR_NAME_MAX);
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

	if (tar_parse_num(h + TAR_H_SIZE, 12, &v) < 0 || v < 0) {
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
		if (tar_parse_num(h + TAR_H_GNU_REALSIZE, 12, &v) < 0 || v < 0) {
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
		rc = tar_pax1_map(w, p, data, stored);
		if (rc < 0)
			return rc;
	}
	if (p->bad)
		return 1;
	m->stored = *stored;
	return tar_sparse_check(w, m, m->header);
}

/*
 * Turns the header at `pos` into a member; returns 1 to report it, 0 to
 * skip it (warned), <0 on error.  *next is where the next header starts.
 */
static int member(struct walk *w, const unsigned char *hdr, uint64_t pos,
		  struct tar_member *m, uint64_t *next)
{
	unsigned char h[TAR_BLOCK];     /* the reader's window moves */
	int type = hdr[TAR_H_TYPE], rc, skip = 0;
	uint64_t size, data = pos + TAR_BLOCK, stored;
	int64_t v;

	memcpy(h, hdr, TAR_BLOCK);
	rc = member_size(w, h, pos, &size);
	if (rc < 0)
		return rc;
	memset(m, 0, sizeof(*m));
	m->header = pos;
	m->mode = tar_parse_num(h + TAR_H_MODE, 8, &v) == 0 ?
		  (uint32_t)v & 07777 : 0644;
	m->mtime = tar_parse_num(h + TAR_H_MTIME, 12, &v) == 0 ? v : 0;
	if (w->next.has_mtime || w->global.has_mtime)
		m->mtime = w->next.has_mtime ? w->next.mtime : w->global.mtime;
	if (type == 'S' && (rc = tar_old_gnu_map(w, h, &data, &w->next)) < 0)
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
	if (size > tar_rd_upto(&w->rd, data + size) - data) {
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

	if (pos + 2 * TAR_BLOCK <= tar_rd_upto(&w->rd, pos + 2 * TAR_BLOCK) &&
	    tar_rd_get(&w->rd, pos + TAR_BLOCK, TAR_BLOCK, &h) == 0 && !all_zero(h))
		sfs_warn("%s: lone zero block at offset %llu: archive ends there",
			 w->what, (unsigned long long)pos);
}

/*
 * A header whose checksum fails, when the source's bytes travel a network,
 * may have been damaged on the way (a flipped byte TCP's checksum let
 * through): the window holding it is read again from the source itself,
 * past every cache (source_refetch), before it is believed.  1 when it
 * was read again (*h then points at the new bytes, said if they pass), 0
 * when the source is local (nothing read), -errno.
 */
static int header_again(struct walk *w, uint64_t pos, const unsigned char **h)
{
	struct tar_reader *r = &w->rd;
	ssize_t got = source_refetch(r->src, r->buf, r->blen, r->boff);

	if (got == -ENOTSUP)
		return 0;
	if (got < 0)
		return (int)got;
	r->blen = (size_t)got;
	if (pos + TAR_BLOCK > r->boff + r->blen)
		return -EIO;	/* cannot be: the size is the stamp's */
	*h = r->buf + (pos - r->boff);
	if (tar_header_ok(*h))
		sfs_warn("%s: the header at offset %llu failed its checksum and "
			 "passed when read again from the source: damaged on its "
			 "way, not in the file", w->what, (unsigned long long)pos);
	return 1;
}

static int walk_loop(struct walk *w, tar_member_fn fn, void *arg)
{
	const unsigned char *h;
	struct tar_member m;
	uint64_t pos = w->rd.lo, hdr = pos, next, first = pos;
	int nhdr = 0, rc, type, again = 0;

	/* pos > hi when the data of the last header lacks its padding:
	 * tested first, as hi - pos would wrap */
	while (pos <= tar_rd_upto(&w->rd, pos + TAR_BLOCK) &&
	       w->rd.hi - pos >= TAR_BLOCK) {
		rc = tar_rd_get(&w->rd, pos, TAR_BLOCK, &h);
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
		if (!tar_header_ok(h) && (again = header_again(w, pos, &h)) < 0)
			return again;
		if (!tar_header_ok(h)) {
			if (!nhdr)
				return -EINVAL;
			if (again)
				sfs_warn("%s: bad header checksum at offset %llu, read "
					 "twice from the source: archive truncated there",
					 w->what, (unsigned long long)pos);
			else
				sfs_warn("%s: bad header checksum at offset %llu: archive "
					 "truncated there", w->what, (unsigned long long)pos);
			return -EBADMSG;
		}
		nhdr++;
		type = h[TAR_H_TYPE];
		if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
			int64_t size;

			if (tar_parse_num(h + TAR_H_SIZE, 12, &size) < 0 || size < 0 ||
			    (uint64_t)size > tar_rd_upto(&w->rd, pos + TAR_BLOCK +
							  (uint64_t)size) - pos - TAR_BLOCK) {
				sfs_warn("%s: bad or truncated %c header at offset %llu",
					 w->what, type, (unsigned long long)pos);
				return -EBADMSG;
			}
			if (type == 'g')
				pending_clear(&w->global);
			rc = tar_ext_header(w, type, pos + TAR_BLOCK, (uint64_t)size);
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
		w->rd.want = next - pos > TAR_WINDOW / 2 ? TAR_BLOCK : TAR_WINDOW;
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
	/* no byte at all: an empty archive, as GNU tar and bsdtar take it */
	return nhdr || w->rd.hi == w->rd.lo ? 0 : -EINVAL;
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
	w->rd.hi = len == TAR_TO_END ? base : base + len;
	w->rd.grow = len == TAR_TO_END;
	w->rd.want = TAR_WINDOW;
	w->what = what;
	rc = walk_loop(w, fn, arg);
	if (w->rd.err && (rc == 0 || rc == -EBADMSG || rc == -EINVAL))
		rc = w->rd.err;	/* not the archive's fault: the source's */
	pending_clear(&w->next);
	pending_clear(&w->global);
	free(w->chunks);
	free(w);
	return rc;
}
