/*
 * test_tarindex.c - the tar index against Python's tarfile: for every
 * fixture of tests/fixtures/make_tars.py and recursive = 0..3, the tree
 * read back from a built, committed and re-mapped index (types, sizes,
 * data offsets, mtimes, symlink targets, and the sha256 of every file's
 * bytes as read by tarindex_pread) must equal the oracle's.  Also lookups,
 * parents, -EIO on a source truncated after indexing, corrupt sections
 * (nodes, sparse maps), staleness, two tarindexes in one file, the bytes
 * per member and mutated archives.  Tars written byte by byte and the
 * build in bounded memory: test_tarindex_written.c.
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

/* ------------------------------------------------------------ sha256 */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
};

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))

static void sha_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a[8], t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ w[i - 15] >> 3) +
		       w[i - 7] + (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ w[i - 2] >> 10);
	memcpy(a, s->h, sizeof(a));
	for (i = 0; i < 64; i++) {
		t1 = a[7] + (ROR(a[4], 6) ^ ROR(a[4], 11) ^ ROR(a[4], 25)) +
		     ((a[4] & a[5]) ^ (~a[4] & a[6])) + K[i] + w[i];
		t2 = (ROR(a[0], 2) ^ ROR(a[0], 13) ^ ROR(a[0], 22)) +
		     ((a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]));
		memmove(a + 1, a, 7 * sizeof(*a));
		a[4] += t1;
		a[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		s->h[i] += a[i];
}

static void sha_init(struct sha256 *s)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
}

static void sha_update(struct sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;

	while (n--) {
		s->buf[s->len++ % 64] = *p++;
		if (s->len % 64 == 0)
			sha_block(s, s->buf);
	}
}

static void sha_hex(struct sha256 *s, char out[65])
{
	uint64_t bits = s->len * 8;
	unsigned char pad = 0x80, len[8];
	int i;

	sha_update(s, &pad, 1);
	pad = 0;
	while (s->len % 64 != 56)
		sha_update(s, &pad, 1);
	for (i = 0; i < 8; i++)
		len[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha_update(s, len, 8);
	for (i = 0; i < 8; i++)
		sprintf(out + 8 * i, "%08x", s->h[i]);
}

Test(tarindex, sha256_self_check)
{
	struct sha256 s;
	char hex[65];

	sha_init(&s);
	sha_update(&s, "abc", 3);
	sha_hex(&s, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* ------------------------------------------------------------ helpers */

/* One line of a .tree file, or of our own dump. */
struct rec {
	char type[16], sha[65];
	unsigned long long size, off;
	long long mtime;
	char *path, *target;
};

static int rec_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rec *)a)->path, ((const struct rec *)b)->path);
}

static size_t parse_tree(char *text, struct rec **out)
{
	size_t n = 0, cap = 16;
	struct rec *r = malloc(cap * sizeof(*r));
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[7];
		int i;

		if (n == cap)
			r = realloc(r, (cap *= 2) * sizeof(*r));
		for (i = 0; i < 7; i++)
			f[i] = strsep(&line, "\t");
		cr_assert(f[6], "bad tree line");
		snprintf(r[n].type, sizeof(r[n].type), "%s", f[0]);
		r[n].size = strtoull(f[1], NULL, 10);
		r[n].off = strtoull(f[2], NULL, 10);
		r[n].mtime = strtoll(f[3], NULL, 10);
		snprintf(r[n].sha, sizeof(r[n].sha), "%s", f[4]);
		r[n].path = f[5];
		r[n].target = f[6];
		n++;
	}
	*out = r;
	return n;
}

/* A fixture text file (tree listings, status), NUL-terminated. */
static char *slurp_text(const char *name)
{
	size_t len;

	return (char *)slurp(name, &len);
}

static void file_sha(const struct tarindex *t, uint32_t i, char hex[65])
{
	static char buf[4096];
	struct sha256 s;
	uint64_t off = 0;
	ssize_t k;

	sha_init(&s);
	while ((k = tarindex_pread(t, i, buf, sizeof(buf), off)) > 0) {
		sha_update(&s, buf, (size_t)k);
		off += (uint64_t)k;
	}
	cr_assert_eq(k, 0, "read error %zd", k);
	cr_assert_eq(off, tarindex_node_size(tarindex_node(t, i)));
	sha_hex(&s, hex);
}

/* Dumps the subtree of dir into recs (depth first), checking lookups. */
static void dump(const struct tarindex *t, uint32_t dir, const char *prefix,
		 struct rec **recs, size_t *n, size_t *cap)
{
	uint32_t first, count, i;

