/*
 * test_blockstore.c - core/index/blockstore.c through a real index file: round
 * trips of random-sized records (0 and BLOCKSTORE_BLOCK included), deflated
 * and stored blocks, random access with and without a cache, and corrupt
 * input: a damaged data byte gives -EIO (never wrong bytes), damaged or
 * truncated sections make blockstore_open fail, bad record offsets -EIO.
 * Then the same through blockstore_read_from (the index file read as a
 * source): round trips, a file cut short, bytes that differ, the wrong
 * offset -- right bytes or -EIO -- and threads sharing it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/blockstore.h"
#include "opensrc.h"

#define T_DATA INDEX_TAG('D', 'A', 'T', 'A')
#define T_BLK INDEX_TAG('B', 'L', 'K', 'S')
#define T_REC INDEX_TAG('R', 'E', 'C', 'S')

static char dir[64], path[128];

static void mkdir_tmp(void)
{
	strcpy(dir, "/tmp/sfs-test-bs.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bs.sfsidx", dir);
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(blockstore, .init = mkdir_tmp, .fini = rm_tmp);

struct recs {
	size_t n;
	uint32_t *len;
	uint8_t **p;
};

enum kind { STROKES, RANDOM, MIXED };

/* Stroke-like records (small int16 deltas: deflate well) or random bytes
 * (do not), sizes random with 0 and the maximum sprinkled in. */
static struct recs make_recs(size_t n, enum kind kind, unsigned seed)
{
	struct recs r = { n, calloc(n, 4), calloc(n, sizeof(uint8_t *)) };

	srand(seed);
	for (size_t i = 0; i < n; i++) {
		int k = rand() % 50;
		uint32_t len = k == 0 ? 0 : k == 1 ? BLOCKSTORE_BLOCK : (uint32_t)(rand() % 2000);
		int random = kind == RANDOM || (kind == MIXED && (i / 40) % 2);

		r.len[i] = len;
		r.p[i] = malloc(len + 1);
		for (uint32_t j = 0; j < len; j++)
			r.p[i][j] = random ? (uint8_t)rand() :
				    j % 2 ? (uint8_t)(rand() % 3 == 0 ? 0xff : 0) :
				    (uint8_t)(rand() % 9);
	}
	return r;
}

static void free_recs(struct recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->p[i]);
	free(r->p);
	free(r->len);
}

static void build(const struct recs *r)
{
	struct index_writer *w;
	struct blockstore_builder *b;
	struct index_fp fp;

	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(blockstore_builder_new(&b, w, T_DATA), 0);
	for (size_t i = 0; i < r->n; i++)
		cr_assert_eq(blockstore_builder_add(b, r->p[i], r->len[i]), (int64_t)i);
	cr_assert_eq(blockstore_builder_finish(b, T_BLK, T_REC), 0);
	index_fp_init(&fp, "bs");
	cr_assert_eq(index_writer_commit(w, &fp), 0);
}

static void map(struct index_map *m)
{
	struct index_fp fp;
	char why[256];

	index_fp_init(&fp, "bs");
	cr_assert_eq(index_map_open(m, path, &fp, why, sizeof(why)), 0, "%s", why);
}

/* Reads every record in a random order; each must be right. */
static void check_all(const struct blockstore *bs, struct lru *cache,
		      const struct recs *r, unsigned seed)
{
	size_t *order = malloc(r->n * sizeof(*order));
	uint8_t *buf = malloc(BLOCKSTORE_BLOCK);

	for (size_t i = 0; i < r->n; i++)
		order[i] = i;
	srand(seed);
	for (size_t i = r->n; i > 1; i--) {
		size_t j = (size_t)rand() % i, t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	cr_assert_eq(blockstore_count(bs), r->n);
	for (size_t k = 0; k < r->n; k++) {
		size_t i = order[k];

		cr_assert_eq(blockstore_len(bs, i), r->len[i]);
		cr_assert_eq(blockstore_get(bs, cache, i, buf, BLOCKSTORE_BLOCK),
			     (int64_t)r->len[i], "record %zu", i);
		cr_assert_eq(memcmp(buf, r->p[i], r->len[i]), 0, "record %zu bytes", i);
	}
	free(order);
	free(buf);
}

static uint64_t raw_total(const struct recs *r)
{
	uint64_t t = 0;

	for (size_t i = 0; i < r->n; i++)
		t += r->len[i];
	return t;
}

Test(blockstore, round_trip_deflated)
{
	struct recs r = make_recs(3000, STROKES, 1);
	struct index_map m;
	struct blockstore bs;
	struct lru *small = lru_new(3 * BLOCKSTORE_BLOCK), *big = lru_new(1 << 30);

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 1000), 0);
	cr_assert_lt(bs.data_len, raw_total(&r) / 2, "stroke-like data did not deflate");
	check_all(&bs, NULL, &r, 2);
	check_all(&bs, small, &r, 3);   /* mostly misses, many evictions */
	check_all(&bs, big, &r, 4);
	check_all(&bs, big, &r, 5);     /* all hits */
	lru_free(small);
	lru_free(big);
	index_map_close(&m);
	free_recs(&r);
}

