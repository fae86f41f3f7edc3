/*
 * test_tar.c - tar_walk against Python's tarfile (tests/fixtures/make_tars.py):
 * every fixture's member list (normalised names, types, sizes, absolute
 * data offsets, link targets) must equal the oracle's, line for line, and
 * damaged or foreign archives must be reported as such.  Also
 * tar_normalise on hostile names and the checksum rules, on bytes built here.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tar.h"

static const char *fixdir(void)
{
	const char *d = getenv("SFS_FIXTURES");

	cr_assert(d, "SFS_FIXTURES is not set (run tests/run_all.sh)");
	return d;
}

/* Reads a whole fixture text file; NULL-terminated. */
static char *slurp(const char *name)
{
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tars/%s", fixdir(), name);
	f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return buf;
}

struct collect {
	char *out;
	size_t len, cap;
};

static const char *type_str(enum tar_type t)
{
	return t == TAR_FILE ? "file" : t == TAR_DIR ? "dir" :
	       t == TAR_HARDLINK ? "hardlink" : "symlink";
}

static int collect_cb(void *arg, const struct tar_member *m)
{
	struct collect *c = arg;
	char line[3 * TAR_PATH_MAX];
	int n = snprintf(line, sizeof(line), "%s\t%llu\t%llu\t%s\t%s\n",
			 type_str(m->type), (unsigned long long)m->size,
			 (unsigned long long)m->offset, m->path, m->link);

	if (c->len + (size_t)n + 1 > c->cap) {
		c->cap = (c->cap + (size_t)n + 1) * 2;
		c->out = realloc(c->out, c->cap);
	}
	memcpy(c->out + c->len, line, (size_t)n + 1);
	c->len += (size_t)n;
	return 0;
}

static void check_fixture(const char *base)
{
	char name[256], path[4096];
	char *want, *status;
	struct collect c = { .out = calloc(1, 1) };
	struct stat st;
	int fd, rc;

	snprintf(name, sizeof(name), "%s.walk", base);
	want = slurp(name);
	snprintf(name, sizeof(name), "%s.status", base);
	status = slurp(name);
	snprintf(path, sizeof(path), "%s/tars/%s.tar", fixdir(), base);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0 && fstat(fd, &st) == 0);
	rc = tar_walk(fd, 0, (uint64_t)st.st_size, path, collect_cb, &c);
	close(fd);
	if (!strcmp(status, "ok\n"))
		cr_expect_eq(rc, 0, "%s: tar_walk returned %d", base, rc);
	else if (!strcmp(status, "damaged\n"))
		cr_expect_eq(rc, -EBADMSG, "%s: tar_walk returned %d", base, rc);
	else
		cr_expect_eq(rc, -EINVAL, "%s: tar_walk returned %d", base, rc);
	cr_expect_str_eq(c.out, want, "%s: members differ from tarfile's", base);
	free(c.out);
	free(want);
	free(status);
}

Test(tar, gnu) { check_fixture("gnu"); }
Test(tar, pax_with_global_header) { check_fixture("pax"); }
Test(tar, ustar_prefix) { check_fixture("ustar"); }
Test(tar, v7) { check_fixture("v7"); }
Test(tar, base256_size_and_mtime) { check_fixture("base256"); }
Test(tar, sparse_member_skipped) { check_fixture("sparse"); }
Test(tar, hostile_names) { check_fixture("hostile"); }
Test(tar, bad_checksum_keeps_members_before) { check_fixture("badsum"); }
Test(tar, truncated_keeps_members_before) { check_fixture("truncated"); }
Test(tar, negative_base256_size) { check_fixture("negsize"); }
Test(tar, huge_base256_size) { check_fixture("hugesize"); }
Test(tar, nested_not_expanded_by_walk) { check_fixture("deep"); }
Test(tar, not_a_tar) { check_fixture("notatar"); }
Test(tar, empty_archive) { check_fixture("empty"); }
Test(tar, links_and_conflicts) { check_fixture("conflict"); }