	cr_assert_eq(tarindex_children(t, dir, &first, &count), 0);
	for (i = first; i < first + count; i++) {
		const struct tarindex_node *nd = tarindex_node(t, i);
		struct rec *r;
		uint64_t len;

		if (*n == *cap)
			*recs = realloc(*recs, (*cap = *cap * 2 + 16) * sizeof(**recs));
		r = &(*recs)[(*n)++];
		memset(r, 0, sizeof(*r));
		cr_assert(asprintf(&r->path, "%s%s%s", prefix, *prefix ? "/" : "",
				   tarindex_name(t, i)) > 0);
		cr_expect_eq(tarindex_parent(t, i), dir, "parent of %s", r->path);
		cr_expect_eq(tarindex_lookup(t, dir, tarindex_name(t, i)), i);
		cr_expect_eq(tarindex_find(t, r->path), i, "find %s", r->path);
		r->mtime = nd->mtime;
		r->target = strdup("");
		strcpy(r->sha, "-");
		switch (tarindex_node_type(nd)) {
		case TARINDEX_DIR:
			strcpy(r->type, "dir");
			cr_expect_eq(tarindex_pread(t, i, r->sha, 1, 0), -EISDIR);
			dump(t, i, r->path, recs, n, cap);
			break;
		case TARINDEX_FILE:
			strcpy(r->type, "file");
			r->size = tarindex_node_size(nd);
			r->off = nd->off;
			file_sha(t, i, r->sha);
			cr_expect_eq(tarindex_lookup(t, i, "x"), -ENOTDIR);
			break;
		case TARINDEX_SYMLINK:
			strcpy(r->type, "symlink");
			free(r->target);
			r->target = strdup(tarindex_link(t, i, &len));
			cr_expect_eq(strlen(r->target), len);
			break;
		}
	}
}

static void compare(const struct tarindex *t, const char *treefile)
{
	char *text = slurp_text(treefile);
	struct rec *want, *got = NULL;
	size_t nwant = parse_tree(text, &want), ngot = 0, cap = 0, i;

	dump(t, TARINDEX_ROOT, "", &got, &ngot, &cap);
	if (nwant)
		qsort(want, nwant, sizeof(*want), rec_cmp);
	if (ngot)
		qsort(got, ngot, sizeof(*got), rec_cmp);
	cr_expect_eq(ngot, nwant, "%s: %zu nodes, oracle has %zu", treefile, ngot, nwant);
	for (i = 0; i < ngot && i < nwant; i++) {
		struct rec *g = &got[i], *w = &want[i];

		cr_expect_str_eq(g->path, w->path, "%s: node %zu", treefile, i);
		if (strcmp(g->path, w->path))
			break;
		cr_expect_str_eq(g->type, w->type, "%s: type of %s", treefile, g->path);
		cr_expect_eq(g->size, w->size, "%s: size of %s", treefile, g->path);
		cr_expect_eq(g->off, w->off, "%s: offset of %s", treefile, g->path);
		cr_expect_str_eq(g->sha, w->sha, "%s: sha256 of %s", treefile, g->path);
		cr_expect_str_eq(g->target, w->target, "%s: target of %s", treefile, g->path);
		if (w->mtime >= 0)
			cr_expect_eq(g->mtime, w->mtime, "%s: mtime of %s", treefile, g->path);
	}
	cr_expect_eq(t->nnodes, ngot + 1);
	for (i = 0; i < ngot; i++) {
		free(got[i].path);
		free(got[i].target);
	}
	free(got);
	free(want);
	free(text);
}

static void check_fixture(const char *base)
{
	char name[64], status[64], *tar;
	struct tarindex_source src;
	struct built b;
	uint32_t r;
	int rc;

	snprintf(name, sizeof(name), "%s.tar", base);
	tar = fixture_path(name);
	snprintf(status, sizeof(status), "%s.status", base);
	src.path = tar;
	src.dir = "";
	src.src = NULL;
	for (r = 0; r <= 3; r++) {
		char *st = slurp_text(status);

		rc = build(&b, &src, 1, r);
		if (!strcmp(st, "error\n")) {
			cr_expect_eq(rc, -EINVAL, "%s: build returned %d", base, rc);
			free(st);
			continue;
		}
		free(st);
		cr_assert_eq(rc, 0, "%s: build returned %d", base, rc);
		snprintf(name, sizeof(name), "%s.r%u.tree", base, r);
		compare(&b.t, name);
		unbuild(&b);
	}
	free(tar);
}

