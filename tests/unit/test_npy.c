/*
 * test_npy.c - core/formats/npy.c against numpy: the manifest written by
 * tests/fixtures/make_npy.py says, for each fixture, what numpy wrote or
 * read (emit, parse), what numpy refuses (bad) and what we refuse on purpose
 * (unsup).  Nothing here is computed by our own code.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/npy.h"

#define FIXTURE_SUBDIR "npy"
#include "fixture.h"

static uint64_t u64(const char *s)
{
	return strtoull(s, NULL, 10);
}

/* emit FILE DESCR NDIM D...: our header == the first bytes np.save wrote */
static void check_emit(struct line *l)
{
	size_t len;
	uint8_t *file = slurp(l->tok[1], &len);
	uint64_t shape[NPY_MAX_DIMS];
	char out[4096];
	int ndim = atoi(l->tok[3]), n, i;

	for (i = 0; i < ndim; i++)
		shape[i] = u64(l->tok[4 + i]);
	n = npy_header_emit(out, sizeof(out), l->tok[2], ndim, shape);
	cr_assert(n > 0, "%s: emit failed: %d", l->tok[1], n);
	cr_expect(n % 64 == 0, "%s: length %d", l->tok[1], n);
	cr_assert((size_t)n <= len, "%s: emitted %d > file %zu", l->tok[1], n, len);
	cr_expect(memcmp(out, file, (size_t)n) == 0, "%s: header differs:\n%.*s\nvs\n%.*s",
		  l->tok[1], n - 10, out + 10, n - 10, (char *)file + 10);
	/* and the same bytes parse back to the same array */
	struct npy_header h;
	size_t need = 0;

	cr_assert(npy_header_parse((const uint8_t *)out, (size_t)n, l->tok[1], &h, &need) == 0,
		  "%s: our header does not parse back", l->tok[1]);
	cr_expect(h.ndim == ndim && h.data_offset == (uint32_t)n && !h.fortran_order,
		  "%s: parsed back ndim %d offset %u", l->tok[1], h.ndim, h.data_offset);
	cr_expect_str_eq(h.descr, l->tok[2], "%s: descr parsed back", l->tok[1]);
	for (i = 0; i < ndim && i < h.ndim; i++)
		cr_expect(h.shape[i] == shape[i], "%s: dim %d parsed back as %lu", l->tok[1], i,
			  (unsigned long)h.shape[i]);
	free(file);
}

Test(npy, emit_matches_np_save)
{
	cr_expect(each("emit", check_emit) > 400);
}

/* parse FILE DESCR FORTRAN VERSION OFFSET NDIM D...: numpy's reading */
static void check_parse(struct line *l)
{
	size_t len, need = 0;
	uint8_t *file = slurp(l->tok[1], &len);
	struct npy_header h;
	int ndim = atoi(l->tok[6]), rc, i;
	const char *name = l->tok[1];

	rc = npy_header_parse(file, len, name, &h, &need);
	cr_assert(rc == 0, "%s: parse returned %d", name, rc);
	cr_expect_str_eq(h.descr, l->tok[2], "%s: descr", name);
	cr_expect(h.fortran_order == atoi(l->tok[3]), "%s: fortran_order", name);
	cr_expect(h.version == atoi(l->tok[4]), "%s: version %d", name, h.version);
	cr_expect(h.data_offset == u64(l->tok[5]), "%s: data_offset %u", name, h.data_offset);
	cr_assert(h.ndim == ndim, "%s: ndim %d", name, h.ndim);
	for (i = 0; i < ndim; i++)
		cr_expect(h.shape[i] == u64(l->tok[7 + i]), "%s: dim %d", name, i);
	/* itemsize from numpy: the data after the header is count * itemsize */
	if (npy_count(&h, 0) < 100000)
		cr_expect(len == h.data_offset || len - h.data_offset == npy_count(&h, 0) * h.itemsize,
			  "%s: itemsize %u", name, h.itemsize);

	/* Every shorter prefix asks for more, never misparses. */
	for (size_t cut = 0; cut < h.data_offset; cut++) {
		struct npy_header h2;
		need = 0;
		rc = npy_header_parse(file, cut, name, &h2, &need);
		cr_assert(rc == -EAGAIN, "%s: %zu bytes: %d", name, cut, rc);
		cr_assert(need > cut && need <= h.data_offset, "%s: need %zu", name, need);
	}
	free(file);
}

