/*
 * autoindex.h - reads a directory listing served as nginx's
 * `autoindex_format json`: [{"name": "...", "type": "file"|"directory",
 * ...}, ...].  Names are unescaped (\" \\ \/ \uXXXX with surrogate pairs,
 * as UTF-8).  Entries of another type, and names no directory can hold
 * ("", ".", "..", with '/' or NUL) are skipped.
 *
 * Private to core/io (http.c).  Not for: any other JSON.
 */
#ifndef SFS_IO_AUTOINDEX_H
#define SFS_IO_AUTOINDEX_H

#include <stddef.h>

#include "io/source.h"

/* fn per entry, in the listing's order, once the whole text was found to
 * be a listing (so fn is never called for part of a damaged one).  0, fn's
 * nonzero return, -ENOMEM, or -ENOTSUP when the text is not a listing. */
int autoindex_parse(const char *text, size_t len, source_list_fn fn, void *arg);

#endif
