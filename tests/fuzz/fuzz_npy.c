/*
 * fuzz_npy.c - libFuzzer target for core/formats/npy.c.
 *
 * Feeds: the input as the start of a .npy file to npy_header_parse, then
 * every prefix length the parser asks for (-EAGAIN and *need), as
 * layout_npy.c and the .npz reader do.  On a parsed header: npy_count,
 * npy_descr_normalize, and npy_header_emit of the normalized descr and the
 * shape, whose output must parse back to the same descr and shape (the
 * round trip the npy layout relies on to serve rows as np.save writes them).
 * Seeds: tests/fixtures/make_npy.py's files (headers of every version).
 */
#include "fuzz.h"
#include "formats/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npy_header h, h2;
	char norm[64], out[4096];
	size_t need = 0, len = size < 16 ? size : 16;
	int rc, n;

	/* grow the window as the parser asks, like a reader of a file would */
	while ((rc = npy_header_parse(data, len, "fuzz.npy", &h, &need)) == -EAGAIN) {
		FUZZ_CHECK(need > len);
		if (need > size)
			return 0;
		len = need;
	}
	if (rc)
		return 0;
	FUZZ_CHECK(h.data_offset <= len);
	FUZZ_CHECK(h.ndim >= 0 && h.ndim <= NPY_MAX_DIMS);
	FUZZ_CHECK(memchr(h.descr, 0, sizeof(h.descr)));
	(void)npy_count(&h, 0);
	if (npy_descr_normalize(h.descr, norm, sizeof(norm)))
		return 0;
	n = npy_header_emit(out, sizeof(out), norm, h.ndim, h.shape);
	if (n < 0)
		return 0;
	FUZZ_CHECK(n % 64 == 0);
	rc = npy_header_parse((const uint8_t *)out, (size_t)n, "emitted", &h2, &need);
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(h2.data_offset == (uint32_t)n);
	FUZZ_CHECK(strcmp(h2.descr, norm) == 0);
	FUZZ_CHECK(h2.ndim == h.ndim && !h2.fortran_order);
	FUZZ_CHECK(memcmp(h2.shape, h.shape, sizeof(h.shape)) == 0);
	FUZZ_CHECK(h2.itemsize == h.itemsize);
	return 0;
}