Test(blockstore, round_trip_stored)
{
	struct recs r = make_recs(500, RANDOM, 6);
	struct index_map m;
	struct blockstore bs;
	struct lru *c = lru_new(8 * BLOCKSTORE_BLOCK);

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	cr_assert_eq(bs.data_len, raw_total(&r), "random bytes must be stored raw");
	check_all(&bs, c, &r, 7);
	check_all(&bs, NULL, &r, 8);
	lru_free(c);
	index_map_close(&m);
	free_recs(&r);
}

Test(blockstore, empty_and_zero_length)
{
	struct recs r = { 0 };
	struct index_map m;
	struct blockstore bs;
	uint8_t buf[4];

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	cr_assert_eq(blockstore_count(&bs), 0);
	cr_assert_eq(blockstore_get(&bs, NULL, 0, buf, sizeof(buf)), -ENOENT);
	index_map_close(&m);

	/* 70000 empty records: more than a u16 can count, in one block */
	r = (struct recs){ 70000, calloc(70000, 4), calloc(70000, sizeof(uint8_t *)) };
	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	cr_assert_eq(blockstore_count(&bs), 70000);
	cr_assert_eq(blockstore_get(&bs, NULL, 69999, buf, 0), 0);
	cr_assert_eq(blockstore_len(&bs, 70000), -ENOENT);
	index_map_close(&m);
	free_recs(&r);
}

Test(blockstore, limits)
{
	struct index_writer *w;
	struct blockstore_builder *b;
	struct index_map m;
	struct blockstore bs;
	struct index_fp fp;
	static uint8_t big[BLOCKSTORE_BLOCK + 1];
	uint8_t small[10];

	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(blockstore_builder_new(&b, w, T_DATA), 0);
	cr_assert_eq(blockstore_builder_add(b, big, BLOCKSTORE_BLOCK + 1), -E2BIG);
	cr_assert_eq(blockstore_builder_add(b, big, 100), 0);   /* still usable */
	cr_assert_eq(blockstore_builder_finish(b, T_BLK, T_REC), 0);
	index_fp_init(&fp, "bs");
	cr_assert_eq(index_writer_commit(w, &fp), 0);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	cr_assert_eq(blockstore_get(&bs, NULL, 0, small, sizeof(small)), -ERANGE);
	index_map_close(&m);

	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(blockstore_builder_new(&b, w, T_DATA), 0);
	cr_assert_eq(blockstore_builder_add(b, big, 100), 0);
	blockstore_builder_abort(b);
	index_writer_abort(w);
}

/* A private copy of the store's sections, to damage. */
struct copy {
	struct blockstore bs;
	uint8_t *data, *blk, *rec;
};

static void copy_store(struct copy *c, const struct blockstore *bs)
{
	c->bs = *bs;
	c->data = malloc(bs->data_len + 1);
	c->blk = malloc((bs->nblk + 1) * 24);   /* blocks and the sentinel */
	c->rec = malloc(bs->nrec * 2 + 1);
	memcpy(c->data, bs->data, bs->data_len);
	memcpy(c->blk, bs->blk, (bs->nblk + 1) * 24);
	memcpy(c->rec, bs->rec, bs->nrec * 2);
	c->bs.data = c->data;
	c->bs.blk = c->blk;
	c->bs.rec = c->rec;
}

