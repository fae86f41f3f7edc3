/*
 * quickdraw_scan.c - the Quick, Draw! source scan (every mount): finds the
 * classes (a classes file, or the listings) and their files, and opens the
 * image .npy files as sources; it reads only their headers, and none of
 * them when a saved index has the facts.  Also the index's fingerprint.
 *
 * Not the index build (quickdraw_build.c), the pure helpers
 * (quickdraw_index.c), or the FUSE-facing ops (layout_quickdraw.c).
 */
#include "layouts/quickdraw_index.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "formats/npy.h"

#define MAX_CLASSES   100000u
#define CLASSES_MAX   (16u << 20)   /* a classes file, at most */

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

	/* a URL's failure was named by core/io with what the server said
	 * (source.h); "not there" is said by nobody */
	if (rc < 0 && rc != -ENOTSUP && rc != -ENOMEM && rc != -E2BIG &&
	    (!source_is_url(dir) || rc == -ENOENT))
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
	if (!names || len != hd->names_len || qd_names_fp(names, len) != hd->names_fp)
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

/* numpy_bitmap/ and sketchrnn/ (official) or one flat directory, or those
 * -o images= and strokes= name (the bucket holds them apart:
 * gs://quickdraw_dataset/full/numpy_bitmap/ and .../sketchrnn/; with one
 * of the two only, the other kind is absent); whether each is a directory
 * (found once: over HTTP each look is a HEAD). */
static int source_dirs(struct source_env *env, const struct sfs_opts *o,
		       int src_is_dir, char **img_dir, char **stk_dir, int is[2])
{
	const char *src = o->source;
	int given = o->images_dir || o->strokes_dir;
	char *a = given ? strdup(o->images_dir ? o->images_dir : src) :
		  source_join(src, "numpy_bitmap");
	char *b = given ? strdup(o->strokes_dir ? o->strokes_dir : src) :
		  source_join(src, "sketchrnn");

	is[0] = a && (!given || o->images_dir) && is_dir(env, a);
	is[1] = b && (!given || o->strokes_dir) && is_dir(env, b);
	if (a && b && !given && !is[0] && !is[1]) {
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
	rc = source_dirs(env, o, info.is_dir, &img_dir, &stk_dir, dirs);
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
