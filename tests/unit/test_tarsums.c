/*
 * test_tarsums.c - the members' CRC32C of a tar index (-o checksums,
 * index/tarindex/tarindex_sums.c): crc32c against the standard's check
 * value; a tar written here, indexed with checksums, reads its members'
 * bytes whole and in ranges; the file changed in place after the build
 * gives -EIO for the changed member (a large one only in the 64 KiB piece
 * that changed) and the right bytes elsewhere; without checksums the
 * index has none and the changed bytes are served (the damage is real).
 * Oracle: the bytes written.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/crc.h"
#include "index/index.h"
#include "index/tarindex/tarindex.h"
#include "capture.h"
#include "tarhdr.h"

Test(tarsums, crc32c_check_value_and_chaining)
{
	static const char nine[] = "123456789";
	static char big[3 << 20];
	uint32_t whole, part;
	size_t i;

	cr_assert_eq(crc32c(0, nine, 9), 0xe3069283u);
	cr_assert_eq(crc32c(crc32c(0, nine, 4), nine + 4, 5), 0xe3069283u);
	cr_assert_eq(crc32c(0, "", 0), 0u);
	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 2654435761u >> 13);
	whole = crc32c(0, big, sizeof(big));
	part = crc32c(crc32c(0, big, 12345), big + 12345, sizeof(big) - 12345);
	cr_assert_eq(whole, part);
}

/* ------------------------------------------------------------ a tar */

#define NMEM 4
static const char *const names[NMEM] = { "small.bin", "mid.bin", "big.bin", "empty" };
static const size_t sizes[NMEM] = { 1000, 300000, (3u << 20) + 123, 0 };

struct tarfile {
	char path[64];
	char *data[NMEM];
	uint64_t at[NMEM];      /* each member's data offset */
};

static void header(FILE *f, const char *name, char type, size_t size,
		   const char *link)
{
	unsigned char h[TARHDR_BLOCK];

	tarhdr_fill(h, name, type, size, link, TARHDR_POSIX);
	cr_assert_eq(fwrite(h, 1, sizeof(h), f), sizeof(h));
}

/* The members above, then a hard link "link.bin" to mid.bin. */
static void write_tar(struct tarfile *t)
{
	static const char zero[1024];
	uint64_t seed = 28;
	FILE *f;
	int fd, k;

	strcpy(t->path, "/tmp/sfs-tarsums-XXXXXX");
	cr_assert((fd = mkstemp(t->path)) >= 0);
	cr_assert((f = fdopen(fd, "wb")));
	for (k = 0; k < NMEM; k++) {
		size_t i;

		cr_assert((t->data[k] = malloc(sizes[k] + 1)));
		for (i = 0; i < sizes[k]; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			t->data[k][i] = (char)(seed >> 33);
		}
		header(f, names[k], '0', sizes[k], NULL);
		t->at[k] = (uint64_t)ftell(f);
		cr_assert_eq(fwrite(t->data[k], 1, sizes[k], f), sizes[k]);
		cr_assert_eq(fwrite(zero, 1, (512 - sizes[k] % 512) % 512, f),
			     (512 - sizes[k] % 512) % 512);
	}
	header(f, "link.bin", '1', 0, "mid.bin");
	cr_assert_eq(fwrite(zero, 1, sizeof(zero), f), sizeof(zero));
	cr_assert_eq(fclose(f), 0);
}

/* Inverts the byte at `at` of the file, in place, its mtime put back (as
 * `touch -r`): the source's stamp does not tell. */
static void flip(const struct tarfile *t, uint64_t at)
{
	int fd = open(t->path, O_RDWR);
	struct timespec ts[2];
	unsigned char b;
	struct stat st;

	cr_assert(fd >= 0 && fstat(fd, &st) == 0);
	cr_assert_eq(pread(fd, &b, 1, (off_t)at), 1);
	b ^= 0xff;
	cr_assert_eq(pwrite(fd, &b, 1, (off_t)at), 1);
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	cr_assert_eq(futimens(fd, ts), 0);
	close(fd);
}

struct built {
	char path[64];
	struct index_map m;
	struct tarindex t;
	struct tarindex_source src;
};

