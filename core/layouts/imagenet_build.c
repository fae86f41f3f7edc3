/*
 * imagenet_build.c - the ImageNet layout index's build (imagenet_build.h):
 * classes from the devkit (or the train class directories), the train
 * and val samples, the sparse offsets, and the sections; and loading it
 * (index_load: mapped and bound by imagenet_index.c, or built here).
 *
 * Not for: binding the mapped sections (imagenet_index.c), the tree.
 */
#include "layouts/imagenet_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/devkit.h"
#include "formats/kaggle.h"
#include "io/source.h"
#include "layouts/imagenet_files.h"
#include "layouts/imagenet_orders.h"
#include "layouts/imagenet_samples.h"
#include "log.h"

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
		tarindex_children(t, b->L->sp[TRAIN].root, &first, &count);
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

/* what the train tar holds besides the devkit's classes, said once each */
static void warn_strays(const struct lbuild *b)
{
	const struct tarindex *t = &b->L->sp[TRAIN].t;
	uint32_t first, count, i;

	if (!t->nnodes || tarindex_children(t, b->L->sp[TRAIN].root, &first, &count))
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
		d = t->nnodes ? tarindex_lookup(t, b->L->sp[TRAIN].root, b->wnid[l]) : -ENOENT;
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

	tarindex_children(t, b->L->sp[VAL].root, &first, &count);
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

/* sparse prefix sums: vtar record offsets and shuffled.txt line offsets */
static int make_offsets(struct lbuild *b, int s)
{
	uint64_t n = b->head.split[s].n;

	b->voff[s] = malloc((n / VOFF_STEP + 1) * sizeof(uint64_t));
	b->soff[s] = malloc((n / SOFF_STEP + 1) * sizeof(uint64_t));
	if (!b->voff[s] || !b->soff[s])
		return -ENOMEM;
	return imagenet_make_offsets(&b->L->sp[s], b->L->S, b->voff[s], b->soff[s],
				     &b->head.split[s].txt_size);
}

static int write_split(struct index_writer *w, const struct lbuild *b, int s)
{
	const struct in_split_head *h = &b->head.split[s];
	uint64_t n = h->n;
	int rc = 0;

	if (!h->samp_dense)
		rc = index_writer_add(w, IN_STAG(s, 'S', 'P'), b->samp[s], n * 4);
	if (rc || !h->labelled)
		return rc;
	if (!rc)
		rc = index_writer_add(w, IN_STAG(s, 'C', 'S'), b->cstart[s], (b->nclasses + 1) * 4ull);
	if (!rc)
		rc = index_writer_add(w, IN_STAG(s, 'V', 'O'), b->voff[s], (n / VOFF_STEP + 1) * 8);
	if (!rc)
		rc = index_writer_add(w, IN_STAG(s, 'S', 'O'), b->soff[s], (n / SOFF_STEP + 1) * 8);
	return rc;
}

static int write_layout(const struct lbuild *b, struct index_writer *w)
{
	int s, rc;

	rc = index_writer_add(w, IN_TAG('H', 'D', 'R'), &b->head, sizeof(b->head));
	if (!rc)
		rc = index_writer_add(w, IN_TAG('C', 'L', 'S'), b->wnid, (uint64_t)b->nclasses * WNID_LEN);
	if (!rc)
		rc = index_writer_add(w, IN_TAG('T', 'X', 'T'), b->txt, b->txt_len);
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

/* Kaggle's label file `name` at the zip's root, read whole (bounded). */
static int kaggle_file(const struct in_layout *L, const char *name, char **out,
		       size_t *len)
{
	const struct tarindex *t = &L->sp[TRAIN].t;
	int64_t i = tarindex_find(t, name);
	uint64_t size;
	ssize_t got;

	if (i < 0 || tarindex_node_type(tarindex_node(t, (uint32_t)i)) != TARINDEX_FILE) {
		sfs_err("%s: no %s in the zip", L->sp[TRAIN].src[0].path, name);
		return -ENOENT;
	}
	size = tarindex_node_size(tarindex_node(t, (uint32_t)i));
	if (size > (64u << 20)) {
		sfs_err("%s: %s of %llu bytes is over 64 MiB", L->sp[TRAIN].src[0].path,
			name, (unsigned long long)size);
		return -EFBIG;
	}
	if (!(*out = malloc(size + 1)))
		return -ENOMEM;
	got = tarindex_pread(t, (uint32_t)i, *out, size, 0);
	if (got != (ssize_t)size) {
		free(*out);
		*out = NULL;
		sfs_err("%s: %s: cannot read it", L->sp[TRAIN].src[0].path, name);
		return got < 0 ? (int)got : -EIO;
	}
	*len = size;
	return 0;
}

/* Kaggle's labels: the synset mapping (classes, words), the val solution. */
static int load_kaggle(const struct in_layout *L, struct devkit *dk)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = kaggle_file(L, IMAGENET_KAGGLE_SYNSETS, &buf, &len);

	if (!rc)
		rc = kaggle_synsets_parse(buf, len, IMAGENET_KAGGLE_SYNSETS, dk);
	free(buf);
	buf = NULL;
	if (!rc)
		rc = kaggle_file(L, IMAGENET_KAGGLE_VAL, &buf, &len);
	if (!rc)
		rc = kaggle_val_parse(buf, len, IMAGENET_KAGGLE_VAL, dk);
	free(buf);
	if (rc)
		devkit_free(dk);
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

int imagenet_build_layout(const struct sfs_opts *o, struct in_layout *L,
			  struct index_writer *w)
{
	struct lbuild b;
	int s, rc = 0;

	memset(&b, 0, sizeof(b));
	b.o = o;
	b.L = L;
	if (L->devkit && load_devkit(L, &b.dk))
		sfs_warn("%s: unusable, labels come from the train class names", L->devkit);
	if (L->kaggle && load_kaggle(L, &b.dk))
		sfs_warn("%s: its label files are unusable: labels come from the train "
			 "class names, and /val is flat", L->sp[TRAIN].src[0].path);
	b.head.version = IN_LAYOUT_VERSION;
	b.head.shard_size = L->S;
	b.head.mtime = sources_mtime(L);
	rc = build_samples(&b);
	b.head.nclasses = b.nclasses;
	if (!rc)
		rc = write_layout(&b, w);
	for (s = 0; s < NSPLIT; s++) {
		struct in_split *sp = &L->sp[s];

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

/* index_load's callbacks: the mount's options and layout */
struct layout_job {
	const struct sfs_opts *o;
	struct in_layout *L;
};

static int build_layout(void *arg, struct index_writer *w)
{
	struct layout_job *lj = arg;

	return imagenet_build_layout(lj->o, lj->L, w);
}

static int bind_layout_cb(void *arg, const struct index_map *m, const char *path)
{
	return imagenet_bind_layout(((struct layout_job *)arg)->L);
}

int imagenet_open_layout_index(const struct sfs_opts *o, struct in_layout *L,
			       uint64_t tars_fp)
{
	struct layout_job lj = { o, L };
	struct index_fp fp;
	char key[128];
	struct index_job job = { "imagenet", key, &fp, build_layout, bind_layout_cb, &lj,
				 "the classes, shards and splits", NULL };

	index_fp_init(&fp, "imagenet-layout");
	index_fp_add_u64(&fp, tars_fp);
	index_fp_add_u64(&fp, IN_LAYOUT_VERSION);
	if (L->devkit)
		index_fp_add_source(&fp, L->devkit, &L->devkit_stamp);
	snprintf(key, sizeof(key), "layout-s%llu-%s%u-r%u",
		 (unsigned long long)L->S, o->has_shard_seed ? "seed" : "tar",
		 o->has_shard_seed ? o->shard_seed : 0, o->shuffle_seed);
	index_fp_add_str(&fp, key);
	return index_load(o, &job, &L->lay);
}
