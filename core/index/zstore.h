/*
 * zstore.h - keeps the access-point tables of compressed sources
 * (core/io/zsource.h) as index files of their own, next to the layouts'
 * indexes: one per compressed file, <index_dir>/gz-<hash>.sfsidx, with one
 * section (the table, mapped in place at later mounts), fingerprinted by
 * the compressed file's name and stamp and the span, and checksummed like
 * every index (index.h).  A layout's index then depends on the
 * uncompressed bytes only through the source's stamp.
 *
 * Not for: what a table holds (zsource.c checks it again when it loads).
 */
#ifndef SFS_INDEX_ZSTORE_H
#define SFS_INDEX_ZSTORE_H

#include "options.h"

struct source_env;

/* Makes env's compressed sources keep their tables under o's index
 * directory.  o must outlive env.  Before env opens anything. */
void index_zstore_attach(struct source_env *env, const struct sfs_opts *o);

#endif
