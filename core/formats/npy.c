/*
 * npy.c - the .npy header (numpy/lib/format.py): parse any version, emit
 * the version 1.0 header np.save writes.
 *
 * The header is a Python dict literal.  We do not evaluate Python: a small
 * recursive-descent reader accepts exactly the literals numpy itself accepts
 * for the three keys (strings, True/False, a tuple of non-negative ints,
 * Python 2 "L" suffixes included) in any order, and rejects anything else
 * with a message naming the file, the byte offset and what was expected.
 * Structured dtypes (descr given as a list) are rejected.  Not for the data
 * that follows the header.
 */
#include "formats/npy.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NPY_MAGIC     "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* numpy refuses headers over 10000 characters; allow far more, but not
 * gigabytes from a hostile 32-bit length. */
#define NPY_MAX_HEADER (1u << 20)
#define ARRAY_ALIGN 64
#define GROWTH_AXIS_MAX_DIGITS 21

/* A cursor over the header text; offsets in messages are from file start. */
struct cur {
	const uint8_t *base, *p, *end;
	const char *what;
	char *why;              /* NULL: errors are printed; else kept here */
	size_t whylen;
};

/* A parse error: printed naming `what`, or kept in why for the caller. */
SFS_PRINTF(4, 5)
static void report(const char *what, char *why, size_t whylen, const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why ? why : line, why ? whylen : sizeof(line), fmt, ap);
	va_end(ap);
	if (!why)
		sfs_err("%s: %s", what, line);
}

static size_t cur_off(const struct cur *c)
{
	return (size_t)(c->p - c->base);
}

static int cur_fail(const struct cur *c, const char *expected)
{
	if (c->p < c->end && *c->p > 0x20 && *c->p < 0x7f)
		report(c->what, c->why, c->whylen, "npy header offset %zu: expected %s, found '%c'",
		       cur_off(c), expected, *c->p);
	else if (c->p < c->end)
		report(c->what, c->why, c->whylen, "npy header offset %zu: expected %s, found byte 0x%02x",
		       cur_off(c), expected, *c->p);
	else
		report(c->what, c->why, c->whylen, "npy header offset %zu: expected %s, found end of header",
		       cur_off(c), expected);
	return -EINVAL;
}

static void skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\n' || *c->p == '\r' || *c->p == '\f'))
		c->p++;
}

static int accept(struct cur *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == (uint8_t)ch) {
		c->p++;
		return 1;
	}
	return 0;
}

static int expect(struct cur *c, char ch, const char *expected)
{
	return accept(c, ch) ? 0 : cur_fail(c, expected);
}

/* A quoted string without escapes (numpy never writes any), into out. */
static int read_str(struct cur *c, char *out, size_t outlen)
{
	uint8_t q;
	size_t n = 0;

	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return cur_fail(c, "a quoted string");
	q = *c->p++;
	while (c->p < c->end && *c->p != q) {
		if (*c->p == '\\' || *c->p == '\n' || n + 1 >= outlen)
			return cur_fail(c, "a short string without escapes");
		out[n++] = (char)*c->p++;
	}
	if (c->p >= c->end)
		return cur_fail(c, "a closing quote");
	c->p++;
	out[n] = '\0';
	return 0;
}

static int read_word(struct cur *c, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return 0;
	if ((size_t)(c->end - c->p) > n &&
	    (c->p[n] == '_' || ((c->p[n] | 0x20) >= 'a' && (c->p[n] | 0x20) <= 'z')))
		return 0;
	c->p += n;
	return 1;
}

static int read_bool(struct cur *c, int *out)
{
	skip_ws(c);
	if (read_word(c, "True"))
		*out = 1;
	else if (read_word(c, "False"))
		*out = 0;
	else
		return cur_fail(c, "True or False");
	return 0;
}

/* A non-negative decimal int, with the "L" suffix Python 2 wrote. */
static int read_uint(struct cur *c, uint64_t *out)
{
	uint64_t v = 0;

	skip_ws(c);
	if (c->p >= c->end || *c->p < '0' || *c->p > '9')
		return cur_fail(c, "a non-negative integer");
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned d = *c->p - '0';
		if (v > (UINT64_MAX - d) / 10)
			return cur_fail(c, "an integer below 2^64");
		v = v * 10 + d;
		c->p++;
	}
	if (c->p < c->end && (*c->p == 'L' || *c->p == 'l'))
		c->p++;
	*out = v;
	return 0;
}

