/*
 * test_tarindex_written.c - the tar index on tars written here, byte by
 * byte (tests/unit/test_tarindex.c has the fixtures of make_tars.py):
 * paths in the tree past TAR_PATH_MAX, huge and over-long pax records,
 * pax sparse maps read at every offset and bad ones skipped; and the
 * build in bounded memory: spilling its sorts to runs of 4 KiB writes the
 * index byte for byte as the build that holds them in memory (on every
 * fixture and on thousands of members), leaves no scratch file, and a
 * build of 300,000 members with 1 MiB runs grows the process by under
 * 24 MiB.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index.h"
#include "index/tarindex/tarindex.h"

#define FIXTURE_SUBDIR "tars"
#include "fixture.h"
#include "capture.h"
#include "tarindex_fixture.h"
#include "tarhdr.h"

/* ------------------------------------------------------------ tars written here */

/* A GNU tar built in memory (names of 100 bytes or more as 'L' records). */
struct tarw {
	unsigned char *p;
	size_t len;
};

/* Appends n bytes, zero-padded to whole blocks. */
static void tw_put(struct tarw *w, const void *data, size_t n)
{
	size_t padded = (n + 511) & ~(size_t)511;

	w->p = realloc(w->p, w->len + padded);
	cr_assert(w->p);
	memset(w->p + w->len, 0, padded);
	memcpy(w->p + w->len, data, n);
	w->len += padded;
}

static void tw_header(struct tarw *w, const char *name, char type, size_t size)
{
	unsigned char h[TARHDR_BLOCK];

	tarhdr_fill(h, name, type, size, NULL, TARHDR_GNU);
	tw_put(w, h, sizeof(h));
}

static void tw_file(struct tarw *w, const char *name, const void *data, size_t size)
{
	if (strlen(name) >= 100) {
		tw_header(w, "././@LongLink", 'L', strlen(name) + 1);
		tw_put(w, name, strlen(name) + 1);
	}
	tw_header(w, name, '0', size);
	if (size)
		tw_put(w, data, size);
}

static void tw_end(struct tarw *w)
{
	static const unsigned char zero[1024];

	tw_put(w, zero, sizeof(zero));
}

/* `unit` n times, then `tail` (malloc'ed). */
static char *repeat(const char *unit, int n, const char *tail)
{
	size_t u = strlen(unit), t = strlen(tail);
	char *s = malloc(u * (size_t)n + t + 1);
	int i;

	cr_assert(s);
	for (i = 0; i < n; i++)
		memcpy(s + u * (size_t)i, unit, u);
	memcpy(s + u * (size_t)n, tail, t + 1);
	return s;
}

/* Writes w to a new file at `path` (a mkstemp template) and frees it. */
static void tw_save(struct tarw *w, char *path)
{
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, w->p, w->len), (ssize_t)w->len);
	close(fd);
	free(w->p);
	w->p = NULL;
	w->len = 0;
}

/* Ends tar `out`, saves it at `path` (a mkstemp template) and indexes it
 * as `src`; the build must succeed.  Returns what it printed (malloc'ed). */
static char *save_and_build(struct built *b, struct tarindex_source *src,
			    struct tarw *out, char *path)
{
	struct capture cap;
	char *msg;
	int rc;

	tw_end(out);
	tw_save(out, path);
	capture_start(&cap);
	rc = build(b, src, 1, 1);
	msg = capture_end(&cap);
	cr_assert_eq(rc, 0, "build returned %d: %s", rc, msg);
	return msg;
}

/* Node `path` is a file holding exactly `want`. */
static void expect_file(const struct tarindex *t, const char *path, const char *want)
{
	char buf[64] = "";
	int64_t i = tarindex_find(t, path);
	ssize_t k;

	cr_assert_geq(i, 0, "'%.60s...' (%zu bytes) not found", path, strlen(path));
	k = tarindex_pread(t, (uint32_t)i, buf, sizeof(buf) - 1, 0);
	cr_expect_eq(k, (ssize_t)strlen(want));
	cr_expect_str_eq(buf, want);
}

