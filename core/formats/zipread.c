/*
 * zipread.c - member data of zips (see zipread.h): the whole-member read
 * (into a buffer that grows with the decoded bytes up to exactly the
 * declared size: deflate by io/zsource.h's zsource_inflate_whole, the
 * inflater of the large members' spans too; the other methods through
 * zipmethod.h's table), the cache of small members, and the sources of
 * large deflated and other compressed ones.
 *
 * A large deflated member is a derived source: a slice of the zip read
 * as raw deflate by io/zsource.c (zsource_wrap_deflate), with the access
 * points, span cache, CRC-32 checks and stored tables of a gzip file, so
 * a read far into it inflates one span, not the bytes before it.  The
 * caller's zipread_open_fn opens it at its first read (the tar index
 * names it: tarindex_zip.c); this file keeps it until zipread_free.
 *
 * Threads: the cache (io/lru.h) locks itself; the table of member
 * sources is under zr->lock, held only to look one up or keep one
 * (opening and reading run unlocked); a source is read from any thread.
 *
 * Not for: the central directory (zip.c, zipwalk.c).
 */
#include "formats/zipread.h"
#include "formats/zip_int.h"
#include "formats/zipmethod.h"
#include "io/lru.h"
#include "io/crc.h"
#include "io/slice.h"
#include "io/source.h"
#include "io/codecs/zsource.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define INFLATE_CHUNK (64u << 10)

/* A read to retry, not bad data: no-wait mode's "it would wait" (the FUSE
 * layer retries on a worker) or a cancelled remote read.  Said by no one. */
static int transient(int rc)
{
	return rc == -EAGAIN || rc == -EINTR;
}

