/*
 * slice.h - a source made of a range of another source: the bytes of one
 * member of an archive, read through the archive's own source_pread (its
 * caches, its change check), so that a compressed member (a
 * "shard.tar.gz" inside a tar) can be opened as its uncompressed bytes
 * like a compressed file (zsource.h) and the tar index can walk it.
 *
 * A slice is named by the caller (source_name gives it back, messages
 * and the stored access-point tables use it): tarindex names it after the
 * archive, the member's offset and its path, so a table is kept per
 * archive version, offset and member, and a warning names all three.
 * Its stamp is the parent's, with the slice's size, and the parent's
 * size and ETag folded into the ETag (a table is never taken for another
 * version of the archive).  It reads as remote (no descriptor to splice,
 * and zsource goes by its name's suffix before reading a byte).
 *
 * Threads: as any source; a slice holds no mutable state of its own.
 * The parent must outlive the slice (and what wraps it); a change of the
 * parent is a change of the slice.
 *
 * Not for: ranges of a source that are not read as a source of their own
 * (tar members are read in place, tarindex_pread).
 */
#ifndef SFS_IO_SLICE_H
#define SFS_IO_SLICE_H

#include <stdint.h>

#include "io/source.h"

/*
 * Opens bytes [off, off + len) of parent as a source named `name`, read
 * as its uncompressed bytes when they are a compressed stream and the
 * name ends in a compressed suffix (as source_open does for a URL:
 * zsource.h, whose first pass over the range may make this slow, or
 * whose stored table makes it instant).  0, -EINVAL for a range past the
 * parent's end, -ENOMEM, or what decompressing gave (-EFBIG, -EIO: said).
 */
int source_open_slice(struct source *parent, uint64_t off, uint64_t len,
		      const char *name, struct source **out);

/*
 * The same slice as its raw bytes, never decompressed: for a caller that
 * knows what they are (a zip member's deflate data, zsource_wrap_deflate).
 * 0, -EINVAL for a range past the parent's end, -ENOMEM.
 */
int source_open_range(struct source *parent, uint64_t off, uint64_t len,
		      const char *name, struct source **out);

#endif