/*
 * An outer member "a/a/.../x.tar" (4085 bytes, 2041 components) holding
 * "b/b/.../f" (4093 bytes, 2047 components): joined they are 4087
 * directories deep, past tree_pass's directory stack (TAR_PATH_MAX / 2 + 2),
 * which overflowed.  Paths in the tree over TAR_PATH_MAX are skipped with
 * a warning naming the tar and the offset; the other members are served.
 */
Test(tarindex, nested_path_over_path_max_is_skipped)
{
	char path[] = "/tmp/sfs-tarlong-XXXXXX", *deep = repeat("b/", 2046, "f");
	char *outer = repeat("a/", 2040, "x.tar"), *x = repeat("a/", 2040, "x");
	char *ok, *msg;
	struct tarw in = { 0 }, out = { 0 };
	struct tarindex_source src = { path, "", NULL };
	struct built b;

	cr_assert_eq(strlen(outer), 4085);
	cr_assert_eq(strlen(deep), 4093);
	tw_file(&in, deep, "deep", 4);
	tw_file(&in, "ok.txt", "ok", 2);
	tw_end(&in);
	tw_file(&out, "keep.txt", "keep", 4);
	tw_file(&out, outer, in.p, in.len);
	msg = save_and_build(&b, &src, &out, path);
	free(in.p);
	expect_file(&b.t, "keep.txt", "keep");
	cr_assert(asprintf(&ok, "%s/ok.txt", x) > 0);    /* 4088 bytes: fits */
	expect_file(&b.t, ok, "ok");
	cr_expect_eq(tarindex_lookup(&b.t, (uint32_t)tarindex_find(&b.t, x), "b"), -ENOENT);
	cr_expect(strstr(msg, path) && strstr(msg, "offset") && strstr(msg, "4096"),
		  "warning names the tar, the offset and the limit: %s", msg);
	unbuild(&b);
	unlink(path);
	free(msg);
	free(ok);
	free(x);
	free(outer);
	free(deep);
}

/*
 * Under the source's directory "train", "a/a/.../x.tar" (4095 bytes) is
 * 4101 bytes: the nested members' prefix used to be cut to 4096 bytes, so
 * they landed under "train/a/.../a/" with an empty name.  Now the member is
 * skipped (warned), as is any other member whose path in the tree is too
 * long, and nothing of them appears anywhere.
 */
Test(tarindex, prefix_over_path_max_is_not_cut)
{
	char path[] = "/tmp/sfs-tarlong-XXXXXX", *msg;
	char *outer = repeat("a/", 2045, "x.tar"), *plain = repeat("c/", 2044, "long.txt");
	struct tarw in = { 0 }, out = { 0 };
	struct tarindex_source src = { path, "train", NULL };
	struct built b;

	cr_assert_eq(strlen(outer), 4095);
	cr_assert_eq(strlen(plain), 4096);
	tw_file(&in, "ok.txt", "ok", 2);
	tw_end(&in);
	tw_file(&out, "keep.txt", "keep", 4);
	tw_file(&out, outer, in.p, in.len);
	tw_file(&out, plain, "long", 4);
	msg = save_and_build(&b, &src, &out, path);
	free(in.p);
	expect_file(&b.t, "train/keep.txt", "keep");
	cr_expect_eq(tarindex_find(&b.t, "train/a"), -ENOENT);
	cr_expect_eq(tarindex_find(&b.t, "train/c"), -ENOENT);
	cr_expect_eq(b.t.nnodes, 3, "root, train, keep.txt: %u nodes", b.t.nnodes);
	cr_expect(strstr(msg, path) && strstr(msg, "offset"), "warning: %s", msg);
	unbuild(&b);
	unlink(path);
	free(msg);
	free(plain);
	free(outer);
}

/* ---- pax records, long names and sparse maps, built here --------------- */

/* Appends the pax record "<len> key=value\n" (len counts itself) to *s. */
static void pax_rec(char **s, const char *key, const char *val)
{
	size_t body = strlen(key) + strlen(val) + 3, len = body + 1, old = *s ? strlen(*s) : 0;
	char num[24];

	while (snprintf(num, sizeof(num), "%zu", len), strlen(num) + body != len)
		len = strlen(num) + body;
	*s = realloc(*s, old + len + 1);
	cr_assert(*s);
	sprintf(*s + old, "%s %s=%s\n", num, key, val);
}