/* csize == usize: zip_read_member checked it before allocating */
static int read_stored(const struct zip_data *d, uint64_t off, uint8_t *out)
{
	int rc = zip_pread_full(d->src, out, (size_t)d->usize, off);

	if (transient(rc))
		return rc;
	if (rc) {
		sfs_err("%s: member %s: offset %llu: cannot read %llu bytes",
			d->path, d->name, (unsigned long long)off,
			(unsigned long long)d->usize);
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
 * Decodes exactly d->csize bytes at off with method m (bzip2, LZMA, zstd,
 * xz; deflate is read_deflated's) into o->p[0..usize);
 * returns NULL or what is wrong.  Once usize bytes are out, the decoder
 * gets a one-byte sink: anything written there means the stream is
 * bigger than declared (a bomb, or a lying directory), and we stop there.
 */
static const char *decode_exact(const struct zip_data *d, const struct zmethod *m,
				uint64_t off, struct outbuf *o, void **st,
				uint8_t *in, int *rc)
{
	uint64_t left = d->csize, produced = 0;
	const uint8_t *ip = in;
	const char *why = NULL;
	size_t ilen = 0, skip = 0;
	enum zstep r = ZSTEP_MORE;
	uint8_t sink;

	while (r != ZSTEP_END) {
		const uint8_t *ip0;
		uint8_t *op, *op0;
		size_t olen;
		int probing;

		if (ilen == 0 && (left > 0 || !*st)) {
			size_t n = left < INFLATE_CHUNK ? (size_t)left : INFLATE_CHUNK;
			int e = n ? zip_pread_full(d->src, in, n, off + (d->csize - left)) : 0;

			if (e) {
				*rc = transient(e) ? e : -EIO;
				return "cannot read compressed data";
			}
			ip = in;
			ilen = n;
			left -= n;
			if (!*st && (e = m->open(st, ip, ilen, d->usize, &skip, &why)) < 0) {
				*rc = e == -EBADMSG ? e : -ENOMEM;
				return why ? why : "out of memory";
			}
			ip += skip;
			ilen -= skip;
		}
		probing = produced == d->usize;
		if (!probing && produced == o->cap && outbuf_grow(o, d->usize)) {
			*rc = -ENOMEM;
			return "out of memory";
		}
		op = probing ? &sink : o->p + produced;
		olen = probing ? 1 : (size_t)(o->cap - produced);
		ip0 = ip;
		op0 = op;
		r = m->step(*st, &ip, &ilen, &op, &olen, left == 0, &why);
		if (r == ZSTEP_BAD)
			return why;
		if (probing && op != op0)
			return "decodes to more than its declared size";
		produced += probing ? 0 : (uint64_t)(op - op0);
		if (r == ZSTEP_END || ip != ip0 || op != op0)
			continue;
		/* no progress */
		if (ilen > 0)
			return "the decoder is stuck";
		if (left == 0) {
			if (m->sizeless && produced == d->usize)
				break;  /* no end marker: the size is the end */
			return "stream is truncated";
		}
	}
	if (produced != d->usize)
		return "stream ends before the declared size";
	if (left > 0 || ilen > 0)
		return "compressed size is larger than its stream";
	return NULL;
}

/* Decodes member d (method m) whole into o: 0, -EBADMSG (said), -errno. */
static int read_coded(const struct zip_data *d, const struct zmethod *m,
		      uint64_t off, struct outbuf *o)
{
	uint8_t *in = malloc(INFLATE_CHUNK);
	const char *why;
	void *st = NULL;
	int rc = -EBADMSG;      /* bad data, unless a read failed */

	if (!in)
		return -ENOMEM;
	why = decode_exact(d, m, off, o, &st, in, &rc);
	if (why && rc != -ENOMEM && !transient(rc))
		sfs_err("%s: member %s: %s data at offset %llu: %s (%llu bytes "
			"declared): EIO", d->path, d->name, m->name,
			(unsigned long long)off, why, (unsigned long long)d->usize);
	if (st)
		m->close(st);
	free(in);
	return why ? rc : 0;
}

/* Inflates deflated member d whole into *out (zsource_inflate_whole:
 * the inflater of large members' spans too): 0, -EBADMSG (said), -errno. */
static int read_deflated(const struct zip_data *d, uint8_t **out)
{
	const char *why = NULL;
	int rc = zsource_inflate_whole(d->src, d->off, d->csize, d->usize, out, &why);

	if (rc == 0 || rc == -ENOMEM || transient(rc))
		return rc;
	sfs_err("%s: member %s: deflate data at offset %llu: %s (%llu bytes "
		"declared): EIO", d->path, d->name, (unsigned long long)d->off,
		why, (unsigned long long)d->usize);
	return rc == -EBADMSG ? rc : -EIO;
}

/* Whether d cannot be read at all, and why (zipread.h). */
int zipread_unreadable(const struct zip_data *d, char *why, size_t len)
{
	if (d->flags & 1)
		snprintf(why, len, "encrypted (samplefs reads no encrypted member)");
	else if (d->method == ZIP_METHOD_BAD_SIZES)
		snprintf(why, len, "stored, its declared sizes disagree and the bytes "
			 "of none match its CRC-32 (said at mount)");
	else if (d->method != 0 && d->method != 8 && !zmethod_find(d->method))
		snprintf(why, len, "compressed with method %u, which samplefs does "
			 "not read (it reads stored, deflate, bzip2, LZMA, zstd and "
			 "xz)", d->method);
	else if (d->method == 14 && d->usize > ZIPREAD_WHOLE_MAX)
		snprintf(why, len, "LZMA-compressed and over %llu bytes (samplefs "
			 "has no random access into LZMA; it reads xz, zstd and bzip2 "
			 "members of any size)", (unsigned long long)ZIPREAD_WHOLE_MAX);
	else
		return 0;
	return 1;
}

/* The checks before any data is read: method, encryption, sizes.  Why a
 * member cannot be read at all was said at mount (one warning for the
 * zip, tarindex_zip.c); it is said again here, naming the read. */
static int data_check(const struct zip_data *d)
{
	char why[160];

	if (zipread_unreadable(d, why, sizeof(why))) {
		sfs_err("%s: member %s: offset %llu: %s: EIO", d->path, d->name,
			(unsigned long long)d->off, why);
		return -EIO;
	}
	if (d->method == 0 && d->csize != d->usize) {
		sfs_err("%s: member %s: offset %llu: stored with %llu bytes but declares %llu: EIO",
			d->path, d->name, (unsigned long long)d->off,
			(unsigned long long)d->csize, (unsigned long long)d->usize);
		return -EIO;
	}
	if (d->method == 8 && d->usize / DEFLATE_MAX_RATIO > d->csize) {
		sfs_err("%s: member %s: offset %llu: declares %llu bytes from %llu compressed, "
			"more than deflate's maximum ratio of %u:1: EIO", d->path, d->name,
			(unsigned long long)d->off, (unsigned long long)d->usize,
			(unsigned long long)d->csize, DEFLATE_MAX_RATIO);
		return -EIO;
	}
	return 0;
}

int zipread_large(const struct zip_data *d)
{
	if (d->usize <= ZIPREAD_WHOLE_MAX || (d->flags & 1))
		return 0;
	if (d->method == 8)
		return d->usize / DEFLATE_MAX_RATIO <= d->csize;
	return d->method == 12 || d->method == 93 || d->method == 95;
}

/* 0 if crc, of member d's bytes, is the directory's; else -EBADMSG, said. */
static int crc_check(const struct zip_data *d, uint32_t crc)
{
	if (crc == d->crc32)
		return 0;
	sfs_err("%s: member %s: data at offset %llu: CRC-32 mismatch (the directory "
		"says %08x, the %llu %s bytes give %08x): EIO", d->path, d->name,
		(unsigned long long)d->off, d->crc32, (unsigned long long)d->usize,
		d->method ? "decoded" : "stored", crc);
	return -EBADMSG;
}

/*
 * zip_data_read, but bad data (what no second read would change: a
 * refused method or size, a corrupt stream, a CRC mismatch) is -EBADMSG,
 * told apart from a failed read (-EIO) so that zipread remembers it.
 */
static int whole_read(const struct zip_data *d, uint8_t **out)
{
	struct outbuf o = { NULL, 0 };
	int rc;

	*out = NULL;
	if (d->usize > SIZE_MAX - 1)
		return -EFBIG;
	if (data_check(d))
		return -EBADMSG;
	/* stored data is all there (the caller checked its extent); decoded
	 * data gets memory only as it decodes (deflate's too) */
	o.cap = d->method == 0 || d->usize < INFLATE_CHUNK ? d->usize : INFLATE_CHUNK;
	if (d->method == 8)
		rc = read_deflated(d, &o.p);
	else if (!(o.p = malloc((size_t)o.cap + 1)))	/* +1: malloc(0) */
		return -ENOMEM;
	else
		rc = d->method == 0 ? read_stored(d, d->off, o.p) :
		     read_coded(d, zmethod_find(d->method), d->off, &o);
	if (rc == 0)
		rc = crc_check(d, zcrc32(0, o.p, (size_t)d->usize));
	if (rc) {
		free(o.p);
		return rc;
	}
	*out = o.p;
	return 0;
}

int zip_data_read(const struct zip_data *d, uint8_t **out)
{
	int rc = whole_read(d, out);

	return rc == -EBADMSG ? -EIO : rc;
}

/* ---- ranges: the cache of small members, sources of large ones ----- */

/* What a mount knows of a member's bytes (zipread.state[key]). */
enum {
	UNCHECKED = 0,
	CHECKING,       /* a large stored member's CRC pass is running */
	GOOD,           /* its CRC-32 matched: stored bytes may be read in place */
	BAD,            /* its data is bad (said once): every read is EIO */
};

struct zipread {
	struct lru *cache;
	zipread_open_fn open;    /* NULL: large members are not read */
	pthread_mutex_t lock;    /* mem[]; state[]'s changes (read atomically) */
	pthread_cond_t checked;  /* a CHECKING member's state changed */
	struct source **mem;     /* by key: large members opened so far */
	uint8_t *state;          /* by key: UNCHECKED ... BAD */
	uint64_t nmem;
};

struct zipread *zipread_new(struct lru_pool *mem, uint64_t nkeys,
			    zipread_open_fn open)
{
	struct zipread *zr = calloc(1, sizeof(*zr));

	if (!zr)
		return NULL;
	zr->cache = lru_new_in(mem, "zip members", ZIPREAD_CACHE);
	zr->mem = nkeys ? calloc(nkeys, sizeof(*zr->mem)) : NULL;
	zr->state = nkeys ? calloc(nkeys, 1) : NULL;
	if (!zr->cache || (nkeys && (!zr->mem || !zr->state))) {
		lru_free(zr->cache);
		free(zr->mem);
		free(zr->state);
		free(zr);
		return NULL;
	}
	zr->nmem = nkeys;
	zr->open = open;
	pthread_mutex_init(&zr->lock, NULL);
	pthread_cond_init(&zr->checked, NULL);
	return zr;
}

void zipread_free(struct zipread *zr)
{
	uint64_t k;

	if (!zr)
		return;
	for (k = 0; k < zr->nmem; k++)
		source_close(zr->mem[k]);
	free(zr->mem);
	free(zr->state);
	lru_free(zr->cache);
	pthread_cond_destroy(&zr->checked);
	pthread_mutex_destroy(&zr->lock);
	free(zr);
}

/* Read at every read of a member, so without the lock (an atomic load:
 * a state once GOOD or BAD never changes). */
static int state_get(struct zipread *zr, uint64_t key)
{
	if (key >= zr->nmem)
		return UNCHECKED;
	return __atomic_load_n(&zr->state[key], __ATOMIC_ACQUIRE);
}

static void state_set(struct zipread *zr, uint64_t key, int st)
{
	if (key >= zr->nmem)
		return;
	pthread_mutex_lock(&zr->lock);
	__atomic_store_n(&zr->state[key], (uint8_t)st, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&zr->checked);
	pthread_mutex_unlock(&zr->lock);
}

int zipread_in_place(struct zipread *zr, uint64_t key)
{
	return zr && state_get(zr, key) == GOOD;     /* set for stored ones only */
}

/*
 * The CRC-32 of a large member's d->usize bytes at `base` of src (the zip
 * itself for a stored member; the member's own decompressing source for
 * others, which must then end there), read in order in CHECK_CHUNK
 * pieces: one pass over the member, at the speed of its source (a partial
 * read of a large stored member costs reading it whole once per mount).
 * 0, -EBADMSG (said), or the read's -errno.
 */
#define CHECK_CHUNK (1u << 20)
static int whole_crc(const struct zip_data *d, struct source *src, uint64_t base)
{
	uint8_t *buf = malloc(CHECK_CHUNK);
	uint64_t done = 0;
	uint32_t crc = 0;
	ssize_t got;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (done < d->usize) {
		size_t n = d->usize - done < CHECK_CHUNK ? (size_t)(d->usize - done) :
			   CHECK_CHUNK;

		if ((rc = zip_pread_full(src, buf, n, base + done)) < 0)
			break;
		crc = zcrc32(crc, buf, n);
		done += n;
	}
	if (rc == 0 && src != d->src && (got = source_pread(src, buf, 1, d->usize)) != 0)
		rc = got < 0 ? (int)got : -EBADMSG;
	free(buf);
	if (rc == -EBADMSG) {
		sfs_err("%s: member %s: data at offset %llu: decodes to more than its "
			"declared %llu bytes: EIO", d->path, d->name,
			(unsigned long long)d->off, (unsigned long long)d->usize);
	} else if (rc == 0) {
		rc = crc_check(d, crc);
	} else if (rc < 0 && !transient(rc)) {
		sfs_err("%s: member %s: cannot read its bytes at offset %llu (of %llu) "
			"to check their CRC-32: EIO", d->path, d->name,
			(unsigned long long)done, (unsigned long long)d->usize);
		rc = rc == -ENOMEM ? rc : -EIO;
	}
	return rc;
}

/*
 * A range of a large member read through src at base (a stored member:
 * the zip; bzip2, zstd and xz: its own source): checked whole first
 * (whole_crc), by one reader while the others wait (in no-wait mode they
 * do not: -EAGAIN), then read there.  A member found bad stays bad; a
 * failed or cancelled check is tried again by the next read.
 */
static ssize_t checked_read(struct zipread *zr, uint64_t key,
			    const struct zip_data *d, struct source *src,
			    uint64_t base, uint8_t *buf, size_t size, uint64_t off)
{
	int st, rc;

	if (key >= zr->nmem)
		return -EIO;
	pthread_mutex_lock(&zr->lock);
	while ((st = state_get(zr, key)) == CHECKING && !source_nowait_mode())
		pthread_cond_wait(&zr->checked, &zr->lock);
	if (st == UNCHECKED && !source_nowait_mode())
		__atomic_store_n(&zr->state[key], CHECKING, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&zr->lock);
	if (st == BAD)
		return -EIO;
	if (st != GOOD) {
		if (source_nowait_mode())
			return -EAGAIN;
		rc = data_check(d) ? -EBADMSG : whole_crc(d, src, base);
		state_set(zr, key, rc == 0 ? GOOD : rc == -EBADMSG ? BAD : UNCHECKED);
		if (rc < 0)
			return rc == -EBADMSG ? -EIO : rc;
	}
	rc = zip_pread_full(src, buf, size, base + off);
	return rc < 0 ? rc : (ssize_t)size;
}

int zipread_member_open(const struct zip_data *d, const char *name,
			struct source **out)
{
	struct source *sl;
	int rc;

	if (d->method == 8) {
		rc = source_open_range(d->src, d->off, d->csize, name, &sl);
		return rc < 0 ? rc : zsource_wrap_deflate(sl, d->usize, d->crc32, out);
	}
	if ((rc = source_open_slice(d->src, d->off, d->csize, name, out)) < 0)
		return rc;
	if (!source_is_decompressed(*out)) {
		sfs_err("%s: member %s: offset %llu: method %u, but its data does not "
			"start as that stream does", d->path, d->name,
			(unsigned long long)d->off, d->method);
		source_close(*out);
		*out = NULL;
		return -EBADMSG;
	}
	return 0;
}

/*
 * The source of large member key, opened by its first read (not in
 * no-wait mode: opening looks its table up in the store, a file) and kept
 * until zipread_free.  Two first reads may both open it: the second
 * source is closed.  The lock is held only to look up or keep one.
 */
static int member_source(struct zipread *zr, uint64_t key,
			 const struct zip_data *d, struct source **out)
{
	struct source *s = NULL, *kept;
	int rc;

	pthread_mutex_lock(&zr->lock);
	*out = key < zr->nmem ? zr->mem[key] : NULL;
	pthread_mutex_unlock(&zr->lock);
	if (*out)
		return 0;
	if (source_nowait_mode())
		return -EAGAIN;
	if (key >= zr->nmem || !zr->open) {
		sfs_err("%s: member %s: offset %llu: %llu bytes deflated, and this "
			"reader reads no member over %llu bytes: EIO", d->path, d->name,
			(unsigned long long)d->off, (unsigned long long)d->usize,
			(unsigned long long)ZIPREAD_WHOLE_MAX);
		return -EIO;
	}
	rc = zr->open(d, &s);
	if (rc < 0) {
		if (rc != -ENOMEM && !transient(rc))
			sfs_err("%s: member %s: offset %llu: cannot read it through "
				"access points (%s): EIO", d->path, d->name,
				(unsigned long long)d->off, strerror(-rc));
		return rc == -ENOMEM || transient(rc) ? rc : -EIO;
	}
	pthread_mutex_lock(&zr->lock);
	if (!(kept = zr->mem[key]))
		zr->mem[key] = s;
	pthread_mutex_unlock(&zr->lock);
	if (kept)
		source_close(s);
	*out = kept ? kept : s;
	return 0;
}

/*
 * A range of a large deflated member, through its source (zsource's
 * access points over a slice of the zip: zipread.h).  Its pass checked
 * the CRC-32 and the size; a short read means the stream gave fewer
 * bytes than declared (its spans already give EIO: this is the bytes
 * past the last span, which no span holds).
 */
static ssize_t member_read(struct zipread *zr, uint64_t key,
			   const struct zip_data *d, uint8_t *buf, size_t size,
			   uint64_t off)
{
	struct source *s;
	ssize_t got;
	int rc;

	if ((rc = member_source(zr, key, d, &s)) < 0)
		return rc;
	if (d->method != 8)     /* bzip2, zstd, xz: checked whole first */
		return checked_read(zr, key, d, s, 0, buf, size, off);
	got = source_pread(s, buf, size, off);
	if (got >= 0 && (size_t)got < size) {
		sfs_err("%s: member %s: data at offset %llu: deflate stream "
			"ends before byte %llu of the %llu declared: EIO", d->path,
			d->name, (unsigned long long)d->off,
			(unsigned long long)(off + (uint64_t)got),
			(unsigned long long)d->usize);
		return -EIO;
	}
	return got;
}

/*
 * The CRC-32 of stored member d read around a part of it: the asked
 * bytes [off, off + size) straight into buf, the others in PIECE-sized
 * pieces through a buffer on the stack, all in order.  No allocation per
 * read (a member over malloc's mmap threshold cost an mmap, its page
 * faults and an munmap).  0 with *crc, or the read's -errno.
 */
#define PIECE (16u << 10)
static int crc_around(const struct zip_data *d, uint8_t *buf, size_t size,
		      uint64_t off, uint32_t *crc)
{
	uint8_t piece[PIECE];
	uint64_t pos = 0, end;
	size_t n;
	int rc;

	*crc = 0;
	while (pos < d->usize) {
		if (pos == off && size) {
			if ((rc = zip_pread_full(d->src, buf, size, d->off + off)) < 0)
				return rc;
			*crc = zcrc32(*crc, buf, size);
			pos += size;
			continue;
		}
		end = pos < off ? off : d->usize;
		n = end - pos < PIECE ? (size_t)(end - pos) : PIECE;
		if ((rc = zip_pread_full(d->src, piece, n, d->off + pos)) < 0)
			return rc;
		*crc = zcrc32(*crc, piece, n);
		pos += n;
	}
	return 0;
}

/*
 * The first read of a small stored member: it reads the whole member to
 * check its CRC-32, the asked part into buf, the rest around it
 * (crc_around).  The member is then GOOD: later reads go in place
 * (spliced).  A failed read is said (read_stored's words) and tried again
 * by the next read; bad data stays bad.
 */
static ssize_t stored_first(struct zipread *zr, uint64_t key,
			    const struct zip_data *d, uint8_t *buf, size_t size,
			    uint64_t off)
{
	uint32_t crc;
	int rc;

	if (data_check(d)) {
		state_set(zr, key, BAD);
		return -EIO;
	}
	rc = crc_around(d, buf, size, off, &crc);
	if (rc < 0) {
		if (transient(rc))
			return rc;
		sfs_err("%s: member %s: offset %llu: cannot read %llu bytes",
			d->path, d->name, (unsigned long long)d->off,
			(unsigned long long)d->usize);
		return -EIO;
	}
	rc = crc_check(d, crc);
	state_set(zr, key, rc == 0 ? GOOD : BAD);
	return rc < 0 ? -EIO : (ssize_t)size;
}

ssize_t zipread_pread(struct zipread *zr, uint64_t key, const struct zip_data *d,
		      void *buf, size_t size, uint64_t off)
{
	uint8_t *p;
	int rc;

	if (off >= d->usize || size == 0)
		return 0;
	if (size > d->usize - off)
		size = (size_t)(d->usize - off);
	if (zipread_large(d))
		return member_read(zr, key, d, buf, size, off);
	if (d->method == 0 && d->usize > ZIPREAD_WHOLE_MAX)
		return checked_read(zr, key, d, d->src, d->off, buf, size, off);
	if (lru_copy_out(zr->cache, key, (size_t)off, buf, size) == 1)
		return (ssize_t)size;
	switch (state_get(zr, key)) {
	case BAD:
		return -EIO;    /* said at its first read */
	case GOOD:              /* a stored member, checked */
		rc = zip_pread_full(d->src, buf, size, d->off + off);
		return rc < 0 ? rc : (ssize_t)size;
	}
	if (d->method == 0)
		return stored_first(zr, key, d, buf, size, off);
	rc = whole_read(d, &p);
	if (rc == -EBADMSG)
		state_set(zr, key, BAD);
	if (rc < 0)
		return rc == -EBADMSG ? -EIO : rc;
	memcpy(buf, p + off, size);
	lru_insert(zr->cache, key, p, (size_t)d->usize);
	return (ssize_t)size;
}
