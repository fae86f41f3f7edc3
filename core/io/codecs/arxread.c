/*
 * arxread.c - libarchive's read, seek and skip callbacks over source_pread
 * (see arxread.h).  A read asks for ARXREAD_CHUNK bytes at the position;
 * seeks and skips only move it (never past the source's end), so a skip
 * over a member's data reads nothing.
 *
 * Also the list of hard links whose data comes later (arxlinks), which
 * both users keep.
 *
 * Not for: formats (the caller's), writing archives.
 */
#include "io/codecs/arxread.h"

#include <archive.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARXREAD_CHUNK (256u << 10)

static la_ssize_t rd(struct archive *a, void *arg, const void **buf)
{
	struct arxread *r = arg;
	ssize_t got;

	if (r->stop && atomic_load(r->stop)) {
		archive_set_error(a, EINTR, "stopped (unmounting)");
		return -1;
	}
	got = source_pread(r->src, r->buf, ARXREAD_CHUNK, r->pos);
	if (got < 0) {
		archive_set_error(a, (int)-got, "reading at byte %llu: %s",
				  (unsigned long long)r->pos, strerror((int)-got));
		return -1;
	}
	r->pos += (uint64_t)got;
	*buf = r->buf;
	return got;
}

static la_int64_t sk(struct archive *a, void *arg, la_int64_t off, int whence)
{
	struct arxread *r = arg;
	int64_t size = (int64_t)source_stamp(r->src)->size, to;

	if (whence == SEEK_SET)
		to = off;
	else if (whence == SEEK_CUR)
		to = (int64_t)r->pos + off;
	else
		to = size + off;
	if (to < 0)
		return ARCHIVE_FATAL;
	r->pos = (uint64_t)(to > size ? size : to);
	return (la_int64_t)r->pos;
}

static la_int64_t skip(struct archive *a, void *arg, la_int64_t n)
{
	struct arxread *r = arg;
	uint64_t size = source_stamp(r->src)->size;
	uint64_t left = size > r->pos ? size - r->pos : 0;

	if (n <= 0)
		return 0;
	if ((uint64_t)n > left)
		n = (la_int64_t)left;
	r->pos += (uint64_t)n;
	return n;
}

int arxread_open(struct arxread *r, struct archive *a, struct source *src,
		 const atomic_int *stop)
{
	r->src = src;
	r->pos = 0;
	r->stop = stop;
	if (!r->buf && !(r->buf = malloc(ARXREAD_CHUNK))) {
		archive_set_error(a, ENOMEM, "out of memory");
		return ARCHIVE_FATAL;
	}
	archive_read_set_callback_data(a, r);
	archive_read_set_read_callback(a, rd);
	archive_read_set_seek_callback(a, sk);
	archive_read_set_skip_callback(a, skip);
	return archive_read_open1(a);
}

void arxread_fini(struct arxread *r)
{
	free(r->buf);
	r->buf = NULL;
}

const char *arxread_why(struct archive *a)
{
	const char *why = archive_error_string(a);

	return why && *why ? why : "libarchive gives no reason";
}

int arxlinks_keep(struct arxlinks *l, const char *path, const char *target)
{
	size_t lp = strlen(path), lt = strlen(target);
	char **q, *r;

	if (l->n == ARXLINKS_MAX)
		return 1;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		if (!(q = realloc(l->v, l->cap * sizeof(*q))))
			return -ENOMEM;
		l->v = q;
	}
	if (!(r = malloc(lp + lt + 2)))
		return -ENOMEM;
	memcpy(r, path, lp + 1);
	memcpy(r + lp + 1, target, lt + 1);
	l->v[l->n++] = r;
	return 0;
}

char *arxlinks_take(struct arxlinks *l, const char *target)
{
	size_t i;
	char *r;

	for (i = 0; i < l->n; i++) {
		r = l->v[i];
		if (!strcmp(r + strlen(r) + 1, target)) {
			l->v[i] = l->v[--l->n];
			return r;
		}
	}
	return NULL;
}

void arxlinks_free(struct arxlinks *l)
{
	while (l->n)
		free(l->v[--l->n]);
	free(l->v);
	l->v = NULL;
	l->cap = 0;
}
