/*
 * zstore.h - keeps the access-point tables of compressed sources
 * (core/io/codecs/zsource.h) as index files of their own, next to the layouts'
 * indexes: one per compressed file, <index_dir>/gz-<hash>.sfsidx, mapped
 * in place at later mounts, fingerprinted by the compressed file's name
 * and stamp and the span, and checksummed like every index (index.h).  A
 * layout's index then depends on the uncompressed bytes only through the
 * source's stamp.
 *
 * Keys: the file is index_path(o, "gz", NAME), NAME the source's name as
 * opened (a path, a URL, or a derived source's name, e.g. a compressed
 * tar nested in another: any name unique within the mount will do), so
 * the same mount on another machine looks for the same file.  A table
 * goes into a prebuilt index with the layouts' files (prebuilt.h, every
 * "*.sfsidx" of the build's directory), and a mount given -o index= takes
 * it from there before any pass, through index_load, the one "map, fetch
 * or build" path: no byte of the compressed file is read to start.
 *
 * Sections of a table's file: 'ZPTS', the blob as zsource made it;
 * 'ZKEY', what it was made for in the clear (struct below), so that a
 * refused table says what differs (the fingerprint is only a hash).
 *
 * With -o index_only a source with no table that fits fails to open
 * (-EPERM, the message naming it), rather than being read through.
 *
 * Not for: what a table holds (zsource.c checks it again when it loads).
 */
#ifndef SFS_INDEX_ZSTORE_H
#define SFS_INDEX_ZSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"

struct source_env;
struct source_stamp;

/* Makes env's compressed sources keep their tables under o's index
 * directory.  o must outlive env.  Before env opens anything. */
void index_zstore_attach(struct source_env *env, const struct sfs_opts *o);

/*
 * 'ZKEY', version 1: this, then the source's name and its NUL (name_len
 * bytes before the NUL).  Native byte order, as index files are.
 */
#define ZKEY_VERSION 1u
struct zkey {
	uint32_t version;
	uint32_t name_len;
	uint64_t size;          /* the compressed source's stamp */
	int64_t mtime_ns;
	uint64_t generation;
	uint64_t span;
	char etag[128];
};

/*
 * Says in why (a phrase without the file's name, e.g. "made with span
 * 1048576, the mount's is 65536") how the key in the 'ZKEY' section
 * (sect, len bytes: untrusted) differs from name, st and span: 0; or
 * -EBADMSG when the section is not a key of this version (why then says
 * nothing).  For index_load's refusal messages, and the fuzz target.
 */
int index_zstore_explain(const void *sect, size_t len, const char *name,
			 const struct source_stamp *st, uint64_t span,
			 char *why, size_t whylen);

#endif
