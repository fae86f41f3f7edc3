/*
 * zip.c - read members of a zip archive (the .npz container), see zip.h.
 *
 * zip_open reads the central directory once: the end record is searched in
 * the last 64 KiB + 22 bytes, zip64 end records and zip64 extra fields are
 * honoured, and every count and offset is checked against the file before
 * anything is allocated from it.  zip_read_member then trusts only the
 * central directory for sizes and CRC (so data descriptors need no special
 * case), reads the local header just to find where the data starts, and
 * has zipread.c read the data (bounded by the declared size, CRC-checked).
 *
 * After zip_open the archive is read-only: zip_read_member may run in many
 * threads at once (it reads the shared source with source_pread).  Not a general
 * zip library: no encryption, no multi-disk, no methods but stored and
 * deflate, no writing.
 */
#include "formats/zip.h"
#include "formats/zip_int.h"
#include "formats/zipread.h"
#include "io/source.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An .npz has a handful of members; a directory over 64 MiB is hostile. */
#define CD_MAX        (64u << 20)

struct zip_archive {
	struct source *src;     /* the caller's */
	const char *path;       /* its name, for messages */
	uint64_t size;
	uint64_t cd_off;        /* member data must end before this */
	uint64_t shift;         /* bytes before the zip (zip_int.h) */
	size_t count;
	struct zip_member *members;
	char *names;            /* the members' names, NUL-terminated */
};

/* ---- central directory ---------------------------------------------- */

