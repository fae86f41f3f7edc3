/*
 * zip_cd.c - what every reader of zips here shares: the end records (the
 * last end-of-central-directory record, the zip64 locator and end
 * record), the zip64 extra field, and an exact read.  zip.c (the .npz
 * reader, whole directory in memory) and zipwalk.c (the archive walk of
 * layout=tar, the directory streamed) both start here.
 *
 * Not for: central directory entries (each reader keeps what it needs),
 * member data (zip.c, zipread.c).
 */
#include "formats/zip_int.h"
#include "io/source.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int zip_pread_full(struct source *src, void *buf, size_t n, uint64_t off)
{
	ssize_t r = source_pread(src, buf, n, off);

	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -EIO;
}

/* The last end record whose comment fits in the file. */
static int find_eocd(const struct zip_file *za, uint64_t *eocd_off, uint8_t rec[EOCD_LEN])
{
	size_t tail = za->size < EOCD_LEN + COMMENT_MAX ?
		      (size_t)za->size : EOCD_LEN + COMMENT_MAX;
	uint8_t *buf = malloc(tail);
	size_t i;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = zip_pread_full(za->src, buf, tail, za->size - tail);
	if (rc)
		goto out;
	rc = -EINVAL;
	for (i = tail - EOCD_LEN + 1; i-- > 0;) {
		if (le32(buf + i) == SIG_EOCD &&
		    i + EOCD_LEN + le16(buf + i + 20) <= tail) {
			*eocd_off = za->size - tail + i;
			memcpy(rec, buf + i, EOCD_LEN);
			rc = 0;
			break;
		}
	}
	if (rc)
		sfs_err("%s: no zip end-of-central-directory record in the last %zu bytes",
			za->path, tail);
out:
	free(buf);
	return rc;
}

/* Reads the zip64 end record through the locator just before the end
 * record at eocd_off. */
static int read_eocd64(const struct zip_file *za, uint64_t eocd_off, struct zip_cd_loc *loc)
{
	uint8_t lr[LOCATOR64_LEN], rec[EOCD64_LEN];
	uint64_t off;
	int rc;

	if (eocd_off < LOCATOR64_LEN + EOCD64_LEN)
		goto bad;
	rc = zip_pread_full(za->src, lr, sizeof(lr), eocd_off - LOCATOR64_LEN);
	if (rc)
		return rc;
	if (le32(lr) != SIG_LOCATOR64)
		goto bad;
	off = le64(lr + 8);
	if (le32(lr + 4) != 0 || le32(lr + 16) > 1 ||
	    off > eocd_off - LOCATOR64_LEN - EOCD64_LEN)
		goto bad;
	rc = zip_pread_full(za->src, rec, sizeof(rec), off);
	if (rc)
		return rc;
	if (le32(rec) != SIG_EOCD64 || le32(rec + 16) != 0 || le32(rec + 20) != 0 ||
	    le64(rec + 24) != le64(rec + 32))
		goto bad;
	loc->count = le64(rec + 32);
	loc->size = le64(rec + 40);
	loc->off = le64(rec + 48);
	loc->end = off;
	return 0;
bad:
	sfs_err("%s: offset %llu: bad zip64 end record or locator (or a multi-disk archive)",
		za->path, (unsigned long long)eocd_off);
	return -EINVAL;
}

int zip_locate_cd(const struct zip_file *za, struct zip_cd_loc *loc)
{
	uint8_t rec[EOCD_LEN];
	uint64_t eocd_off;
	int rc;

	if (za->size < EOCD_LEN) {
		sfs_err("%s: %llu bytes is too short for a zip archive", za->path,
			(unsigned long long)za->size);
		return -EINVAL;
	}
	rc = find_eocd(za, &eocd_off, rec);

	if (rc)
		return rc;
	loc->count = le16(rec + 10);
	loc->size = le32(rec + 12);
	loc->off = le32(rec + 16);
	loc->end = eocd_off;
	if (eocd_off >= LOCATOR64_LEN) {
		uint8_t sig[4];

		rc = zip_pread_full(za->src, sig, 4, eocd_off - LOCATOR64_LEN);
		if (rc)
			return rc;
		if (le32(sig) == SIG_LOCATOR64)
			return read_eocd64(za, eocd_off, loc);
	}
	if (le16(rec + 4) != 0 || le16(rec + 6) != 0 || le16(rec + 8) != loc->count)
		goto bad;
	if (loc->count == 0xffff || loc->size == 0xffffffff || loc->off == 0xffffffff)
		goto bad;       /* saturated fields need a zip64 record */
	return 0;
bad:
	sfs_err("%s: offset %llu: zip end record is multi-disk or needs a missing zip64 record",
		za->path, (unsigned long long)eocd_off);
	return -EINVAL;
}


/* Replaces saturated 32-bit fields from a zip64 extra field (id 1), in
 * the order the format gives: usize, csize, header offset. */
int zip_apply_zip64(uint64_t *usize, uint64_t *csize, uint64_t *header_off,
		    const uint8_t *ex, size_t exlen)
{
	uint64_t *want[3] = { usize, csize, header_off };
	size_t i, pos;

	while (exlen >= 4) {
		uint16_t id = le16(ex), len = le16(ex + 2);

		if ((size_t)len + 4 > exlen)
			return -1;
		if (id == 1) {
			for (i = 0, pos = 4; i < 3; i++) {
				if (*want[i] != 0xffffffff)
					continue;
				if (pos + 8 > (size_t)len + 4)
					return -1;
				*want[i] = le64(ex + pos);
				pos += 8;
			}
		}
		ex += len + 4;
		exlen -= (size_t)len + 4;
	}
	return (*usize == 0xffffffff || *csize == 0xffffffff ||
		*header_off == 0xffffffff) ? -1 : 0;
}

