/*
 * test_pickle.c - core/formats/pickle.c against pickles written by Python: every
 * flavour of tests/fixtures/qd_pickles.py (Python 2 cPickle emulation,
 * Python 3 protocols 2-5, numpy 2 names), whose element arrays must match
 * the expect_*.counts/.pts files numpy wrote from the original arrays; and
 * hostile pickles (make_npz.py's "pkbad" lines), every truncation and byte
 * damage of good ones, which must fail cleanly.  Also end to end through
 * zip.c and npy.c for each .npz.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/npy.h"
#include "formats/pickle.h"
#include "formats/zip.h"

#define FIXTURE_SUBDIR "qd"
#include "fixture.h"
#include "capture.h"
#include "bounded.h"
#include "opensrc.h"

/* ---- the oracle: expected arrays of one member ------------------------ */

struct expect {
	uint32_t *counts;       /* rows of each element */
	int16_t *pts;           /* all values, concatenated */
	size_t n, npts;
	size_t seen, pos;       /* progress of a parse */
	int stop_at;            /* callback fails at this element (-1: never) */
};

static void expect_load(struct expect *e, const char *member)
{
	char name[64];
	size_t len;

	memset(e, 0, sizeof(*e));
	e->stop_at = -1;
	snprintf(name, sizeof(name), "expect_%s.counts", member);
	e->counts = (uint32_t *)slurp(name, &len);
	e->n = len / 4;
	snprintf(name, sizeof(name), "expect_%s.pts", member);
	e->pts = (int16_t *)slurp(name, &len);
	e->npts = len / 2;
}

static void expect_free(struct expect *e)
{
	free(e->counts);
	free(e->pts);
}

/* Checks each element against the next expected one as it arrives. */
static int check_elem(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t)
{
	struct expect *e = arg;
	int16_t v;

	if ((int)e->seen == e->stop_at)
		return -EIO;
	cr_assert(t == STROKE_I2, "element %zu: dtype %s, expected i2", e->seen,
		  stroke_dtype_name(t));
	cr_assert(e->seen < e->n, "more elements than the %zu expected", e->n);
	cr_assert(n == e->counts[e->seen], "element %zu: %u rows, expected %u",
		  e->seen, n, e->counts[e->seen]);
	cr_assert(pts != NULL);
	for (uint32_t i = 0; i < n * 3; i++) {
		memcpy(&v, pts + 2 * i, 2);
		cr_assert(v == e->pts[e->pos + i], "element %zu value %u: %d, expected %d",
			  e->seen, i, v, e->pts[e->pos + i]);
	}
	e->pos += (size_t)n * 3;
	e->seen++;
	return 0;
}

/* Parses buf and requires exactly the expected member. */
static void parse_expect(const uint8_t *buf, size_t len, const char *what,
			 const char *member)
{
	struct expect e;
	long rc;

	expect_load(&e, member);
	rc = pickle_parse_strokes(buf, len, what, check_elem, &e);
	cr_assert(rc == (long)e.n, "%s: returned %ld, expected %zu elements",
		  what, rc, e.n);
	cr_assert(e.seen == e.n && e.pos == e.npts, "%s: callback saw %zu", what, e.seen);
	expect_free(&e);
}

/* pk FILE MEMBER */
static void check_good(struct line *l)
{
	size_t len;
	uint8_t *buf = slurp(l->tok[1], &len);
	uint8_t *odd = malloc(len + 1);

	parse_expect(buf, len, l->tok[1], l->tok[2]);
	/* the same bytes at an odd address: elements are unaligned */
	memcpy(odd + 1, buf, len);
	parse_expect(odd + 1, len, l->tok[1], l->tok[2]);
	free(odd);
	free(buf);
}

Test(pickle, every_flavour_matches_numpy)
{
	/* 9 flavours x 4 members */
	cr_expect(each("pk", check_good) == 36);
}

/* ---- other element dtypes: the callback gets numpy's bytes ------------- */

struct dt_expect {
	const char *dtype;
	uint32_t *counts;
	uint8_t *bytes;
	size_t n, len, seen, pos;
};