/* A member preceded by an 'x' header holding `pax`, then its data. */
static void tw_pax_file(struct tarw *w, const char *pax, const char *name,
			const void *data, size_t size)
{
	tw_header(w, "PaxHeaders/x", 'x', strlen(pax));
	tw_put(w, pax, strlen(pax));
	tw_header(w, name, '0', size);
	if (size)
		tw_put(w, data, size);
}

/* Builds a tar of `out` plus a last member "after.txt"; returns the
 * warnings.  The walk must go on after whatever came before. */
static char *build_with_after(struct built *b, struct tarw *out, char *path)
{
	char *msg;

	b->one = (struct tarindex_source){ path, "", NULL };
	tw_file(out, "after.txt", "after", 5);
	msg = save_and_build(b, &b->one, out, path);
	expect_file(&b->t, "after.txt", "after");
	return msg;
}

/*
 * A pax record we do not keep is streamed past however large (an 8 MB
 * comment, as LIBARCHIVE.xattr records can be): no warning, the member it
 * describes is served under its pax path.
 */
Test(tarindex, huge_unkept_pax_record_is_passed_over)
{
	char path[] = "/tmp/sfs-taxpax-XXXXXX", *pax = NULL, *big = malloc(8 << 20), *msg;
	struct tarw out = { 0 };
	struct built b;

	cr_assert(big);
	memset(big, 'c', 8 << 20);
	big[(8 << 20) - 1] = '\0';
	pax_rec(&pax, "comment", big);
	pax_rec(&pax, "path", "renamed/by pax.txt");
	tw_pax_file(&out, pax, "plain.txt", "payload", 7);
	msg = build_with_after(&b, &out, path);
	expect_file(&b.t, "renamed/by pax.txt", "payload");
	cr_expect_eq(tarindex_find(&b.t, "plain.txt"), -ENOENT);
	cr_expect(!strstr(msg, "warning"), "no warning: %s", msg);
	unbuild(&b);
	unlink(path);
	free(msg);
	free(pax);
	free(big);
}

/* A kept record (path, linkpath) or GNU long name over TAR_PATH_MAX skips
 * its member with a warning; the walk goes on. */
Test(tarindex, kept_names_over_the_limit_skip_their_member)
{
	static const char *const keys[] = { "path", "linkpath", "GNU.sparse.name" };
	char path[] = "/tmp/sfs-taxlong-XXXXXX", *name = repeat("n", 5000, ""), *msg;
	struct tarw out = { 0 };
	struct built b;
	size_t i;

	for (i = 0; i < 3; i++) {
		char *pax = NULL, member[32];

		pax_rec(&pax, keys[i], name);
		snprintf(member, sizeof(member), "m%zu.txt", i);
		tw_pax_file(&out, pax, member, "x", 1);
		free(pax);
	}
	tw_header(&out, "././@LongLink", 'L', strlen(name) + 1);
	tw_put(&out, name, strlen(name) + 1);
	tw_header(&out, "m3.txt", '0', 1);
	tw_put(&out, "x", 1);
	msg = build_with_after(&b, &out, path);
	for (i = 0; i < 4; i++) {
		char member[32];

		snprintf(member, sizeof(member), "m%zu.txt", i);
		cr_expect_eq(tarindex_find(&b.t, member), -ENOENT, "%s skipped", member);
	}
	cr_expect_eq(b.t.nnodes, 2, "root and after.txt: %u nodes", b.t.nnodes);
	cr_expect(strstr(msg, "pax path of 5000 bytes") && strstr(msg, "pax linkpath of") &&
		  strstr(msg, "GNU.sparse.name of") && strstr(msg, "GNU long name of 5001 bytes"),
		  "one warning each: %s", msg);
	unbuild(&b);
	unlink(path);
	free(msg);
	free(name);
}