Test(npy, parse_as_numpy_reads)
{
	cr_expect(each("parse", check_parse) > 400);
}

static void check_bad(struct line *l)
{
	size_t len, need = 0;
	uint8_t *file = slurp(l->tok[1], &len);
	struct npy_header h;
	int rc;

	rc = npy_header_parse(file, len, l->tok[1], &h, &need);
	cr_expect(rc == -EINVAL, "%s: parse returned %d, expected -EINVAL", l->tok[1], rc);
	free(file);
}

Test(npy, hostile_headers_rejected, .init = cr_redirect_stderr)
{
	char msg[256];
	FILE *err;

	cr_expect(each("bad", check_bad) >= 15);
	cr_expect(each("unsup", check_bad) >= 5);
	/* messages name the file and the offset */
	fflush(stderr);
	err = cr_get_redirected_stderr();
	cr_assert(fgets(msg, sizeof(msg), err));
	cr_expect(strstr(msg, "bad_magic.npy") && strstr(msg, "offset"), "message: %s", msg);
}

static void check_norm(struct line *l)
{
	char out[32];

	cr_assert(npy_descr_normalize(l->tok[1], out, sizeof(out)) == 0, "%s", l->tok[1]);
	cr_expect_str_eq(out, l->tok[2], "normalize %s", l->tok[1]);
}

Test(npy, descr_normalized_like_numpy)
{
	cr_expect(each("norm", check_norm) > 10);
}

Test(npy, emit_too_small_buffer)
{
	char out[127];
	uint64_t shape[2] = {28, 28};

	cr_expect(npy_header_emit(out, sizeof(out), "<f4", 2, shape) == -ENOSPC);
	cr_expect(npy_header_emit(out, 64, "<f4", 0, shape) == -ENOSPC);
}

Test(npy, count_saturates)
{
	struct npy_header h = {.ndim = 3, .shape = {1ull << 40, 1ull << 30, 5}};

	cr_expect(npy_count(&h, 0) == UINT64_MAX);
	cr_expect(npy_count(&h, 1) == 5ull << 30);
	cr_expect(npy_count(&h, 3) == 1);
	h.shape[1] = 0;
	cr_expect(npy_count(&h, 0) == 0);
}

/* Every single-byte corruption of a real header: an answer, never a crash
 * (ASan/UBSan runs make this a memory-safety test).  A parse that succeeds
 * must still describe a header that fits in the bytes given. */
Test(npy, mutations_never_crash, .init = cr_redirect_stderr)
{
	size_t len, need;
	uint8_t *file = slurp("emit100.npy", &len);
	static const uint8_t vals[] = {0, ' ', '\'', '(', ')', ',', '9', '}', 0xff};
	struct npy_header h;

	for (size_t i = 0; i < 128 && i < len; i++) {
		uint8_t keep = file[i];
		for (size_t v = 0; v < sizeof(vals); v++) {
			file[i] = vals[v];
			need = 0;
			int rc = npy_header_parse(file, len, "mut", &h, &need);
			cr_assert(rc == 0 || rc == -EINVAL || rc == -EAGAIN);
			if (rc == 0)
				cr_assert(h.data_offset <= len && h.ndim <= NPY_MAX_DIMS);
		}
		file[i] = keep;
	}
	free(file);
}

/* ---- the npy layout (core/layouts/layout_npy.c) against np.save(arr[i]) ---- */

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layouts/layouts.h"

struct entry {
	char name[64];
	struct sfs_attr attr;
	uint64_t cookie;
};

struct listing {
	struct entry *e;
	size_t n, cap, stop_after;	/* stop_after: say "full" after this many */
};

static int collect(void *arg, const char *name, const struct sfs_attr *attr,
		   uint64_t cookie)
{
	struct listing *l = arg;

	if (l->stop_after && l->n == l->stop_after)
		return 1;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->e = realloc(l->e, l->cap * sizeof(*l->e));
		cr_assert(l->e);
	}
	snprintf(l->e[l->n].name, sizeof(l->e[l->n].name), "%s", name);
	l->e[l->n].attr = *attr;
	l->e[l->n].cookie = cookie;
	l->n++;
	return 0;
}

