/*
 * fuzz_mat5.c - libFuzzer target for core/formats/mat5.c.
 *
 * Feeds: the input as a MAT-file image to mat5_read_var for `synsets` (the
 * devkit's variable) and for a name no seed has (so every top-level
 * element, compressed ones included, is skipped over).  A parsed tree is
 * walked whole: every struct field of every element through mat5_field,
 * every cell, each numeric array's values (all read: ASan sees a short
 * buffer), each char array's text (mat5_string, then strlen).
 *
 * What it is meant to find besides crashes: allocation or work out of
 * proportion to the input (issue 8: a few hundred KiB of cell dimensions
 * that multiply, numeric arrays declared far larger than their bytes,
 * deflate data that inflates without end).  `make fuzz` runs it with a small
 * -malloc_limit_mb and -timeout.  Seeds: the .mat files of
 * tests/fixtures/make_imagenet.py and tests/fuzz/seeds.py's scipy-written
 * struct arrays, cell arrays and compressed variables.
 */
#include "fuzz.h"
#include "formats/mat5.h"

static void visit(const struct mat5_array *a, int depth)
{
	volatile double sink = 0;
	uint64_t i, k, prod = 1;
	const char *s;
	double d;

	FUZZ_CHECK(depth <= MAT5_MAX_DEPTH + 1);
	FUZZ_CHECK(a->ndims <= MAT5_MAX_DIMS);
	for (i = 0; i < a->ndims; i++)
		prod = a->dims[i] && prod > UINT64_MAX / a->dims[i] ? UINT64_MAX
								       : prod * a->dims[i];
	(void)prod;
	if (a->num)
		for (i = 0; i < a->numel; i++)
			sink += a->num[i];
	if ((s = mat5_string(a)))
		sink += (double)strlen(s);
	if (mat5_scalar(a, &d) == 0)
		sink += d;
	if (a->cls == MAT5_STRUCT && a->elems) {
		for (k = 0; k < a->nfields; k++)
			FUZZ_CHECK(a->fields && a->fields[k]);
		for (i = 0; i < a->numel; i++)
			for (k = 0; k < a->nfields; k++) {
				const struct mat5_array *f = mat5_field(a, i, a->fields[k]);

				if (f)
					visit(f, depth + 1);
			}
	} else if (a->cls == MAT5_CELL && a->elems) {
		for (i = 0; i < a->numel; i++)
			if (a->elems[i])
				visit(a->elems[i], depth + 1);
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "synsets", "no_such_variable" };
	struct mat5_array *a;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		a = NULL;
		rc = mat5_read_var(data, size, "fuzz.mat", names[i], &a);
		FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EBADMSG || rc == -EFBIG ||
			   rc == -ENOMEM);
		if (rc) {
			FUZZ_CHECK(a == NULL);
			continue;
		}
		FUZZ_CHECK(a != NULL);
		visit(a, 0);
		mat5_free(a);
	}
	return 0;
}