/* Parses the entry at cd[*pos] (zip_cd_entry), stores its name at *names. */
static int parse_entry(struct zip_archive *za, const uint8_t *cd, size_t cdlen,
		       size_t *pos, struct zip_member *m, char **names,
		       uint64_t cd_off)
{
	struct zip_cd_entry e;
	uint64_t at = cd_off + *pos;
	size_t need;
	enum zip_cd_bad bad = zip_cd_entry(cd + *pos, cdlen - *pos, za->shift,
					   &e, &need);

	if (bad == ZIP_CD_NOT_ENTRY && need > CENTRAL_LEN) {
		sfs_err("%s: offset %llu: zip central entry runs past the directory",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	if (bad == ZIP_CD_NOT_ENTRY) {
		sfs_err("%s: offset %llu: expected a zip central directory entry",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	if (bad == ZIP_CD_OK && memchr(e.name, 0, e.nlen)) {
		sfs_err("%s: offset %llu: zip member name contains a NUL byte",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	if (bad == ZIP_CD_ZIP64) {
		sfs_err("%s: offset %llu: zip central entry needs a zip64 extra field it lacks or truncates",
			za->path, (unsigned long long)at);
		return -EINVAL;
	}
	if (bad == ZIP_CD_SHIFT || e.header > cd_off - LOCAL_LEN || e.csize > cd_off) {
		sfs_err("%s: offset %llu: zip member's local header (at %llu) or size (%llu) lies past the directory at %llu",
			za->path, (unsigned long long)at,
			(unsigned long long)e.header,
			(unsigned long long)e.csize, (unsigned long long)cd_off);
		return -EINVAL;
	}
	m->flags = e.flags;
	m->method = e.method;
	m->crc32 = e.crc32;
	m->csize = e.csize;
	m->usize = e.usize;
	m->header_off = e.header;
	memcpy(*names, e.name, e.nlen);
	(*names)[e.nlen] = '\0';
	m->name = *names;
	*names += e.nlen + 1;
	*pos += e.len;
	return 0;
}

static int read_cd(struct zip_archive *za, const struct zip_cd_loc *loc)
{
	uint8_t *cd = NULL;
	char *names;
	size_t pos = 0, i;
	int rc = -EINVAL;

	if (loc->off > loc->end || loc->size > loc->end - loc->off ||
	    loc->size > CD_MAX || loc->count > loc->size / CENTRAL_LEN ||
	    loc->off < LOCAL_LEN * loc->count) {
		sfs_err("%s: zip central directory of %llu entries, %llu bytes at offset %llu does not fit before offset %llu (or exceeds %u bytes)",
			za->path, (unsigned long long)loc->count,
			(unsigned long long)loc->size, (unsigned long long)loc->off,
			(unsigned long long)loc->end, CD_MAX);
		return -EINVAL;
	}
	za->shift = loc->shift;
	cd = malloc(loc->size ? loc->size : 1);
	za->members = calloc(loc->count ? loc->count : 1, sizeof(*za->members));
	/* names and their NULs fit in the directory's own size */
	za->names = malloc(loc->size + 1);
	if (!cd || !za->members || !za->names) {
		rc = -ENOMEM;
		goto out;
	}
	rc = zip_pread_full(za->src, cd, loc->size, loc->off);
	if (rc) {
		sfs_err("%s: offset %llu: cannot read the zip central directory",
			za->path, (unsigned long long)loc->off);
		goto out;
	}
	names = za->names;
	for (i = 0; i < loc->count; i++) {
		rc = parse_entry(za, cd, loc->size, &pos, &za->members[i],
				 &names, loc->off);
		if (rc)
			goto out;
	}
	za->count = loc->count;
	za->cd_off = loc->off;
out:
	free(cd);
	return rc;
}

int zip_open(struct zip_archive **zap, struct source *src)
{
	struct zip_archive *za;
	struct zip_cd_loc loc;
	struct zip_file zf;
	int rc;

	*zap = NULL;
	za = calloc(1, sizeof(*za));
	if (!za)
		return -ENOMEM;
	za->src = src;
	za->path = source_name(src);
	za->size = source_stamp(src)->size;
	if (za->size < EOCD_LEN) {
		sfs_err("%s: %llu bytes is too short for a zip archive", za->path,
			(unsigned long long)za->size);
		rc = -EINVAL;
		goto out;
	}
	zf = (struct zip_file){ za->src, za->path, za->size, 0 };
	rc = zip_locate_cd(&zf, &loc);
	if (rc == 0)
		rc = read_cd(za, &loc);
out:
	if (rc) {
		zip_close(za);
		return rc;
	}
	*zap = za;
	return 0;
}

void zip_close(struct zip_archive *za)
{
	if (!za)
		return;
	free(za->members);
	free(za->names);
	free(za);
}

size_t zip_count(const struct zip_archive *za)
{
	return za->count;
}

const struct zip_member *zip_member_at(const struct zip_archive *za, size_t i)
{
	return i < za->count ? &za->members[i] : NULL;
}

const struct zip_member *zip_find(const struct zip_archive *za, const char *name)
{
	size_t i;

	for (i = 0; i < za->count; i++)
		if (strcmp(za->members[i].name, name) == 0)
			return &za->members[i];
	return NULL;
}

/* ---- member data ---------------------------------------------------- */

/* Where m's data starts, from its local header (whose name must match). */
static int data_offset(struct zip_archive *za, const struct zip_member *m,
		       uint64_t *off)
{
	uint8_t lh[LOCAL_LEN];
	size_t nlen = strlen(m->name);
	char name[256];
	int rc = zip_pread_full(za->src, lh, sizeof(lh), m->header_off);

	if (rc == 0 && (le32(lh) != SIG_LOCAL || le16(lh + 26) != nlen))
		rc = -EIO;
	if (rc == 0 && nlen <= sizeof(name)) {
		rc = zip_pread_full(za->src, name, nlen, m->header_off + LOCAL_LEN);
		if (rc == 0 && memcmp(name, m->name, nlen) != 0)
			rc = -EIO;
	}
	*off = m->header_off + LOCAL_LEN + nlen + le16(lh + 28);
	if (rc == 0 && (*off > za->cd_off || m->csize > za->cd_off - *off))
		rc = -EIO;
	if (rc)
		sfs_err("%s: member %s: offset %llu: bad local header, or data running into the central directory",
			za->path, m->name, (unsigned long long)m->header_off);
	return rc ? -EIO : 0;
}

int zip_read_member(struct zip_archive *za, const struct zip_member *m,
		    uint64_t max, uint8_t **out, size_t *outlen)
{
	struct zip_data d = {
		.src = za->src, .path = za->path, .name = m->name, .csize = m->csize,
		.usize = m->usize, .crc32 = m->crc32, .method = m->method,
		.flags = m->flags,
	};
	int rc;

	*out = NULL;
	*outlen = 0;
	if (m->usize > max || m->usize > SIZE_MAX - 1) {
		sfs_err("%s: member %s declares %llu bytes, more than the limit of %llu",
			za->path, m->name, (unsigned long long)m->usize,
			(unsigned long long)max);
		return -EFBIG;
	}
	rc = data_offset(za, m, &d.off);
	if (rc == 0)
		rc = zip_data_read(&d, out);
	if (rc == 0)
		*outlen = (size_t)m->usize;
	return rc;
}
