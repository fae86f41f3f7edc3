/*
 * zipread.c - member data of zips (see zipread.h): the whole-member read
 * (into a buffer that grows with the inflated bytes up to exactly the
 * declared size), the cache of inflated small members, and the inflate
 * cursors of large ones.
 *
 * The cursor (stream_read) is the seam for random access into large
 * deflated members: it inflates from the member's start, so a read far
 * into a member not read in order costs the bytes before it.  Access
 * points in the manner of zlib's zran.c (being built for gzip in core/io)
 * can replace stream_read alone.
 *
 * Threads: the cache (io/lru.h) locks itself; the cursor table is under
 * zr->lock, and a cursor taken from it is used by one thread at a time
 * (marked busy), so the lock is never held while inflating.
 *
 * Not for: the central directory (zip.c, zipwalk.c).
 */
#include "formats/zipread.h"
#include "formats/zip_int.h"
#include "io/lru.h"
#include "io/source.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define INFLATE_CHUNK (64u << 10)
#define CURSORS       8          /* large members read at once, per mount */

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
 * Inflates exactly d->csize bytes at off into o->p[0..usize); returns NULL
 * or what is wrong.  Once usize bytes are out, inflate gets a one-byte
 * sink: anything written there means the stream is bigger than declared
 * (a bomb, or a lying directory), and we stop there.
 */