Test(tarindex, gnu) { check_fixture("gnu"); }
Test(tarindex, pax) { check_fixture("pax"); }
Test(tarindex, ustar) { check_fixture("ustar"); }
Test(tarindex, v7) { check_fixture("v7"); }
Test(tarindex, base256) { check_fixture("base256"); }
Test(tarindex, sparse) { check_fixture("sparse"); }
Test(tarindex, hostile) { check_fixture("hostile"); }
Test(tarindex, badsum) { check_fixture("badsum"); }
Test(tarindex, truncated) { check_fixture("truncated"); }
Test(tarindex, negsize) { check_fixture("negsize"); }
Test(tarindex, hugesize) { check_fixture("hugesize"); }
Test(tarindex, deep_nesting_bounded_by_recursive) { check_fixture("deep"); }
Test(tarindex, not_a_tar) { check_fixture("notatar"); }
Test(tarindex, empty) { check_fixture("empty"); }
Test(tarindex, imagenet_like) { check_fixture("imagenet_like"); }
Test(tarindex, file_and_dir_links_chains) { check_fixture("conflict"); }
Test(tarindex, links_take_their_target_where_they_appear) { check_fixture("relink"); }
Test(tarindex, nested_tar_beside_same_path_keeps_both) { check_fixture("collide"); }

/* Each nested tar moved to "P.tar/" is warned once, naming both members. */
Test(tarindex, nested_tar_clash_warns_naming_both)
{
	static const char *const want[] = {
		"nested tar 'd/inner.tar' would be directory 'd/inner', which member 'd/inner' also uses",
		"nested tar 'a.tar' would be directory 'a', which member 'a/x.txt' also uses",
		"nested tar 'b.tar' would be directory 'b', which member 'b' also uses",
		"nested tar 'b/deep.tar' would be directory 'b/deep', which member 'b/deep/z' also uses",
	};
	struct tarindex_source src = { fixture_path("collide.tar"), "", NULL };
	struct capture cap;
	struct built b;
	char *msg, *p;
	size_t i;
	int n = 0, rc;

	capture_start(&cap);
	rc = build(&b, &src, 1, 2);
	msg = capture_end(&cap);
	cr_assert_eq(rc, 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(strstr(msg, want[i]), "want '%s', got: %s", want[i], msg);
	for (p = msg; (p = strstr(p, "nested tar '")); p++)
		n++;
	cr_expect_eq(n, 4, "4 warnings (e.tar twice merges quietly), got: %s", msg);
	unbuild(&b);
	free(msg);
	free((char *)src.path);
}
Test(tarindex, sparse_old_gnu_by_gnu_tar) { check_fixture("sparse_oldgnu"); }
Test(tarindex, sparse_pax_0_0_by_gnu_tar) { check_fixture("sparse_pax00"); }
Test(tarindex, sparse_pax_0_1_by_gnu_tar) { check_fixture("sparse_pax01"); }
Test(tarindex, sparse_pax_1_0_by_gnu_tar) { check_fixture("sparse_pax10"); }

Test(tarindex, directory_of_tars)
{
	struct tarindex_source src[3];
	const char *names[3] = { "gnu", "ustar", "v7" };
	const char *tree = "dir.r1.tree";
	struct built b;
	int i;

	for (i = 0; i < 3; i++) {
		char n[64];

		snprintf(n, sizeof(n), "dir/%s.tar", names[i]);
		src[i].path = fixture_path(n);
		src[i].dir = names[i];
		src[i].src = NULL;
	}
	cr_assert_eq(build(&b, src, 3, 1), 0);
	compare(&b.t, tree);
	cr_expect_eq(b.t.nsrc, 3);
	unbuild(&b);
	for (i = 0; i < 3; i++)
		free((char *)src[i].path);
}

/*
 * Nested compressed tars (.tar.gz, .tgz, .tar.xz, .tar.bz2; a .tar.xz in a
 * .tgz): every file znest.rR.want lists (made by tarfile, gzip, lzma and
 * bz2) is in the tree with those bytes, and nothing else; look-alikes stay
 * files.  The index is mapped again (tarindex_open opens the derived
 * sources from their records, as a remount does).
 */
Test(tarindex, nested_compressed_tars)
{
	struct tarindex_source src = { fixture_path("znest.tar"), "", NULL };
	struct source_env *env;
	struct built b;
	uint32_t r;

	cr_assert_eq(source_env_new(NULL, &env), 0);
	for (r = 1; r <= 2; r++) {
		char name[32], *text, *line, *save = NULL, hex[65];
		uint64_t nwant = 0;

		snprintf(name, sizeof(name), "znest.r%u.want", r);
		text = slurp_text(name);
		cr_assert_eq(build_in(env, &b, &src, 1, r), 0);
		/* a, b, c, lvl/deep, and lvl/deep/in at recursive=2 */
		cr_expect_eq(b.t.ntop, 1);
		cr_expect_eq(b.t.nsrc, r == 1 ? 5 : 6);
		for (line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *sp = strchr(line, ' ');
			int64_t i;

			cr_assert(sp);
			*sp = '\0';
			i = tarindex_find(&b.t, line);
			cr_assert_geq(i, 0, "r%u: %s: not found", r, line);
			cr_assert_eq(tarindex_node_type(tarindex_node(&b.t, (uint32_t)i)),
				     TARINDEX_FILE, "r%u: %s: not a file", r, line);
			cr_expect_not(tarindex_zipped(&b.t, (uint32_t)i));
			file_sha(&b.t, (uint32_t)i, hex);
			cr_expect_str_eq(hex, sp + 1, "r%u: %s: other bytes", r, line);
			nwant++;
		}
		cr_expect_eq(b.t.nfiles, nwant, "r%u: %llu files, want %llu", r,
			     (unsigned long long)b.t.nfiles, (unsigned long long)nwant);
		/* mapped again: the derived sources opened from their records */
		tarindex_close(&b.t);
		cr_assert_eq(tarindex_open(&b.t, &b.m, 'A', &src, 1), 0);
		cr_expect_geq(tarindex_find(&b.t, "a/x/one.bin"), 0);
		unbuild(&b);
		free(text);
	}
	source_env_free(env);
	free((char *)src.path);
}

Test(tarindex, lookup_misses)
{
	struct tarindex_source src = { fixture_path("gnu.tar"), "", NULL };
	struct built b;
	int64_t i;

	cr_assert_eq(build(&b, &src, 1, 1), 0);
	cr_expect_eq(tarindex_lookup(&b.t, TARINDEX_ROOT, "nope"), -ENOENT);
	cr_expect_eq(tarindex_lookup(&b.t, TARINDEX_ROOT, ""), -ENOENT);
	cr_expect_eq(tarindex_find(&b.t, "data/zzz"), -ENOENT);
	cr_expect_eq(tarindex_find(&b.t, "data/a.txt/x"), -ENOTDIR);
	cr_expect_eq(tarindex_find(&b.t, ""), TARINDEX_ROOT);
	i = tarindex_find(&b.t, "/data//a.txt");
	cr_assert_geq(i, 0);
	cr_expect_eq(tarindex_parent(&b.t, TARINDEX_ROOT), TARINDEX_ROOT);
	/* reads at and past the end of a file */
	{
		char buf[16];

		cr_expect_eq(tarindex_pread(&b.t, (uint32_t)i, buf, 16, 1234), 0);
		cr_expect_eq(tarindex_pread(&b.t, (uint32_t)i, buf, 16, 1230), 4);
		cr_expect_eq(tarindex_pread(&b.t, (uint32_t)i, buf, 16, 99999), 0);
	}
	i = tarindex_find(&b.t, "link_in");
	cr_assert_geq(i, 0);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)i, &i, 1, 0), -EINVAL);
	unbuild(&b);
	free((char *)src.path);
}

