/*
 * zip.c - read members of a zip archive (the .npz container), see zip.h.
 *
 * zip_open reads the central directory once: the end record is searched in
 * the last 64 KiB + 22 bytes, zip64 end records and zip64 extra fields are
 * honoured, and every count and offset is checked against the file before
 * anything is allocated from it.  zip_read_member then trusts only the
 * central directory for sizes and CRC (so data descriptors need no special
 * case), reads the local header just to find where the data starts, and
 * inflates into a buffer that grows with the inflated bytes up to exactly
 * the declared size: a stream that wants to produce more, or ends early, is
 * an error, never a bigger allocation, and a declared size that deflate
 * could not reach from the compressed size is refused before any.
 *
 * After zip_open the archive is read-only: zip_read_member may run in many
 * threads at once (it reads the shared source with source_pread).  Not a general
 * zip library: no encryption, no multi-disk, no methods but stored and
 * deflate, no writing.
 */
#include "formats/zip.h"
#include "io/source.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SIG_LOCAL     0x04034b50u
#define SIG_CENTRAL   0x02014b50u
#define SIG_EOCD      0x06054b50u
#define SIG_EOCD64    0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define EOCD_LEN      22
#define LOCATOR64_LEN 20
#define EOCD64_LEN    56
#define CENTRAL_LEN   46
#define LOCAL_LEN     30
#define COMMENT_MAX   65535
/* An .npz has a handful of members; a directory over 64 MiB is hostile. */
#define CD_MAX        (64u << 20)
#define INFLATE_CHUNK (64u << 10)
/* Deflate's best case is 258 bytes from 2 bits (zlib's "1032:1"), and
 * every stream has a block header besides: a member that declares more
 * than 1032 x its compressed size is a lie, refused before allocating. */
#define DEFLATE_MAX_RATIO 1032u