/* "()", "(784,)", "(28, 28)", "(2, 3,)"; "(784)" is an int, not a tuple. */
static int read_shape(struct cur *c, struct npy_header *h)
{
	int n = 0, comma = 0, rc;

	if ((rc = expect(c, '(', "'(' starting the shape tuple")))
		return rc;
	for (;;) {
		if (accept(c, ')'))
			break;
		if (n && !comma)
			return cur_fail(c, "',' or ')' in the shape tuple");
		if (n == NPY_MAX_DIMS)
			return cur_fail(c, "at most 16 dimensions");
		if ((rc = read_uint(c, &h->shape[n])))
			return rc;
		n++;
		comma = accept(c, ',');
	}
	if (n == 1 && !comma) {
		c->p--;
		return cur_fail(c, "',' after the only dimension (a 1-tuple)");
	}
	h->ndim = n;
	return 0;
}

/* Bytes per element of a descr, 0 for objects; -EINVAL if unsupported. */
static int descr_itemsize(const char *d, uint32_t *size)
{
	char kind;
	unsigned n = 0;
	const char *s = d;

	if (*s == '<' || *s == '>' || *s == '|' || *s == '=')
		s++;
	kind = *s++;
	if (kind == '?' && !*s) {
		*size = 1;
		return 0;
	}
	if (kind == 'O' && (!*s || !strcmp(s, "8"))) {
		*size = 0;
		return 0;
	}
	if (!*s || strlen(s) > 2)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		n = n * 10 + (unsigned)(*s - '0');
	}
	switch (kind) {
	case 'b':
		if (n != 1)
			return -EINVAL;
		break;
	case 'i': case 'u':
		if (n != 1 && n != 2 && n != 4 && n != 8)
			return -EINVAL;
		break;
	case 'f':
		if (n != 2 && n != 4 && n != 8 && n != 16)
			return -EINVAL;
		break;
	case 'c':
		if (n != 8 && n != 16 && n != 32)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	*size = n;
	return 0;
}

static int read_descr(struct cur *c, struct npy_header *h)
{
	const uint8_t *at;
	int rc;

	skip_ws(c);
	at = c->p;
	if (c->p < c->end && *c->p == '[')
		return cur_fail(c, "a simple dtype string (structured dtypes are not supported)");
	if ((rc = read_str(c, h->descr, sizeof(h->descr)))) {
		h->descr[0] = '\0';	/* not read: no part of one (npy.h) */
		return rc;
	}
	if (descr_itemsize(h->descr, &h->itemsize)) {
		report(c->what, c->why, c->whylen, "npy header offset %zu: expected a descr of kind b, i, u, f, c, ? or O with a valid size, found '%s'",
		       (size_t)(at - c->base), h->descr);
		return -EINVAL;
	}
	return 0;
}

/* The dict literal in c; each of the three keys exactly once. */
static int parse_dict(struct cur *c, struct npy_header *h)
{
	char key[32];
	int seen = 0, bit, rc;
	const uint8_t *at;

	if ((rc = expect(c, '{', "'{' starting the header dict")))
		return rc;
	while (!accept(c, '}')) {
		skip_ws(c);
		at = c->p;
		if ((rc = read_str(c, key, sizeof(key))))
			return rc;
		if (!strcmp(key, "descr"))
			bit = 1;
		else if (!strcmp(key, "fortran_order"))
			bit = 2;
		else if (!strcmp(key, "shape"))
			bit = 4;
		else
			bit = 0;
		if (!bit || (seen & bit)) {
			c->p = at;
			return cur_fail(c, bit ? "each key once" :
					"key 'descr', 'fortran_order' or 'shape'");
		}
		seen |= bit;
		if ((rc = expect(c, ':', "':' after the key")))
			return rc;
		if (bit == 1)
			rc = read_descr(c, h);
		else if (bit == 2)
			rc = read_bool(c, &h->fortran_order);
		else
			rc = read_shape(c, h);
		if (rc)
			return rc;
		if (!accept(c, ',')) {
			if ((rc = expect(c, '}', "',' or '}' after a value")))
				return rc;
			break;
		}
	}
	if (seen != 7)
		return cur_fail(c, "all of 'descr', 'fortran_order', 'shape' before '}'");
	skip_ws(c);
	if (c->p != c->end)
		return cur_fail(c, "only padding after '}'");
	return 0;
}

int npy_header_parse(const uint8_t *buf, size_t len, const char *what,
		     struct npy_header *h, size_t *need)
{
	return npy_header_parse_why(buf, len, what, h, need, NULL, 0);
}

