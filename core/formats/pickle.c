/*
 * pickle.c - an allowlisted pickle reader for the object arrays of Quick,
 * Draw! sketchrnn .npz members (see pickle.h).
 *
 * This is not a Python unpickler.  It runs the pickle stack machine over a
 * closed set of opcodes and six known globals, and every value it can hold
 * is one of a few fixed-size kinds: tuples are recognised the moment they
 * are built (a shape, dtype arguments, an ndarray state, ...) and anything
 * else is rejected.  So nothing is executed, nothing recurses, and no memory
 * is allocated in proportion to a count the input merely claims: the stack
 * and mark stack are fixed, the memo grows by at most two slots per memo
 * opcode and the object table by one entry per REDUCE actually present,
 * both to at most one entry per PK_PER_ENTRY bytes of input, and every
 * length is checked against the bytes that remain before use.  The
 * elements handed to the callback add up to no more than the input's size
 * (PK_ELEM_COST), so the caller's work is bounded by it too, and so do
 * the texts _codecs.encode decodes.
 *
 * Objects that BUILD changes after they may have been memoised (arrays,
 * dtypes) live in one table and the stack and memo hold references to
 * them, so every copy sees the change, as in Python.
 *
 * Element arrays are handed to the callback when they are appended to the
 * (single) list that becomes the object array's data, pointing into the
 * input when the bytes are raw; text that must be decoded (_codecs.encode
 * latin-1 strings of Python 3 protocol 2 pickles) or Fortran-ordered data
 * goes through one scratch buffer reused for every element.
 */
#include "formats/pickle.h"
#include "formats/strokes.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* numpy's pickles need a depth of about 20 and a mark depth of 4; a batch
 * of APPENDS holds 1000 items (both CPython pickle and cPickle). */
#define PK_STACK_MAX 4096
#define PK_MARKS_MAX 32
#define PK_NAME_MAX  64
/* numpy's pickles spend 6 bytes or more per memo slot and 14 or more per
 * REDUCE (measured for protocols 2-5); a slot or object table larger than
 * one entry per 4 bytes (+ room for tiny pickles) is hostile. */
#define PK_PER_ENTRY 4
#define PK_ENTRIES_MIN 256
/* Each element a pickle appends costs it at least its data and this much
 * (numpy writes 28 bytes or more around each): elements adding up to more
 * than the pickle's size are one memoised array appended many times over,
 * which would hand the callback far more than the input holds. */
#define PK_ELEM_COST 16

enum pk_kind {
	PV_UNSET,               /* a memo slot never written */
	PV_NONE, PV_INT, PV_BYTES, PV_TEXT, PV_LATIN1, PV_GLOBAL, PV_LIST,
	PV_EMPTY_TUPLE, PV_SHAPE, PV_RECON_ARGS, PV_DTYPE_ARGS, PV_DTYPE,
	PV_DTYPE_STATE, PV_CODEC_ARGS, PV_FROMBUF_ARGS, PV_ARRAY,
	PV_ELEM_STATE, PV_OBJ_STATE, PV_ELEM, PV_OBJARRAY,
	PV_REF,                 /* u.num indexes pstate.objs */
};

enum pk_global {
	G_RECONSTRUCT, G_NDARRAY, G_DTYPE, G_ENCODE, G_BYTES, G_FROMBUFFER,
};

/* A dtype's sub: T_OBJ, or T_ELEM + enum stroke_dtype.  Elements (ELEM,
 * ELEM_STATE, FROMBUF_ARGS) keep their stroke_dtype in sub. */
enum pk_type { T_OBJ = 1, T_ELEM };

#define PF_LATIN1  1   /* data is UTF-8 text of latin-1 code points */
#define PF_FORTRAN 2   /* data is column-major */
#define PF_BIG     4   /* dtype state said big-endian */

/*
 * One value on the unpickler's stack or in its memo.  Strings (BYTES,
 * TEXT, LATIN1) point into the input: for LATIN1, p/ulen are the UTF-8
 * text and len the decoded length.  Element arrays (ELEM, ELEM_STATE,
 * FROMBUF_ARGS) keep the same p/ulen and n rows.
 */
struct pickle_value {
	uint8_t kind;
	uint8_t sub;            /* GLOBAL: pk_global; DTYPE*: pk_type; SHAPE: ndim */
	uint8_t flags;          /* PF_* */
	union {
		int64_t num;    /* INT (bools too), REF, OBJ_STATE/OBJARRAY count */
		struct { const uint8_t *p; uint64_t len, ulen; } s;
		struct { uint64_t d[2]; } shape;
		struct { const uint8_t *p; uint64_t n, ulen; } arr;
	} u;
};