static int check_dt_elem(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t)
{
	struct dt_expect *e = arg;
	size_t size = (size_t)n * 3 * stroke_dtype_size(t);

	cr_assert(!strcmp(stroke_dtype_name(t), e->dtype), "element %zu: dtype %s, expected %s",
		  e->seen, stroke_dtype_name(t), e->dtype);
	cr_assert(e->seen < e->n && n == e->counts[e->seen], "element %zu: %u rows",
		  e->seen, n);
	cr_assert(e->pos + size <= e->len && !memcmp(pts, e->bytes + e->pos, size),
		  "element %zu: bytes differ from numpy's", e->seen);
	e->pos += size;
	e->seen++;
	return 0;
}

/* pkdt FILE DTYPE PREFIX */
static void check_dtype(struct line *l)
{
	struct dt_expect e = { .dtype = l->tok[2] };
	char name[128];
	size_t len;
	uint8_t *buf = slurp(l->tok[1], &len);
	long rc;

	snprintf(name, sizeof(name), "%s.counts", l->tok[3]);
	e.counts = (uint32_t *)slurp(name, &e.n);
	e.n /= 4;
	snprintf(name, sizeof(name), "%s.bytes", l->tok[3]);
	e.bytes = slurp(name, &e.len);
	rc = pickle_parse_strokes(buf, len, l->tok[1], check_dt_elem, &e);
	cr_assert(rc == (long)e.n && e.seen == e.n && e.pos == e.len,
		  "%s: returned %ld, saw %zu of %zu elements", l->tok[1], rc, e.seen, e.n);
	free(e.counts);
	free(e.bytes);
	free(buf);
}

Test(pickle, every_stroke_dtype_matches_numpy)
{
	/* i1 i2 i4 i8 f2 f4 f8 x 5 flavours */
	cr_expect(each("pkdt", check_dtype) == 35);
}

/* ---- hostile input ---------------------------------------------------- */

static int count_only(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t);

/* Runs the parse with stderr sent to a file; returns what was printed. */
static char *parse_capturing(const uint8_t *buf, size_t len, const char *what,
			     long *rc)
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;
	char *msg = calloc(1, 4096);
	long rows = 0;

	cr_assert(tmp && saved >= 0 && msg);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	*rc = pickle_parse_strokes(buf, len, what, count_only, &rows);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(msg, 1, 4095, tmp);
	msg[n] = '\0';
	fclose(tmp);
	return msg;
}

static int count_only(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t)
{
	long *rows = arg;
	uint8_t v;

	if (n) {        /* touch the first and last bytes: ASan checks bounds */
		memcpy(&v, pts, 1);
		memcpy(&v, pts + (size_t)n * 3 * stroke_dtype_size(t) - 1, 1);
	}
	*rows += n;
	return 0;
}

/* pkbad FILE OFFSET WHY... */
static void check_bad(struct line *l)
{
	size_t len;
	uint8_t *buf = slurp(l->tok[1], &len);
	uint8_t *exact = malloc(len ? len : 1);
	long rows = 0, rc;
	char *msg, want[64];

	/* an exact-size copy, so ASan catches any read past the end */
	memcpy(exact, buf, len);
	rc = pickle_parse_strokes(exact, len, l->tok[1], count_only, &rows);
	cr_expect(rc == -EINVAL, "%s (%s): returned %ld", l->tok[1], l->tok[3], rc);
	if (strcmp(l->tok[2], "-") != 0) {
		msg = parse_capturing(exact, len, l->tok[1], &rc);
		snprintf(want, sizeof(want), "offset %s ", l->tok[2]);
		cr_expect(strstr(msg, want) && strstr(msg, l->tok[1]),
			  "%s: message does not name the file and %s: %s",
			  l->tok[1], want, msg);
		free(msg);
	}
	free(exact);
	free(buf);
}

Test(pickle, hostile_pickles_fail_cleanly)
{
	cr_expect(each("pkbad", check_bad) >= 40);
}

/* Every prefix of a good pickle is an error, never a crash or a count. */
static void check_prefixes(struct line *l)
{
	size_t len, cut;
	uint8_t *buf;
	long rows, rc;

	if (strcmp(l->tok[2], "valid") != 0 && strcmp(l->tok[2], "one") != 0)
		return;
	buf = slurp(l->tok[1], &len);
	for (cut = 0; cut < len; cut++) {
		uint8_t *p = malloc(cut ? cut : 1);

		memcpy(p, buf, cut);
		rows = 0;
		rc = pickle_parse_strokes(p, cut, l->tok[1], count_only, &rows);
		cr_assert(rc == -EINVAL, "%s cut at %zu: returned %ld", l->tok[1], cut, rc);
		free(p);
	}
	free(buf);
}

