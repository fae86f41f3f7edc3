/*
 * checkpoint.c - the tar index build's saved progress (see checkpoint.h):
 * its file format, checked reading, and appending with marks.
 *
 * File: a header (struct hdr: magic, version, part, the sources'
 * fingerprint, its own CRC-32), then records, each a struct rec_head
 * (payload length, CRC-32 of the payload) and the payload: a member
 * (struct member_rec, then path NUL link NUL, then the sparse chunks) or a mark
 * (struct mark_rec).  Native byte order, as the index file: a checkpoint is
 * read by the machine that wrote it.
 *
 * Reading is two passes over the file: ckpt_open's scan checks every
 * record (CRC, kind, fields, nesting, order) up to the end or a record cut
 * short, and keeps the last mark; ckpt_next then reads the records again up
 * to that mark, checking their CRC again (the file is ours, but a resume
 * must never replay what was not checked).
 *
 * Not for: what a member means (tarindex_build.c).
 */
#include "index/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "clock.h"
#include "log.h"
#include "index/index.h"
#include "index/tarindex/tarindex.h"

#define MAGIC    "SFSCKPT1"
#define VERSION  2
#define BUF_MAX  (1u << 20)     /* records buffered before a write */
#define CHUNK_SZ sizeof(struct tar_sparse_chunk)
/* the largest record: a sparse member with every chunk it may have */
#define REC_MAX  (sizeof(struct member_rec) + 2 * (TAR_PATH_MAX + 1) + \
		  (size_t)TAR_SPARSE_MAX_CHUNKS * CHUNK_SZ)

struct hdr {
	char magic[8];
	uint32_t version, part;
	uint64_t fp;
	uint32_t crc;           /* of the bytes before it */
	uint32_t zero;
};

struct rec_head {
	uint32_t len, crc;      /* of the payload that follows */
	uint32_t hcrc;          /* of len and crc: a damaged length is told
				 * from a record a kill cut short */
};

enum { K_MEMBER = 'M', K_MARK = 'K' };

struct member_rec {
	uint8_t kind, type, nested, sparse;
	uint32_t src, depth, mode;
	int64_t mtime;
	uint64_t size, offset, stored, header;
	uint32_t nchunks, path_len, link_len, zero;
	/* path NUL link NUL, then nchunks struct tar_sparse_chunk */
};

struct mark_rec {
	uint8_t kind, zero[3];
	uint32_t src;
	uint64_t off, members;
};

struct ckpt {
	char *path;
	int fd;                 /* for appending; -1 when it failed (said once) */
	FILE *rf;               /* replaying: the records up to the mark */
	uint64_t replay_left;   /* member records still to give */
	struct ckpt_member *ahead;      /* ckpt_peek's */
	uint64_t members;       /* recorded (replayed + added) */
	char *buf;              /* records not yet written */
	size_t buffered;
	uint64_t pos;           /* file length with the buffer written */
	/* the last boundary: resume there */
	uint32_t b_src;
	uint64_t b_off, b_members, b_pos;
	int have_boundary;
	int64_t last_mark;      /* sfs_now_ns */
};

