/*
 * imagenet_index.c - the ILSVRC2012 sources and the two indexes of the
 * ImageNet layout: finding the tars and the devkit, the tar index, building,
 * writing, mapping and binding the layout index, and the orders.
 *
 * The build (first mount, or when the sources, the devkit or the shard
 * options changed) reads the devkit, lists each split's samples in
 * canonical order (class, then name), derives the orders once to compute
 * the sparse vtar and shuffled.txt offsets, and writes the layout index.
 * A mount maps both indexes and checks once every value the tree will
 * index with (bind_layout), so lookups and reads need no bounds checks.
 *
 * The orders are not stored: they would cost 12 bytes a sample on disk and
 * are quicker to derive (~50 ms for 1.28 M samples) than to read cold.  The
 * shard order (ord: position -> sample) is the tar order, a radix sort of
 * the data offsets, or an MT19937 shuffle with -o shard_seed; pos is its
 * inverse, shuf the shuffled.txt order.  They are three flat u32 arrays,
 * made here at build time and by layout_imagenet.c on first use.
 *
 * Threads: all of it runs in layout_imagenet_open (or _detect), before
 * another thread can see the layout, but make_orders, which need_orders
 * also calls under orders_lock.  What open leaves in struct in_layout is
 * read-only after it, but for the orders.
 *
 * Not the tree (inodes, names, attributes, reads): layout_imagenet.c.
 */
#include "layouts/imagenet_index.h"
#include "layouts/layout_imagenet.h"	/* file names; layout.h: layout_imagenet_detect */
#include "log.h"
#include "formats/mt19937.h"
#include "formats/vtar.h"
#include "io/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const imagenet_split_name[NSPLIT] = { "train", "val" };
static const char tar_tag[NSPLIT] = { 'T', 'V' };

#define LAYOUT_VERSION 4

#define TAG(a, b, c) INDEX_TAG('I', a, b, c)
#define STAG(s, a, b) INDEX_TAG('I', "tv"[s], a, b)

/* ---- sources ---------------------------------------------------------- */

