/*
 * zblocks - the floor of tools/bench/zbench.sh's random reads of xz, zstd
 * and bzip2 files: the decompressor alone (liblzma, libzstd, libbz2), per
 * read, decoding the block or frame holding it from its start to the
 * read's last byte (into the next block when the read crosses one), its
 * compressed bytes read with pread.  No FUSE, no cache, one thread.
 *
 * Usage: samplefs-zblocks [-n LEN] [-c ORIG] FILE OFFSETS
 *   OFFSETS: one uncompressed offset per line; each read is LEN bytes
 *   (65536).  -c: each block's bytes are compared with the uncompressed
 *   file ORIG (a check of the tool, slower: not for timing).  Prints
 *     blocks=B reads=N secs=S cpu=C reads_per_s=R decoded_MB=D
 *   (secs and cpu: the timed loop only).  Exits 1 on any error.
 *
 * The block table is made before the timed loop: xz from its index
 * (lzma_file_info_decoder), zstd by walking the frames
 * (ZSTD_findFrameCompressedSize; a frame whose header has no size is
 * decoded once to count it), bzip2 by scanning every bit for the block
 * and end-of-stream magics and decoding each block once to count it (a
 * block is decoded as a one-block stream of its bits, as libbz2 needs a
 * byte-aligned stream: "BZh9", the block, the end magic, its CRC).
 *
 * Not a test: the bytes are not compared with anything (the unit tests do
 * that); a bench tool, built by the Makefile, not installed.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <bzlib.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define BZ_BLOCK 0x314159265359ull
#define BZ_EOS   0x177245385090ull
#define M48      ((1ull << 48) - 1)

enum kind { XZ, ZST, BZ2 };

struct blk {
	uint64_t cin, cend;     /* compressed bytes (bzip2: bits) */
	uint64_t uoff, usize;
	int check;              /* xz: the stream's check */
};

struct tab {
	enum kind kind;
	int fd;
	const unsigned char *map;
	uint64_t size;
	struct blk *b;
	size_t n, cap;
	unsigned char *cbuf, *obuf, *re;   /* compressed, output, realigned */
	size_t ccap, ocap, recap;
	ZSTD_DCtx *dc;
	uint64_t decoded;
	int orig;               /* -c: the uncompressed file, or -1 */
};

static void die(const char *what)
{
	fprintf(stderr, "zblocks: %s\n", what);
	exit(1);
}

static void *grow(void *p, size_t *cap, size_t need, size_t each)
{
	if (need <= *cap)
		return p;
	*cap = need * 2;
	if (!(p = realloc(p, *cap * each)))
		die("out of memory");
	return p;
}

static void add(struct tab *t, uint64_t cin, uint64_t cend, uint64_t usize,
		int check)
{
	uint64_t uoff = t->n ? t->b[t->n - 1].uoff + t->b[t->n - 1].usize : 0;

	t->b = grow(t->b, &t->cap, t->n + 1, sizeof(*t->b));
	t->b[t->n++] = (struct blk){ cin, cend, uoff, usize, check };
}

/* The block's compressed bytes (bzip2: the bytes holding its bits). */
static const unsigned char *cbytes(struct tab *t, const struct blk *b,
				   uint64_t *off)
{
	uint64_t a = t->kind == BZ2 ? b->cin / 8 : b->cin;
	uint64_t e = t->kind == BZ2 ? (b->cend + 7) / 8 + 10 : b->cend;

	e = e > t->size ? t->size : e;
	t->cbuf = grow(t->cbuf, &t->ccap, (size_t)(e - a), 1);
	if (pread(t->fd, t->cbuf, (size_t)(e - a), (off_t)a) != (ssize_t)(e - a))
		die("short read of the file");
	*off = a;
	return t->cbuf;
}

/* ---- decoding one block's first `need` bytes into t->obuf ---- */

