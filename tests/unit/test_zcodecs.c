/*
 * test_zcodecs.c - core/io/codecs/zxz.c, zzstd.c, zbz2.c through zsource.c: files
 * made here with liblzma (one block, several blocks, two streams), libzstd
 * (one frame, frames with skippable ones between) and libbz2 (one stream,
 * streams concatenated as pbzip2 writes them) open as their uncompressed
 * bytes, compared with the bytes they were made from at random offsets
 * (one long block read through the kept decoder, forwards and back);
 * damaged files (a flipped byte) give EIO or the original bytes, never
 * others.  Files made by the tools themselves (xz -T0, pixz, pzstd,
 * pbzip2...) decode, per read, only the block or frame holding it, as the
 * tools' own block tables say (tests/unit/zblocks.py).  A pzstd frame
 * whose checksum fails is stepped over: the frames after it read.
 */
#include <bzlib.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "io/source.h"
#include "io/codecs/zsource.h"

#define SPAN (64u << 10)
#define MB   (1u << 20)

static char dir[] = "/tmp/sfs_zctest.XXXXXX";
static char path[128];

static void setup(void)
{
	strcpy(dir, "/tmp/sfs_zctest.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Half compressible lines, half random bytes, in 4 KiB runs. */
static unsigned char *data_of(size_t n)
{
	unsigned char *d = malloc(n);
	uint64_t x = n | 1;
	size_t i;

	cr_assert(d);
	for (i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		d[i] = (i >> 12) & 1 ? (unsigned char)(x >> 56) :
		       (unsigned char)("line of text\n"[i % 13]);
	}
	return d;
}

static void append(const void *p, size_t n)
{
	FILE *f = fopen(path, "ab");

	cr_assert(f);
	cr_assert_eq(fwrite(p, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

/* xz: blocks of `block` bytes (0: one), a stream of `streams`ths each. */
static void write_xz(const unsigned char *d, size_t n, uint64_t block, int streams)
{
	size_t cap = n + n / 2 + 4096, got, k, off;
	unsigned char *out = malloc(cap);
	int s;

	cr_assert(out);
	for (s = 0, off = 0; s < streams; s++, off += k) {
		lzma_stream st = LZMA_STREAM_INIT;
		lzma_mt mt = { .threads = 1, .block_size = block, .preset = 1,
			       .check = LZMA_CHECK_CRC64 };

		k = s == streams - 1 ? n - off : n / streams;
		cr_assert_eq(block ? lzma_stream_encoder_mt(&st, &mt) :
			     lzma_easy_encoder(&st, 1, LZMA_CHECK_CRC32), LZMA_OK);
		st.next_in = d + off;
		st.avail_in = k;
		st.next_out = out;
		st.avail_out = cap;
		cr_assert_eq(lzma_code(&st, LZMA_FINISH), LZMA_STREAM_END);
		got = cap - st.avail_out;
		lzma_end(&st);
		append(out, got);
	}
	free(out);
}

/* zstd: frames of `frame` bytes (0: one), a skippable frame before each,
 * with content checksums as the zstd tool writes them (without one, a
 * damaged frame can decode to other bytes: nothing could tell). */
static void write_zstd(const unsigned char *d, size_t n, size_t frame)
{
	static const unsigned char skip[12] = { 0x5e, 0x2a, 0x4d, 0x18, 4, 0, 0, 0 };
	size_t cap = ZSTD_compressBound(n), off = 0, k, got;
	unsigned char *out = malloc(cap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	cr_assert(out && cc);
	cr_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
	do {
		k = frame && n - off > frame ? frame : n - off;
		got = ZSTD_compress2(cc, out, cap, d + off, k);
		cr_assert(!ZSTD_isError(got));
		if (frame)
			append(skip, sizeof(skip));
		append(out, got);
		off += k;
	} while (off < n);
	ZSTD_freeCCtx(cc);
	free(out);
}

/* bzip2 (100 kB blocks): streams of `stream` bytes (0: one). */
static void write_bz2(const unsigned char *d, size_t n, size_t stream)
{
	unsigned cap = (unsigned)(n + n / 50 + 4096), got;
	char *out = malloc(cap);
	size_t off = 0, k;

	cr_assert(out);
	do {
		k = stream && n - off > stream ? stream : n - off;
		got = cap;
		cr_assert_eq(BZ2_bzBuffToBuffCompress(out, &got, (char *)d + off,
						      (unsigned)k, 1, 0, 0), BZ_OK);
		append(out, got);
		off += k;
	} while (off < n);
	free(out);
}

static struct source *open_z(struct source_env **env)
{
	struct source_config cfg = { .span_bytes = SPAN, .cache_bytes = MB };
	struct source *s;

	cr_assert_eq(source_env_new(&cfg, env), 0);
	cr_assert_eq(source_open(*env, path, &s), 0);
	cr_assert(source_is_decompressed(s));
	return s;
}

/* Reads at random offsets, then backwards span by span: the oracle's. */
static void check_reads(struct source *s, const unsigned char *d, size_t n)
{
	unsigned char *buf = malloc(3 * SPAN);
	uint64_t x = 7;
	size_t off, len, want;
	int i;

	cr_assert(buf);
	cr_assert_eq(source_stamp(s)->size, n);
	for (i = 0; i < 100; i++) {
		x = x * 6364136223846793005ull + 1;
		off = (size_t)((x >> 20) % (n + 10));
		len = (size_t)((x >> 8) % (3 * SPAN));
		want = off >= n ? 0 : (n - off < len ? n - off : len);
		cr_assert_eq(source_pread(s, buf, len, off), (ssize_t)want);
		cr_assert(!memcmp(buf, d + (off < n ? off : 0), want),
			  "bytes differ at %zu+%zu", off, len);
	}
	for (off = n - n % SPAN; off + SPAN > SPAN; off -= SPAN) {
		want = n - off < 1000 ? n - off : 1000;
		cr_assert_eq(source_pread(s, buf, 1000, off), (ssize_t)want);
		cr_assert(!memcmp(buf, d + off, want), "bytes differ at %zu", off);
	}
	free(buf);
}

enum kind { XZ, XZ_BLOCKS, XZ_STREAMS, ZSTD, ZSTD_FRAMES, BZ2, BZ2_STREAMS };

static void write_kind(enum kind k, const unsigned char *d, size_t n)
{
	snprintf(path, sizeof(path), "%s/x.z", dir);
	remove(path);
	switch (k) {
	case XZ: write_xz(d, n, 0, 1); break;
	case XZ_BLOCKS: write_xz(d, n, 300000, 1); break;
	case XZ_STREAMS: write_xz(d, n, 0, 3); break;
	case ZSTD: write_zstd(d, n, 0); break;
	case ZSTD_FRAMES: write_zstd(d, n, 250000); break;
	case BZ2: write_bz2(d, n, 0); break;
	case BZ2_STREAMS: write_bz2(d, n, 400000); break;
	}
}

static void roundtrip(enum kind k, size_t n)
{
	unsigned char *d = data_of(n);
	struct source_env *env;
	struct source *s;

	write_kind(k, d, n);
	s = open_z(&env);
	check_reads(s, d, n);
	source_close(s);
	source_env_free(env);
	free(d);
}

TestSuite(zcodecs, .init = setup, .fini = teardown);

Test(zcodecs, xz_one_block)      { roundtrip(XZ, 3 * MB); }
Test(zcodecs, xz_blocks)         { roundtrip(XZ_BLOCKS, 3 * MB); }
Test(zcodecs, xz_streams)        { roundtrip(XZ_STREAMS, 2 * MB + 5); }
Test(zcodecs, zstd_one_frame)    { roundtrip(ZSTD, 3 * MB); }
Test(zcodecs, zstd_frames)       { roundtrip(ZSTD_FRAMES, 2 * MB + 5); }
Test(zcodecs, bz2_one_stream)    { roundtrip(BZ2, 2 * MB); }
Test(zcodecs, bz2_streams)       { roundtrip(BZ2_STREAMS, 2 * MB + 5); }
Test(zcodecs, empty_xz)          { roundtrip(XZ, 0); }

/* A byte flipped at `at` of the compressed file: the open fails, or each
 * read gives the oracle's bytes or EIO, and some give EIO. */
static void damaged(enum kind k, double at)
{
	size_t n = 2 * MB, off;
	unsigned char *d = data_of(n), buf[4096];
	struct source_env *env;
	struct source_config cfg = { .span_bytes = SPAN, .cache_bytes = MB };
	struct source *s;
	FILE *f;
	long size;
	int c, eio = 0;
	ssize_t got;

	write_kind(k, d, n);
	f = fopen(path, "r+b");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, (long)(size * at), SEEK_SET);
	c = fgetc(f);
	fseek(f, (long)(size * at), SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	if (source_open(env, path, &s) == 0) {
		for (off = 0; off < source_stamp(s)->size; off += 40000) {
			got = source_pread(s, buf, sizeof(buf), off);
			if (got == -EIO) {
				eio++;
				continue;
			}
			cr_assert(got > 0 && off + (size_t)got <= n &&
				  !memcmp(buf, d + off, (size_t)got),
				  "wrong bytes at %zu", off);
		}
		cr_assert(eio || source_stamp(s)->size < n, "the damage went unseen");
		source_close(s);
	}
	source_env_free(env);
	free(d);
}

Test(zcodecs, xz_damaged)          { damaged(XZ, 0.5); }
Test(zcodecs, xz_blocks_damaged)   { damaged(XZ_BLOCKS, 0.5); }
Test(zcodecs, zstd_damaged)        { damaged(ZSTD, 0.5); }
Test(zcodecs, zstd_frames_damaged) { damaged(ZSTD_FRAMES, 0.5); }
Test(zcodecs, bz2_damaged)         { damaged(BZ2, 0.5); }
Test(zcodecs, bz2_streams_damaged) { damaged(BZ2_STREAMS, 0.5); }

/*
 * One block per read: files made by the real tools (xz -T0, pixz, pzstd,
 * pbzip2, and the one-block kinds), read at random offsets after the
 * pass; every span read's decoding (source_env_zdecoded) must lie inside
 * one of the blocks the tool made, as tests/unit/zblocks.py finds them
 * (xz --list, a zstd frame walk, bzip2recover), one that the read's bytes
 * overlap, and the bytes must be the file's.  At the default span (1 MiB):
 * bzip2's 900 kB blocks once shared spans of two.
 */
#define NDEC 64
#define RD   (64u << 10)   /* a read */
struct decodes {
	uint64_t from[NDEC], to[NDEC];
	int n;
};

static void on_decoded(void *arg, const struct source *s, uint64_t from,
		       uint64_t to)
{
	struct decodes *r = arg;

	(void)s;
	cr_assert(r->n < NDEC, "more than %d decodes in one read", NDEC);
	r->from[r->n] = from;
	r->to[r->n++] = to;
}

/* The tool's blocks of path: their count, offsets and sizes in *off, *len. */
static size_t tool_blocks(uint64_t **off, uint64_t **len)
{
	char *cmd;
	unsigned long long o, l;
	size_t n = 0, cap = 0;
	FILE *f;

	*off = *len = NULL;
	cr_assert(asprintf(&cmd, "/usr/bin/python3 %.*szblocks.py %s",
			   (int)(strrchr(__FILE__, '/') + 1 - __FILE__), __FILE__,
			   path) > 0);
	cr_assert(f = popen(cmd, "r"));
	while (fscanf(f, "%llu %llu", &o, &l) == 2) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			cr_assert(*off = realloc(*off, cap * sizeof(**off)));
			cr_assert(*len = realloc(*len, cap * sizeof(**len)));
		}
		(*off)[n] = o;
		(*len)[n++] = l;
	}
	cr_assert_eq(pclose(f), 0, "%s failed", cmd);
	free(cmd);
	return n;
}

/* 1 if [from, to) is inside one block that [a, b) overlaps. */
static int in_one_block(const uint64_t *off, const uint64_t *len, size_t nb,
			uint64_t from, uint64_t to, uint64_t a, uint64_t b)
{
	size_t k;

	for (k = 0; k < nb; k++)
		if (from >= off[k] && to <= off[k] + len[k] && from < to &&
		    off[k] < b && a < off[k] + len[k])
			return 1;
	return 0;
}

/* `tool` (a shell command reading d, writing x.z, in dir) on n bytes:
 * at least min_blocks blocks, and reads that decode one each. */
static void one_block(const char *tool, size_t n, size_t min_blocks)
{
	struct source_config cfg = { .cache_bytes = MB };
	unsigned char *d = data_of(n), *buf = malloc(RD);
	struct decodes r = { .n = 0 };
	struct source_env *env;
	struct source *s;
	uint64_t *off, *len, x = 11, at;
	size_t nb, i, decodes = 0;
	char *cmd;
	int k;

	cr_assert(buf);
	snprintf(path, sizeof(path), "%s/d", dir);
	append(d, n);
	snprintf(path, sizeof(path), "%s/x.z", dir);
	cr_assert(asprintf(&cmd, "cd %s && %s", dir, tool) > 0);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	nb = tool_blocks(&off, &len);
	cr_assert(nb >= min_blocks, "%s made %zu blocks", tool, nb);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	source_env_zdecoded(env, on_decoded, &r);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_stamp(s)->size, n);	/* the pass is over */
	for (i = 0; i < 60; i++) {
		x = x * 6364136223846793005ull + 1;
		at = (x >> 16) % n;
		r.n = 0;
		cr_assert_eq(source_pread(s, buf, RD, at),
			     (ssize_t)(n - at < RD ? n - at : RD));
		cr_assert(!memcmp(buf, d + at, n - at < RD ? n - at : RD),
			  "%s: bytes differ at %llu", tool, (unsigned long long)at);
		for (k = 0; k < r.n; k++)
			cr_assert(in_one_block(off, len, nb, r.from[k], r.to[k], at,
					       at + RD),
				  "%s: a read at %llu decoded %llu-%llu, not one "
				  "of the tool's blocks it overlaps", tool,
				  (unsigned long long)at,
				  (unsigned long long)r.from[k],
				  (unsigned long long)r.to[k]);
		decodes += (size_t)r.n;
	}
	cr_assert(decodes >= 20, "%s: only %zu reads decoded (the cache?)",
		  tool, decodes);
	source_close(s);
	source_env_free(env);
	free(off);
	free(len);
	free(cmd);
	free(buf);
	free(d);
}

Test(zcodecs, block_per_read_xz_T0)    { one_block("xz -T0 -1 -c d >x.z", 8 * MB, 3); }
Test(zcodecs, block_per_read_pixz)     { one_block("pixz -1 <d >x.z", 8 * MB, 4); }
Test(zcodecs, block_per_read_xz)       { one_block("xz -1 -c d >x.z", 4 * MB, 1); }
Test(zcodecs, block_per_read_pzstd)    { one_block("pzstd -q -p 2 -1 -c d >x.z", 8 * MB, 4); }
Test(zcodecs, block_per_read_zstd_T0)  { one_block("zstd -q -T0 -1 -c d >x.z", 4 * MB, 1); }
Test(zcodecs, block_per_read_zstd_cat) {
	one_block("(head -c 1500000 d | zstd -q -1; tail -c +1500001 d | zstd -q -1 "
		  "--no-content-size) >x.z", 4 * MB, 2);
}
Test(zcodecs, block_per_read_pbzip2)   { one_block("pbzip2 -1 -p2 -c d >x.z", 4 * MB, 40); }
Test(zcodecs, block_per_read_bzip2)    { one_block("bzip2 -1 -c d >x.z", 4 * MB, 40); }

/*
 * Inside one long zstd frame a read that looks random decodes only up to
 * its end (a prefix of its span, from the frame's start); reads in order
 * after it still go through the decoder kept at span starts: the whole
 * file read in order decodes each byte at most twice in all (a decoder
 * not kept would decode from the frame's start for every span: about
 * n * n / (2 * span) bytes).  The bytes: the oracle's.
 */
Test(zcodecs, zstd_prefix_then_in_order)
{
	struct source_config cfg = { .span_bytes = 256u << 10,
				     .cache_bytes = 4 * MB };
	size_t n = 3 * MB, rd = 16u << 10, off;
	unsigned char *d = data_of(n), *buf = malloc(rd);
	struct decodes r = { .n = 0 };
	struct source_env *env;
	struct source *s;
	uint64_t prefix = 0, in_order = 0;
	int k;

	cr_assert(buf);
	write_kind(ZSTD, d, n);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	source_env_zdecoded(env, on_decoded, &r);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_stamp(s)->size, n);	/* the pass is over */
	off = 2 * MB + 300000;		/* mid-span: a random read */
	cr_assert_eq(source_pread(s, buf, 4096, off), 4096);
	cr_assert(!memcmp(buf, d + off, 4096));
	for (k = 0; k < r.n; k++)
		prefix += r.to[k] - r.from[k];
	cr_assert(prefix > 0 && prefix < off + 4096 + (64u << 10),
		  "the random read decoded %llu bytes, not a prefix to its end",
		  (unsigned long long)prefix);
	for (off = 0; off < n; off += rd) {
		r.n = 0;
		cr_assert_eq(source_pread(s, buf, rd, off),
			     (ssize_t)(n - off < rd ? n - off : rd));
		cr_assert(!memcmp(buf, d + off, n - off < rd ? n - off : rd),
			  "bytes differ at %zu", off);
		for (k = 0; k < r.n; k++)
			in_order += r.to[k] - r.from[k];
	}
	cr_assert(in_order <= 2 * (uint64_t)n,
		  "reading in order decoded %llu bytes for %zu",
		  (unsigned long long)in_order, n);
	source_close(s);
	source_env_free(env);
	free(buf);
	free(d);
}

/*
 * pzstd's frames give no content size; one whose checksum fails (a byte
 * of a raw block flipped: random bytes, stored as they are) has been
 * decoded whole, so the pass learns its size by decoding it again,
 * unchecked, and goes on: its bytes give EIO, the frames after it read
 * right and the size is the file's (the pass once ended there).
 */
Test(zcodecs, pzstd_checksum_damaged_frame)
{
	size_t n = 8 * MB, i, nb;
	unsigned char *d = malloc(n), buf[4096], h[3];
	struct source_env *env;
	struct source *s;
	uint64_t x = 5, coff, *off, *len, at;
	char cmd[256];
	ssize_t got;
	FILE *f;

	cr_assert(d);
	for (i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		d[i] = (unsigned char)(x >> 56);
	}
	snprintf(path, sizeof(path), "%s/d", dir);
	append(d, n);
	snprintf(cmd, sizeof(cmd), "cd %s && pzstd -q -p 2 -1 -c d >x.z", dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/x.z", dir);
	nb = tool_blocks(&off, &len);
	cr_assert(nb >= 3, "pzstd made %zu frames", nb);
	/* frame 1's compressed offset: zblocks.py -c's third column */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %.*szblocks.py -c %s",
		 (int)(strrchr(__FILE__, '/') + 1 - __FILE__), __FILE__, path);
	cr_assert(f = popen(cmd, "r"));
	cr_assert_eq(fscanf(f, "%*u %*u %*u %*u %*u %*u %llu",
			    (unsigned long long *)&coff), 1);
	while (fgetc(f) != EOF)
		;
	pclose(f);
	/* its header: magic, descriptor 0x04 (no size, a checksum), window */
	cr_assert(f = fopen(path, "r+b"));
	fseek(f, (long)coff + 6, SEEK_SET);
	cr_assert_eq(fread(h, 1, 3, f), 3);
	cr_assert_eq(h[0] >> 1 & 3, 0, "frame 1 starts with a raw block");
	fseek(f, (long)coff + 6 + 3 + 1000, SEEK_SET);
	h[0] = (unsigned char)fgetc(f);
	fseek(f, (long)coff + 6 + 3 + 1000, SEEK_SET);
	fputc(h[0] ^ 0x10, f);
	fclose(f);
	s = open_z(&env);
	cr_assert_eq(source_stamp(s)->size, n, "the frames after it are there");
	for (at = 0; at < n; at += 100000) {
		got = source_pread(s, buf, sizeof(buf), at);
		if (at + sizeof(buf) > off[1] && at < off[1] + len[1])
			cr_assert_eq(got, -EIO, "inside the damaged frame, at %llu",
				     (unsigned long long)at);
		else
			cr_assert(got > 0 && !memcmp(buf, d + at, (size_t)got),
				  "wrong bytes at %llu", (unsigned long long)at);
	}
	source_close(s);
	source_env_free(env);
	free(off);
	free(len);
	free(d);
}