int npy_header_parse_why(const uint8_t *buf, size_t len, const char *what,
			 struct npy_header *h, size_t *need, char *why,
			 size_t whylen)
{
	size_t prefix, hlen, total, m;
	struct cur c;

	memset(h, 0, sizeof(*h));
	m = len < NPY_MAGIC_LEN ? len : NPY_MAGIC_LEN;
	if (m && memcmp(buf, NPY_MAGIC, m)) {
		report(what, why, whylen, "offset 0: expected the npy magic \\x93NUMPY");
		return -EINVAL;
	}
	if (len < 8) {
		*need = 8;
		return -EAGAIN;
	}
	if (buf[6] < 1 || buf[6] > 3 || buf[7] != 0) {
		report(what, why, whylen, "offset 6: expected npy version 1.0, 2.0 or 3.0, found %u.%u",
		       buf[6], buf[7]);
		return -EINVAL;
	}
	h->version = buf[6];
	prefix = h->version == 1 ? 10 : 12;
	if (len < prefix) {
		*need = prefix;
		return -EAGAIN;
	}
	if (h->version == 1)
		hlen = buf[8] | (size_t)buf[9] << 8;
	else
		hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
		       (size_t)buf[11] << 24;
	if (hlen > NPY_MAX_HEADER) {
		report(what, why, whylen, "offset 8: expected a header length up to %u, found %zu",
		       NPY_MAX_HEADER, hlen);
		return -EINVAL;
	}
	total = prefix + hlen;
	if (len < total) {
		*need = total;
		return -EAGAIN;
	}
	c.base = buf;
	c.p = buf + prefix;
	c.end = buf + total;
	c.what = what;
	c.why = why;
	c.whylen = whylen;
	if (parse_dict(&c, h))
		return -EINVAL;
	h->data_offset = (uint32_t)total;
	return 0;
}

uint64_t npy_count(const struct npy_header *h, int from)
{
	uint64_t n = 1;
	int i;

	for (i = from; i < h->ndim; i++) {
		if (h->shape[i] && n > UINT64_MAX / h->shape[i])
			return UINT64_MAX;
		n *= h->shape[i];
	}
	return n;
}

/*
 * The descr np.save writes for the dtype numpy reads from `descr`, on a
 * little-endian machine: one-byte types and objects get '|', native and
 * not-applicable orders of wider types become '<', '?' is '|b1'.
 */
int npy_descr_normalize(const char *descr, char *out, size_t outlen)
{
	uint32_t size;
	const char *s = descr;
	char order = '<';

	if (descr_itemsize(descr, &size))
		return -EINVAL;
	if (*s == '<' || *s == '>' || *s == '|' || *s == '=')
		order = *s++;
	if (order == '=' || order == '|')
		order = '<';
	if (*s == '?')
		s = "b1";
	if (size <= 1) {
		order = '|';
		if (*s == 'O')
			s = "O";
	}
	if ((size_t)snprintf(out, outlen, "%c%s", order, s) >= outlen)
		return -ENOSPC;
	return 0;
}

/* repr() of a shape tuple: "()", "(784,)", "(28, 28)". */
static int shape_repr(char *out, size_t outlen, int ndim, const uint64_t *shape)
{
	size_t n = 0;
	int i, w;

	w = snprintf(out, outlen, "(");
	n += (size_t)w;
	for (i = 0; i < ndim && n < outlen; i++) {
		w = snprintf(out + n, outlen - n, "%s%llu", i ? ", " : "",
			     (unsigned long long)shape[i]);
		n += (size_t)w;
	}
	if (n < outlen)
		n += (size_t)snprintf(out + n, outlen - n, ndim == 1 ? ",)" : ")");
	return n < outlen ? (int)n : -ENOSPC;
}

int npy_header_emit(char *out, size_t outlen, const char *descr, int ndim,
		    const uint64_t *shape)
{
	char dict[512], tup[NPY_MAX_DIMS * 22 + 4], first[24];
	int n, growth = 0;
	size_t hlen, pad, total;

	if (ndim < 0 || ndim > NPY_MAX_DIMS || shape_repr(tup, sizeof(tup), ndim, shape) < 0)
		return -EINVAL;
	/* format.py pads by GROWTH_AXIS_MAX_DIGITS - len(repr(shape[0])) so
	 * the header can be rewritten in place when the array grows. */
	if (ndim > 0) {
		growth = GROWTH_AXIS_MAX_DIGITS -
			 snprintf(first, sizeof(first), "%llu", (unsigned long long)shape[0]);
		if (growth < 0)
			growth = 0;
	}
	n = snprintf(dict, sizeof(dict),
		     "{'descr': '%s', 'fortran_order': False, 'shape': %s, }%*s",
		     descr, tup, growth, "");
	if (n < 0 || (size_t)n >= sizeof(dict))
		return -EINVAL;
	hlen = (size_t)n + 1; /* the final '\n' */
	pad = ARRAY_ALIGN - (NPY_MAGIC_LEN + 4 + hlen) % ARRAY_ALIGN;
	total = NPY_MAGIC_LEN + 4 + hlen + pad;
	if (total > outlen)
		return -ENOSPC;
	memcpy(out, NPY_MAGIC "\x01\x00", 8);
	out[8] = (char)((hlen + pad) & 0xff);
	out[9] = (char)((hlen + pad) >> 8);
	memcpy(out + 10, dict, (size_t)n);
	memset(out + 10 + n, ' ', pad);
	out[total - 1] = '\n';
	return (int)total;
}
