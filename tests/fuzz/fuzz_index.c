/*
 * fuzz_index.c - libFuzzer target for opening an index file: core/index/index.c's
 * header, checksum and section table checks, then tarindex_open and
 * blockstore_open over what it maps, then use of what they accept.
 *
 * An index on disk is input too (a cache directory can be shared, copied,
 * cut short by a full disk).  Mutating a valid index explores far more than
 * random bytes, which never pass the magic, so at start-up the target builds
 * one, once: a small tar written here (a file, a directory, a symlink, a
 * hard link, a nested tar) indexed as two sources (root and "x") with
 * tarindex_build, plus a block store of packed stroke records as the Quick,
 * Draw! index has, into a private temporary directory.
 *
 * Input, by the first byte:
 *   bit 0  set: the rest is the whole index file, as is (raw bytes);
 *          clear: the rest is a list of 8-byte edits applied to the valid
 *          index: flip a byte, set a 32-bit word, truncate, copy a range
 *          over another (splice), swap two sections' table entries, set a
 *          section's offset or length, copy one section's bytes over
 *          another's (see edit() for the encoding);
 *   bit 1  set: afterwards make the header agree with the result (total
 *          length, the blocks' crc32s and the table's), so the edits reach
 *          the section checks instead of stopping at the checksums;
 *   bit 2  set: block store reads go through pread on the file
 *          (blockstore_read_from), as the Quick, Draw! layout does, instead
 *          of the mapping.
 * First byte 0x88: the rest is a table's 'ZKEY' section (core/index/
 * zstore.h, what a compressed source's access points were made for),
 * explained against a fixed key (index_zstore_explain, what a refused
 * table's message says): 0 or -EBADMSG, a terminated phrase within its
 * buffer, none when refused, none for the key itself (seeds.py).
 * The result is written to a memfd and opened by its /proc/self/fd path.
 * Whatever is accepted is used whole: every tarindex node (tarwalk.h:
 * reads must be the source's bytes at the node's offset; the tree's shape
 * is checked only with FUZZ_STRICT_INDEX=1 in the environment, as
 * tarindex_open does not promise it), every block store record twice
 * (miss, then hit).
 */
#include <zlib.h>

#include "index/blockstore.h"
#include "bsread.h"
#include "fuzz.h"
#include "index/index.h"
#include "formats/strokepack.h"
#include "index/tarindex/tarindex.h"
#include "index/zstore.h"
#include "io/source.h"
#include "tarwalk.h"

#define TAG_D INDEX_TAG('F', 'S', 'D', 'T')
#define TAG_B INDEX_TAG('F', 'S', 'B', 'K')
#define TAG_R INDEX_TAG('F', 'S', 'R', 'C')
#define HDR 64u		/* index.c's header size */
#define NREC 300

static struct {
	uint8_t *index;		/* the valid index */
	size_t len;
	uint8_t *tar;		/* the source, as written */
	size_t tarlen;
	char tarpath[512];
	struct tarindex_source src[2];
	struct index_fp fp;
} G;

/* ---- the fixture ---- */

