/*
 * mat5.c - strict MATLAB level-5 MAT-file reader (see mat5.h).
 *
 * The file is parsed from memory with explicit positions; every tag's
 * length is checked against the bytes that remain in its parent before
 * anything is read or allocated.  That alone does not bound the work: an
 * miCOMPRESSED element inflates up to 1032 times its size, and a parsed
 * element costs more than its bytes (a node for an 8-byte empty matrix, a
 * double for each int8).  So every allocation and every inflated byte is
 * taken from one budget of MAT5_BUDGET_RATIO times the file's size (see
 * mat5.h), checked before allocating: a file that needs more is refused
 * with -EFBIG.  Compressed variables other than the one wanted are never
 * inflated past their name.
 * Not for: writing, big-endian files, v4 or v7.3 files.
 */
#include "formats/mat5.h"
#include "bytes.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* miXXX data types */
enum {
	MI_INT8 = 1, MI_UINT8 = 2, MI_INT16 = 3, MI_UINT16 = 4, MI_INT32 = 5,
	MI_UINT32 = 6, MI_SINGLE = 7, MI_DOUBLE = 9, MI_INT64 = 12,
	MI_UINT64 = 13, MI_MATRIX = 14, MI_COMPRESSED = 15, MI_UTF8 = 16,
	MI_UTF16 = 17, MI_UTF32 = 18,
};

#define MAT5_HEADER 128
/* What an allocation costs beyond its bytes (malloc's header), charged to
 * the budget so that many small ones count. */
#define ALLOC_OVERHEAD 16
/* Inflated bytes enough for a variable's tag, flags, dimensions and name
 * (MATLAB names have at most 63 characters): 8 + 16 + 40 + 8 + 64 < 256. */
#define NAME_PEEK 256

/* Where we are, for messages: offsets inside an inflated element are
 * reported relative to it, together with the element's file offset. */
struct ctx {
	const char *what;
	const uint8_t *buf;
	size_t len;
	long long zoff;	/* file offset of the enclosing miCOMPRESSED, or -1 */
	uint64_t *left;	/* bytes the parse may still allocate or inflate */
};

/* One data element: its type and payload. */
struct elem {
	uint32_t type;
	uint32_t nbytes;
	const uint8_t *data;
	size_t off;	/* offset of the tag in ctx->buf */
};

static void bad(const struct ctx *c, size_t off, const char *fmt, ...) SFS_PRINTF(3, 4);

