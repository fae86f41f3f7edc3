/*
 * layout_quickdraw.c - the Quick, Draw! tree:
 *
 *   /classes.txt                      label order, one name per line
 *   /images/<class>/<gidx:06d>.npy    float32 (28, 28, 1) = uint8 / 255.0, or raw uint8
 *   /strokes/<class>/<gidx:06d>.npy   float32 (stroke_len, 3)
 *   /splits/{train,val,test}.txt      one shuffled line per sample
 *   /epochs/<e>/shards/<split>-<k>.tar  WebDataset shards, a shuffle per epoch
 *                                      (quickdraw_epochs.c answers for /epochs)
 *
 * Every node is computed from the mmap'ed index (quickdraw_index.h) and the
 * open class .npy sources: inode numbers encode (kind, class or gidx), names
 * are formatted on demand, and nothing is allocated per sample.  Images are
 * one source_pread of 784 bytes; strokes inflate at most one block through
 * the LRU.
 *
 * Threads: everything in struct qd is read-only after open, except the LRU,
 * which locks itself.
 *
 * Choices where the format leaves room:
 * - images are arr.astype(float32) / 255.0 (float32 division); numpy's
 *   float64 route, (arr / 255.0).astype(float32), gives the same 256 values.
 * - a class listed (or found) without one of the dataset's kinds of file, a
 *   bad image header, or any stroke file that is not a clean .npz of allowed
 *   pickles: the mount is refused naming the file (skipping a class would
 *   shift every later label).  An image file shorter than its header says:
 *   warning, its whole rows are used.
 * - images-only or strokes-only datasets: split lines have the one path.
 * - a class file changed while mounted (size or mtime, source_check on
 *   each read): its image reads give EIO.  Strokes come from the index, so
 *   they stay what was indexed.
 * - sample names are "%06d.npy" exactly; readdir lists them in bytewise
 *   order (1000000.npy sorts before 999999.npy), as sorted(glob()) does.
 * - split sizes: int(p / 100.0 * total) for train and val (Python's
 *   int(0.8 * total)), the rest is test.
 * - stroke files of other sketch-rnn sets (float16/32/64, int8/32/64
 *   elements): a drawing whose values are all int16 after the cast to
 *   float32 is stored as int16, else as float32 (the cast is the
 *   preprocessing's first step, so the output is the same bytes).
 * - a drawing whose points do not fit one blockstore record (8 KiB: over
 *   1365 to 4095 points packed; over 1365 raw, when a pen is not 0 or 1;
 *   over 682 as float32) is kept whole,
 *   zlib-compressed in its own section, and inflated on each read: the
 *   centring and scaling use every point.
 * - sketchrnn's <class>.full.npz files are not classes (ignored).
 *
 * Not the index build or the source scan (quickdraw_build.c, quickdraw_scan.c),
 * the sample files' bytes (quickdraw_read.c), /epochs (quickdraw_epochs.c).
 */
#include "layouts/layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index.h"
#include "log.h"
#include "io/source.h"
#include "formats/npy.h"
#include "layouts/quickdraw_index.h"
#include "layouts/quickdraw_tree.h"
#include "layouts/quickdraw_epochs.h"
#include "search.h"

#define MAX_STROKE_LEN (1u << 20)
#define LINE_MAX_LEN   (2 * QD_MAX_NAME + 80)

/* Inode numbers (layout.h's scheme): fixed nodes are small (kind 0);
 * others are SFS_INO(kind, class or gidx). */
enum { INO_CLASSES = 2, INO_IMAGES, INO_STROKES, INO_SPLITS, INO_TRAIN, INO_VAL, INO_TEST };
enum { K_FIXED, K_IMGDIR, K_STKDIR, K_IMG, K_STK };
_Static_assert(QD_INO_EPOCHS == INO_TEST + 1 && QD_K_EPOCH == K_STK + 1,
	       "/epochs numbers its nodes after these (quickdraw_epochs.h)");