static void copy_file(const char *from, const char *to)
{
	char *cmd;

	cr_assert(asprintf(&cmd, "cp '%s' '%s'", from, to) > 0);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

/* A private copy of fixture `name`, at `copy` (a mkstemp template), indexed
 * into b as its only source, *src. */
static void build_copy(struct built *b, char *copy, struct tarindex_source *src,
		       const char *name)
{
	char *orig = fixture_path(name);
	int fd = mkstemp(copy);

	cr_assert(fd >= 0);
	close(fd);
	copy_file(orig, copy);
	free(orig);
	*src = (struct tarindex_source){ copy, "", NULL };
	cr_assert_eq(build(b, src, 1, 1), 0);
}

/* A source truncated, or touched, after opening: every read of it gives
 * -EIO (its bytes may not be the members indexed), and goes on giving it
 * when size and mtime are put back: a change once seen stays (source.h). */
Test(tarindex, changed_after_open_gives_eio)
{
	char copy[] = "/tmp/sfs-tarcopy-XXXXXX", buf[4096];
	struct tarindex_source src;
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 2000000000, 0 } };
	struct timespec was[2] = { { 0, UTIME_OMIT } };
	struct built b;
	struct stat st;
	int64_t a, e;

	build_copy(&b, copy, &src, "gnu.tar");
	cr_assert_eq(stat(copy, &st), 0);
	was[1] = st.st_mtim;
	a = tarindex_find(&b.t, "data/a.txt");
	e = tarindex_find(&b.t, "old.txt");  /* the last member */
	cr_assert(a >= 0 && e >= 0);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)a, buf, sizeof(buf), 0), 1234);
	cr_expect_eq(source_check(tarindex_src(&b.t, 0)), 0);
	/* touched: same bytes, but nothing says so */
	cr_assert_eq(utimensat(AT_FDCWD, copy, later, 0), 0);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)a, buf, sizeof(buf), 0), -EIO);
	cr_expect_eq(source_check(tarindex_src(&b.t, 0)), -EIO);
	cr_assert_eq(utimensat(AT_FDCWD, copy, was, 0), 0);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)a, buf, sizeof(buf), 0), -EIO);
	cr_expect_eq(source_check(tarindex_src(&b.t, 0)), -EIO);
	unbuild(&b);
	unlink(copy);
	/* truncated, in a fresh build: even the members before the cut */
	strcpy(copy, "/tmp/sfs-tarcopy-XXXXXX");
	build_copy(&b, copy, &src, "gnu.tar");
	cr_assert_eq(stat(copy, &st), 0);
	was[1] = st.st_mtim;
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)a, buf, sizeof(buf), 0), 1234);
	cr_assert_eq(truncate(copy, (off_t)tarindex_node(&b.t, (uint32_t)e)->off + 2), 0);
	cr_assert_eq(utimensat(AT_FDCWD, copy, was, 0), 0);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)e, buf, sizeof(buf), 0), -EIO);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)e, buf, 1, 0), -EIO);
	cr_expect_eq(tarindex_pread(&b.t, (uint32_t)a, buf, sizeof(buf), 0), -EIO);
	unbuild(&b);
	unlink(copy);
}