/* Sparse file `name` reads as `want` (size n) at every offset and size. */
static void expect_sparse(const struct tarindex *t, const char *name,
			  const unsigned char *want, size_t n)
{
	int64_t i = tarindex_find(t, name);
	unsigned char *buf = malloc(n + 16);
	size_t off, len;

	cr_assert_geq(i, 0, "%s not found", name);
	cr_expect(tarindex_node_sparse(tarindex_node(t, (uint32_t)i)));
	cr_expect_eq(tarindex_node_size(tarindex_node(t, (uint32_t)i)), n);
	for (off = 0; off <= n; off++) {
		for (len = 1; len <= n - off + 3; len += 1 + len / 3) {
			ssize_t k = tarindex_pread(t, (uint32_t)i, buf, len, off);
			size_t exp = off + len > n ? n - off : len;

			cr_assert_eq(k, (ssize_t)exp, "%s: read %zu at %zu gave %zd", name,
				     len, off, k);
			cr_assert(!memcmp(buf, want + off, exp), "%s: bytes at %zu+%zu",
				  name, off, len);
		}
	}
	free(buf);
}

/*
 * The pax 0.0, 0.1 and 1.0 maps, built by hand: a 100-byte file holding
 * "AAAAA" at 10 and "BBBBB" at 50, and one of only holes.  Every read of
 * every offset and size gives zeros in the holes and the chunks' bytes.
 */
Test(tarindex, pax_sparse_maps_read_at_every_offset)
{
	char path[] = "/tmp/sfs-taxsparse-XXXXXX", *p0 = NULL, *p1 = NULL, *p2 = NULL,
	     *p3 = NULL, *msg, data1[1024] = "2\n10\n5\n50\n5\n";
	unsigned char want[100] = { 0 };
	struct tarw out = { 0 };
	struct built b;

	memset(want + 10, 'A', 5);
	memset(want + 50, 'B', 5);
	pax_rec(&p0, "GNU.sparse.size", "100");
	pax_rec(&p0, "GNU.sparse.numblocks", "2");
	pax_rec(&p0, "GNU.sparse.offset", "10");
	pax_rec(&p0, "GNU.sparse.numbytes", "5");
	pax_rec(&p0, "GNU.sparse.offset", "50");
	pax_rec(&p0, "GNU.sparse.numbytes", "5");
	tw_pax_file(&out, p0, "v00", "AAAAABBBBB", 10);
	pax_rec(&p1, "GNU.sparse.size", "100");
	pax_rec(&p1, "GNU.sparse.name", "v01");
	pax_rec(&p1, "GNU.sparse.map", "10,5,50,5,100,0");
	tw_pax_file(&out, p1, "GNUSparseFile.1/v01", "AAAAABBBBB", 10);
	pax_rec(&p2, "GNU.sparse.major", "1");
	pax_rec(&p2, "GNU.sparse.minor", "0");
	pax_rec(&p2, "GNU.sparse.name", "v10");
	pax_rec(&p2, "GNU.sparse.realsize", "100");
	memcpy(data1 + 512, "AAAAABBBBB", 10);
	tw_pax_file(&out, p2, "GNUSparseFile.1/v10", data1, 522);
	pax_rec(&p3, "GNU.sparse.size", "100");
	pax_rec(&p3, "GNU.sparse.map", "100,0");
	tw_pax_file(&out, p3, "holes", "", 0);
	msg = build_with_after(&b, &out, path);
	expect_sparse(&b.t, "v00", want, 100);
	expect_sparse(&b.t, "v01", want, 100);
	expect_sparse(&b.t, "v10", want, 100);
	memset(want, 0, sizeof(want));
	expect_sparse(&b.t, "holes", want, 100);
	cr_expect(!strstr(msg, "warning"), "no warning: %s", msg);
	unbuild(&b);
	unlink(path);
	free(msg);
	free(p0);
	free(p1);
	free(p2);
	free(p3);
}