struct zip_archive {
	struct source *src;     /* the caller's */
	const char *path;       /* its name, for messages */
	uint64_t size;
	uint64_t cd_off;        /* member data must end before this */
	size_t count;
	struct zip_member *members;
	char *names;            /* the members' names, NUL-terminated */
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Reads exactly n bytes at off; a short file is -EIO. */
static int pread_full(struct source *src, void *buf, size_t n, uint64_t off)
{
	ssize_t r = source_pread(src, buf, n, off);

	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -EIO;
}

/* ---- end of central directory --------------------------------------- */

struct cd_loc {
	uint64_t count, size, off;
	uint64_t end;           /* where the directory must end */
};

/* The last end record whose comment fits in the file. */
static int find_eocd(struct zip_archive *za, uint64_t *eocd_off, uint8_t rec[EOCD_LEN])
{
	size_t tail = za->size < EOCD_LEN + COMMENT_MAX ?
		      (size_t)za->size : EOCD_LEN + COMMENT_MAX;
	uint8_t *buf = malloc(tail);
	size_t i;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = pread_full(za->src, buf, tail, za->size - tail);
	if (rc)
		goto out;
	rc = -EINVAL;
	for (i = tail - EOCD_LEN + 1; i-- > 0;) {
		if (le32(buf + i) == SIG_EOCD &&
		    i + EOCD_LEN + le16(buf + i + 20) <= tail) {
			*eocd_off = za->size - tail + i;
			memcpy(rec, buf + i, EOCD_LEN);
			rc = 0;
			break;
		}
	}
	if (rc)
		sfs_err("%s: no zip end-of-central-directory record in the last %zu bytes",
			za->path, tail);
out:
	free(buf);
	return rc;
}

/* Reads the zip64 end record through the locator just before the end
 * record at eocd_off. */
static int read_eocd64(struct zip_archive *za, uint64_t eocd_off, struct cd_loc *loc)
{
	uint8_t lr[LOCATOR64_LEN], rec[EOCD64_LEN];
	uint64_t off;
	int rc;

	if (eocd_off < LOCATOR64_LEN + EOCD64_LEN)
		goto bad;
	rc = pread_full(za->src, lr, sizeof(lr), eocd_off - LOCATOR64_LEN);
	if (rc)
		return rc;
	if (le32(lr) != SIG_LOCATOR64)
		goto bad;
	off = le64(lr + 8);
	if (le32(lr + 4) != 0 || le32(lr + 16) > 1 ||
	    off > eocd_off - LOCATOR64_LEN - EOCD64_LEN)
		goto bad;
	rc = pread_full(za->src, rec, sizeof(rec), off);
	if (rc)
		return rc;
	if (le32(rec) != SIG_EOCD64 || le32(rec + 16) != 0 || le32(rec + 20) != 0 ||
	    le64(rec + 24) != le64(rec + 32))
		goto bad;
	loc->count = le64(rec + 32);
	loc->size = le64(rec + 40);
	loc->off = le64(rec + 48);
	loc->end = off;
	return 0;
bad:
	sfs_err("%s: offset %llu: bad zip64 end record or locator (or a multi-disk archive)",
		za->path, (unsigned long long)eocd_off);
	return -EINVAL;
}

static int locate_cd(struct zip_archive *za, struct cd_loc *loc)
{
	uint8_t rec[EOCD_LEN];
	uint64_t eocd_off;
	int rc = find_eocd(za, &eocd_off, rec);

	if (rc)
		return rc;
	loc->count = le16(rec + 10);
	loc->size = le32(rec + 12);
	loc->off = le32(rec + 16);
	loc->end = eocd_off;
	if (eocd_off >= LOCATOR64_LEN) {
		uint8_t sig[4];

		rc = pread_full(za->src, sig, 4, eocd_off - LOCATOR64_LEN);
		if (rc)
			return rc;
		if (le32(sig) == SIG_LOCATOR64)
			return read_eocd64(za, eocd_off, loc);
	}
	if (le16(rec + 4) != 0 || le16(rec + 6) != 0 || le16(rec + 8) != loc->count)
		goto bad;
	if (loc->count == 0xffff || loc->size == 0xffffffff || loc->off == 0xffffffff)
		goto bad;       /* saturated fields need a zip64 record */
	return 0;
bad:
	sfs_err("%s: offset %llu: zip end record is multi-disk or needs a missing zip64 record",
		za->path, (unsigned long long)eocd_off);
	return -EINVAL;
}

/* ---- central directory ---------------------------------------------- */

/* Replaces saturated 32-bit fields from a zip64 extra field (id 1), in
 * the order the format gives: usize, csize, header offset. */
static int apply_zip64(struct zip_member *m, const uint8_t *ex, size_t exlen)
{
	uint64_t *want[3] = { &m->usize, &m->csize, &m->header_off };
	size_t i, pos;

	while (exlen >= 4) {
		uint16_t id = le16(ex), len = le16(ex + 2);

		if ((size_t)len + 4 > exlen)
			return -1;
		if (id == 1) {
			for (i = 0, pos = 4; i < 3; i++) {
				if (*want[i] != 0xffffffff)
					continue;
				if (pos + 8 > (size_t)len + 4)
					return -1;
				*want[i] = le64(ex + pos);
				pos += 8;
			}
		}
		ex += len + 4;
		exlen -= (size_t)len + 4;
	}
	return (m->usize == 0xffffffff || m->csize == 0xffffffff ||
		m->header_off == 0xffffffff) ? -1 : 0;
}

/* Parses the entry at cd[*pos], stores its name at *names. */
static int parse_entry(struct zip_archive *za, const uint8_t *cd, size_t cdlen,
		       size_t *pos, struct zip_member *m, char **names,
		       uint64_t cd_off)
{
	const uint8_t *e = cd + *pos;
	size_t nlen, xlen, clen;
	uint64_t at = cd_off + *pos;

	if (cdlen - *pos < CENTRAL_LEN || le32(e) != SIG_CENTRAL) {
		sfs_err("%s: offset %llu: expected a zip central directory entry",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	nlen = le16(e + 28);
	xlen = le16(e + 30);
	clen = le16(e + 32);
	if (cdlen - *pos - CENTRAL_LEN < nlen + xlen + clen) {
		sfs_err("%s: offset %llu: zip central entry runs past the directory",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	m->flags = le16(e + 8);
	m->method = le16(e + 10);
	m->crc32 = le32(e + 16);
	m->csize = le32(e + 20);
	m->usize = le32(e + 24);
	m->header_off = le32(e + 42);
	if (memchr(e + CENTRAL_LEN, 0, nlen)) {
		sfs_err("%s: offset %llu: zip member name contains a NUL byte",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	if (apply_zip64(m, e + CENTRAL_LEN + nlen, xlen)) {
		sfs_err("%s: offset %llu: zip central entry needs a zip64 extra field it lacks or truncates",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	if (m->header_off > cd_off - LOCAL_LEN || m->csize > cd_off) {
		sfs_err("%s: offset %llu: zip member's local header (at %llu) or size (%llu) lies past the directory at %llu",
			za->path, (unsigned long long)at,
			(unsigned long long)m->header_off,
			(unsigned long long)m->csize, (unsigned long long)cd_off);
		return -EINVAL;
	}
	memcpy(*names, e + CENTRAL_LEN, nlen);
	(*names)[nlen] = '\0';
	m->name = *names;
	*names += nlen + 1;
	*pos += CENTRAL_LEN + nlen + xlen + clen;
	return 0;
}

static int read_cd(struct zip_archive *za, const struct cd_loc *loc)
{
	uint8_t *cd = NULL;
	char *names;
	size_t pos = 0, i;
	int rc = -EINVAL;

	if (loc->off > loc->end || loc->size > loc->end - loc->off ||
	    loc->size > CD_MAX || loc->count > loc->size / CENTRAL_LEN ||
	    loc->off < LOCAL_LEN * loc->count) {
		sfs_err("%s: zip central directory of %llu entries, %llu bytes at offset %llu does not fit before offset %llu (or exceeds %u bytes)",
			za->path, (unsigned long long)loc->count,
			(unsigned long long)loc->size, (unsigned long long)loc->off,
			(unsigned long long)loc->end, CD_MAX);
		return -EINVAL;
	}
	cd = malloc(loc->size ? loc->size : 1);
	za->members = calloc(loc->count ? loc->count : 1, sizeof(*za->members));
	/* names and their NULs fit in the directory's own size */
	za->names = malloc(loc->size + 1);
	if (!cd || !za->members || !za->names) {
		rc = -ENOMEM;
		goto out;
	}
	rc = pread_full(za->src, cd, loc->size, loc->off);
	if (rc) {
		sfs_err("%s: offset %llu: cannot read the zip central directory",
			za->path, (unsigned long long)loc->off);
		goto out;
	}
	names = za->names;
	for (i = 0; i < loc->count; i++) {
		rc = parse_entry(za, cd, loc->size, &pos, &za->members[i],
				 &names, loc->off);
		if (rc)
			goto out;
	}
	za->count = loc->count;
	za->cd_off = loc->off;
out:
	free(cd);
	return rc;
}

int zip_open(struct zip_archive **zap, struct source *src)
{
	struct zip_archive *za;
	struct cd_loc loc;
	int rc;

	*zap = NULL;
	za = calloc(1, sizeof(*za));
	if (!za)
		return -ENOMEM;
	za->src = src;
	za->path = source_name(src);
	za->size = source_stamp(src)->size;
	if (za->size < EOCD_LEN) {
		sfs_err("%s: %llu bytes is too short for a zip archive", za->path,
			(unsigned long long)za->size);
		rc = -EINVAL;
		goto out;
	}
	rc = locate_cd(za, &loc);
	if (rc == 0)
		rc = read_cd(za, &loc);
out:
	if (rc) {
		zip_close(za);
		return rc;
	}
	*zap = za;
	return 0;
}

void zip_close(struct zip_archive *za)
{
	if (!za)
		return;
	free(za->members);
	free(za->names);
	free(za);
}

size_t zip_count(const struct zip_archive *za)
{
	return za->count;
}

const struct zip_member *zip_member_at(const struct zip_archive *za, size_t i)
{
	return i < za->count ? &za->members[i] : NULL;
}

const struct zip_member *zip_find(const struct zip_archive *za, const char *name)
{
	size_t i;

	for (i = 0; i < za->count; i++)
		if (strcmp(za->members[i].name, name) == 0)
			return &za->members[i];
	return NULL;
}

/* ---- member data ---------------------------------------------------- */

/* Where m's data starts, from its local header (whose name must match). */
static int data_offset(struct zip_archive *za, const struct zip_member *m,
		       uint64_t *off)
{
	uint8_t lh[LOCAL_LEN];
	size_t nlen = strlen(m->name);
	char name[256];
	int rc = pread_full(za->src, lh, sizeof(lh), m->header_off);

	if (rc == 0 && (le32(lh) != SIG_LOCAL || le16(lh + 26) != nlen))
		rc = -EIO;
	if (rc == 0 && nlen <= sizeof(name)) {
		rc = pread_full(za->src, name, nlen, m->header_off + LOCAL_LEN);
		if (rc == 0 && memcmp(name, m->name, nlen) != 0)
			rc = -EIO;
	}
	*off = m->header_off + LOCAL_LEN + nlen + le16(lh + 28);
	if (rc == 0 && (*off > za->cd_off || m->csize > za->cd_off - *off))
		rc = -EIO;
	if (rc)
		sfs_err("%s: member %s: offset %llu: bad local header, or data running into the central directory",
			za->path, m->name, (unsigned long long)m->header_off);
	return rc ? -EIO : 0;
}

/* csize == usize: zip_read_member checked it before allocating */
static int read_stored(struct zip_archive *za, const struct zip_member *m,
		       uint64_t off, uint8_t *out)
{
	if (pread_full(za->src, out, (size_t)m->usize, off)) {
		sfs_err("%s: member %s: offset %llu: cannot read %llu bytes",
			za->path, m->name, (unsigned long long)off,
			(unsigned long long)m->usize);
		return -EIO;
	}
	return 0;
}

/* The output buffer of one member: grown as inflated bytes arrive, never
 * past the declared size, so a directory that lies costs nothing. */
struct outbuf {
	uint8_t *p;
	uint64_t cap;
};

/* Room for at least one more byte (usize > produced). */
static int outbuf_grow(struct outbuf *o, uint64_t usize)
{
	uint64_t cap = o->cap * 2 < usize ? o->cap * 2 : usize;
	uint8_t *p = realloc(o->p, (size_t)cap + 1);

	if (!p)
		return -ENOMEM;
	o->p = p;
	o->cap = cap;
	return 0;
}

/*
 * Inflates exactly m->csize bytes at off into o->p[0..usize); returns NULL
 * or what is wrong.  Once usize bytes are out, inflate gets a one-byte
 * sink: anything written there means the stream is bigger than declared
 * (a bomb, or a lying directory), and we stop there.
 */
static const char *inflate_exact(struct zip_archive *za, const struct zip_member *m,
				 uint64_t off, struct outbuf *o, z_stream *zs,
				 uint8_t *in, int *rc)
{
	uint64_t left = m->csize, produced = 0;
	uint8_t sink;
	int zr = Z_OK, probing;

	while (zr != Z_STREAM_END) {
		if (zs->avail_in == 0 && left > 0) {
			size_t n = left < INFLATE_CHUNK ? (size_t)left : INFLATE_CHUNK;

			if (pread_full(za->src, in, n, off + (m->csize - left)))
				return "cannot read compressed data";
			zs->next_in = in;
			zs->avail_in = (uInt)n;
			left -= n;
		}
		probing = produced == m->usize;
		if (!probing && produced == o->cap && outbuf_grow(o, m->usize)) {
			*rc = -ENOMEM;
			return "out of memory";
		}
		if (probing) {
			zs->next_out = &sink;
			zs->avail_out = 1;
		} else {
			uint64_t room = o->cap - produced;

			zs->next_out = o->p + produced;
			zs->avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
		}
		zr = inflate(zs, Z_NO_FLUSH);
		if (probing && zs->avail_out == 0)
			return "inflates to more than its declared size";
		if (!probing)
			produced = (uint64_t)(zs->next_out - o->p);
		if (zr == Z_BUF_ERROR)          /* no progress: input ran out */
			return "deflate stream is truncated";
		if (zr != Z_OK && zr != Z_STREAM_END)
			return zs->msg ? zs->msg : "corrupt deflate stream";
	}
	if (produced != m->usize)
		return "deflate stream ends before the declared size";
	if (left > 0 || zs->avail_in > 0)
		return "compressed size is larger than its deflate stream";
	return NULL;
}

static int read_deflated(struct zip_archive *za, const struct zip_member *m,
			 uint64_t off, struct outbuf *o)
{
	uint8_t *in = malloc(INFLATE_CHUNK);
	const char *why;
	z_stream zs;
	int rc = -EIO;

	memset(&zs, 0, sizeof(zs));
	if (!in || inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
		free(in);
		return -ENOMEM;
	}
	why = inflate_exact(za, m, off, o, &zs, in, &rc);
	if (why && rc != -ENOMEM)
		sfs_err("%s: member %s: data at offset %llu: %s (%llu bytes declared)",
			za->path, m->name, (unsigned long long)off, why,
			(unsigned long long)m->usize);
	inflateEnd(&zs);
	free(in);
	return why ? rc : 0;
}

int zip_read_member(struct zip_archive *za, const struct zip_member *m,
		    uint64_t max, uint8_t **out, size_t *outlen)
{
	struct outbuf o = { NULL, 0 };
	uint64_t off;
	int rc;

	*out = NULL;
	*outlen = 0;
	if (m->usize > max || m->usize > SIZE_MAX - 1) {
		sfs_err("%s: member %s declares %llu bytes, more than the limit of %llu",
			za->path, m->name, (unsigned long long)m->usize,
			(unsigned long long)max);
		return -EFBIG;
	}
	if ((m->flags & 1) || (m->method != 0 && m->method != 8)) {
		sfs_err("%s: member %s: offset %llu: encrypted or compression method %u (only stored and deflate are read)",
			za->path, m->name, (unsigned long long)m->header_off,
			m->method);
		return -EIO;
	}
	if (m->method == 0 && m->csize != m->usize) {
		sfs_err("%s: member %s: offset %llu: stored with %llu bytes but declares %llu",
			za->path, m->name, (unsigned long long)m->header_off,
			(unsigned long long)m->csize, (unsigned long long)m->usize);
		return -EIO;
	}
	if (m->method == 8 && m->usize / DEFLATE_MAX_RATIO > m->csize) {
		sfs_err("%s: member %s: offset %llu: declares %llu bytes from %llu compressed, "
			"more than deflate's maximum ratio of %u:1", za->path, m->name,
			(unsigned long long)m->header_off, (unsigned long long)m->usize,
			(unsigned long long)m->csize, DEFLATE_MAX_RATIO);
		return -EIO;
	}
	rc = data_offset(za, m, &off);
	if (rc)
		return rc;
	/* stored data is all there (data_offset checked); deflated data gets
	 * memory only as it inflates */
	o.cap = m->method == 0 || m->usize < INFLATE_CHUNK ? m->usize : INFLATE_CHUNK;
	o.p = malloc((size_t)o.cap + 1);        /* +1: malloc(0) may be NULL */
	if (!o.p)
		return -ENOMEM;
	rc = m->method == 0 ? read_stored(za, m, off, o.p)
			    : read_deflated(za, m, off, &o);
	if (rc == 0 && crc32_z(0, o.p, (size_t)m->usize) != m->crc32) {
		sfs_err("%s: member %s: CRC-32 mismatch (directory says %08x)",
			za->path, m->name, m->crc32);
		rc = -EIO;
	}
	if (rc) {
		free(o.p);
		return rc;
	}
	*out = o.p;
	*outlen = (size_t)m->usize;
	return 0;
}
