/*
 * imagenet_tars.c - the ImageNet layout's tar index (imagenet_tars.h):
 * its fingerprint (each split's sources, stamps and expansion depth), its
 * build (one tarindex_build per split into one file) and opening each
 * split's tarindex from it.
 *
 * Not for: the samples, shards and labels (imagenet_build.c).
 */
#include "layouts/imagenet_tars.h"

#include <errno.h>
#include <stdio.h>

#include "layouts/imagenet_files.h"
#include "log.h"

static const char tar_tag[NSPLIT] = { 'T', 'V' };

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

/* index_load's callbacks: the mount's options and layout */
struct tars_job {
	const struct sfs_opts *o;
	struct in_layout *L;
};

static int build_tars(void *arg, struct index_writer *w)
{
	struct tars_job *tj = arg;
	struct in_layout *L = tj->L;
	int s, rc = 0;

	for (s = 0; !rc && s < NSPLIT; s++) {
		struct tarindex_build_opts bo = { L->sp[s].recursive, tj->o->quiet,
			s == TRAIN ? "indexing train tar" : "indexing val tar",
			tj->o->checksums };

		if (L->sp[s].nsrc)
			rc = tarindex_build(w, tar_tag[s], L->sp[s].src, L->sp[s].nsrc, &bo);
	}
	return rc;
}

/* Kaggle's zip: split s's samples are under ILSVRC/Data/CLS-LOC/<split>. */
static int kaggle_root(struct in_layout *L, int s)
{
	char path[64];
	int64_t i;

	snprintf(path, sizeof(path), IMAGENET_KAGGLE_DIR "%s", imagenet_split_name[s]);
	i = tarindex_find(&L->sp[s].t, path);
	if (i < 0 || tarindex_node_type(tarindex_node(&L->sp[s].t, (uint32_t)i)) != TARINDEX_DIR) {
		sfs_err("%s: no directory %s in the zip (Kaggle's ImageNet has "
			IMAGENET_KAGGLE_DIR "train/<wnid>/ and " IMAGENET_KAGGLE_DIR "val/)",
			L->sp[s].src[0].path, path);
		return -ENOENT;
	}
	L->sp[s].root = (uint32_t)i;
	return 0;
}

static int open_tarindexes(void *arg, const struct index_map *m, const char *path)
{
	struct tars_job *tj = arg;
	struct in_layout *L = tj->L;
	int s, rc = 0;

	for (s = 0; !rc && s < NSPLIT; s++)
		if (L->sp[s].nsrc) {
			rc = tarindex_open(&L->sp[s].t, m, tar_tag[s],
					   L->sp[s].src, L->sp[s].nsrc);
			if (!rc && L->kaggle)
				rc = kaggle_root(L, s);
			/* -o checksums wants them: rebuilt without (layout_tar.c) */
			if (!rc && tj->o->checksums && !L->sp[s].t.sums) {
				sfs_info("%s: the index has no checksums, which -o "
					 "checksums asks for", path);
				tarindex_close(&L->sp[s].t);
				rc = -EBADMSG;
			}
		}
	for (s = 0; rc && s < NSPLIT; s++)
		tarindex_close(&L->sp[s].t);
	return rc;
}

int imagenet_open_tars(const struct sfs_opts *o, struct in_layout *L, uint64_t *fph)
{
	struct tars_job tj = { o, L };
	struct index_fp fp;
	struct index_job job = { "imagenet", "tars", &fp, build_tars, open_tarindexes, &tj,
				 "the members of the tars", NULL };
	int rc;

	rc = tars_fp(L, &fp);
	*fph = fp.h;
	return rc ? rc : index_load(o, &job, &L->tars);
}
