/*
 * test_zip.c - core/formats/zip.c against Python's zipfile: for each archive
 * make_npz.py wrote (np.savez and savez_compressed, zip64 everywhere, data
 * descriptors, an archive comment, empty members) the directory must match
 * zipfile's infolist and every member zipfile's read of it; the "zipbad"
 * archives (truncated, corrupt, CRC mismatch, bombs, absurd counts) must
 * fail with the errno the manifest names; and any truncation of a good
 * archive must fail or return exactly zipfile's bytes.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/zip.h"
#include "io/source.h"

#define MAXMEMBERS 8
#define FIXTURE_SUBDIR "qd"
#include "fixture.h"
#include "capture.h"
#include "bounded.h"

/* One archive from the manifest: "zip FILE COUNT" and its member lines. */
struct zcase {
	char file[128];
	int count;
	struct {
		char name[64], raw[160];
		unsigned method;
		uint64_t csize, usize, crc, off;
	} m[MAXMEMBERS];
};

/* zip_open of the file at path, through a source of its own (closed with
 * the archive by close_zip) */
static int open_zip(struct zip_archive **za, const char *path, struct source **src)
{
	int rc = source_open(NULL, path, src);

	*za = NULL;
	if (rc)
		return rc;
	rc = zip_open(za, *src);
	if (rc) {
		source_close(*src);
		*src = NULL;
	}
	return rc;
}

static void close_zip(struct zip_archive *za, struct source *src)
{
	zip_close(za);
	source_close(src);
}

/* Reads every zip case of the manifest; returns how many. */
static int load_cases(struct zcase *cases, int max)
{
	char *path = fixture_path("manifest.txt");
	FILE *f = fopen(path, "r");
	char buf[1024];
	int n = 0, k = 0;

	cr_assert(f);
	while (fgets(buf, sizeof(buf), f)) {
		struct zcase *c = &cases[n - 1];

		if (!strncmp(buf, "zip ", 4)) {
			cr_assert(n < max);
			c = &cases[n++];
			cr_assert(sscanf(buf, "zip %127s %d", c->file, &c->count) == 2);
			cr_assert(c->count <= MAXMEMBERS);
			k = 0;
		} else if (!strncmp(buf, "member ", 7)) {
			cr_assert(n > 0 && k < c->count);
			cr_assert(sscanf(buf, "member %63s %u %lu %lu %lu %lu %159s",
					 c->m[k].name, &c->m[k].method, &c->m[k].csize,
					 &c->m[k].usize, &c->m[k].crc, &c->m[k].off,
					 c->m[k].raw) == 7, "bad line %s", buf);
			k++;
		}
	}
	fclose(f);
	free(path);
	return n;
}

static void check_archive(const struct zcase *c)
{
	struct zip_archive *za;
	struct source *src;
	char *path = fixture_path(c->file);
	int rc = open_zip(&za, path, &src);

	cr_assert(rc == 0, "%s: zip_open %d", c->file, rc);
	cr_assert(zip_count(za) == (size_t)c->count, "%s: %zu members", c->file,
		  zip_count(za));
	cr_expect(zip_member_at(za, (size_t)c->count) == NULL);
	for (int k = 0; k < c->count; k++) {
		const struct zip_member *m = zip_member_at(za, (size_t)k);
		uint8_t *data, *raw;
		size_t len, rawlen;

		cr_assert(!strcmp(m->name, c->m[k].name), "%s: member %d is %s",
			  c->file, k, m->name);
		cr_expect(zip_find(za, m->name) == m, "%s: zip_find(%s)", c->file, m->name);
		cr_expect(m->method == c->m[k].method && m->csize == c->m[k].csize &&
			  m->usize == c->m[k].usize && m->crc32 == c->m[k].crc &&
			  m->header_off == c->m[k].off,
			  "%s: %s: directory fields differ from zipfile's", c->file, m->name);
		raw = slurp(c->m[k].raw, &rawlen);
		rc = zip_read_member(za, m, m->usize, &data, &len);
		cr_assert(rc == 0, "%s: %s: read %d", c->file, m->name, rc);
		cr_assert(len == rawlen && memcmp(data, raw, len) == 0,
			  "%s: %s: bytes differ from zipfile's", c->file, m->name);
		free(data);
		if (m->usize > 0) {
			rc = zip_read_member(za, m, m->usize - 1, &data, &len);
			cr_expect(rc == -EFBIG && data == NULL, "%s: %s: limit: %d",
				  c->file, m->name, rc);
		}
		free(raw);
	}
	cr_expect(zip_find(za, "no-such-member.npy") == NULL);
	close_zip(za, src);
	free(path);
}

