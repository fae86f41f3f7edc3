/*
 * quickdraw_index.c - the Quick, Draw! source scan and index build.
 *
 * The scan (every mount) finds the classes and their files and opens the
 * image .npy files as sources; it reads only their headers.  The build (first mount, or
 * when the sources or shaping options changed) inflates every stroke .npz
 * member once, re-blocks each drawing's points into a blockstore, shuffles
 * the split permutation as numpy does and writes everything into one index.
 * Also the pure helpers the FUSE side and the unit tests share.
 *
 * Not the FUSE-facing ops: layout_quickdraw.c.
 */
#include "layouts/quickdraw_index.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "index/blockstore.h"
#include "log.h"
#include "formats/mt19937.h"
#include "formats/npy.h"
#include "formats/pickle.h"
#include "index/progress.h"
#include "formats/strokepack.h"
#include "formats/zip.h"

#define MAX_CLASSES   100000u
/* An .npz member is inflated whole before its pickle is read.  Real
 * sketchrnn members (70,000 / 2,500 / 2,500 drawings) are 6 to 80 MB;
 * this leaves room for three times that, and keeps a deflate bomb (a few
 * hundred KB that inflate ~1000:1) from taking more. */
#define MAX_MEMBER    (256ull << 20)
#define MAX_XL_BYTES  (1ull << 30)  /* long drawings kept raw, at most */
#define CLASSES_MAX   (16u << 20)   /* a classes file, at most */

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