/* A walk of a range inside a file: offsets stay absolute. */
Test(tar, range_offsets_are_absolute)
{
	char path[4096];
	char *want = slurp("gnu.walk");
	struct collect c = { .out = calloc(1, 1) };
	unsigned char *buf;
	struct stat st;
	int fd, rc;
	FILE *f;
	char tmpl[] = "/tmp/sfs-tar-XXXXXX";

	snprintf(path, sizeof(path), "%s/tars/gnu.tar", fixdir());
	f = fopen(path, "rb");
	cr_assert(f);
	fstat(fileno(f), &st);
	buf = malloc((size_t)st.st_size);
	cr_assert(fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
	fclose(f);
	fd = mkstemp(tmpl);
	cr_assert(fd >= 0);
	unlink(tmpl);
	cr_assert(pwrite(fd, buf, (size_t)st.st_size, 4096) == st.st_size);
	rc = tar_walk(fd, 4096, (uint64_t)st.st_size, "shifted", collect_cb, &c);
	close(fd);
	cr_expect_eq(rc, 0);
	/* every offset of the oracle plus 4096: compare the first line only */
	{
		unsigned long long size, off, off2;
		char t[16], t2[16];

		cr_assert(sscanf(want, "%15s\t%llu\t%llu", t, &size, &off) == 3);
		cr_assert(sscanf(c.out, "%15s\t%llu\t%llu", t2, &size, &off2) == 3);
		cr_expect_eq(off2, off + 4096);
	}
	free(buf);
	free(want);
	free(c.out);
}

static void norm_ok(const char *in, const char *want)
{
	char buf[TAR_PATH_MAX + 1];

	snprintf(buf, sizeof(buf), "%s", in);
	cr_expect_eq(tar_normalise(buf), 0, "'%s' should normalise", in);
	cr_expect_str_eq(buf, want, "'%s' -> '%s', want '%s'", in, buf, want);
}

static void norm_bad(const char *in, int want)
{
	char buf[TAR_PATH_MAX + 1];

	snprintf(buf, sizeof(buf), "%s", in);
	cr_expect_eq(tar_normalise(buf), want, "'%s' should be refused", in);
}

Test(tar, normalise)
{
	char big[300];

	norm_ok("/abs", "abs");
	norm_ok("./a//b/", "a/b");
	norm_ok("a/../c", "c");
	norm_ok("a/b/../../c/./d", "c/d");
	norm_ok("///x///", "x");
	norm_ok("..a/b..", "..a/b..");
	norm_bad("../x", -EINVAL);
	norm_bad("a/../../b", -EINVAL);
	norm_bad("..", -EINVAL);
	norm_bad("/..", -EINVAL);
	norm_bad("", -ENOENT);
	norm_bad("./", -ENOENT);
	norm_bad("a/..", -ENOENT);
	memset(big, 'z', 256);
	big[256] = '\0';
	norm_bad(big, -EINVAL);
	big[255] = '\0';
	norm_ok(big, big);
}

/* Checksums: GNU tar accepts the sum of signed or of unsigned bytes. */
Test(tar, checksum_signed_and_unsigned)
{
	unsigned char h[TAR_BLOCK];
	long us = 0, ss = 0;
	int i;

	memset(h, 0, sizeof(h));
	strcpy((char *)h, "caf\xc3\xa9");     /* high bytes: the sums differ */
	memcpy(h + 124, "00000000000", 11);
	for (i = 0; i < TAR_BLOCK; i++) {
		unsigned char c = i >= 148 && i < 156 ? ' ' : h[i];

		us += c;
		ss += (signed char)c;
	}
	cr_assert_neq(us, ss);
	snprintf((char *)h + 148, 8, "%06o", (unsigned)(us & 0777777));
	cr_expect(tar_header_ok(h));
	snprintf((char *)h + 148, 8, "%06o", (unsigned)(ss & 0777777));
	cr_expect(tar_header_ok(h));
	snprintf((char *)h + 148, 8, "%06o", (unsigned)((us + 1) & 0777777));
	cr_expect(!tar_header_ok(h));
	memset(h, 0, sizeof(h));
	cr_expect(!tar_header_ok(h), "a zero block is not a header");
}