static void free_copy(struct copy *c)
{
	free(c->data);
	free(c->blk);
	free(c->rec);
}

/* Every read gives the right bytes or -EIO; returns how many gave -EIO.
 * Through a cache: a block that failed must not get into it. */
static size_t right_or_eio(const struct blockstore *bs, const struct recs *r)
{
	uint8_t *buf = malloc(BLOCKSTORE_BLOCK);
	struct lru *c = lru_new(64 * BLOCKSTORE_BLOCK);
	size_t eio = 0;

	for (size_t i = 0; i < r->n; i++) {
		int64_t got = blockstore_get(bs, c, i, buf, BLOCKSTORE_BLOCK);

		if (got == -EIO) {
			eio++;
			continue;
		}
		cr_assert_eq(got, (int64_t)r->len[i], "record %zu: %lld", i, (long long)got);
		cr_assert_eq(memcmp(buf, r->p[i], r->len[i]), 0, "record %zu: wrong bytes", i);
	}
	free(buf);
	lru_free(c);
	return eio;
}

Test(blockstore, corrupt_data_byte_is_eio)
{
	struct recs r = make_recs(2000, MIXED, 9);
	struct index_map m;
	struct blockstore bs;
	struct copy c;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	/* single flips spread over the data: deflated and stored blocks */
	for (uint64_t off = 7; off < bs.data_len; off += bs.data_len / 23) {
		copy_store(&c, &bs);
		c.data[off] ^= 0x10;
		cr_assert_gt(right_or_eio(&c.bs, &r), 0, "flip at %llu unnoticed",
			     (unsigned long long)off);
		free_copy(&c);
	}
	index_map_close(&m);
	free_recs(&r);
}

Test(blockstore, corrupt_record_offsets_are_eio)
{
	struct recs r = make_recs(2000, STROKES, 10);
	struct index_map m;
	struct blockstore bs;
	struct copy c;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	copy_store(&c, &bs);
	for (size_t i = 5; i < bs.nrec; i += 97) {
		c.rec[2 * i] = 0xff;
		c.rec[2 * i + 1] = 0xff;
	}
	cr_assert_gt(right_or_eio(&c.bs, &r), 0);
	free_copy(&c);
	index_map_close(&m);
	free_recs(&r);
}

/* Rewrites the index with one section replaced; blockstore_open must fail. */
static void rewrite_with(const struct index_map *m, uint32_t tag,
			 const void *data, uint64_t len)
{
	static const uint32_t tags[] = { T_DATA, T_BLK, T_REC };
	struct index_writer *w;
	struct index_fp fp;
	char tmp[160];

	snprintf(tmp, sizeof(tmp), "%s/bad.sfsidx", dir);
	cr_assert_eq(index_writer_open(&w, tmp), 0);
	for (size_t i = 0; i < 3; i++) {
		uint64_t l;
		const void *p = index_map_section(m, tags[i], &l);

		if (tags[i] == tag) {
			p = data;
			l = len;
		}
		if (p)
			cr_assert_eq(index_writer_add(w, tags[i], p, l), 0);
	}
	index_fp_init(&fp, "bs");
	cr_assert_eq(index_writer_commit(w, &fp), 0);
}

/* Opens bad.sfsidx: the blockstore_open result.  When open accepts it, at
 * least every read must give the right bytes or -EIO, and `r` says which
 * bytes are right. */
static int open_bad_or_eio(const struct recs *r)
{
	struct index_map m;
	struct blockstore bs;
	struct index_fp fp;
	char tmp[160], why[256];
	int ret;

	snprintf(tmp, sizeof(tmp), "%s/bad.sfsidx", dir);
	index_fp_init(&fp, "bs");
	cr_assert_eq(index_map_open(&m, tmp, &fp, why, sizeof(why)), 0, "%s", why);
	ret = blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0);
	if (ret == 0 && r)
		cr_assert_gt(right_or_eio(&bs, r), 0, "damage unnoticed");
	index_map_close(&m);
	return ret;
}

static int open_bad(void)
{
	return open_bad_or_eio(NULL);
}

/* A record whose offset, set to 0, goes backwards: neither it nor the one
 * before it starts a block. */
