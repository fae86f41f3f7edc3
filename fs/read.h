/*
 * read.h - the FUSE READ request of samplefs (read.c): a file's bytes
 * from the mounted layout, spliced where they are ranges of a source's
 * descriptor, else copied; the reads that would wait queued for workers.
 */
#ifndef SFS_FS_READ_H
#define SFS_FS_READ_H

#include "ops.h"

/* The read op of sfs_ll_ops (ops.c): replies to req, always. */
void sfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	      struct fuse_file_info *fi);

#endif
