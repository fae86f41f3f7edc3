/*
 * layout_npy.c - `-o layout=npy`: every row of every .npy as its own .npy.
 *
 * SOURCE is a .npy file or a directory of them.  Each X.npy of shape
 * (N, ...) becomes a directory X/ holding 000000.npy ... (printf "%06d"),
 * file i being byte-identical to np.save(path, arr[i]): the header numpy
 * would write for one row (emitted once per array at mount) followed by
 * the row's bytes, read with one source_pread from the source, kept open
 * for the life of the mount.  No index file: headers are parsed at mount.
 *
 * Inodes are computed (layout.h's scheme): 1 is the root, SFS_INO(K_DIR, k)
 * is array k's directory (arrays sorted by name), and row i of array k is
 * SFS_INO(K_ROW, first_row[k] + i).  Nothing is allocated per row.
 *
 * -o per_class=N serves only the first N rows of each array.
 *
 * Rows of 1-D sources are numpy scalars, which np.save writes slightly
 * differently from the source bytes (see FIX_*).
 *
 * Not served (skipped with one warning each naming the file, and why):
 * Fortran-order and object arrays, 0-d arrays, unsupported dtypes, files
 * that are not npy files or whose size does not match their header, and
 * in a SOURCE directory every entry that is not a visible *.npy file
 * (.npz archives, hidden files, subdirectories, anything else).  If a
 * source shrinks or is rewritten while mounted, reads give -EIO (its size
 * or mtime changed, or a read came up short: source_check), never bytes
 * the header does not describe.
 *
 * Threads: everything below is written by layout_npy_open and read-only
 * afterwards; reads of a shared source are thread-safe.
 */
#include "layouts/layout.h"
#include "log.h"
#include "io/source.h"
#include "formats/npy.h"
#include "search.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HDR_MAX 512	/* a row header: 16 dims of 21 digits fit */
/* Rows are named "%06d": an int.  More rows than this is a hostile header
 * (e.g. 10^18 rows of shape (0,)), and listing them would never end. */
#define MAX_ROWS INT32_MAX

/*
 * For a 1-D source, arr[i] is a numpy scalar, and np.save of a scalar
 * writes it in native (little-endian) order, booleans as 0/1, and an x86
 * long double (not a complex256) with its six padding bytes zeroed, as
 * numpy 1.24 does on this machine.  These flags say which
 * of those a row needs; rows of 2-D and wider sources are views, saved
 * as they are.
 */
enum { FIX_SWAP = 1, FIX_BOOL = 2, FIX_LDPAD = 4 };

struct npy_array {
	char *name;		/* directory name: file name without ".npy" */
	struct source *src;
	uint8_t fixes;		/* FIX_*, only for 0-d rows */
	uint8_t unit;		/* bytes per swapped unit (a complex's half) */
	uint64_t rows;
	uint64_t row_bytes;	/* bytes of one row's data */
	uint64_t data_offset;	/* of row 0 in the source */
	int64_t mtime;
	uint32_t hdr_len;
	char hdr[HDR_MAX];	/* np.save's header for one row */
};

struct npy_layout {
	struct npy_array *a;	/* sorted by name */
	uint64_t *first_row;	/* first_row[k] = rows of arrays 0..k-1; [n] = total */
	size_t n, cap;
	uint64_t total_bytes;
	uint64_t per_class;	/* -o per_class=N: first N rows only (0 = all) */
	int64_t mtime;		/* of SOURCE, for the root */
};

static int has_npy_suffix(const char *name)
{
	size_t len = strlen(name);

	return len > 4 && !strcmp(name + len - 4, ".npy");
}

/* After a failed parse: whether what failed is the dtype (h->descr was
 * read, and is none the format knows). */
static int unserved_dtype(const struct npy_header *h)
{
	char d[sizeof(h->descr)];

	return h->descr[0] && npy_descr_normalize(h->descr, d, sizeof(d)) == -EINVAL;
}