/* A source opened at another size than the index says (sections that do
 * not match the fingerprint): tarindex_open refuses the index (-EBADMSG:
 * rebuild). */
Test(tarindex, open_refuses_a_source_of_another_size)
{
	char copy[] = "/tmp/sfs-tarcopy-XXXXXX";
	struct tarindex_source src;
	struct stat st;
	struct built b;

	build_copy(&b, copy, &src, "gnu.tar");
	tarindex_close(&b.t);
	tarindex_sources_close(&src, 1);
	cr_assert_eq(stat(copy, &st), 0);
	cr_assert_eq(truncate(copy, st.st_size + 512), 0);
	cr_assert_eq(tarindex_sources_open(NULL, &src, 1), 0);
	cr_expect_eq(tarindex_open(&b.t, &b.m, 'A', &src, 1), -EBADMSG);
	tarindex_sources_close(&src, 1);
	cr_assert_eq(truncate(copy, st.st_size), 0);
	cr_assert_eq(tarindex_sources_open(NULL, &src, 1), 0);
	cr_expect_eq(tarindex_open(&b.t, &b.m, 'A', &src, 1), 0);
	unbuild(&b);
	unlink(copy);
}

/* A source changed since the build: the fingerprint no longer matches. */
Test(tarindex, changed_source_is_stale)
{
	char copy[] = "/tmp/sfs-tarcopy-XXXXXX", why[256];
	struct tarindex_source src;
	struct index_fp fp;
	struct built b;
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };

	build_copy(&b, copy, &src, "ustar.tar");
	tarindex_close(&b.t);
	index_map_close(&b.m);
	tarindex_sources_close(&src, 1);
	cr_assert_eq(utimensat(AT_FDCWD, copy, ts, 0), 0);
	cr_assert_eq(tarindex_sources_open(NULL, &src, 1), 0);
	index_fp_init(&fp, "tar");
	cr_assert_eq(tarindex_fp_add(&fp, &src, 1, 1), 0);
	cr_expect_eq(index_map_open(&b.m, b.path, &fp, why, sizeof(why)), -ESTALE);
	/* and so does another recursion depth */
	tarindex_sources_close(&src, 1);
	cr_assert_eq(utimensat(AT_FDCWD, copy, NULL, 0), 0);
	cr_assert_eq(tarindex_sources_open(NULL, &src, 1), 0);
	index_fp_init(&fp, "tar");
	cr_assert_eq(tarindex_fp_add(&fp, &src, 1, 1), 0);
	index_fp_init(&b.fp, "tar");
	cr_assert_eq(tarindex_fp_add(&b.fp, &src, 1, 2), 0);
	cr_expect_neq(fp.h, b.fp.h);
	cr_expect_eq(tarindex_fp_add(&b.fp, &(struct tarindex_source){ copy, "", NULL }, 1, 1),
		     -EBADF, "a source not open");
	tarindex_sources_close(&src, 1);
	unlink(b.path);
	unlink(copy);
}

/* Lists every directory of t from the root, as a mount's readdirs would:
 * 0, or the first error. */
static int walk_dirs(const struct tarindex *t)
{
	uint32_t *todo = malloc(t->nnodes * sizeof(*todo)), n = 0, first, count;
	int rc = 0;

	cr_assert(todo);
	todo[n++] = TARINDEX_ROOT;
	while (n && rc == 0) {
		uint32_t d = todo[--n];

		rc = tarindex_children(t, d, &first, &count);
		for (uint32_t i = first; rc == 0 && i < first + count; i++)
			if (tarindex_node_type(tarindex_node(t, i)) == TARINDEX_DIR &&
			    n < t->nnodes)
				todo[n++] = i;
	}
	free(todo);
	return rc;
}