struct pstate {
	const uint8_t *buf;
	size_t len, pos, op;    /* op: offset of the opcode being run */
	const char *what;
	pickle_stroke_fn fn;
	void *arg;
	struct pickle_value *stack;       /* grown on demand up to PK_STACK_MAX: a */
	size_t sp, stack_cap;   /* 128 KiB calloc per parse cost ASan dearly */
	size_t marks[PK_MARKS_MAX];
	size_t nmarks;
	struct pickle_value *memo;
	size_t nmemo, memo_cap;
	struct pickle_value *objs;        /* arrays and dtypes, one per REDUCE */
	size_t nobjs, objs_cap;
	uint8_t *scratch;
	size_t scratch_cap;
	int have_list;          /* only one list may exist: the data list */
	uint64_t list_len;      /* elements appended to it (and passed to fn) */
	uint64_t emitted;       /* their data bytes + PK_ELEM_COST each */
	uint64_t encoded;       /* text bytes _codecs.encode has decoded */
};

static void report(const struct pstate *st, const char *fmt, ...) SFS_PRINTF(2, 3);

/* Every malformed input ends here; a macro so the compiler sees -EINVAL. */
#define FAIL(st, ...) (report((st), __VA_ARGS__), -EINVAL)

static void report(const struct pstate *st, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sfs_err("%s: pickle offset %zu (opcode 0x%02x): %s", st->what, st->op,
		st->buf[st->op], msg);
}

/* ---- input ---------------------------------------------------------- */

static int take(struct pstate *st, uint64_t n, const uint8_t **p)
{
	if (n > st->len - st->pos)
		return FAIL(st, "needs %llu bytes, only %zu left",
			    (unsigned long long)n, st->len - st->pos);
	*p = st->buf + st->pos;
	st->pos += n;
	return 0;
}

static int take_le(struct pstate *st, unsigned width, uint64_t *v)
{
	const uint8_t *p;
	int rc = take(st, width, &p);

	*v = 0;
	while (rc == 0 && width--)
		*v = *v << 8 | p[width];
	return rc;
}

/* ---- stack and memo ------------------------------------------------- */

/* The bottom of the current frame: values below the topmost MARK are out
 * of reach until it is popped. */
static size_t stack_floor(const struct pstate *st)
{
	return st->nmarks ? st->marks[st->nmarks - 1] : 0;
}

static int push(struct pstate *st, const struct pickle_value *v)
{
	struct pickle_value *n;
	size_t cap;

	if (st->sp == st->stack_cap) {
		if (st->stack_cap == PK_STACK_MAX)
			return FAIL(st, "stack deeper than %d", PK_STACK_MAX);
		cap = st->stack_cap ? 2 * st->stack_cap : 64;
		if (cap > PK_STACK_MAX)
			cap = PK_STACK_MAX;
		if (!(n = realloc(st->stack, cap * sizeof(*n))))
			return -ENOMEM;
		st->stack = n;
		st->stack_cap = cap;
	}
	st->stack[st->sp++] = *v;
	return 0;
}

static int pop(struct pstate *st, struct pickle_value *v)
{
	size_t floor = stack_floor(st);

	if (st->sp == floor)
		return FAIL(st, "stack underflow");
	*v = st->stack[--st->sp];
	return 0;
}

/* Items above the topmost mark; the mark is removed. */
static int pop_mark(struct pstate *st, size_t *first)
{
	if (!st->nmarks)
		return FAIL(st, "no MARK to pop");
	*first = st->marks[--st->nmarks];
	return 0;
}

/*
 * Grows a table of pv (memo or objects) to hold index idx: doubling, but
 * never past the bound for a pickle of this size.  -EINVAL past it.
 */