/*
 * Reads the header of the open source `what` into h: 0, -EINVAL if it is
 * not a valid npy header (why says how, for the skip warning), or -errno
 * when the file cannot be read (printed).
 */
static int read_header(struct source *src, const char *what, uint64_t fsize,
		       struct npy_header *h, char *why, size_t whylen)
{
	uint8_t small[4096], *buf = small;
	size_t want = sizeof(small), need = 0;
	ssize_t got;
	int rc;

	for (;;) {
		got = source_pread(src, buf, want, 0);
		if (got < 0) {
			rc = (int)got;
			sfs_err("%s: %s", what, strerror(-rc));
			break;
		}
		rc = npy_header_parse_why(buf, (size_t)got, what, h, &need, why, whylen);
		if (rc != -EAGAIN)
			break;
		if ((size_t)got < want || need > fsize) {
			snprintf(why, whylen, "offset %llu: truncated, the npy header "
				 "needs %zu bytes", (unsigned long long)fsize, need);
			rc = -EINVAL;
			break;
		}
		if (buf != small)
			free(buf);
		want = need;
		if (!(buf = malloc(want))) {
			rc = -ENOMEM;
			break;
		}
	}
	if (buf != small)
		free(buf);
	return rc;
}

/* Sets a->fixes for 0-d rows and turns descr into the scalar's. */
static void scalar_fixes(struct npy_array *a, char *descr, uint32_t itemsize)
{
	char kind = descr[1];

	a->unit = (uint8_t)(kind == 'c' ? itemsize / 2 : itemsize);
	if (descr[0] == '>') {
		a->fixes |= FIX_SWAP;
		descr[0] = '<';
	}
	if (kind == 'b')
		a->fixes |= FIX_BOOL;
	if (kind == 'f' && itemsize == 16)	/* complex256 is copied, not loaded */
		a->fixes |= FIX_LDPAD;
}

/* Applies a->fixes to one element v (a->row_bytes bytes). */
static void fix_scalar(const struct npy_array *a, uint8_t *v)
{
	uint8_t *u, t;
	size_t i;

	for (u = v; u < v + a->row_bytes; u += a->unit) {
		if (a->fixes & FIX_SWAP)
			for (i = 0; i < a->unit / 2u; i++) {
				t = u[i];
				u[i] = u[a->unit - 1 - i];
				u[a->unit - 1 - i] = t;
			}
		if (a->fixes & FIX_LDPAD)
			memset(u + 10, 0, 6);	/* 80-bit value, 6 bytes pad */
		if (a->fixes & FIX_BOOL)
			u[0] = u[0] != 0;
	}
}

/* Checks what the layout can serve and fills a's sizes and row header. */
static int describe(struct npy_array *a, const char *what,
		    const struct npy_header *h, uint64_t fsize)
{
	char descr[32];
	uint64_t row_elems, expect;
	int n;

	if (h->fortran_order || h->itemsize == 0 || h->ndim == 0) {
		sfs_warn("%s: skipped: %s arrays are not served", what,
			 h->fortran_order ? "Fortran-order" :
			 h->itemsize == 0 ? "object" : "0-d");
		return -EINVAL;
	}
	row_elems = npy_count(h, 1);
	if (row_elems > UINT64_MAX / h->itemsize ||
	    (h->shape[0] && row_elems * h->itemsize > (UINT64_MAX - h->data_offset) / h->shape[0])) {
		sfs_warn("%s: skipped: shape too large", what);
		return -EINVAL;
	}
	if (h->shape[0] > MAX_ROWS) {
		sfs_warn("%s: skipped: %llu rows, more than %d", what,
			 (unsigned long long)h->shape[0], MAX_ROWS);
		return -EINVAL;
	}
	a->rows = h->shape[0];
	a->row_bytes = row_elems * h->itemsize;
	a->data_offset = h->data_offset;
	expect = a->data_offset + a->rows * a->row_bytes;
	if (expect != fsize) {
		sfs_warn("%s: skipped: the header says %llu bytes (offset %u + %llu rows of %llu), the file has %llu",
			 what, (unsigned long long)expect, h->data_offset,
			 (unsigned long long)a->rows, (unsigned long long)a->row_bytes,
			 (unsigned long long)fsize);
		return -EINVAL;
	}
	if (npy_descr_normalize(h->descr, descr, sizeof(descr)))
		goto bad;
	if (h->ndim == 1)
		scalar_fixes(a, descr, h->itemsize);
	if ((n = npy_header_emit(a->hdr, sizeof(a->hdr), descr, h->ndim - 1,
				 h->shape + 1)) < 0)
		goto bad;
	a->hdr_len = (uint32_t)n;
	return 0;
bad:
	sfs_warn("%s: skipped: cannot describe a row", what);
	return -EINVAL;
}

