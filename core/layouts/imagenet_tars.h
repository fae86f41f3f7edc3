/*
 * imagenet_tars.h - the ImageNet layout's tar index: one index file
 * ("imagenet", key "tars") holding a tarindex of each split's sources
 * (sections 'T' train, 'V' val), expensive to build and independent of the
 * shard options, so it is kept apart from the layout index.
 *
 * Not for: the layout index (imagenet_build.h, imagenet_index.h).
 */
#ifndef SFS_IMAGENET_TARS_H
#define SFS_IMAGENET_TARS_H

#include <stdint.h>

#include "layouts/imagenet_index.h"
#include "options.h"

/* Loads the tar index of L's (open) sources, building it when missing or
 * stale (index_load), and opens each split's tarindex; *fph gets the
 * fingerprint the layout index is keyed by.  0 or -errno (said). */
int imagenet_open_tars(const struct sfs_opts *o, struct in_layout *L, uint64_t *fph);

#endif
