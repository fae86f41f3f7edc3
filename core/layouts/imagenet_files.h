/*
 * imagenet_files.h - the ILSVRC2012 release's file names and finding them:
 * SOURCE (a directory, a path or URL) is ImageNet when it holds
 * ILSVRC2012_img_train.tar or ILSVRC2012_img_val.tar, or a train/
 * directory with at least one <wnid>.tar (n + 8 digits + ".tar"); each
 * of them may be recompressed under a compressed tar's name instead
 * (ILSVRC2012_img_train.tar.gz, n01440764.tar.zst: tar_archive_suffix;
 * the plain name is looked for first); or
 * when it is Kaggle's zip (any *.zip given with -o layout=imagenet; detected
 * by its name IMAGENET_KAGGLE_ZIP, or a directory holding it).
 * ILSVRC2012_devkit_t12.tar.gz next to them is optional.
 *
 * Not for: opening or indexing them (imagenet_tars.h), the tree
 * (layout_imagenet.c).
 */
#ifndef SFS_IMAGENET_FILES_H
#define SFS_IMAGENET_FILES_H

#include "io/source.h"
#include "layouts/imagenet_index.h"

#define IMAGENET_TRAIN_BASE "ILSVRC2012_img_train"
#define IMAGENET_VAL_BASE "ILSVRC2012_img_val"
#define IMAGENET_TRAIN_TAR IMAGENET_TRAIN_BASE ".tar"
#define IMAGENET_VAL_TAR IMAGENET_VAL_BASE ".tar"
#define IMAGENET_DEVKIT "ILSVRC2012_devkit_t12.tar.gz"
/* Kaggle's ImageNet: one zip of ILSVRC/Data/CLS-LOC/{train/<wnid>,val}/
 * and the label files LOC_synset_mapping.txt, LOC_val_solution.csv */
#define IMAGENET_KAGGLE_ZIP "imagenet-object-localization-challenge.zip"
#define IMAGENET_KAGGLE_DIR "ILSVRC/Data/CLS-LOC/"
#define IMAGENET_KAGGLE_SYNSETS "LOC_synset_mapping.txt"
#define IMAGENET_KAGGLE_VAL "LOC_val_solution.csv"

/* The train tar (or train/<wnid>.tar), the val tar and the devkit under
 * `root` (a path or URL), into L->sp[].src and L->devkit; nothing opened.
 * Missing ones are not an error.  0 or -ENOMEM. */
int imagenet_find_sources(struct in_layout *L, struct source_env *env,
			  const char *root);

/* 1 if `source` (whose source_stat is info) has the shape above (layout
 * detection, layouts.c's table), else 0. */
int imagenet_detect(struct source_env *env, const char *source,
		    const struct source_info *info);

/* Warns of what the layout does not serve: the entries of `root` that
 * are none of the files above, and the val tar, train tars or devkit
 * that are missing (with what is not served for it). */
void imagenet_say_unserved(const struct in_layout *L, struct source_env *env,
			   const char *root);

#endif