static int grow(struct npy_layout *L)
{
	size_t cap = L->cap ? L->cap * 2 : 16;
	struct npy_array *a = realloc(L->a, cap * sizeof(*a));

	if (!a)
		return -ENOMEM;
	L->a = a;
	L->cap = cap;
	return 0;
}

/*
 * Adds the source `path` (named `name` in its directory) if it can be
 * served.  Returns 0 when added or skipped with a warning (bad contents,
 * not a regular file), -errno when the file cannot be opened or read at
 * all (the mount then fails; said).
 */
static int add_array(struct npy_layout *L, struct source_env *env,
		     const char *name, const char *path)
{
	const struct source_stamp *st;
	struct source *src;
	struct npy_array *a;
	struct npy_header h;
	char why[512];
	int rc;

	/* a FIFO named x.npy is refused, not waited on (source_open) */
	rc = source_open(env, path, &src);
	if (rc == -EISDIR || rc == -EINVAL) {
		sfs_warn("%s: skipped: not a regular file", path);
		return 0;	/* a directory or FIFO named x.npy */
	}
	if (rc < 0) {
		sfs_err("%s: %s", path, strerror(-rc));
		return rc;
	}
	st = source_stamp(src);
	if (L->n == L->cap && (rc = grow(L)))
		goto out;
	a = &L->a[L->n];
	memset(a, 0, sizeof(*a));
	rc = read_header(src, path, st->size, &h, why, sizeof(why));
	if (rc == -EINVAL && unserved_dtype(&h)) {
		/* the format's message lists O, which this layout skips too */
		sfs_warn("%s: skipped: dtype '%s' is not served (layout=npy serves "
			 "the kinds b, i, u, f, c and ?: numbers and booleans)",
			 path, h.descr);
		rc = 0;
		goto out;
	}
	if (rc == -EINVAL) {
		sfs_warn("%s: skipped: not an npy file layout=npy can serve: %s",
			 path, why);
		rc = 0;
		goto out;
	}
	if (rc)		/* unreadable: the mount fails, as for open */
		goto out;
	if (describe(a, path, &h, st->size))
		goto out;	/* skipped, with describe's warning */
	if (L->per_class && a->rows > L->per_class)
		a->rows = L->per_class;
	if (!(a->name = strndup(name, strlen(name) - 4))) {
		rc = -ENOMEM;
		goto out;
	}
	a->src = src;
	a->mtime = source_stamp_sec(st);
	L->n++;
	return 0;	/* the array keeps src */
out:
	source_close(src);
	return rc;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct npy_array *)x)->name,
		      ((const struct npy_array *)y)->name);
}

/*
 * Why entry `name` of the source directory is not served, for its warning,
 * or NULL for a visible *.npy (add_array decides).
 */
static const char *not_served(const char *name, int is_dir)
{
	size_t len = strlen(name);

	if (name[0] == '.')
		return "hidden (a name starting with '.')";
	if (is_dir && !has_npy_suffix(name))
		return "a directory (only the .npy files directly in SOURCE are served)";
	if (len > 4 && !strcmp(name + len - 4, ".npz"))
		return "an .npz archive (layout=npy serves .npy files; np.load it and "
		       "np.save each array)";
	if (!has_npy_suffix(name))
		return "not a .npy file";
	return NULL;
}

