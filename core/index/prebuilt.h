/*
 * prebuilt.h - a prebuilt index: every index file one mount needs (a
 * layout may have more than one: ImageNet has two) in one file, built once
 * (samplefs-inspect --save-index=FILE, e.g. on a login node) and given to
 * any number of mounts with -o index=PATH|URL.
 *
 * The file is itself an index file (index.h) with a fixed fingerprint, so
 * mapping it checks its format version and table, and a member's blocks'
 * crc32s are checked as it is taken out (index_map_section).
 * Its sections: 'PNAM', the members' file names, each NUL-terminated, in
 * order; then member i in section INDEX_TAG('P','F', i & 255, i >> 8): a
 * whole index file, as saved in an index directory under that name.  A
 * member is checked again when its mount maps it (index_load): its own
 * checksums (its blocks as they are used), version and fingerprint (the
 * sources' stamps, the options).
 *
 * Not for: deciding when to use one (load.c does), nor how a bucket is
 * written or read (core/io: source_upload, source_pread).
 */
#ifndef SFS_INDEX_PREBUILT_H
#define SFS_INDEX_PREBUILT_H

#include "options.h"

/*
 * Writes every "*.sfsidx" index file of directory `dir` (that of one
 * source's build: the caller's own) into the prebuilt index `out`, through
 * a temporary file and a rename.  0 or -errno (said).
 */
int index_prebuilt_save(const char *dir, const char *out);

/*
 * As index_prebuilt_save, then uploads the file to `url` (s3://BUCKET/KEY
 * or gs://..., with o's endpoint, region and credentials: source_upload)
 * and removes the local copy, written in `dir` meanwhile.  0 or -errno
 * (said, naming the URL and what the store answered).
 */
int index_prebuilt_upload(const struct sfs_opts *o, const char *dir, const char *url);

/*
 * Fetches o->index (a path or a URL, read through core/io), checks it and
 * writes each member into `dir` (an index directory) under its name; a
 * member equal to the file already there is left as it is.  A URL is
 * downloaded into dir first (removed once its members are out).
 * 0; -ENOENT when there is no such file; -EBADMSG when it is not a
 * prebuilt index or fails its checks; another -errno.  Each failure is
 * said as a warning naming o->index (the mount may build instead).
 * each (may be NULL) is called with each member's name once it is in dir.
 */
int index_prebuilt_fetch(const struct sfs_opts *o, const char *dir,
			 void (*each)(void *arg, const char *name), void *arg);

#endif