static size_t backwards_at(const uint8_t *rc, size_t n)
{
	for (size_t k = 1; k < n; k++) {
		uint16_t prev, cur;

		memcpy(&prev, rc + 2 * (k - 1), 2);
		memcpy(&cur, rc + 2 * k, 2);
		if (prev > 0 && cur > prev)
			return k;
	}
	cr_assert_fail("no record follows another in its block");
	return 0;
}

Test(blockstore, bad_sections_fail_open)
{
	struct recs r = make_recs(2000, MIXED, 11);
	struct index_map m;
	uint64_t dlen, blen, rlen;
	const uint8_t *d, *bl, *rc;
	uint8_t *x;

	build(&r);
	map(&m);
	d = index_map_section(&m, T_DATA, &dlen);
	bl = index_map_section(&m, T_BLK, &blen);
	rc = index_map_section(&m, T_REC, &rlen);
	rewrite_with(&m, T_DATA, d, dlen - 1);          /* truncated data */
	cr_assert_eq(open_bad(), -EBADMSG);
	rewrite_with(&m, T_BLK, bl, blen - 1);          /* truncated block table */
	cr_assert_eq(open_bad(), -EBADMSG);
	rewrite_with(&m, T_BLK, bl, blen - 24);         /* a block fewer */
	cr_assert_eq(open_bad(), -EBADMSG);
	rewrite_with(&m, T_BLK, bl + 24, blen - 24);    /* the first block fewer */
	cr_assert_eq(open_bad(), -EBADMSG);
	rewrite_with(&m, T_REC, rc, rlen - 2);          /* a record fewer */
	cr_assert_eq(open_bad(), -EBADMSG);
	rewrite_with(&m, T_REC, rc, rlen - 1);
	cr_assert_eq(open_bad(), -EBADMSG);
	rewrite_with(&m, T_REC, NULL, 0);               /* missing section */
	cr_assert_eq(open_bad(), -EBADMSG);
	/* each byte of the first block entry (whose check reads the records
	 * up to the second's first record), then of the second, set to 0xff */
	x = malloc(blen);
	for (int i = 0; i < 48; i++) {
		memcpy(x, bl, blen);
		x[i] = 0xff;
		rewrite_with(&m, T_BLK, x, blen);
		/* the adler32, and a rawlen that still fits, are checked on read */
		if (i % 24 >= 12 && i % 24 < 16)
			cr_assert_eq(open_bad_or_eio(&r), 0);
		else if (i % 24 >= 20)
			cr_assert(open_bad_or_eio(&r) == 0 || open_bad() == -EBADMSG);
		else
			cr_assert_eq(open_bad(), -EBADMSG, "block entry byte %d", i);
	}
	free(x);
	/* a record offset past its block, or going backwards */
	x = malloc(rlen);
	memcpy(x, rc, rlen);
	x[2 * 10] = x[2 * 10 + 1] = 0xff;
	rewrite_with(&m, T_REC, x, rlen);
	cr_assert_eq(open_bad(), -EBADMSG);
	memcpy(x, rc, rlen);
	x[2 * backwards_at(rc, rlen / 2)] = x[2 * backwards_at(rc, rlen / 2) + 1] = 0;
	rewrite_with(&m, T_REC, x, rlen);
	cr_assert_eq(open_bad(), -EBADMSG);
	free(x);
	rewrite_with(&m, T_BLK, bl, blen);              /* control: intact */
	cr_assert_eq(open_bad(), 0);
	index_map_close(&m);
	free_recs(&r);
}

/* Random damage to the tables of a store in plain (ASan-checked) memory:
 * open may refuse; if it accepts, reads may give -EIO or some bytes, but
 * never touch memory outside the sections or claim more than a block. */