struct scan {
	struct npy_layout *L;
	struct source_env *env;
	const char *dir;
	int failed;		/* an entry failed the mount (said) */
};

/* source_list callback: one entry of the source directory */
static int scan_entry(void *arg, const char *name, int is_dir)
{
	struct scan *sc = arg;
	char *path = source_join(sc->dir, name);
	const char *why;
	int rc = 0;

	if (!path)
		return -ENOMEM;
	if ((why = not_served(name, is_dir)))
		sfs_warn("%s: skipped: %s", path, why);
	else
		rc = add_array(sc->L, sc->env, name, path);
	free(path);
	sc->failed = rc != 0;
	return rc;
}

/* Every regular *.npy directly in the directory `path`; one warning for
 * each other entry, so nothing is left out without a word. */
static int scan_dir(struct npy_layout *L, struct source_env *env, const char *path)
{
	struct scan sc = { L, env, path, 0 };
	int rc = source_list(env, path, scan_entry, &sc);

	/* a URL's failure was named by core/io (source.h), but for "not there" */
	if (rc < 0 && !sc.failed && (!source_is_url(path) || rc == -ENOENT))
		sfs_err("%s: %s", path, strerror(-rc));
	return rc;
}

static int scan_file(struct npy_layout *L, struct source_env *env, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!has_npy_suffix(base)) {
		sfs_err("%s: expected a .npy file or a directory of them", path);
		return -EINVAL;
	}
	return add_array(L, env, base, path);
}

/* Sorts the arrays and fills first_row and total_bytes. */
static int finish(struct npy_layout *L)
{
	size_t k;

	if (L->n)
		qsort(L->a, L->n, sizeof(*L->a), by_name);
	L->first_row = calloc(L->n + 1, sizeof(*L->first_row));
	if (!L->first_row)
		return -ENOMEM;
	for (k = 0; k < L->n; k++) {
		L->first_row[k + 1] = L->first_row[k] + L->a[k].rows;
		L->total_bytes += L->a[k].rows * (L->a[k].hdr_len + L->a[k].row_bytes);
	}
	return 0;
}

/* ---- the ops: ino -> node ---- */

/* what a node is; K_DIR and K_ROW are also the kinds of their inodes */
enum kind { K_ROOT, K_DIR, K_ROW, K_NONE };

static enum kind classify(const struct npy_layout *L, uint64_t ino,
			  size_t *k, uint64_t *row)
{
	if (ino == SFS_ROOT_INO)
		return K_ROOT;
	if (SFS_INO_KIND(ino) == K_DIR && SFS_INO_IDX(ino) < L->n) {
		*k = SFS_INO_IDX(ino);
		return K_DIR;
	}
	if (SFS_INO_KIND(ino) != K_ROW || SFS_INO_IDX(ino) >= L->first_row[L->n])
		return K_NONE;
	ino = SFS_INO_IDX(ino);
	/* the last k with first_row[k] <= ino (skipping empty arrays) */
	*k = SFS_PARTITION_POINT(size_t, 1, L->n, m, L->first_row[m] <= ino) - 1;
	*row = ino - L->first_row[*k];
	return K_ROW;
}

static void attr_of(const struct npy_layout *L, enum kind kind, size_t k,
		    uint64_t row, struct sfs_attr *out)
{
	memset(out, 0, sizeof(*out));
	switch (kind) {
	case K_ROOT:
		out->ino = SFS_ROOT_INO;
		out->mode = S_IFDIR | 0555;
		out->nlink = 2 + (uint32_t)L->n;
		out->mtime = L->mtime;
		break;
	case K_DIR:
		out->ino = SFS_INO(K_DIR, k);
		out->mode = S_IFDIR | 0555;
		out->nlink = 2;
		out->mtime = L->a[k].mtime;
		break;
	case K_ROW:
		out->ino = SFS_INO(K_ROW, L->first_row[k] + row);
		out->mode = S_IFREG | 0444;
		out->nlink = 1;
		out->size = L->a[k].hdr_len + L->a[k].row_bytes;
		out->mtime = L->a[k].mtime;
		break;
	case K_NONE:
		break;
	}
}

