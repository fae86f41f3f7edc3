/*
 * blockstore.c - variable-length records in independently deflated blocks
 * (see blockstore.h).
 *
 * Sections (native byte order, like the rest of the index):
 *   data  the blocks, back to back: raw deflate, or the bytes as they are
 *         when deflate does not make them smaller (zlen == rawlen)
 *   blk   one struct bs_blk per block: where it is, its first record, its
 *         lengths and the adler32 of its inflated bytes; then a sentinel
 *         {data length, record count, 0, 0, 0}, so that a section cut
 *         short anywhere no longer adds up
 *   rec   one u16 per record: its offset inside its block; a record ends
 *         where the next one in the same block starts, or at rawlen
 * So a record costs 2 bytes of table, and a block 24.
 *
 * Why adler32 per block: the index's crc32 is checked once at mount, but a
 * raw block corrupted later would otherwise be served as wrong bytes, and
 * raw deflate has no check of its own.  adler32 of a block is ~10 us, well
 * under the inflate it guards.
 *
 * Everything read from the map is bounds-checked before use: block fields
 * once in blockstore_open, record offsets on every access.  A corrupt index
 * gives -EIO (reads) or -EBADMSG (open), never a crash or wrong bytes.
 *
 * Threads: a struct blockstore is read-only after open and may be shared;
 * the cache does its own locking.  A builder belongs to one thread, which
 * hands whole batches of blocks to a deflating thread of its own (below):
 * a batch is touched by one thread at a time, the join orders the two.
 */
#include "index/blockstore.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "log.h"
#include "io/source.h"
#include "search.h"

/*
 * Huffman coding only, no string matching: deflating the blocks is most of
 * a Quick, Draw! index build, and small blocks of packed strokes
 * (strokepack.h) hold few repeated strings.  Measured on 345 x 3000
 * drawings, 2 KiB blocks: level 1 builds in 3.5 s to 148.1 MB, Huffman only
 * in 2.7 s to 147.4 MB, and reads are as fast.  (On the int16 records
 * before packing: level 6 1.0 s, level 1 0.35 s for 10 classes, 9 under 1%
 * smaller than 6 for twice the time.)  The level matters little then.
 */
#define BS_LEVEL 1
#define BS_STRATEGY Z_HUFFMAN_ONLY

struct bs_blk {
	uint64_t off;      /* in the data section */
	uint32_t first;    /* id of its first record */
	uint32_t adler;    /* adler32 of the rawlen inflated bytes */
	uint32_t zlen;     /* bytes in the data section */
	uint32_t rawlen;   /* bytes inflated */
};

_Static_assert(sizeof(struct bs_blk) == 24, "block entry is 24 bytes");
_Static_assert(BLOCKSTORE_BLOCK <= 65535, "record offsets are u16");

/*
 * Blocks are deflated in batches by BS_THREADS threads of their own while
 * the caller keeps adding records (parsing the next source, in an index
 * build): the caller fills one batch while the other is being deflated,
 * then joins those threads, writes the blocks out in order and hands over
 * the batch it just filled.  Thread k deflates blocks k, k + BS_THREADS...
 * with its own stream.  Threads per batch, not a pool: a batch is ~2 ms of
 * deflate, pthread_create ~50 us, and there is no queue to get wrong.  One
 * thread left a Quick, Draw! build deflate-bound on one core (5.3 s of CPU
 * in 5.6 s for 345 x 3000 drawings).  If a thread cannot be started, its
 * share is deflated in the caller's thread.
 */
#define BS_BATCH 128       /* blocks per batch: ~256 KiB of input at a 2 KiB fill */
#define BS_THREADS 2

struct bs_batch {
	z_stream zs[BS_THREADS];      /* stream k: used by deflating thread k */
	uint8_t *raw, *z;             /* BS_BATCH blocks in, deflate output */
	uLong zcap;                   /* bytes of z per block */
	uint32_t n;                   /* blocks filled */
	uint32_t first[BS_BATCH], rawlen[BS_BATCH];
	uint32_t zlen[BS_BATCH];      /* == rawlen: keep the block raw */
	uint32_t adler[BS_BATCH];
};

