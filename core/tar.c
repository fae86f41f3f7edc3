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
 * Not for: extracting, compressed tars, building the tree (tarindex.c).
 */
#include "tar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define WINDOW      (128u << 10) /* header read-ahead window */
#define AHEAD       (32u << 20)   /* asynchronous read-ahead while headers are dense */
#define MAX_EXTDATA (1u << 20)   /* cap on one GNU long name or pax record set */
#define NAME_MAX_   255

/* Offsets of the header fields (POSIX ustar; GNU shares the first 345). */
enum {
	H_NAME = 0, H_MODE = 100, H_MTIME = 136, H_SIZE = 124, H_CHKSUM = 148,
	H_TYPE = 156, H_LINK = 157, H_MAGIC = 257, H_PREFIX = 345,
	H_GNU_ISEXT = 482, H_GNU_EXT_ISEXT = 504,
};

/* Header reader over [lo, hi) of fd; one per walk. */
struct reader {
	int fd;
	uint64_t lo, hi;
	uint64_t boff;
	size_t blen;
	size_t want;        /* bytes to read on a miss: see rd_get */
	uint64_t ra_end;    /* asked the kernel to read ahead up to here */
	unsigned char buf[WINDOW];
};

/* What pax and GNU long-name headers say about the next member. */
struct pending {
	char *path, *link;     /* malloc'ed, or NULL */
	int has_size, has_mtime, sparse;
	int bad;               /* already warned: skip the member */
	uint64_t size;
	int64_t mtime;
};

struct walk {
	struct reader rd;
	const char *what;
	struct pending next;   /* applies to the next member only ('x', 'L', 'K') */
	struct pending global; /* applies to all later members ('g') */
	char path[TAR_PATH_MAX + 1], link[TAR_PATH_MAX + 1];
};

static void pending_clear(struct pending *p)
{
	free(p->path);
	free(p->link);
	memset(p, 0, sizeof(*p));
}