static int npy_getattr(void *priv, uint64_t ino, struct sfs_attr *out)
{
	const struct npy_layout *L = priv;
	enum kind kind;
	uint64_t row = 0;
	size_t k = 0;

	if ((kind = classify(L, ino, &k, &row)) == K_NONE)
		return -ENOENT;
	attr_of(L, kind, k, row, out);
	return 0;
}

static int find_array(const struct npy_layout *L, const char *name, size_t *k)
{
	size_t i = SFS_PARTITION_POINT(size_t, 0, L->n, m,
				       strcmp(L->a[m].name, name) < 0);

	if (i == L->n || strcmp(L->a[i].name, name))
		return -ENOENT;
	*k = i;
	return 0;
}

/* "000042.npy" -> 42; only the exact "%06d.npy" spelling is accepted. */
static int parse_row_name(const char *name, uint64_t *row)
{
	char again[32];
	char *end;
	unsigned long long v;

	if (name[0] < '0' || name[0] > '9')
		return -ENOENT;
	errno = 0;
	v = strtoull(name, &end, 10);
	if (errno || strcmp(end, ".npy") || v > MAX_ROWS)
		return -ENOENT;
	snprintf(again, sizeof(again), "%06llu.npy", v);
	if (strcmp(again, name))
		return -ENOENT;
	*row = v;
	return 0;
}

static int npy_lookup(void *priv, uint64_t parent, const char *name,
		      struct sfs_attr *out)
{
	const struct npy_layout *L = priv;
	enum kind kind;
	uint64_t row = 0;
	size_t k = 0;

	kind = classify(L, parent, &k, &row);
	if (kind == K_ROOT) {
		if (find_array(L, name, &k))
			return -ENOENT;
		attr_of(L, K_DIR, k, 0, out);
		return 0;
	}
	if (kind == K_DIR) {
		if (parse_row_name(name, &row) || row >= L->a[k].rows)
			return -ENOENT;
		attr_of(L, K_ROW, k, row, out);
		return 0;
	}
	return kind == K_ROW ? -ENOTDIR : -ENOENT;
}

static int npy_readdir(void *priv, uint64_t dir, uint64_t off,
		       sfs_fill_fn fill, void *arg)
{
	const struct npy_layout *L = priv;
	struct sfs_attr attr;
	char name[32];
	enum kind kind;
	uint64_t row = 0, i;
	size_t k = 0;

	kind = classify(L, dir, &k, &row);
	if (kind == K_ROOT) {
		for (i = off; i < L->n; i++) {
			attr_of(L, K_DIR, i, 0, &attr);
			if (fill(arg, L->a[i].name, &attr, i + 1))
				break;
		}
		return 0;
	}
	if (kind != K_DIR)
		return kind == K_ROW ? -ENOTDIR : -ENOENT;
	for (i = off; i < L->a[k].rows; i++) {
		snprintf(name, sizeof(name), "%06llu.npy", (unsigned long long)i);
		attr_of(L, K_ROW, k, i, &attr);
		if (fill(arg, name, &attr, i + 1))
			break;
	}
	return 0;
}

/* Reads exactly `size` bytes at `off`, or -EIO if the file came up short. */
static ssize_t pread_full(struct source *src, char *buf, size_t size, uint64_t off)
{
	ssize_t got = source_pread(src, buf, size, off);

	if (got >= 0 && (size_t)got != size)
		return -EIO;	/* shrank since mount */
	return got;
}