static void tar_header(uint8_t *h, const char *name, char type, size_t size,
		       const char *link)
{
	unsigned sum = 0;
	int i;

	memset(h, 0, TAR_BLOCK);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", type == '5' ? 0755 : 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011zo", size);
	snprintf((char *)h + 136, 12, "%011o", 1700000000);
	h[156] = (uint8_t)type;
	if (link)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	for (i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* Appends a member to the tar being built at *buf (*len bytes). */
static void tar_add(uint8_t **buf, size_t *len, const char *name, char type,
		    const void *data, size_t size, const char *link)
{
	size_t pad = (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;

	*buf = realloc(*buf, *len + TAR_BLOCK + pad + 2 * TAR_BLOCK);
	FUZZ_CHECK(*buf);
	tar_header(*buf + *len, name, type, size, link);
	memset(*buf + *len + TAR_BLOCK, 0, pad + 2 * TAR_BLOCK);
	if (size)
		memcpy(*buf + *len + TAR_BLOCK, data, size);
	*len += TAR_BLOCK + pad;
}

static void make_tar(void)
{
	uint8_t *inner = NULL, *outer = NULL, big[3000];
	size_t ilen = 0, olen = 0, i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	tar_add(&inner, &ilen, "in/x.txt", '0', "nested", 6, NULL);
	tar_add(&inner, &ilen, "in/y.bin", '0', big, 700, NULL);
	ilen += 2 * TAR_BLOCK;
	tar_add(&outer, &olen, "a/", '5', NULL, 0, NULL);
	tar_add(&outer, &olen, "a/b.txt", '0', "hello\n", 6, NULL);
	tar_add(&outer, &olen, "a/c/d.bin", '0', big, sizeof(big), NULL);
	tar_add(&outer, &olen, "a/l", '2', NULL, 0, "b.txt");
	tar_add(&outer, &olen, "a/up", '2', NULL, 0, "../a/c");
	tar_add(&outer, &olen, "h", '1', NULL, 0, "a/b.txt");
	tar_add(&outer, &olen, "empty", '0', NULL, 0, NULL);
	tar_add(&outer, &olen, "nest.tar", '0', inner, ilen, NULL);
	olen += 2 * TAR_BLOCK;
	free(inner);
	G.tar = outer;
	G.tarlen = olen;
}

/* Packed drawings of varied lengths; a few long ones fill blocks alone. */
static void add_records(struct blockstore_builder *b)
{
	uint8_t pts[6 * 2000], rec[BLOCKSTORE_BLOCK];
	uint32_t r, n, i;
	long len;

	for (r = 0; r < NREC; r++) {
		n = r % 37 == 0 ? 1500 : 1 + r % 50;
		for (i = 0; i < n; i++) {
			int16_t p[3] = { (int16_t)((i * 13 + r) % 200 - 100),
					 (int16_t)((i * 7) % 90 - 45), (int16_t)(i % 9 == 8) };

			memcpy(pts + 6 * i, p, 6);
		}
		rec[0] = 'P';
		len = strokepack_pack(pts, n, rec + 1, sizeof(rec) - 1);
		FUZZ_CHECK(len > 0);
		FUZZ_CHECK(blockstore_builder_add(b, rec, (uint32_t)len + 1) == r);
	}
}

static void build_index(void)
{
	struct tarindex_build_opts bo = { .recursive = 2, .quiet = 1, .what = "fuzz" };
	struct blockstore_builder *b;
	struct index_writer *w;
	char path[512];
	FILE *f;

	make_tar();
	snprintf(G.tarpath, sizeof(G.tarpath), "%s/src.tar", fuzz_tmpdir());
	f = fopen(G.tarpath, "wb");
	FUZZ_CHECK(f && fwrite(G.tar, 1, G.tarlen, f) == G.tarlen && fclose(f) == 0);
	G.src[0] = (struct tarindex_source){ G.tarpath, "", NULL };
	G.src[1] = (struct tarindex_source){ G.tarpath, "x", NULL };
	/* open for the life of the process: every tarindex_open borrows them */
	FUZZ_CHECK(tarindex_sources_open(NULL, G.src, 2) == 0);
	index_fp_init(&G.fp, "fuzz-index");
	FUZZ_CHECK(tarindex_fp_add(&G.fp, G.src, 2, bo.recursive) == 0);
	snprintf(path, sizeof(path), "%s/valid.sfsidx", fuzz_tmpdir());
	FUZZ_CHECK(index_writer_open(&w, path) == 0);
	FUZZ_CHECK(tarindex_build(w, 'T', G.src, 2, &bo) == 0);
	FUZZ_CHECK(blockstore_builder_new(&b, w, TAG_D) == 0);
	add_records(b);
	FUZZ_CHECK(blockstore_builder_finish(b, TAG_B, TAG_R) == 0);
	FUZZ_CHECK(index_writer_commit(w, &G.fp) == 0);
	f = fopen(path, "rb");
	FUZZ_CHECK(f && fseek(f, 0, SEEK_END) == 0);
	G.len = (size_t)ftell(f);
	G.index = malloc(G.len);
	FUZZ_CHECK(G.index && fseek(f, 0, SEEK_SET) == 0 &&
		   fread(G.index, 1, G.len, f) == G.len);
	fclose(f);
	unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	build_index();
	return 0;
}

/* ---- edits ---- */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* The section table entry k of buf (index.c: {tag, pad, off, len} at
 * table_off, nsect of them), or NULL when the header no longer says. */
static uint8_t *sect(uint8_t *buf, size_t len, uint32_t k)
{
	uint64_t toff, nsect;

	if (len < HDR)
		return NULL;
	memcpy(&nsect, buf + 24, 4);
	nsect &= 0xffffffffu;
	memcpy(&toff, buf + 32, 8);
	if (!nsect || toff > len || (len - toff) / 24 < nsect)
		return NULL;
	return buf + toff + 24 * (k % nsect);
}

/*
 * One 8-byte edit e[0..8) of buf (*len bytes): e[0] % 7 is the kind,
 * a = e[1..4) (24 bits), v = e[4..8).
 */
static void edit(uint8_t *buf, size_t *len, const uint8_t *e)
{
	uint32_t a = e[1] | e[2] << 8 | e[3] << 16, v = le32(e + 4);
	uint8_t *s, *t;
	uint64_t x, y, so, sl, to, tl;

	if (*len == 0)
		return;
	switch (e[0] % 7) {
	case 0:		/* flip bits of one byte */
		buf[a % *len] ^= e[4] ? e[4] : 1;
		break;
	case 1:		/* set a 32-bit word */
		if (*len >= 4)
			memcpy(buf + a % (*len - 3), e + 4, 4);
		break;
	case 2:		/* truncate */
		*len = v % (*len + 1);
		break;
	case 3: {	/* copy e[7] * 8 bytes from offset a to offset v */
		size_t from = a % *len, to_ = (v & 0xffffff) % *len, n = (size_t)e[7] * 8;

		if (n > *len - from)
			n = *len - from;
		if (n > *len - to_)
			n = *len - to_;
		memmove(buf + to_, buf + from, n);
		break;
	}
	case 4:		/* swap the offset and length of two sections */
		s = sect(buf, *len, e[1]);
		t = sect(buf, *len, e[2]);
		if (s && t) {
			memcpy(&x, s + 8, 8); memcpy(&y, t + 8, 8);
			memcpy(s + 8, &y, 8); memcpy(t + 8, &x, 8);
			memcpy(&x, s + 16, 8); memcpy(&y, t + 16, 8);
			memcpy(s + 16, &y, 8); memcpy(t + 16, &x, 8);
		}
		break;
	case 5:		/* set a section's offset (e[2] even) or length */
		s = sect(buf, *len, e[1]);
		if (s) {
			x = e[3] & 1 ? (uint64_t)v << 6 : v;	/* aligned, or any */
			memcpy(s + (e[2] & 1 ? 16 : 8), &x, 8);
		}
		break;
	default:	/* copy section e[1]'s bytes over section e[2]'s */
		s = sect(buf, *len, e[1]);
		t = sect(buf, *len, e[2]);
		if (!s || !t)
			break;
		memcpy(&so, s + 8, 8); memcpy(&sl, s + 16, 8);
		memcpy(&to, t + 8, 8); memcpy(&tl, t + 16, 8);
		if (so > *len || to > *len)
			break;
		x = sl < tl ? sl : tl;
		if (x > *len - so) x = *len - so;
		if (x > *len - to) x = *len - to;
		memmove(buf + to, buf + so, (size_t)x);
		break;
	}
}

/* total length and checksums as index_writer_commit would write them:
 * each section's blocks' crc32s (where the table and the checksum list
 * are inside the file), then the crc32 of the table and list */
static void fix_header(uint8_t *buf, size_t len)
{
	uint64_t total = len, toff, off, n, k;
	uint32_t nsect, nblk, shift, blk, crc;

	if (len < HDR)
		return;
	memcpy(buf + 40, &total, 8);
	memcpy(&nsect, buf + 24, 4);
	memcpy(&toff, buf + 32, 8);
	memcpy(&nblk, buf + 48, 4);
	memcpy(&shift, buf + 52, 4);
	if (toff > len || shift < 12 || shift > 30 || nsect > 4096 ||
	    (len - toff) / 24 < nsect || (len - toff - 24ull * nsect) / 4 < nblk)
		return;
	for (uint32_t i = 0; i < nsect; i++) {
		const uint8_t *e = buf + toff + 24ull * i;

		memcpy(&blk, e + 4, 4);
		memcpy(&off, e + 8, 8);
		memcpy(&n, e + 16, 8);
		if (off > len || n > len - off)
			continue;
		for (k = 0; k < n && blk + (k >> shift) < nblk; k += 1ull << shift) {
			uint64_t m = n - k < (1ull << shift) ? n - k : 1ull << shift;

			crc = (uint32_t)crc32(0, buf + off + k, (uInt)m);
			memcpy(buf + toff + 24ull * nsect + 4ull * (blk + (k >> shift)), &crc, 4);
		}
	}
	crc = (uint32_t)crc32(0, buf + toff, (uInt)(len - toff));
	memcpy(buf + 28, &crc, 4);
}

/* ---- use ---- */

static void use_blocks(const struct index_map *m, int fd, int by_fd)
{
	struct source *src = NULL;
	struct blockstore bs;

	if (blockstore_open(&bs, m, TAG_D, TAG_B, TAG_R, 0))
		return;
	if (by_fd && (src = fuzz_source(fd)))
		blockstore_read_from(&bs, src, (uint64_t)(bs.data - m->base));
	bsread(&bs, 32u << 10);
	source_close(src);
}

/* The 0x88 mode: data is a 'ZKEY' section. */
static void explain_key(const uint8_t *data, size_t size)
{
	static const char name[] = "/d/x.tar.gz";	/* seeds.py's key */
	struct source_stamp st = { .size = 1000, .mtime_ns = 5000000000ll };
	char why[300];
	uint8_t *sect = malloc(size + 1);	/* its own: no reads past size */
	int rc;

	FUZZ_CHECK(sect);
	memcpy(sect, data, size);
	snprintf(st.etag, sizeof(st.etag), "\"e\"");
	memset(why, 'x', sizeof(why));
	rc = index_zstore_explain(sect, size, name, &st, 1u << 20, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == -EBADMSG);
	FUZZ_CHECK(memchr(why, '\0', sizeof(why)));
	FUZZ_CHECK(rc == 0 || why[0] == '\0');
	if (size == sizeof(struct zkey) + sizeof(name)) {	/* the key itself? */
		struct zkey k = { ZKEY_VERSION, sizeof(name) - 1, 1000, 5000000000ll, 0,
				  1u << 20, "\"e\"" };

		if (!memcmp(sect, &k, sizeof(k)) &&
		    !memcmp(sect + sizeof(k), name, sizeof(name)))
			FUZZ_CHECK(rc == 0 && why[0] == '\0');
	}
	free(sect);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct index_map m;
	struct tarindex t;
	char path[64], why[512];
	uint8_t *buf;
	size_t len, i;
	int fd, rc;
	/* FUZZ_STRICT_INDEX=1 checks the tree's shape as fuzz_tarindex does
	 * (run.sh replays the regressions so: two are names tarindex_open
	 * once let through) */
	static int strict = -1;

	if (size < 1)
		return 0;
	if (strict < 0)
		strict = getenv("FUZZ_STRICT_INDEX") != NULL;
	if (data[0] == 0x88) {
		explain_key(data + 1, size - 1);
		return 0;
	}
	if (data[0] & 1) {
		len = size - 1;
		buf = malloc(len + 1);
		FUZZ_CHECK(buf);
		memcpy(buf, data + 1, len);
	} else {
		len = G.len;
		buf = malloc(len + 1);
		FUZZ_CHECK(buf);
		memcpy(buf, G.index, len);
		for (i = 1; i + 8 <= size; i += 8)
			edit(buf, &len, data + i);
	}
	if (data[0] & 2)
		fix_header(buf, len);
	fd = fuzz_memfd(buf, len);
	free(buf);
	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, path, sizeof(path));
	rc = index_map_open(&m, path, &G.fp, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -ESTALE || rc == -ENOMEM);
	if (rc == 0) {
		if (tarindex_open(&t, &m, 'T', G.src, 2) == 0) {
			tarwalk(&t, G.tar, G.tarlen, strict);
			tarindex_close(&t);
		}
		use_blocks(&m, fd, data[0] & 4);
		index_map_close(&m);
	}
	close(fd);
	return 0;
}
