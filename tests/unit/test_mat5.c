/*
 * test_mat5.c - the MAT-file reader against scipy.io: meta.mat files written
 * by scipy.io.savemat (with and without compression) and by a MATLAB-style
 * writer (miUINT16 chars, doubles stored as miUINT8), compared field by field
 * with what scipy.io.loadmat read (tests/fixtures/make_imagenet.py writes
 * <variant>.synsets.txt).  Then hostile files, every truncation, byte flips,
 * and nested compressed elements built here with zlib.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "formats/mat5.h"

#define FIXTURE_SUBDIR "."
#include "fixture.h"
#include "capture.h"
#include "bounded.h"

/* "1,2,3" -> the children array must hold exactly these values */
static void check_children(const struct mat5_array *a, const char *list)
{
	uint64_t i = 0;
	const char *p = list;

	cr_assert(a);
	while (*p) {
		cr_assert_lt(i, a->numel);
		cr_assert_eq(a->num[i], strtod(p, (char **)&p));
		i++;
		if (*p == ',')
			p++;
	}
	cr_assert_eq(a->numel, i, "children: %llu values, scipy says %llu",
		     (unsigned long long)a->numel, (unsigned long long)i);
}

static void check_variant(const char *variant)
{
	char name[256], *oracle, *line, *save = NULL;
	struct mat5_array *s;
	size_t len, olen;
	uint8_t *buf;
	uint64_t i = 0;

	snprintf(name, sizeof(name), "%s.meta.mat", variant);
	buf = slurp(name, &len);
	cr_assert_eq(mat5_read_var(buf, len, name, "synsets", &s), 0);
	cr_assert_eq(s->cls, MAT5_STRUCT);
	snprintf(name, sizeof(name), "%s.synsets.txt", variant);
	oracle = (char *)slurp(name, &olen);
	for (line = strtok_r(oracle, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		char *f[6], *q = line;
		double v;
		int k;

		for (k = 0; k < 6; k++)
			f[k] = strsep(&q, "\t");
		cr_assert(f[5], "bad oracle line");
		cr_assert_lt(i, s->numel);
		cr_assert_eq(mat5_scalar(mat5_field(s, i, "ILSVRC2012_ID"), &v), 0);
		cr_assert_eq(v, atof(f[0]));
		cr_assert_str_eq(mat5_string(mat5_field(s, i, "WNID")), f[1]);
		cr_assert_eq(mat5_scalar(mat5_field(s, i, "num_children"), &v), 0);
		cr_assert_eq(v, atof(f[2]));
		check_children(mat5_field(s, i, "children"), f[3]);
		cr_assert_eq(mat5_scalar(mat5_field(s, i, "num_train_images"), &v), 0);
		cr_assert_eq(v, atof(f[4]));
		cr_assert_str_eq(mat5_string(mat5_field(s, i, "words")), f[5]);
		cr_assert(mat5_string(mat5_field(s, i, "gloss")));
	}
	cr_assert_eq(s->numel, i);
	cr_assert_null(mat5_field(s, 0, "no_such_field"));
	cr_assert_null(mat5_field(s, s->numel, "WNID"));
	mat5_free(s);
	free(oracle);
	free(buf);
}

Test(mat5, scipy_compressed) { check_variant("imagenet"); }
Test(mat5, scipy_uncompressed) { check_variant("imagenet-plain"); }
Test(mat5, matlab_style_uint16_chars_uint8_doubles) { check_variant("imagenet-matlab"); }

Test(mat5, missing_variable)
{
	struct mat5_array *s;
	size_t len;
	uint8_t *buf = slurp("imagenet.meta.mat", &len);

	cr_assert_eq(mat5_read_var(buf, len, "meta.mat", "nothere", &s), -ENOENT);
	cr_assert_null(s);
	free(buf);
}

static void expect_bad(const char *file)
{
	struct mat5_array *s = (void *)1;
	size_t len;
	uint8_t *buf = slurp(file, &len);
	int rc = mat5_read_var(buf, len, file, "synsets", &s);

	cr_assert_eq(rc, -EBADMSG, "%s: rc %d, expected -EBADMSG", file, rc);
	cr_assert_null(s);
	free(buf);
}

Test(mat5, inflate_bomb) { expect_bad("mat-bomb.mat"); }
Test(mat5, absurd_dims) { expect_bad("mat-dims.mat"); }
Test(mat5, tag_overrun) { expect_bad("mat-overrun.mat"); }
Test(mat5, short_numeric) { expect_bad("mat-short.mat"); }
Test(mat5, deep_nesting) { expect_bad("mat-deep.mat"); }
Test(mat5, truncated_zlib) { expect_bad("mat-ztrunc.mat"); }
Test(mat5, not_a_mat_file) { expect_bad("mat-text.mat"); }

/* the wrong class parses, but it is not a struct: the caller's check */
Test(mat5, wrong_type)
{
	struct mat5_array *s;
	size_t len;
	uint8_t *buf = slurp("mat-wrongtype.mat", &len);

	cr_assert_eq(mat5_read_var(buf, len, "x", "synsets", &s), 0);
	cr_assert_eq(s->cls, MAT5_CHAR);
	cr_assert_str_eq(mat5_string(s), "abc");
	cr_assert_null(mat5_field(s, 0, "WNID"));
	mat5_free(s);
	free(buf);
}

/* Every prefix must fail cleanly (only the final padding may go). */
static void truncations(const char *file)
{
	size_t len, n;
	uint8_t *buf = slurp(file, &len);

	for (n = 0; n < len; n++) {
		struct mat5_array *s = NULL;
		uint8_t *copy = malloc(n ? n : 1);
		int rc;

		memcpy(copy, buf, n);
		rc = mat5_read_var(copy, n, file, "synsets", &s);
		if (n + 8 <= len)
			cr_assert_lt(rc, 0, "%s truncated to %zu bytes parsed", file, n);
		mat5_free(s);
		free(copy);
	}
	free(buf);
}

Test(mat5, every_truncation_plain) { truncations("imagenet-plain.meta.mat"); }
Test(mat5, every_truncation_compressed) { truncations("imagenet.meta.mat"); }

/* Random byte flips: any result but a crash or a sanitizer report. */
Test(mat5, byte_flips)
{
	size_t len, i;
	uint8_t *buf = slurp("imagenet-plain.meta.mat", &len);
	uint32_t x = 12345;

	for (i = 0; i < 3000; i++) {
		struct mat5_array *s = NULL;
		uint8_t *copy = malloc(len);
		int k;

		memcpy(copy, buf, len);
		for (k = 0; k < 4; k++) {
			x = x * 1103515245 + 12345;
			copy[128 + (x >> 8) % (len - 128)] ^= (uint8_t)(1u << (x & 7));
		}
		if (mat5_read_var(copy, len, "flipped", "synsets", &s) == 0)
			cr_assert(s);
		mat5_free(s);
		free(copy);
	}
	free(buf);
}

/* ---- nested miCOMPRESSED, built here with zlib --------------------------- */

static size_t put_tag(uint8_t *p, uint32_t type, uint32_t nbytes)
{
	memcpy(p, &type, 4);		/* little-endian hosts only, as mat5.c */
	memcpy(p + 4, &nbytes, 4);
	return 8;
}

/* A 1x1 double `synsets` = 42 as an miMATRIX element (72 bytes). */
static size_t scalar_matrix(uint8_t *p)
{
	uint32_t flags[2] = { MAT5_DOUBLE, 0 };
	int32_t dims[2] = { 1, 1 };
	double v = 42;
	size_t n = put_tag(p, 14, 64);

	n += put_tag(p + n, 6, 8);
	memcpy(p + n, flags, 8);
	n += 8;
	n += put_tag(p + n, 5, 8);
	memcpy(p + n, dims, 8);
	n += 8;
	n += put_tag(p + n, 1, 7);
	memcpy(p + n, "synsets\0", 8);
	n += 8;
	n += put_tag(p + n, 9, 8);
	memcpy(p + n, &v, 8);
	return n + 8;
}

/* A MAT-file whose variable is wrapped in `levels` miCOMPRESSED elements,
 * each inside the previous one's inflated bytes. */
static uint8_t *nested_mat(int levels, size_t *len)
{
	uint8_t *el = malloc(72), *file;
	size_t n = scalar_matrix(el);
	int i;

	for (i = 0; i < levels; i++) {
		uLongf zn = compressBound(n);
		uint8_t *z = malloc(8 + zn);

		cr_assert(z && compress(z + 8, &zn, el, n) == Z_OK);
		put_tag(z, 15, (uint32_t)zn);
		free(el);
		el = z;
		n = 8 + zn;
	}
	file = calloc(1, 128 + n);
	memcpy(file, "MATLAB 5.0 MAT-file, nested", 27);
	file[124] = 0x00;
	file[125] = 0x01;
	file[126] = 'I';
	file[127] = 'M';
	memcpy(file + 128, el, n);
	free(el);
	*len = 128 + n;
	return file;
}

/* Parses with stderr captured; returns the parse's result, the message. */
static int read_capturing(const uint8_t *buf, size_t len, struct mat5_array **s,
			  char *msg, size_t cap)
{
	struct capture c;
	char *text;
	int rc;

	capture_start(&c);
	rc = mat5_read_var(buf, len, "nested.mat", "synsets", s);
	text = capture_end(&c);
	snprintf(msg, cap, "%s", text);
	free(text);
	return rc;
}

/*
 * MATLAB compresses each top-level variable once.  An miCOMPRESSED that
 * inflates to another one made the reader recurse once per level, keeping
 * every level's inflated bytes: a small hostile meta.mat could exhaust the
 * stack.  One level parses; two or more are refused, naming the offset.
 */
Test(mat5, nested_compressed_refused)
{
	static const int levels[] = { 2, 3, 200 };
	struct mat5_array *s;
	char msg[1024];
	size_t len, i;
	uint8_t *buf = nested_mat(1, &len);
	double v;

	cr_assert_eq(read_capturing(buf, len, &s, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(mat5_scalar(s, &v), 0);
	cr_expect_eq(v, 42);
	mat5_free(s);
	free(buf);
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		int rc;

		buf = nested_mat(levels[i], &len);
		s = (void *)1;
		rc = read_capturing(buf, len, &s, msg, sizeof(msg));
		cr_expect_eq(rc, -EBADMSG, "%d levels: rc %d", levels[i], rc);
		cr_expect_null(s);
		if (!rc)
			mat5_free(s);
		cr_expect(strstr(msg, "nested.mat") && strstr(msg, "offset 128") &&
			  strstr(msg, "miCOMPRESSED"), "%d levels: message: %s", levels[i], msg);
		free(buf);
	}
}

/* ---- inputs that ask for far more than their size (make_hostile.py) ----- */

/* Each of these files is under 128 KiB; the old reader took 256 MiB to
 * several GiB for them.  The budget is 64 x the file size + 1 MiB. */
#define HOSTILE_LIMIT (48LL << 20)

struct parse_job {
	const uint8_t *buf;
	size_t len;
	const char *what;
};

static long parse_job(void *arg)
{
	const struct parse_job *j = arg;
	struct mat5_array *s = NULL;
	int rc = mat5_read_var(j->buf, j->len, j->what, "synsets", &s);

	mat5_free(s);
	return rc;
}

/* The parse returns `want` within HOSTILE_LIMIT; if `msg`, the error names
 * the file and says `msg`. */
static void expect_bounded(const char *file, int want, const char *msg)
{
	struct parse_job j = { NULL, 0, file };
	struct bounded_result r;
	struct capture c;
	char *text;

	j.buf = slurp(file, &j.len);
	capture_start(&c);
	r = bounded_run(parse_job, &j, HOSTILE_LIMIT);
	text = capture_end(&c);
	cr_expect_eq(r.rc, want, "%s: rc %ld, expected %d; stderr: %s", file, r.rc, want, text);
	cr_expect_lt(r.grew, HOSTILE_LIMIT, "%s: resident memory grew by %lld bytes for a %zu-byte file",
		     file, r.grew, j.len);
	if (msg)
		cr_expect(strstr(text, file) && strstr(text, "offset") && strstr(text, msg),
			  "%s: message: %s", file, text);
	free(text);
	free((void *)j.buf);
}

/* a compressed 1 x 4M cell of empty matrices: a node for every 8 bytes */
Test(mat5, hostile_cells) { expect_bounded("hostile/mat-cells.mat", -EFBIG, "memory budget"); }
/* 32 MiB of int8 zeros, which the reader would keep as doubles */
Test(mat5, hostile_widen) { expect_bounded("hostile/mat-widen.mat", -EFBIG, "memory budget"); }
/* a struct of 16M one-byte field names */
Test(mat5, hostile_fields) { expect_bounded("hostile/mat-fields.mat", -EFBIG, "memory budget"); }
/* a compressed element that declares 200 MiB and holds a few bytes */
Test(mat5, hostile_declared) { expect_bounded("hostile/mat-lie.mat", -EFBIG, "memory budget"); }
/* a 64 MiB compressed variable that is not `synsets' is never inflated */
Test(mat5, hostile_other_variable) { expect_bounded("hostile/mat-other.mat", -ENOENT, NULL); }
