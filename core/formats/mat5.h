/*
 * mat5.h - a strict reader for MATLAB level-5 MAT-files held in memory.
 *
 * Enough of the format to pull a variable such as the ImageNet devkit's
 * `synsets` struct array out of meta.mat: miMATRIX and miCOMPRESSED
 * elements, struct/cell/char/numeric arrays.  Numbers are converted to
 * double whatever type they are stored as.  Sparse and object arrays are
 * kept as empty placeholders (their class is recorded, their data skipped).
 *
 * An miCOMPRESSED whose inflated bytes hold another miCOMPRESSED is refused:
 * MATLAB compresses each variable once, and following the nest would recurse.
 *
 * Every length is checked against the bytes that are really there; on any
 * inconsistency the parse fails with one message naming the file, the
 * offset and what was expected.  Memory and inflated bytes are bounded by
 * the file's size (MAT5_BUDGET_RATIO).  Used at index build time only: the tree is
 * heap-allocated and not meant to be kept while mounted.
 *
 * Not for: writing, big-endian files, MAT v4 or v7.3 (HDF5) files.
 */
#ifndef SFS_MAT5_H
#define SFS_MAT5_H

#include <stdint.h>
#include <stddef.h>

/* mxCLASS_ID values (the low byte of the array flags) */
enum {
	MAT5_CELL = 1, MAT5_STRUCT = 2, MAT5_OBJECT = 3, MAT5_CHAR = 4,
	MAT5_SPARSE = 5, MAT5_DOUBLE = 6, MAT5_SINGLE = 7, MAT5_INT8 = 8,
	MAT5_UINT8 = 9, MAT5_INT16 = 10, MAT5_UINT16 = 11, MAT5_INT32 = 12,
	MAT5_UINT32 = 13, MAT5_INT64 = 14, MAT5_UINT64 = 15,
};

/* Limits that keep a hostile file from making us allocate or recurse
 * without bound. */
#define MAT5_MAX_INFLATE (256u << 20) /* one miCOMPRESSED element */
/* All the memory a parse allocates (the tree, inflated bytes) plus all the
 * bytes it inflates is at most MAT5_BUDGET_RATIO x the file's size +
 * MAT5_BUDGET_MIN; more is -EFBIG.  A real devkit meta.mat (2.5 MB) needs a
 * few times its size; a file whose elements multiply (compressed cells of
 * empty matrices, int8 arrays that become doubles) is refused early. */
#define MAT5_BUDGET_RATIO 64
#define MAT5_BUDGET_MIN  (1u << 20)
#define MAT5_MAX_DEPTH   16           /* nested struct/cell arrays */
#define MAT5_MAX_DIMS    8

struct mat5_array {
	int cls;
	char name[64];
	uint32_t ndims;
	uint32_t dims[MAT5_MAX_DIMS];
	uint64_t numel;
	/* numeric and char arrays */
	double *num;      /* numel values (real part), NULL if numel == 0 */
	char *str;        /* char arrays: UTF-8, rows joined by '\n', NUL-ended */
	/* struct arrays: field j of element i is elems[i * nfields + j];
	 * cell arrays: element i is elems[i] (nfields == 1) */
	uint32_t nfields;
	char **fields;
	struct mat5_array **elems;
};

/*
 * Finds the top-level variable `name` in the MAT-file image buf[0..len) and
 * parses it.  `what` names the file in messages.  Returns 0 and *out (free
 * with mat5_free), -ENOENT if there is no such variable, -EBADMSG if the file
 * is malformed (message printed), -EFBIG if it would need more than the
 * budget (message printed), -ENOMEM.
 */
int mat5_read_var(const uint8_t *buf, size_t len, const char *what,
		  const char *name, struct mat5_array **out);
void mat5_free(struct mat5_array *a);

/* Field `field` of struct element i, or NULL (no such field or element). */
const struct mat5_array *mat5_field(const struct mat5_array *s, uint64_t i,
				    const char *field);
/* The first value of a numeric array: 0, or -EINVAL if empty / not numeric. */
int mat5_scalar(const struct mat5_array *a, double *out);
/* The text of a char array, or NULL if `a` is not one. */
const char *mat5_string(const struct mat5_array *a);

#endif
