/*
 * test_tar.c - tar_walk against Python's tarfile (tests/fixtures/make_tars.py):
 * every fixture's member list (normalised names, types, sizes, absolute
 * data offsets, link targets) must equal the oracle's, line for line, and
 * damaged or foreign archives must be reported as such.  Also
 * tar_normalise on hostile names, the checksum rules, malformed pax records
 * and archives that end inside their padding, on bytes built here.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/tar.h"
#include "opensrc.h"
#include "tarhdr.h"

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
	struct source *src;
	int rc;

	snprintf(name, sizeof(name), "%s.walk", base);
	want = slurp(name);
	snprintf(name, sizeof(name), "%s.status", base);
	status = slurp(name);
	snprintf(path, sizeof(path), "%s/tars/%s.tar", fixdir(), base);
	src = open_src(path);
	rc = tar_walk(src, 0, source_stamp(src)->size, path, collect_cb, &c);
	source_close(src);
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
Test(tar, links_take_their_target_where_they_appear) { check_fixture("relink"); }
Test(tar, sparse_old_gnu_by_gnu_tar) { check_fixture("sparse_oldgnu"); }
Test(tar, sparse_pax_0_0_by_gnu_tar) { check_fixture("sparse_pax00"); }
Test(tar, sparse_pax_0_1_by_gnu_tar) { check_fixture("sparse_pax01"); }
Test(tar, sparse_pax_1_0_by_gnu_tar) { check_fixture("sparse_pax10"); }

/* A walk of a range inside a file: offsets stay absolute. */
Test(tar, range_offsets_are_absolute)
{
	char path[4096];
	char *want = slurp("gnu.walk");
	struct collect c = { .out = calloc(1, 1) };
	unsigned char *buf;
	struct source *src;
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
	src = open_fd_src(fd);
	rc = tar_walk(src, 4096, (uint64_t)st.st_size, "shifted", collect_cb, &c);
	source_close(src);
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

/* ---- archives built here, byte by byte --------------------------------- */

struct crafted {
	unsigned char buf[16 * TAR_BLOCK];
	size_t len;
};

/* Appends a ustar header (checksum as tarfile writes it) and n data bytes,
 * padded to a block unless `pad` is 0. */
static void craft(struct crafted *t, const char *name, char type,
		  const void *data, size_t n, int pad)
{
	unsigned char *h = t->buf + t->len;

	cr_assert_leq(t->len + TAR_BLOCK + n + TAR_BLOCK, sizeof(t->buf));
	tarhdr_fill(h, name, type, n, NULL, TARHDR_POSIX);
	memcpy(h + TAR_BLOCK, data, n);
	t->len += TAR_BLOCK + n;
	if (pad) {
		memset(t->buf + t->len, 0, (TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK);
		t->len += (TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK;
	}
}

/* Walks t[0, t->len) under the name "crafted.tar" over a range of
 * t->len + extra bytes; returns tar_walk's result, the members in c and
 * what was printed in *msg. */
static int walk_crafted(const struct crafted *t, uint64_t extra,
			struct collect *c, char **msg)
{
	char tmpl[] = "/tmp/sfs-tar-XXXXXX";
	FILE *err = tmpfile();
	int fd = mkstemp(tmpl), saved = dup(2), rc;
	struct source *src;
	size_t n;

	cr_assert(fd >= 0 && err && saved >= 0);
	unlink(tmpl);
	cr_assert(pwrite(fd, t->buf, t->len, 0) == (ssize_t)t->len);
	c->out = calloc(1, 1);
	c->len = c->cap = 0;
	fflush(stderr);
	dup2(fileno(err), 2);
	src = open_fd_src(fd);
	rc = tar_walk(src, 0, t->len + extra, "crafted.tar", collect_cb, c);
	source_close(src);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	*msg = calloc(1, 4096);
	rewind(err);
	n = fread(*msg, 1, 4095, err);
	(*msg)[n] = '\0';
	fclose(err);
	return rc;
}

/*
 * A pax record whose length field does not start the record: strtoul
 * skips whitespace and takes a sign, so "\n1 xyz" once read as a 1-byte
 * record ending in '\n' whose "key=value" lay before its own length
 * field, and the scan for '=' ran off the buffer (ASan: heap overflow).
 * Each must be the usual malformed-record warning (the rest of the set is
 * ignored, the records before it stay applied) and the member reported.
 */
Test(tar, pax_length_field_not_at_record_start, .timeout = 10)
{
	static const struct { const char *pax, *path; unsigned at; } cases[] = {
		{ "\n1 xyz", "f.txt", 512 },
		{ "\n1 path=evil\n", "f.txt", 512 },
		{ " 13 path=evil\n", "f.txt", 512 },
		{ "+12 path=evil\n", "f.txt", 512 },
		{ "-1 path=evil\n", "f.txt", 512 },
		{ "17 path=good.txt\n\n1 xyz", "good.txt", 529 },
		/* a length of 0 after a record ending in '\n' looped for ever */
		{ "17 path=good.txt\n0 path=evil\n", "good.txt", 529 },
		{ "17 path=good.txt\n00 =x\n", "good.txt", 529 },
		{ "3 =\n", "f.txt", 512 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct crafted *t = calloc(1, sizeof(*t));
		struct collect c;
		char want[128], where[64], *msg;
		int rc;

		craft(t, "PaxHeaders/f.txt", 'x', cases[i].pax, strlen(cases[i].pax), 1);
		craft(t, "f.txt", '0', "hello", 5, 1);
		t->len += 2 * TAR_BLOCK;
		rc = walk_crafted(t, 0, &c, &msg);
		cr_expect_eq(rc, 0, "case %zu: tar_walk returned %d", i, rc);
		snprintf(want, sizeof(want), "file\t5\t1536\t%s\t\n", cases[i].path);
		cr_expect_str_eq(c.out, want, "case %zu", i);
		snprintf(where, sizeof(where), "offset %u", cases[i].at);
		cr_expect(strstr(msg, "crafted.tar") && strstr(msg, "malformed pax record") &&
			  strstr(msg, where), "case %zu: message: %s", i, msg);
		free(c.out);
		free(msg);
		free(t);
	}
}

/*
 * A range that ends inside a member's padding, or before a header the
 * file does not have: the members before stay reported, the walk says
 * -EBADMSG, and a warning names the file and the offset (as tar.h
 * promises) instead of returning quietly.
 */
Test(tar, padding_or_header_past_the_end_is_warned)
{
	static const struct { int pax_last, pad; uint64_t extra; const char *where, *walk; } cases[] = {
		/* the last member's padding is missing (file ends at 517) */
		{ 0, 0, 0, "offset 1024", "file\t5\t512\tf.txt\t\n" },
		/* a pax header's padding is missing: nothing follows it */
		{ 1, 0, 0, "offset 2048", "file\t5\t512\tf.txt\t\n" },
		/* the range says a header follows, the file has none */
		{ 0, 1, TAR_BLOCK, "offset 1024", "file\t5\t512\tf.txt\t\n" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct crafted *t = calloc(1, sizeof(*t));
		struct collect c;
		char *msg;
		int rc;

		craft(t, "f.txt", '0', "hello", 5, cases[i].pad || cases[i].pax_last);
		if (cases[i].pax_last)
			craft(t, "PaxHeaders/g", 'x', "11 a=bcdef\n", 11, cases[i].pad);
		rc = walk_crafted(t, cases[i].extra, &c, &msg);
		cr_expect_eq(rc, -EBADMSG, "case %zu: tar_walk returned %d", i, rc);
		cr_expect_str_eq(c.out, cases[i].walk, "case %zu", i);
		cr_expect(strstr(msg, "crafted.tar") && strstr(msg, cases[i].where),
			  "case %zu: message: %s", i, msg);
		free(c.out);
		free(msg);
		free(t);
	}
}

/* A regular file's header may hold a link name (old archivers left one):
 * GNU tar ignores it, and a file member's link is "" (tar.h). */
Test(tar, link_field_of_a_file_is_ignored)
{
	struct crafted *t = calloc(1, sizeof(*t));
	struct collect c;
	char *msg;
	int rc;

	craft(t, "f.txt", '0', "hello", 5, 1);
	memcpy(t->buf + 157, "g", 2);
	tarhdr_sum(t->buf);
	t->len += 2 * TAR_BLOCK;
	rc = walk_crafted(t, 0, &c, &msg);
	cr_expect_eq(rc, 0);
	cr_expect_str_eq(c.out, "file\t5\t512\tf.txt\t\n");
	free(c.out);
	free(msg);
	free(t);
}

/* Sets the size field of header h to 0x80 and the 11 bytes b (base-256,
 * big-endian), and fixes the checksum. */
static void set_base256_size(unsigned char *h, const unsigned char *b)
{
	h[124] = 0x80;
	memcpy(h + 125, b, 11);
	tarhdr_sum(h);
}

/*
 * A base-256 size of 2^63 or more does not fit the member's int64 size:
 * the header is an error named with its offset, never the low bits of the
 * number (2^64 kept to 64 bits is 0, an empty member; 2^64 + 5 a 5-byte
 * one whose "data" is the next header).  The member before stays.
 */
Test(tar, base256_size_past_63_bits_is_an_error)
{
	static const struct { const char *what; unsigned char b[11]; } cases[] = {
		{ "2^64", { 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 } },
		{ "2^64 + 5", { 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5 } },
		{ "2^72 + 512", { 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0 } },
		{ "2^88 - 1", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } },
		{ "2^63", { 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0 } },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct crafted *t = calloc(1, sizeof(*t));
		struct collect c;
		char *msg;
		int rc;

		craft(t, "before.txt", '0', "hello", 5, 1);
		craft(t, "big.bin", '0', "world", 5, 1);
		set_base256_size(t->buf + 1024, cases[i].b);
		craft(t, "after.txt", '0', "again", 5, 1);
		t->len += 2 * TAR_BLOCK;
		rc = walk_crafted(t, 0, &c, &msg);
		cr_expect_lt(rc, 0, "%s: tar_walk returned %d", cases[i].what, rc);
		cr_expect_str_eq(c.out, "file\t5\t512\tbefore.txt\t\n", "%s", cases[i].what);
		cr_expect(strstr(msg, "crafted.tar") && strstr(msg, "offset 1024"),
			  "%s: message: %s", cases[i].what, msg);
		free(c.out);
		free(msg);
		free(t);
	}
}

/* A name with a component over 255 bytes (here from a pax path record) is
 * skipped with a warning that says so, not "unsafe or empty name"; one
 * that escapes the root still says "unsafe".  The members around stay. */
Test(tar, long_component_is_named)
{
	struct crafted *t = calloc(1, sizeof(*t));
	char body[300], rec[310], big[257];
	struct collect c;
	char *msg;
	int rc;

	memset(big, 'n', 256);
	big[256] = '\0';
	snprintf(body, sizeof(body), "path=long/%s\n", big);
	/* the record length counts its own 3 digits and the space */
	snprintf(rec, sizeof(rec), "%zu %s", strlen(body) + 4, body);
	craft(t, "a.txt", '0', "hello", 5, 1);
	craft(t, "PaxHeaders/x", 'x', rec, strlen(rec), 1);
	craft(t, "placeholder", '0', "abc", 3, 1);
	craft(t, "../up.txt", '0', "x", 1, 1);
	craft(t, "b.txt", '0', "world", 5, 1);
	t->len += 2 * TAR_BLOCK;
	rc = walk_crafted(t, 0, &c, &msg);
	cr_expect_eq(rc, 0);
	cr_expect_str_eq(c.out, "file\t5\t512\ta.txt\t\nfile\t5\t4608\tb.txt\t\n");
	cr_expect(strstr(msg, "crafted.tar: name 'long/nnnn") &&
		  strstr(msg, "' in header at offset 2048 has a component of 256 bytes, "
			 "over the 255 a file name may have: skipped"), "message: %s", msg);
	cr_expect(strstr(msg, "crafted.tar: unsafe or empty name '../up.txt' in header at offset 3072"),
		  "message: %s", msg);
	cr_expect(!strstr(msg, "unsafe or empty name 'long/"), "message: %s", msg);
	free(c.out);
	free(msg);
	free(t);
}