#define INO(kind, v) SFS_INO(kind, v)
#define INO_KIND(ino) ((int)SFS_INO_KIND(ino))
#define INO_VAL_OF(ino) SFS_INO_IDX(ino)

static const char *const split_names[3] = { "train.txt", "val.txt", "test.txt" };


static int fixed_attr(const struct qd *q, uint64_t ino, struct sfs_attr *a)
{
	const struct qd_head *hd = q->hd;
	int64_t t = q->scan.root_mtime;

	switch (ino) {
	case SFS_ROOT_INO:
		attr_dir(a, ino, 1 + !!hd->has_images + !!hd->has_strokes + !!q->epochs, t);
		return 0;
	case INO_CLASSES:
		attr_file(a, ino, hd->names_len, t);
		return 0;
	case INO_IMAGES:
	case INO_STROKES:
		if (!(ino == INO_IMAGES ? hd->has_images : hd->has_strokes))
			return -ENOENT;
		attr_dir(a, ino, hd->nclass, t);
		return 0;
	case INO_SPLITS:
		attr_dir(a, ino, 0, t);
		return 0;
	case INO_TRAIN:
	case INO_VAL:
	case INO_TEST:
		attr_file(a, ino, hd->split_bytes[ino - INO_TRAIN], t);
		return 0;
	}
	return -ENOENT;
}

static int qd_getattr(void *priv, uint64_t ino, struct sfs_attr *a)
{
	const struct qd *q = priv;
	uint64_t v = INO_VAL_OF(ino);
	uint32_t label;

	if (qd_epochs_owns(ino))
		return qd_epochs_getattr(q, ino, a);
	switch (INO_KIND(ino)) {
	case K_FIXED:
		return fixed_attr(q, ino, a);
	case K_IMGDIR:
	case K_STKDIR:
		if (v >= q->hd->nclass || !(INO_KIND(ino) == K_IMGDIR ? q->hd->has_images :
					    q->hd->has_strokes))
			return -ENOENT;
		attr_dir(a, ino, 0, INO_KIND(ino) == K_IMGDIR ?
			 q->scan.cls[v].img_mtime : q->scan.cls[v].stk_mtime);
		return 0;
	case K_IMG:
	case K_STK:
		if (v >= q->hd->total || !(INO_KIND(ino) == K_IMG ? q->hd->has_images :
					   q->hd->has_strokes))
			return -ENOENT;
		qd_class_of(q->cls, q->hd->nclass, v, &label);
		if (INO_KIND(ino) == K_IMG)
			attr_file(a, ino, q->img_size, q->scan.cls[label].img_mtime);
		else
			attr_file(a, ino, q->stk_size, q->scan.cls[label].stk_mtime);
		return 0;
	}
	return -ENOENT;
}

/* ---- names ---- */

/* strcmp of a NUL-terminated name against class c's name. */
static int cmp_class(const struct qd *q, const char *name, uint32_t c)
{
	const char *cn = q->names + q->cls[c].name_off;
	size_t len = q->cls[c].name_len, i;

	for (i = 0; i < len && name[i]; i++)
		if (name[i] != cn[i])
			return (unsigned char)name[i] - (unsigned char)cn[i];
	return i < len ? -1 : (name[i] ? 1 : 0);
}

static int find_class(const struct qd *q, const char *name, uint32_t *c)
{
	uint32_t n = q->hd->nclass;
	uint32_t i = SFS_PARTITION_POINT(uint32_t, 0, n, m,
					 cmp_class(q, name, q->sorted[m]) > 0);

	if (i == n || cmp_class(q, name, q->sorted[i]))
		return -ENOENT;
	*c = q->sorted[i];
	return 0;
}