Test(zip, directory_and_data_match_zipfile)
{
	static struct zcase cases[32];
	int n = load_cases(cases, 32);

	/* py2/p3 x stored/deflated, np.savez x2, zip64 x2, descriptor, comment */
	cr_expect(n == 10, "%d zip cases", n);
	for (int i = 0; i < n; i++)
		check_archive(&cases[i]);
}

/* ---- bad archives ----------------------------------------------------- */

static int errno_of(const char *name)
{
	if (!strcmp(name, "EINVAL"))
		return EINVAL;
	if (!strcmp(name, "EIO"))
		return EIO;
	if (!strcmp(name, "EFBIG"))
		return EFBIG;
	cr_assert_fail("unknown errno %s", name);
	return 0;
}

/* zipbad FILE ERRNO MEMBER WHY... */
static void check_bad(const char *file, int err, const char *member)
{
	struct zip_archive *za = (struct zip_archive *)1;
	const struct zip_member *m;
	char *path = fixture_path(file);
	uint8_t *data = (uint8_t *)1;
	size_t len = 1;
	struct source *src;
	int rc = open_zip(&za, path, &src);

	if (!strcmp(member, "-")) {
		cr_expect(rc == -err && za == NULL, "%s: zip_open %d, expected %d",
			  file, rc, -err);
		if (rc == 0)
			close_zip(za, src);
		free(path);
		return;
	}
	cr_assert(rc == 0, "%s: zip_open %d", file, rc);
	m = zip_find(za, member);
	cr_assert(m, "%s: no %s", file, member);
	rc = zip_read_member(za, m, 1 << 20, &data, &len);
	cr_expect(rc == -err && data == NULL && len == 0,
		  "%s: read %d, expected %d", file, rc, -err);
	close_zip(za, src);
	free(path);
}

Test(zip, bad_archives_fail_with_the_right_errno)
{
	char *path = fixture_path("manifest.txt");
	FILE *f = fopen(path, "r");
	char buf[1024], file[128], err[16], member[64];
	int n = 0;

	cr_assert(f);
	while (fgets(buf, sizeof(buf), f)) {
		if (sscanf(buf, "zipbad %127s %15s %63s", file, err, member) != 3)
			continue;
		check_bad(file, errno_of(err), member);
		n++;
	}
	fclose(f);
	free(path);
	cr_expect(n >= 20, "%d bad archives", n);
}

/* ---- truncations ------------------------------------------------------ */

/* Every length of a small archive (and ~300 of a larger one): zip_open
 * fails, or each member read fails or gives zipfile's exact bytes. */
static void check_truncations(const struct zcase *c, size_t step)
{
	size_t len, cut;
	uint8_t *whole = slurp(c->file, &len);
	/* in memory: truncating a disk file thousands of times is slow */
	int fd = memfd_create("test_zip", 0);
	char tmpl[64];
	uint8_t *raw[MAXMEMBERS];
	size_t rawlen[MAXMEMBERS];

	cr_assert(fd >= 0);
	snprintf(tmpl, sizeof(tmpl), "/proc/self/fd/%d", fd);
	for (int k = 0; k < c->count; k++)
		raw[k] = slurp(c->m[k].raw, &rawlen[k]);
	for (cut = 0; cut < len; cut += step) {
		struct zip_archive *za;
		struct source *src;

		cr_assert(ftruncate(fd, 0) == 0 && pwrite(fd, whole, cut, 0) == (ssize_t)cut);
		if (open_zip(&za, tmpl, &src) != 0)
			continue;
		for (size_t k = 0; k < zip_count(za); k++) {
			const struct zip_member *m = zip_member_at(za, k);
			uint8_t *data;
			size_t dlen;

			if (zip_read_member(za, m, 1 << 24, &data, &dlen) != 0)
				continue;
			cr_assert(k < (size_t)c->count && dlen == rawlen[k] &&
				  !memcmp(data, raw[k], dlen),
				  "%s cut at %zu: %s read wrong bytes", c->file, cut, m->name);
			free(data);
		}
		close_zip(za, src);
	}
	for (int k = 0; k < c->count; k++)
		free(raw[k]);
	close(fd);
	free(whole);
}