/* Maps that cannot be right skip their member, with a warning saying why. */
Test(tarindex, bad_sparse_maps_skip_their_member)
{
	static const struct { const char *recs, *data, *says; } cases[] = {
		{ "GNU.sparse.size=100|GNU.sparse.map=50,5,10,5", "AAAAABBBBB", "out of order" },
		{ "GNU.sparse.size=100|GNU.sparse.map=10,5,12,5", "AAAAABBBBB", "out of order" },
		{ "GNU.sparse.size=100|GNU.sparse.map=10,5,98,5", "AAAAABBBBB", "past its size" },
		{ "GNU.sparse.size=100|GNU.sparse.map=10,5", "AAAAABBBBB", "are stored" },
		{ "GNU.sparse.size=100|GNU.sparse.map=10,x", "AAAAABBBBB", "malformed" },
		{ "GNU.sparse.size=100|GNU.sparse.map=10,5,50", "AAAAABBBBB", "malformed" },
		{ "GNU.sparse.size=100|GNU.sparse.map=1,99999999999999999999999", "A", "malformed" },
		{ "GNU.sparse.map=10,5,50,5", "AAAAABBBBB", "no real size" },
		{ "GNU.sparse.size=100|GNU.sparse.numbytes=5", "AAAAA", "malformed" },
		{ "GNU.sparse.size=x|GNU.sparse.map=0,1", "A", "bad pax GNU.sparse.size" },
		{ "GNU.sparse.major=1|GNU.sparse.realsize=100", "3\n10\n5\n", "malformed" },
		/* the map's block would run past the member's data */
		{ "GNU.sparse.major=1|GNU.sparse.realsize=100", "1\n0\n9\n", "malformed" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[] = "/tmp/sfs-taxbadmap-XXXXXX", *msg, *pax = NULL;
		char *recs = strdup(cases[i].recs), *r, *save;
		struct tarw out = { 0 };
		struct built b;

		for (r = strtok_r(recs, "|", &save); r; r = strtok_r(NULL, "|", &save)) {
			char *eq = strchr(r, '=');

			*eq = '\0';
			pax_rec(&pax, r, eq + 1);
		}
		tw_pax_file(&out, pax, "bad", cases[i].data, strlen(cases[i].data));
		msg = build_with_after(&b, &out, path);
		cr_expect_eq(b.t.nnodes, 2, "case %zu: only after.txt is left: %u nodes",
			     i, b.t.nnodes);
		cr_expect(strstr(msg, cases[i].says) && strstr(msg, "skipped"),
			  "case %zu: want '%s' in: %s", i, cases[i].says, msg);
		unbuild(&b);
		unlink(path);
		free(pax);
		free(recs);
		free(msg);
	}
}

/* ------------------------------------------------------ bounded memory */

/* Builds src into a fresh index at `path` with the sort budget `mem`
 * (NULL: the default); its bytes (malloc'ed) in *out, or NULL on failure. */
static int build_bytes(const char *path, struct tarindex_source *src, size_t n,
		       uint32_t r, const char *mem, char **out, size_t *len)
{
	struct tarindex_build_opts bo = { .recursive = r, .quiet = 1 };
	struct index_writer *w;
	struct index_fp fp;
	FILE *f;
	int rc;

	*out = NULL;
	if (mem)
		setenv("SAMPLEFS_BUILD_MEM", mem, 1);
	else
		unsetenv("SAMPLEFS_BUILD_MEM");
	index_fp_init(&fp, "tar");
	cr_assert_eq(tarindex_fp_add(&fp, src, n, r), 0);
	cr_assert_eq(index_writer_open(&w, path), 0);
	rc = tarindex_build(w, 'A', src, n, &bo);
	unsetenv("SAMPLEFS_BUILD_MEM");
	if (rc < 0) {
		index_writer_abort(w);
		return rc;
	}
	cr_assert_eq(index_writer_commit(w, &fp), 0);
	f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	*out = malloc(*len + 1);
	cr_assert(*out);
	cr_assert_eq(fread(*out, 1, *len, f), *len);
	fclose(f);
	unlink(path);
	return 0;
}

/* The index of src at each recursion level, in memory and spilled, equal. */
static void spilled_equal(struct tarindex_source *src, size_t n, const char *what)
{
	char path[64], *a, *b;
	size_t la = 0, lb = 0;
	uint32_t r;
	int ra, rb;

	cr_assert_eq(tarindex_sources_open(NULL, src, n), 0);
	strcpy(path, "/tmp/sfs-tarindex-spill-XXXXXX");
	cr_assert(mkdtemp(path));
	strcat(path, "/i");
	for (r = 0; r <= 3; r++) {
		ra = build_bytes(path, src, n, r, NULL, &a, &la);
		rb = build_bytes(path, src, n, r, "4096", &b, &lb);
		cr_expect_eq(ra, rb, "%s r=%u: %d in memory, %d spilled", what, r, ra, rb);
		if (a && b) {
			cr_expect_eq(la, lb, "%s r=%u: %zu bytes in memory, %zu spilled",
				     what, r, la, lb);
			cr_expect(la == lb && !memcmp(a, b, la),
				  "%s r=%u: the spilled index differs", what, r);
		}
		free(a);
		free(b);
	}
	*strrchr(path, '/') = '\0';
	cr_expect_eq(rmdir(path), 0, "%s: files left in %s", what, path);
	tarindex_sources_close(src, n);
}

Test(tarindex, spilled_build_is_byte_identical_on_the_fixtures)
{
	static const char *const base[] = {
		"gnu", "pax", "ustar", "v7", "base256", "sparse", "hostile",
		"badsum", "truncated", "negsize", "hugesize", "deep", "notatar",
		"empty", "imagenet_like", "conflict", "relink", "collide",
		"sparse_oldgnu", "sparse_pax00", "sparse_pax01", "sparse_pax10",
	};
	struct tarindex_source src[3];
	const char *dirs[3] = { "gnu", "ustar", "v7" };
	char name[64];
	size_t i;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
		snprintf(name, sizeof(name), "%s.tar", base[i]);
		src[0] = (struct tarindex_source){ fixture_path(name), "", NULL };
		spilled_equal(src, 1, base[i]);
		free((char *)src[0].path);
	}
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "dir/%s.tar", dirs[i]);
		src[i] = (struct tarindex_source){ fixture_path(name), dirs[i], NULL };
	}
	spilled_equal(src, 3, "dir");
	for (i = 0; i < 3; i++)
		free((char *)src[i].path);
}

