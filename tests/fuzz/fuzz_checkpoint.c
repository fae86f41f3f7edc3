/*
 * fuzz_checkpoint.c - libFuzzer target for core/index/checkpoint.c's
 * reading of a tar index build's checkpoint (the log of members walked and
 * marks), which a build leaves in index_dir and the next one resumes from:
 * a file cut short by a kill, damaged by a disk, or written by another
 * version is input too.
 *
 * Mutating a valid checkpoint explores far more than random bytes, which
 * never pass the header's CRC, so at start-up the target writes one with
 * checkpoint.c's own writer (plain, nested, hard link, symlink and sparse
 * members over two sources, marks between them) into a private directory.
 *
 * Input, by the first byte:
 *   bit 0  set: the rest is the whole file, as is;
 *          clear: the rest is a list of 3-byte edits to the valid file
 *          (16-bit offset, byte xor'ed in), then, when its low byte is
 *          odd, the file is cut to a length taken from the last edit;
 *   bit 1  set: afterwards every record's CRC (and the header's) is made
 *          to agree with its bytes, so edits reach the field checks.
 * Checks: ckpt_check_file returns 0, 1 or -errno; ckpt_open of the file as
 * a checkpoint accepts it or starts afresh, and when it resumes, exactly
 * resume.members members are replayed, each with a normalised non-empty
 * path within TAR_PATH_MAX, a known type and a depth the walk can have;
 * closing it (a mark appended) leaves a file that opens again with the
 * same resume point.
 */
#include <zlib.h>

#include "fuzz.h"
#include "index/checkpoint.h"

#define PART 'T'
#define FP   0x5346534649584564ull

static struct {
	uint8_t *ck;            /* the valid checkpoint */
	size_t len;
	char idx[512];          /* its index path; the file is idx.ckpt.54 */
	char file[600];
} G;

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(p = malloc((size_t)n + 1)) || fread(p, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void spit(const uint8_t *p, size_t n)
{
	FILE *f = fopen(G.file, "wb");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		abort();
}

static void add(struct ckpt *c, uint32_t src, uint32_t depth, int nested,
		enum tar_type type, const char *path, const char *link,
		const struct tar_sparse_chunk *ch, uint32_t nch)
{
	static uint64_t off = 512;
	struct ckpt_member m = { { .path = path, .link = link, .type = type,
				   .mode = 0644, .mtime = 1700000000, .size = 100,
				   .offset = off, .stored = 100, .header = off - 512,
				   .sparse = nch != 0, .nchunks = nch, .chunks = ch },
				 src, depth, nested };

	if (depth == 0 && ckpt_boundary(c, src, off - 512, 1))
		abort();
	off += 1024;
	if (ckpt_add(c, &m))
		abort();
}

static void fixture(void)
{
	static const struct tar_sparse_chunk ch[2] = { { 0, 10 }, { 50, 20 } };
	struct ckpt_resume r;
	struct ckpt *c;

	snprintf(G.idx, sizeof(G.idx), "%s/tar-fuzz.sfsidx", fuzz_tmpdir());
	snprintf(G.file, sizeof(G.file), "%s.ckpt.%02x", G.idx, PART);
	if (ckpt_open(&c, G.idx, PART, FP, &r) != 0)
		abort();
	add(c, 0, 0, 0, TAR_DIR, "a", "", NULL, 0);
	add(c, 0, 0, 0, TAR_FILE, "a/f", "", NULL, 0);
	add(c, 0, 0, 1, TAR_FILE, "n1.tar", "", NULL, 0);
	add(c, 0, 1, 0, TAR_FILE, "x.JPEG", "", NULL, 0);
	add(c, 0, 1, 0, TAR_SYMLINK, "y", "x.JPEG", NULL, 0);
	add(c, 0, 0, 0, TAR_HARDLINK, "h", "a/f", NULL, 0);
	add(c, 1, 0, 0, TAR_FILE, "s", "", ch, 2);
	add(c, 1, 0, 0, TAR_FILE, "t", "", NULL, 0);
	ckpt_close(c, 0);
	G.ck = slurp(G.file, &G.len);
}

/* Makes every CRC agree with its bytes (checkpoint.c's layout: a 32-byte
 * header with its CRC at 24, then [len][crc][hcrc][payload] records). */
static void fix_crcs(uint8_t *p, size_t n)
{
	uint32_t len, crc;
	size_t at = 32;

	if (n < 32)
		return;
	crc = (uint32_t)crc32(0, p, 24);
	memcpy(p + 24, &crc, 4);
	while (at + 12 <= n) {
		memcpy(&len, p + at, 4);
		if (len > n - at - 12)
			break;
		crc = (uint32_t)crc32(0, p + at + 12, len);
		memcpy(p + at + 4, &crc, 4);
		crc = (uint32_t)crc32(0, p + at, 8);
		memcpy(p + at + 8, &crc, 4);
		at += 12 + len;
	}
}

/* Opens the file as a build would, replays it, closes it (marking). */
static int replay(struct ckpt_resume *r)
{
	struct ckpt_member *m;
	struct ckpt *c;
	uint64_t n = 0;
	int rc = ckpt_open(&c, G.idx, PART, FP, r), got;

	FUZZ_CHECK(rc == 0 || rc == 1);
	while ((got = ckpt_next(c, &m)) == 1) {
		size_t plen = strlen(m->m.path);

		FUZZ_CHECK(plen > 0 && plen <= TAR_PATH_MAX && m->m.path[0] != '/');
		FUZZ_CHECK(m->m.type >= TAR_FILE && m->m.type <= TAR_SYMLINK);
		FUZZ_CHECK(!m->nested || m->m.type == TAR_FILE);
		FUZZ_CHECK(m->m.nchunks <= TAR_SPARSE_MAX_CHUNKS);
		n++;
		free(m);
	}
	FUZZ_CHECK(got == 0 || got == -ESTALE);
	FUZZ_CHECK(got != 0 || n == r->members);
	ckpt_close(c, 0);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ckpt_resume r1, r2;
	uint8_t *p;
	size_t n, i;
	int rc;

	if (!G.ck)
		fixture();
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		n = size - 1;
		p = malloc(n + 1);
		memcpy(p, data + 1, n);
	} else {
		n = G.len;
		p = malloc(n + 1);
		memcpy(p, G.ck, n);
		for (i = 1; i + 3 <= size; i += 3)
			p[(data[i] | data[i + 1] << 8) % n] ^= data[i + 2];
		if (size >= 4 && data[size - 3] & 1)
			n = (data[size - 2] | data[size - 1] << 8) % (n + 1);
	}
	if (data[0] & 2)
		fix_crcs(p, n);
	spit(p, n);
	rc = ckpt_check_file(G.file, PART, FP);
	FUZZ_CHECK(rc == 0 || rc == 1 || rc < 0);
	if (replay(&r1) == 1 && replay(&r2) == 1)
		FUZZ_CHECK(r1.src == r2.src && r1.off == r2.off && r1.members == r2.members);
	unlink(G.file);
	free(p);
	return 0;
}