static int lookup_root(const struct qd *q, const char *name, struct sfs_attr *a)
{
	static const char *const names[] = { "classes.txt", "images", "strokes", "splits" };
	int i;

	if (!strcmp(name, "epochs"))
		return qd_epochs_getattr(q, QD_INO_EPOCHS, a);
	for (i = 0; i < 4; i++)
		if (!strcmp(name, names[i]))
			return fixed_attr(q, INO_CLASSES + (uint64_t)i, a);
	return -ENOENT;
}

static int qd_lookup(void *priv, uint64_t parent, const char *name, struct sfs_attr *a)
{
	const struct qd *q = priv;
	const struct qd_class *c;
	uint64_t gidx;
	uint32_t id;
	int i, kind = INO_KIND(parent);

	if (parent == SFS_ROOT_INO)
		return lookup_root(q, name, a);
	if (qd_epochs_owns(parent))
		return qd_epochs_lookup(q, parent, name, a);
	if (parent == INO_IMAGES || parent == INO_STROKES) {
		if (qd_getattr(priv, parent, a) || find_class(q, name, &id))
			return -ENOENT;
		return qd_getattr(priv, INO(parent == INO_IMAGES ? K_IMGDIR : K_STKDIR, id), a);
	}
	if (parent == INO_SPLITS) {
		for (i = 0; i < 3; i++)
			if (!strcmp(name, split_names[i]))
				return fixed_attr(q, INO_TRAIN + (uint64_t)i, a);
		return -ENOENT;
	}
	if (kind == K_IMGDIR || kind == K_STKDIR) {
		if (qd_getattr(priv, parent, a))
			return -ENOENT;
		c = &q->cls[INO_VAL_OF(parent)];
		if (qd_parse_sample_name(name, &gidx) || gidx < c->gidx_base ||
		    gidx - c->gidx_base >= c->n)
			return -ENOENT;
		return qd_getattr(priv, INO(kind == K_IMGDIR ? K_IMG : K_STK, gidx), a);
	}
	return qd_getattr(priv, parent, a) ? -ENOENT : -ENOTDIR;
}

/* ---- readdir ---- */

static int readdir_root(const struct qd *q, uint64_t off, sfs_fill_fn fill, void *arg)
{
	/* bytewise order */
	static const char *const names[] = { "classes.txt", "epochs", "images", "splits",
					     "strokes" };
	static const uint64_t inos[] = { INO_CLASSES, QD_INO_EPOCHS, INO_IMAGES, INO_SPLITS,
					 INO_STROKES };
	struct sfs_attr a;
	uint64_t i;

	for (i = off; i < 5; i++) {
		if (qd_getattr((void *)q, inos[i], &a))
			continue;
		if (fill(arg, names[i], &a, i + 1))
			break;
	}
	return 0;
}

static int readdir_classes(const struct qd *q, int kind, uint64_t off, sfs_fill_fn fill,
			   void *arg)
{
	char name[QD_MAX_NAME + 1];
	struct sfs_attr a;
	uint64_t i;
	uint32_t c;

	for (i = off; i < q->hd->nclass; i++) {
		c = q->sorted[i];
		snprintf(name, sizeof(name), "%.*s", (int)q->cls[c].name_len,
			 q->names + q->cls[c].name_off);
		qd_getattr((void *)q, INO(kind, c), &a);
		if (fill(arg, name, &a, i + 1))
			break;
	}
	return 0;
}

/* Names in bytewise order; the cookie of an entry is its gidx + 1. */
static int readdir_samples(const struct qd *q, uint64_t dir, uint64_t off,
			   sfs_fill_fn fill, void *arg)
{
	const struct qd_class *c = &q->cls[INO_VAL_OF(dir)];
	int kind = INO_KIND(dir) == K_IMGDIR ? K_IMG : K_STK;
	uint64_t lo = c->gidx_base, hi = c->gidx_base + c->n, g;
	struct sfs_attr a;
	char name[32];

	g = off ? qd_name_next(lo, hi, off - 1) : qd_name_first(lo, hi);
	for (; g != UINT64_MAX; g = qd_name_next(lo, hi, g)) {
		qd_sample_name(name, sizeof(name), g);
		qd_getattr((void *)q, INO(kind, g), &a);
		if (fill(arg, name, &a, g + 1))
			break;
	}
	return 0;
}

