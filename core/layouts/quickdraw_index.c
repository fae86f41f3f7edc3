/*
 * quickdraw_index.c - the pure helpers of the Quick, Draw! index that the
 * scan (quickdraw_scan.c), the build (quickdraw_build.c), the FUSE side and
 * the unit tests share: sample names and their bytewise order, split
 * sizes and lines, class names checked and shown.
 *
 * Not the scan, the build, or the FUSE-facing ops (layout_quickdraw.c).
 */
#include "layouts/quickdraw_index.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "decimal.h"

/* ---- pure helpers ---- */

void qd_split_counts(uint64_t total, const uint32_t pct[3], uint64_t out[3])
{
	/* Python: int(0.8 * total); 80 / 100.0 is the same double as 0.8. */
	double a = (double)pct[0] / 100.0 * (double)total;
	double b = (double)pct[1] / 100.0 * (double)total;

	out[0] = a < (double)total ? (uint64_t)a : total;
	out[1] = b < (double)(total - out[0]) ? (uint64_t)b : total - out[0];
	out[2] = total - out[0] - out[1];
}

int qd_sample_name(char *out, size_t outlen, uint64_t gidx)
{
	return snprintf(out, outlen, "%06" PRIu64 ".npy", gidx);
}

int qd_parse_sample_name(const char *name, uint64_t *gidx)
{
	uint64_t v = 0;
	size_t nd = 0;

	while (name[nd] >= '0' && name[nd] <= '9') {
		if (nd == 19)
			return -ENOENT;
		v = v * 10 + (uint64_t)(name[nd] - '0');
		nd++;
	}
	/* what %06d prints: at least 6 digits, no extra leading zero */
	if (nd < 6 || (nd > 6 && name[0] == '0') || strcmp(name + nd, ".npy"))
		return -ENOENT;
	*gidx = v;
	return 0;
}

static int name_width(uint64_t v)
{
	int n = (int)decimal_digits(v);

	return n < 6 ? 6 : n;
}

static uint64_t pow10u(int e)
{
	uint64_t p = 1;

	while (e-- > 0)
		p *= 10;
	return p;
}

/*
 * Names of different widths compare as strings: with x shorter than y by d
 * digits, x's name sorts first iff x <= y / 10^d ('.' sorts before digits,
 * so a name that is a prefix of the other's digits comes first).
 */
int qd_name_less(uint64_t a, uint64_t b)
{
	int wa = name_width(a), wb = name_width(b);

	if (wa == wb)
		return a < b;
	if (wa < wb)
		return a <= b / pow10u(wb - wa);
	return a / pow10u(wa - wb) < b;
}

/* [*glo, *ghi): the values of [lo, hi) whose names have w digits. */
static int width_range(uint64_t lo, uint64_t hi, int w, uint64_t *glo, uint64_t *ghi)
{
	*glo = w == 6 ? 0 : pow10u(w - 1);
	*ghi = pow10u(w);
	if (*glo < lo)
		*glo = lo;
	if (*ghi > hi)
		*ghi = hi;
	return *glo < *ghi;
}

/* Smallest value of width w in [lo, hi) whose name sorts after prev's. */
static uint64_t next_in_width(uint64_t lo, uint64_t hi, int w, uint64_t prev)
{
	uint64_t glo, ghi, c;
	int wp = name_width(prev);

	if (!width_range(lo, hi, w, &glo, &ghi))
		return UINT64_MAX;
	if (wp == w)
		c = prev + 1;
	else if (w > wp)
		c = prev * pow10u(w - wp);
	else
		c = prev / pow10u(wp - w) + 1;
	if (c < glo)
		c = glo;
	return c < ghi ? c : UINT64_MAX;
}

/*
 * Sample indices are below 2^32, so names have 6 to 10 digits; each width
 * is numerically sorted, and the next name overall is the smallest of the
 * next name of each width.  No allocation, O(1) per entry.
 */
uint64_t qd_name_first(uint64_t lo, uint64_t hi)
{
	uint64_t best = UINT64_MAX, glo, ghi;
	int w;

	for (w = 6; w <= 10; w++)
		if (width_range(lo, hi, w, &glo, &ghi) &&
		    (best == UINT64_MAX || qd_name_less(glo, best)))
			best = glo;
	return best;
}

uint64_t qd_name_next(uint64_t lo, uint64_t hi, uint64_t prev)
{
	uint64_t best = UINT64_MAX, c;
	int w;

	for (w = 6; w <= 10; w++) {
		c = next_in_width(lo, hi, w, prev);
		if (c != UINT64_MAX && (best == UINT64_MAX || qd_name_less(c, best)))
			best = c;
	}
	return best;
}

size_t qd_split_line(char *out, size_t outlen, int has_images, int has_strokes,
		     const char *name, size_t name_len, uint64_t gidx,
		     uint64_t label)
{
	int n = 0, nl = (int)name_len;

	if (has_images)
		n += snprintf(out + n, outlen - (size_t)n, "images/%.*s/%06" PRIu64 ".npy\t",
			      nl, name, gidx);
	if (has_strokes)
		n += snprintf(out + n, outlen - (size_t)n, "strokes/%.*s/%06" PRIu64 ".npy\t",
			      nl, name, gidx);
	n += snprintf(out + n, outlen - (size_t)n, "%" PRIu64 "\n", label);
	return (size_t)n;
}

uint64_t qd_split_line_len(int has_images, int has_strokes, size_t name_len,
			       uint64_t gidx, uint64_t label)
{
	uint64_t part = name_len + (uint64_t)name_width(gidx) + 6; /* "/", ".npy\t" */

	return (has_images ? 7 + part : 0) + (has_strokes ? 8 + part : 0) +
	       (uint64_t)decimal_digits(label) + 1;
}

const char *qd_name_problem(const char *name, size_t len)
{
	size_t i;

	if (len == 0)
		return "the name is empty";
	if (len > QD_MAX_NAME)
		return "longer than 250 bytes (a file name is at most 255)";
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return "'.' and '..' cannot be directory names";
	if (memchr(name, '/', len))
		return "a '/' cannot be in a directory name";
	for (i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return "a control character (newline, TAB, ...) would break "
			       "the lines of classes.txt and the split files";
	return NULL;
}

void qd_name_show(char *out, const char *name, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0;

	for (i = 0; i < len && n < 80; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '\n' || c == '\t' || c == '\r') {
			out[n++] = '\\';
			out[n++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (c < 0x20 || c >= 0x7f) {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		} else {
			out[n++] = (char)c;
		}
	}
	if (i < len) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

/* qd_head's names_fp */
uint64_t qd_names_fp(const char *names, uint64_t len)
{
	struct index_fp fp;

	index_fp_init(&fp, "quickdraw class names");
	index_fp_add_bytes(&fp, names, len);
	return fp.h;
}
