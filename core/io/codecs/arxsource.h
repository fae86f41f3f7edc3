/*
 * arxsource.h - archives read through libarchive and decompressed once
 * (7-Zip, RAR, and archives compressed with compress, lz4, lzip,
 * lzma-alone or lzop): a source of a plain tar rendition of their
 * members, made by a pass in a thread into a spill file (arxsource.c).
 * Private to core/io: above it they are tars (source.h).
 *
 * Not for: cpio, ar and ISO 9660 images, whose members are read in place
 * (formats/arcwalk.h); tars and zips; gzip, xz, zstd, bzip2 (zsource.h).
 */
#ifndef SFS_IO_ARXSOURCE_H
#define SFS_IO_ARXSOURCE_H

#include <stddef.h>

#include "io/source.h"

/* What the first n bytes say the file is ("a 7-Zip archive", "compressed
 * with lz4"...), when it is one of arxsource's; else NULL. */
const char *arxsource_kind(const unsigned char *h, size_t n);

/*
 * After a backend opened `in` (and it is not one zsource decompresses):
 * *out = in when it is not one of arxsource's, else a new source of its
 * tar rendition that owns in, whose pass has started.  0, or -errno with
 * in closed (said: libarchive cannot open it, no spill file).
 */
int arxsource_wrap(struct source *in, struct source **out);

#endif