Test(blockstore, fuzzed_tables_never_crash)
{
	struct recs r = make_recs(400, MIXED, 12);
	struct index_map m;
	struct blockstore bs, fz;
	uint8_t *blk, *rec, *data, *out = malloc(BLOCKSTORE_BLOCK);
	size_t blen, rlen, refused = 0;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	blen = (bs.nblk + 1) * 24;
	rlen = bs.nrec * 2;
	blk = malloc(blen);
	rec = malloc(rlen);
	data = malloc(bs.data_len);
	memcpy(data, bs.data, bs.data_len);
	srand(13);
	for (int it = 0; it < 1500; it++) {
		memcpy(blk, bs.blk, blen);
		memcpy(rec, bs.rec, rlen);
		for (int k = rand() % 3; k >= 0; k--) {
			if (rand() % 2)
				blk[(size_t)rand() % blen] = (uint8_t)rand();
			else
				rec[(size_t)rand() % rlen] = (uint8_t)rand();
		}
		if (blockstore_open_sections(&fz, data, bs.data_len, blk, blen, rec,
					     rlen, 0) < 0) {
			refused++;
			continue;
		}
		for (int k = 0; k < 40; k++) {
			int64_t got = blockstore_get(&fz, NULL, (uint64_t)rand() % r.n,
						     out, BLOCKSTORE_BLOCK);

			cr_assert(got == -EIO || (got >= 0 && got <= BLOCKSTORE_BLOCK),
				  "iteration %d: %lld", it, (long long)got);
		}
	}
	cr_assert_gt(refused, 500, "open accepted almost all damage");
	free(blk);
	free(rec);
	free(data);
	free(out);
	index_map_close(&m);
	free_recs(&r);
}

/* ---- blockstore_read_from: blocks read from the file, a source ---- */

/* Copies the index at `path` to dir/name, cut to `len` bytes when len >= 0;
 * returns the copy opened as a source. */
static struct source *copy_index(const char *name, off_t len, char *out, size_t outlen)
{
	FILE *in = fopen(path, "rb"), *o;
	char buf[1 << 16];
	size_t n;

	snprintf(out, outlen, "%s/%s", dir, name);
	o = fopen(out, "wb");
	cr_assert(in && o);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		cr_assert_eq(fwrite(buf, 1, n, o), n);
	fclose(in);
	cr_assert_eq(fclose(o), 0);
	if (len >= 0)
		cr_assert_eq(truncate(out, len), 0);
	return open_src(out);
}

/* The file offset of the data section: where it sits in the mapping. */
static uint64_t data_off(const struct index_map *m, const struct blockstore *bs)
{
	return (uint64_t)(bs->data - m->base);
}

/* Round trips through source reads, with no cache, a thrashing one and a
 * big one.  The store's own view of the data is a copy filled with junk,
 * so a read that went through the map instead of the source could not give
 * the right bytes (the input records are the oracle). */
Test(blockstore, read_from_round_trip)
{
	struct recs r = make_recs(3000, MIXED, 20);
	struct index_map m;
	struct blockstore bs;
	struct copy c;
	struct lru *small = lru_new(3 * BLOCKSTORE_BLOCK), *big = lru_new(1 << 30);
	struct source *src;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	cr_assert_null(bs.src, "open must read through the map by default");
	copy_store(&c, &bs);
	memset(c.data, 0xa5, bs.data_len);
	cr_assert_eq(right_or_eio(&c.bs, &r), r.n, "junk data section unnoticed");
	src = open_src(path);
	blockstore_read_from(&c.bs, src, data_off(&m, &bs));
	check_all(&c.bs, NULL, &r, 21);
	check_all(&c.bs, small, &r, 22);
	check_all(&c.bs, big, &r, 23);
	check_all(&c.bs, big, &r, 24);   /* all hits */
	/* NULL: back to the map (here the junk copy, so -EIO, not junk) */
	blockstore_read_from(&c.bs, NULL, 0);
	cr_assert_eq(right_or_eio(&c.bs, &r), r.n);
	source_close(src);
	free_copy(&c);
	lru_free(small);
	lru_free(big);
	index_map_close(&m);
	free_recs(&r);
}

/* Reads every record in id order: 1 right bytes, 0 -EIO (anything else
 * fails the test).  Returns how many were -EIO. */
static size_t results(const struct blockstore *bs, struct lru *cache,
		      const struct recs *r, uint8_t *ok)
{
	uint8_t *buf = malloc(BLOCKSTORE_BLOCK);
	size_t eio = 0;

	for (size_t i = 0; i < r->n; i++) {
		int64_t got = blockstore_get(bs, cache, i, buf, BLOCKSTORE_BLOCK);

		ok[i] = got != -EIO;
		eio += !ok[i];
		if (ok[i]) {
			cr_assert_eq(got, (int64_t)r->len[i], "record %zu: %lld", i,
				     (long long)got);
			cr_assert_eq(memcmp(buf, r->p[i], r->len[i]), 0,
				     "record %zu: wrong bytes", i);
		}
	}
	free(buf);
	return eio;
}

