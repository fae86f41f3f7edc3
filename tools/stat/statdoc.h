/*
 * statdoc.h - reads numbers out of a mount's stats.json (fs/ctl.h) for
 * samplefs-stat: just enough JSON to find `"key": NUMBER` pairs, at any
 * depth, strings skipped whole (escapes included), so a source name
 * holding `"errors": 9` is never taken for a field.  Not a JSON validator
 * and not for any other document.
 */
#ifndef SFS_TOOLS_STATDOC_H
#define SFS_TOOLS_STATDOC_H

#include <stddef.h>

/* The number after the first key named `key` in doc[0..len) (no NUL
 * needed) into *out: 0, or -1 when there is none or it is no number. */
int statdoc_get(const char *doc, size_t len, const char *key, double *out);

#endif
