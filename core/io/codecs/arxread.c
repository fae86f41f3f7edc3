/*
 * arxread.c - libarchive's read, seek and skip callbacks over source_pread
 * (see arxread.h).  A read asks for ARXREAD_CHUNK bytes at the position;
 * seeks and skips only move it (never past the source's end), so a skip
 * over a member's data reads nothing.
 *
 * Also the hard links whose data comes later (arxlinks), which both
 * users keep: by target in a tsearch tree, O(log n) a keep or a take.
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

/* tsearch(3) and its kin, as glibc's <search.h> declares them: that name
 * finds core/search.h first (-Icore). */
void *tsearch(const void *key, void **rootp,
	      int (*compar)(const void *, const void *));
void *tfind(const void *key, void *const *rootp,
	    int (*compar)(const void *, const void *));
void *tdelete(const void *restrict key, void **restrict rootp,
	      int (*compar)(const void *, const void *));
void tdestroy(void *root, void (*free_node)(void *nodep));

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

/* One target's kept links, oldest first. */
struct arxname {
	struct arxname *next;
	char *path;
};
struct arxtarget {
	char *target;                   /* the tree's key */
	struct arxname *head, **tail;
};

static int target_cmp(const void *a, const void *b)
{
	return strcmp(((const struct arxtarget *)a)->target,
		      ((const struct arxtarget *)b)->target);
}

/* target's entry in l's tree, made (empty) when make is set: NULL when
 * there is none, or no memory for it. */
static struct arxtarget *find_target(struct arxlinks *l, const char *target,
				     int make)
{
	struct arxtarget key = { .target = (char *)target }, *t, **at;

	if ((at = tfind(&key, &l->root, target_cmp)) || !make)
		return at ? *at : NULL;
	if (!(t = calloc(1, sizeof(*t))) || !(t->target = strdup(target)))
		goto nomem;
	t->tail = &t->head;
	if (!(at = tsearch(t, &l->root, target_cmp)))
		goto nomem;
	return t;
nomem:
	if (t)
		free(t->target);
	free(t);
	return NULL;
}

int arxlinks_keep(struct arxlinks *l, const char *path, const char *target)
{
	struct arxname *p;
	struct arxtarget *t;

	if (l->n == ARXLINKS_MAX)
		return 1;
	if (!(p = calloc(1, sizeof(*p))) || !(p->path = strdup(path)) ||
	    !(t = find_target(l, target, 1))) {
		if (p)
			free(p->path);
		free(p);
		return -ENOMEM;
	}
	*t->tail = p;
	t->tail = &p->next;
	l->n++;
	return 0;
}

static void free_target(void *pt)
{
	struct arxtarget *t = pt;
	struct arxname *p;

	while ((p = t->head)) {
		t->head = p->next;
		free(p->path);
		free(p);
	}
	free(t->target);
	free(t);
}

char *arxlinks_take(struct arxlinks *l, const char *target)
{
	struct arxtarget *t = find_target(l, target, 0);
	struct arxname *p;
	char *r;

	if (!t)
		return NULL;
	p = t->head;
	if (!(t->head = p->next)) {	/* its last: no empty target is kept */
		tdelete(t, &l->root, target_cmp);
		t->tail = &t->head;
		free_target(t);
	}
	r = p->path;
	free(p);
	l->n--;
	return r;
}

void arxlinks_free(struct arxlinks *l)
{
	tdestroy(l->root, free_target);
	l->root = NULL;
	l->n = 0;
}