Test(pickle, every_truncation_fails)
{
	int fd = open("/dev/null", O_WRONLY);

	dup2(fd, 2);    /* thousands of (correct) error messages */
	cr_expect(each("pk", check_prefixes) == 36);
	close(fd);
}

/* Each byte of a small pickle replaced by a few values: the parse may
 * succeed (data bytes) or fail, but never crash, overrun or hang.  Four
 * flavours cover every opcode family (and keep the ASan run short). */
static void check_damage(struct line *l)
{
	static const uint8_t repl[] = { 0x00, 0xff, '(', 'h' };
	size_t len, i, k;
	uint8_t *buf;
	long rows, rc;

	if (strcmp(l->tok[2], "valid") != 0 ||
	    (!strstr(l->tok[1], "_py2_") && !strstr(l->tok[1], "_py3p2_") &&
	     !strstr(l->tok[1], "_p4_") && !strstr(l->tok[1], "_np2p5_")))
		return;
	buf = slurp(l->tok[1], &len);
	for (i = 0; i < len; i++) {
		for (k = 0; k < sizeof(repl); k++) {
			uint8_t *p = malloc(len);

			memcpy(p, buf, len);
			p[i] = repl[k];
			rows = 0;
			rc = pickle_parse_strokes(p, len, l->tok[1], count_only, &rows);
			cr_assert(rc == -EINVAL || rc >= 0, "%s: byte %zu: %ld", l->tok[1], i, rc);
			free(p);
		}
	}
	free(buf);
}

Test(pickle, damaged_bytes_never_crash)
{
	int fd = open("/dev/null", O_WRONLY);

	dup2(fd, 2);
	cr_expect(each("pk", check_damage) == 36);
	close(fd);
}

Test(pickle, callback_error_stops_the_parse)
{
	size_t len;
	uint8_t *buf = slurp("pk_py2_train.pkl", &len);
	struct expect e;
	long rc;

	expect_load(&e, "train");
	e.stop_at = 3;
	rc = pickle_parse_strokes(buf, len, "pk_py2_train.pkl", check_elem, &e);
	cr_expect(rc == -EIO, "returned %ld", rc);
	cr_expect(e.seen == 3, "callback ran %zu times", e.seen);
	expect_free(&e);
	free(buf);
}

/* ---- end to end: zip -> npy header -> pickle --------------------------- */

static void check_npz(struct line *l)
{
	static const char *members[] = { "train", "valid", "test", "one" };
	struct zip_archive *za;
	char *path = fixture_path(l->tok[1]), name[32], what[128];
	struct source *src = open_src(path);
	int rc = zip_open(&za, src);

	cr_assert(rc == 0, "%s: zip_open %d", l->tok[1], rc);
	for (size_t i = 0; i < 4; i++) {
		const struct zip_member *m;
		struct npy_header h;
		uint8_t *data;
		size_t len, need;

		snprintf(name, sizeof(name), "%s.npy", members[i]);
		snprintf(what, sizeof(what), "%s:%s", l->tok[1], name);
		m = zip_find(za, name);
		cr_assert(m, "%s: no member", what);
		rc = zip_read_member(za, m, 1 << 28, &data, &len);
		cr_assert(rc == 0, "%s: read %d", what, rc);
		rc = npy_header_parse(data, len, what, &h, &need);
		cr_assert(rc == 0, "%s: npy header %d", what, rc);
		cr_assert_str_eq(h.descr, "|O", "%s", what);
		cr_assert(h.ndim == 1, "%s", what);
		parse_expect(data + h.data_offset, len - h.data_offset, what, members[i]);
		free(data);
	}
	zip_close(za);
	source_close(src);
	free(path);
}

Test(pickle, npz_end_to_end)
{
	/* 9 flavours x stored/deflated, np.savez, zip64 and data descriptors */
	cr_expect(each("npz", check_npz) == 23);
}

/* ---- pickles that ask for more than their size (make_hostile.py) ------- */

static int count_elem(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t)
{
	(void)pts;
	(void)n;
	(void)t;
	++*(size_t *)arg;
	return 0;
}

struct pickle_job {
	const uint8_t *buf;
	size_t len;
	size_t calls;
};