static void list_all(struct layout *L, uint64_t dir, struct listing *out)
{
	memset(out, 0, sizeof(*out));
	cr_assert(L->ops->readdir(L->priv, dir, 0, collect, out) == 0);
}

/* Names in a real directory, sorted, as the oracle's listing. */
static int oracle_names(const char *dir, char names[][64], int max)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert(d, "cannot open %s", dir);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && n < max)
			snprintf(names[n++], 64, "%.63s", de->d_name);
	closedir(d);
	qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
	return n;
}

static void open_npy(const char *src, struct sfs_opts *o, struct layout *L)
{
	sfs_opts_default(o);
	o->source = src;
	o->layout = "npy";
	cr_assert(layout_open(o, NULL, L) == 0, "layout_open (npy) %s", src);
}

/* Reads the whole file in chunks of `step` bytes and compares with want. */
static void check_file(struct layout *L, uint64_t ino, const uint8_t *want,
		       size_t len, size_t step, const char *what)
{
	char buf[8192];
	size_t off = 0;

	while (off < len) {
		ssize_t n = L->ops->read(L->priv, ino, buf, step, off);
		cr_assert(n > 0, "%s: read at %zu: %zd", what, off, n);
		cr_assert((size_t)n == (step < len - off ? step : len - off), "%s: short", what);
		cr_assert(memcmp(buf, want + off, (size_t)n) == 0, "%s: bytes at %zu", what, off);
		off += (size_t)n;
	}
	cr_expect(L->ops->read(L->priv, ino, buf, step, len) == 0, "%s: read at EOF", what);
	cr_expect(L->ops->read(L->priv, ino, buf, step, len + 100) == 0);
}

Test(npy_layout, serves_np_save_rows, .init = cr_redirect_stderr)
{
	static char arrays[16][64], rows[2000][64];
	char *src = fixture_path("../npy_layout/src"), *rowdir;
	uint64_t files = 0, bytes = 0, want_files = 1, want_bytes = 0;
	struct listing root, dir;
	struct sfs_opts o;
	struct sfs_attr a;
	struct layout L;
	int na, nr;

	open_npy(src, &o, &L);
	cr_assert(asprintf(&rowdir, "%.*s/rows", (int)(strlen(src) - 4), src) > 0);
	na = oracle_names(rowdir, arrays, 16);
	list_all(&L, SFS_ROOT_INO, &root);
	cr_assert(root.n == (size_t)na, "%zu arrays served, numpy wrote %d", root.n, na);
	cr_assert(L.ops->getattr(L.priv, SFS_ROOT_INO, &a) == 0);
	cr_expect(a.nlink == 2u + (uint32_t)na && (a.mode & 0777) == 0555);
	want_files += (uint64_t)na;
	for (int k = 0; k < na; k++) {
		char path[4096];
		struct sfs_attr d;

		cr_assert_str_eq(root.e[k].name, arrays[k]);
		cr_assert(L.ops->lookup(L.priv, SFS_ROOT_INO, arrays[k], &d) == 0);
		cr_expect(d.ino == root.e[k].attr.ino && d.nlink == 2);
		snprintf(path, sizeof(path), "%s/%s", rowdir, arrays[k]);
		nr = oracle_names(path, rows, 2000);
		list_all(&L, d.ino, &dir);
		cr_assert(dir.n == (size_t)nr, "%s: %zu rows, numpy wrote %d", arrays[k], dir.n, nr);
		for (int i = 0; i < nr; i++) {
			struct sfs_attr r, g;
			size_t len;
			uint8_t *want;

			cr_assert_str_eq(dir.e[i].name, rows[i]);
			snprintf(path, sizeof(path), "../npy_layout/rows/%s/%s", arrays[k], rows[i]);
			want = slurp(path, &len);
			cr_assert(L.ops->lookup(L.priv, d.ino, rows[i], &r) == 0);
			cr_assert(L.ops->getattr(L.priv, r.ino, &g) == 0);
			cr_expect(g.ino == r.ino && g.size == r.size && r.ino == dir.e[i].attr.ino);
			cr_expect(r.size == len, "%s/%s: size %llu, numpy %zu", arrays[k], rows[i],
				  (unsigned long long)r.size, len);
			check_file(&L, r.ino, want, len, 8192, path);
			if (i < 3)
				check_file(&L, r.ino, want, len, 7, path);
			want_files++;
			want_bytes += len;
			free(want);
		}
		free(dir.e);
	}
	L.ops->statfs(L.priv, &files, &bytes);
	cr_expect(files == want_files && bytes == want_bytes, "statfs %llu files %llu bytes",
		  (unsigned long long)files, (unsigned long long)bytes);
	free(root.e);
	layout_close(&L);
	free(rowdir);
	free(src);
}