static int qd_readdir(void *priv, uint64_t dir, uint64_t off, sfs_fill_fn fill, void *arg)
{
	const struct qd *q = priv;
	struct sfs_attr a;
	uint64_t i;
	int rc = qd_getattr(priv, dir, &a);

	if (rc)
		return rc;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	if (qd_epochs_owns(dir))
		return qd_epochs_readdir(q, dir, off, fill, arg);
	if (dir == SFS_ROOT_INO)
		return readdir_root(q, off, fill, arg);
	if (dir == INO_IMAGES)
		return readdir_classes(q, K_IMGDIR, off, fill, arg);
	if (dir == INO_STROKES)
		return readdir_classes(q, K_STKDIR, off, fill, arg);
	if (dir == INO_SPLITS) {
		for (i = off; i < 3; i++) {
			fixed_attr(q, INO_TRAIN + i, &a);
			if (fill(arg, split_names[i], &a, i + 1))
				break;
		}
		return 0;
	}
	return readdir_samples(q, dir, off, fill, arg);
}

/* Lines of split s from byte off: the checkpoint before off, then walk. */
static ssize_t read_split(const struct qd *q, int s, char *buf, size_t size, uint64_t off)
{
	const struct qd_head *hd = q->hd;
	const uint64_t *ck = q->ckpt + hd->ckpt_base[s];
	uint64_t nck = (hd->nsplit[s] + QD_CKPT - 1) / QD_CKPT, lo;
	uint64_t first = 0, j, pos, g, skip;
	const struct qd_class *c;
	char line[LINE_MAX_LEN];
	size_t n = 0, len, k;
	uint32_t label;
	int i;

	if (off >= hd->split_bytes[s])
		return 0;
	for (i = 0; i < s; i++)
		first += hd->nsplit[i];
	/* the last checkpoint at or before off */
	lo = SFS_PARTITION_POINT(uint64_t, 1, nck, m, ck[m] <= off) - 1;
	for (j = lo * QD_CKPT, pos = ck[lo]; j < hd->nsplit[s] && n < size; j++) {
		g = q->perm[first + j];
		if (g >= hd->total)
			return -EIO;
		c = qd_class_of(q->cls, hd->nclass, g, &label);
		len = qd_split_line(line, sizeof(line), hd->has_images, hd->has_strokes,
				    q->names + c->name_off, c->name_len, g, label);
		if (pos + len > off) {
			skip = off > pos ? off - pos : 0;
			k = len - skip < size - n ? len - skip : size - n;
			memcpy(buf + n, line + skip, k);
			n += k;
		}
		pos += len;
	}
	return (ssize_t)n;
}

static ssize_t qd_read(void *priv, uint64_t ino, char *buf, size_t size, uint64_t off)
{
	const struct qd *q = priv;
	struct sfs_attr a;
	int rc = qd_getattr(priv, ino, &a);

	if (rc)
		return rc;
	if (S_ISDIR(a.mode))
		return -EISDIR;
	if (qd_epochs_owns(ino))
		return qd_epochs_read(q, ino, buf, size, off);
	switch (INO_KIND(ino)) {
	case K_IMG:
		return qd_read_image(q, INO_VAL_OF(ino), buf, size, off);
	case K_STK:
		return qd_read_stroke(q, INO_VAL_OF(ino), buf, size, off);
	}
	if (ino == INO_CLASSES)
		return qd_copy_range(buf, size, off, "", 0, q->names, q->hd->names_len);
	return read_split(q, (int)(ino - INO_TRAIN), buf, size, off);
}