static long pickle_job(void *arg)
{
	struct pickle_job *j = arg;

	return pickle_parse_strokes(j->buf, j->len, "hostile", count_elem, &j->calls);
}

/*
 * One (1000, 3) array appended 100,000 times by BINGET, as numpy pickles
 * an object array that holds the same array everywhere: 230 KB that would
 * hand the callback 600 MB.  Refused once the elements outgrow the pickle.
 */
Test(pickle, hostile_repeated_element)
{
	struct pickle_job j = { NULL, 0, 0 };
	struct capture c;
	char *text;
	long rc;

	j.buf = slurp("../hostile/pk-repeat.pkl", &j.len);
	capture_start(&c);
	rc = pickle_parse_strokes(j.buf, j.len, "hostile", count_elem, &j.calls);
	text = capture_end(&c);
	cr_expect_eq(rc, -EINVAL, "rc %ld", rc);
	cr_expect_leq(j.calls * 6000, j.len, "the callback got %zu elements of 6000 bytes from %zu",
		      j.calls, j.len);
	cr_expect(strstr(text, "hostile: pickle offset") && strstr(text, "more than once"),
		  "message: %s", text);
	free(text);
	free((void *)j.buf);
}

/* 4M MEMOIZE opcodes: the memo stops at one slot per 4 bytes of input
 * (32 MiB of slots here), where it took 128 MiB and more.  ASan's
 * quarantine keeps every block realloc freed, so it gets more room. */
#ifdef BOUNDED_ASAN
#define MEMO_LIMIT (160LL << 20)
#else
#define MEMO_LIMIT (96LL << 20)
#endif
Test(pickle, hostile_memo)
{
	struct pickle_job j = { NULL, 0, 0 };
	struct bounded_result r;
	struct capture c;
	char *text;

	j.buf = slurp("../hostile/pk-memo.pkl", &j.len);
	capture_start(&c);
	r = bounded_run(pickle_job, &j, 256LL << 20);
	text = capture_end(&c);
	cr_expect_eq(r.rc, -EINVAL, "rc %ld", r.rc);
	cr_expect_lt(r.grew, MEMO_LIMIT,
		     "resident memory grew by %lld bytes for a %zu-byte pickle", r.grew, j.len);
	cr_expect(strstr(text, "memo of more than"), "message: %s", text);
	free(text);
	free((void *)j.buf);
}

/*
 * One 32 MiB text memoised, then _codecs.encode of it 4000 times over
 * (BINGET x3, TUPLE2, REDUCE: 8 bytes each), as the review built it: each
 * REDUCE re-read the whole text, 128 GiB of work from 32 MiB (a 4 MB one
 * took 7 s).  Refused at the second REDUCE, whose offset the message
 * names; the timeout is a hang bound, far above the milliseconds it takes.
 */
Test(pickle, hostile_text_encoded_again, .timeout = 30)
{
	static const uint8_t head[] = "\x80\x02" "c_codecs\nencode\nq\x00" "X";
	size_t L = 32u << 20, reps = 4000, n = 0, i, second;
	uint8_t *b = malloc(L + 64 + 8 * reps);
	struct capture c;
	char *text, want[64];
	size_t calls = 0;
	long rc;

	cr_assert(b);
	memcpy(b, head, sizeof(head) - 1);
	n = sizeof(head) - 1;
	b[n++] = (uint8_t)L;
	b[n++] = (uint8_t)(L >> 8);
	b[n++] = (uint8_t)(L >> 16);
	b[n++] = (uint8_t)(L >> 24);
	memset(b + n, 'a', L);
	n += L;
	memcpy(b + n, "q\x01" "X\x06\0\0\0latin1" "q\x02", 15);
	n += 15;
	second = n + 8 + 7;     /* the REDUCE of the second round */
	for (i = 0; i < reps; i++, n += 8)
		memcpy(b + n, "h\x00h\x01h\x02\x86R", 8);
	b[n++] = '.';
	capture_start(&c);
	rc = pickle_parse_strokes(b, n, "hostile", count_elem, &calls);
	text = capture_end(&c);
	cr_expect_eq(rc, -EINVAL, "rc %ld", rc);
	snprintf(want, sizeof(want), "hostile: pickle offset %zu (opcode 0x52)", second);
	cr_expect(strstr(text, want) && strstr(text, "_codecs.encode texts add up to"),
		  "message (expected \"%s\"): %s", want, text);
	free(text);
	free(b);
}
