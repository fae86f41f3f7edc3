/*
 * test_zwhole.c - zsource_inflate_whole (core/io/codecs/zsource.h), the
 * inflater of small zip members read whole, under both engines (ISA-L's,
 * the default when the build has it, and SAMPLEFS_INFLATE=zlib): a raw
 * deflate stream made here by zlib's deflate, between other bytes in a
 * file (as a member sits between others in a zip), gives back the bytes it
 * was made from; declared sizes and compressed sizes that lie, truncation
 * and corrupt data give -EBADMSG with the phrase zipread.c says.  The
 * engine in use shows in the corrupt case's phrase (zlib's own message,
 * or ISA-L's fixed one).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "io/source.h"
#include "io/codecs/zsource.h"

#define N    (300u << 10)	/* past the 64 KiB first buffer: it grows */
#define PAD  1000u		/* bytes before the stream (another member) */

static char dir[] = "/tmp/sfs_zwtest.XXXXXX";
static char path[128];
static unsigned char *data, *comp;
static size_t clen;

/* Text-like lines with runs of random bytes. */
static void make_data(void)
{
	uint64_t x = 12345;
	size_t i;

	cr_assert(data = malloc(N));
	for (i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		data[i] = (i >> 12) % 3 == 0 ? (unsigned char)(x >> 56) :
			  (unsigned char)("a member of a zip\n"[i % 18]);
	}
}

/* data raw-deflated (no header, as zip stores it) by zlib */
static void make_comp(void)
{
	z_stream zs;

	memset(&zs, 0, sizeof(zs));
	cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
	clen = deflateBound(&zs, N);
	cr_assert(comp = malloc(clen));
	zs.next_in = data;
	zs.avail_in = N;
	zs.next_out = comp;
	zs.avail_out = (uInt)clen;
	cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	clen = clen - zs.avail_out;
	deflateEnd(&zs);
}

/* The file: PAD bytes, the stream (or `stream`, n bytes), then the start
 * of the same stream again (what a next member's bytes could be: a reader
 * going past the member's end would decode on). */
static void write_file(const unsigned char *stream, size_t n)
{
	unsigned char pad[PAD];
	FILE *f = fopen(path, "wb");

	memset(pad, 0x5a, sizeof(pad));
	cr_assert(f);
	cr_assert_eq(fwrite(pad, 1, PAD, f), PAD);
	cr_assert_eq(fwrite(stream, 1, n, f), n);
	cr_assert_eq(fwrite(comp, 1, clen, f), clen);
	cr_assert_eq(fclose(f), 0);
}

static void setup(void)
{
	strcpy(dir, "/tmp/sfs_zwtest.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.zip", dir);
	make_data();
	make_comp();
	write_file(comp, clen);
}

static void teardown(void)
{
	char cmd[160];

	free(data);
	free(comp);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(zwhole, .init = setup, .fini = teardown);

/* Inflates csize bytes at PAD declaring usize, with engine `eng` (NULL:
 * the default): the rc, *why, and the bytes (freed unless asked). */
static int inflate_with(const char *eng, uint64_t csize, uint64_t usize,
			uint8_t **out, const char **why)
{
	struct source_config cfg = { 0 };
	struct source_env *env;
	struct source *s;
	uint8_t *buf = NULL;
	int rc;

	if (eng)
		setenv("SAMPLEFS_INFLATE", eng, 1);
	else
		unsetenv("SAMPLEFS_INFLATE");
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	unsetenv("SAMPLEFS_INFLATE");
	cr_assert_eq(source_open(env, path, &s), 0);
	*why = NULL;
	rc = zsource_inflate_whole(s, PAD, csize, usize, &buf, why);
	cr_assert(rc == 0 ? buf != NULL : buf == NULL, "rc %d, buffer %p", rc, buf);
	if (out)
		*out = buf;
	else
		free(buf);
	source_close(s);
	source_env_free(env);
	return rc;
}

static const char *const engines[] = { NULL, "zlib" };

static void expect_bad(uint64_t csize, uint64_t usize, const char *phrase)
{
	const char *why;
	size_t k;
	int rc;

	for (k = 0; k < 2; k++) {
		rc = inflate_with(engines[k], csize, usize, NULL, &why);
		cr_expect_eq(rc, -EBADMSG, "%s: rc %d (%s), expected %s",
			     engines[k] ? engines[k] : "default", rc, why, phrase);
		cr_expect(why && strcmp(why, phrase) == 0, "%s: said \"%s\", expected \"%s\"",
			  engines[k] ? engines[k] : "default", why, phrase);
	}
}

Test(zwhole, good_member_gives_its_bytes)
{
	const char *why;
	uint8_t *out;
	size_t k;

	for (k = 0; k < 2; k++) {
		cr_assert_eq(inflate_with(engines[k], clen, N, &out, &why), 0,
			     "%s: %s", engines[k] ? engines[k] : "default", why);
		cr_expect(memcmp(out, data, N) == 0, "%s: other bytes",
			  engines[k] ? engines[k] : "default");
		free(out);
	}
}

Test(zwhole, empty_stream)
{
	static const unsigned char empty[] = { 0x03, 0x00 };	/* deflate of "" */
	const char *why;
	uint8_t *out;
	size_t k;

	write_file(empty, sizeof(empty));
	for (k = 0; k < 2; k++) {
		cr_assert_eq(inflate_with(engines[k], sizeof(empty), 0, &out, &why), 0,
			     "%s", why);
		free(out);
	}
}

Test(zwhole, stream_longer_than_declared)
{
	expect_bad(clen, N - 1, "decodes to more than its declared size");
}

Test(zwhole, stream_shorter_than_declared)
{
	expect_bad(clen, N + 1, "stream ends before the declared size");
}

/* The compressed size says less than the stream is: the bytes past it
 * (here the rest of the stream: a lying directory) are never read. */
Test(zwhole, compressed_size_cuts_the_stream)
{
	expect_bad(clen - 10, N, "stream is truncated");
}

Test(zwhole, compressed_size_past_the_stream)
{
	expect_bad(clen + 5, N, "compressed size is larger than its stream");
}

/* A first block of type 3 (reserved): corrupt from its first byte. */
Test(zwhole, corrupt_stream)
{
	const char *why;
	int rc;

	comp[0] = (unsigned char)(comp[0] | 0x06);
	write_file(comp, clen);
	rc = inflate_with("zlib", clen, N, NULL, &why);
	cr_expect_eq(rc, -EBADMSG);
	cr_expect(why && strcmp(why, "invalid block type") == 0, "zlib said %s", why);
	rc = inflate_with(NULL, clen, N, NULL, &why);
	cr_expect_eq(rc, -EBADMSG);
#ifdef HAVE_ISAL
	cr_expect(why && strcmp(why, "invalid deflate data") == 0, "ISA-L said %s", why);
#else
	cr_expect(why && strcmp(why, "invalid block type") == 0, "zlib said %s", why);
#endif
}

/* Past the end of the file: truncated, not a crash or other bytes. */
Test(zwhole, file_ends_inside_the_stream)
{
	write_file(comp, clen / 2);
	cr_assert_eq(truncate(path, (off_t)(PAD + clen / 2)), 0);
	expect_bad(clen, N, "stream is truncated");
}
