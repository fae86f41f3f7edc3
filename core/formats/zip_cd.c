/*
 * zip_cd.c - what every reader of zips here shares: the end records (the
 * last end-of-central-directory record, the zip64 locator and end
 * record), the zip64 extra field, and an exact read.  zip.c (the .npz
 * reader, whole directory in memory) and zipwalk.c (the archive walk of
 * layout=tar, the directory streamed) both start here.
 *
 * Bytes before the zip (a self-extracting stub, padding, a zip appended
 * to another file) are found as zipfile and unzip find them: the end
 * record says how long the directory is, so it ends where the end record
 * (or the zip64 one) starts; when the offset the record gives is short of
 * that, the difference is the shift every offset in the zip needs.
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

/* Errors are said unless the caller only asks whether this is a zip. */
#define cd_err(za, ...) do { if (!(za)->quiet) sfs_err(__VA_ARGS__); } while (0)

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
		cd_err(za, "%s: no zip end-of-central-directory record in the last %zu bytes",
		       za->path, tail);
out:
	free(buf);
	return rc;
}

/* Reads the zip64 end record through the locator just before the end
 * record at eocd_off: where the locator says, or, when bytes before the
 * zip shifted it, right before the locator (where zipfile looks). */
static int read_eocd64(const struct zip_file *za, uint64_t eocd_off, struct zip_cd_loc *loc)
{
	uint8_t lr[LOCATOR64_LEN], rec[EOCD64_LEN];
	uint64_t off, near;
	int rc;

	if (eocd_off < LOCATOR64_LEN + EOCD64_LEN)
		goto bad;
	near = eocd_off - LOCATOR64_LEN - EOCD64_LEN;
	rc = zip_pread_full(za->src, lr, sizeof(lr), eocd_off - LOCATOR64_LEN);
	if (rc)
		return rc;
	if (le32(lr) != SIG_LOCATOR64)
		goto bad;
	off = le64(lr + 8);
	if (le32(lr + 4) != 0 || le32(lr + 16) > 1 || off > near)
		goto bad;
	rc = zip_pread_full(za->src, rec, sizeof(rec), off);
	if (rc == 0 && le32(rec) != SIG_EOCD64 && off != near) {
		off = near;
		rc = zip_pread_full(za->src, rec, sizeof(rec), off);
	}
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
	cd_err(za, "%s: offset %llu: bad zip64 end record or locator (or a multi-disk archive)",
	       za->path, (unsigned long long)eocd_off);
	return -EINVAL;
}

/*
 * Bytes before the zip: the directory ends where loc->end is; when the
 * end record puts it earlier and no central entry is there but one is
 * where it should end, every offset is short by the difference
 * (loc->shift, added to loc->off here and to each header offset by the
 * readers).  0 or -errno.
 */
static int find_shift(const struct zip_file *za, struct zip_cd_loc *loc)
{
	uint64_t at;
	uint8_t sig[4];
	int rc;

	loc->shift = 0;
	if (loc->size > loc->end || loc->off >= loc->end - loc->size)
		return 0;
	at = loc->end - loc->size;
	if (loc->count) {
		if ((rc = zip_pread_full(za->src, sig, 4, loc->off)) < 0)
			return rc;
		if (le32(sig) == SIG_CENTRAL)
			return 0;	/* bytes between the directory and the end */
		if ((rc = zip_pread_full(za->src, sig, 4, at)) < 0)
			return rc;
		if (le32(sig) != SIG_CENTRAL)
			return 0;	/* said by the reader: no entry at loc->off */
	}
	loc->shift = at - loc->off;
	loc->off = at;
	if (!za->quiet)
		sfs_info("%s: %llu bytes before the zip (a self-extracting or appended "
			 "zip): its offsets are read %llu bytes further on", za->path,
			 (unsigned long long)loc->shift, (unsigned long long)loc->shift);
	return 0;
}

int zip_locate_cd(const struct zip_file *za, struct zip_cd_loc *loc)
{
	uint8_t rec[EOCD_LEN];
	uint64_t eocd_off;
	int rc;

	if (za->size < EOCD_LEN) {
		cd_err(za, "%s: %llu bytes is too short for a zip archive", za->path,
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
			return (rc = read_eocd64(za, eocd_off, loc)) ? rc :
			       find_shift(za, loc);
	}
	if (le16(rec + 4) != 0 || le16(rec + 6) != 0 || le16(rec + 8) != loc->count)
		goto bad;
	if (loc->count == 0xffff || loc->size == 0xffffffff || loc->off == 0xffffffff)
		goto bad;       /* saturated fields need a zip64 record */
	return find_shift(za, loc);
bad:
	cd_err(za, "%s: offset %llu: zip end record is multi-disk or needs a missing zip64 record",
	       za->path, (unsigned long long)eocd_off);
	return -EINVAL;
}


enum zip_cd_bad zip_cd_entry(const uint8_t *e, size_t avail, uint64_t shift,
			     struct zip_cd_entry *out, size_t *need)
{
	*need = CENTRAL_LEN;
	if (avail < CENTRAL_LEN || le32(e) != SIG_CENTRAL)
		return ZIP_CD_NOT_ENTRY;
	out->nlen = le16(e + 28);
	out->xlen = le16(e + 30);
	out->len = CENTRAL_LEN + out->nlen + out->xlen + le16(e + 32);
	*need = out->len;
	if (avail < out->len)
		return ZIP_CD_NOT_ENTRY;
	out->name = e + CENTRAL_LEN;
	out->extra = out->name + out->nlen;
	out->host = e[5];
	out->flags = le16(e + 8);
	out->method = le16(e + 10);
	out->dos_time = le16(e + 12);
	out->dos_date = le16(e + 14);
	out->crc32 = le32(e + 16);
	out->csize = le32(e + 20);
	out->usize = le32(e + 24);
	out->ext_attr = le32(e + 38);
	out->header = le32(e + 42);
	if (zip_apply_zip64(&out->usize, &out->csize, &out->header, out->extra,
			    out->xlen))
		return ZIP_CD_ZIP64;
	if (out->header > UINT64_MAX - shift)
		return ZIP_CD_SHIFT;
	out->header += shift;
	return ZIP_CD_OK;
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