static void bad(const struct ctx *c, size_t off, const char *fmt, ...)
{
	char expected[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(expected, sizeof(expected), fmt, ap);
	va_end(ap);
	if (c->zoff >= 0)
		sfs_err("%s: offset %zu of the compressed element at offset %lld: expected %s",
			c->what, off, c->zoff, expected);
	else
		sfs_err("%s: offset %zu: expected %s", c->what, off, expected);
}

/* Takes n bytes from the budget for the element at off, or -EFBIG. */
static int charge(const struct ctx *c, size_t off, uint64_t n)
{
	if (n > *c->left) {
		bad(c, off, "data that fits the reader's memory budget (%u x the file size + %u KiB): "
		    "it needs %llu more bytes, %llu are left", MAT5_BUDGET_RATIO,
		    MAT5_BUDGET_MIN >> 10, (unsigned long long)n,
		    (unsigned long long)*c->left);
		return -EFBIG;
	}
	*c->left -= n;
	return 0;
}

/* calloc(n) charged to the budget; 0, -EFBIG or -ENOMEM */
static int zalloc(const struct ctx *c, size_t off, uint64_t n, void *out)
{
	void *p;
	int rc = charge(c, off, n + ALLOC_OVERHEAD);

	if (rc)
		return rc;
	p = calloc(1, n ? (size_t)n : 1);
	if (!p)
		return -ENOMEM;
	memcpy(out, &p, sizeof(p));
	return 0;
}

/* bytes of one value of a numeric miXXX type, 0 if not numeric */
static unsigned type_size(uint32_t t)
{
	switch (t) {
	case MI_INT8: case MI_UINT8: case MI_UTF8: return 1;
	case MI_INT16: case MI_UINT16: case MI_UTF16: return 2;
	case MI_INT32: case MI_UINT32: case MI_SINGLE: case MI_UTF32: return 4;
	case MI_DOUBLE: case MI_INT64: case MI_UINT64: return 8;
	default: return 0;
	}
}

/*
 * Reads the tag at *pos within [0, end) of c->buf and advances *pos past
 * the element and its padding.  Small elements keep their (at most 4)
 * bytes in the tag itself.  miCOMPRESSED payloads are not padded.
 */
static int next_elem(const struct ctx *c, size_t *pos, size_t end,
		     struct elem *e)
{
	size_t p = *pos;
	uint32_t w0;

	if (end - p < 8) {
		bad(c, p, "an 8-byte data element tag");
		return -EBADMSG;
	}
	e->off = p;
	w0 = le32(c->buf + p);
	if (w0 >> 16) {
		e->type = w0 & 0xffff;
		e->nbytes = w0 >> 16;
		if (e->nbytes > 4) {
			bad(c, p, "a small data element of at most 4 bytes");
			return -EBADMSG;
		}
		e->data = c->buf + p + 4;
		*pos = p + 8;
		return 0;
	}
	e->type = w0;
	e->nbytes = le32(c->buf + p + 4);
	if (e->nbytes > end - p - 8) {
		bad(c, p, "a data element that fits in its parent");
		return -EBADMSG;
	}
	e->data = c->buf + p + 8;
	p += 8 + (size_t)e->nbytes;
	if (e->type != MI_COMPRESSED)
		p += (8 - (p & 7)) & 7;
	*pos = p < end ? p : end;
	return 0;
}

/* next_elem that also insists on one of two types */
static int expect_elem(const struct ctx *c, size_t *pos, size_t end,
		       struct elem *e, uint32_t t1, uint32_t t2,
		       const char *expected)
{
	int rc = next_elem(c, pos, end, e);

	if (rc)
		return rc;
	if (e->type != t1 && e->type != t2) {
		bad(c, e->off, "%s", expected);
		return -EBADMSG;
	}
	return 0;
}

static double value_at(uint32_t type, const uint8_t *p)
{
	union { uint32_t u; float f; } f32;
	union { uint64_t u; double d; } f64;

	switch (type) {
	case MI_INT8: return (int8_t)p[0];
	case MI_UINT8: return p[0];
	case MI_INT16: return (int16_t)(p[0] | p[1] << 8);
	case MI_UINT16: return (uint16_t)(p[0] | p[1] << 8);
	case MI_INT32: return (int32_t)le32(p);
	case MI_UINT32: return le32(p);
	case MI_SINGLE: f32.u = le32(p); return f32.f;
	case MI_DOUBLE: f64.u = le64(p); return f64.d;
	case MI_INT64: return (double)(int64_t)le64(p);
	case MI_UINT64: return (double)le64(p);
	default: return 0;
	}
}

static int parse_numeric(const struct ctx *c, size_t *pos, size_t end,
			 struct mat5_array *a)
{
	struct elem e;
	unsigned sz;
	uint64_t i;
	int rc;

	rc = next_elem(c, pos, end, &e);
	if (rc)
		return rc;
	sz = type_size(e.type);
	if (!sz || e.type >= MI_UTF8 || e.nbytes / sz != a->numel ||
	    e.nbytes % sz) {
		bad(c, e.off, "numeric data with one value per array element");
		return -EBADMSG;
	}
	if (!a->numel)
		return 0;
	rc = zalloc(c, e.off, a->numel * sizeof(double), &a->num);
	if (rc)
		return rc;
	for (i = 0; i < a->numel; i++)
		a->num[i] = value_at(e.type, e.data + i * sz);
	/* the imaginary part, if any, follows; we keep only the real part */
	return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	o[0] = (char)(0xe0 | cp >> 12);
	o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[2] = (char)(0x80 | (cp & 0x3f));
	return 3;
}

/*
 * Char data: one code unit per element in column-major order, which we
 * turn into rows joined by '\n'.  UTF-8 payloads are taken as they are
 * (their byte count need not equal the character count).  UTF-16
 * surrogates are kept as separate 3-byte sequences: ImageNet text is ASCII.
 */
static int parse_char(const struct ctx *c, size_t *pos, size_t end,
		      struct mat5_array *a)
{
	struct elem e;
	uint64_t rows, cols, r, k, i;
	unsigned sz;
	char *o;
	int rc;

	rc = next_elem(c, pos, end, &e);
	if (rc)
		return rc;
	sz = type_size(e.type);
	if (e.type == MI_UTF8 || ((e.type == MI_INT8 || e.type == MI_UINT8) &&
				  e.nbytes != a->numel)) {
		rc = zalloc(c, e.off, (uint64_t)e.nbytes + 1, &a->str);
		if (rc)
			return rc;
		memcpy(a->str, e.data, e.nbytes);
		a->str[e.nbytes] = '\0';
		return 0;
	}
	if (!sz || sz > 2 || e.nbytes / sz != a->numel || e.nbytes % sz) {
		bad(c, e.off, "char data (miUINT16, miUTF8 or miUINT8) with one unit per character");
		return -EBADMSG;
	}
	rows = a->numel ? a->dims[0] : 0;
	cols = rows ? a->numel / rows : 0;
	rc = zalloc(c, e.off, a->numel * 4 + 1, &a->str);
	if (rc)
		return rc;
	o = a->str;
	for (r = 0, k = 0; r < rows; r++) {
		if (r)
			o[k++] = '\n';
		for (i = 0; i < cols; i++) {
			const uint8_t *p = e.data + (i * rows + r) * sz;

			k += put_utf8(o + k, sz == 2 ? (uint32_t)(p[0] | p[1] << 8) : p[0]);
		}
	}
	o[k] = '\0';
	return 0;
}

static int parse_matrix(const struct ctx *c, const struct elem *m, int depth,
			struct mat5_array **out);

/* numel sub-matrices per field, each at least one 8-byte tag */
static int parse_children(const struct ctx *c, size_t *pos, size_t end,
			  int depth, struct mat5_array *a, uint32_t nfields)
{
	uint64_t n, i;
	struct elem e;
	int rc;

	if (nfields && a->numel > (end - *pos) / 8 / nfields) {
		bad(c, *pos, "one miMATRIX per element and field (too few bytes)");
		return -EBADMSG;
	}
	n = a->numel * nfields;
	a->nfields = nfields;
	if (!n)
		return 0;
	rc = zalloc(c, *pos, n * sizeof(*a->elems), &a->elems);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rc = expect_elem(c, pos, end, &e, MI_MATRIX, MI_MATRIX, "miMATRIX");
		if (rc)
			return rc;
		rc = parse_matrix(c, &e, depth + 1, &a->elems[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_struct(const struct ctx *c, size_t *pos, size_t end,
			int depth, struct mat5_array *a)
{
	struct elem e;
	uint32_t fnl, nf, j;
	char *names = NULL;
	int rc;

	rc = expect_elem(c, pos, end, &e, MI_INT32, MI_INT32, "field name length (miINT32)");
	if (rc)
		return rc;
	fnl = e.nbytes == 4 ? le32(e.data) : 0;
	if (fnl < 1 || fnl > 4096) {
		bad(c, e.off, "a field name length of 1..4096");
		return -EBADMSG;
	}
	rc = expect_elem(c, pos, end, &e, MI_INT8, MI_UINT8, "field names (miINT8)");
	if (rc)
		return rc;
	if (e.nbytes % fnl) {
		bad(c, e.off, "field names of the declared length");
		return -EBADMSG;
	}
	nf = e.nbytes / fnl;
	if (nf) {
		/* the names live in one block, each NUL-ended: fields[0] */
		rc = zalloc(c, e.off, (uint64_t)nf * sizeof(char *), &a->fields);
		if (!rc)
			rc = zalloc(c, e.off, (uint64_t)nf * (fnl + 1), &names);
		if (rc)
			return rc;
	}
	a->nfields = nf;	/* so mat5_free frees the names on error */
	for (j = 0; j < nf; j++) {
		a->fields[j] = names + (size_t)j * (fnl + 1);
		memcpy(a->fields[j], e.data + (size_t)j * fnl, fnl);
	}
	return parse_children(c, pos, end, depth, a, nf);
}

static int parse_header(const struct ctx *c, size_t *pos, size_t end,
			struct mat5_array *a, uint32_t *flags)
{
	struct elem e;
	uint32_t i;
	int rc;

	rc = expect_elem(c, pos, end, &e, MI_UINT32, MI_UINT32, "array flags (miUINT32)");
	if (rc)
		return rc;
	if (e.nbytes != 8) {
		bad(c, e.off, "8 bytes of array flags");
		return -EBADMSG;
	}
	*flags = le32(e.data);
	a->cls = *flags & 0xff;
	rc = expect_elem(c, pos, end, &e, MI_INT32, MI_INT32, "dimensions (miINT32)");
	if (rc)
		return rc;
	if (e.nbytes % 4 || e.nbytes / 4 < 2 || e.nbytes / 4 > MAT5_MAX_DIMS) {
		bad(c, e.off, "2 to 8 dimensions");
		return -EBADMSG;
	}
	a->ndims = e.nbytes / 4;
	a->numel = 1;
	for (i = 0; i < a->ndims; i++) {
		int32_t d = (int32_t)le32(e.data + 4 * i);

		if (d < 0 || (d && a->numel > (UINT64_C(1) << 40) / (uint64_t)d)) {
			bad(c, e.off, "sane non-negative dimensions");
			return -EBADMSG;
		}
		a->dims[i] = (uint32_t)d;
		a->numel *= (uint64_t)d;
	}
	rc = expect_elem(c, pos, end, &e, MI_INT8, MI_UINT8, "array name (miINT8)");
	if (rc)
		return rc;
	memcpy(a->name, e.data, e.nbytes < sizeof(a->name) ? e.nbytes : sizeof(a->name) - 1);
	return 0;
}

static int parse_body(const struct ctx *c, size_t *pos, size_t end, int depth,
		      struct mat5_array *a)
{
	switch (a->cls) {
	case MAT5_STRUCT:
		return parse_struct(c, pos, end, depth, a);
	case MAT5_CELL:
		return parse_children(c, pos, end, depth, a, 1);
	case MAT5_CHAR:
		return parse_char(c, pos, end, a);
	case MAT5_DOUBLE: case MAT5_SINGLE: case MAT5_INT8: case MAT5_UINT8:
	case MAT5_INT16: case MAT5_UINT16: case MAT5_INT32: case MAT5_UINT32:
	case MAT5_INT64: case MAT5_UINT64:
		return parse_numeric(c, pos, end, a);
	default:
		/* sparse, object, function handles: kept as placeholders */
		a->numel = 0;
		return 0;
	}
}

static int parse_matrix(const struct ctx *c, const struct elem *m, int depth,
			struct mat5_array **out)
{
	size_t pos = (size_t)(m->data - c->buf), end = pos + m->nbytes;
	struct mat5_array *a;
	uint32_t flags;
	int rc;

	if (depth > MAT5_MAX_DEPTH) {
		bad(c, m->off, "struct/cell nesting of at most 16 levels");
		return -EBADMSG;
	}
	rc = zalloc(c, m->off, sizeof(*a), out);
	if (rc)
		return rc;
	a = *out;
	if (m->nbytes == 0) {	/* an empty miMATRIX: [] */
		a->cls = MAT5_DOUBLE;
		a->ndims = 2;
		return 0;
	}
	rc = parse_header(c, &pos, end, a, &flags);
	if (!rc)
		rc = parse_body(c, &pos, end, depth, a);
	return rc;
}

/*
 * Inflates the start of e's zlib stream into out[0..n): the number of bytes
 * it gave (n at most: inflation stops there, however much more the stream
 * holds), -EBADMSG if the stream is corrupt before that, or -ENOMEM.
 */
static long inflate_into(const struct elem *e, uint8_t *out, size_t n)
{
	z_stream zs;
	int zrc;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return -ENOMEM;
	zs.next_in = (uint8_t *)e->data;
	zs.avail_in = e->nbytes;
	zs.next_out = out;
	zs.avail_out = (uInt)n;
	zrc = inflate(&zs, Z_FINISH);
	n -= zs.avail_out;
	inflateEnd(&zs);
	if (zrc != Z_STREAM_END && zrc != Z_OK && zrc != Z_BUF_ERROR)
		return -EBADMSG;
	return (long)n;
}

/* the variable name of an miMATRIX that starts at m->data and ends at or
 * before end, without parsing the rest */
static int matrix_name(const struct ctx *c, const struct elem *m, size_t end,
		       struct mat5_array *tmp)
{
	size_t pos = (size_t)(m->data - c->buf);
	uint32_t flags;

	memset(tmp, 0, sizeof(*tmp));
	if (!m->nbytes)
		return 0;
	return parse_header(c, &pos, end, tmp, &flags);
}

static int try_elem(const struct ctx *c, const struct elem *e, const char *name,
		    struct mat5_array **out);

/*
 * Peeks at the first NAME_PEEK inflated bytes of a top-level miCOMPRESSED:
 * the inner tag, and the variable's name if it is an miMATRIX.  0 and the
 * declared inflated size in *total when it is the variable `name` (so worth
 * inflating whole), 1 if it is something else, or -errno.
 */
static int peek_compressed(const struct ctx *c, const struct elem *e,
			   const char *name, uint64_t *total)
{
	uint8_t peek[NAME_PEEK];
	struct ctx pc = *c;
	struct mat5_array tmp;
	struct elem inner;
	long got = inflate_into(e, peek, sizeof(peek));
	int rc;

	if (got == -ENOMEM)
		return -ENOMEM;
	if (got < 8) {
		bad(c, e->off, "a zlib stream holding a data element");
		return -EBADMSG;
	}
	*total = le32(peek) >> 16 ? 8 : 8 + (uint64_t)le32(peek + 4);
	inner = (struct elem){ le32(peek), (uint32_t)(*total - 8), peek + 8, 0 };
	if (inner.type == MI_COMPRESSED) {
		/* MATLAB compresses each variable once; following nested ones
		 * would recurse without bound, each level holding its
		 * inflated bytes, until a small file overflows the stack */
		bad(c, e->off, "an miMATRIX, not a nested miCOMPRESSED");
		return -EBADMSG;
	}
	if (inner.type != MI_MATRIX || (le32(peek) >> 16))
		return 1;	/* other types carry no variable */
	pc.buf = peek;
	pc.len = (size_t)got;
	pc.zoff = (long long)e->off;
	/* a real header (name of at most 63 characters) fits in the peek */
	rc = matrix_name(&pc, &inner, *total < (uint64_t)got ? (size_t)*total : (size_t)got,
			 &tmp);
	if (rc)
		return rc;
	return strcmp(tmp.name, name) ? 1 : 0;
}

/*
 * A top-level miCOMPRESSED: inflated whole only when it holds the variable
 * wanted.  The inner tag's length bounds the output, so a bomb is refused
 * (MAT5_MAX_INFLATE, the budget) before the big allocation and inflation
 * stops at the declared size.
 */
static int try_compressed(const struct ctx *c, const struct elem *e,
			  const char *name, struct mat5_array **out)
{
	struct ctx zc;
	struct elem ze;
	uint8_t *z = NULL;
	uint64_t total;
	size_t zpos = 0;
	long got;
	int rc = peek_compressed(c, e, name, &total);

	if (rc)
		return rc < 0 ? rc : 0;
	if (total > MAT5_MAX_INFLATE) {
		bad(c, e->off, "a compressed element that inflates to at most %u MiB, not %llu bytes",
		    MAT5_MAX_INFLATE >> 20, (unsigned long long)total);
		return -EBADMSG;
	}
	rc = zalloc(c, e->off, total, &z);
	if (rc)
		return rc;
	got = inflate_into(e, z, (size_t)total);
	if (got != (long)total) {
		bad(c, e->off, "a complete zlib stream of the declared length (%llu bytes)",
		    (unsigned long long)total);
		rc = got == -ENOMEM ? -ENOMEM : -EBADMSG;
		goto out;
	}
	zc = (struct ctx){ c->what, z, (size_t)total, (long long)e->off, c->left };
	rc = next_elem(&zc, &zpos, zc.len, &ze);
	if (!rc)
		rc = try_elem(&zc, &ze, name, out);
out:
	free(z);
	return rc;
}

/* Looks at one top-level element; 1 and *out when it is the variable. */
static int try_elem(const struct ctx *c, const struct elem *e, const char *name,
		    struct mat5_array **out)
{
	struct mat5_array tmp;
	int rc;

	if (e->type == MI_COMPRESSED)
		return try_compressed(c, e, name, out);
	if (e->type != MI_MATRIX)
		return 0;	/* other top-level types carry no variable */
	rc = matrix_name(c, e, (size_t)(e->data - c->buf) + e->nbytes, &tmp);
	if (rc || strcmp(tmp.name, name))
		return rc;
	rc = parse_matrix(c, e, 0, out);
	return rc ? rc : 1;
}

static int check_header(const struct ctx *c)
{
	if (c->len < MAT5_HEADER) {
		sfs_err("%s: %zu bytes: expected a 128-byte MAT-file header", c->what, c->len);
		return -EBADMSG;
	}
	if (c->buf[126] == 'M' && c->buf[127] == 'I') {
		sfs_err("%s: offset 126: big-endian MAT-files are not supported", c->what);
		return -EBADMSG;
	}
	if (c->buf[126] != 'I' || c->buf[127] != 'M' ||
	    (c->buf[124] | c->buf[125] << 8) != 0x0100) {
		sfs_err("%s: offset 124: expected a level-5 MAT-file (version 0x0100, 'IM')",
			c->what);
		return -EBADMSG;
	}
	return 0;
}

int mat5_read_var(const uint8_t *buf, size_t len, const char *what,
		  const char *name, struct mat5_array **out)
{
	uint64_t left = (uint64_t)len * MAT5_BUDGET_RATIO + MAT5_BUDGET_MIN;
	struct ctx c = { what, buf, len, -1, &left };
	size_t pos = MAT5_HEADER;
	struct elem e;
	int rc;

	*out = NULL;
	rc = check_header(&c);
	while (!rc && len - pos >= 8) {
		rc = next_elem(&c, &pos, len, &e);
		if (!rc)
			rc = try_elem(&c, &e, name, out);
	}
	if (rc < 0) {
		mat5_free(*out);
		*out = NULL;
		return rc;
	}
	return rc == 1 ? 0 : -ENOENT;
}

void mat5_free(struct mat5_array *a)
{
	uint64_t i, n;

	if (!a)
		return;
	n = a->cls == MAT5_CELL ? a->numel : a->numel * a->nfields;
	for (i = 0; a->elems && i < n; i++)
		mat5_free(a->elems[i]);
	if (a->cls == MAT5_STRUCT && a->fields && a->nfields)
		free(a->fields[0]);	/* the block of all names */
	free(a->fields);
	free(a->elems);
	free(a->num);
	free(a->str);
	free(a);
}

const struct mat5_array *mat5_field(const struct mat5_array *s, uint64_t i,
				    const char *field)
{
	uint32_t j;

	if (!s || s->cls != MAT5_STRUCT || i >= s->numel || !s->elems)
		return NULL;
	for (j = 0; j < s->nfields; j++)
		if (!strcmp(s->fields[j], field))
			return s->elems[i * s->nfields + j];
	return NULL;
}

int mat5_scalar(const struct mat5_array *a, double *out)
{
	if (!a || !a->num || !a->numel)
		return -EINVAL;
	*out = a->num[0];
	return 0;
}

const char *mat5_string(const struct mat5_array *a)
{
	if (!a)
		return NULL;
	if (a->cls == MAT5_CHAR)
		return a->str ? a->str : "";
	return NULL;
}