static int table_grow(struct pstate *st, struct pickle_value **t, size_t *cap, uint64_t idx,
		      const char *what)
{
	size_t max = st->len / PK_PER_ENTRY + PK_ENTRIES_MIN, ncap;
	struct pickle_value *p;

	if (idx < *cap)
		return 0;
	if (idx >= max)
		return FAIL(st, "%s of more than %zu entries for a pickle of %zu bytes "
			    "(numpy's use one per 6 bytes or more)", what, max, st->len);
	ncap = *cap ? *cap * 2 : PK_ENTRIES_MIN;
	if (ncap > max)
		ncap = max;
	p = realloc(*t, ncap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*t = p;
	*cap = ncap;
	return 0;
}

/*
 * Picklers number memo slots densely: from 0, or from 1 in Python 2's
 * cPickle (whose put2 keeps "memo keys positive").  So an index may rewrite
 * a slot or add one at most one past the end; it can never make us
 * allocate for a gap, and the memo stays within two slots per opcode.
 */
static int memo_put(struct pstate *st, uint64_t idx)
{
	size_t floor = stack_floor(st);
	int rc;

	if (st->sp == floor)
		return FAIL(st, "memo put with an empty stack");
	if (idx > st->nmemo + 1)
		return FAIL(st, "memo index %llu skips past %zu",
			    (unsigned long long)idx, st->nmemo);
	rc = table_grow(st, &st->memo, &st->memo_cap, idx, "memo");
	if (rc)
		return rc;
	if (idx == st->nmemo + 1)
		st->memo[st->nmemo].kind = PV_UNSET;
	st->memo[idx] = st->stack[st->sp - 1];
	if (idx >= st->nmemo)
		st->nmemo = idx + 1;
	return 0;
}

static int memo_get(struct pstate *st, uint64_t idx)
{
	if (idx >= st->nmemo || st->memo[idx].kind == PV_UNSET)
		return FAIL(st, "memo index %llu not set (%zu entries)",
			    (unsigned long long)idx, st->nmemo);
	return push(st, &st->memo[idx]);
}

/* Puts v in the object table and pushes a reference to it. */
static int push_object(struct pstate *st, const struct pickle_value *v)
{
	struct pickle_value ref = { .kind = PV_REF };
	int rc = table_grow(st, &st->objs, &st->objs_cap, st->nobjs, "object table");

	if (rc)
		return rc;
	st->objs[st->nobjs] = *v;
	ref.u.num = (int64_t)st->nobjs++;
	return push(st, &ref);
}

/* The value itself, or the object a reference names. */
static struct pickle_value *deref(struct pstate *st, struct pickle_value *v)
{
	return v->kind == PV_REF ? &st->objs[v->u.num] : v;
}

/* ---- recognising values --------------------------------------------- */

static int is_str(const struct pickle_value *v)
{
	return v->kind == PV_BYTES || v->kind == PV_TEXT || v->kind == PV_LATIN1;
}

/* Compares an ASCII literal with a string value of any kind (ASCII is the
 * same in UTF-8 and latin-1). */
static int str_eq(const struct pickle_value *v, const char *lit)
{
	size_t n = strlen(lit);
	uint64_t vlen = v->kind == PV_LATIN1 ? v->u.s.ulen : v->u.s.len;

	return is_str(v) && vlen == n && memcmp(v->u.s.p, lit, n) == 0;
}

static int is_int(const struct pickle_value *v, int64_t want)
{
	return v->kind == PV_INT && v->u.num == want;
}

/* Hostile names go into messages only if they are short printable ASCII. */
static int printable(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return 0;
	return n <= PK_NAME_MAX;
}

/* Length of `n` UTF-8 bytes decoded to latin-1, or -1 if any code point
 * is outside U+0000..U+00FF. */
static int64_t latin1_len(const uint8_t *p, uint64_t n)
{
	uint64_t i = 0, out = 0;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
		} else if ((p[i] == 0xc2 || p[i] == 0xc3) && i + 1 < n &&
			   (p[i + 1] & 0xc0) == 0x80) {
			i += 2;
		} else {
			return -1;
		}
		out++;
	}
	return (int64_t)out;
}

static void latin1_decode(const uint8_t *p, uint64_t n, uint8_t *out)
{
	uint64_t i = 0;

	while (i < n) {
		if (p[i] < 0x80) {
			*out++ = p[i++];
		} else {
			*out++ = (uint8_t)((p[i] & 0x03) << 6 | (p[i + 1] & 0x3f));
			i += 2;
		}
	}
}

static uint64_t str_len(const struct pickle_value *v)
{
	return v->u.s.len;
}

/*
 * Checks an element's shape, dtype and data and fills out (ELEM_STATE or
 * FROMBUF_ARGS).  Data must be exactly n*3 values: (n, 3) of a stroke dtype.
 */
static int elem_check(struct pstate *st, const struct pickle_value *shape,
		      const struct pickle_value *dtype, const struct pickle_value *data,
		      int fortran, struct pickle_value *out)
{
	uint64_t n, size;

	if (dtype->kind != PV_DTYPE || dtype->sub < T_ELEM)
		return FAIL(st, "element dtype is not one of int8/16/32/64, float16/32/64");
	size = stroke_dtype_size((enum stroke_dtype)(dtype->sub - T_ELEM));
	if ((dtype->flags & PF_BIG) && size > 1)
		return FAIL(st, "element dtype is big-endian, expected little-endian '<%s'",
			    stroke_dtype_name((enum stroke_dtype)(dtype->sub - T_ELEM)));
	if (shape->kind != PV_SHAPE || shape->sub != 2 || shape->u.shape.d[1] != 3)
		return FAIL(st, "element shape is not (n, 3)");
	if (data->kind != PV_BYTES && data->kind != PV_LATIN1)
		return FAIL(st, "element data is not a byte string");
	n = shape->u.shape.d[0];
	if (n > UINT32_MAX || str_len(data) != n * 3 * size)
		return FAIL(st, "element of shape (%llu, 3) has %llu data bytes, expected %llu",
			    (unsigned long long)n,
			    (unsigned long long)str_len(data),
			    (unsigned long long)n * 3 * size);
	out->sub = (uint8_t)(dtype->sub - T_ELEM);
	out->flags = (uint8_t)((data->kind == PV_LATIN1 ? PF_LATIN1 : 0) |
			       (fortran && n > 1 ? PF_FORTRAN : 0));
	out->u.arr.p = data->u.s.p;
	out->u.arr.n = n;
	out->u.arr.ulen = data->u.s.ulen;
	return 0;
}