/* A file shorter than the map claims: blocks wholly before the cut read
 * right, the rest -EIO, so in id order a run of right then a run of -EIO.
 * A failed block must not enter the cache: the same cache then serves
 * every record right once the store reads the intact file. */
Test(blockstore, read_from_truncated_file_is_eio)
{
	struct recs r = make_recs(2000, MIXED, 25);
	struct index_map m;
	struct blockstore bs;
	struct lru *c = lru_new(1 << 30);
	uint8_t *ok = malloc(r.n), *buf = malloc(BLOCKSTORE_BLOCK);
	uint64_t off;
	off_t cuts[4];
	char cut[160];
	struct source *src, *good;
	size_t eio, k;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	off = data_off(&m, &bs);
	cuts[0] = 0;                                 /* empty file */
	cuts[1] = (off_t)off;                        /* no data at all */
	cuts[2] = (off_t)(off + bs.data_len / 3);
	cuts[3] = (off_t)(off + bs.data_len - 1);    /* last byte missing */
	for (size_t t = 0; t < 4; t++) {
		src = copy_index("cut.sfsidx", cuts[t], cut, sizeof(cut));
		blockstore_read_from(&bs, src, off);
		eio = results(&bs, t % 2 ? c : NULL, &r, ok);
		cr_assert_gt(eio, 0, "cut at %lld unnoticed", (long long)cuts[t]);
		for (k = 0; k < r.n && ok[k]; k++)
			;
		for (size_t i = k; i < r.n; i++)
			cr_assert(!ok[i], "cut at %lld: record %zu read after %zu failed",
				  (long long)cuts[t], i, k);
		if (t < 2)
			cr_assert_eq(eio, r.n, "nothing of the data is in the file");
		else
			cr_assert_gt(k, 0, "blocks before the cut are whole");
		/* the cut block, just read whole from the intact file (its
		 * bytes may still be on the stack): from the cut file, -EIO */
		if (k < r.n) {
			good = open_src(path);
			blockstore_read_from(&bs, good, off);
			cr_assert_eq(blockstore_get(&bs, NULL, k, buf, BLOCKSTORE_BLOCK),
				     (int64_t)r.len[k]);
			blockstore_read_from(&bs, src, off);
			cr_assert_eq(blockstore_get(&bs, NULL, k, buf, BLOCKSTORE_BLOCK),
				     -EIO, "cut at %lld: record %zu", (long long)cuts[t], k);
			source_close(good);
		}
		source_close(src);
	}
	good = open_src(path);
	blockstore_read_from(&bs, good, off);
	cr_assert_eq(results(&bs, c, &r, ok), 0, "a failed block was cached");
	check_all(&bs, c, &r, 26);
	source_close(good);
	free(ok);
	free(buf);
	lru_free(c);
	index_map_close(&m);
	free_recs(&r);
}

/* A file whose data bytes differ from what the tables describe: one byte
 * flipped at a time, in deflated and stored blocks.  Reads give the right
 * bytes or -EIO, never others, and the flip is noticed. */
