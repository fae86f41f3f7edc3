/*
 * arcwalk.h - walking the members of cpio archives (every variant
 * libarchive reads: odc, newc, crc, binary), ar archives and ISO 9660
 * images (with Rock Ridge and Joliet names) through libarchive, reporting
 * each as the tar walk does (struct tar_member), with the offset of its
 * data in the source: their members are stored, so layout=tar reads them
 * in place, one source_pread per read, no copy.
 *
 * Each file member's offset is where libarchive's reader stands when it
 * is about to read the data (archive_filter_bytes), checked against the
 * bytes libarchive gives for its first 64 KiB; a member whose bytes are
 * not there as they are (a zisofs-compressed file of an ISO image) is
 * skipped with a warning naming it.  Names follow the tar rules
 * (tar_normalise: a name that leaves the root is skipped, warned).
 * Hard links that carry the data (cpio: newc with the last name, odc with
 * every name) are reported as the file, then their other names as hard
 * links to it, so every name is the one file bsdtar -x makes.
 * Devices, FIFOs and sockets are skipped.  Damage (a bad header, a
 * truncated archive) ends the walk: the members before it are reported.
 *
 * Not for: compressed or solid archives (7-Zip, RAR, compressed cpio:
 * io/codecs/arxsource.h makes tars of them), tars, zips.
 */
#ifndef SFS_ARCWALK_H
#define SFS_ARCWALK_H

#include "formats/tar.h"

struct source;

/* Bytes of each member's data checked against libarchive's (above). */
#define ARC_CHECK (64u << 10)

/* 1 if src starts as a cpio or ar archive or is an ISO 9660 image (and is
 * not a tar), 0 if not, -errno. */
int arc_sniff(struct source *src);

/*
 * Walks src (`what` names it in messages): fn for each member, in archive
 * order.  0; -EBADMSG when damage ended the walk (said, naming the offset
 * and libarchive's words; the members before were reported); -EINVAL
 * when not even the first member could be read (said); -errno; or fn's
 * nonzero return.
 */
int arc_walk(struct source *src, const char *what, tar_member_fn fn, void *arg);

#endif