/* (1, shape, dtype, fortran, data): an ndarray's __setstate__ argument. */
static int classify_array_state(struct pstate *st, const struct pickle_value *it,
				struct pickle_value *out)
{
	const struct pickle_value *dt = &it[2];

	if (!is_int(&it[0], 1) || it[1].kind != PV_SHAPE ||
	    dt->kind != PV_DTYPE || it[3].kind != PV_INT)
		return FAIL(st, "5-tuple is not an ndarray state (1, shape, dtype, fortran, data)");
	if (dt->sub == T_OBJ) {
		if (it[1].sub != 1 || it[4].kind != PV_LIST)
			return FAIL(st, "object array state is not (N,) with a list");
		if (it[1].u.shape.d[0] != st->list_len)
			return FAIL(st, "object array claims %llu elements, its list has %llu",
				    (unsigned long long)it[1].u.shape.d[0],
				    (unsigned long long)st->list_len);
		out->kind = PV_OBJ_STATE;
		out->u.num = (int64_t)st->list_len;
		return 0;
	}
	out->kind = PV_ELEM_STATE;
	return elem_check(st, &it[1], dt, &it[4], it[3].u.num != 0, out);
}

/* (3, endian, None, None, None, elsize, alignment, flags) */
static int classify_dtype_state(struct pstate *st, const struct pickle_value *it,
				struct pickle_value *out)
{
	const struct pickle_value *e = &it[1];

	if (!is_int(&it[0], 3) || !is_str(e) || str_len(e) != 1 ||
	    it[2].kind != PV_NONE || it[3].kind != PV_NONE ||
	    it[4].kind != PV_NONE || it[5].kind != PV_INT ||
	    it[6].kind != PV_INT || it[7].kind != PV_INT)
		return FAIL(st, "8-tuple is not a simple dtype state (3, endian, None, None, None, ...)");
	out->kind = PV_DTYPE_STATE;
	out->flags = str_eq(e, ">") ? PF_BIG : 0;
	if (!out->flags && !str_eq(e, "<") && !str_eq(e, "|") && !str_eq(e, "="))
		return FAIL(st, "dtype byte order is not one of < > | =");
	return 0;
}

/* ('i1' | 'i2' | 'i4' | 'i8' | 'f2' | 'f4' | 'f8' | 'O8' | 'O4', align, copy) */
static int classify_dtype_args(struct pstate *st, const struct pickle_value *it,
			       struct pickle_value *out)
{
	int t;

	if (it[1].kind != PV_INT || it[2].kind != PV_INT)
		return FAIL(st, "dtype arguments are not (name, bool, bool)");
	out->kind = PV_DTYPE_ARGS;
	if (str_eq(&it[0], "O8") || str_eq(&it[0], "O4")) {
		out->sub = T_OBJ;
		return 0;
	}
	for (t = STROKE_I1; t <= STROKE_F8; t++) {
		if (str_eq(&it[0], stroke_dtype_name((enum stroke_dtype)t))) {
			out->sub = (uint8_t)(T_ELEM + t);
			return 0;
		}
	}
	if (it[0].kind != PV_LATIN1 && printable(it[0].u.s.p, str_len(&it[0])))
		return FAIL(st, "dtype '%.*s' is not object nor a stroke dtype "
			    "(int8/16/32/64, float16/32/64)",
			    (int)str_len(&it[0]), (const char *)it[0].u.s.p);
	return FAIL(st, "dtype is not object nor a stroke dtype (int8/16/32/64, float16/32/64)");
}

static int classify_shape(struct pstate *st, const struct pickle_value *it, size_t k,
			  struct pickle_value *out)
{
	size_t i;

	for (i = 0; i < k; i++) {
		if (it[i].u.num < 0)
			return FAIL(st, "negative dimension %lld",
				    (long long)it[i].u.num);
		out->u.shape.d[i] = (uint64_t)it[i].u.num;
	}
	out->kind = PV_SHAPE;
	out->sub = (uint8_t)k;
	return 0;
}

/*
 * Turns the k items it[0..k) into the one kind of tuple they can be, or
 * fails.  These are all the tuples numpy's ndarray and dtype pickles use.
 */
