/*
 * layout_imagenet.h - what the ImageNet layout tells tools beyond the FUSE
 * contract (layout.h declares layout_imagenet_open).  What SOURCE must
 * hold, and its detection: imagenet_files.h.
 */
#ifndef SFS_LAYOUT_IMAGENET_H
#define SFS_LAYOUT_IMAGENET_H

#include <stdint.h>

#include "layouts/layout.h"

struct imagenet_summary {
	uint32_t classes;
	uint64_t train, val;     /* samples served */
	int val_labelled;        /* the devkit gave val labels */
	int words;               /* the devkit gave class words */
	uint64_t nshards[2];     /* train, val */
};

/* Fills *s if `l` is an open ImageNet layout: 0, or -EINVAL if it is not. */
int layout_imagenet_summary(const struct layout *l, struct imagenet_summary *s);

#endif