static void qd_statfs(void *priv, uint64_t *files, uint64_t *bytes)
{
	const struct qd *q = priv;
	const struct qd_head *hd = q->hd;
	uint64_t per_kind = 1 + hd->nclass + hd->total;

	*files = 6 + (hd->has_images ? per_kind : 0) + (hd->has_strokes ? per_kind : 0);
	*bytes = hd->names_len + hd->split_bytes[0] + hd->split_bytes[1] +
		 hd->split_bytes[2] + (hd->has_images ? hd->total * q->img_size : 0) +
		 (hd->has_strokes ? hd->total * q->stk_size : 0);
}

static void qd_destroy(void *priv)
{
	struct qd *q = priv;

	if (!q)
		return;
	qd_epochs_close(q);
	if (q->cache)
		lru_free(q->cache);
	if (q->map.base)
		index_map_close(&q->map);
	source_close(q->idx);
	qd_scan_free(&q->scan);
	free(q);
}

static const struct layout_ops qd_ops = {
	.name = "quickdraw",
	.listed_then_read = 1,
	.getattr = qd_getattr,
	.lookup = qd_lookup,
	.readdir = qd_readdir,
	.read = qd_read,
	.statfs = qd_statfs,
	.destroy = qd_destroy,
};

/* ---- open ---- */

static const void *section(const struct qd *q, uint32_t tag, uint64_t want_len,
			   uint64_t unit, uint64_t *len)
{
	uint64_t l = 0;
	const void *p = index_map_section(&q->map, tag, &l);

	if (len)
		*len = l;
	if ((!p && want_len) || (unit && l % unit) || (want_len != UINT64_MAX && l != want_len))
		return NULL;
	return p ? p : "";
}

/* Points the tables into the mapped index and checks them against the scan. */
static int attach(struct qd *q)
{
	const struct qd_head *hd;
	uint64_t i, total = 0, nck;

	hd = q->hd = section(q, QD_TAG_HEAD, sizeof(*hd), 0, NULL);
	if (!hd || hd->format != QD_FORMAT || hd->nclass != q->scan.nclass ||
	    !hd->has_images != !q->scan.has_images || !hd->has_strokes != !q->scan.has_strokes)
		return -EBADMSG;
	q->cls = section(q, QD_TAG_CLS, hd->nclass * sizeof(*q->cls), 0, NULL);
	q->names = section(q, QD_TAG_NAME, hd->names_len, 0, NULL);
	q->sorted = section(q, QD_TAG_SORT, hd->nclass * 4ull, 0, NULL);
	q->perm = section(q, QD_TAG_PERM, hd->total * 4, 0, NULL);
	q->ckpt = section(q, QD_TAG_CKPT, UINT64_MAX, 8, &q->nckpt);
	q->xl = section(q, QD_TAG_XL, UINT64_MAX, 0, &q->xl_len);
	/* XL may be absent, not damaged (said: rebuilt) */
	if (!q->cls || !q->names || !q->sorted || !q->perm || !q->ckpt ||
	    index_map_damaged(&q->map))
		return -EBADMSG;
	q->nckpt /= 8;
	if (hd->nsplit[0] > hd->total || hd->nsplit[1] > hd->total ||
	    hd->nsplit[0] + hd->nsplit[1] + hd->nsplit[2] != hd->total)
		return -EBADMSG;
	/* each split's checkpoints follow the last one's, all inside CKPT
	 * (read_split indexes them without further checks) */
	for (nck = 0, i = 0; i < 3; i++) {
		if (hd->ckpt_base[i] != nck)
			return -EBADMSG;
		nck += (hd->nsplit[i] + QD_CKPT - 1) / QD_CKPT;
	}
	if (nck > q->nckpt)
		return -EBADMSG;
	for (i = 0; i < hd->nclass; i++) {
		const struct qd_class *c = &q->cls[i];

		if (c->gidx_base != total || (uint64_t)c->name_off + c->name_len > hd->names_len ||
		    q->sorted[i] >= hd->nclass || c->name_len != strlen(q->scan.cls[i].name) ||
		    memcmp(q->names + c->name_off, q->scan.cls[i].name, c->name_len) ||
		    (hd->has_images && c->n > c->img_rows))
			return -EBADMSG;
		total += c->n;
	}
	if (total != hd->total)
		return -EBADMSG;
	if (hd->has_strokes &&
	    (blockstore_open(&q->bs, &q->map, QD_TAG_SDAT, QD_TAG_SBLK, QD_TAG_SREC, 0) ||
	     blockstore_count(&q->bs) < hd->total))
		return -EBADMSG;
	/* last: it takes the image headers from the index when it fits */
	return qd_scan_attach(&q->scan, q->cls);
}