static int classify_tuple(struct pstate *st, const struct pickle_value *it, size_t k,
			  struct pickle_value *out)
{
	memset(out, 0, sizeof(*out));
	if (k == 0) {
		out->kind = PV_EMPTY_TUPLE;
		return 0;
	}
	if (k <= 2 && it[0].kind == PV_INT && it[k - 1].kind == PV_INT)
		return classify_shape(st, it, k, out);
	if (k == 2 && it[0].kind == PV_TEXT && (str_eq(&it[1], "latin1") ||
						 str_eq(&it[1], "latin-1"))) {
		out->kind = PV_CODEC_ARGS;
		out->u.s = it[0].u.s;
		return 0;
	}
	if (k == 3 && it[0].kind == PV_GLOBAL && it[0].sub == G_NDARRAY &&
	    it[1].kind == PV_SHAPE && is_str(&it[2])) {
		out->kind = PV_RECON_ARGS;
		return 0;
	}
	if (k == 3 && is_str(&it[0]))
		return classify_dtype_args(st, it, out);
	if (k == 4 && it[0].kind == PV_BYTES && str_eq(&it[3], "C")) {
		out->kind = PV_FROMBUF_ARGS;
		return elem_check(st, &it[2], &it[1], &it[0], 0, out);
	}
	if (k == 4 && it[0].kind == PV_BYTES && str_eq(&it[3], "F")) {
		out->kind = PV_FROMBUF_ARGS;
		return elem_check(st, &it[2], &it[1], &it[0], 1, out);
	}
	if (k == 5)
		return classify_array_state(st, it, out);
	if (k == 8)
		return classify_dtype_state(st, it, out);
	return FAIL(st, "unexpected %zu-tuple", k);
}

/* ---- opcodes -------------------------------------------------------- */

static int op_tuple(struct pstate *st, size_t k)
{
	struct pickle_value t, items[8];
	size_t first = 0, i;
	int rc;

	if (k == (size_t)-1) {
		rc = pop_mark(st, &first);
		if (rc)
			return rc;
		k = st->sp - first;
	} else {
		size_t floor = stack_floor(st);

		if (st->sp - floor < k)
			return FAIL(st, "TUPLE%zu with %zu items on the stack",
				    k, st->sp - floor);
	}
	/* numpy's tuples have at most 8 items; classify their values */
	if (k > 8)
		return FAIL(st, "unexpected %zu-tuple", k);
	for (i = 0; i < k; i++)
		items[i] = *deref(st, &st->stack[st->sp - k + i]);
	rc = classify_tuple(st, items, k, &t);
	if (rc)
		return rc;
	st->sp -= k;
	return push(st, &t);
}

static int lookup_global(struct pstate *st, const uint8_t *mod, size_t ml,
			 const uint8_t *name, size_t nl)
{
	static const struct { const char *mod, *name; int id; } allow[] = {
		{ "numpy.core.multiarray", "_reconstruct", G_RECONSTRUCT },
		{ "numpy._core.multiarray", "_reconstruct", G_RECONSTRUCT },
		{ "numpy", "ndarray", G_NDARRAY },
		{ "numpy", "dtype", G_DTYPE },
		{ "_codecs", "encode", G_ENCODE },
		{ "__builtin__", "bytes", G_BYTES },
		{ "builtins", "bytes", G_BYTES },
		{ "numpy.core.numeric", "_frombuffer", G_FROMBUFFER },
		{ "numpy._core.numeric", "_frombuffer", G_FROMBUFFER },
	};
	struct pickle_value v = { .kind = PV_GLOBAL };
	size_t i;

	for (i = 0; i < sizeof(allow) / sizeof(allow[0]); i++) {
		if (strlen(allow[i].mod) == ml && !memcmp(allow[i].mod, mod, ml) &&
		    strlen(allow[i].name) == nl && !memcmp(allow[i].name, name, nl)) {
			v.sub = (uint8_t)allow[i].id;
			return push(st, &v);
		}
	}
	if (!printable(mod, ml) || !printable(name, nl))
		return FAIL(st, "global with an unprintable or long name is not allowed");
	return FAIL(st, "global %.*s.%.*s is not allowed", (int)ml,
		    (const char *)mod, (int)nl, (const char *)name);
}

/* GLOBAL: "module\nname\n" */
static int op_global(struct pstate *st)
{
	const uint8_t *mod = st->buf + st->pos, *name, *end = st->buf + st->len;
	const uint8_t *nl1, *nl2;

	nl1 = memchr(mod, '\n', (size_t)(end - mod));
	if (!nl1)
		return FAIL(st, "GLOBAL module name not terminated");
	name = nl1 + 1;
	nl2 = memchr(name, '\n', (size_t)(end - name));
	if (!nl2)
		return FAIL(st, "GLOBAL name not terminated");
	st->pos = (size_t)(nl2 + 1 - st->buf);
	return lookup_global(st, mod, (size_t)(nl1 - mod), name,
			     (size_t)(nl2 - name));
}