static int is_wnid_tar(const char *name)
{
	int i;

	if (name[0] != 'n')
		return 0;
	for (i = 1; i <= 8; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return !strcmp(name + 9, ".tar");
}

/* Whether `path` is a file; its stamp in *st if so. */
static int is_file(struct source_env *env, const char *path, struct source_stamp *st)
{
	struct source_info info;

	if (source_stat(env, path, &info) || info.is_dir)
		return 0;
	if (st)
		*st = info.stamp;
	return 1;
}

static int add_source(struct in_split *sp, char *path, const char *dir)
{
	struct tarindex_source *n;

	if (!path)
		return -ENOMEM;
	n = realloc(sp->src, (sp->nsrc + 1) * sizeof(*n));
	if (!n) {
		free(path);
		return -ENOMEM;
	}
	sp->src = n;
	memset(&n[sp->nsrc], 0, sizeof(*n));
	n[sp->nsrc].path = path;
	n[sp->nsrc].dir = strdup(dir);
	if (!n[sp->nsrc].dir) {
		free(path);
		return -ENOMEM;
	}
	sp->nsrc++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct wnid_tars {
	char **v;
	size_t n;
};

/* source_list callback: keeps the <wnid>.tar names */
static int take_wnid_tar(void *arg, const char *name, int is_dir)
{
	struct wnid_tars *w = arg;
	char **nn;

	if (!is_wnid_tar(name))
		return 0;
	if (!(nn = realloc(w->v, (w->n + 1) * sizeof(*nn))))
		return -ENOMEM;
	w->v = nn;
	if (!(nn[w->n] = strdup(name)))
		return -ENOMEM;
	w->n++;
	return 0;
}

/* train/<wnid>.tar, sorted: each class tar is a source at dir <wnid>.  A
 * directory that cannot be listed has none. */
static int scan_class_tars(struct source_env *env, struct in_split *sp, const char *dir)
{
	struct wnid_tars w = { NULL, 0 };
	char wnid[16];
	size_t i;
	int rc = source_list(env, dir, take_wnid_tar, &w);

	rc = rc == -ENOMEM ? rc : 0;
	qsort(w.v, w.n, sizeof(*w.v), cmp_str);
	for (i = 0; i < w.n; i++) {
		if (!rc) {
			memcpy(wnid, w.v[i], 9);
			wnid[9] = '\0';
			rc = add_source(sp, source_join(dir, w.v[i]), wnid);
		}
		free(w.v[i]);
	}
	free(w.v);
	return rc;
}

int imagenet_find_sources(struct in_layout *L, struct source_env *env,
			  const char *root)
{
	char *p;
	int rc = 0;

	p = source_join(root, IMAGENET_TRAIN_TAR);
	if (p && is_file(env, p, NULL)) {
		rc = add_source(&L->sp[TRAIN], p, "");
		L->sp[TRAIN].recursive = 1;	/* expand the class tars */
	} else {
		free(p);
		p = source_join(root, "train");
		rc = p ? scan_class_tars(env, &L->sp[TRAIN], p) : -ENOMEM;
		free(p);
	}
	p = source_join(root, IMAGENET_VAL_TAR);
	if (!rc && p && is_file(env, p, NULL))
		rc = add_source(&L->sp[VAL], p, "");
	else
		free(p);
	p = source_join(root, IMAGENET_DEVKIT);
	if (p && is_file(env, p, &L->devkit_stamp))
		L->devkit = p;
	else
		free(p);
	return rc;
}

int layout_imagenet_detect(struct source_env *env, const char *source)
{
	struct in_layout L;
	int found;
	size_t s, i;

	memset(&L, 0, sizeof(L));
	if (imagenet_find_sources(&L, env, source))
		return 0;
	found = L.sp[TRAIN].nsrc || L.sp[VAL].nsrc;
	for (s = 0; s < NSPLIT; s++) {
		for (i = 0; i < L.sp[s].nsrc; i++) {
			free((char *)L.sp[s].src[i].path);
			free((char *)L.sp[s].src[i].dir);
		}
		free(L.sp[s].src);
	}
	free(L.devkit);
	return found;
}

/* ---- the tar index ---------------------------------------------------- */

static int tars_fp(const struct in_layout *L, struct index_fp *fp)
{
	int s, rc;

	index_fp_init(fp, "imagenet-tars");
	for (s = 0; s < NSPLIT; s++) {
		index_fp_add_str(fp, imagenet_split_name[s]);
		rc = tarindex_fp_add(fp, L->sp[s].src, L->sp[s].nsrc, L->sp[s].recursive);
		if (rc)
			return rc;
	}
	return 0;
}

struct build_arg {
	const struct sfs_opts *o;
	struct in_layout *L;
};

static int build_tars(void *arg, struct index_writer *w)
{
	struct build_arg *ba = arg;
	struct in_layout *L = ba->L;
	int s, rc = 0;

	for (s = 0; !rc && s < NSPLIT; s++) {
		struct tarindex_build_opts bo = { L->sp[s].recursive, ba->o->quiet,
			s == TRAIN ? "indexing train tar" : "indexing val tar" };

		if (L->sp[s].nsrc)
			rc = tarindex_build(w, tar_tag[s], L->sp[s].src, L->sp[s].nsrc, &bo);
	}
	return rc;
}

static int open_tarindexes(void *arg, const struct index_map *m, const char *path)
{
	struct in_layout *L = ((struct build_arg *)arg)->L;
	int s, rc = 0;

	for (s = 0; !rc && s < NSPLIT; s++)
		if (L->sp[s].nsrc)
			rc = tarindex_open(&L->sp[s].t, m, tar_tag[s],
					   L->sp[s].src, L->sp[s].nsrc);
	for (s = 0; rc && s < NSPLIT; s++)
		tarindex_close(&L->sp[s].t);
	return rc;
}

int imagenet_open_tars(const struct sfs_opts *o, struct in_layout *L, uint64_t *fph)
{
	struct build_arg b = { o, L };
	struct index_fp fp;
	struct index_job job = { "imagenet", "tars", &fp, build_tars, open_tarindexes, &b };
	int rc;

	rc = tars_fp(L, &fp);
	*fph = fp.h;
	return rc ? rc : index_load(o, &job, &L->tars);
}

/* ---- building the layout index ---------------------------------------- */

/* What the layout index is made of, on the heap while building. */
struct lbuild {
	const struct sfs_opts *o;
	struct in_layout *L;
	struct devkit dk;
	uint32_t nclasses;
	char (*wnid)[WNID_LEN];
	char *txt;
	size_t txt_len;
	struct in_head head;
	uint32_t *samp[NSPLIT], *cstart[NSPLIT];
	uint64_t *voff[NSPLIT], *soff[NSPLIT];
};

static int classes_from_devkit(struct lbuild *b)
{
	uint32_t i;

	b->nclasses = b->dk.nclasses;
	b->wnid = calloc(b->nclasses ? b->nclasses : 1, WNID_LEN);
	if (!b->wnid)
		return -ENOMEM;
	for (i = 0; i < b->nclasses; i++)
		memcpy(b->wnid[i], b->dk.wnid[i], WNID_LEN);
	b->head.words = 1;
	return 0;
}

/* without a devkit: the train class directories, in name order */
static int classes_from_train(struct lbuild *b)
{
	const struct tarindex *t = &b->L->sp[TRAIN].t;
	uint32_t first = 0, count = 0, i;

	if (b->L->sp[TRAIN].nsrc)
		tarindex_children(t, TARINDEX_ROOT, &first, &count);
	b->wnid = calloc(count ? count : 1, WNID_LEN);
	if (!b->wnid)
		return -ENOMEM;
	for (i = first; i < first + count; i++) {
		const char *name = tarindex_name(t, i);

		if (tarindex_node_type(tarindex_node(t, i)) != TARINDEX_DIR ||
		    strlen(name) >= WNID_LEN) {
			sfs_warn("%s: %s: not a class tar, skipped", IMAGENET_TRAIN_TAR, name);
			continue;
		}
		strcpy(b->wnid[b->nclasses++], name);
	}
	return 0;
}

static int classes_text(struct lbuild *b)
{
	FILE *f = open_memstream(&b->txt, &b->txt_len);
	uint32_t i;

	if (!f)
		return -ENOMEM;
	for (i = 0; i < b->nclasses; i++)
		fprintf(f, "%u\t%s\t%s\n", i, b->wnid[i],
			b->head.words ? b->dk.words[i] : "");
	return fclose(f) ? -ENOMEM : 0;
}

/* class `name` in a sorted WNID table, or -ENOENT */
int64_t imagenet_find_class_in(const char (*wnid)[WNID_LEN], uint32_t n, const char *name)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int r = strncmp(wnid[mid], name, WNID_LEN);

		if (r == 0)
			return mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

/* what the train tar holds besides the devkit's classes, said once each */
static void warn_strays(const struct lbuild *b)
{
	const struct tarindex *t = &b->L->sp[TRAIN].t;
	uint32_t first, count, i;

	if (!t->nnodes || tarindex_children(t, TARINDEX_ROOT, &first, &count))
		return;
	for (i = first; i < first + count; i++)
		if (tarindex_node_type(tarindex_node(t, i)) != TARINDEX_DIR ||
		    imagenet_find_class_in((const char (*)[WNID_LEN])b->wnid, b->nclasses, tarindex_name(t, i)) < 0)
			sfs_warn("train: %s: not a class tar of a known class, skipped",
				 tarindex_name(t, i));
}

/* train samples: the files of each class directory, class by class */
static int collect_train(struct lbuild *b)
{
	const struct tarindex *t = &b->L->sp[TRAIN].t;
	uint32_t l, first, count, i, n = 0;
	int64_t d;

	b->cstart[TRAIN] = calloc(b->nclasses + 1, sizeof(uint32_t));
	b->samp[TRAIN] = malloc(((size_t)t->nnodes + 1) * sizeof(uint32_t));
	if (!b->cstart[TRAIN] || !b->samp[TRAIN])
		return -ENOMEM;
	for (l = 0; l < b->nclasses; l++) {
		b->cstart[TRAIN][l] = n;
		d = t->nnodes ? tarindex_lookup(t, TARINDEX_ROOT, b->wnid[l]) : -ENOENT;
		if (d < 0 || tarindex_children(t, (uint32_t)d, &first, &count))
			continue;
		for (i = first; i < first + count; i++) {
			if (tarindex_node_type(tarindex_node(t, i)) == TARINDEX_FILE)
				b->samp[TRAIN][n++] = i;
			else
				sfs_warn("%s/%s: not a file, skipped", b->wnid[l], tarindex_name(t, i));
		}
	}
	b->cstart[TRAIN][b->nclasses] = n;
	b->head.split[TRAIN].n = n;
	if (b->head.words)	/* else classes_from_train said it already */
		warn_strays(b);
	b->head.split[TRAIN].labelled = b->nclasses > 0 && b->L->sp[TRAIN].nsrc > 0;
	return 0;
}

/* ILSVRC2012_val_00000001.JPEG -> 1, or 0 */
static uint32_t val_number(const char *name)
{
	static const char pre[] = "ILSVRC2012_val_";
	uint32_t k = 0;
	const char *p;

	if (strncmp(name, pre, sizeof(pre) - 1))
		return 0;
	for (p = name + sizeof(pre) - 1; *p >= '0' && *p <= '9' && k < 100000000; p++)
		k = k * 10 + (uint32_t)(*p - '0');
	return *p == '.' && p - name == sizeof(pre) - 1 + 8 ? k : 0;
}

/* Stable counting sort of the val samples by label (name order within a
 * class); frees lab.  cstart[l] = first sample of class l. */
static int group_by_label(struct lbuild *b, uint32_t *lab, uint32_t n)
{
	uint32_t *cs = b->cstart[VAL], *sorted, i, l;

	sorted = malloc(((size_t)n + 1) * sizeof(uint32_t));
	if (!sorted) {
		free(lab);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		cs[lab[i] + 1]++;
	for (l = 1; l <= b->nclasses; l++)
		cs[l] += cs[l - 1];
	for (i = 0; i < n; i++)	/* cs[l] moves to the end of class l ... */
		sorted[cs[lab[i]]++] = b->samp[VAL][i];
	/* ... which is the start of class l + 1: shift back by one */
	memmove(cs + 1, cs, b->nclasses * sizeof(uint32_t));
	cs[0] = 0;
	free(b->samp[VAL]);
	b->samp[VAL] = sorted;
	free(lab);
	return 0;
}

/* val files: labelled by the ground truth (then grouped by class, a
 * stable counting sort keeping name order), else flat in name order */
static int collect_val(struct lbuild *b)
{
	const struct tarindex *t = &b->L->sp[VAL].t;
	uint32_t first = 0, count = 0, i, n = 0, *lab;
	int labelled = b->dk.nval > 0 && b->nclasses > 0;

	tarindex_children(t, TARINDEX_ROOT, &first, &count);
	lab = malloc(((size_t)count + 1) * sizeof(uint32_t));
	b->samp[VAL] = malloc(((size_t)count + 1) * sizeof(uint32_t));
	b->cstart[VAL] = calloc(b->nclasses + 2, sizeof(uint32_t));
	if (!lab || !b->samp[VAL] || !b->cstart[VAL]) {
		free(lab);
		return -ENOMEM;
	}
	for (i = first; i < first + count; i++) {
		uint32_t k = val_number(tarindex_name(t, i));

		if (tarindex_node_type(tarindex_node(t, i)) != TARINDEX_FILE ||
		    (labelled && (k == 0 || k > b->dk.nval))) {
			sfs_warn("%s: %s: not a labelled val image, skipped",
				 IMAGENET_VAL_TAR, tarindex_name(t, i));
			continue;
		}
		lab[n] = labelled ? b->dk.val_label[k - 1] : 0;
		b->samp[VAL][n++] = i;
	}
	b->head.split[VAL].n = n;
	b->head.split[VAL].labelled = labelled;
	if (labelled)
		return group_by_label(b, lab, n);
	free(lab);
	return 0;
}

/* ---- per-sample helpers, shared by the builder and the mount ---------- */

/* node_of is inline in imagenet_index.h */

/* the label of canonical sample c: the last class starting at or before c */
uint32_t imagenet_label_of(const struct in_split *sp, uint64_t c)
{
	uint32_t lo = 0, hi = sp->ncls;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (sp->cstart[mid] <= c)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* a member's WebDataset key: its name up to the last dot */
size_t imagenet_stem_len(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot && dot != name ? (size_t)(dot - name) : strlen(name);
}

static uint64_t record_bytes(const struct in_split *sp, uint64_t p)
{
	uint32_t node = node_of(sp, sp->ord[p]);

	return vtar_sample_size(imagenet_stem_len(tarindex_name(&sp->t, node)),
				tarindex_node_size(tarindex_node(&sp->t, node)), 0);
}

/* byte offset of position p in the concatenated records of the split */
uint64_t imagenet_cum_offset(const struct in_split *sp, uint64_t p)
{
	uint64_t q = p - p % VOFF_STEP, off = sp->voff[p / VOFF_STEP];

	for (; q < p; q++)
		off += record_bytes(sp, q);
	return off;
}

/* line j of shuffled/<split>.txt into buf; returns its length */
int imagenet_shuffled_line(const struct in_split *sp, uint64_t S, uint64_t j,
		  char *buf, size_t len)
{
	uint32_t c = sp->shuf[j];

	return snprintf(buf, len, "%llu/%u.%s\n",
			(unsigned long long)(sp->pos[c] / S), imagenet_label_of(sp, c),
			tarindex_name(&sp->t, node_of(sp, c)));
}

static unsigned digits(uint64_t v)
{
	unsigned d = 1;

	for (; v >= 10; v /= 10)
		d++;
	return d;
}

/* the length of line j as shuffled_line prints it: the build sums 1.28 M
 * of these, and printing them took half a second */
static uint64_t shuffled_len(const struct in_split *sp, uint64_t S, uint64_t j)
{
	uint32_t c = sp->shuf[j];

	return digits(sp->pos[c] / S) + 1 + digits(imagenet_label_of(sp, c)) + 1 +
	       strlen(tarindex_name(&sp->t, node_of(sp, c))) + 1;
}

/* ---- the orders, derived at build time and again when mounted ---------- */

struct ordctx {
	const struct tarindex *t;
	const struct in_split *sp;
};

/* tar order: source number, then data offset (the fallback of tar_order) */
static int cmp_tar_order(const void *a, const void *b, void *arg)
{
	const struct ordctx *c = arg;
	const struct tarindex_node *x = tarindex_node(c->t, node_of(c->sp, *(const uint32_t *)a));
	const struct tarindex_node *y = tarindex_node(c->t, node_of(c->sp, *(const uint32_t *)b));

	if (tarindex_node_src(x) != tarindex_node_src(y))
		return tarindex_node_src(x) < tarindex_node_src(y) ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

#define RADIX_BITS 11

/* One stable counting-sort pass on bits [shift, shift + RADIX_BITS). */
static void radix_pass(const uint64_t *key, const uint32_t *idx, uint64_t *key2,
		       uint32_t *idx2, uint64_t n, unsigned shift)
{
	uint32_t cnt[1u << RADIX_BITS], sum = 0, d;
	uint64_t i;

	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < n; i++)
		cnt[(key[i] >> shift) & ((1u << RADIX_BITS) - 1)]++;
	for (d = 0; d < (1u << RADIX_BITS); d++) {
		uint32_t c = cnt[d];

		cnt[d] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++) {
		uint32_t at = cnt[(key[i] >> shift) & ((1u << RADIX_BITS) - 1)]++;

		key2[at] = key[i];
		idx2[at] = idx[i];
	}
}

/*
 * ord = the samples sorted by (source, data offset), ties in canonical
 * order: an LSD radix sort of src << 40 | offset over the bits that vary
 * (3 passes for one 5 GB tar, ~20 ms for 1.28 M samples, where qsort_r
 * takes 10 times as long).  `tmp` is n spare u32s.  Offsets past 2^40 or
 * sources past 2^24 do not fit that key: then qsort_r.
 */
static int tar_order(const struct in_split *sp, uint32_t *ord, uint32_t *tmp)
{
	uint64_t n = sp->h.n, i, all = UINT64_MAX, any = 0, *buf, *key, *key2;
	uint32_t *cur = ord, *other = tmp, *t;
	unsigned shift;

	for (i = 0; i < n; i++)
		ord[i] = (uint32_t)i;
	buf = malloc((2 * n + 1) * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	key = buf, key2 = buf + n;
	for (i = 0; i < n; i++) {
		const struct tarindex_node *x = tarindex_node(&sp->t, node_of(sp, i));
		struct ordctx ctx = { &sp->t, sp };

		if (x->off >> 40 || tarindex_node_src(x) >> 24) {
			free(buf);
			qsort_r(ord, n, sizeof(uint32_t), cmp_tar_order, &ctx);
			return 0;
		}
		key[i] = (uint64_t)tarindex_node_src(x) << 40 | x->off;
		all &= key[i];
		any |= key[i];
	}
	for (shift = 0; shift < 64; shift += RADIX_BITS) {
		if (!(((all ^ any) >> shift) & ((1u << RADIX_BITS) - 1)))
			continue;	/* a digit every key shares */
		radix_pass(key, cur, key2, other, n, shift);
		key = key2, key2 = key == buf ? buf + n : buf;
		t = cur, cur = other, other = t;
	}
	if (cur != ord)
		memcpy(ord, cur, n * sizeof(uint32_t));
	free(buf);
	return 0;
}

/*
 * Fills sp->orders (and the ord/pos/shuf views) for the split's samples:
 * the same arrays at build time, which derives the stored offsets from
 * them, and when mounted, on first use (need_orders, layout_imagenet.c).
 */
int imagenet_make_orders(struct in_split *sp, int has_shard_seed,
		uint32_t shard_seed, uint32_t shuffle_seed)
{
	uint64_t n = sp->h.n, i;
	uint32_t *ord, *pos, *shuf;
	struct mt19937 mt;
	int rc = 0;

	sp->orders = malloc((3 * n + 1) * sizeof(uint32_t));
	if (!sp->orders)
		return -ENOMEM;
	ord = sp->orders, pos = ord + n, shuf = pos + n;
	if (has_shard_seed) {
		for (i = 0; i < n; i++)
			ord[i] = (uint32_t)i;
		mt19937_seed(&mt, shard_seed);
		mt19937_shuffle_u32(&mt, ord, n);
	} else {
		rc = tar_order(sp, ord, pos);
	}
	if (rc) {
		free(sp->orders);
		sp->orders = NULL;
		return rc;
	}
	for (i = 0; i < n; i++) {
		pos[ord[i]] = (uint32_t)i;
		shuf[i] = (uint32_t)i;
	}
	mt19937_seed(&mt, shuffle_seed);
	mt19937_shuffle_u32(&mt, shuf, n);
	sp->ord = ord, sp->pos = pos, sp->shuf = shuf;
	return 0;
}

void imagenet_free_orders(struct in_split *sp)
{
	free(sp->orders);
	sp->orders = NULL;
	sp->ord = sp->pos = sp->shuf = NULL;
}

/* ---- building the layout index, continued ----------------------------- */

/* sparse prefix sums: vtar record offsets and shuffled.txt line offsets */
static int make_offsets(struct lbuild *b, int s)
{
	struct in_split *sp = &b->L->sp[s];
	uint64_t n = b->head.split[s].n, p, off = 0;

	b->voff[s] = malloc((n / VOFF_STEP + 1) * sizeof(uint64_t));
	b->soff[s] = malloc((n / SOFF_STEP + 1) * sizeof(uint64_t));
	if (!b->voff[s] || !b->soff[s])
		return -ENOMEM;
	for (p = 0; p <= n; off += p < n ? record_bytes(sp, p) : 0, p++)
		if (p % VOFF_STEP == 0)
			b->voff[s][p / VOFF_STEP] = off;
	for (p = 0, off = 0; p <= n; p++) {
		if (p % SOFF_STEP == 0)
			b->soff[s][p / SOFF_STEP] = off;
		if (p < n)
			off += shuffled_len(sp, b->L->S, p);
	}
	b->head.split[s].txt_size = off;
	return 0;
}

static int write_split(struct index_writer *w, const struct lbuild *b, int s)
{
	const struct in_split_head *h = &b->head.split[s];
	uint64_t n = h->n;
	int rc = 0;

	if (!h->samp_dense)
		rc = index_writer_add(w, STAG(s, 'S', 'P'), b->samp[s], n * 4);
	if (rc || !h->labelled)
		return rc;
	if (!rc)
		rc = index_writer_add(w, STAG(s, 'C', 'S'), b->cstart[s], (b->nclasses + 1) * 4ull);
	if (!rc)
		rc = index_writer_add(w, STAG(s, 'V', 'O'), b->voff[s], (n / VOFF_STEP + 1) * 8);
	if (!rc)
		rc = index_writer_add(w, STAG(s, 'S', 'O'), b->soff[s], (n / SOFF_STEP + 1) * 8);
	return rc;
}

static int write_layout(const struct lbuild *b, struct index_writer *w)
{
	int s, rc;

	rc = index_writer_add(w, TAG('H', 'D', 'R'), &b->head, sizeof(b->head));
	if (!rc)
		rc = index_writer_add(w, TAG('C', 'L', 'S'), b->wnid, (uint64_t)b->nclasses * WNID_LEN);
	if (!rc)
		rc = index_writer_add(w, TAG('T', 'X', 'T'), b->txt, b->txt_len);
	for (s = 0; !rc && s < NSPLIT; s++)
		rc = write_split(w, b, s);
	return rc;
}

static int64_t sources_mtime(const struct in_layout *L)
{
	int64_t m = 0, t;
	size_t s, i;

	for (s = 0; s < NSPLIT; s++)
		for (i = 0; i < L->sp[s].nsrc; i++)
			if ((t = source_stamp_sec(source_stamp(L->sp[s].src[i].src))) > m)
				m = t;
	return m;
}

/* The devkit, read through a source of its own (the build's only use). */
static int load_devkit(struct in_layout *L, struct devkit *dk)
{
	struct source *src;
	int rc = source_open(L->env, L->devkit, &src);

	if (rc < 0) {
		sfs_err("%s: cannot open: %s", L->devkit, strerror(-rc));
		return rc;
	}
	rc = devkit_load(src, dk);
	source_close(src);
	return rc;
}

/* consecutive node numbers need no samp array */
static void check_dense(struct lbuild *b, int s)
{
	struct in_split_head *h = &b->head.split[s];
	uint64_t c;

	h->samp_dense = 1;
	h->samp_base = h->n ? b->samp[s][0] : 0;
	for (c = 1; c < h->n && h->samp_dense; c++)
		h->samp_dense = b->samp[s][c] == h->samp_base + c;
}

static int build_samples(struct lbuild *b)
{
	int s, rc;

	rc = b->dk.nclasses ? classes_from_devkit(b) : classes_from_train(b);
	if (!rc)
		rc = classes_text(b);
	if (!rc)
		rc = collect_train(b);
	if (!rc && b->L->sp[VAL].nsrc)
		rc = collect_val(b);
	for (s = 0; !rc && s < NSPLIT; s++) {
		b->head.split[s].present = b->L->sp[s].nsrc > 0;
		check_dense(b, s);
		if (!b->head.split[s].labelled)
			continue;
		b->L->sp[s].h = b->head.split[s];
		b->L->sp[s].samp = b->samp[s];
		b->L->sp[s].cstart = b->cstart[s];
		b->L->sp[s].ncls = b->nclasses;
		rc = imagenet_make_orders(&b->L->sp[s], b->o->has_shard_seed,
				 b->o->shard_seed, b->o->shuffle_seed);
		if (!rc)
			rc = make_offsets(b, s);
		b->head.split[s].nshards = (b->head.split[s].n + b->L->S - 1) / b->L->S;
	}
	return rc;
}

static int build_layout(void *arg, struct index_writer *w)
{
	struct build_arg *ba = arg;
	struct lbuild b;
	int s, rc = 0;

	memset(&b, 0, sizeof(b));
	b.o = ba->o;
	b.L = ba->L;
	if (ba->L->devkit && load_devkit(ba->L, &b.dk))
		sfs_warn("%s: unusable, labels come from the train class names", ba->L->devkit);
	b.head.version = LAYOUT_VERSION;
	b.head.shard_size = ba->L->S;
	b.head.mtime = sources_mtime(ba->L);
	rc = build_samples(&b);
	b.head.nclasses = b.nclasses;
	if (!rc)
		rc = write_layout(&b, w);
	for (s = 0; s < NSPLIT; s++) {
		struct in_split *sp = &ba->L->sp[s];

		/* the views pointed at the heap arrays freed here */
		sp->samp = sp->cstart = NULL;
		imagenet_free_orders(sp);
		free(b.samp[s]); free(b.cstart[s]); free(b.voff[s]); free(b.soff[s]);
	}
	free(b.wnid);
	free(b.txt);
	devkit_free(&b.dk);
	return rc;
}

/* ---- binding the mapped layout index ---------------------------------- */

static const void *sect(const struct index_map *m, uint32_t tag, uint64_t want,
			int *bad)
{
	uint64_t len;
	const void *p = index_map_section(m, tag, &len);

	if (len != want || (want && !p))
		*bad = 1;
	return p;
}

/* every value that a lookup or read will index with is checked once here */
static int check_split(const struct in_split *sp, uint32_t nclasses)
{
	uint64_t n = sp->h.n, i;

	if (sp->h.samp_dense && (uint64_t)sp->h.samp_base + n > sp->t.nnodes)
		return -EBADMSG;
	for (i = 0; i < n; i++)
		if (node_of(sp, i) >= sp->t.nnodes ||
		    tarindex_node_type(tarindex_node(&sp->t, node_of(sp, i))) != TARINDEX_FILE)
			return -EBADMSG;
	if (!sp->h.labelled)
		return 0;
	if (sp->cstart[0] != 0 || sp->cstart[nclasses] != n)
		return -EBADMSG;
	for (i = 0; i < nclasses; i++)
		if (sp->cstart[i] > sp->cstart[i + 1])
			return -EBADMSG;
	return 0;
}

static int bind_split(struct in_layout *L, int s)
{
	struct in_split *sp = &L->sp[s];
	uint64_t n;
	int bad = 0;

	sp->h = L->head->split[s];
	n = sp->h.n;
	if (n > UINT32_MAX || (n && !sp->nsrc) || (sp->h.labelled && !L->head->nclasses))
		return -EBADMSG;
	sp->samp = sp->h.samp_dense ? NULL : sect(&L->lay, STAG(s, 'S', 'P'), n * 4, &bad);
	if (sp->h.labelled) {
		sp->ncls = L->head->nclasses;
		sp->cstart = sect(&L->lay, STAG(s, 'C', 'S'), (sp->ncls + 1) * 4ull, &bad);
		sp->voff = sect(&L->lay, STAG(s, 'V', 'O'), (n / VOFF_STEP + 1) * 8, &bad);
		sp->soff = sect(&L->lay, STAG(s, 'S', 'O'), (n / SOFF_STEP + 1) * 8, &bad);
		if (!bad && (sp->soff[0] || sp->voff[0] ||
			     sp->soff[n / SOFF_STEP] > sp->h.txt_size ||
			     sp->h.nshards != (n + L->S - 1) / L->S))
			bad = 1;
	}
	return bad ? -EBADMSG : check_split(sp, sp->ncls);
}

static int bind_layout(struct in_layout *L)
{
	int bad = 0, s, rc = 0;

	L->head = sect(&L->lay, TAG('H', 'D', 'R'), sizeof(struct in_head), &bad);
	if (bad || L->head->version != LAYOUT_VERSION || L->head->shard_size != L->S ||
	    L->head->nclasses > DEVKIT_MAX_CLASSES)
		return -EBADMSG;
	L->mtime = L->head->mtime;
	L->wnid = sect(&L->lay, TAG('C', 'L', 'S'), (uint64_t)L->head->nclasses * WNID_LEN, &bad);
	L->classes_txt = index_map_section(&L->lay, TAG('T', 'X', 'T'), &L->classes_len);
	for (uint32_t i = 0; !bad && i < L->head->nclasses; i++)
		bad = !memchr(L->wnid[i], '\0', WNID_LEN);	/* printed with %s */
	for (s = 0; !bad && !rc && s < NSPLIT; s++)
		rc = bind_split(L, s);
	return bad ? -EBADMSG : rc;
}

static int bind_layout_cb(void *arg, const struct index_map *m, const char *path)
{
	return bind_layout(((struct build_arg *)arg)->L);
}

int imagenet_open_layout_index(const struct sfs_opts *o, struct in_layout *L,
			       uint64_t tars_fp)
{
	struct build_arg b = { o, L };
	struct index_fp fp;
	char key[128];
	struct index_job job = { "imagenet", key, &fp, build_layout, bind_layout_cb, &b };

	index_fp_init(&fp, "imagenet-layout");
	index_fp_add_u64(&fp, tars_fp);
	index_fp_add_u64(&fp, LAYOUT_VERSION);
	if (L->devkit)
		index_fp_add_source(&fp, L->devkit, &L->devkit_stamp);
	snprintf(key, sizeof(key), "layout-s%llu-%s%u-r%u",
		 (unsigned long long)L->S, o->has_shard_seed ? "seed" : "tar",
		 o->has_shard_seed ? o->shard_seed : 0, o->shuffle_seed);
	index_fp_add_str(&fp, key);
	return index_load(o, &job, &L->lay);
}
