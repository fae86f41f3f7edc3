/*
 * select.h - what samplefs-download fetches: the objects under SOURCE (a
 * bucket prefix or an HTTP directory, walked through source.h), or the
 * URLs of a file (dlnames.h), kept when their names pass --include and
 * --classes.
 *
 * A file's Quick, Draw! class is its name without the suffix of one of
 * the dataset's kinds (SELECT_SUFFIXES: "cat.npy", "cat.full.npz",
 * "The Eiffel Tower.ndjson"); the classes file is read by the Quick,
 * Draw! layout's own parser (qd_classes_parse), so a list that mounts
 * downloads.  Not for: the transfers (io/download.h), the command line.
 */
#ifndef SFS_TOOLS_DL_SELECT_H
#define SFS_TOOLS_DL_SELECT_H

#include <stddef.h>

#include "io/download.h"
#include "io/source.h"
#include "layouts/quickdraw_index.h"

/* The Quick, Draw! kinds, longest first (".full.npz" before ".npz"). */
#define SELECT_SUFFIXES { ".full.npz", ".ndjson", ".npz", ".npy", ".bin" }

struct select {
	struct qd_names classes;   /* sorted, for bsearch; none: all */
	const char *const *globs;  /* fnmatch(3) on the relative path; any */
	size_t nglobs;             /* 0: all */
};

/* name's class: its length without the kind's suffix, or 0 when name is
 * no Quick, Draw! class file. */
size_t select_class_len(const char *name);

/* 1 when rel (a relative path) is to be fetched. */
int select_keep(const struct select *s, const char *rel);

/* Reads the classes file (a path or URL) into s.  0 or -errno (said). */
int select_read_classes(struct select *s, struct source_env *env, const char *file);
void select_free(struct select *s);

/* What was found to fetch, kept by s; sorted by rel. */
struct select_list {
	struct download_item *v;
	size_t n, cap;
	size_t failed;             /* URLs of a file that could not be stat'ed */
};

/*
 * Fills l from source (a directory: walked; a file: its URLs, one HEAD
 * each).  Two objects with the same rel: an error naming both.  0 or
 * -errno (said).
 */
int select_find(const struct select *s, struct source_env *env, const char *source,
		struct select_list *l);
void select_list_free(struct select_list *l);

#endif