static int op_stack_global(struct pstate *st)
{
	struct pickle_value mod, name;
	int rc;

	if ((rc = pop(st, &name)) || (rc = pop(st, &mod)))
		return rc;
	if (mod.kind != PV_TEXT || name.kind != PV_TEXT)
		return FAIL(st, "STACK_GLOBAL operands are not strings");
	return lookup_global(st, mod.u.s.p, mod.u.s.len, name.u.s.p,
			     name.u.s.len);
}

/* Any string or bytes push: a length of `width` bytes, then the data. */
static int op_string(struct pstate *st, unsigned width, enum pk_kind kind)
{
	struct pickle_value v = { .kind = (uint8_t)kind };
	uint64_t n;
	int rc = take_le(st, width, &n);

	if (rc)
		return rc;
	/* Python 2 reads BINSTRING's length as signed */
	if (st->buf[st->op] == 'T' && n > INT32_MAX)
		return FAIL(st, "BINSTRING with negative length");
	rc = take(st, n, &v.u.s.p);
	if (rc)
		return rc;
	v.u.s.len = v.u.s.ulen = n;
	return push(st, &v);
}

static int op_int(struct pstate *st, unsigned width, int is_signed)
{
	struct pickle_value v = { .kind = PV_INT };
	uint64_t u;
	int rc = take_le(st, width, &u);

	if (rc)
		return rc;
	v.u.num = is_signed ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u;
	return push(st, &v);
}

/* LONG1: n bytes of little-endian two's complement; we need at most 8. */
static int op_long1(struct pstate *st)
{
	struct pickle_value v = { .kind = PV_INT };
	const uint8_t *p;
	uint64_t n, i, u = 0;
	int rc;

	if ((rc = take_le(st, 1, &n)) || (rc = take(st, n, &p)))
		return rc;
	if (n > 8)
		return FAIL(st, "LONG1 of %llu bytes is out of range",
			    (unsigned long long)n);
	for (i = n; i > 0; i--)
		u = u << 8 | p[i - 1];
	if (n > 0 && n < 8 && (p[n - 1] & 0x80))
		u |= ~0ULL << (8 * n);          /* sign-extend */
	v.u.num = (int64_t)u;
	return push(st, &v);
}

static int op_reduce(struct pstate *st)
{
	struct pickle_value args, fn, out;
	int64_t l1;
	int rc;

	if ((rc = pop(st, &args)) || (rc = pop(st, &fn)))
		return rc;
	if (fn.kind != PV_GLOBAL)
		return FAIL(st, "REDUCE of something that is not a global");
	memset(&out, 0, sizeof(out));
	if (fn.sub == G_RECONSTRUCT && args.kind == PV_RECON_ARGS) {
		out.kind = PV_ARRAY;            /* empty until BUILD */
		return push_object(st, &out);
	} else if (fn.sub == G_DTYPE && args.kind == PV_DTYPE_ARGS) {
		out.kind = PV_DTYPE;            /* byte order set by BUILD */
		out.sub = args.sub;
		return push_object(st, &out);
	} else if (fn.sub == G_ENCODE && args.kind == PV_CODEC_ARGS) {
		/* Python's pickler encodes each bytes object once and memoises
		 * the result, so the texts decoded add up to less than the
		 * pickle; more is one memoised text encoded over and over
		 * (BINGET x3, TUPLE2, REDUCE: 8 bytes re-reading the whole text
		 * each time; a 4 MB pickle took 7 s) */
		st->encoded += args.u.s.len;
		if (st->encoded > st->len)
			return FAIL(st, "_codecs.encode texts add up to %llu bytes, more than the "
				    "pickle's %zu (a memoised text encoded more than once?)",
				    (unsigned long long)st->encoded, st->len);
		l1 = latin1_len(args.u.s.p, args.u.s.len);
		if (l1 < 0)
			return FAIL(st, "_codecs.encode text is not latin-1");
		out.kind = PV_LATIN1;
		out.u.s.p = args.u.s.p;
		out.u.s.ulen = args.u.s.len;
		out.u.s.len = (uint64_t)l1;
	} else if (fn.sub == G_BYTES && args.kind == PV_EMPTY_TUPLE) {
		out.kind = PV_BYTES;            /* bytes() == b'' */
		out.u.s.p = st->buf + st->op;   /* any valid pointer */
	} else if (fn.sub == G_FROMBUFFER && args.kind == PV_FROMBUF_ARGS) {
		out = args;
		out.kind = PV_ELEM;
	} else {
		return FAIL(st, "REDUCE with unexpected arguments");
	}
	return push(st, &out);
}