/* The per-sample file headers, as np.save writes them. */
static int make_headers(struct qd *q, const struct sfs_opts *o)
{
	uint64_t ishape[3] = { 28, 28, 1 }, sshape[2] = { o->stroke_len, 3 };
	int n, i;

	n = npy_header_emit(q->img_hdr, sizeof(q->img_hdr), o->image_uint8 ? "|u1" : "<f4",
			    3, ishape);
	if (n < 0)
		return n;
	q->img_hdr_len = (uint32_t)n;
	q->img_size = (uint64_t)n + QD_ROW * (o->image_uint8 ? 1 : 4);
	n = npy_header_emit(q->stk_hdr, sizeof(q->stk_hdr), "<f4", 2, sshape);
	if (n < 0)
		return n;
	q->stk_hdr_len = (uint32_t)n;
	q->stk_size = (uint64_t)n + (uint64_t)o->stroke_len * 12;
	/* numpy: arr.astype(np.float32) / 255.0 divides in float32; the
	 * float64 route rounds to the same values for all 256 inputs */
	for (i = 0; i < 256; i++)
		q->lut[i] = (float)i / 255.0f;
	return 0;
}

/*
 * Stroke blocks are read from the index file opened as a local source, not
 * through the map, so random stroke reads do not grow the daemon's RSS by
 * every page they touch (20k random reads of 345 x 3000 drawings: 216 MB
 * of mapped index), and a read that would wait for the disk says so
 * (no-wait mode) like any other source read.  It must be the mapped file:
 * its first bytes, the header with the checksum of everything after it,
 * must match.  If not (replaced since), reads stay on the map.
 */
static void open_index_source(struct qd *q, const char *path)
{
	uint8_t head[256];
	size_t n = q->map.len < sizeof(head) ? q->map.len : sizeof(head);
	struct source *idx;

	if (!q->hd->has_strokes || source_open(NULL, path, &idx) < 0)
		return;
	if (source_pread(idx, head, n, 0) != (ssize_t)n || memcmp(head, q->map.base, n)) {
		source_close(idx);
		return;
	}
	q->idx = idx;
	blockstore_read_from(&q->bs, idx, (uint64_t)(q->bs.data - q->map.base));
}

/* index_load's callbacks */
struct qd_load {
	struct qd *q;
	const struct sfs_opts *o;
};

static int build_index(void *arg, struct index_writer *w)
{
	struct qd_load *l = arg;

	return qd_index_build(l->o, &l->q->scan, w);
}

static int attach_index(void *arg, const struct index_map *m, const char *path)
{
	struct qd *q = ((struct qd_load *)arg)->q;
	int rc = attach(q);

	if (rc == 0)
		open_index_source(q, path);
	return rc;
}

#define KEY_MAX (4096 + 96)

/* index_path's key: the options that pick the index file */
static void index_key(const struct sfs_opts *o, char *key)
{
	snprintf(key, KEY_MAX, "p%" PRIu64 "-s%u-%u.%u.%u-%s%s%s%s%s", o->per_class, o->seed,
		 o->split[0], o->split[1], o->split[2], o->classes_file ? o->classes_file : "",
		 o->images_dir ? "-i" : "", o->images_dir ? o->images_dir : "",
		 o->strokes_dir ? "-k" : "", o->strokes_dir ? o->strokes_dir : "");
}

