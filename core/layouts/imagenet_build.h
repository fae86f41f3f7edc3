/*
 * imagenet_build.h - building the ImageNet layout index: reads the devkit,
 * lists each split's samples in canonical order (class, then name),
 * derives the orders once to compute the sparse vtar and shuffled.txt
 * offsets, and writes the sections imagenet_index.c binds.  Runs when the
 * sources, the devkit or the shard options changed (index_load, called
 * by imagenet_open_layout_index here).
 *
 * Not for: the tar index (imagenet_tars.h), binding (imagenet_index.h).
 */
#ifndef SFS_IMAGENET_BUILD_H
#define SFS_IMAGENET_BUILD_H

#include "index/index.h"
#include "layouts/imagenet_index.h"
#include "options.h"

/* Writes the layout index of L (its tarindexes open) into w.  0 or -errno
 * (said).  L's views are left as they were (none). */
int imagenet_build_layout(const struct sfs_opts *o, struct in_layout *L,
			  struct index_writer *w);

/* Loads the layout index (building it when missing or stale: index_load)
 * and binds L to it (imagenet_bind_layout).  The tar index must be open
 * (imagenet_tars.h).  0 or -errno. */
int imagenet_open_layout_index(const struct sfs_opts *o, struct in_layout *L,
			       uint64_t tars_fp);

#endif