static int op_build(struct pstate *st)
{
	struct pickle_value state, *obj;
	int rc = pop(st, &state);

	if (rc)
		return rc;
	if (st->sp == stack_floor(st))
		return FAIL(st, "BUILD with nothing to build");
	obj = deref(st, &st->stack[st->sp - 1]);
	if (obj->kind == PV_DTYPE && state.kind == PV_DTYPE_STATE) {
		obj->flags = state.flags;
	} else if (obj->kind == PV_ARRAY && state.kind == PV_ELEM_STATE) {
		*obj = state;
		obj->kind = PV_ELEM;
	} else if (obj->kind == PV_ARRAY && state.kind == PV_OBJ_STATE) {
		*obj = state;
		obj->kind = PV_OBJARRAY;
	} else {
		return FAIL(st, "BUILD of an unexpected object or state");
	}
	return 0;
}

/* Makes the element contiguous little-endian C-order and calls fn. */
static int emit(struct pstate *st, const struct pickle_value *e)
{
	enum stroke_dtype t = (enum stroke_dtype)e->sub;
	uint64_t n = e->u.arr.n, size = stroke_dtype_size(t), bytes = n * 3 * size,
		 need, r, c;
	const uint8_t *src = e->u.arr.p;
	uint8_t *tmp;

	st->emitted += bytes + PK_ELEM_COST;
	if (st->emitted > st->len)
		return FAIL(st, "list item %llu: the elements so far add up to %llu bytes, more than "
			    "the pickle's %zu (an array appended more than once?)",
			    (unsigned long long)st->list_len, (unsigned long long)st->emitted,
			    st->len);
	if (n == 0 || !(e->flags & (PF_LATIN1 | PF_FORTRAN)))
		return st->fn(st->arg, src, (uint32_t)n, t);
	need = (e->flags & PF_LATIN1) && (e->flags & PF_FORTRAN) ? 2 * bytes : bytes;
	if (need > st->scratch_cap) {
		tmp = realloc(st->scratch, need);
		if (!tmp)
			return -ENOMEM;
		st->scratch = tmp;
		st->scratch_cap = need;
	}
	if (e->flags & PF_LATIN1) {
		tmp = (e->flags & PF_FORTRAN) ? st->scratch + bytes : st->scratch;
		latin1_decode(src, e->u.arr.ulen, tmp);
		src = tmp;
	}
	if (e->flags & PF_FORTRAN) {
		for (r = 0; r < n; r++)
			for (c = 0; c < 3; c++)
				memcpy(st->scratch + (r * 3 + c) * size,
				       src + (c * n + r) * size, size);
	}
	return st->fn(st->arg, st->scratch, (uint32_t)n, t);
}

/* APPEND (one item) or APPENDS (items above the mark) to the data list. */
static int op_append(struct pstate *st, int many)
{
	size_t first = 0, i;
	int rc;

	if (many) {
		if ((rc = pop_mark(st, &first)))
			return rc;
	} else {
		size_t floor = stack_floor(st);

		if (st->sp - floor < 2)
			return FAIL(st, "APPEND with too few items");
		first = st->sp - 1;
	}
	if (first == 0 || st->stack[first - 1].kind != PV_LIST)
		return FAIL(st, "APPEND to something that is not a list");
	for (i = first; i < st->sp; i++) {
		const struct pickle_value *e = deref(st, &st->stack[i]);

		if (e->kind != PV_ELEM)
			return FAIL(st, "list item %llu is not an (n, 3) array of numbers",
				    (unsigned long long)st->list_len);
		rc = emit(st, e);
		if (rc)
			return rc;
		st->list_len++;
	}
	st->sp = first;
	return 0;
}

static int op_mark(struct pstate *st)
{
	if (st->nmarks == PK_MARKS_MAX)
		return FAIL(st, "MARKs nested deeper than %d", PK_MARKS_MAX);
	st->marks[st->nmarks++] = st->sp;
	return 0;
}

static int op_empty_list(struct pstate *st)
{
	struct pickle_value v = { .kind = PV_LIST };

	if (st->have_list)
		return FAIL(st, "a second list (only the object array's data list is expected)");
	st->have_list = 1;
	return push(st, &v);
}

static int op_const(struct pstate *st, enum pk_kind kind, int64_t num)
{
	struct pickle_value v = { .kind = (uint8_t)kind };

	v.u.num = num;
	return push(st, &v);
}

static int op_memo(struct pstate *st, unsigned width, int put)
{
	uint64_t idx;
	int rc = take_le(st, width, &idx);

	if (rc)
		return rc;
	return put ? memo_put(st, idx) : memo_get(st, idx);
}

