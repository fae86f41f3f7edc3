/*
 * test_npy.c - core/npy.c against numpy: the manifest written by
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

#include "npy.h"

#define MAXTOK 24

struct line {
	int ntok;
	char *tok[MAXTOK];
};

static char *fixture_path(const char *name)
{
	const char *dir = getenv("SFS_FIXTURES");
	char *p;

	cr_assert(dir, "SFS_FIXTURES is not set (run tests/fixtures/make_npy.py)");
	cr_assert(asprintf(&p, "%s/npy/%s", dir, name) > 0);
	return p;
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char *path = fixture_path(name);
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert(buf);
	cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	free(path);
	*len = (size_t)n;
	return buf;
}

/* Calls fn for every manifest line whose first word is `kind`; returns how many. */
static int each(const char *kind, void (*fn)(struct line *))
{
	char *path = fixture_path("manifest.txt");
	FILE *f = fopen(path, "r");
	char buf[1024], *save;
	struct line l;
	int count = 0;

	cr_assert(f, "cannot open %s", path);
	while (fgets(buf, sizeof(buf), f)) {
		l.ntok = 0;
		for (char *t = strtok_r(buf, " \n", &save); t && l.ntok < MAXTOK;
		     t = strtok_r(NULL, " \n", &save))
			l.tok[l.ntok++] = t;
		if (l.ntok && !strcmp(l.tok[0], kind)) {
			fn(&l);
			count++;
		}
	}
	fclose(f);
	free(path);
	return count;
}

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
