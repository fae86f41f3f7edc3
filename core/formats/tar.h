/*
 * tar.h - walking the headers of an uncompressed tar (v7, ustar, GNU, pax)
 * that lies at [base, base + len) of an open source, seeking over member
 * data.
 *
 * Each member is reported once, with its long name / pax records applied,
 * its path normalised (no leading '/', no "." or empty components, ".."
 * resolved lexically) and the absolute offset of its data in the file.
 * Sparse members (old GNU 'S' headers, pax GNU.sparse 0.0, 0.1 and 1.0)
 * are reported with their map.  Names that escape the root, are empty,
 * hold NUL bytes or components over 255 bytes, devices and fifos are
 * skipped with a warning; so is a member whose kept pax record (path,
 * linkpath, GNU.sparse.*) or GNU long name is over its limit, and the
 * walk goes on after it.  Other pax records are streamed past, never held,
 * whatever their size.  Unknown type flags are regular files (warned), as
 * GNU tar extracts them; GNU dumpdirs ('D') are directories.
 *
 * Not for: compressed tars, building trees (tarindex_build.c), writing tars.
 */
#ifndef SFS_TAR_H
#define SFS_TAR_H

#include <stdint.h>
#include <stddef.h>

#include "formats/tar_block.h"

struct source;

/* Called once per member; nonzero stops the walk and is returned. */
typedef int (*tar_member_fn)(void *arg, const struct tar_member *m);

/*
 * Walks the tar at [base, base + len) of src (io/source.h).  `what` names it in messages
 * (e.g. "a.tar" or "a.tar:b.tar").  Returns 0 at the end of the archive
 * (two zero blocks or the end of the range), -EBADMSG when the archive is
 * damaged after at least one header (bad checksum, truncated member or
 * padding, bad field, a file shorter than the range: members before it have
 * been reported; a warning naming the offset is printed),
 * -EINVAL when the first header is not a tar header (a range that starts
 * with a zero block, or an empty range, is an empty archive: 0, as for
 * bsdtar), -errno on I/O error, or the callback's nonzero return.  A
 * header whose checksum fails is read again past the caches
 * (source_refetch) before it is believed, when the source's bytes travel
 * a network: a byte may change on its way.
 */
int tar_walk(struct source *src, uint64_t base, uint64_t len, const char *what,
	     tar_member_fn fn, void *arg);
/* As len: to the source's end, wherever it turns out to be (a source
 * whose size is found while it is read: source_extent, io/source.h); the
 * walk then waits for the bytes each check needs, and reads no further. */
#define TAR_TO_END UINT64_MAX

/* 1 if the 512 bytes at `hdr` are a tar header with a valid checksum. */
int tar_header_ok(const unsigned char *hdr);

/*
 * Normalises the '/'-separated path in place (see above).  0; -ENOENT if
 * it is empty after normalising ("", "/", "./"); -EINVAL if it escapes the
 * root or has a component longer than 255 bytes.
 */
int tar_normalise(char *path);

/*
 * The suffix a tar archive's name ends in, plain or compressed (".tar",
 * ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".tar.bz2",
 * ".tbz2"), when something comes before it: the table's own string, or
 * NULL.  The one list of archive names: shards of a directory, nested
 * archives, ImageNet's class tars.
 */
const char *tar_archive_suffix(const char *name);
#define TAR_SUFFIX_MAX 8        /* the longest: ".tar.bz2" */
/* The table's i-th suffix (".tar" is the 0th), NULL past its end: for
 * callers that look for "<base><suffix>" by name. */
const char *tar_archive_suffix_nth(size_t i);
/* 1 if suffix (one tar_archive_suffix gave) is a compressed tar's. */
int tar_suffix_compressed(const char *suffix);

#endif