Test(zip, truncated_archives_never_give_wrong_bytes)
{
	static struct zcase cases[32];
	int n = load_cases(cases, 32), fd = open("/dev/null", O_WRONLY);

	dup2(fd, 2);    /* many (correct) error messages */
	close(fd);
	for (int i = 0; i < n; i++) {
		if (!strcmp(cases[i].file, "comment.zip"))
			check_truncations(&cases[i], 1);
		if (!strcmp(cases[i].file, "zip64_deflated.npz"))
			check_truncations(&cases[i], 997);
	}
}

/* Every byte of the directory and end records (from the first central
 * entry on, comment excluded) set to 0x00 and to 0xff: the archive is
 * refused, or every member read fails or gives zipfile's exact bytes. */
static void check_damage(const struct zcase *c)
{
	size_t len, at, cd, end;
	uint8_t *whole = slurp(c->file, &len);
	int fd = memfd_create("test_zip", 0);
	char path[64];
	uint8_t *raw[MAXMEMBERS];
	size_t rawlen[MAXMEMBERS];

	cr_assert(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int k = 0; k < c->count; k++)
		raw[k] = slurp(c->m[k].raw, &rawlen[k]);
	for (cd = 0; cd + 4 <= len; cd++)       /* the first central entry */
		if (!memcmp(whole + cd, "PK\1\2", 4))
			break;
	for (end = len - 22; end > 0 && memcmp(whole + end, "PK\5\6", 4); end--)
		;
	for (at = cd; at < end + 22; at++) {
		for (int v = 0; v < 2; v++) {
			struct zip_archive *za;
			struct source *src;
			uint8_t old = whole[at];

			whole[at] = v ? 0xff : 0x00;
			cr_assert(ftruncate(fd, 0) == 0 && pwrite(fd, whole, len, 0) == (ssize_t)len);
			whole[at] = old;
			if (open_zip(&za, path, &src) != 0)
				continue;
			for (size_t k = 0; k < zip_count(za) && k < (size_t)c->count; k++) {
				uint8_t *data;
				size_t dlen;

				if (zip_read_member(za, zip_member_at(za, k), 1 << 24, &data, &dlen))
					continue;
				cr_assert(dlen == rawlen[k] && !memcmp(data, raw[k], dlen),
					  "%s byte %zu = %d: member %zu read wrong bytes",
					  c->file, at, v ? 0xff : 0, k);
				free(data);
			}
			close_zip(za, src);
		}
	}
	for (int k = 0; k < c->count; k++)
		free(raw[k]);
	close(fd);
	free(whole);
}

Test(zip, damaged_directories_never_give_wrong_bytes)
{
	static struct zcase cases[32];
	int n = load_cases(cases, 32), fd = open("/dev/null", O_WRONLY), done = 0;

	dup2(fd, 2);
	close(fd);
	for (int i = 0; i < n; i++) {
		if (!strcmp(cases[i].file, "comment.zip") ||
		    !strcmp(cases[i].file, "zip64_stored.npz") ||
		    !strcmp(cases[i].file, "descriptor.npz")) {
			check_damage(&cases[i]);
			done++;
		}
	}
	cr_expect(done == 3);
}

/* ---- concurrent reads --------------------------------------------------- */

/* Threads share za and the oracle bytes (both read-only); ok is their own. */
struct reader {
	struct zip_archive *za;
	const struct zcase *c;
	uint8_t **want;		/* zipfile's bytes of each member */
	const size_t *wantlen;
	int ok;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;

	r->ok = 1;
	for (int round = 0; round < 20; round++) {
		for (int k = 0; k < r->c->count; k++) {
			const struct zip_member *m = zip_member_at(r->za, (size_t)k);
			uint8_t *data;
			size_t len;

			if (zip_read_member(r->za, m, m->usize, &data, &len) != 0) {
				r->ok = 0;
				continue;
			}
			if (len != r->wantlen[k] || memcmp(data, r->want[k], len) != 0)
				r->ok = 0;
			free(data);
		}
	}
	return NULL;
}