/* An edit of the copy of one section (len bytes) of index b. */
typedef void (*section_edit)(void *copy, uint64_t len, const struct built *b,
			     const void *arg);

/*
 * Rewrites the index of `fixture` with section `which` ("ND", "SM", ...)
 * changed by `edit` and committed again, so that the checksums are valid;
 * open must refuse it, or (the nodes, checked as used) a walk of every
 * directory fail with EIO, warning `says` when that is set.
 */
static void rewrite_and_open(const char *fixture, const char *which,
			     section_edit edit, const void *arg, const char *says)
{
	struct tarindex_source src = { fixture_path(fixture), "", NULL };
	static const char tags[8][2] = { "HD", "ND", "DR", "NM", "SR", "ST", "SM", "HL" };
	struct index_writer *w;
	struct index_map m2;
	struct tarindex t2;
	char path2[] = "/tmp/sfs-tarbad-XXXXXX", why[256], *msg;
	struct capture cap;
	struct built b;
	int i, fd, edited = 0;

	cr_assert_eq(build(&b, &src, 1, 1), 0);
	fd = mkstemp(path2);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(index_writer_open(&w, path2), 0);
	for (i = 0; i < 8; i++) {
		uint32_t tag = INDEX_TAG('A', 'T', tags[i][0], tags[i][1]);
		uint64_t len;
		const void *p = index_map_section(&b.m, tag, &len);
		void *copy = malloc(len + 1);

		cr_assert(p);
		memcpy(copy, p, len);
		if (!memcmp(tags[i], which, 2)) {
			edit(copy, len, &b, arg);
			edited = 1;
		}
		cr_assert_eq(index_writer_add(w, tag, copy, len), 0);
		free(copy);
	}
	cr_assert(edited, "no section %s", which);
	cr_assert_eq(index_writer_commit(w, &b.fp), 0);
	cr_assert_eq(index_map_open(&m2, path2, &b.fp, why, sizeof(why)), 0);
	capture_start(&cap);
	i = tarindex_open(&t2, &m2, 'A', &src, 1);
	/* the nodes and names are checked a directory at a time, as used */
	if (i == 0) {
		i = walk_dirs(&t2);
		tarindex_close(&t2);
	}
	msg = capture_end(&cap);
	cr_expect(i == -EBADMSG || i == -EIO, "open and walk returned %d", i);
	if (says)
		cr_expect(strstr(msg, says), "want '%s', got: %s", says, msg);
	free(msg);
	cr_expect_eq(tarindex_open(&t2, &m2, 'B', &src, 1), -EBADMSG, "no such sections");
	index_map_close(&m2);
	unlink(path2);
	unbuild(&b);
	free((char *)src.path);
}

struct node_edit {
	void (*edit)(struct tarindex_node *nodes, uint32_t n);
};

static void edit_nodes(void *copy, uint64_t len, const struct built *b,
		       const void *arg)
{
	((const struct node_edit *)arg)->edit(copy, (uint32_t)(len / sizeof(struct tarindex_node)));
}

/* gnu.tar's index with its node table changed by `edit`: refused. */
static void corrupt_and_open(void (*edit)(struct tarindex_node *nodes, uint32_t n),
			     const char *says)
{
	struct node_edit e = { edit };

	rewrite_and_open("gnu.tar", "ND", edit_nodes, &e, says);
}

static void edit_child_range(struct tarindex_node *n, uint32_t count)
{
	n[0].meta += 1000;      /* root claims more children than exist */
	(void)count;
}

static void edit_name(struct tarindex_node *n, uint32_t count)
{
	n[count - 1].name = UINT32_MAX;
}

/* the root's name, "": a node that readdir would list with no name */
static void edit_empty_name(struct tarindex_node *n, uint32_t count)
{
	n[count - 1].name = 0;
}

static void edit_order(struct tarindex_node *n, uint32_t count)
{
	uint32_t t = n[1].name;  /* swap two root children's names */

	n[1].name = n[2].name;
	n[2].name = t;
	(void)count;
}

static void edit_type(struct tarindex_node *n, uint32_t count)
{
	n[count / 2].meta |= 0xfull << 40;
}

static void edit_source(struct tarindex_node *n, uint32_t count)
{
	uint32_t i;

	for (i = 0; i < count; i++)
		if (tarindex_node_type(&n[i]) == TARINDEX_FILE)
			n[i].meta |= 5ull << 44;
}

/* The first regular file, turned into a directory that dirs[] does not
 * list (only the listed ones are checked to tile the node table). */
