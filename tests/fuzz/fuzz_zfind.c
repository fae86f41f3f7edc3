/*
 * fuzz_zfind.c - libFuzzer target for the frame and block finders of
 * core/io/codecs/zxz.c, zzstd.c and zbz2.c (and ztable.c's table, zsource.c's
 * and zseq.c's reads around them).
 *
 * Feeds: the input as a file (memfd), opened through a source_env with
 * the smallest span (64 KiB) and a 1 MiB span cache, so the codec its
 * first bytes name runs its pass (xz: streams, blocks, index, footer;
 * zstd: frames, skippable frames; bzip2: magics at any bit, realigned
 * blocks).  Then reads the uncompressed bytes (at most FUZZ_OUT), first
 * backwards span by span (the decoder kept between reads, read-ahead
 * caching), then forwards.  Checks: a read gives its bytes or -EIO,
 * never another error; two reads of the same bytes agree; where the
 * library's own one-shot decoder (lzma_stream_buffer_decode,
 * ZSTD_decompress, BZ2_bzBuffToBuffDecompress) takes the whole input,
 * every byte read equals its output.  Seeds: tests/fuzz/seeds.py (small
 * files made by the real tools, multi-block, multi-frame and
 * multi-stream).
 */
#include "fuzz.h"
#include "io/codecs/zsource.h"

#include <bzlib.h>
#include <lzma.h>
#include <zstd.h>

#define FUZZ_OUT  (4u << 20)   /* the uncompressed bytes looked at */
#define CHUNK     (64u << 10)

/* The library's own decoding of the whole input, when it takes it. */
static unsigned char *oracle(const uint8_t *in, size_t n, size_t *len)
{
	unsigned char *out = malloc(FUZZ_OUT);
	uint64_t mem = 256u << 20;
	size_t ip = 0, op = 0, r;
	unsigned bl = FUZZ_OUT;

	if (!out)
		return NULL;
	*len = 0;
	if (n >= 6 && !memcmp(in, "\xfd" "7zXZ", 5)) {
		if (lzma_stream_buffer_decode(&mem, LZMA_CONCATENATED, NULL, in, &ip,
					      n, out, &op, FUZZ_OUT) == LZMA_OK &&
		    ip == n)
			*len = op;
	} else if (n >= 4 && (in[0] == 0x28 || (in[0] & 0xf0) == 0x50)) {
		r = ZSTD_decompress(out, FUZZ_OUT, in, n);
		if (!ZSTD_isError(r))
			*len = r;
	} else if (n >= 4 && !memcmp(in, "BZh", 3)) {	/* its first stream */
		if (BZ2_bzBuffToBuffDecompress((char *)out, &bl, (char *)in,
					       (unsigned)n, 0, 0) == BZ_OK)
			*len = bl;
	}
	if (!*len) {
		free(out);
		return NULL;
	}
	return out;
}

/* Reads CHUNK at off twice; checks both agree and match the oracle. */
static void read_at(struct source *s, uint64_t off, const unsigned char *want,
		    size_t wlen, unsigned char *a, unsigned char *b)
{
	ssize_t ga = source_pread(s, a, CHUNK, off);
	ssize_t gb = source_pread(s, b, CHUNK, off);

	FUZZ_CHECK(ga == -EIO || ga >= 0);
	FUZZ_CHECK(gb == -EIO || gb >= 0);
	if (ga > 0 && gb > 0)
		FUZZ_CHECK(ga == gb && !memcmp(a, b, (size_t)ga));
	if (want && ga > 0 && off < wlen)
		FUZZ_CHECK(!memcmp(a, want + off, wlen - off < (size_t)ga ?
				   wlen - off : (size_t)ga));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct source_config cfg = { .span_bytes = 64u << 10,
				     .cache_bytes = 1u << 20 };
	struct source_env *env = NULL;
	struct source *s = NULL;
	unsigned char *want, *a = malloc(CHUNK), *b = malloc(CHUNK);
	size_t wlen = 0;
	uint64_t usize, off;
	char path[64];
	int fd = fuzz_memfd(data, size);

	want = oracle(data, size, &wlen);
	fuzz_fd_path(fd, path, sizeof(path));
	if (a && b && source_env_new(&cfg, &env) == 0 &&
	    source_open(env, path, &s) == 0) {
		usize = source_stamp(s)->size;
		usize = usize < FUZZ_OUT ? usize : FUZZ_OUT;
		for (off = usize - usize % CHUNK; off + CHUNK > CHUNK; off -= CHUNK)
			read_at(s, off, want, wlen, a, b);
		for (off = 0; off < usize; off += CHUNK)
			read_at(s, off, want, wlen, a, b);
		source_close(s);
	}
	if (env)
		source_env_free(env);
	close(fd);
	free(want);
	free(a);
	free(b);
	return 0;
}