static int op_proto_frame(struct pstate *st, int frame)
{
	uint64_t v;
	int rc = take_le(st, frame ? 8 : 1, &v);

	if (rc)
		return rc;
	if (frame && v > st->len - st->pos)
		return FAIL(st, "FRAME of %llu bytes, only %zu left",
			    (unsigned long long)v, st->len - st->pos);
	if (!frame && (v < 2 || v > 5))
		return FAIL(st, "pickle protocol %llu, expected 2 to 5",
			    (unsigned long long)v);
	return 0;
}

/* STOP: the whole pickle must have reduced to one built object array. */
static long op_stop(struct pstate *st)
{
	const struct pickle_value *top = st->sp ? deref(st, &st->stack[0]) : NULL;

	if (st->nmarks || st->sp != 1 || top->kind != PV_OBJARRAY)
		return FAIL(st, "STOP without exactly one object array on the stack");
	if ((uint64_t)top->u.num != st->list_len)
		return FAIL(st, "elements appended after the object array was built");
	if (st->list_len > (uint64_t)LONG_MAX)
		return FAIL(st, "too many elements");
	return (long)st->list_len;
}

static int step(struct pstate *st, uint8_t op)
{
	switch (op) {
	case 0x80: return op_proto_frame(st, 0);           /* PROTO */
	case 0x95: return op_proto_frame(st, 1);           /* FRAME */
	case 'c':  return op_global(st);
	case 0x93: return op_stack_global(st);
	case 'U':  return op_string(st, 1, PV_BYTES);      /* SHORT_BINSTRING */
	case 'T':  return op_string(st, 4, PV_BYTES);      /* BINSTRING */
	case 'C':  return op_string(st, 1, PV_BYTES);      /* SHORT_BINBYTES */
	case 'B':  return op_string(st, 4, PV_BYTES);      /* BINBYTES */
	case 0x8e: return op_string(st, 8, PV_BYTES);      /* BINBYTES8 */
	case 0x96: return op_string(st, 8, PV_BYTES);      /* BYTEARRAY8 */
	case 0x8c: return op_string(st, 1, PV_TEXT);       /* SHORT_BINUNICODE */
	case 'X':  return op_string(st, 4, PV_TEXT);       /* BINUNICODE */
	case 0x8d: return op_string(st, 8, PV_TEXT);       /* BINUNICODE8 */
	case 'K':  return op_int(st, 1, 0);                /* BININT1 */
	case 'M':  return op_int(st, 2, 0);                /* BININT2 */
	case 'J':  return op_int(st, 4, 1);                /* BININT */
	case 0x8a: return op_long1(st);
	case 'N':  return op_const(st, PV_NONE, 0);
	case 0x88: return op_const(st, PV_INT, 1);         /* NEWTRUE */
	case 0x89: return op_const(st, PV_INT, 0);         /* NEWFALSE */
	case ')':  return op_tuple(st, 0);                 /* EMPTY_TUPLE */
	case 0x85: return op_tuple(st, 1);
	case 0x86: return op_tuple(st, 2);
	case 0x87: return op_tuple(st, 3);
	case 't':  return op_tuple(st, (size_t)-1);        /* TUPLE (to MARK) */
	case '(':  return op_mark(st);
	case ']':  return op_empty_list(st);
	case 'a':  return op_append(st, 0);
	case 'e':  return op_append(st, 1);
	case 'R':  return op_reduce(st);
	case 'b':  return op_build(st);
	case 'q':  return op_memo(st, 1, 1);               /* BINPUT */
	case 'r':  return op_memo(st, 4, 1);               /* LONG_BINPUT */
	case 0x94: return memo_put(st, st->nmemo);         /* MEMOIZE */
	case 'h':  return op_memo(st, 1, 0);               /* BINGET */
	case 'j':  return op_memo(st, 4, 0);               /* LONG_BINGET */
	default:
		return FAIL(st, "opcode 0x%02x is not allowed", op);
	}
}

long pickle_parse_strokes(const uint8_t *buf, size_t len, const char *what,
			  pickle_stroke_fn fn, void *arg)
{
	struct pstate *st;
	long rc = -EINVAL;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->buf = buf;
	st->len = len;
	st->what = what;
	st->fn = fn;
	st->arg = arg;
	while (st->pos < st->len) {
		st->op = st->pos++;
		if (buf[st->op] == '.') {
			rc = op_stop(st);
			goto out;
		}
		rc = step(st, buf[st->op]);
		if (rc)
			goto out;
	}
	sfs_err("%s: pickle offset %zu: truncated, no STOP opcode", what, len);
	rc = -EINVAL;
out:
	free(st->stack);
	free(st->memo);
	free(st->objs);
	free(st->scratch);
	free(st);
	return rc;
}
