/*
 * layout_imagenet.h - what the ImageNet layout tells tools beyond the FUSE
 * contract (layout.h declares layout_imagenet_open/_detect).
 *
 * SOURCE is detected as ImageNet when it is a directory holding
 * ILSVRC2012_img_train.tar or ILSVRC2012_img_val.tar, or a train/
 * directory with at least one <wnid>.tar (n + 8 digits + ".tar").
 * ILSVRC2012_devkit_t12.tar.gz next to them is optional.
 */
#ifndef SFS_LAYOUT_IMAGENET_H
#define SFS_LAYOUT_IMAGENET_H

#include <stdint.h>

#include "layouts/layout.h"

#define IMAGENET_TRAIN_TAR "ILSVRC2012_img_train.tar"
#define IMAGENET_VAL_TAR "ILSVRC2012_img_val.tar"
#define IMAGENET_DEVKIT "ILSVRC2012_devkit_t12.tar.gz"

struct imagenet_summary {
	uint32_t classes;
	uint64_t train, val;     /* samples served */
	int val_labelled;        /* the devkit gave val labels */
	int words;               /* the devkit gave class words */
	uint64_t nshards[2];     /* train, val */
};

/* Fills *s if `l` is an open ImageNet layout: 0, or -EINVAL if it is not. */
int layout_imagenet_summary(const struct layout *l, struct imagenet_summary *s);

/* The source tars in use: train tar(s) then the val tar.  Paths are owned
 * by the layout.  Returns the count (<= max). */
size_t layout_imagenet_sources(const struct layout *l, const char **paths,
			       size_t max);

#endif