/*
 * Scans the sources, with a peek at the saved index first (mapped without
 * its fingerprint, which needs the scan, or its checksum; qd_scan checks
 * what it takes): the class names of an unchanged classes file come from
 * it, so a remount over HTTP sends no GET for them.
 */
static int scan(struct qd *q, const struct sfs_opts *o, struct source_env *env,
		const char *key)
{
	struct index_map saved = { 0 };
	char path[4096];
	int rc;

	if (index_path(o, "quickdraw", key, path, sizeof(path)) == 0)
		index_map_open(&saved, path, NULL, NULL, 0); /* none: zeroed */
	rc = qd_scan(o, env, saved.base ? &saved : NULL, &q->scan);
	index_map_close(&saved);
	return rc;
}

/* Maps the saved index, or builds it when missing, stale or corrupt. */
static int load_index(struct qd *q, const struct sfs_opts *o, const char *key)
{
	struct qd_load l = { q, o };
	struct index_fp fp;
	struct index_job job = { "quickdraw", key, &fp, build_index, attach_index, &l, NULL, NULL };
	int rc;

	rc = qd_fingerprint(o, &q->scan, &fp);
	if (rc)
		return rc;
	return index_load(o, &job, &q->map);
}

int layout_quickdraw_open(const struct sfs_opts *o, struct source_env *env,
			  struct layout *out)
{
	char key[KEY_MAX];
	struct qd *q;
	int rc;

	if (o->stroke_len < 1 || o->stroke_len > MAX_STROKE_LEN) {
		sfs_err("stroke_len=%u: expected 1 to %u", o->stroke_len, MAX_STROKE_LEN);
		return -EINVAL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->image_uint8 = o->image_uint8;
	q->stroke_len = o->stroke_len;
	index_key(o, key);
	rc = make_headers(q, o);
	if (!rc)
		rc = scan(q, o, env, key);
	if (!rc)
		rc = load_index(q, o, key);
	if (!rc && !(q->cache = lru_new_in(source_env_cache(env), "strokes",
					   SOURCE_CACHE_DEFAULT)))
		rc = -ENOMEM;
	if (!rc)
		rc = qd_epochs_open(q, o);
	if (rc) {
		qd_destroy(q);
		return rc;
	}
	out->ops = &qd_ops;
	out->priv = q;
	return 0;
}

/* ---- detection ---- */

struct probe {
	struct source_env *env;
	const char *dir, *ext;
	int need_npz_pair;
};

/* source_list callback: stops (1) at a class file (with its .npz pair) */
static int is_class_file(void *arg, const char *name, int is_dir)
{
	struct probe *p = arg;
	struct source_info info;
	size_t n = strlen(name);
	char *pair, *path;
	int found;

	if (n <= 4 || strcmp(name + n - 4, p->ext))
		return 0;
	if (!p->need_npz_pair)
		return 1;
	if (asprintf(&pair, "%.*s.npz", (int)(n - 4), name) < 0)
		return 0;
	path = source_join(p->dir, pair);
	free(pair);
	found = path && source_stat(p->env, path, &info) == 0;
	free(path);
	return found;
}

static int dir_has(struct source_env *env, const char *dir, const char *ext,
		   int need_npz_pair)
{
	struct probe p = { env, dir, ext, need_npz_pair };

	return source_list(env, dir, is_class_file, &p) == 1;
}

int layout_quickdraw_detect(struct source_env *env, const char *source,
			    const struct source_info *info)
{
	char *dir;
	int found;

	if (!(dir = source_join(source, "numpy_bitmap")))
		return 0;
	found = dir_has(env, dir, ".npy", 0);
	free(dir);
	if (!found && (dir = source_join(source, "sketchrnn"))) {
		found = dir_has(env, dir, ".npz", 0);
		free(dir);
	}
	return found || dir_has(env, source, ".npy", 1);
}