struct bs_share {               /* what one deflating thread does */
	struct bs_batch *t;
	uint32_t k;                   /* blocks k, k + BS_THREADS, ... */
};

struct blockstore_builder {
	struct index_writer *w;
	struct bs_batch bat[2];
	struct bs_batch *fill;        /* the caller's: being filled */
	struct bs_batch *busy;        /* being deflated, or NULL */
	pthread_t thread[BS_THREADS];
	int threaded[BS_THREADS];     /* thread k is deflating busy */
	struct bs_share share[BS_THREADS];
	uint8_t *cur;                 /* the block being filled, inside fill */
	uint32_t curlen, cur_first;
	uint64_t data_len;            /* bytes of the data section so far */
	struct bs_blk *blk;
	uint16_t *rec;
	uint64_t nblk, blkcap, nrec, reccap;
	int err;                      /* first error; later calls return it */
};

/* ---- building ---- */

static int batch_init(struct bs_batch *t)
{
	/* A window of 8 KiB covers any block; memLevel 5 (4096 hash heads)
	 * keeps deflateReset from clearing 64 KiB for every small block. */
	for (int k = 0; k < BS_THREADS; k++)
		if (deflateInit2(&t->zs[k], BS_LEVEL, Z_DEFLATED, -13, 5,
				 BS_STRATEGY) != Z_OK)
			return -ENOMEM;
	t->zcap = deflateBound(&t->zs[0], BLOCKSTORE_BLOCK);
	t->raw = malloc((size_t)BS_BATCH * BLOCKSTORE_BLOCK);
	t->z = malloc((size_t)BS_BATCH * t->zcap);
	return t->raw && t->z ? 0 : -ENOMEM;
}

static void batch_free(struct bs_batch *t)
{
	for (int k = 0; k < BS_THREADS; k++)
		deflateEnd(&t->zs[k]);   /* harmless on a stream never initialised */
	free(t->raw);
	free(t->z);
}

/* Deflates this thread's share of the batch's blocks; a block that does not
 * shrink stays raw. */
static void *batch_deflate(void *arg)
{
	const struct bs_share *sh = arg;
	struct bs_batch *t = sh->t;
	z_stream *zs = &t->zs[sh->k];

	for (uint32_t i = sh->k; i < t->n; i += BS_THREADS) {
		uint8_t *raw = t->raw + (size_t)i * BLOCKSTORE_BLOCK;

		deflateReset(zs);
		zs->next_in = raw;
		zs->avail_in = t->rawlen[i];
		zs->next_out = t->z + (size_t)i * t->zcap;
		zs->avail_out = (uInt)t->zcap;
		t->zlen[i] = t->rawlen[i];
		if (deflate(zs, Z_FINISH) == Z_STREAM_END &&
		    zs->total_out < t->rawlen[i])
			t->zlen[i] = (uint32_t)zs->total_out;
		t->adler[i] = (uint32_t)adler32(adler32(0, NULL, 0), raw, t->rawlen[i]);
	}
	return NULL;
}

int blockstore_builder_new(struct blockstore_builder **bp,
			   struct index_writer *w, uint32_t data_tag)
{
	struct blockstore_builder *b = calloc(1, sizeof(*b));
	int ret;

	*bp = NULL;
	if (!b)
		return -ENOMEM;
	b->w = w;
	b->fill = &b->bat[0];
	ret = batch_init(&b->bat[0]);
	if (ret == 0)
		ret = batch_init(&b->bat[1]);
	if (ret == 0)
		ret = index_writer_begin(w, data_tag);
	if (ret < 0)
		goto out;
	b->cur = b->fill->raw;
	*bp = b;
	return 0;
out:
	blockstore_builder_abort(b);
	return ret;
}

