/*
 * fuzz_zipdir.c - libFuzzer target for zips as layout=tar reads them:
 * core/formats/zipwalk.c (the central directory streamed, zip64 end
 * records and extra fields, local headers, names) and zipread.c (member
 * ranges: whole decoding (zipmethod.c's table) with the CRC check and the
 * cache, stored members checked; members over 4 MiB through a raw-deflate
 * source, io/zsource.h's zcodec_deflate row, or their own bzip2, zstd or
 * xz source, opened as the tar index opens them: its pass, its size and
 * CRC checks; bytes before the zip, stored sizes that disagree).
 *
 * Feeds: the input as a file (memfd) to zip_walk; every member reported
 * must have a normalised path and data inside the file; each file member
 * is then read through one zipread at its middle, start and end (out of
 * order), and a read never returns more than asked or past the declared
 * size.  A bomb must fail, not allocate: run.sh's malloc limit for this
 * target is small.
 * Seeds: seeds.py's zips (deflated, stored, zip64, data descriptors,
 * other methods, a prefix, sizes that disagree).
 */
#include "fuzz.h"
#include "formats/zipread.h"
#include "formats/zipwalk.h"

#define KEYS 4096	/* members past this many: large ones give EIO */

/* As the tar index opens a large member (tarindex_zip.c), but named by
 * the member alone. */
static int open_member(const struct zip_data *d, struct source **out)
{
	return zipread_member_open(d, d->name, out);
}

struct ctx {
	struct zipread *zr;
	uint64_t size, key;
	uint8_t buf[1 << 16];
};

static int member(void *arg, const struct zip_entry *e)
{
	struct ctx *c = arg;
	uint64_t offs[3], k;
	ssize_t n;

	FUZZ_CHECK(e->path[0] && e->path[0] != '/' && !strstr(e->path, "//"));
	if (e->type != TAR_FILE)
		return 0;
	FUZZ_CHECK(e->data.off <= c->size && e->data.csize <= c->size - e->data.off);
	offs[0] = e->data.usize / 2;
	offs[1] = 0;
	offs[2] = e->data.usize ? e->data.usize - 1 : 0;
	c->key++;
	for (k = 0; k < 3; k++) {
		if (e->data.method == 0 && e->data.usize > c->size)
			break;
		n = zipread_pread(c->zr, c->key, &e->data, c->buf, sizeof(c->buf), offs[k]);
		FUZZ_CHECK(n <= (ssize_t)sizeof(c->buf));
		if (n > 0)
			FUZZ_CHECK((uint64_t)n <= e->data.usize - offs[k]);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctx c;
	struct source *src;
	char path[64];
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, path, sizeof(path));
	if (!fuzz_env() || source_open(fuzz_env(), path, &src))
		src = NULL;
	c.zr = zipread_new(NULL, KEYS, open_member);
	c.key = 0;
	c.size = size;
	if (src && c.zr)
		(void)zip_walk(src, "fuzz.zip", member, &c);
	zipread_free(c.zr);
	source_close(src);
	close(fd);
	return 0;
}