static const char *inflate_exact(const struct zip_data *d,
				 uint64_t off, struct outbuf *o, z_stream *zs,
				 uint8_t *in, int *rc)
{
	uint64_t left = d->csize, produced = 0;
	uint8_t sink;
	int zr = Z_OK, probing;

	while (zr != Z_STREAM_END) {
		if (zs->avail_in == 0 && left > 0) {
			size_t n = left < INFLATE_CHUNK ? (size_t)left : INFLATE_CHUNK;

			int r = zip_pread_full(d->src, in, n, off + (d->csize - left));

			if (r) {
				*rc = transient(r) ? r : -EIO;
				return "cannot read compressed data";
			}
			zs->next_in = in;
			zs->avail_in = (uInt)n;
			left -= n;
		}
		probing = produced == d->usize;
		if (!probing && produced == o->cap && outbuf_grow(o, d->usize)) {
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
	if (produced != d->usize)
		return "deflate stream ends before the declared size";
	if (left > 0 || zs->avail_in > 0)
		return "compressed size is larger than its deflate stream";
	return NULL;
}

static int read_deflated(const struct zip_data *d,
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
	why = inflate_exact(d, off, o, &zs, in, &rc);
	if (why && rc != -ENOMEM && !transient(rc))
		sfs_err("%s: member %s: data at offset %llu: %s (%llu bytes declared)",
			d->path, d->name, (unsigned long long)off, why,
			(unsigned long long)d->usize);
	inflateEnd(&zs);
	free(in);
	return why ? rc : 0;
}


/* The checks before any data is read: method, encryption, sizes. */
static int data_check(const struct zip_data *d)
{
	if ((d->flags & 1) || (d->method != 0 && d->method != 8)) {
		sfs_err("%s: member %s: offset %llu: encrypted or compression method %u (only stored and deflate are read)",
			d->path, d->name, (unsigned long long)d->off, d->method);
		return -EIO;
	}
	if (d->method == 0 && d->csize != d->usize) {
		sfs_err("%s: member %s: offset %llu: stored with %llu bytes but declares %llu",
			d->path, d->name, (unsigned long long)d->off,
			(unsigned long long)d->csize, (unsigned long long)d->usize);
		return -EIO;
	}
	if (d->method == 8 && d->usize / DEFLATE_MAX_RATIO > d->csize) {
		sfs_err("%s: member %s: offset %llu: declares %llu bytes from %llu compressed, "
			"more than deflate's maximum ratio of %u:1", d->path, d->name,
			(unsigned long long)d->off, (unsigned long long)d->usize,
			(unsigned long long)d->csize, DEFLATE_MAX_RATIO);
		return -EIO;
	}
	return 0;
}

int zip_data_read(const struct zip_data *d, uint8_t **out)
{
	struct outbuf o = { NULL, 0 };
	int rc;

	*out = NULL;
	if (d->usize > SIZE_MAX - 1)
		return -EFBIG;
	rc = data_check(d);
	if (rc)
		return rc;
	/* stored data is all there (the caller checked its extent); deflated
	 * data gets memory only as it inflates */
	o.cap = d->method == 0 || d->usize < INFLATE_CHUNK ? d->usize : INFLATE_CHUNK;
	o.p = malloc((size_t)o.cap + 1);        /* +1: malloc(0) may be NULL */
	if (!o.p)
		return -ENOMEM;
	rc = d->method == 0 ? read_stored(d, d->off, o.p) : read_deflated(d, d->off, &o);
	if (rc == 0 && crc32_z(0, o.p, (size_t)d->usize) != d->crc32) {
		sfs_err("%s: member %s: data at offset %llu: CRC-32 mismatch (directory says %08x)",
			d->path, d->name, (unsigned long long)d->off, d->crc32);
		rc = -EIO;
	}
	if (rc) {
		free(o.p);
		return rc;
	}
	*out = o.p;
	return 0;
}

/* ---- ranges: the cache of small members, cursors over large ones ----- */

/* An inflate stream inside one large member, `pos` bytes out. */
struct cursor {
	uint64_t key;            /* 0: unused */
	uint64_t pos;            /* inflated bytes so far */
	uint64_t in_pos;         /* compressed bytes fed so far */
	uint64_t used;           /* clock of its last use, for eviction */
	uint32_t crc;            /* of the pos bytes */
	int busy;                /* taken by a read */
	int live;                /* zs initialised */
	z_stream zs;
	uint8_t in[INFLATE_CHUNK];
};

struct zipread {
	struct lru *cache;
	pthread_mutex_t lock;    /* the cursor table */
	uint64_t clock;
	struct cursor *cur[CURSORS];
};

struct zipread *zipread_new(uint64_t cache_bytes)
{
	struct zipread *zr = calloc(1, sizeof(*zr));

	if (!zr)
		return NULL;
	zr->cache = lru_new(cache_bytes);
	if (!zr->cache) {
		free(zr);
		return NULL;
	}
	pthread_mutex_init(&zr->lock, NULL);
	return zr;
}

static void cursor_free(struct cursor *c)
{
	if (c && c->live)
		inflateEnd(&c->zs);
	free(c);
}

void zipread_free(struct zipread *zr)
{
	int i;

	if (!zr)
		return;
	for (i = 0; i < CURSORS; i++)
		cursor_free(zr->cur[i]);
	lru_free(zr->cache);
	pthread_mutex_destroy(&zr->lock);
	free(zr);
}

/* Back to the member's start. */
static int cursor_reset(struct cursor *c, uint64_t key)
{
	if (c->live)
		inflateEnd(&c->zs);
	memset(&c->zs, 0, sizeof(c->zs));
	c->live = inflateInit2(&c->zs, -MAX_WBITS) == Z_OK;
	c->key = key;
	c->pos = c->in_pos = 0;
	c->crc = 0;
	return c->live ? 0 : -ENOMEM;
}

/*
 * Takes a cursor for member `key` at or before `off`: the furthest free
 * one of that member, else the least recently used free slot (reset),
 * else one of its own that the caller frees (*table = 0).
 */
static struct cursor *cursor_take(struct zipread *zr, uint64_t key, uint64_t off,
				  int *table)
{
	struct cursor *best = NULL, *old = NULL, *c;
	int i, free_slot = -1;

	pthread_mutex_lock(&zr->lock);
	for (i = 0; i < CURSORS; i++) {
		c = zr->cur[i];
		if (!c) {
			free_slot = free_slot < 0 ? i : free_slot;
			continue;
		}
		if (c->busy)
			continue;
		if (c->key == key && c->pos <= off && (!best || c->pos > best->pos))
			best = c;
		if (!old || c->used < old->used)
			old = c;
	}
	if (!best && free_slot >= 0 && (zr->cur[free_slot] = calloc(1, sizeof(*c))))
		best = zr->cur[free_slot];
	if (!best && old)
		best = old;
	*table = best != NULL;
	if (best) {
		best->busy = 1;
		best->used = ++zr->clock;
	}
	pthread_mutex_unlock(&zr->lock);
	if (!best)
		best = calloc(1, sizeof(*best));
	if (best && (best->key != key || best->pos > off || !best->live) &&
	    cursor_reset(best, key) < 0) {
		if (!*table) {
			cursor_free(best);
			return NULL;
		}
	}
	return best;
}

static void cursor_put(struct zipread *zr, struct cursor *c, int table, int bad)
{
	if (!table) {
		cursor_free(c);
		return;
	}
	pthread_mutex_lock(&zr->lock);
	if (bad)
		c->key = 0;      /* never resumed: the next read starts over */
	c->busy = 0;
	pthread_mutex_unlock(&zr->lock);
}

/* Gives inflate the next compressed bytes when it has none left. */
static int cursor_feed(struct cursor *c, const struct zip_data *d)
{
	uint64_t left = d->csize - c->in_pos;
	size_t k = left < INFLATE_CHUNK ? (size_t)left : INFLATE_CHUNK;
	int rc;

	if (c->zs.avail_in || !left)
		return 0;
	rc = zip_pread_full(d->src, c->in, k, d->off + c->in_pos);
	if (rc < 0)
		return rc;
	c->zs.next_in = c->in;
	c->zs.avail_in = (uInt)k;
	c->in_pos += k;
	return 0;
}

/*
 * Inflates the next up to n bytes of the member into out (never past
 * usize); *got is how many.  NULL, or what is wrong with the stream.
 */
static const char *cursor_step(struct cursor *c, const struct zip_data *d,
			       uint8_t *out, size_t n, size_t *got, int *rc)
{
	z_stream *zs = &c->zs;
	int zr;

	*got = 0;
	if (n > d->usize - c->pos)
		n = (size_t)(d->usize - c->pos);
	if ((*rc = cursor_feed(c, d)) < 0)
		return "cannot read compressed data";
	*rc = -EIO;
	zs->next_out = out;
	zs->avail_out = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
	zr = inflate(zs, Z_NO_FLUSH);
	*got = (size_t)(zs->next_out - out);
	c->crc = (uint32_t)crc32_z(c->crc, out, *got);
	c->pos += *got;
	if (zr == Z_BUF_ERROR && *got == 0)
		return "deflate stream is truncated";
	if (zr == Z_STREAM_END && c->pos != d->usize)
		return "deflate stream ends before the declared size";
	if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
		return zs->msg ? zs->msg : "corrupt deflate stream";
	return NULL;
}

/* At usize: the stream must end there, and the CRC match. */
static const char *cursor_finish(struct cursor *c, const struct zip_data *d, int *rc)
{
	uint8_t sink;
	int zr;

	do {
		if ((*rc = cursor_feed(c, d)) < 0)
			return "cannot read compressed data";
		*rc = -EIO;
		c->zs.next_out = &sink;
		c->zs.avail_out = 1;
		zr = inflate(&c->zs, Z_NO_FLUSH);
		if (c->zs.avail_out == 0)
			return "inflates to more than its declared size";
	} while (zr == Z_OK && (c->zs.avail_in || c->in_pos < d->csize));
	if (zr != Z_STREAM_END)
		return "deflate stream does not end at the declared size";
	if (c->crc != d->crc32)
		return "CRC-32 mismatch";
	return NULL;
}

/*
 * A range of a large deflated member, through a cursor.  The seam for
 * access points: everything else here stays when this is replaced.
 */
static ssize_t stream_read(struct zipread *zr, uint64_t key, const struct zip_data *d,
			   uint8_t *buf, size_t size, uint64_t off)
{
	uint8_t skip[INFLATE_CHUNK];
	const char *why = NULL;
	struct cursor *c;
	size_t done = 0, got;
	int table, rc = -EIO;

	if ((rc = data_check(d)) < 0)
		return rc;
	rc = -EIO;
	c = cursor_take(zr, key, off, &table);
	if (!c || !c->live) {
		if (c)
			cursor_put(zr, c, table, 1);
		return -ENOMEM;
	}
	while (!why && c->pos < off) {
		uint64_t gap = off - c->pos;

		why = cursor_step(c, d, skip, gap < sizeof(skip) ? (size_t)gap : sizeof(skip),
				  &got, &rc);
	}
	while (!why && done < size && c->pos < d->usize) {
		why = cursor_step(c, d, buf + done, size - done, &got, &rc);
		done += got;
	}
	if (!why && c->pos == d->usize)
		why = cursor_finish(c, d, &rc);
	if (why && transient(rc)) {
		/* the cursor stays good where it is: the retry goes on from there
		 * (or, past `off` now, starts over) */
		cursor_put(zr, c, table, 0);
		return rc;
	}
	if (why)
		sfs_err("%s: member %s: data at offset %llu: %s (%llu bytes declared)",
			d->path, d->name, (unsigned long long)d->off, why,
			(unsigned long long)d->usize);
	cursor_put(zr, c, table, why != NULL);
	return why ? rc : (ssize_t)done;
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
	if (d->usize > ZIPREAD_WHOLE_MAX)
		return stream_read(zr, key, d, buf, size, off);
	if (lru_copy_out(zr->cache, key, (size_t)off, buf, size) == 1)
		return (ssize_t)size;
	rc = zip_data_read(d, &p);
	if (rc < 0)
		return rc;
	memcpy(buf, p + off, size);
	lru_insert(zr->cache, key, p, (size_t)d->usize);
	return (ssize_t)size;
}
