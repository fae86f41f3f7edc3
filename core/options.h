/*
 * options.h - the samplefs options that core/ understands.
 *
 * The FUSE layer (fs/opts.c) parses `-o key=value` into this struct; layouts
 * read it.  It is filled once before mounting and read-only afterwards, so
 * threads may share it without locks.  Not for FUSE options (allow_other, ...),
 * which never reach core/.
 */
#ifndef SFS_OPTIONS_H
#define SFS_OPTIONS_H

#include <stdint.h>
#include <stddef.h>

#include "io/source.h"

struct sfs_opts {
	const char *source;      /* SOURCE as given, made absolute */
	const char *layout;      /* "quickdraw" | "npy" | "tar" | "imagenet" | NULL = detect */
	const char *index_dir;   /* NULL = $XDG_CACHE_HOME/samplefs or ~/.cache/samplefs */
	const char *index;       /* -o index=PATH|URL: a prebuilt index (index/prebuilt.h) */
	int      index_only;     /* -o index_only: never build an index, fail instead */
	int      quiet;          /* no progress bar */

	/* quickdraw */
	const char *classes_file;/* -o classes=FILE */
	const char *images_dir;  /* -o images=DIR: <class>.npy here, not in
				  * SOURCE/numpy_bitmap (NULL: there) */
	const char *strokes_dir; /* -o strokes=DIR: <class>.npz, likewise */
	uint64_t per_class;      /* -o per_class=N, 0 = unlimited */
	int      image_uint8;    /* -o image=uint8 (default float32) */
	uint32_t stroke_len;     /* -o stroke_len=N (default 130) */
	uint32_t seed;           /* -o seed=N (default 42) */
	uint32_t split[3];       /* -o split=80/10/10 (percent) */

	/* tar / imagenet */
	uint32_t recursive;      /* -o recursive=N: expand nested tars N levels (default 1) */
	int      checksums;      /* -o checksums: the tar index keeps every member's
				  * CRC32C, and reads check them (tarindex.h) */
	uint64_t shard_size;     /* -o shard_size=S (default 10000) */
	int      has_shard_seed; /* -o shard_seed=N given */
	uint32_t shard_seed;
	uint32_t shuffle_seed;   /* -o shuffle_seed=N (default 0) */
	uint64_t shard_prefetch; /* -o shard_prefetch=SIZE: bytes read ahead of a
				  * streamed shard's reader (default 32 MiB, 0 = off) */

	/* the mount's cache memory, cache_mem= (remote.cache_bytes: every
	 * cache of the mount shares it); remote sources (http, https):
	 * timeout=, retries=, cacert=, insecure, cache_dir=, cache_dir_size=;
	 * and compressed sources, local or remote: span= (core/io/codecs/zsource.h) */
	struct source_config remote;
};

/* Fills defaults; every field not named above is zero/NULL. */
void sfs_opts_default(struct sfs_opts *o);

/* Parses "12", "64k", "32M", "1G" (powers of 1024).  0 or -EINVAL. */
int sfs_parse_size(const char *s, uint64_t *out);

#endif