static void build(struct built *b, const struct tarfile *tf, int checksums)
{
	struct tarindex_build_opts bo = { .quiet = 1, .checksums = checksums };
	struct index_writer *w;
	struct index_fp fp;
	char why[256];
	int fd;

	b->src = (struct tarindex_source){ tf->path, "", NULL };
	cr_assert_eq(tarindex_sources_open(NULL, &b->src, 1), 0);
	strcpy(b->path, "/tmp/sfs-tarsums-idx-XXXXXX");
	cr_assert((fd = mkstemp(b->path)) >= 0);
	close(fd);
	index_fp_init(&fp, "tar");
	cr_assert_eq(tarindex_fp_add(&fp, &b->src, 1, 0), 0);
	cr_assert_eq(index_writer_open(&w, b->path), 0);
	cr_assert_eq(tarindex_build(w, 'A', &b->src, 1, &bo), 0);
	cr_assert_eq(index_writer_commit(w, &fp), 0);
	cr_assert_eq(index_map_open(&b->m, b->path, &fp, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(tarindex_open(&b->t, &b->m, 'A', &b->src, 1), 0);
}

static void unbuild(struct built *b)
{
	tarindex_close(&b->t);
	index_map_close(&b->m);
	unlink(b->path);
	tarindex_sources_close(&b->src, 1);
}

static uint32_t node(const struct built *b, const char *name)
{
	int64_t i = tarindex_find(&b->t, name);

	cr_assert_geq(i, 0, "%s", name);
	return (uint32_t)i;
}

/* Reads [off, off + n) of member k: the bytes written, or the error. */
static ssize_t read_cmp(const struct built *b, const struct tarfile *tf,
			const char *name, int k, uint64_t off, size_t n)
{
	char *buf = malloc(n + 1);
	ssize_t got;

	cr_assert(buf);
	got = tarindex_pread(&b->t, node(b, name), buf, n, off);
	if (got >= 0) {
		cr_assert_eq((size_t)got, off + n <= sizes[k] ? n : sizes[k] - off);
		cr_assert(!memcmp(buf, tf->data[k] + off, (size_t)got),
			  "%s: bytes %llu+%zu differ", name, (unsigned long long)off, n);
	}
	free(buf);
	return got;
}

Test(tarsums, members_read_checked_whole_and_in_ranges)
{
	struct tarfile tf;
	struct built b;
	int k;

	write_tar(&tf);
	build(&b, &tf, 1);
	cr_assert_eq(tarindex_nsummed(&b.t), NMEM + 1, "every file and the link");
	for (k = 0; k < NMEM; k++) {
		cr_assert_eq(tarindex_in_place(&b.t, node(&b, names[k])), 0,
			     "a checked member is never spliced");
		cr_assert_geq(read_cmp(&b, &tf, names[k], k, 0, sizes[k] + 10), 0);
		if (sizes[k] > 70000) {
			cr_assert_geq(read_cmp(&b, &tf, names[k], k, 65000, 70000), 0);
			cr_assert_geq(read_cmp(&b, &tf, names[k], k, sizes[k] - 5, 5), 0);
		}
	}
	cr_assert_geq(read_cmp(&b, &tf, "link.bin", 1, 100, 200000), 0);
	unbuild(&b);
	for (k = 0; k < NMEM; k++)
		free(tf.data[k]);
	unlink(tf.path);
}

Test(tarsums, a_member_checked_whole_serves_its_next_ranged_reads)
{
	struct tarfile tf;
	struct built b;
	int k;

	write_tar(&tf);
	build(&b, &tf, 1);
	/* a ranged read of mid.bin reads and checks it whole, and keeps it */
	cr_assert_geq(read_cmp(&b, &tf, "mid.bin", 1, 0, 131072), 0);
	flip(&tf, tf.at[1] + 200000);
	/* its next ranged reads take the checked copy: the right bytes */
	cr_assert_geq(read_cmp(&b, &tf, "mid.bin", 1, 131072, 131072), 0);
	cr_assert_geq(read_cmp(&b, &tf, "mid.bin", 1, 262144, 300000 - 262144), 0);
	/* a whole read reads the file again: the change is seen */
	cr_assert_eq(read_cmp(&b, &tf, "mid.bin", 1, 0, 300000), -EIO);
	unbuild(&b);
	for (k = 0; k < NMEM; k++)
		free(tf.data[k]);
	unlink(tf.path);
}

Test(tarsums, changed_bytes_give_eio_where_they_changed)
{
	struct tarfile tf;
	struct built b, plain;
	struct capture cap;
	char *said;
	uint64_t big_at = 5 * 65536 + 100;	/* in the big member's piece 5 */
	int k;

	write_tar(&tf);
	build(&b, &tf, 1);
	build(&plain, &tf, 0);
	cr_assert_null(plain.t.sums, "an index built without checksums has none");
	flip(&tf, tf.at[0] + 999);
	flip(&tf, tf.at[1] + 150000);
	flip(&tf, tf.at[2] + big_at);
	/* a local file has no other copy: EIO at once */
	capture_start(&cap);
	cr_assert_eq(read_cmp(&b, &tf, "small.bin", 0, 0, 1000), -EIO);
	cr_assert_eq(read_cmp(&b, &tf, "mid.bin", 1, 0, 300000), -EIO);
	cr_assert_eq(read_cmp(&b, &tf, "mid.bin", 1, 10, 20), -EIO,
		     "a ranged read of a member up to 1 MiB checks it whole");
	cr_assert_eq(read_cmp(&b, &tf, "link.bin", 1, 0, 4096), -EIO);
	cr_assert_eq(read_cmp(&b, &tf, "big.bin", 2, big_at - 3, 6), -EIO);
	cr_assert_eq(read_cmp(&b, &tf, "big.bin", 2, 0, sizes[2]), -EIO);
	/* the big member's other pieces, and the members not changed */
	cr_assert_geq(read_cmp(&b, &tf, "big.bin", 2, 0, 5 * 65536), 0);
	cr_assert_geq(read_cmp(&b, &tf, "big.bin", 2, 6 * 65536, 1 << 20), 0);
	cr_assert_geq(read_cmp(&b, &tf, "big.bin", 2, sizes[2] - 100, 100), 0);
	cr_assert_geq(read_cmp(&b, &tf, "empty", 3, 0, 10), 0);
	said = capture_end(&cap);
	cr_assert(strstr(said, "member 'mid.bin' (data at offset"),
		  "the error names the member: %s", said);
	cr_assert(strstr(said, tf.path), "and the source: %s", said);
	cr_assert(strstr(said, "bytes 327680-393215 fail their checksum"),
		  "and the piece of the large one: %s", said);
	free(said);
	/* without checksums the changed bytes go out (the damage is real) */
	{
		char c;

		cr_assert_eq(tarindex_pread(&plain.t, node(&plain, "mid.bin"), &c, 1,
					    150000), 1);
		cr_assert_eq(c, (char)~tf.data[1][150000]);
	}
	unbuild(&plain);
	unbuild(&b);
	for (k = 0; k < NMEM; k++)
		free(tf.data[k]);
	unlink(tf.path);
}