static uint64_t xz_decode(struct tab *t, const struct blk *b, uint64_t need)
{
	lzma_filter f[LZMA_FILTERS_MAX + 1];
	lzma_block blk = { .version = 1, .check = (lzma_check)b->check, .filters = f };
	lzma_stream s = LZMA_STREAM_INIT;
	uint64_t at;
	const unsigned char *in = cbytes(t, b, &at);
	lzma_ret r;

	blk.header_size = lzma_block_header_size_decode(in[0]);
	if (lzma_block_header_decode(&blk, NULL, in) != LZMA_OK ||
	    lzma_block_decoder(&s, &blk) != LZMA_OK)
		die("bad xz block header");
	lzma_filters_free(f, NULL);
	s.next_in = in + blk.header_size;
	s.avail_in = (size_t)(b->cend - b->cin) - blk.header_size;
	s.next_out = t->obuf;
	s.avail_out = (size_t)need;
	do
		r = lzma_code(&s, LZMA_RUN);
	while (r == LZMA_OK && s.avail_out && s.avail_in);
	if (r != LZMA_OK && r != LZMA_STREAM_END)
		die("xz block does not decode");
	need -= s.avail_out;
	lzma_end(&s);
	return need;
}

static uint64_t zst_decode(struct tab *t, const struct blk *b, uint64_t need)
{
	uint64_t at;
	const unsigned char *in = cbytes(t, b, &at);
	ZSTD_inBuffer ib = { in, (size_t)(b->cend - b->cin), 0 };
	ZSTD_outBuffer ob = { t->obuf, (size_t)need, 0 };
	size_t r;

	ZSTD_DCtx_reset(t->dc, ZSTD_reset_session_only);
	do
		r = ZSTD_decompressStream(t->dc, &ob, &ib);
	while (!ZSTD_isError(r) && r && ob.pos < ob.size && ib.pos < ib.size);
	if (ZSTD_isError(r))
		die(ZSTD_getErrorName(r));
	return ob.pos;
}

static void put_bits(unsigned char *p, uint64_t *pos, uint64_t v, unsigned n)
{
	while (n--) {
		if (v >> n & 1)
			p[*pos / 8] |= (unsigned char)(0x80 >> (*pos % 8));
		(*pos)++;
	}
}

static uint64_t bz2_decode(struct tab *t, const struct blk *b, uint64_t need)
{
	uint64_t at, nbits = b->cend - b->cin, nbytes = (nbits + 7) / 8, j, pos;
	const unsigned char *in = cbytes(t, b, &at);
	unsigned sh = (unsigned)(b->cin % 8), crc = 0, k;
	bz_stream s = { 0 };
	int r;

	t->re = grow(t->re, &t->recap, (size_t)nbytes + 16, 1);
	memset(t->re, 0, (size_t)nbytes + 16);
	memcpy(t->re, "BZh9", 4);
	for (j = 0; j < nbytes; j++)
		t->re[4 + j] = (unsigned char)(in[j] << sh |
					       (sh ? in[j + 1] >> (8 - sh) : 0));
	if (nbits % 8)
		t->re[4 + nbytes - 1] &= (unsigned char)(0xff00 >> (nbits % 8));
	for (k = 0; k < 32; k++)	/* the block's CRC, after its magic */
		crc = crc << 1 | (t->re[4 + (48 + k) / 8] >> (7 - (48 + k) % 8) & 1);
	pos = 32 + nbits;
	put_bits(t->re, &pos, BZ_EOS, 48);
	put_bits(t->re, &pos, crc, 32);
	if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK)
		die("libbz2 init");
	s.next_in = (char *)t->re;
	s.avail_in = (unsigned)((pos + 7) / 8);
	s.next_out = (char *)t->obuf;
	s.avail_out = (unsigned)need;
	do
		r = BZ2_bzDecompress(&s);
	while (r == BZ_OK && s.avail_out && s.avail_in);
	if (r != BZ_OK && r != BZ_STREAM_END)
		die("bzip2 block does not decode");
	need -= s.avail_out;
	BZ2_bzDecompressEnd(&s);
	return need;
}