static int grow(void **arr, uint64_t *cap, uint64_t need, size_t size)
{
	uint64_t n = *cap ? *cap : 1024;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static void join_all(struct blockstore_builder *b)
{
	for (int k = 0; k < BS_THREADS; k++) {
		if (b->threaded[k])
			pthread_join(b->thread[k], NULL);
		b->threaded[k] = 0;
	}
}

/* Waits for the busy batch and streams its blocks out, in order. */
static int drain(struct blockstore_builder *b)
{
	struct bs_batch *t = b->busy;
	const uint8_t *out;
	struct bs_blk *e;
	int ret;

	if (!t)
		return 0;
	join_all(b);
	b->busy = NULL;
	ret = grow((void **)&b->blk, &b->blkcap, b->nblk + t->n + 1, sizeof(*b->blk));
	for (uint32_t i = 0; i < t->n && ret == 0; i++) {
		out = t->zlen[i] < t->rawlen[i] ? t->z + (size_t)i * t->zcap :
		      t->raw + (size_t)i * BLOCKSTORE_BLOCK;
		ret = index_writer_append(b->w, out, t->zlen[i]);
		e = &b->blk[b->nblk++];
		*e = (struct bs_blk){ .off = b->data_len, .first = t->first[i],
				      .adler = t->adler[i], .zlen = t->zlen[i],
				      .rawlen = t->rawlen[i] };
		b->data_len += t->zlen[i];
	}
	t->n = 0;
	return ret;
}

/* Hands the filled batch to a deflating thread (after draining the one
 * before) and takes the other batch to fill. */
static int submit(struct blockstore_builder *b)
{
	struct bs_batch *t = b->fill;
	int ret = drain(b);

	if (ret < 0)
		return ret;
	b->busy = t;
	for (int k = 0; k < BS_THREADS; k++) {
		b->share[k] = (struct bs_share){ t, (uint32_t)k };
		b->threaded[k] = pthread_create(&b->thread[k], NULL, batch_deflate,
						&b->share[k]) == 0;
		if (!b->threaded[k])
			batch_deflate(&b->share[k]);
	}
	b->fill = t == &b->bat[0] ? &b->bat[1] : &b->bat[0];
	b->cur = b->fill->raw;
	return 0;
}

/* Closes the current block into its batch; a full batch is submitted. */
static int flush_block(struct blockstore_builder *b)
{
	struct bs_batch *t = b->fill;

	if (b->nrec == b->cur_first)
		return 0;   /* no records since the last flush */
	t->first[t->n] = b->cur_first;
	t->rawlen[t->n] = b->curlen;
	t->n++;
	b->cur_first = (uint32_t)b->nrec;
	b->curlen = 0;
	b->cur = t->raw + (size_t)t->n * BLOCKSTORE_BLOCK;
	return t->n == BS_BATCH ? submit(b) : 0;
}

int64_t blockstore_builder_add(struct blockstore_builder *b, const void *rec,
			       uint32_t len)
{
	int ret;

	if (b->err)
		return b->err;
	if (len > BLOCKSTORE_BLOCK)
		return -E2BIG;   /* the caller's record, not a builder failure */
	if (b->nrec >= UINT32_MAX)
		return b->err = -EOVERFLOW;
	if (b->curlen && b->curlen + len > BLOCKSTORE_FILL &&
	    (ret = flush_block(b)) < 0)
		return b->err = ret;
	ret = grow((void **)&b->rec, &b->reccap, b->nrec + 1, sizeof(*b->rec));
	if (ret < 0)
		return b->err = ret;
	b->rec[b->nrec] = (uint16_t)b->curlen;
	if (len)
		memcpy(b->cur + b->curlen, rec, len);
	b->curlen += len;
	return (int64_t)b->nrec++;
}

int blockstore_builder_finish(struct blockstore_builder *b, uint32_t blk_tag,
			      uint32_t rec_tag)
{
	int ret = b->err;

	if (ret == 0)
		ret = flush_block(b);
	if (ret == 0 && b->fill->n)
		ret = submit(b);
	if (ret == 0)
		ret = drain(b);
	if (ret == 0)
		ret = grow((void **)&b->blk, &b->blkcap, b->nblk + 1, sizeof(*b->blk));
	if (ret == 0) {
		b->blk[b->nblk] = (struct bs_blk){ .off = b->data_len,
						   .first = (uint32_t)b->nrec };
		ret = index_writer_end(b->w);
	}
	if (ret == 0)
		ret = index_writer_add(b->w, blk_tag, b->blk,
				       (b->nblk + 1) * sizeof(*b->blk));
	if (ret == 0)
		ret = index_writer_add(b->w, rec_tag, b->rec, b->nrec * sizeof(*b->rec));
	blockstore_builder_abort(b);
	return ret;
}

void blockstore_builder_abort(struct blockstore_builder *b)
{
	if (!b)
		return;
	join_all(b);
	batch_free(&b->bat[0]);
	batch_free(&b->bat[1]);
	free(b->blk);
	free(b->rec);
	free(b);
}

/* ---- reading ---- */

static const struct bs_blk *blk_at(const struct blockstore *bs, uint64_t i)
{
	return (const struct bs_blk *)bs->blk + i;
}

static int bad_block(const struct blockstore *bs, uint64_t i, const char *what)
{
	const struct bs_blk *e = blk_at(bs, i);

	sfs_err("index block %llu (first record %u, %u -> %u bytes at data offset "
		"%llu): %s (data %llu bytes, %llu records)", (unsigned long long)i,
		e->first, e->zlen, e->rawlen, (unsigned long long)e->off, what,
		(unsigned long long)bs->data_len, (unsigned long long)bs->nrec);
	return -EBADMSG;
}

/* Record offsets of block i rise from 0 and stay within its bytes. */
static int check_records(const struct blockstore *bs, uint64_t i)
{
	const uint16_t *rec = bs->rec;
	const struct bs_blk *e = blk_at(bs, i);
	uint32_t r, last = blk_at(bs, i + 1)->first - 1;

	if (rec[e->first] != 0)
		return bad_block(bs, i, "first record not at offset 0");
	for (r = e->first; r < last; r++)
		if (rec[r] > rec[r + 1])
			return bad_block(bs, i, "record offsets go backwards");
	if (rec[last] > e->rawlen)
		return bad_block(bs, i, "record beyond the block");
	return 0;
}

/* Blocks tile the data section and records 0..nrec-1 in order, at least
 * one record each; the sentinel after them closes both.  O(records), once:
 * after this no read can stray outside its block. */
static int check_blocks(const struct blockstore *bs)
{
	const struct bs_blk *end = blk_at(bs, bs->nblk);
	uint64_t off = 0;
	uint32_t first = 0;
	int ret;

	if (end->off != bs->data_len || end->first != bs->nrec || end->zlen ||
	    end->rawlen)
		return bad_block(bs, bs->nblk, "sentinel does not match the sections");
	for (uint64_t i = 0; i < bs->nblk; i++) {
		const struct bs_blk *e = blk_at(bs, i);

		if (e->off != off || e->zlen > bs->data_len - off)
			return bad_block(bs, i, "not where the previous block ends");
		if (e->first != first || blk_at(bs, i + 1)->first <= first ||
		    blk_at(bs, i + 1)->first > bs->nrec)
			return bad_block(bs, i, "records out of order");
		if (e->rawlen > BLOCKSTORE_BLOCK || e->zlen > e->rawlen)
			return bad_block(bs, i, "impossible lengths");
		ret = check_records(bs, i);
		if (ret < 0)
			return ret;
		off += e->zlen;
		first = blk_at(bs, i + 1)->first;
	}
	return 0;
}

int blockstore_open_sections(struct blockstore *bs, const void *data,
			     uint64_t data_len, const void *blk, uint64_t blk_len,
			     const void *rec, uint64_t rec_len, uint64_t key_base)
{
	memset(bs, 0, sizeof(*bs));
	if (!data || !blk || !rec || blk_len % sizeof(struct bs_blk) ||
	    blk_len == 0 || rec_len % sizeof(uint16_t) || rec_len / 2 > UINT32_MAX ||
	    (uintptr_t)blk % 8 || (uintptr_t)rec % 2) {
		sfs_err("index: block store sections missing or of bad size "
			"(blocks %llu bytes, records %llu bytes)",
			(unsigned long long)blk_len, (unsigned long long)rec_len);
		return -EBADMSG;
	}
	bs->data = data;
	bs->data_len = data_len;
	bs->blk = blk;
	bs->nblk = blk_len / sizeof(struct bs_blk) - 1;   /* less the sentinel */
	bs->rec = rec;
	bs->nrec = rec_len / sizeof(uint16_t);
	bs->key_base = key_base;
	bs->src = NULL;
	if ((bs->nrec > 0) != (bs->nblk > 0)) {
		sfs_err("index: %llu records in %llu blocks",
			(unsigned long long)bs->nrec, (unsigned long long)bs->nblk);
		return -EBADMSG;
	}
	return check_blocks(bs);
}

int blockstore_open(struct blockstore *bs, const struct index_map *m,
		    uint32_t data_tag, uint32_t blk_tag, uint32_t rec_tag,
		    uint64_t key_base)
{
	uint64_t dlen, blen, rlen;
	/* the data section is not checked here: that would read all of it
	 * through the mapping, every page of it then counted in the daemon's
	 * RSS (Quick, Draw!'s 150 MB at each mount); each block is checked
	 * where it is used instead (load_block: its recorded adler32) */
	const void *data = index_map_section_unchecked(m, data_tag, &dlen);
	const void *blk = index_map_section(m, blk_tag, &blen);
	const void *rec = index_map_section(m, rec_tag, &rlen);

	int rc = blockstore_open_sections(bs, data, dlen, blk, blen, rec, rlen,
					  key_base);

	bs->map = m;
	return rc;
}

void blockstore_read_from(struct blockstore *bs, struct source *src, uint64_t off)
{
	bs->src = src;
	bs->src_off = off;
}

uint64_t blockstore_count(const struct blockstore *bs)
{
	return bs->nrec;
}

/* The block holding record id (id < nrec): the last with first <= id. */
static uint64_t find_block(const struct blockstore *bs, uint64_t id)
{
	return SFS_PARTITION_POINT(uint64_t, 1, bs->nblk, i,
				   blk_at(bs, i)->first <= id) - 1;
}

/* Where record id lies in its block; -ENOENT or -EIO (bad offsets). */
static int locate(const struct blockstore *bs, uint64_t id, uint64_t *blk,
		  uint32_t *start, uint32_t *len)
{
	const uint16_t *rec = bs->rec;
	const struct bs_blk *e;
	uint64_t next_first;
	uint32_t end;

	if (id >= bs->nrec)
		return -ENOENT;
	*blk = find_block(bs, id);
	e = blk_at(bs, *blk);
	next_first = blk_at(bs, *blk + 1)->first;   /* a block or the sentinel */
	*start = rec[id];
	end = id + 1 < next_first ? rec[id + 1] : e->rawlen;
	if (*start > end || end > e->rawlen) {
		sfs_err("index record %llu: bytes %u..%u of block %llu (%u bytes)",
			(unsigned long long)id, *start, end,
			(unsigned long long)*blk, e->rawlen);
		return -EIO;
	}
	*len = end - *start;
	return 0;
}

int64_t blockstore_len(const struct blockstore *bs, uint64_t id)
{
	uint64_t blk;
	uint32_t start, len;
	int ret = locate(bs, id, &blk, &start, &len);

	return ret < 0 ? ret : (int64_t)len;
}

/*
 * zlib's inflate state (~7 KiB) lives on the reader's stack, not the heap:
 * a cache miss would otherwise malloc and free it every time.  Whatever
 * does not fit (another zlib's larger state; the 32 KiB window, which a
 * one-call Z_FINISH never asks for) comes from malloc.
 */
#define ARENA_BYTES (10u << 10)

struct arena {
	_Alignas(16) unsigned char buf[ARENA_BYTES];
	size_t used;
};

static voidpf arena_alloc(voidpf opaque, uInt items, uInt size)
{
	struct arena *a = opaque;
	size_t n = ((size_t)items * size + 15) & ~(size_t)15;

	if (n > ARENA_BYTES - a->used)
		return malloc((size_t)items * size);
	a->used += n;
	return a->buf + a->used - n;
}

static void arena_free(voidpf opaque, voidpf p)
{
	struct arena *a = opaque;

	if ((unsigned char *)p < a->buf || (unsigned char *)p >= a->buf + ARENA_BYTES)
		free(p);
}

/* Inflates (or copies) block i into buf, which holds e->rawlen bytes, and
 * checks it is exactly rawlen bytes with the recorded adler32. */
static int load_block(const struct blockstore *bs, uint64_t i, uint8_t *buf)
{
	const struct bs_blk *e = blk_at(bs, i);
	const uint8_t *src = bs->data + e->off;
	uint8_t zbuf[BLOCKSTORE_BLOCK];   /* zlen <= rawlen <= this: checked at open */
	struct arena arena;
	z_stream zs;
	ssize_t got;
	int zret = Z_STREAM_END;

	if (bs->src) {
		got = source_pread(bs->src, zbuf, e->zlen, bs->src_off + e->off);
		if (got == -EAGAIN)
			return -EAGAIN;
		if (got != (ssize_t)e->zlen) {
			sfs_err("index block %llu at data offset %llu: read %zd of %u bytes",
				(unsigned long long)i, (unsigned long long)e->off, got, e->zlen);
			return -EIO;
		}
		src = zbuf;
	}
	if (e->zlen == e->rawlen) {
		memcpy(buf, src, e->rawlen);
	} else {
		memset(&zs, 0, sizeof(zs));
		arena.used = 0;
		zs.zalloc = arena_alloc;
		zs.zfree = arena_free;
		zs.opaque = &arena;
		if (inflateInit2(&zs, -15) != Z_OK)
			return -ENOMEM;
		zs.next_in = (Bytef *)src;
		zs.avail_in = e->zlen;
		zs.next_out = buf;
		zs.avail_out = e->rawlen;
		zret = inflate(&zs, Z_FINISH);
		if (zret == Z_STREAM_END && (zs.avail_in || zs.avail_out))
			zret = Z_DATA_ERROR;
		inflateEnd(&zs);
	}
	if (zret != Z_STREAM_END ||
	    (uint32_t)adler32(adler32(0, NULL, 0), buf, e->rawlen) != e->adler) {
		/* damage in the index file is said by its checksums, naming
		 * the file and section, and the file is removed (the next
		 * mount rebuilds it); only bytes that pass them are said here */
		if (bs->map && index_map_check(bs->map, bs->data + e->off, e->zlen) < 0)
			return -EIO;
		sfs_err("index block %llu at data offset %llu: does not inflate to "
			"the %u bytes recorded (%s)", (unsigned long long)i,
			(unsigned long long)e->off, e->rawlen,
			zret != Z_STREAM_END ? "bad deflate stream" : "checksum mismatch");
		return -EIO;
	}
	return 0;
}

int64_t blockstore_get(const struct blockstore *bs, struct lru *cache,
		       uint64_t id, void *out, size_t outlen)
{
	uint64_t blk;
	uint32_t start, len;
	uint8_t *buf;
	int ret = locate(bs, id, &blk, &start, &len);

	if (ret < 0)
		return ret;
	if (outlen < len)
		return -ERANGE;
	if (cache && lru_copy_out(cache, bs->key_base + blk, start, out, len) == 1)
		return len;
	buf = malloc(blk_at(bs, blk)->rawlen + 1);
	if (!buf)
		return -ENOMEM;
	ret = load_block(bs, blk, buf);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	if (len)
		memcpy(out, buf + start, len);
	if (cache)
		lru_insert(cache, bs->key_base + blk, buf, blk_at(bs, blk)->rawlen);
	else
		free(buf);
	return len;
}
