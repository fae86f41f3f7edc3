/*
 * fuzz_zindex.c - libFuzzer target for core/io/codecs/zsource.c and zgzip.c: the
 * gzip pass that builds a table of access points, the table's checker,
 * and span reads from a table that was tampered with.
 *
 * Feeds: the first byte picks the mode.
 *   even: the rest is a compressed file, opened as a source (the pass);
 *         every 64 KiB of what it reads is EIO or zlib's own inflation of
 *         the input (the oracle, members one after another until one
 *         fails), byte for byte as far as the oracle goes (the pass goes
 *         on after a member whose CRC-32 fails; zlib stops there).
 *   odd:  the rest edits the valid table of a fixed gzip file made at
 *         start-up (pairs of 4-byte offset and value bytes written over
 *         it), or, when the second byte is 0xff, replaces it whole; the
 *         table is handed to the source by the store at open.  Whether the
 *         checker takes it or the pass runs again, every read is EIO or
 *         the fixture's bytes.
 * Checks: the invariants above (FUZZ_CHECK), no crash, leak or sanitizer
 * report, bounded work (the span bound).  Seeds: tests/fuzz/seeds.py.
 */
#include <zlib.h>

#include "fuzz.h"
#include "io/codecs/zsource.h"

#define READ (64u << 10)

static unsigned char *fix_gz, *fix_raw, *fix_blob;
static size_t fix_gz_len, fix_raw_len, fix_blob_len;

/* The store: hands out `give` (may be NULL), keeps what is saved. */
struct store {
	const void *give;
	size_t give_len;
	void *saved;
	size_t saved_len;
};

static int st_load(void *arg, const char *name, const struct source_stamp *st,
		   uint64_t span, const void **blob, size_t *len, void **hold)
{
	struct store *s = arg;

	if (!s->give)
		return -ENOENT;
	*blob = s->give;
	*len = s->give_len;
	*hold = NULL;
	return 0;
}

static void st_release(void *arg, void *hold)
{
}

static void st_save(void *arg, const char *name, const struct source_stamp *st,
		    uint64_t span, const void *blob, size_t len)
{
	struct store *s = arg;

	free(s->saved);
	s->saved = malloc(len);
	if (s->saved)
		memcpy(s->saved, blob, len);
	s->saved_len = s->saved ? len : 0;
}

static const struct zsource_store ops = { st_load, st_release, st_save };

/* zlib's inflation of every member in turn, until one fails. */
static unsigned char *oracle(const unsigned char *in, size_t n, size_t *outlen)
{
	size_t cap = 1 << 16, len = 0;
	unsigned char *out = malloc(cap);
	z_stream zs;
	int ret;

	memset(&zs, 0, sizeof(zs));
	if (!out || inflateInit2(&zs, 31) != Z_OK) {
		free(out);
		return NULL;
	}
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)n;
	while (zs.avail_in) {
		if (len == cap) {
			unsigned char *q = realloc(out, cap *= 2);

			if (!q)
				break;
			out = q;
		}
		zs.next_out = out + len;
		zs.avail_out = (uInt)(cap - len);
		ret = inflate(&zs, Z_NO_FLUSH);
		len = cap - zs.avail_out;
		if (ret == Z_STREAM_END)
			inflateReset(&zs);
		else if (ret != Z_OK)
			break;
	}
	inflateEnd(&zs);
	*outlen = len;
	return out;
}

/* Opens the file in fd through env; reads it all: EIO or want's bytes. */
static void read_all(struct source_env *env, int fd, const unsigned char *want,
		     size_t wantlen)
{
	unsigned char *buf = malloc(READ);
	struct source *s;
	char path[64];
	uint64_t off;
	ssize_t got;

	fuzz_fd_path(fd, path, sizeof(path));
	if (!buf || source_open(env, path, &s) < 0) {
		free(buf);
		return;
	}
	for (off = 0; off < source_stamp(s)->size; off += READ) {
		got = source_pread(s, buf, READ, off);
		FUZZ_CHECK(got == -EIO || got > 0);
		if (got > 0 && source_is_decompressed(s) && off < wantlen)
			FUZZ_CHECK(!memcmp(buf, want + off, wantlen - off < (size_t)got ?
					   wantlen - off : (size_t)got));
	}
	source_close(s);
	free(buf);
}

static struct source_env *env_new(struct store *st)
{
	struct source_config cfg = { .span_bytes = 64 << 10,
				     .cache_bytes = 1 << 20 };
	struct source_env *env;

	if (source_env_new(&cfg, &env) < 0)
		abort();
	source_env_zstore(env, &ops, st);
	return env;
}

/* The fixture: 300 KB of words in two gzip members, and its table. */
static void fixture(void)
{
	struct store st = { 0 };
	struct source_env *env;
	unsigned char *half;
	uLongf n;
	size_t i;
	int fd;

	fix_raw_len = 300000;
	fix_raw = malloc(fix_raw_len);
	fix_gz = malloc(2 * compressBound(fix_raw_len));
	for (i = 0; i < fix_raw_len; i++)
		fix_raw[i] = (unsigned char)("span window member "[i % 19] + (i / 4099) % 7);
	for (half = fix_raw, i = 0; i < 2; i++, half += fix_raw_len / 2) {
		z_stream zs;

		memset(&zs, 0, sizeof(zs));
		deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
		zs.next_in = half;
		zs.avail_in = (uInt)(fix_raw_len / 2);
		zs.next_out = fix_gz + fix_gz_len;
		zs.avail_out = (uInt)compressBound(fix_raw_len);
		deflate(&zs, Z_FINISH);
		n = zs.total_out;
		fix_gz_len += n;
		deflateEnd(&zs);
	}
	env = env_new(&st);
	fd = fuzz_memfd(fix_gz, fix_gz_len);
	read_all(env, fd, fix_raw, fix_raw_len);
	close(fd);
	source_env_free(env);
	if (!st.saved)
		abort();
	fix_blob = st.saved;
	fix_blob_len = st.saved_len;
}

static void tampered(const uint8_t *data, size_t size)
{
	struct store st = { 0 };
	unsigned char *blob;
	size_t len, i;
	struct source_env *env;
	int fd;

	if (size && data[0] == 0xff) {
		blob = malloc(size);
		memcpy(blob, data + 1, size - 1);
		len = size - 1;
	} else {
		blob = malloc(fix_blob_len);
		memcpy(blob, fix_blob, fix_blob_len);
		len = fix_blob_len;
		for (i = 0; i + 5 <= size; i += 5) {
			uint32_t at;

			memcpy(&at, data + i, 4);
			blob[at % len] = data[i + 4];
		}
	}
	st.give = blob;
	st.give_len = len;
	env = env_new(&st);
	fd = fuzz_memfd(fix_gz, fix_gz_len);
	if (fd >= 0) {
		read_all(env, fd, fix_raw, fix_raw_len);
		close(fd);
	}
	source_env_free(env);
	free(st.saved);
	free(blob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store st = { 0 };
	struct source_env *env;
	unsigned char *want;
	size_t wantlen;
	int fd;

	if (!fix_blob)
		fixture();
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		tampered(data + 1, size - 1);
		return 0;
	}
	if (!(want = oracle(data + 1, size - 1, &wantlen)))
		return 0;
	env = env_new(&st);
	if ((fd = fuzz_memfd(data + 1, size - 1)) >= 0) {
		read_all(env, fd, want, wantlen);
		close(fd);
	}
	source_env_free(env);
	free(st.saved);
	free(want);
	return 0;
}
