/*
 * quickdraw_build.c - the Quick, Draw! index build (first mount, or when
 * the sources or shaping options changed): inflates every stroke .npz
 * member once, re-blocks each drawing's points into a blockstore, shuffles
 * the split permutation as numpy does and writes everything into one index.
 *
 * Not the source scan (quickdraw_scan.c), the pure helpers
 * (quickdraw_index.c), or the FUSE-facing ops (layout_quickdraw.c).
 */
#include "layouts/quickdraw_index.h"

#include <errno.h>
#include <inttypes.h>
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
#include "search.h"

/* An .npz member is inflated whole before its pickle is read.  Real
 * sketchrnn members (70,000 / 2,500 / 2,500 drawings) are 6 to 80 MB;
 * this leaves room for three times that, and keeps a deflate bomb (a few
 * hundred KB that inflate ~1000:1) from taking more. */
#define MAX_MEMBER    (256ull << 20)
#define MAX_XL_BYTES  (1ull << 30)  /* long drawings kept raw, at most */

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
	uint8_t *conv;                   /* a drawing converted to int16 or float32 */
	size_t conv_cap;
};

/* A drawing too long for one record: zlib stream in the XL buffer, and a
 * redirect record (see quickdraw_index.h); pts are int16 points, or float32
 * ones when f4. */
static int add_long(struct build *b, const uint8_t *pts, uint32_t n, int f4)
{
	uint8_t r[QD_XL_LEN];
	uLong len = (uLong)n * (f4 ? 12 : 6), bound = compressBound(len);
	uLongf zlen = bound;
	uint64_t cap;
	uint32_t magic = f4 ? QD_XF_MAGIC : QD_XL_MAGIC, z32;
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

/* A drawing whose float32 values int16 cannot hold: QD_REC_F32. */
static int take_f4(struct build *b, const uint8_t *pts, uint32_t n,
		   enum stroke_dtype t)
{
	int64_t id;

	stroke_to_f4(pts, t, n, b->conv);
	if ((uint64_t)n * 12 >= BLOCKSTORE_BLOCK)
		return add_long(b, b->conv, n, 1);
	b->rec[0] = QD_REC_F32;
	memcpy(b->rec + 1, b->conv, (size_t)n * 12);
	id = blockstore_builder_add(b->bs, b->rec, (uint32_t)n * 12 + 1);
	return id < 0 ? (int)id : 0;
}

/*
 * A drawing of another dtype than int16: as int16 when float32 of every
 * value is one (what the transform sees is the same), else as float32.
 */
static int convert(struct build *b, const uint8_t *pts, uint32_t n,
		   enum stroke_dtype t, const uint8_t **i2)
{
	size_t need = n ? (size_t)n * 12 : 1;
	uint8_t *p;

	if (n > QD_XL_MAX_PTS)   /* refused there, before a huge allocation */
		return add_long(b, pts, n, 0);
	if (need > b->conv_cap) {
		if (!(p = realloc(b->conv, need)))
			return -ENOMEM;
		b->conv = p;
		b->conv_cap = need;
	}
	if (stroke_to_i2(pts, t, n, b->conv))
		return take_f4(b, pts, n, t);
	*i2 = b->conv;
	return 1;
}

/* pickle callback: one drawing; takes the first `limit` of the class. */
static int take_stroke(void *arg, const uint8_t *pts, uint32_t n,
		       enum stroke_dtype t)
{
	struct build *b = arg;
	uint8_t *rec = b->rec;
	long len;
	int64_t id;
	int rc;

	if (b->got == b->limit)
		return 0;
	b->got++;
	if (t != STROKE_I2 && (rc = convert(b, pts, n, t, &pts)) != 1)
		return rc;
	rec[0] = QD_REC_PACKED;
	len = strokepack_pack(pts, n, rec + 1, BLOCKSTORE_BLOCK - 1);
	if (len == -EINVAL && (uint64_t)n * 6 < BLOCKSTORE_BLOCK) {
		rec[0] = QD_REC_RAW;   /* a pen that is not 0 or 1: kept as is */
		memcpy(rec + 1, pts, (size_t)n * 6);
		len = (long)n * 6;
	}
	if (len < 0)
		return add_long(b, pts, n, 0);
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
	/* the last class with gidx_base <= gidx */
	uint32_t lo = SFS_PARTITION_POINT(uint32_t, 1, ncls, i,
					  cls[i].gidx_base <= gidx) - 1;

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
	hd.names_fp = qd_names_fp(names, names_len);
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
	free(b.conv);
	free(names);
	return rc;
}
