/*
 * diskcache.h - the optional on-disk cache of remote blocks (-o cache_dir=,
 * -o cache_dir_size=): one file per block of a URL, each checked against the
 * source's stamp (size, mtime, ETag) and a CRC when read, so a changed
 * source or a torn file never serves old bytes, and blocks survive remounts.
 *
 * Bounded: when the files' total passes the bound, the least recently used
 * (by mtime, which a hit refreshes) are removed until 90% of it is left.
 * Several mounts may share a directory (files are renamed into place); each
 * counts only what it saw, so the bound then holds only roughly.
 *
 * Private to core/io.  Not for: the memory cache (http.c) or index files.
 */
#ifndef SFS_IO_DISKCACHE_H
#define SFS_IO_DISKCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "io/source.h"

struct diskcache;

/* Creates dir when missing (not its parents).  0 or -errno, with a
 * message naming dir. */
int diskcache_open(const char *dir, uint64_t max_bytes, struct diskcache **out);
void diskcache_close(struct diskcache *dc);

/* Block `block` (len bytes) of url as of stamp st into buf: 1, or 0 when
 * absent, stale or damaged (then removed). */
int diskcache_get(struct diskcache *dc, const char *url,
		  const struct source_stamp *st, uint64_t block, void *buf,
		  size_t len);

/* Removes block `block` of url, if held: its bytes are not to be
 * believed (they failed a checksum kept above core/io). */
void diskcache_drop(struct diskcache *dc, const char *url, uint64_t block);

/* Stores it; best effort (a failure is warned about, rate-limited). */
void diskcache_put(struct diskcache *dc, const char *url,
		   const struct source_stamp *st, uint64_t block,
		   const void *data, size_t len);

#endif