/* A hard link header: `name` -> `target` (names under 100 bytes). */
static void tw_link(struct tarw *w, const char *name, const char *target)
{
	unsigned char *h;

	tw_header(w, name, '1', 0);
	h = w->p + w->len - 512;
	memcpy(h + 157, target, strlen(target));
	tarhdr_sum(h);
}

/*
 * Thousands of members in many directories, each written twice (the
 * second wins), every tenth a hard link to the one before it, some long
 * names, and a nested tar "d3/sub.tar" beside a member "d3/sub/clash":
 * spilled or not, the same index; the links read their target's bytes,
 * the duplicates their second copy.
 */
static void write_many(struct tarw *out)
{
	struct tarw in = { 0 };
	char name[300], data[32], prev[300] = "";
	int i, k;

	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "n%d.txt", i);
		snprintf(data, sizeof(data), "inner %d", i);
		tw_file(&in, name, data, strlen(data));
	}
	tw_end(&in);
	tw_file(out, "d3/sub.tar", in.p, in.len);
	tw_file(out, "d3/sub/clash", "c", 1);
	free(in.p);
	for (k = 0; k < 2; k++)
		for (i = 0; i < 1500; i++) {
			snprintf(name, sizeof(name), "d%d/%s%05d.JPEG", i % 7,
				 i % 97 ? "" : "a-long-name-of-more-than-a-hundred-bytes-"
				 "so-that-gnu-tar-writes-it-in-an-L-record-before-"
				 "its-header-", i);
			snprintf(data, sizeof(data), "%d copy %d", i, k);
			if (i % 10 == 9 && strlen(prev) < 100)
				tw_link(out, name, prev);
			else
				tw_file(out, name, data, strlen(data));
			snprintf(prev, sizeof(prev), "%s", name);
		}
}

Test(tarindex, spilled_build_is_byte_identical_on_many_members)
{
	struct tarw out = { 0 };
	char path[] = "/tmp/sfs-tarindex-many-XXXXXX";
	struct tarindex_source src = { path, "", NULL };
	struct built b;

	write_many(&out);
	tw_end(&out);
	tw_save(&out, path);
	spilled_equal(&src, 1, "many");
	setenv("SAMPLEFS_BUILD_MEM", "4096", 1);
	cr_assert_eq(build(&b, &src, 1, 1), 0);
	unsetenv("SAMPLEFS_BUILD_MEM");
	expect_file(&b.t, "d1/00001.JPEG", "1 copy 1");
	expect_file(&b.t, "d2/00009.JPEG", "8 copy 1");  /* a link to d1/00008 */
	expect_file(&b.t, "d3/sub.tar/n7.txt", "inner 7");
	expect_file(&b.t, "d3/sub/clash", "c");
	cr_expect_geq(tarindex_find(&b.t, "d0/a-long-name-of-more-than-a-hundred-bytes-"
		"so-that-gnu-tar-writes-it-in-an-L-record-before-its-header-00000.JPEG"), 0);
	unbuild(&b);
	unlink(path);
}