/* Resuming from each cookie, a few entries per call, gives the same list. */
Test(npy_layout, readdir_resumes_at_cookies, .init = cr_redirect_stderr)
{
	char *src = fixture_path("../npy_layout/src");
	struct listing all, part;
	struct sfs_opts o;
	struct sfs_attr d;
	struct layout L;
	uint64_t off = 0;
	size_t got = 0;

	open_npy(src, &o, &L);
	cr_assert(L.ops->lookup(L.priv, SFS_ROOT_INO, "f", &d) == 0);
	list_all(&L, d.ino, &all);
	cr_assert(all.n == 1200);
	for (size_t chunk = 1; got < all.n; chunk = chunk % 13 + 1) {
		memset(&part, 0, sizeof(part));
		part.stop_after = chunk;
		cr_assert(L.ops->readdir(L.priv, d.ino, off, collect, &part) == 0);
		cr_assert(part.n > 0, "no progress at %llu", (unsigned long long)off);
		for (size_t i = 0; i < part.n; i++, got++) {
			cr_assert_str_eq(part.e[i].name, all.e[got].name);
			cr_assert(part.e[i].cookie == all.e[got].cookie);
		}
		off = part.e[part.n - 1].cookie;
		free(part.e);
	}
	memset(&part, 0, sizeof(part));
	cr_expect(L.ops->readdir(L.priv, d.ino, off, collect, &part) == 0 && part.n == 0);
	free(all.e);
	layout_close(&L);
	free(src);
}

Test(npy_layout, unknown_names_and_wrong_kinds, .init = cr_redirect_stderr)
{
	static const char *bad_rows[] = {"000003.npy", "0000001.npy", "00001.npy", "+00001.npy",
					 "-00001.npy", "000001.npz", "000001", "", "a.npy",
					 "999999999999999999999.npy", "000001.npy/x"};
	char *src = fixture_path("../npy_layout/src"), buf[16];
	struct sfs_opts o;
	struct sfs_attr d, r;
	struct layout L;
	struct listing l;

	open_npy(src, &o, &L);
	cr_assert(L.ops->lookup(L.priv, SFS_ROOT_INO, "a", &d) == 0);
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++)
		cr_expect(L.ops->lookup(L.priv, d.ino, bad_rows[i], &r) == -ENOENT, "%s", bad_rows[i]);
	cr_expect(L.ops->lookup(L.priv, SFS_ROOT_INO, "x", &r) == -ENOENT);
	cr_expect(L.ops->lookup(L.priv, SFS_ROOT_INO, "broken", &r) == -ENOENT);
	cr_expect(L.ops->lookup(L.priv, SFS_ROOT_INO, "a.npy", &r) == -ENOENT);
	cr_assert(L.ops->lookup(L.priv, d.ino, "000002.npy", &r) == 0);
	cr_expect(L.ops->lookup(L.priv, r.ino, "x", &d) == -ENOTDIR);
	memset(&l, 0, sizeof(l));
	cr_expect(L.ops->readdir(L.priv, r.ino, 0, collect, &l) == -ENOTDIR);
	cr_expect(L.ops->read(L.priv, SFS_ROOT_INO, buf, sizeof(buf), 0) < 0);
	cr_expect(L.ops->getattr(L.priv, r.ino + 100000, &d) == -ENOENT);
	cr_expect(L.ops->getattr(L.priv, 0, &d) == -ENOENT);
	cr_expect(L.ops->getattr(L.priv, UINT64_MAX, &d) == -ENOENT);
	/* the kind layout.h reserves for the control directory: nothing */
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t ctl = SFS_INO(SFS_INO_KIND_CTL, i);

		cr_expect(L.ops->getattr(L.priv, ctl, &d) == -ENOENT);
		cr_expect(L.ops->lookup(L.priv, ctl, "a", &d) < 0);
		memset(&l, 0, sizeof(l));
		cr_expect(L.ops->readdir(L.priv, ctl, 0, collect, &l) < 0 && l.n == 0);
		cr_expect(L.ops->read(L.priv, ctl, buf, sizeof(buf), 0) < 0);
	}
	layout_close(&L);
	free(src);
}