/* A 0-d row that needs fixing: build the whole (small) file, then copy. */
static ssize_t read_fixed(const struct npy_array *a, uint64_t row, char *buf,
			  size_t n, uint64_t off)
{
	uint8_t file[HDR_MAX + 32];
	ssize_t rc;

	memcpy(file, a->hdr, a->hdr_len);
	rc = pread_full(a->src, (char *)file + a->hdr_len, a->row_bytes,
			a->data_offset + row * a->row_bytes);
	if (rc < 0)
		return rc;
	fix_scalar(a, file + a->hdr_len);
	memcpy(buf, file + off, n);
	return (ssize_t)n;
}

static ssize_t npy_read(void *priv, uint64_t ino, char *buf, size_t size,
			uint64_t off)
{
	const struct npy_layout *L = priv;
	struct npy_array *a;
	uint64_t row = 0, fsize, n, h = 0;
	size_t k = 0;
	ssize_t rc;

	if (classify(L, ino, &k, &row) != K_ROW)
		return -EISDIR;
	a = &L->a[k];
	fsize = a->hdr_len + a->row_bytes;
	if (off >= fsize)
		return 0;
	n = size < fsize - off ? size : fsize - off;
	if (a->fixes) {
		rc = read_fixed(a, row, buf, n, off);
		goto out;
	}
	if (off < a->hdr_len) {
		h = n < a->hdr_len - off ? n : a->hdr_len - off;
		memcpy(buf, a->hdr + off, h);
	}
	rc = (ssize_t)n;
	if (n > h) {
		ssize_t got = pread_full(a->src, buf + h, n - h, a->data_offset +
					 row * a->row_bytes + (off + h - a->hdr_len));
		if (got < 0)
			rc = got;
	}
out:
	/* checked after the read, so bytes of a file changed meanwhile are
	 * never served; a changed file is the usual cause of a short read
	 * (checked then too, to say why).  A file truncated or rewritten
	 * since mount no longer has the bytes its header describes; one
	 * replaced by rename keeps its old bytes behind the open source. */
	if ((rc >= 0 || rc == -EIO) && source_check(a->src) < 0)
		return -EIO;
	return rc;
}

static void npy_statfs(void *priv, uint64_t *files, uint64_t *bytes)
{
	const struct npy_layout *L = priv;

	*files = 1 + L->n + L->first_row[L->n];
	*bytes = L->total_bytes;
}

static void npy_destroy(void *priv)
{
	struct npy_layout *L = priv;
	size_t k;

	for (k = 0; k < L->n; k++) {
		source_close(L->a[k].src);
		free(L->a[k].name);
	}
	free(L->a);
	free(L->first_row);
	free(L);
}

static const struct layout_ops npy_ops = {
	.name = "npy",
	.listed_then_read = 1,
	.getattr = npy_getattr,
	.lookup = npy_lookup,
	.readdir = npy_readdir,
	.read = npy_read,
	.statfs = npy_statfs,
	.destroy = npy_destroy,
};

int layout_npy_open(const struct sfs_opts *o, struct source_env *env,
		    struct layout *out)
{
	struct source_info info;
	struct npy_layout *L;
	int rc;

	if ((rc = source_stat(env, o->source, &info)) < 0) {
		sfs_err("%s: %s", o->source, strerror(-rc));
		return rc;
	}
	if (!(L = calloc(1, sizeof(*L))))
		return -ENOMEM;
	L->mtime = source_stamp_sec(&info.stamp);
	L->per_class = o->per_class;
	rc = info.is_dir ? scan_dir(L, env, o->source) : scan_file(L, env, o->source);
	if (!rc)
		rc = finish(L);
	if (rc)
		goto out;
	if (!L->n)
		sfs_warn("%s: no servable .npy files; the mount is empty", o->source);
	out->ops = &npy_ops;
	out->priv = L;
	return 0;
out:
	npy_destroy(L);
	return rc;
}