static int ndigits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static int name_width(uint64_t v)
{
	int n = ndigits(v);

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
	       (uint64_t)ndigits(label) + 1;
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

/* ---- the scan ---- */

static int is_dir(struct source_env *env, const char *path)
{
	struct source_info info;

	return source_stat(env, path, &info) == 0 && info.is_dir;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && !strcmp(s + n - m, suf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int names_add(struct qd_names *ns, const char *s, size_t len)
{
	char **v;

	if (ns->n == MAX_CLASSES) {
		sfs_err("more than %u classes", MAX_CLASSES);
		return -E2BIG;
	}
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? 2 * ns->cap : 64;
		v = realloc(ns->v, ns->cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ns->v = v;
	}
	ns->v[ns->n] = strndup(s, len);
	if (!ns->v[ns->n])
		return -ENOMEM;
	ns->n++;
	return 0;
}

void qd_names_free(struct qd_names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

/* What list_classes collects from one directory listing. */
struct classes_in {
	const char *dir, *ext;
	int strict, bad, *found;
	struct qd_names *ns;
};

/* source_list callback: one entry of a class directory */
static int class_entry(void *arg, const char *name, int is_dir)
{
	struct classes_in *ci = arg;
	char show[QD_NAME_SHOW];
	const char *why;
	size_t len;

	if (!has_suffix(name, ci->ext) || has_suffix(name, ".full.npz"))
		return 0;
	len = strlen(name) - strlen(ci->ext);
	if ((why = qd_name_problem(name, len))) {
		if (ci->strict) {
			qd_name_show(show, name, len);
			sfs_err("%s: file of class '%s': %s; rename it, or list "
				"the classes to serve in classes.txt or -o classes=FILE",
				ci->dir, show, why);
			ci->bad = 1;
		}
		return 0;
	}
	*ci->found = 1;
	return names_add(ci->ns, name, len);
}

/*
 * Adds the class names of `dir`'s "*<ext>" files (not "*.full.npz").
 * `strict` (the listing decides the classes): a name the tree cannot
 * carry is an error naming the file (each one; the mount is refused, as
 * dropping it would shift every later label); else such files are not
 * classes unless the classes file lists them, which it cannot.
 * -ENOTSUP (said by nobody) when the directory cannot be listed, as a
 * web server without listings.
 */
static int list_classes(struct source_env *env, const char *dir, const char *ext,
			int strict, struct qd_names *ns, int *found)
{
	struct classes_in ci = { dir, ext, strict, 0, found, ns };
	int rc = source_list(env, dir, class_entry, &ci);

	if (rc < 0 && rc != -ENOTSUP && rc != -ENOMEM && rc != -E2BIG)
		sfs_err("%s: cannot list: %s", dir, strerror(-rc));
	return rc ? rc : ci.bad ? -EINVAL : 0;
}

static void names_sort_unique(struct qd_names *ns)
{
	size_t i, j = 0;

	if (ns->n > 1)
		qsort(ns->v, ns->n, sizeof(*ns->v), cmp_str);
	for (i = 0; i < ns->n; i++) {
		if (j && !strcmp(ns->v[j - 1], ns->v[i]))
			free(ns->v[i]);
		else
			ns->v[j++] = ns->v[i];
	}
	ns->n = j;
}

/* A name of a classes file and where its line starts, for duplicates. */
struct listed {
	const char *name;
	size_t off;
};

static int cmp_listed(const void *a, const void *b)
{
	const struct listed *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->off > y->off) - (x->off < y->off);
}

/*
 * Finds a name listed twice: 1 and *at, the index in ns of the first line
 * that repeats an earlier line's name; 0 when none; -ENOMEM.  Sorted, not
 * compared pairwise: 100,000 names, which a 500 KB file holds, took 26 s
 * of CPU pairwise.
 */
static int first_repeat(const struct qd_names *ns, const size_t *offs, size_t *at)
{
	struct listed *l = malloc(ns->n * sizeof(*l));
	size_t i, first = SIZE_MAX;

	if (!l)
		return -ENOMEM;
	for (i = 0; i < ns->n; i++)
		l[i] = (struct listed){ ns->v[i], offs[i] };
	qsort(l, ns->n, sizeof(*l), cmp_listed);
	for (i = 1; i < ns->n; i++)
		if (!strcmp(l[i - 1].name, l[i].name) && l[i].off < first)
			first = l[i].off;
	free(l);
	if (first == SIZE_MAX)
		return 0;
	for (*at = 0; offs[*at] != first; ++*at)
		;
	return 1;
}

/* Where each name of a classes file starts, in the order of ns->v. */
struct offsets {
	size_t *v, cap;
};

/* One line's name (p, len at offset off of path) added to ns and o. */
static int add_line(const char *path, const char *p, size_t len, size_t off,
		    struct qd_names *ns, struct offsets *o)
{
	char show[QD_NAME_SHOW];
	const char *why;
	size_t *v;
	int rc;

	if ((why = qd_name_problem(p, len))) {
		qd_name_show(show, p, len);
		sfs_err("%s: offset %zu: class '%s': %s", path, off, show, why);
		return -EINVAL;
	}
	if (ns->n == o->cap) {
		if (!(v = realloc(o->v, (o->cap ? 2 * o->cap : 64) * sizeof(*v))))
			return -ENOMEM;
		o->v = v;
		o->cap = o->cap ? 2 * o->cap : 64;
	}
	if ((rc = names_add(ns, p, len)))
		return rc;
	o->v[ns->n - 1] = off;
	return 0;
}

int qd_classes_parse(const char *path, const char *buf, size_t n,
		     struct qd_names *ns)
{
	struct offsets o = {0};
	const char *p, *end, *nl;
	size_t len, at;
	int rc = 0;

	for (p = buf, end = buf + n; p < end && !rc; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		len = (size_t)(nl - p);
		if (len && p[len - 1] == '\r')
			len--;
		if (len)
			rc = add_line(path, p, len, (size_t)(p - buf), ns, &o);
	}
	if (!rc && ns->n > 1 && (rc = first_repeat(ns, o.v, &at)) == 1) {
		sfs_err("%s: offset %zu: class '%s' listed twice", path, o.v[at],
			ns->v[at]);
		rc = -EINVAL;
	}
	free(o.v);
	if (rc)
		qd_names_free(ns);
	return rc;
}

static int read_classes_file(struct source_env *env, const char *path,
			     struct qd_names *ns)
{
	char *buf = NULL;
	struct source *src;
	ssize_t got;
	int rc = source_open(env, path, &src);

	if (rc < 0) {
		sfs_err("%s: cannot open the classes file: %s", path, strerror(-rc));
		return rc;
	}
	if (source_stamp(src)->size >= CLASSES_MAX) {
		sfs_err("%s: expected a classes file under %u bytes", path, CLASSES_MAX);
		rc = -EINVAL;
		goto out;
	}
	buf = malloc(source_stamp(src)->size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	got = source_pread(src, buf, source_stamp(src)->size, 0);
	if (got < 0) {
		rc = (int)got;
		sfs_err("%s: cannot read the classes file: %s", path, strerror(-rc));
		goto out;
	}
	rc = qd_classes_parse(path, buf, (size_t)got, ns);
out:
	free(buf);
	source_close(src);
	return rc;
}

/* qd_head's classes_fp: the classes file's name and stamp; 0 when the
 * stamp cannot tell two versions of one size apart (a server that sends
 * neither Last-Modified nor an ETag): that file is read at every mount. */
static uint64_t classes_fp(const char *path, const struct source_stamp *st)
{
	struct index_fp fp;

	if (!st->mtime_ns && !st->etag[0])
		return 0;
	index_fp_init(&fp, "quickdraw classes file");
	index_fp_add_source(&fp, path, st);
	return fp.h ? fp.h : 1;
}

/* qd_head's names_fp */
static uint64_t names_fp(const char *names, uint64_t len)
{
	struct index_fp fp;

	index_fp_init(&fp, "quickdraw class names");
	index_fp_add_bytes(&fp, names, len);
	return fp.h;
}

/*
 * The class names of the saved index (mapped for a peek: its checksum not
 * yet checked, so the names' own hash is), when it was built from the
 * classes file `path` as it is now (fp: classes_fp of its stamp now).
 * 0 and the names in ns, or -ESTALE (ns empty): read the file.
 */
static int saved_classes(const struct index_map *saved, const char *path,
			 uint64_t fp, struct qd_names *ns)
{
	const struct qd_head *hd;
	const char *names;
	uint64_t len = 0;

	if (!saved || !fp)
		return -ESTALE;
	hd = index_map_section(saved, QD_TAG_HEAD, &len);
	if (!hd || len != sizeof(*hd) || hd->format != QD_FORMAT || hd->classes_fp != fp)
		return -ESTALE;
	names = index_map_section(saved, QD_TAG_NAME, &len);
	if (!names || len != hd->names_len || names_fp(names, len) != hd->names_fp)
		return -ESTALE;
	/* what a build parsed and wrote: it parses again */
	if (qd_classes_parse(path, names, len, ns) || !ns->n) {
		qd_names_free(ns);
		return -ESTALE;
	}
	return 0;
}

/* An image file shorter than its header says: its whole rows are used. */
static void warn_short(const struct qd_src *c)
{
	if (c->img_rows < c->img_hdr_rows)
		sfs_warn("%s: offset %" PRIu64 ": header says %" PRIu64 " rows, the file "
			 "holds %" PRIu64 " whole rows; using those", c->img_path,
			 source_stamp(c->img)->size, c->img_hdr_rows, c->img_rows);
}

/* Reads and checks the header of a raster class file: uint8, C order,
 * (N, 784) or (N, 28, 28).  Rows the file is too short for are dropped. */
static int scan_image(struct qd_src *c)
{
	uint64_t size = source_stamp(c->img)->size, whole;
	uint8_t buf[4096];
	struct npy_header h;
	size_t need = 0;
	ssize_t got;
	int rc;

	got = source_pread(c->img, buf, sizeof(buf), 0);
	if (got < 0)
		return (int)got;
	rc = npy_header_parse(buf, (size_t)got, c->img_path, &h, &need);
	if (rc == -EAGAIN) {
		sfs_err("%s: offset %zd: expected a .npy header of %zu bytes", c->img_path,
			got, need);
		return -EINVAL;
	}
	if (rc)
		return rc;
	if (h.itemsize != 1 || !strchr("|<>=", h.descr[0]) || strcmp(h.descr + 1, "u1") ||
	    h.fortran_order || !((h.ndim == 2 && h.shape[1] == QD_ROW) ||
				 (h.ndim == 3 && h.shape[1] == 28 && h.shape[2] == 28))) {
		sfs_err("%s: offset 0: expected a C-order uint8 array of shape (N, 784), "
			"found descr '%s', %d dims", c->img_path, h.descr, h.ndim);
		return -EINVAL;
	}
	c->img_off = h.data_offset;
	whole = size > h.data_offset ? (size - h.data_offset) / QD_ROW : 0;
	c->img_hdr_rows = h.shape[0];
	c->img_rows = whole < h.shape[0] ? whole : h.shape[0];
	c->img_scanned = 1;
	warn_short(c);
	return 0;
}

int qd_scan_images(struct qd_scan *s)
{
	size_t i;

	for (i = 0; i < s->nclass; i++)
		if (s->cls[i].img && !s->cls[i].img_scanned && scan_image(&s->cls[i]))
			return -EINVAL;
	return 0;
}

int qd_scan_attach(struct qd_scan *s, const struct qd_class *cls)
{
	struct qd_src *c;
	size_t i;

	for (i = 0; i < s->nclass; i++) {
		c = &s->cls[i];
		if (!c->img)
			continue;
		if (c->img_scanned) {
			if (c->img_off != cls[i].img_off || c->img_rows != cls[i].img_rows ||
			    c->img_hdr_rows != cls[i].img_hdr_rows)
				return -EBADMSG;
			continue;
		}
		if (cls[i].img_rows > cls[i].img_hdr_rows ||
		    cls[i].img_off + cls[i].img_rows * QD_ROW > source_stamp(c->img)->size)
			return -EBADMSG;
	}
	for (i = 0; i < s->nclass; i++) {
		c = &s->cls[i];
		if (!c->img || c->img_scanned)
			continue;
		c->img_off = cls[i].img_off;
		c->img_hdr_rows = cls[i].img_hdr_rows;
		c->img_rows = cls[i].img_rows;
		c->img_scanned = 1;
		warn_short(c);
	}
	return 0;
}

/* dir/<name><ext>, the name percent-encoded in a URL; NULL on ENOMEM */
static char *class_file(const char *dir, const char *name, const char *ext)
{
	char *file, *path;

	if (asprintf(&file, "%s%s", name, ext) < 0)
		return NULL;
	path = source_join(dir, file);
	free(file);
	return path;
}

/* What src_files found wrong, said by src_error: the files of several
 * classes are looked at in parallel, the first failing class named. */
enum { SRC_OK, SRC_NO_IMAGE, SRC_NO_STROKES };

static int src_files(struct source_env *env, struct qd_src *c, const char *img_dir,
		     const char *stk_dir, int has_images, int has_strokes, int *what)
{
	struct source_info info;
	int rc;

	*what = SRC_OK;
	if (has_images) {
		if (!(c->img_path = class_file(img_dir, c->name, ".npy")))
			return -ENOMEM;
		if ((rc = source_open(env, c->img_path, &c->img)) < 0) {
			*what = SRC_NO_IMAGE;
			return rc;
		}
		c->img_mtime = source_stamp_sec(source_stamp(c->img));
		/* no advice: SEQUENTIAL measured slower than the default
		 * readahead both in gidx order (8-10k vs 11k files/s cold) and
		 * in split order (1.8-3.2k vs 3.6-3.9k files/s cold).  The
		 * header is read for a build (qd_scan_images), else it comes
		 * from the saved index (qd_scan_attach). */
	}
	if (has_strokes) {
		if (!(c->stk_path = class_file(stk_dir, c->name, ".npz")))
			return -ENOMEM;
		if (source_stat(env, c->stk_path, &info) || info.is_dir) {
			*what = SRC_NO_STROKES;
			return -ENOENT;
		}
		c->stk_stamp = info.stamp;
		c->stk_mtime = source_stamp_sec(&info.stamp);
	}
	return 0;
}

static int src_error(const struct qd_src *c, int what, int rc)
{
	if (what == SRC_NO_IMAGE)
		sfs_err("%s: class '%s' has no image file: %s", c->img_path, c->name,
			strerror(-rc));
	else if (what == SRC_NO_STROKES)
		sfs_err("%s: class '%s' has no stroke file", c->stk_path, c->name);
	return what == SRC_OK ? rc : -ENOENT;
}

/*
 * The files of every class: opened (the image) and stat'ed (the strokes).
 * Over HTTP each is a HEAD, one round trip: 345 classes one after another
 * took 26 s through the bench's 20 ms proxy (bench.sh http, 6a02973), so
 * URLs get SCAN_THREADS threads, each taking the next class.  Local files
 * are cheap and done in line.  The error of the first failing class in
 * order is the one reported, as a serial scan would; threads stop taking
 * classes after a failure.
 */
#define SCAN_THREADS 16

struct scan_job {
	struct qd_scan *s;
	const char *img_dir, *stk_dir;
	pthread_mutex_t lock;
	size_t next, nclass;
	size_t bad;		/* first failing class, or nclass */
	int rc, what;
};

static void *scan_worker(void *arg)
{
	struct scan_job *j = arg;
	size_t i;
	int rc, what;

	for (;;) {
		pthread_mutex_lock(&j->lock);
		i = j->next < j->bad ? j->next++ : j->nclass;
		pthread_mutex_unlock(&j->lock);
		if (i >= j->nclass)
			return NULL;
		rc = src_files(j->s->env, &j->s->cls[i], j->img_dir, j->stk_dir,
			       j->s->has_images, j->s->has_strokes, &what);
		if (!rc)
			continue;
		pthread_mutex_lock(&j->lock);
		if (i < j->bad) {
			j->bad = i;
			j->rc = rc;
			j->what = what;
		}
		pthread_mutex_unlock(&j->lock);
	}
}

static int scan_class_files(struct qd_scan *s, const char *img_dir,
			    const char *stk_dir, int parallel)
{
	struct scan_job j = { s, img_dir, stk_dir, PTHREAD_MUTEX_INITIALIZER, 0,
			      s->nclass, s->nclass, 0, SRC_OK };
	pthread_t t[SCAN_THREADS];
	size_t n = 0;

	while (parallel && n < SCAN_THREADS && n + 1 < s->nclass &&
	       !pthread_create(&t[n], NULL, scan_worker, &j))
		n++;
	scan_worker(&j);
	while (n)
		pthread_join(t[--n], NULL);
	pthread_mutex_destroy(&j.lock);
	return j.bad < s->nclass ? src_error(&s->cls[j.bad], j.what, j.rc) : 0;
}

/* numpy_bitmap/ and sketchrnn/ (official) or one flat directory; whether
 * each is a directory (found once: over HTTP each look is a HEAD). */
static int source_dirs(struct source_env *env, const char *src, int src_is_dir,
		       char **img_dir, char **stk_dir, int is[2])
{
	char *a = source_join(src, "numpy_bitmap"), *b = source_join(src, "sketchrnn");

	is[0] = a && is_dir(env, a);
	is[1] = b && is_dir(env, b);
	if (a && b && !is[0] && !is[1]) {
		free(a);
		free(b);
		a = strdup(src);
		b = strdup(src);
		is[0] = is[1] = src_is_dir;
	}
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	*img_dir = a;
	*stk_dir = b;
	return 0;
}

/* Whether dir has the first named class's file (a stat, no listing). */
static int first_named_has(struct source_env *env, const char *dir,
			   const char *ext, const struct qd_names *named, int *found)
{
	struct source_info info;
	char *probe;

	if (!(probe = class_file(dir, named->v[0], ext)))
		return -ENOMEM;
	*found = source_stat(env, probe, &info) == 0 && !info.is_dir;
	free(probe);
	return 0;
}

/*
 * Which kinds of class file the dataset has.  When the classes are named
 * and the first has that file, the dataset has that kind (no listing: over
 * HTTP a listing is a data GET, and a remount sends none); else from the
 * listings of the image and stroke directories (which also give the
 * classes when `named` has none); when a directory cannot be listed (a web
 * server without listings) and the classes are named, the kind is absent.
 */
static int find_kinds(struct source_env *env, const char *dir, int dir_is,
		      const char *ext, const struct qd_names *named, struct qd_names *all,
		      int *found)
{
	int rc;

	if (!dir_is)
		return 0;
	if (named->n && ((rc = first_named_has(env, dir, ext, named, found)) || *found))
		return rc;
	rc = list_classes(env, dir, ext, !named->n, all, found);
	return rc == -ENOTSUP && named->n ? 0 : rc;
}

int qd_scan(const struct sfs_opts *o, struct source_env *env,
	    const struct index_map *saved, struct qd_scan *s)
{
	struct qd_names all = {0}, order = {0};
	char *img_dir = NULL, *stk_dir = NULL, *cf = NULL;
	struct source_info info;
	size_t i;
	int rc, has_cf, use_cf, dirs[2];

	memset(s, 0, sizeof(*s));
	s->env = env;
	if ((rc = source_stat(env, o->source, &info))) {
		sfs_err("%s: %s", o->source, strerror(-rc));
		return rc;
	}
	s->root_mtime = source_stamp_sec(&info.stamp);
	rc = source_dirs(env, o->source, info.is_dir, &img_dir, &stk_dir, dirs);
	if (rc)
		goto out;
	cf = o->classes_file ? strdup(o->classes_file) : source_join(o->source, "classes.txt");
	if (!cf) {
		rc = -ENOMEM;
		goto out;
	}
	/* the classes file, when there is one, names the classes and their
	 * order; else the listings do.  Its stamp is taken before its bytes
	 * are read: a change while they are read shows at the next mount. */
	has_cf = source_stat(env, cf, &info) == 0;
	use_cf = o->classes_file || has_cf;
	if (has_cf && !info.is_dir)
		s->classes_fp = classes_fp(cf, &info.stamp);
	if (use_cf && saved_classes(saved, cf, s->classes_fp, &order) &&
	    (rc = read_classes_file(env, cf, &order)))
		goto out;
	if (use_cf && !order.n) {
		sfs_err("%s: expected at least one class name", cf);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = find_kinds(env, img_dir, dirs[0], ".npy", &order, &all, &s->has_images)) ||
	    (rc = find_kinds(env, stk_dir, dirs[1], ".npz", &order, &all, &s->has_strokes)))
		goto out;
	if (!s->has_images && !s->has_strokes) {
		sfs_err("%s: expected Quick, Draw! class files (numpy_bitmap/*.npy, "
			"sketchrnn/*.npz or <class>.npy with <class>.npz)", o->source);
		rc = -ENOENT;
		goto out;
	}
	names_sort_unique(&all);
	if (order.n) {
		qd_names_free(&all);
		all = order;
		memset(&order, 0, sizeof(order));
	}
	s->cls = calloc(all.n ? all.n : 1, sizeof(*s->cls));
	if (!s->cls) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < all.n; i++) {
		s->cls[i].name = all.v[i];
		all.v[i] = NULL;
	}
	s->nclass = all.n;
	rc = scan_class_files(s, img_dir, stk_dir, source_is_url(o->source));
out:
	qd_names_free(&all);
	qd_names_free(&order);
	free(img_dir);
	free(stk_dir);
	free(cf);
	if (rc)
		qd_scan_free(s);
	return rc;
}

void qd_scan_free(struct qd_scan *s)
{
	size_t i;

	for (i = 0; i < s->nclass; i++) {
		free(s->cls[i].name);
		free(s->cls[i].img_path);
		free(s->cls[i].stk_path);
		source_close(s->cls[i].img);
	}
	free(s->cls);
	memset(s, 0, sizeof(*s));
}

int qd_fingerprint(const struct sfs_opts *o, const struct qd_scan *s,
		   struct index_fp *fp)
{
	size_t i;

	index_fp_init(fp, "quickdraw");
	index_fp_add_u64(fp, QD_FORMAT);
	index_fp_add_u64(fp, (uint64_t)s->has_images << 1 | (uint64_t)s->has_strokes);
	index_fp_add_u64(fp, o->per_class);
	index_fp_add_u64(fp, o->seed);
	for (i = 0; i < 3; i++)
		index_fp_add_u64(fp, o->split[i]);
	for (i = 0; i < s->nclass; i++) {
		index_fp_add_str(fp, s->cls[i].name);
		if (s->cls[i].img)
			index_fp_add_source(fp, s->cls[i].img_path, source_stamp(s->cls[i].img));
		if (s->cls[i].stk_path)
			index_fp_add_source(fp, s->cls[i].stk_path, &s->cls[i].stk_stamp);
	}
	return 0;
}

/* ---- the build ---- */

/* State of one build; owned by the building thread. */
struct build {
	const struct sfs_opts *o;
	const struct qd_scan *s;
	struct index_writer *w;
	struct blockstore_builder *bs;
	struct qd_class *cls;
	uint64_t limit, got;      /* samples wanted / taken of the current class */
	uint8_t *xl;              /* long drawings, zlib streams */
	uint64_t xl_len, xl_cap;
	const char *what;
	uint8_t rec[BLOCKSTORE_BLOCK];   /* the record being made */
};

/* A drawing too long for one record: zlib stream in the XL buffer, and a
 * redirect record (see quickdraw_index.h). */
static int add_long(struct build *b, const uint8_t *pts, uint32_t n)
{
	uint8_t r[QD_XL_LEN];
	uLong len = (uLong)n * 6, bound = compressBound((uLong)n * 6);
	uLongf zlen = bound;
	uint64_t cap;
	uint32_t magic = QD_XL_MAGIC, z32;
	uint8_t *p;

	if (n > QD_XL_MAX_PTS || b->xl_len + bound > MAX_XL_BYTES) {
		sfs_err("%s: a drawing of %u points: over the limit of %u points, or long "
			"drawings over %llu bytes in all", b->what, n, QD_XL_MAX_PTS,
			(unsigned long long)MAX_XL_BYTES);
		return -EFBIG;
	}
	if (b->xl_len + bound > b->xl_cap) {
		cap = b->xl_cap ? b->xl_cap : 1 << 16;
		while (cap < b->xl_len + bound)
			cap *= 2;
		p = realloc(b->xl, cap);
		if (!p)
			return -ENOMEM;
		b->xl = p;
		b->xl_cap = cap;
	}
	if (compress2(b->xl + b->xl_len, &zlen, pts, len, 6) != Z_OK)
		return -EIO;
	z32 = (uint32_t)zlen;
	memcpy(r, &magic, 4);
	memcpy(r + 4, &n, 4);
	memcpy(r + 8, &z32, 4);
	memcpy(r + 12, &b->xl_len, 8);
	b->xl_len += zlen;
	return blockstore_builder_add(b->bs, r, sizeof(r)) < 0 ? -EIO : 0;
}

/* pickle callback: one drawing; takes the first `limit` of the class. */
static int take_stroke(void *arg, const uint8_t *pts, uint32_t n)
{
	struct build *b = arg;
	uint8_t *rec = b->rec;
	long len;
	int64_t id;

	if (b->got == b->limit)
		return 0;
	b->got++;
	rec[0] = QD_REC_PACKED;
	len = strokepack_pack(pts, n, rec + 1, BLOCKSTORE_BLOCK - 1);
	if (len == -EINVAL && (uint64_t)n * 6 < BLOCKSTORE_BLOCK) {
		rec[0] = QD_REC_RAW;   /* a pen that is not 0 or 1: kept as is */
		memcpy(rec + 1, pts, (size_t)n * 6);
		len = (long)n * 6;
	}
	if (len < 0)
		return add_long(b, pts, n);
	id = blockstore_builder_add(b->bs, rec, (uint32_t)len + 1);
	return id < 0 ? (int)id : 0;
}

/* One .npz member: a '|O' 1-D .npy whose payload is a pickle of arrays. */
static int take_member(struct build *b, struct zip_archive *za,
		       const struct zip_member *m, const char *path)
{
	char what[4096 + 64];
	struct npy_header h;
	uint8_t *buf = NULL;
	size_t len = 0, need;
	long n;
	int rc;

	snprintf(what, sizeof(what), "%s:%s", path, m->name);
	b->what = what;
	rc = zip_read_member(za, m, MAX_MEMBER, &buf, &len);
	if (rc) {
		if (rc == -EFBIG)
			sfs_err("%s: member of %" PRIu64 " bytes exceeds the %llu-byte limit",
				what, m->usize, (unsigned long long)MAX_MEMBER);
		return rc;
	}
	rc = npy_header_parse(buf, len, what, &h, &need);
	if (rc == -EAGAIN)
		sfs_err("%s: offset %zu: expected a .npy header of %zu bytes", what, len, need);
	if (rc)
		goto out;
	if (strcmp(h.descr, "|O") || h.ndim != 1) {
		sfs_err("%s: offset 0: expected a 1-D object array, found descr '%s', %d dims",
			what, h.descr, h.ndim);
		rc = -EINVAL;
		goto out;
	}
	n = pickle_parse_strokes(buf + h.data_offset, len - h.data_offset, what,
				 take_stroke, b);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	if ((uint64_t)n != h.shape[0]) {
		sfs_err("%s: offset %u: header says %" PRIu64 " drawings, the pickle holds %ld",
			what, h.data_offset, h.shape[0], n);
		rc = -EINVAL;
	}
out:
	free(buf);
	return rc;
}

/* train, valid (or val), test in that order, else strokes. */
static int take_class_strokes(struct build *b, const char *path)
{
	static const char *const keys[][2] = {
		{ "train.npy", NULL }, { "valid.npy", "val.npy" }, { "test.npy", NULL },
	};
	const struct zip_member *m;
	struct zip_archive *za = NULL;
	struct source *src;
	int rc, found = 0;
	size_t i;

	rc = source_open(b->s->env, path, &src);
	if (rc) {
		sfs_err("%s: cannot open: %s", path, strerror(-rc));
		return rc;
	}
	rc = zip_open(&za, src);
	if (rc) {
		source_close(src);
		return rc;
	}
	for (i = 0; i < 3 && !rc && b->got < b->limit; i++) {
		m = zip_find(za, keys[i][0]);
		if (!m && keys[i][1])
			m = zip_find(za, keys[i][1]);
		if (!m)
			continue;
		found = 1;
		rc = take_member(b, za, m, path);
	}
	if (!found && !rc && b->got < b->limit) {
		m = zip_find(za, "strokes.npy");
		if (m)
			rc = take_member(b, za, m, path);
		else {
			sfs_err("%s: expected members train/valid/test.npy or strokes.npy", path);
			rc = -EINVAL;
		}
	}
	zip_close(za);
	source_close(src);
	return rc;
}

/* Class table, names (classes.txt bytes) and the stroke records. */
static int build_classes(struct build *b, char **names, uint64_t *names_len)
{
	const struct qd_scan *s = b->s;
	struct progress pr;
	uint64_t total = 0, bytes = 0, done = 0, nl = 0;
	size_t i, len;
	char *p;
	int rc = 0;

	for (i = 0; i < s->nclass; i++) {
		bytes += s->has_strokes ? s->cls[i].stk_stamp.size : 0;
		nl += strlen(s->cls[i].name) + 1;
	}
	*names = p = malloc(nl ? nl : 1);
	if (!p)
		return -ENOMEM;
	*names_len = nl;
	progress_start(&pr, "indexing strokes", s->nclass, bytes, b->o->quiet);
	for (i = 0; i < s->nclass && !rc; i++) {
		len = strlen(s->cls[i].name);
		memcpy(p, s->cls[i].name, len);
		p[len] = '\n';
		b->cls[i].name_off = (uint32_t)(p - *names);
		b->cls[i].name_len = (uint32_t)len;
		p += len + 1;
		b->limit = s->has_images ? s->cls[i].img_rows : UINT64_MAX;
		if (b->o->per_class && b->o->per_class < b->limit)
			b->limit = b->o->per_class;
		b->got = 0;
		if (s->has_strokes) {
			rc = take_class_strokes(b, s->cls[i].stk_path);
			b->limit = b->got;
			done += s->cls[i].stk_stamp.size;
		}
		b->cls[i].gidx_base = total;
		b->cls[i].n = b->limit;
		b->cls[i].img_off = s->cls[i].img_off;
		b->cls[i].img_hdr_rows = s->cls[i].img_hdr_rows;
		b->cls[i].img_rows = s->cls[i].img_rows;
		total += b->limit;
		progress_update(&pr, i + 1, done);
	}
	progress_finish(&pr);
	if (!rc && total >= UINT32_MAX) {
		sfs_err("%s: %" PRIu64 " samples; at most %u are supported", b->o->source,
			total, UINT32_MAX - 1);
		rc = -EFBIG;
	}
	return rc;
}

const struct qd_class *qd_class_of(const struct qd_class *cls, uint32_t ncls,
				   uint64_t gidx, uint32_t *label)
{
	uint32_t lo = 0, hi = ncls, mid;

	while (hi - lo > 1) { /* last class with gidx_base <= gidx */
		mid = lo + (hi - lo) / 2;
		if (cls[mid].gidx_base <= gidx)
			lo = mid;
		else
			hi = mid;
	}
	/* skip empty classes that share the base */
	while (lo + 1 < ncls && cls[lo].gidx_base + cls[lo].n <= gidx)
		lo++;
	*label = lo;
	return &cls[lo];
}

/* Split permutation (numpy's shuffle of arange(total)) and line offsets. */
static int build_splits(struct build *b, struct qd_head *hd)
{
	uint64_t nck = 0, j, off, first = 0;
	uint64_t *ck = NULL;
	uint32_t *perm = NULL, label;
	const struct qd_class *c;
	struct mt19937 mt;
	int s, rc;

	perm = malloc((hd->total ? hd->total : 1) * sizeof(*perm));
	ck = malloc((hd->total / QD_CKPT + 3) * sizeof(*ck));
	rc = perm && ck ? 0 : -ENOMEM;
	if (rc)
		goto out;
	for (j = 0; j < hd->total; j++)
		perm[j] = (uint32_t)j;
	mt19937_seed(&mt, b->o->seed);
	mt19937_shuffle_u32(&mt, perm, hd->total);
	qd_split_counts(hd->total, b->o->split, hd->nsplit);
	for (s = 0; s < 3; s++) {
		hd->ckpt_base[s] = nck;
		for (off = 0, j = 0; j < hd->nsplit[s]; j++) {
			if (j % QD_CKPT == 0)
				ck[nck++] = off;
			c = qd_class_of(b->cls, hd->nclass, perm[first + j], &label);
			off += qd_split_line_len(hd->has_images, hd->has_strokes, c->name_len,
					      perm[first + j], label);
		}
		hd->split_bytes[s] = off;
		first += hd->nsplit[s];
	}
	rc = index_writer_add(b->w, QD_TAG_PERM, perm, hd->total * sizeof(*perm));
	if (!rc)
		rc = index_writer_add(b->w, QD_TAG_CKPT, ck, nck * sizeof(*ck));
out:
	free(perm);
	free(ck);
	return rc;
}

static int cmp_class_names(const void *a, const void *b, void *arg)
{
	const struct build *bd = arg;
	const char *na = bd->s->cls[*(const uint32_t *)a].name;
	const char *nb = bd->s->cls[*(const uint32_t *)b].name;

	return strcmp(na, nb);
}

static int build_tables(struct build *b, const char *names, uint64_t names_len)
{
	const struct qd_scan *s = b->s;
	struct qd_head hd = { 0 };
	uint32_t *order;
	size_t i;
	int rc;

	hd.format = QD_FORMAT;
	hd.nclass = (uint32_t)s->nclass;
	hd.has_images = (uint32_t)s->has_images;
	hd.has_strokes = (uint32_t)s->has_strokes;
	hd.names_len = names_len;
	hd.classes_fp = s->classes_fp;
	hd.names_fp = names_fp(names, names_len);
	for (i = 0; i < s->nclass; i++)
		hd.total += b->cls[i].n;
	order = malloc((s->nclass ? s->nclass : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < s->nclass; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, s->nclass, sizeof(*order), cmp_class_names, b);
	rc = build_splits(b, &hd);
	if (!rc)
		rc = index_writer_add(b->w, QD_TAG_SORT, order, s->nclass * sizeof(*order));
	if (!rc)
		rc = index_writer_add(b->w, QD_TAG_CLS, b->cls, s->nclass * sizeof(*b->cls));
	if (!rc)
		rc = index_writer_add(b->w, QD_TAG_NAME, names, names_len);
	if (!rc)
		rc = index_writer_add(b->w, QD_TAG_HEAD, &hd, sizeof(hd));
	free(order);
	return rc;
}

int qd_index_build(const struct sfs_opts *o, struct qd_scan *s,
		   struct index_writer *w)
{
	struct build b = { .o = o, .s = s, .w = w };
	uint64_t names_len = 0;
	char *names = NULL;
	int rc;

	/* the headers read into s stay for the attach */
	if ((rc = qd_scan_images(s)))
		return rc;
	b.cls = calloc(s->nclass ? s->nclass : 1, sizeof(*b.cls));
	if (!b.cls)
		return -ENOMEM;
	if (s->has_strokes && (rc = blockstore_builder_new(&b.bs, b.w, QD_TAG_SDAT)))
		goto out;
	rc = build_classes(&b, &names, &names_len);
	if (b.bs) {
		if (rc)
			blockstore_builder_abort(b.bs);
		else
			rc = blockstore_builder_finish(b.bs, QD_TAG_SBLK, QD_TAG_SREC);
		b.bs = NULL;
	}
	if (!rc && b.xl_len)
		rc = index_writer_add(b.w, QD_TAG_XL, b.xl, b.xl_len);
	if (!rc)
		rc = build_tables(&b, names, names_len);
out:
	free(b.cls);
	free(b.xl);
	free(names);
	return rc;
}