/* A source that shrinks or is rewritten after mount: -EIO, never bytes
 * the header does not describe (not even intact ones: the file is no
 * longer the one that was described). */
Test(npy_layout, changed_source_gives_eio)
{
	char dir[] = "/tmp/sfs-npy-XXXXXX", copy[64], buf[256];
	struct timespec later[2] = {{0, UTIME_OMIT}, {2000000000, 0}};
	uint8_t *data;
	struct sfs_opts o;
	struct sfs_attr d, r;
	struct layout L;
	size_t len;
	FILE *f;

	data = slurp("../npy_layout/src/f.npy", &len);
	cr_assert(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/f.npy", dir);
	cr_assert((f = fopen(copy, "wb")) && fwrite(data, 1, len, f) == len && !fclose(f));
	open_npy(copy, &o, &L);
	cr_assert(L.ops->lookup(L.priv, SFS_ROOT_INO, "f", &d) == 0);
	cr_assert(L.ops->lookup(L.priv, d.ino, "000099.npy", &r) == 0);
	cr_expect(L.ops->read(L.priv, r.ino, buf, sizeof(buf), 0) == (ssize_t)r.size);

	/* same size, new mtime: rewritten in place */
	cr_assert(utimensat(AT_FDCWD, copy, later, 0) == 0);
	cr_expect(L.ops->read(L.priv, r.ino, buf, sizeof(buf), 0) == -EIO);
	cr_expect(L.ops->read(L.priv, r.ino, buf, 10, 0) == -EIO, "even the header");

	cr_assert(truncate(copy, 128 + 24 * 100 + 10) == 0);
	cr_expect(L.ops->read(L.priv, r.ino, buf, sizeof(buf), 0) == -EIO);
	cr_assert(L.ops->lookup(L.priv, d.ino, "001000.npy", &r) == 0);
	cr_expect(L.ops->read(L.priv, r.ino, buf, sizeof(buf), 0) == -EIO);
	layout_close(&L);
	unlink(copy);
	rmdir(dir);
	free(data);
}

/* Random multi-byte corruption and random lengths of real headers of each
 * version (fixed seed, so a failure reproduces): never a crash or a parse
 * that claims more bytes than it was given. */
Test(npy, random_corruption, .init = cr_redirect_stderr)
{
	static const char *files[] = {"emit100.npy", "v2_0.npy", "v3_0.npy", "odd_ws.npy"};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct npy_header h;
	size_t len, need;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		uint8_t *orig = slurp(files[f], &len), *buf = malloc(len);

		cr_assert(buf);
		for (int iter = 0; iter < 5000; iter++) {
			memcpy(buf, orig, len);
			for (int k = 0; k < 1 + iter % 4; k++) {
				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				buf[(x >> 8) % (len < 160 ? len : 160)] = (uint8_t)x;
			}
			size_t n = (x >> 32) % (len + 1);
			int rc = npy_header_parse(buf, n, "fuzz", &h, &need);
			cr_assert(rc == 0 || rc == -EINVAL || rc == -EAGAIN);
			if (rc == 0)
				cr_assert(h.data_offset <= n && h.ndim <= NPY_MAX_DIMS);
			if (rc == -EAGAIN)
				cr_assert(need > n);
		}
		free(buf);
		free(orig);
	}
}