/* -c: the block's first n bytes against the uncompressed file. */
static void compare(struct tab *t, const struct blk *b, uint64_t n)
{
	unsigned char *o = malloc(n ? n : 1);

	if (!o || pread(t->orig, o, (size_t)n, (off_t)b->uoff) != (ssize_t)n ||
	    memcmp(o, t->obuf, (size_t)n))
		die("a block's bytes differ from the uncompressed file's");
	free(o);
}

static uint64_t decode(struct tab *t, const struct blk *b, uint64_t need)
{
	uint64_t got;

	t->obuf = grow(t->obuf, &t->ocap, (size_t)need + 1, 1);
	t->decoded += need;
	got = t->kind == XZ ? xz_decode(t, b, need) :
	      t->kind == ZST ? zst_decode(t, b, need) : bz2_decode(t, b, need);
	if (t->orig >= 0 && b->usize)
		compare(t, b, got);
	return got;
}

/* ---- the block tables ---- */

static void xz_table(struct tab *t)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_index *idx = NULL;
	lzma_index_iter it;
	lzma_ret r;

	if (lzma_file_info_decoder(&s, &idx, UINT64_MAX, t->size) != LZMA_OK)
		die("lzma_file_info_decoder");
	s.next_in = t->map;
	s.avail_in = (size_t)t->size;
	while ((r = lzma_code(&s, LZMA_RUN)) != LZMA_STREAM_END) {
		if (r != LZMA_SEEK_NEEDED && r != LZMA_OK)
			die("no xz index");
		if (r == LZMA_SEEK_NEEDED) {
			s.next_in = t->map + s.seek_pos;
			s.avail_in = (size_t)(t->size - s.seek_pos);
		}
	}
	lzma_end(&s);
	lzma_index_iter_init(&it, idx);
	while (!lzma_index_iter_next(&it, LZMA_INDEX_ITER_NONEMPTY_BLOCK))
		add(t, it.block.compressed_file_offset,
		    it.block.compressed_file_offset + it.block.total_size,
		    it.block.uncompressed_size, (int)it.stream.flags->check);
	lzma_index_end(idx, NULL);
}

/* A frame's size when its header does not say it: decoded to count. */
static uint64_t zst_count(struct tab *t, const struct blk *b)
{
	unsigned char out[1 << 16];
	ZSTD_inBuffer ib = { t->map + b->cin, (size_t)(b->cend - b->cin), 0 };
	ZSTD_outBuffer ob;
	uint64_t n = 0;
	size_t r;

	ZSTD_DCtx_reset(t->dc, ZSTD_reset_session_only);
	do {
		ob = (ZSTD_outBuffer){ out, sizeof(out), 0 };
		r = ZSTD_decompressStream(t->dc, &ob, &ib);
		n += ob.pos;
	} while (!ZSTD_isError(r) && r);
	if (ZSTD_isError(r))
		die(ZSTD_getErrorName(r));
	return n;
}

static void zst_table(struct tab *t)
{
	uint64_t p = 0, u;
	uint32_t m;
	size_t c;

	while (p + 8 <= t->size) {
		memcpy(&m, t->map + p, 4);
		if ((m & ~15u) == 0x184D2A50u) {
			memcpy(&m, t->map + p + 4, 4);
			p += 8 + (uint64_t)m;
			continue;
		}
		c = ZSTD_findFrameCompressedSize(t->map + p, (size_t)(t->size - p));
		if (ZSTD_isError(c))
			die("not a zstd frame");
		u = ZSTD_getFrameContentSize(t->map + p, c);
		add(t, p, p + c, 0, 0);
		if (u == ZSTD_CONTENTSIZE_UNKNOWN || u == ZSTD_CONTENTSIZE_ERROR)
			u = zst_count(t, &t->b[t->n - 1]);
		t->b[t->n - 1].usize = u;
		if (!u)
			t->n--;
		p += c;
	}
}

