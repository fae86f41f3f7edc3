/*
 * zipwalk.h - walking the members of a zip archive for layout=tar: the
 * central directory streamed entry by entry (any number of members, zip64
 * end records and extra fields), each member's local header checked and
 * its data located.  Sizes and CRC come from the central directory, so
 * data descriptors (flag bit 3) need nothing more.
 *
 * Names as `unzip` extracts them: UTF-8 when flag bit 11 says so; from
 * MS-DOS, OS/2 and NTFS hosts, CP437 decoded to UTF-8 (unzip writes
 * ISO-8859-1 bytes there, which no UTF-8 system can show; Python's zipfile
 * and bsdtar give these UTF-8 names); others as stored.  Then the tar rules
 * (tar_normalise): leading '/' dropped, "." dropped, ".." resolved, a name
 * that escapes the root, is empty or has a component over 255 bytes is
 * skipped with a warning, as is a member whose local header is missing,
 * does not match, or whose data runs into the central directory.
 *
 * Stored members: when the central directory's and the local header's
 * sizes disagree, the size whose bytes match the CRC-32 is kept (said);
 * when none does, the member is listed and its reads fail.  Bytes before
 * the zip shift every offset (zip_int.h), as zipfile and unzip read it.
 *
 * Not for: reading member data (zipread.h), .npz (zip.h), writing,
 * encryption (reported; its reads fail), multi-disk zips.
 */
#ifndef SFS_ZIPWALK_H
#define SFS_ZIPWALK_H

#include <stdint.h>

#include "formats/tar.h"
#include "formats/zipread.h"

struct source;

struct zip_entry {
	const char *path;     /* normalised as tar.h's, never empty */
	const char *link;     /* a symlink's target, else "" */
	enum tar_type type;   /* TAR_FILE, TAR_DIR or TAR_SYMLINK */
	uint32_t mode;        /* permission bits (Unix hosts), else 0644/0755 */
	int64_t mtime;        /* the UT extra field's, else the DOS time (local) */
	uint64_t header;      /* offset of the local header */
	struct zip_data data; /* data.name is path */
};

/* Called once per member, in central directory order; nonzero stops the
 * walk and is returned. */
typedef int (*zip_entry_fn)(void *arg, const struct zip_entry *e);

/* 1 if the source is a zip: it starts like one (a local header, or the
 * end record of an empty zip), or, not starting as a tar does and not
 * decompressed, its end records lead to its central directory (bytes
 * before the zip: self-extracting, padded or appended zips); 0 if not,
 * -errno. */
int zip_sniff(struct source *src);

/*
 * Walks the zip src (io/source.h), `what` naming it in messages.  0;
 * -EINVAL with a message naming the offset when the end records or the
 * central directory are bad or truncated (members before the damage have
 * been reported); -errno; or the callback's nonzero return.
 */
int zip_walk(struct source *src, const char *what, zip_entry_fn fn, void *arg);

#endif