static uint32_t crc_of(const void *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

/* ---- checking ---- */

/* The state of a scan: what must come next. */
struct scan {
	uint64_t members;
	uint32_t src, depth_max;        /* of the next member */
};

/* Whether s is NUL-free, n bytes long, NUL-terminated in p. */
static int str_ok(const char *p, uint32_t n)
{
	return p[n] == '\0' && memchr(p, '\0', n) == NULL;
}

/* A path as tar_walk reports it: normalised. */
static int path_ok(const char *p, uint32_t n)
{
	char tmp[TAR_PATH_MAX + 1];

	if (!n || n > TAR_PATH_MAX || !str_ok(p, n))
		return 0;
	memcpy(tmp, p, n + 1);
	return tar_normalise(tmp) == 0 && strcmp(tmp, p) == 0;
}

/* Checks member payload p (len bytes) against the scan and advances it
 * (sc NULL: its fields only); fills *out (pointing into p) when out is
 * set.  1 if valid, else 0. */
static int member_ok(struct scan *sc, const uint8_t *p, size_t len,
		     struct ckpt_member *out)
{
	struct member_rec r;
	const char *path, *link;

	if (len < sizeof(r))
		return 0;
	memcpy(&r, p, sizeof(r));
	if (r.type < TAR_FILE || r.type > TAR_SYMLINK || r.nested > 1 ||
	    r.sparse > 1 || r.zero || r.path_len > TAR_PATH_MAX ||
	    r.link_len > TAR_PATH_MAX || r.nchunks > TAR_SPARSE_MAX_CHUNKS ||
	    (!r.sparse && r.nchunks) || (r.nested && r.type != TAR_FILE) ||
	    r.depth > TARINDEX_MAX_NEST ||
	    len != sizeof(r) + r.path_len + 1 + r.link_len + 1 +
		   (size_t)r.nchunks * CHUNK_SZ)
		return 0;
	path = (const char *)p + sizeof(r);
	link = path + r.path_len + 1;
	if (!path_ok(path, r.path_len) || !str_ok(link, r.link_len) ||
	    (r.type == TAR_HARDLINK && !path_ok(link, r.link_len)))
		return 0;
	/* order (sc NULL: checked before): sources ascending, each from
	 * depth 0; nesting one level at a time, under a member expanded as a
	 * nested tar */
	if (sc && (r.src < sc->src || (r.src > sc->src && r.depth) ||
		   (r.src == sc->src && r.depth > sc->depth_max)))
		return 0;
	if (sc) {
		sc->src = r.src;
		sc->depth_max = r.depth + r.nested;
		sc->members++;
	}
	if (!out)
		return 1;
	memset(out, 0, sizeof(*out));
	out->src = r.src;
	out->depth = r.depth;
	out->nested = r.nested;
	out->m = (struct tar_member){ .path = path, .link = link,
		.type = (enum tar_type)r.type, .mode = r.mode, .mtime = r.mtime,
		.size = r.size, .offset = r.offset, .stored = r.stored,
		.header = r.header, .sparse = r.sparse, .nchunks = r.nchunks,
		.chunks = (const struct tar_sparse_chunk *)(link + r.link_len + 1) };
	return 1;
}

/* A mark fits the scan: every member before it recorded, sources in order. */
static int mark_ok(const struct scan *sc, const uint8_t *p, size_t len,
		   struct ckpt_resume *out)
{
	struct mark_rec k;

	if (len != sizeof(k))
		return 0;
	memcpy(&k, p, sizeof(k));
	if (k.zero[0] || k.zero[1] || k.zero[2] || k.members != sc->members ||
	    k.src < sc->src)
		return 0;
	*out = (struct ckpt_resume){ k.src, k.off, k.members };
	return 1;
}

/*
 * Reads the next record of f into *buf (grown): 1 with its payload length
 * in *len, 0 at the end of the file or a record cut short there, -EBADMSG
 * when it is damaged (a length over REC_MAX, a wrong CRC), -errno.
 */
static int read_rec(FILE *f, uint8_t **buf, size_t *cap, size_t *len)
{
	struct rec_head h;
	uint8_t *q;

	if (fread(&h, 1, sizeof(h), f) != sizeof(h))
		return ferror(f) ? -EIO : 0;
	if (h.hcrc != crc_of(&h, offsetof(struct rec_head, hcrc)) ||
	    h.len == 0 || h.len > REC_MAX)
		return -EBADMSG;
	if (h.len > *cap) {
		if (!(q = realloc(*buf, h.len)))
			return -ENOMEM;
		*buf = q;
		*cap = h.len;
	}
	if (fread(*buf, 1, h.len, f) != h.len)
		return ferror(f) ? -EIO : 0;
	*len = h.len;
	return crc_of(*buf, h.len) == h.crc ? 1 : -EBADMSG;
}

/*
 * Pass one: the header, then every record; *res the last mark and *end the
 * file offset after it.  1 when there is one, 0 when none (or another
 * fingerprint: *other set), -EBADMSG when damaged, -errno.
 */
static int scan_file(FILE *f, uint32_t part, uint64_t fp, struct ckpt_resume *res,
		     uint64_t *end, int *other)
{
	struct scan sc = { 0 };
	struct hdr h;
	uint8_t *buf = NULL;
	size_t cap = 0, len;
	int rc, found = 0;

	*other = 0;
	if (fread(&h, 1, sizeof(h), f) != sizeof(h))
		return ferror(f) ? -EIO : 0;
	if (memcmp(h.magic, MAGIC, 8) || h.crc != crc_of(&h, offsetof(struct hdr, crc)) ||
	    h.zero)
		return -EBADMSG;
	if (h.version != VERSION || h.part != part || h.fp != fp) {
		*other = 1;
		return 0;
	}
	while ((rc = read_rec(f, &buf, &cap, &len)) == 1) {
		if (buf[0] == K_MEMBER && member_ok(&sc, buf, len, NULL))
			continue;
		if (buf[0] != K_MARK || !mark_ok(&sc, buf, len, res)) {
			rc = -EBADMSG;
			break;
		}
		*end = (uint64_t)ftello(f);
		found = 1;
	}
	free(buf);
	return rc < 0 ? rc : found;
}

/* ---- writing ---- */

/* Writes the buffer out: 0 or -errno (said once; the checkpoint is then
 * given up, the build goes on without). */
static int flush_buf(struct ckpt *c)
{
	int rc;

	if (c->fd < 0)
		return 0;
	rc = index_write_all(c->fd, c->buf, c->buffered, c->path);
	c->buffered = 0;
	if (rc < 0) {
		/* removed, not left half written: on a full index_dir (the
		 * usual cause) it holds space the user must free, and a
		 * refused mount leaves index_dir as it found it */
		sfs_warn("%s: the index build goes on without saving its progress",
			 c->path);
		close(c->fd);
		c->fd = -1;
		unlink(c->path);
	}
	return 0;
}

/* Appends one record (payload in two pieces, b may be NULL). */
static int put_rec(struct ckpt *c, const void *a, size_t alen, const void *b,
		   size_t blen)
{
	struct rec_head h = { (uint32_t)(alen + blen), 0, 0 };
	uint32_t crc = crc_of(a, alen);

	if (c->fd < 0)
		return 0;
	if (blen)
		crc = (uint32_t)crc32(crc, b, (uInt)blen);
	h.crc = crc;
	h.hcrc = crc_of(&h, offsetof(struct rec_head, hcrc));
	if (c->buffered + sizeof(h) + alen + blen > BUF_MAX)
		flush_buf(c);
	if (sizeof(h) + alen + blen > BUF_MAX) {	/* a huge sparse map */
		if (index_write_all(c->fd, &h, sizeof(h), c->path) ||
		    index_write_all(c->fd, a, alen, c->path) ||
		    (blen && index_write_all(c->fd, b, blen, c->path))) {
			c->buffered = 0;
			return flush_buf(c);	/* says it, gives up */
		}
	} else {
		memcpy(c->buf + c->buffered, &h, sizeof(h));
		memcpy(c->buf + c->buffered + sizeof(h), a, alen);
		if (blen)
			memcpy(c->buf + c->buffered + sizeof(h) + alen, b, blen);
		c->buffered += sizeof(h) + alen + blen;
	}
	c->pos += sizeof(h) + alen + blen;
	return 0;
}

int ckpt_add(struct ckpt *c, const struct ckpt_member *cm)
{
	const struct tar_member *m = &cm->m;
	size_t plen = strlen(m->path), llen = strlen(m->link);
	size_t clen = m->sparse ? (size_t)m->nchunks * CHUNK_SZ : 0;
	size_t n = sizeof(struct member_rec) + plen + 1 + llen + 1;
	struct member_rec r = { K_MEMBER, (uint8_t)m->type, (uint8_t)!!cm->nested,
			  (uint8_t)!!m->sparse, cm->src, cm->depth, m->mode,
			  m->mtime, m->size, m->offset, m->stored, m->header,
			  m->sparse ? m->nchunks : 0, (uint32_t)plen, (uint32_t)llen, 0 };
	char *p;
	int rc;

	c->members++;
	if (c->fd < 0)
		return 0;
	if (!(p = malloc(n)))
		return -ENOMEM;
	memcpy(p, &r, sizeof(r));
	memcpy(p + sizeof(r), m->path, plen + 1);
	memcpy(p + sizeof(r) + plen + 1, m->link, llen + 1);
	rc = put_rec(c, p, n, m->chunks, clen);
	free(p);
	return rc;
}

/* Writes a mark at the last boundary, everything before it on disk. */
static void mark(struct ckpt *c)
{
	struct mark_rec k = { K_MARK, { 0 }, c->b_src, c->b_off, c->b_members };

	if (c->fd < 0 || !c->have_boundary)
		return;
	put_rec(c, &k, sizeof(k), NULL, 0);
	flush_buf(c);
	if (c->fd >= 0)
		fdatasync(c->fd);
	c->last_mark = sfs_now_ns();
}

int ckpt_boundary(struct ckpt *c, uint32_t src, uint64_t off, int now)
{
	c->b_src = src;
	c->b_off = off;
	c->b_members = c->members;
	c->b_pos = c->pos;
	c->have_boundary = 1;
	if (now || sfs_now_ns() - c->last_mark >= CKPT_EVERY_MS * 1000000LL)
		mark(c);
	return 0;
}

/* A new checkpoint: the header in a temporary file renamed into place. */
static int create(struct ckpt *c, uint32_t part, uint64_t fp)
{
	struct hdr h = { MAGIC, VERSION, part, fp, 0, 0 };
	char *tmp = NULL;
	int fd = -1, rc;

	h.crc = crc_of(&h, offsetof(struct hdr, crc));
	if (asprintf(&tmp, "%s.tmp", c->path) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	rc = fd < 0 ? -errno : index_write_all(fd, &h, sizeof(h), tmp);
	if (fd < 0)
		sfs_warn("%s: cannot create: %s", tmp, strerror(-rc));
	if (rc == 0 && rename(tmp, c->path) < 0) {
		rc = -errno;
		sfs_warn("%s: cannot rename to %s: %s", tmp, c->path, strerror(errno));
	}
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		free(tmp);
		return rc;
	}
	free(tmp);
	c->fd = fd;
	c->pos = sizeof(h);
	return 0;
}

/* Opens the valid log for replay up to `end`, and for appending after it. */
static int reopen(struct ckpt *c, uint64_t end)
{
	struct hdr h;

	if (!(c->rf = fopen(c->path, "rbe")))
		return -errno;
	if (fread(&h, 1, sizeof(h), c->rf) != sizeof(h))
		return -EIO;
	c->fd = open(c->path, O_WRONLY | O_CLOEXEC);
	if (c->fd < 0 || ftruncate(c->fd, (off_t)end) < 0 ||
	    lseek(c->fd, (off_t)end, SEEK_SET) < 0)
		return -errno;
	c->pos = end;
	return 0;
}

int ckpt_open(struct ckpt **out, const char *index_path, uint32_t part,
	      uint64_t fp, struct ckpt_resume *resume)
{
	struct ckpt *c = calloc(1, sizeof(*c));
	uint64_t end = 0;
	FILE *f;
	int rc = -ENOMEM, other = 0, found = 0;

	*out = NULL;
	memset(resume, 0, sizeof(*resume));
	if (!c || asprintf(&c->path, "%s.ckpt.%02x", index_path, part & 0xff) < 0 ||
	    !(c->buf = malloc(BUF_MAX)))
		goto fail;
	c->fd = -1;
	c->last_mark = sfs_now_ns();
	if ((f = fopen(c->path, "rbe"))) {
		found = scan_file(f, part, fp, resume, &end, &other);
		fclose(f);
	}
	if (found < 0)
		sfs_warn("%s: a damaged checkpoint (%s): ignored, the index is "
			 "built from the start", c->path, found == -EBADMSG ?
			 "a record fails its check" : strerror(-found));
	else if (other)
		sfs_info("%s: a checkpoint of another version of the sources: "
			 "dropped", c->path);
	if (found == 1 && reopen(c, end) == 0) {
		c->replay_left = c->members = resume->members;
		*out = c;
		return 1;
	}
	if (c->rf)
		fclose(c->rf);
	c->rf = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	memset(resume, 0, sizeof(*resume));
	c->members = 0;
	if ((rc = create(c, part, fp)) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	if (c) {
		free(c->buf);
		free(c->path);
	}
	free(c);
	return rc;
}

/*
 * Reads the next member record of the replay into a malloc'ed member: the
 * struct, the record's bytes, then its chunks copied to an aligned place.
 */
static int next_member(struct ckpt *c, struct ckpt_member **out)
{
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, at;
	struct ckpt_member *m = NULL;
	int rc;

	*out = NULL;
	if (!c->replay_left || !c->rf)
		return 0;
	do {
		rc = read_rec(c->rf, &buf, &cap, &len);
	} while (rc == 1 && buf[0] == K_MARK);
	if (rc == 0 || rc == -EBADMSG)
		rc = -ESTALE;	/* the scan saw it whole: the file changed */
	at = (len + 7) & ~(size_t)7;
	if (rc == 1 && buf[0] != K_MEMBER)
		rc = -ESTALE;
	else if (rc == 1 && !(m = malloc(sizeof(*m) + at + len)))
		rc = -ENOMEM;
	if (rc == 1) {
		memcpy(m + 1, buf, len);
		/* the scan checked the order; the fields again here */
		rc = member_ok(NULL, (const uint8_t *)(m + 1), len, m) ? 1 : -ESTALE;
	}
	free(buf);
	if (rc != 1) {
		free(m);
		return rc;
	}
	if (m->m.nchunks) {
		memcpy((char *)(m + 1) + at, m->m.chunks, (size_t)m->m.nchunks * CHUNK_SZ);
		m->m.chunks = (const struct tar_sparse_chunk *)((char *)(m + 1) + at);
	}
	c->replay_left--;
	*out = m;
	return 1;
}

int ckpt_next(struct ckpt *c, struct ckpt_member **out)
{
	int rc;

	if (c->ahead) {
		*out = c->ahead;
		c->ahead = NULL;
		return 1;
	}
	rc = next_member(c, out);
	if (rc == 0 && c->rf) {
		fclose(c->rf);
		c->rf = NULL;
	}
	return rc;
}

int ckpt_peek(struct ckpt *c, uint32_t *src, uint32_t *depth)
{
	int rc = 1;

	if (!c->ahead && (rc = next_member(c, &c->ahead)) != 1)
		return rc;
	*src = c->ahead->src;
	*depth = c->ahead->depth;
	return 1;
}

void ckpt_close(struct ckpt *c, int done)
{
	if (!c)
		return;
	if (done) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		unlink(c->path);
	} else if (c->fd >= 0 && c->have_boundary) {
		/* what follows the boundary is a member half walked */
		flush_buf(c);
		if (c->fd >= 0 && c->pos > c->b_pos &&
		    (ftruncate(c->fd, (off_t)c->b_pos) < 0 ||
		     lseek(c->fd, (off_t)c->b_pos, SEEK_SET) < 0)) {
			close(c->fd);
			c->fd = -1;
		}
		c->pos = c->b_pos;
		mark(c);
	}
	if (c->fd >= 0)
		close(c->fd);
	if (c->rf)
		fclose(c->rf);
	free(c->ahead);
	free(c->buf);
	free(c->path);
	free(c);
}

const char *ckpt_path(const struct ckpt *c)
{
	return c->path;
}

int ckpt_check_file(const char *path, uint32_t part, uint64_t fp)
{
	struct ckpt_resume res;
	struct ckpt c = { .fd = -1 };
	struct ckpt_member *m;
	struct hdr h;
	uint64_t end = 0;
	int rc, other;
	FILE *f = fopen(path, "rbe");

	if (!f)
		return -errno;
	rc = scan_file(f, part, fp, &res, &end, &other);
	if (rc == 1 && fseeko(f, (off_t)sizeof(h), SEEK_SET) == 0) {
		c.rf = f;
		c.replay_left = res.members;
		while ((rc = ckpt_next(&c, &m)) == 1)
			free(m);
		f = c.rf;
	}
	if (f)
		fclose(f);
	return rc;
}