/*
 * While the walk reads whole windows (members are small, so every page of
 * the archive holds a header), asks the kernel to read the next AHEAD bytes
 * in the background: the caller's fd may be POSIX_FADV_RANDOM (tarindex.c
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
	(void)posix_fadvise(r->fd, (off_t)from, (off_t)(to - from), POSIX_FADV_WILLNEED);
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
	size_t want, got = 0;
	ssize_t k;

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
	while (got < want) {
		k = pread(r->fd, r->buf + got, want - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	r->boff = off;
	r->blen = got;
	if (got < n)
		return -EBADMSG;
	*p = r->buf;
	return 0;
}

/* Reads n bytes at off into a new NUL-terminated buffer. */
static int rd_alloc(struct reader *r, uint64_t off, size_t n, char **out)
{
	char *b;
	size_t got = 0;
	ssize_t k;

	if (off > r->hi || r->hi - off < n)
		return -EBADMSG;
	b = malloc(n + 1);
	if (!b)
		return -ENOMEM;
	while (got < n) {
		k = pread(r->fd, b + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(b);
			return k < 0 ? -errno : -EBADMSG;
		}
		got += (size_t)k;
	}
	b[n] = '\0';
	*out = b;
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

/* Applies one pax record "key=value" (value has vlen bytes). */
static void pax_record(struct walk *w, struct pending *p, const char *key,
		       const char *val, size_t vlen, uint64_t at)
{
	char **dst = NULL;
	char *end;

	if (!strcmp(key, "path"))
		dst = &p->path;
	else if (!strcmp(key, "linkpath"))
		dst = &p->link;
	if (dst) {
		free(*dst);
		*dst = NULL;
		if (memchr(val, '\0', vlen)) {
			sfs_warn("%s: pax %s with a NUL byte at offset %llu: member skipped",
				 w->what, key, (unsigned long long)at);
			p->bad = 1;
			return;
		}
		*dst = strndup(val, vlen);
		return;
	}
	if (!strcmp(key, "size")) {
		unsigned long long v;

		errno = 0;
		v = strtoull(val, &end, 10);
		if (errno || end == val || *end || val[0] == '-')
			sfs_warn("%s: bad pax size '%s' at offset %llu: ignored",
				 w->what, val, (unsigned long long)at);
		else {
			p->size = v;
			p->has_size = 1;
		}
	} else if (!strcmp(key, "mtime")) {
		p->mtime = strtoll(val, &end, 10);
		p->has_mtime = end != val;
	} else if (!strncmp(key, "GNU.sparse.", 11)) {
		p->sparse = 1;
	}
}

/*
 * Parses pax records "%d %s=%s\n" in buf[0..n).  A malformed record ends
 * the set with a warning (the records before it stay applied).
 */
static void pax_parse(struct walk *w, struct pending *p, char *buf, size_t n,
		      uint64_t at)
{
	size_t pos = 0;

	while (pos < n) {
		char *rec = buf + pos, *sp = rec, *eq, *end;
		unsigned long len = 0;

		if (buf[pos] == '\0')
			break;  /* NUL padding after the last record */
		/* strtoul would skip whitespace and take a sign: "\n1 k=v" would
		 * be a 1-byte record whose space lies past its own end */
		if (rec[0] >= '0' && rec[0] <= '9')
			len = strtoul(rec, &sp, 10);
		if (len == 0 || *sp != ' ' || len > n - pos ||
		    (size_t)(sp - rec) >= len - 1 || rec[len - 1] != '\n') {
			sfs_warn("%s: malformed pax record at offset %llu: rest ignored",
				 w->what, (unsigned long long)(at + pos));
			return;
		}
		end = rec + len - 1;
		*end = '\0';
		eq = memchr(sp + 1, '=', (size_t)(end - sp - 1));
		if (eq) {
			*eq = '\0';
			pax_record(w, p, sp + 1, eq + 1, (size_t)(end - eq - 1), at + pos);
		}
		pos += len;
	}
}

/* 'x', 'g', 'L', 'K': data that describes the next member(s). */
static int ext_header(struct walk *w, int type, uint64_t data, uint64_t size)
{
	struct pending *p = type == 'g' ? &w->global : &w->next;
	char *buf = NULL;
	int rc;

	if (size > MAX_EXTDATA) {
		sfs_warn("%s: %c header at offset %llu has %llu bytes (limit %u)",
			 w->what, type, (unsigned long long)(data - TAR_BLOCK),
			 (unsigned long long)size, MAX_EXTDATA);
		return -EBADMSG;
	}
	rc = rd_alloc(&w->rd, data, (size_t)size, &buf);
	if (rc == -EBADMSG)
		sfs_warn("%s: the file ends inside the %llu data bytes of the %c header "
			 "at offset %llu: archive truncated there", w->what,
			 (unsigned long long)size, type, (unsigned long long)(data - TAR_BLOCK));
	if (rc < 0)
		return rc;
	if (type == 'L' || type == 'K') {
		char **dst = type == 'L' ? &p->path : &p->link;

		free(*dst);
		*dst = buf;     /* NUL-terminated at the first NUL, as tarfile */
		return 0;
	}
	pax_parse(w, p, buf, (size_t)size, data);
	free(buf);
	return 0;
}

/* Old GNU sparse members carry extension blocks before their data. */
static int skip_sparse_ext(struct walk *w, const unsigned char *h, uint64_t *data)
{
	const unsigned char *e;
	int more = h[H_GNU_ISEXT], rc;

	while (more) {
		rc = rd_get(&w->rd, *data, TAR_BLOCK, &e);
		if (rc == -EBADMSG)
			sfs_warn("%s: sparse extension block at offset %llu lies past the "
				 "end of the archive: truncated", w->what,
				 (unsigned long long)*data);
		if (rc < 0)
			return rc;
		more = e[H_GNU_EXT_ISEXT];
		*data += TAR_BLOCK;
	}
	return 0;
}

static const char *type_name(int t)
{
	switch (t) {
	case '3': return "character device";
	case '4': return "block device";
	case '6': return "fifo";
	case 'S': return "GNU sparse file";
	default: return "member of unknown type";
	}
}

/* Fills m->path / m->link from the header and pending records. */
static int member_names(struct walk *w, const unsigned char *h,
			struct tar_member *m)
{
	const char *lp = w->next.path ? w->next.path : w->global.path;
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

/* Normalises the names of m; 1 if it is to be reported, 0 if skipped. */
static int member_path_ok(struct walk *w, struct tar_member *m, uint64_t pos)
{
	int rc = tar_normalise(w->path);

	if (rc == -ENOENT && m->type == TAR_DIR)
		return 0;       /* "./": the root itself */
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
 * (warned).  Links and directories carry no data (as tarfile reads them);
 * devices and fifos neither; other unknown types are skipped over by size.
 */
static int member_type(struct walk *w, int type, uint64_t pos,
		       struct tar_member *m, uint64_t *size, int warn)
{
	switch (type) {
	case '0': case '\0': case '7':
		m->type = TAR_FILE;
		if (type == '\0' && m->path[0] && m->path[strlen(m->path) - 1] == '/')
			m->type = TAR_DIR;
		return 0;
	case '1': m->type = TAR_HARDLINK; *size = 0; return 0;
	case '2': m->type = TAR_SYMLINK; *size = 0; return 0;
	case '5': m->type = TAR_DIR; *size = 0; return 0;
	}
	if (warn)
		sfs_warn("%s: %s '%s' at offset %llu: skipped", w->what,
			 type_name(type), m->path, (unsigned long long)pos);
	if (type == '3' || type == '4' || type == '6')
		*size = 0;
	return 1;
}

/*
 * Turns the header at `pos` into a member; returns 1 to report it, 0 to
 * skip it (warned), <0 on error.  *next is where the next header starts.
 */
static int member(struct walk *w, const unsigned char *h, uint64_t pos,
		  struct tar_member *m, uint64_t *next)
{
	int type = h[H_TYPE], rc, skip = 0;
	uint64_t size, data = pos + TAR_BLOCK;
	int64_t v;

	rc = member_size(w, h, pos, &size);
	if (rc < 0)
		return rc;
	memset(m, 0, sizeof(*m));
	m->header = pos;
	m->mode = parse_num(h + H_MODE, 8, &v) == 0 ? (uint32_t)v & 07777 : 0644;
	m->mtime = parse_num(h + H_MTIME, 12, &v) == 0 ? v : 0;
	if (w->next.has_mtime || w->global.has_mtime)
		m->mtime = w->next.has_mtime ? w->next.mtime : w->global.mtime;
	if (type == 'S' && (rc = skip_sparse_ext(w, h, &data)) < 0)
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
	if (!skip && (w->next.sparse || w->global.sparse)) {
		sfs_warn("%s: pax sparse member '%s' at offset %llu: skipped",
			 w->what, m->path, (unsigned long long)pos);
		skip = 1;
	}
	if (size > w->rd.hi - data) {
		sfs_warn("%s: member '%s' at offset %llu needs %llu bytes but the "
			 "archive ends at %llu: truncated", w->what, m->path,
			 (unsigned long long)pos, (unsigned long long)size,
			 (unsigned long long)w->rd.hi);
		return -EBADMSG;
	}
	*next = data + ((size + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1));
	if (skip)
		return 0;
	m->size = m->type == TAR_FILE ? size : 0;
	m->offset = data;
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
	uint64_t pos = w->rd.lo, hdr = pos, next;
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
			continue;
		}
		rc = member(w, h, pos, &m, &next);
		pending_clear(&w->next);
		if (rc < 0)
			return rc;
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

int tar_walk(int fd, uint64_t base, uint64_t len, const char *what,
	     tar_member_fn fn, void *arg)
{
	struct walk *w;
	int rc;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->rd.fd = fd;
	w->rd.lo = base;
	w->rd.hi = base + len;
	w->rd.want = WINDOW;
	w->what = what;
	rc = walk_loop(w, fn, arg);
	pending_clear(&w->next);
	pending_clear(&w->global);
	free(w);
	return rc;
}