/* A build that fails after spilling (its second source is not a tar)
 * leaves nothing in the index directory, as one that succeeds does. */
Test(tarindex, spilled_build_leaves_no_scratch_file)
{
	struct tarw out = { 0 };
	char tar[] = "/tmp/sfs-tarindex-many-XXXXXX", dir[64];
	struct tarindex_source src[2] = { { tar, "a", NULL },
					  { fixture_path("notatar.tar"), "b", NULL } };
	char *bytes;
	size_t len;

	write_many(&out);
	tw_end(&out);
	tw_save(&out, tar);
	cr_assert_eq(tarindex_sources_open(NULL, src, 2), 0);
	strcpy(dir, "/tmp/sfs-tarindex-dir-XXXXXX");
	cr_assert(mkdtemp(dir));
	strcat(dir, "/i");
	cr_expect_eq(build_bytes(dir, src, 2, 1, "4096", &bytes, &len), -EINVAL);
	cr_expect_eq(build_bytes(dir, src, 1, 1, "4096", &bytes, &len), 0);
	free(bytes);
	*strrchr(dir, '/') = '\0';
	cr_expect_eq(rmdir(dir), 0, "files left in %s", dir);
	tarindex_sources_close(src, 2);
	free((char *)src[1].path);
	unlink(tar);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* kB of field `key` ("VmHWM:") of /proc/self/status, or -1. */
static long status_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/*
 * 300,000 members in 300 nested tars (150 MB of headers) built with runs
 * of 1 MiB: the build's peak grows the process by far less than the 57 MB
 * a build holding ~190 B a member took (bound 24 MiB, 5x what it takes).
 * In a child, whose high-water mark starts at its size when forked.  Not
 * under ASan, whose quarantine keeps what is freed.
 */
Test(tarindex, spilled_build_memory_is_bounded, .timeout = 120)
{
	char path[] = "/tmp/sfs-tarindex-big-XXXXXX", idx[64];
	struct tarindex_source src = { path, "", NULL };
	unsigned char h[512];
	int fd = mkstemp(path), t, m;
	FILE *f = fdopen(fd, "wb");
	char *bytes;
	size_t len;
	long before, after;

#ifdef UNDER_ASAN
	unlink(path);
	cr_skip_test("ASan's quarantine keeps freed memory resident");
#endif
	cr_assert(f);
	for (t = 0; t < 300; t++) {
		memset(h, 0, sizeof(h));
		snprintf((char *)h, 100, "n%08d.tar", t);
		memcpy(h + 100, "0000644", 8);
		snprintf((char *)h + 124, 12, "%011o", 1000 * 512 + 1024);
		h[156] = '0';
		memcpy(h + 257, "ustar", 6);
		memcpy(h + 263, "00", 2);
		tarhdr_sum(h);
		fwrite(h, 1, 512, f);
		for (m = 0; m < 1000; m++) {
			snprintf((char *)h, 100, "n%08d_%d.JPEG", t, m);
			snprintf((char *)h + 124, 12, "%011o", 0);
			tarhdr_sum(h);
			fwrite(h, 1, 512, f);
		}
		memset(h, 0, sizeof(h));
		fwrite(h, 1, 512, f);
		fwrite(h, 1, 512, f);
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(tarindex_sources_open(NULL, &src, 1), 0);
	strcpy(idx, "/tmp/sfs-tarindex-bigidx-XXXXXX");
	cr_assert(mkdtemp(idx));
	strcat(idx, "/i");
	before = status_kb("VmHWM:");
	cr_assert_eq(build_bytes(idx, &src, 1, 1, "1048576", &bytes, &len), 0);
	after = status_kb("VmHWM:");
	/* the index read back in (~13 MB) is counted: it must not be */
	cr_assert_gt(len, 300000 * 40);
	cr_expect_lt(after - before - (long)(len / 1024), 24 << 10,
		     "the build grew the process by %ld kB", after - before);
	free(bytes);
	*strrchr(idx, '/') = '\0';
	rmdir(idx);
	tarindex_sources_close(&src, 1);
	unlink(path);
}
