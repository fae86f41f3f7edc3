/*
 * zip_int.h - the zip record layouts and the end-record reading that
 * zip.c (.npz), zipwalk.c (archives for layout=tar) and zipread.c (member
 * data) share (zip_cd.c).  Private to core/formats/zip*.c; the contracts
 * are zip.h, zipwalk.h and zipread.h.  Numbers are little-endian on disk
 * (APPNOTE.TXT 4.3).
 */
#ifndef SFS_ZIP_INT_H
#define SFS_ZIP_INT_H

#include <stdint.h>
#include <stddef.h>

#include "bytes.h"

struct source;

#define SIG_LOCAL     0x04034b50u
#define SIG_CENTRAL   0x02014b50u
#define SIG_EOCD      0x06054b50u
#define SIG_EOCD64    0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define EOCD_LEN      22
#define LOCATOR64_LEN 20
#define EOCD64_LEN    56
#define CENTRAL_LEN   46
#define LOCAL_LEN     30
#define COMMENT_MAX   65535
/* Deflate's best case is 258 bytes from 2 bits (zlib's "1032:1"), and
 * every stream has a block header besides: a member that declares more
 * than 1032 x its compressed size is a lie, refused before allocating. */
#define DEFLATE_MAX_RATIO 1032u

/* A zip file being opened: its source, name for messages, and size. */
struct zip_file {
	struct source *src;
	const char *path;
	uint64_t size;
	int quiet;              /* only asking whether it is a zip: say nothing */
};

/* Where the central directory is, from the end records. */
struct zip_cd_loc {
	uint64_t count, size, off;
	uint64_t end;           /* where the directory must end */
	uint64_t shift;         /* bytes before the zip: add to every header
				 * offset the directory gives (off has it) */
};

/* Reads exactly n bytes at off; a short file is -EIO. */
int zip_pread_full(struct source *src, void *buf, size_t n, uint64_t off);
/* Finds the end record (and the zip64 one when there is a locator) and
 * any bytes before the zip (loc->shift): 0, or -EINVAL with a message
 * naming the file and offset (none when za->quiet), or -errno. */
int zip_locate_cd(const struct zip_file *za, struct zip_cd_loc *loc);
/* Replaces the saturated (0xffffffff) fields among the three from the
 * zip64 extra field (id 1) of the extra block ex[0..exlen): 0, or -1 when
 * one stays saturated or the block is malformed. */
int zip_apply_zip64(uint64_t *usize, uint64_t *csize, uint64_t *header_off,
		    const uint8_t *ex, size_t exlen);

#endif