static struct tarindex_node *file_to_dir(struct tarindex_node *n, uint32_t count,
					 uint64_t first, uint64_t nchild)
{
	uint32_t i;

	for (i = 0; i < count; i++)
		if (tarindex_node_type(&n[i]) == TARINDEX_FILE)
			break;
	cr_assert(i + 1 < count, "no file node before the last");
	n[i].off = first;
	n[i].meta = nchild | (uint64_t)TARINDEX_DIR << 40;
	return &n[i];
}

/* First child near 2^64: first + count wraps to 4, which passed the old
 * `off + size > nnodes` check, and a lookup then read 2^32 - 6 nodes on. */
static void edit_range_wraps(struct tarindex_node *n, uint32_t count)
{
	file_to_dir(n, count, UINT64_MAX - 5, 10);
}

/* A child range inside the table, but the directory is not in dirs[]. */
static void edit_unlisted_dir(struct tarindex_node *n, uint32_t count)
{
	file_to_dir(n, count, count - 1, 1);
}

/* One name of a hard-linked file moved to other data: its inode would
 * then be two files. */
static void edit_link(struct tarindex_node *n, uint32_t count)
{
	uint32_t i, j;

	for (i = 0; i < count; i++)
		for (j = i + 1; j < count; j++)
			if (tarindex_node_type(&n[i]) == TARINDEX_FILE &&
			    tarindex_node_type(&n[j]) == TARINDEX_FILE && n[i].off == n[j].off) {
				n[j].off += 512;
				return;
			}
	cr_assert_fail("no hard link in the fixture");
}

Test(tarindex, corrupt_hard_link)
{
	corrupt_and_open(edit_link, "hard link does not match its group");
}
Test(tarindex, corrupt_child_range) { corrupt_and_open(edit_child_range, NULL); }
Test(tarindex, corrupt_name) { corrupt_and_open(edit_name, NULL); }
Test(tarindex, corrupt_empty_name) { corrupt_and_open(edit_empty_name, "empty name"); }
Test(tarindex, corrupt_order) { corrupt_and_open(edit_order, NULL); }
Test(tarindex, corrupt_type) { corrupt_and_open(edit_type, NULL); }
Test(tarindex, corrupt_source) { corrupt_and_open(edit_source, NULL); }
Test(tarindex, corrupt_child_range_wraps)
{
	corrupt_and_open(edit_range_wraps, "child range out of bounds");
}
Test(tarindex, corrupt_unlisted_directory)
{
	corrupt_and_open(edit_unlisted_dir, "not in the directory list");
}

/* Several tarindexes (and other sections) share one index file. */
/*
 * The end of a sparse member's map, {size, stored bytes}, moved by *arg
 * bytes in the chunk section's copy, for the first member whose map ends
 * in a hole (so that one byte less keeps the chunks in order and only
 * the end is wrong).  A map that ends short of the size would send a
 * read past its end beyond the map (sparse_read).
 */
static void edit_map_end(void *copy, uint64_t len, const struct built *b,
			 const void *arg)
{
	const struct tarindex *t = &b->t;
	struct tarindex_chunk *c = copy;
	uint32_t k;

	cr_assert_eq(len, t->nchunks * sizeof(*c));
	for (k = 0; k < t->nsparse; k++) {
		const struct tarindex_sparse *sp = &t->sparse[k];
		const struct tarindex_chunk *end = &c[sp->map + sp->nchunks];
		const struct tarindex_chunk *last = end - 1;

		if (sp->nchunks && end->off - last->off > end->data - last->data) {
			c[sp->map + sp->nchunks].off += *(const int64_t *)arg;
			return;
		}
	}
	cr_assert_fail("no sparse member of the fixture ends in a hole");
}

Test(tarindex, corrupt_sparse_map_ends_past_the_size)
{
	static const int64_t by = 1;

	rewrite_and_open("sparse_oldgnu.tar", "SM", edit_map_end, &by,
			 "sparse map does not end at the file's size");
}

Test(tarindex, corrupt_sparse_map_ends_short_of_the_size)
{
	static const int64_t by = -1;

	rewrite_and_open("sparse_oldgnu.tar", "SM", edit_map_end, &by,
			 "sparse map does not end at the file's size");
}

