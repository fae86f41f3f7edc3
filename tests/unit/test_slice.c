/*
 * test_slice.c - the slice source (core/io/slice.h): a range of a parent
 * source, read clipped to the range through the parent; its stamp and
 * change check follow the parent's; a range holding a gzip stream reads
 * as the stream's uncompressed bytes (zlib's gzip output as the oracle)
 * when its name ends in a compressed suffix, and as its raw bytes when not.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "io/slice.h"
#include "io/codecs/zsource.h"
#include "opensrc.h"

static char path[] = "/tmp/sfs-slice-XXXXXX";

/* A file: 1000 bytes of 'a', then `mid` (n bytes), then 1000 of 'z'. */
static void write_file(const void *mid, size_t n)
{
	char pad[1000];
	FILE *f;
	int fd;

	strcpy(path, "/tmp/sfs-slice-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	f = fdopen(fd, "wb");
	memset(pad, 'a', sizeof(pad));
	fwrite(pad, 1, sizeof(pad), f);
	fwrite(mid, 1, n, f);
	memset(pad, 'z', sizeof(pad));
	fwrite(pad, 1, sizeof(pad), f);
	cr_assert_eq(fclose(f), 0);
}

Test(slice, reads_its_range_clipped_through_the_parent)
{
	struct source *p, *s;
	char buf[64];
	int fd;
	uint64_t base;

	write_file("0123456789", 10);
	p = open_src(path);
	cr_assert_eq(source_open_slice(p, 1000, 10, "digits", &s), 0);
	cr_expect_str_eq(source_name(s), "digits");
	cr_expect_eq(source_stamp(s)->size, 10);
	cr_expect_eq(source_stamp(s)->mtime_ns, source_stamp(p)->mtime_ns);
	cr_expect_eq(source_pread(s, buf, sizeof(buf), 0), 10);
	cr_expect_eq(memcmp(buf, "0123456789", 10), 0);
	cr_expect_eq(source_pread(s, buf, 4, 7), 3);
	cr_expect_eq(memcmp(buf, "789", 3), 0);
	cr_expect_eq(source_pread(s, buf, 4, 10), 0);
	cr_expect_eq(source_pread(s, buf, 4, 1u << 30), 0);
	cr_expect_eq(source_fd(s, &fd, &base), -ENOTSUP);
	cr_expect_eq(source_check(s), 0);
	cr_expect_not(source_is_decompressed(s));
	source_close(s);
	/* a range past the parent's end */
	cr_expect_eq(source_open_slice(p, 2000, 11, "x", &s), -EINVAL);
	cr_expect_eq(source_open_slice(p, 2011, 0, "x", &s), -EINVAL);
	source_close(p);
	unlink(path);
}

Test(slice, a_change_of_the_parent_is_one_of_the_slice)
{
	struct source *p, *s;
	char buf[4];
	FILE *f;

	write_file("0123456789", 10);
	p = open_src(path);
	cr_assert_eq(source_open_slice(p, 1000, 10, "digits", &s), 0);
	f = fopen(path, "ab");
	fputs("more", f);
	fclose(f);
	cr_expect_eq(source_check(s), -EIO);
	cr_expect_eq(source_pread(s, buf, 4, 0), -EIO);
	source_close(s);
	source_close(p);
	unlink(path);
}

/* gzip (zlib's, windowBits 31) of n bytes of a pattern, into out. */
static size_t gzip_of(const unsigned char *in, size_t n, unsigned char *out,
		      size_t cap)
{
	z_stream z = { 0 };

	cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	deflateEnd(&z);
	return z.total_out;
}

Test(slice, a_compressed_range_reads_uncompressed_when_named_so)
{
	static unsigned char plain[200000], gz[250000], buf[4096];
	struct source_env *env;
	struct source *p, *s;
	size_t n, i;

	for (i = 0; i < sizeof(plain); i++)
		plain[i] = (unsigned char)(i * 7 + i / 1000);
	n = gzip_of(plain, sizeof(plain), gz, sizeof(gz));
	write_file(gz, n);
	cr_assert_eq(source_env_new(NULL, &env), 0);
	cr_assert_eq(source_open(env, path, &p), 0);
	cr_assert_eq(source_open_slice(p, 1000, n, "outer@1000:in.tar.gz", &s), 0);
	cr_assert(source_is_decompressed(s));
	cr_expect_eq(source_stamp(s)->size, sizeof(plain));
	for (i = 0; i < 8; i++) {
		uint64_t off = (uint64_t)i * 24999;

		cr_assert_eq(source_pread(s, buf, sizeof(buf), off), sizeof(buf));
		cr_expect_eq(memcmp(buf, plain + off, sizeof(buf)), 0, "at %llu",
			     (unsigned long long)off);
	}
	source_close(s);
	/* not named as compressed: its bytes as they are */
	cr_assert_eq(source_open_slice(p, 1000, n, "outer@1000:in.bin", &s), 0);
	cr_expect_not(source_is_decompressed(s));
	cr_expect_eq(source_pread(s, buf, 2, 0), 2);
	cr_expect(buf[0] == 0x1f && buf[1] == 0x8b);
	source_close(s);
	source_close(p);
	source_env_free(env);
	unlink(path);
}
