/*
 * fuzz_zip.c - libFuzzer target for core/formats/zip.c, and the .npz member path
 * of the Quick, Draw! index build after it (npy header, pickle).
 *
 * Feeds: the input as a file (memfd) to zip_open; then every member in
 * directory order: zip_member_at and zip_find by its name (which must find
 * a member of that name), zip_read_member with the limits
 * quickdraw_build.c's take_member applies (MAX_MEMBER, 4 GiB, and its
 * "deflate expands at most ~1032:1" check, repeated here because that
 * function is static), and for a member that is an object-array .npy, the
 * pickle reader over it.
 *
 * What it is meant to find besides crashes: work out of proportion to the
 * input.  `make fuzz` runs it with a small -malloc_limit_mb, so a member
 * inflated (or allocated) whole far beyond what the input could hold is
 * reported as a failure (issue 8: an .npz member is held whole, up to 4 GiB).
 * Seeds: tests/fixtures/make_npz.py's .npz and .zip files.
 */
#include "fuzz.h"
#include "formats/npy.h"
#include "formats/pickle.h"
#include "formats/zip.h"

#define NPZ_MAX_MEMBER (4ull << 30)	/* quickdraw_build.c MAX_MEMBER */

static int take(void *arg, const uint8_t *pts, uint32_t n, enum stroke_dtype t)
{
	uint64_t *sum = arg;
	size_t psize = 3 * stroke_dtype_size(t);
	uint8_t last[24];

	if (n) {	/* the first and last point must be readable */
		memcpy(last, pts + ((size_t)n - 1) * psize, psize);
		*sum += last[0] + pts[0];
	}
	return 0;
}

static void read_member(struct zip_archive *za, const struct zip_member *m,
			size_t insize)
{
	struct npy_header h;
	uint8_t *buf = NULL;
	size_t len = 0, need;
	uint64_t sum = 0;
	int rc;

	if (m->method == 8 && m->usize / 1032 > m->csize + 1)
		return;		/* take_member refuses it before reading */
	rc = zip_read_member(za, m, NPZ_MAX_MEMBER, &buf, &len);
	if (rc) {
		FUZZ_CHECK(buf == NULL);
		return;
	}
	FUZZ_CHECK(len == m->usize);
	/* a stored member is its own bytes: it cannot be longer than the file */
	if (m->method == 0)
		FUZZ_CHECK(len <= insize);
	if (npy_header_parse(buf, len, "fuzz.npz:m", &h, &need) == 0 &&
	    strcmp(h.descr, "|O") == 0 && h.ndim == 1)
		(void)pickle_parse_strokes(buf + h.data_offset, len - h.data_offset,
					   "fuzz.npz:m", take, &sum);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zip_archive *za = NULL;
	struct source *src;
	int fd = fuzz_memfd(data, size);
	size_t i, n;

	if (fd < 0)
		return 0;
	src = fuzz_source(fd);
	if (src && zip_open(&za, src) == 0) {
		n = zip_count(za);
		for (i = 0; i < n; i++) {
			const struct zip_member *m = zip_member_at(za, i), *f;

			FUZZ_CHECK(m && m->name);
			f = zip_find(za, m->name);
			FUZZ_CHECK(f && strcmp(f->name, m->name) == 0);
			read_member(za, m, size);
		}
		FUZZ_CHECK(zip_member_at(za, n) == NULL);
		zip_close(za);
	}
	source_close(src);
	close(fd);
	return 0;
}