Test(tarindex, two_in_one_file)
{
	struct tarindex_source a = { fixture_path("gnu.tar"), "", NULL };
	struct tarindex_source u = { fixture_path("ustar.tar"), "u", NULL };
	struct tarindex_build_opts bo = { .recursive = 1, .quiet = 1 };
	char path[] = "/tmp/sfs-tartwo-XXXXXX", why[256];
	struct index_writer *w;
	struct index_fp fp;
	struct index_map m;
	struct tarindex ta, tu;
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(tarindex_sources_open(NULL, &a, 1), 0);
	cr_assert_eq(tarindex_sources_open(NULL, &u, 1), 0);
	index_fp_init(&fp, "test");
	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(tarindex_build(w, 'A', &a, 1, &bo), 0);
	cr_assert_eq(tarindex_build(w, 'U', &u, 1, &bo), 0);
	cr_assert_eq(index_writer_add(w, INDEX_TAG('X', 'T', 'R', 'A'), "x", 1), 0);
	cr_assert_eq(index_writer_commit(w, &fp), 0);
	cr_assert_eq(index_map_open(&m, path, &fp, why, sizeof(why)), 0);
	cr_assert_eq(tarindex_open(&ta, &m, 'A', &a, 1), 0);
	cr_assert_eq(tarindex_open(&tu, &m, 'U', &u, 1), 0);
	cr_expect_geq(tarindex_find(&ta, "data/a.txt"), 0);
	cr_expect_eq(tarindex_find(&ta, "u/plain.txt"), -ENOENT);
	cr_expect_geq(tarindex_find(&tu, "u/plain.txt"), 0);
	tarindex_close(&ta);
	tarindex_close(&tu);
	cr_expect_eq(tarindex_open(&tu, &m, 'U', &u, 2), -EBADMSG, "source count");
	index_map_close(&m);
	tarindex_sources_close(&a, 1);
	tarindex_sources_close(&u, 1);
	unlink(path);
	free((char *)a.path);
	free((char *)u.path);
}

/* ImageNet-like names (nested class tars): under 48 bytes per member. */
Test(tarindex, bytes_per_member)
{
	struct tarindex_source src = { fixture_path("imagenet_like.tar"), "", NULL };
	struct built b;
	uint64_t len, total = 0;
	static const char tags[3][2] = { "ND", "DR", "NM" };
	int i;

	cr_assert_eq(build(&b, &src, 1, 1), 0);
	for (i = 0; i < 3; i++) {
		cr_assert(index_map_section(&b.m, INDEX_TAG('A', 'T', tags[i][0], tags[i][1]), &len));
		total += len;
	}
	cr_assert_gt(b.t.nfiles, 1000);
	cr_expect_lt((double)total / (double)b.t.nfiles, 48.0,
		     "%.1f bytes per member", (double)total / (double)b.t.nfiles);
	unbuild(&b);
	free((char *)src.path);
}

#ifndef MUT_ITERS
#define MUT_ITERS 400   /* -DMUT_ITERS=100000 for a longer fuzzing run */
#endif


/*
 * Hostile input at scale: MUT_ITERS deterministic mutations of gnu.tar (random
 * bytes in random header blocks, checksums recomputed so they are parsed)
 * must each build or fail cleanly, and every file of an index that builds
 * must read back exactly its size (the source is intact).  Run under
 * ASan/UBSan this is a small fuzzer.
 */
Test(tarindex, mutated_archives_never_crash, .timeout = 600)
{
	char *orig = fixture_path("gnu.tar"), path[] = "/tmp/sfs-tarmut-XXXXXX";
	size_t len;
	uint8_t *data = slurp("gnu.tar", &len);
	struct tarindex_source src = { path, "", NULL };
	static unsigned char buf[65536];
	struct stat st;
	uint64_t seed = 12345;
	int iter, fd = mkstemp(path), built = 0;

	cr_assert(fd >= 0 && stat(orig, &st) == 0 && st.st_size < (off_t)sizeof(buf));
	close(fd);
	for (iter = 0; iter < MUT_ITERS; iter++) {
		size_t nblk = (size_t)st.st_size / 512, k;
		struct built b;
		uint32_t i;
		FILE *f;

		memcpy(buf, data, (size_t)st.st_size);
		for (k = 0; k < (size_t)(1 + iter % 4); k++) {
			size_t blk, at;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			blk = (seed >> 33) % nblk;
			at = (seed >> 13) % 512;
			buf[blk * 512 + at] = (unsigned char)(seed >> 5);
			if (seed & 1)
				tarhdr_sum(buf + blk * 512);
		}
		f = fopen(path, "wb");
		cr_assert(f && fwrite(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
		fclose(f);
		if (build(&b, &src, 1, 2) < 0)
			continue;
		built++;
		for (i = 0; i < b.t.nnodes; i++) {
			const struct tarindex_node *n = tarindex_node(&b.t, i);
			uint64_t off = 0;
			ssize_t r;

			if (tarindex_node_type(n) != TARINDEX_FILE)
				continue;
			while ((r = tarindex_pread(&b.t, i, buf + 40000, 8192, off)) > 0)
				off += (uint64_t)r;
			cr_expect_eq(r, 0);
			cr_expect_eq(off, tarindex_node_size(n), "iteration %d node %u", iter, i);
		}
		unbuild(&b);
	}
	cr_expect_gt(built, MUT_ITERS / 4, "most mutations still build (%d)", built);
	unlink(path);
	free(data);
	free(orig);
}
