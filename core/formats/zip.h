/*
 * zip.h - just enough of the zip format to read .npz files: the central
 * directory (zip64 included), stored and deflated members, CRC-32 checked.
 * Defends against bombs: a member never inflates to more than its declared
 * size, and callers cap the declared size.  Not a general zip library: no
 * encryption, no multi-disk, no writing.
 */
#ifndef SFS_ZIP_H
#define SFS_ZIP_H

#include <stdint.h>
#include <stddef.h>

struct zip_member {
	const char *name;        /* NUL-terminated, owned by the archive */
	uint16_t method;         /* 0 stored, 8 deflate */
	uint16_t flags;          /* general purpose bits (1: encrypted) */
	uint64_t csize, usize;   /* compressed and declared uncompressed size */
	uint32_t crc32;
	uint64_t header_off;     /* offset of the local file header */
};

struct zip_archive;
struct source;

/* Reads the central directory of src (io/source.h; its size is the
 * stamp's).  0 or -errno, message printed naming the source and the offset
 * of the problem.  The source stays the caller's and must outlive the
 * archive. */
int zip_open(struct zip_archive **za, struct source *src);
/* Frees the archive; does not close its source. */
void zip_close(struct zip_archive *za);
size_t zip_count(const struct zip_archive *za);
const struct zip_member *zip_member_at(const struct zip_archive *za, size_t i);
/* The member called `name`, or NULL. */
const struct zip_member *zip_find(const struct zip_archive *za, const char *name);

/*
 * Reads a whole member into a new malloc'ed buffer (*out, *outlen = usize).
 * Fails with -EFBIG if usize > max, -EIO with a message on a corrupt stream,
 * a CRC mismatch, data that does not end where the directory says, or a
 * usize over 1032 x csize (deflate's limit).  Memory is taken as the bytes
 * inflate, so a usize that the stream does not back costs nothing.
 */
int zip_read_member(struct zip_archive *za, const struct zip_member *m,
		    uint64_t max, uint8_t **out, size_t *outlen);

#endif
