/*
 * zip_int.h - the zip record layouts, the end-record reading and the one
 * parser of central directory entries that zip.c (.npz), zipwalk.c
 * (archives for layout=tar) and zipread.c (member data) share (zip_cd.c).  Private to core/formats/zip*.c; the contracts
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

/* One central directory entry, as both readers of the directory (zip.c,
 * zipwalk.c) take it: its fields, zip64 applied, its local header's
 * offset shifted by the bytes before the zip. */
struct zip_cd_entry {
	const uint8_t *name;      /* raw bytes in the entry, not terminated */
	size_t nlen;
	const uint8_t *extra;
	size_t xlen;
	size_t len;               /* the whole entry: fixed part, name,
				   * extra and comment */
	uint16_t flags, method, dos_time, dos_date;
	uint8_t host;             /* "version made by"'s high byte */
	uint32_t crc32;
	uint32_t ext_attr;        /* external attributes (Unix mode << 16) */
	uint64_t csize, usize, header;
};

/* How zip_cd_entry failed: the entry is unreadable where it is (a
 * reader of the directory stops), or just this one is wrong. */
enum zip_cd_bad {
	ZIP_CD_OK,
	ZIP_CD_NOT_ENTRY,   /* no central signature, or shorter than its lengths */
	ZIP_CD_ZIP64,       /* needs a zip64 extra field it lacks or truncates */
	ZIP_CD_SHIFT,       /* its local header offset plus the shift overflows */
};

/* Parses the entry at e, of which avail bytes are at hand (the caller
 * reads on when the entry's len is more than it read: NOT_ENTRY with
 * *need set then).  The one parser of central entries. */
enum zip_cd_bad zip_cd_entry(const uint8_t *e, size_t avail, uint64_t shift,
			     struct zip_cd_entry *out, size_t *need);

#endif