static void bz2_table(struct tab *t)
{
	uint64_t w = 0, bit, last = 0, m;
	int open = 0, k;

	for (bit = 0; bit < t->size * 8; bit += 8) {
		w = w << 8 | t->map[bit / 8];
		for (k = 7; k >= 0; k--) {
			m = w >> k & M48;
			if (m != BZ_BLOCK && m != BZ_EOS)
				continue;
			if (open)
				add(t, last, bit + 8 - (unsigned)k - 48, 0, 0);
			open = m == BZ_BLOCK;
			last = bit + 8 - (unsigned)k - 48;
		}
	}
	for (size_t i = 0; i < t->n; i++) {
		t->b[i].uoff = i ? t->b[i - 1].uoff + t->b[i - 1].usize : 0;
		t->b[i].usize = decode(t, &t->b[i], 64ull << 20);
	}
}

/* ---- the timed loop ---- */

static size_t find(const struct tab *t, uint64_t off)
{
	size_t lo = 0, hi = t->n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->b[mid].uoff <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct tab t = { .orig = -1 };
	unsigned char head[6];
	uint64_t len = 65536, off, end, stop, *offs = NULL, usize;
	size_t n = 0, cap = 0, i, k;
	unsigned long long v;
	double w0, c0, w1, c1;
	struct stat st;
	FILE *f;
	int opt;

	while ((opt = getopt(argc, argv, "n:c:")) != -1) {
		if (opt == 'n')
			len = strtoull(optarg, NULL, 0);
		else if (opt == 'c' && (t.orig = open(optarg, O_RDONLY)) < 0)
			die("cannot open ORIG");
		else if (opt != 'c')
			die("usage: samplefs-zblocks [-n LEN] [-c ORIG] FILE OFFSETS");
	}
	if (argc - optind != 2)
		die("usage: samplefs-zblocks [-n LEN] [-c ORIG] FILE OFFSETS");
	if ((t.fd = open(argv[optind], O_RDONLY)) < 0 || fstat(t.fd, &st) < 0 ||
	    st.st_size < 6)
		die("cannot open the file");
	t.size = (uint64_t)st.st_size;
	t.map = mmap(NULL, (size_t)t.size, PROT_READ, MAP_PRIVATE, t.fd, 0);
	if (t.map == MAP_FAILED)
		die("cannot map the file");
	memcpy(head, t.map, 6);
	t.kind = !memcmp(head, "\xfd" "7zXZ", 6) ? XZ :
		 !memcmp(head, "BZh", 3) ? BZ2 : ZST;
	if (!(t.dc = ZSTD_createDCtx()))
		die("out of memory");
	if (t.kind == XZ)
		xz_table(&t);
	else if (t.kind == ZST)
		zst_table(&t);
	else
		bz2_table(&t);
	if (!t.n)
		die("no blocks");
	usize = t.b[t.n - 1].uoff + t.b[t.n - 1].usize;
	if (!(f = fopen(argv[optind + 1], "r")))
		die("cannot open the offsets");
	while (fscanf(f, "%llu", &v) == 1) {
		offs = grow(offs, &cap, n + 1, sizeof(*offs));
		offs[n++] = v;
	}
	fclose(f);
	t.decoded = 0;
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (i = 0; i < n; i++) {
		end = offs[i] + len < usize ? offs[i] + len : usize;
		for (off = offs[i]; off < end; off = stop) {
			k = find(&t, off);
			stop = t.b[k].uoff + t.b[k].usize;
			stop = end < stop ? end : stop;
			if (decode(&t, &t.b[k], stop - t.b[k].uoff) !=
			    stop - t.b[k].uoff)
				die("a block gave fewer bytes than the table says");
		}
	}
	w1 = now(CLOCK_MONOTONIC);
	c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("blocks=%zu reads=%zu secs=%.3f cpu=%.3f reads_per_s=%.1f "
	       "decoded_MB=%.1f\n", t.n, n, w1 - w0, c1 - c0,
	       (double)n / (w1 - w0), (double)t.decoded / 1e6);
	return 0;
}