Test(blockstore, read_from_different_bytes_is_eio)
{
	struct recs r = make_recs(2000, MIXED, 27);
	struct index_map m;
	struct blockstore bs;
	struct lru *c = lru_new(64 * BLOCKSTORE_BLOCK);
	uint8_t *ok = malloc(r.n), b;
	uint64_t off;
	char bad[160];
	struct source *src;
	int fd;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	off = data_off(&m, &bs);
	src = copy_index("flip.sfsidx", -1, bad, sizeof(bad));
	fd = open(bad, O_RDWR);		/* to flip bytes under the source */
	cr_assert_geq(fd, 0);
	blockstore_read_from(&bs, src, off);
	for (uint64_t at = 3; at < bs.data_len; at += bs.data_len / 19) {
		cr_assert_eq(pread(fd, &b, 1, (off_t)(off + at)), 1);
		b ^= 0x08;
		cr_assert_eq(pwrite(fd, &b, 1, (off_t)(off + at)), 1);
		cr_assert_gt(results(&bs, NULL, &r, ok), 0, "flip at %llu unnoticed",
			     (unsigned long long)at);
		cr_assert_gt(results(&bs, c, &r, ok), 0, "flip at %llu unnoticed "
			     "through the cache", (unsigned long long)at);
		b ^= 0x08;
		cr_assert_eq(pwrite(fd, &b, 1, (off_t)(off + at)), 1);
		lru_free(c);   /* the flip's neighbours were cached: start afresh */
		c = lru_new(64 * BLOCKSTORE_BLOCK);
	}
	cr_assert_eq(results(&bs, c, &r, ok), 0, "file restored");
	/* the right file at the wrong offset: every block's bytes differ */
	blockstore_read_from(&bs, src, off + 1);
	cr_assert_eq(results(&bs, NULL, &r, ok), r.n, "data read 1 byte off");
	close(fd);
	source_close(src);
	free(ok);
	lru_free(c);
	index_map_close(&m);
	free_recs(&r);
}

/* The store and the cache shared by reader threads, as FUSE workers do:
 * source reads have no file position to race on. */
struct reader {
	const struct blockstore *bs;
	struct lru *cache;
	const struct recs *r;
	unsigned seed;
	size_t wrong;
};

static void *read_random(void *arg)
{
	struct reader *t = arg;
	uint8_t *buf = malloc(BLOCKSTORE_BLOCK);

	for (int k = 0; k < 4000; k++) {
		size_t i = rand_r(&t->seed) % t->r->n;
		int64_t got = blockstore_get(t->bs, t->cache, i, buf, BLOCKSTORE_BLOCK);

		t->wrong += got != (int64_t)t->r->len[i] ||
			    memcmp(buf, t->r->p[i], t->r->len[i]) != 0;
	}
	free(buf);
	return NULL;
}

Test(blockstore, read_from_threads)
{
	struct recs r = make_recs(3000, MIXED, 29);
	struct index_map m;
	struct blockstore bs;
	struct lru *c = lru_new(16 * BLOCKSTORE_BLOCK);
	struct reader t[4];
	pthread_t th[4];
	struct source *src;

	build(&r);
	map(&m);
	cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
	src = open_src(path);
	blockstore_read_from(&bs, src, data_off(&m, &bs));
	for (int i = 0; i < 4; i++) {
		t[i] = (struct reader){ &bs, i % 2 ? c : NULL, &r, 30 + i, 0 };
		cr_assert_eq(pthread_create(&th[i], NULL, read_random, &t[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(t[i].wrong, 0, "thread %d: %zu wrong reads", i, t[i].wrong);
	}
	source_close(src);
	lru_free(c);
	index_map_close(&m);
	free_recs(&r);
}

/* Blocks close at BLOCKSTORE_FILL bytes; a record too big for what is left
 * starts a block of its own, up to BLOCKSTORE_BLOCK. */
Test(blockstore, blocks_close_at_fill)
{
	uint32_t sizes[] = { BLOCKSTORE_FILL / 4, BLOCKSTORE_FILL / 2 + 1 };
	uint64_t want[] = { 25, 100 };

	for (int s = 0; s < 2; s++) {
		struct recs r = make_recs(100, STROKES, 7);
		struct index_map m;
		struct blockstore bs;

		for (size_t i = 0; i < r.n; i++) {
			/* record 50 is alone in its block, both ways */
			r.len[i] = i == 50 ? BLOCKSTORE_BLOCK : sizes[s];
			cr_assert(r.p[i] = realloc(r.p[i], r.len[i]));
			for (uint32_t j = 0; j < r.len[i]; j++)
				r.p[i][j] = (uint8_t)(i * 7 + j % 5);
		}
		build(&r);
		map(&m);
		cr_assert_eq(blockstore_open(&bs, &m, T_DATA, T_BLK, T_REC, 0), 0);
		cr_assert_eq(bs.nblk, want[s] + (s == 0 ? 2 : 0),
			     "record size %u: %llu blocks", sizes[s],
			     (unsigned long long)bs.nblk);
		check_all(&bs, NULL, &r, 3);
		index_map_close(&m);
		free_recs(&r);
	}
}