Test(zip, concurrent_reads_of_one_archive)
{
	static struct zcase cases[32];
	int n = load_cases(cases, 32);
	struct reader r[4];
	pthread_t t[4];
	struct zip_archive *za = NULL;
	struct source *src;
	const struct zcase *c = NULL;

	for (int i = 0; i < n; i++)
		if (!strcmp(cases[i].file, "npz_py2_deflated.npz"))
			c = &cases[i];
	cr_assert(c);
	char *path = fixture_path(c->file);
	uint8_t *want[MAXMEMBERS];
	size_t wantlen[MAXMEMBERS];

	for (int k = 0; k < c->count; k++)
		want[k] = slurp(c->m[k].raw, &wantlen[k]);
	cr_assert(open_zip(&za, path, &src) == 0);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct reader){ za, c, want, wantlen, 0 };
		cr_assert(pthread_create(&t[i], NULL, read_all, &r[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_expect(r[i].ok, "reader %d failed or read other bytes than zipfile's", i);
	}
	for (int k = 0; k < c->count; k++)
		free(want[k]);
	close_zip(za, src);
	free(path);
}

/* ---- members that claim far more than their bytes (make_hostile.py) ---- */

struct member_job {
	const char *path;
	const char *member;
};

static long read_job(void *arg)
{
	const struct member_job *j = arg;
	struct zip_archive *za;
	const struct zip_member *m;
	uint8_t *data = NULL;
	struct source *src;
	size_t len;
	int rc = open_zip(&za, j->path, &src);

	if (rc)
		return rc;
	m = zip_find(za, j->member);
	rc = m ? zip_read_member(za, m, UINT64_MAX, &data, &len) : -ENOENT;
	free(data);
	close_zip(za, src);
	return rc;
}

/* zip_read_member with no size limit fails with -EIO, saying `msg`, and
 * resident memory grows by less than 16 MiB (the member claims more). */
static void expect_refused(const char *file, const char *msg)
{
	char *path = fixture_path(file);
	struct member_job j = { path, "train.npy" };
	struct bounded_result r;
	struct capture c;
	char *text;

	capture_start(&c);
	r = bounded_run(read_job, &j, 48LL << 20);
	text = capture_end(&c);
	cr_expect_eq(r.rc, -EIO, "%s: rc %ld; stderr: %s", file, r.rc, text);
	cr_expect_lt(r.grew, 16LL << 20, "%s: resident memory grew by %lld bytes", file, r.grew);
	cr_expect(strstr(text, file) && strstr(text, "train.npy") && strstr(text, "offset") &&
		  strstr(text, msg), "%s: message: %s", file, text);
	free(text);
	free(path);
}

/* declares 200 MiB; the stream ends after 100 bytes: memory is taken as
 * bytes inflate, not as the directory says */
Test(zip, hostile_declared_size_not_backed)
{
	expect_refused("../hostile/zip-lie.zip", "ends before the declared size");
}

/* 100 MiB from 1000 compressed bytes: refused before allocating */
Test(zip, hostile_impossible_ratio)
{
	expect_refused("../hostile/zip-ratio.zip", "maximum ratio");
}

/* ---- large members: raw deflate through access points ------------------ */

#include <zlib.h>

#include "io/slice.h"
#include "io/codecs/zsource.h"

#define RAW_PLAIN (6u << 20)   /* past ZIPREAD_WHOLE_MAX: six 1 MiB spans */
#define RAW_PAD   1000u        /* bytes before the stream, as a header is */

/* A file: RAW_PAD bytes, the raw deflate (zlib, windowBits -15: what a
 * zip member holds) of plain, RAW_PAD bytes; *clen the stream's size. */
static char *raw_file(const unsigned char *plain, size_t n, size_t *clen)
{
	static char path[64];
	unsigned char *z = malloc(n + 4096);
	unsigned char pad[RAW_PAD];
	z_stream zs = { 0 };
	int fd;

	cr_assert(z);
	cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (unsigned char *)plain;
	zs.avail_in = (uInt)n;
	zs.next_out = z;
	zs.avail_out = (uInt)(n + 4096);
	cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*clen = zs.total_out;
	deflateEnd(&zs);
	snprintf(path, sizeof(path), "/tmp/sfs-zipraw-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	memset(pad, 'P', sizeof(pad));
	cr_assert_eq(write(fd, pad, sizeof(pad)), (ssize_t)sizeof(pad));
	cr_assert_eq(write(fd, z, *clen), (ssize_t)*clen);
	cr_assert_eq(write(fd, pad, sizeof(pad)), (ssize_t)sizeof(pad));
	close(fd);
	free(z);
	return path;
}

/* Text with random-ish runs between, so deflate's blocks vary. */
static unsigned char *raw_plain(void)
{
	unsigned char *p = malloc(RAW_PLAIN);
	uint32_t x = 18;
	size_t i;

	cr_assert(p);
	for (i = 0; i < RAW_PLAIN; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (i / 65536) % 3 == 0 ? (unsigned char)(x >> 16) :
		       (unsigned char)("0123456789 abcdef\n"[(i * 7 + i / 999) % 18]);
	}
	return p;
}

/* The member [RAW_PAD, RAW_PAD + clen) as zipread's large-member source. */
static struct source *raw_open(struct source *zip, uint64_t clen,
			       uint64_t usize, uint32_t crc)
{
	struct source *sl, *s;

	cr_assert_eq(source_open_range(zip, RAW_PAD, clen, "t.zip@1000:m.bin", &sl), 0);
	cr_assert_eq(zsource_wrap_deflate(sl, usize, crc, &s), 0);
	cr_assert(source_is_decompressed(s));
	return s;
}

Test(zip, large_member_reads_through_access_points)
{
	unsigned char *plain = raw_plain(), buf[65536];
	uint32_t crc = (uint32_t)crc32(0, plain, RAW_PLAIN);
	struct source_env *env;
	struct source *zip, *s;
	size_t clen, k;
	char *path = raw_file(plain, RAW_PLAIN, &clen);
	/* the end first: one pass, then reads out of order */
	static const uint64_t offs[] = { RAW_PLAIN - 100, 0, 3u << 20, 1048575,
					 5u << 20, 77777, RAW_PLAIN - 65536 };

	cr_assert_eq(source_env_new(NULL, &env), 0);
	cr_assert_eq(source_open(env, path, &zip), 0);
	s = raw_open(zip, clen, RAW_PLAIN, crc);
	for (k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		size_t want = RAW_PLAIN - offs[k] < sizeof(buf) ? RAW_PLAIN - offs[k] : sizeof(buf);

		cr_assert_eq(source_pread(s, buf, sizeof(buf), offs[k]), (ssize_t)want,
			     "at %llu", (unsigned long long)offs[k]);
		cr_expect_eq(memcmp(buf, plain + offs[k], want), 0, "at %llu",
			     (unsigned long long)offs[k]);
	}
	cr_expect_eq(source_stamp(s)->size, RAW_PLAIN);
	source_close(s);
	source_close(zip);
	source_env_free(env);
	unlink(path);
	free(plain);
}

/* Each way a member can differ from its directory: every read EIO, the
 * pass's message naming the member and what differs. */
/* dlen: bytes added to (or, negative, cut from) the member's range */
static void raw_bad(int64_t dlen, uint64_t usize, uint32_t crc_xor, const char *msg)
{
	unsigned char *plain = raw_plain(), buf[4096];
	uint32_t crc = (uint32_t)crc32(0, plain, RAW_PLAIN) ^ crc_xor;
	struct source_env *env;
	struct source *zip, *s;
	struct capture c;
	size_t clen;
	char *path = raw_file(plain, RAW_PLAIN, &clen), *text;

	cr_assert_eq(source_env_new(NULL, &env), 0);
	cr_assert_eq(source_open(env, path, &zip), 0);
	capture_start(&c);
	s = raw_open(zip, (uint64_t)((int64_t)clen + dlen), usize, crc);
	cr_expect_eq(source_pread(s, buf, sizeof(buf), 0), -EIO);
	cr_expect_eq(source_pread(s, buf, sizeof(buf), 4u << 20), -EIO);
	source_close(s);
	text = capture_end(&c);
	cr_expect(strstr(text, "t.zip@1000:m.bin") && strstr(text, msg), "%s", text);
	free(text);
	source_close(zip);
	source_env_free(env);
	unlink(path);
	free(plain);
}

Test(zip, large_member_crc_mismatch_is_eio)
{
	raw_bad(0, RAW_PLAIN, 1, "CRC-32 mismatch (the zip says");
}

Test(zip, large_member_truncated_is_eio)
{
	raw_bad(-1000, RAW_PLAIN, 0, "truncated deflate stream");
}

/* a bomb: the stream goes on past what the directory declares */
Test(zip, large_member_longer_than_declared_is_eio)
{
	raw_bad(0, RAW_PLAIN - 4096, 0, "inflates past its declared size");
}

Test(zip, large_member_shorter_than_declared_is_eio)
{
	raw_bad(0, RAW_PLAIN + 1, 0, "the zip declares");
}

/* two bytes of the padding after the stream counted as the member's */
Test(zip, large_member_with_bytes_after_its_stream_is_eio)
{
	raw_bad(2, RAW_PLAIN, 0, "larger than its deflate stream");
}
