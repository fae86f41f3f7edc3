/*
 * fuzz_devkit.c - libFuzzer target for core/formats/devkit.c.
 *
 * Feeds, by the input's first byte:
 *   even: the rest is a meta.mat image and a ground-truth text, split at a
 *         4-byte little-endian length of the meta part;
 *         devkit_parse_meta, then devkit_parse_truth on the text;
 *   odd:  the rest is a devkit tarball (.tar.gz or plain tar, by its
 *         /proc/self/fd path) for devkit_load (libarchive, then both).
 * A loaded devkit must hold what devkit.h says: nclasses sorted WNIDs of
 * letters, digits, '_' and '-', non-NULL words, devkit_label finding each,
 * id_label and val_label inside [0, nclasses).
 * Seeds: tests/fuzz/seeds.py splits the fixtures' devkit tarballs
 * (tests/fixtures/make_imagenet.py) into both forms, and takes the
 * tarballs themselves.
 */
#include "formats/devkit.h"
#include "fuzz.h"

static void check(const struct devkit *dk)
{
	uint32_t i;

	FUZZ_CHECK(dk->nclasses > 0 && dk->nclasses <= DEVKIT_MAX_CLASSES);
	for (i = 0; i < dk->nclasses; i++) {
		const char *w = dk->wnid[i];

		FUZZ_CHECK(memchr(w, 0, DEVKIT_WNID_MAX) && w[0]);
		FUZZ_CHECK(strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789_-") == strlen(w));
		FUZZ_CHECK(i == 0 || strcmp(dk->wnid[i - 1], w) < 0);
		FUZZ_CHECK(dk->words[i]);
		FUZZ_CHECK(devkit_label(dk, w) == i);
	}
	for (i = 0; dk->id_label && i <= dk->max_id; i++)
		FUZZ_CHECK(dk->id_label[i] == UINT32_MAX || dk->id_label[i] < dk->nclasses);
	for (i = 0; i < dk->nval; i++)
		FUZZ_CHECK(dk->val_label[i] < dk->nclasses);
}

static void split_form(const uint8_t *data, size_t size)
{
	struct devkit dk;
	size_t mlen;

	if (size < 4)
		return;
	mlen = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
	       (size_t)data[3] << 24;
	data += 4;
	size -= 4;
	if (mlen > size)
		mlen = size;
	if (devkit_parse_meta(data, mlen, "fuzz:meta.mat", &dk))
		return;
	check(&dk);
	if (devkit_parse_truth((const char *)data + mlen, size - mlen, "fuzz:truth", &dk) == 0)
		check(&dk);
	devkit_free(&dk);
}

static void tarball_form(const uint8_t *data, size_t size)
{
	struct devkit dk;
	struct source *src;
	int fd = fuzz_memfd(data, size);

	if (fd < 0)
		return;
	src = fuzz_source(fd);
	if (src && devkit_load(src, &dk) == 0) {
		check(&dk);
		devkit_free(&dk);
	}
	source_close(src);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		tarball_form(data + 1, size - 1);
	else
		split_form(data + 1, size - 1);
	return 0;
}
