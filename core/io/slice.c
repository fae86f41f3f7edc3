/*
 * slice.c - the slice backend (slice.h): a range of a parent source,
 * opened by source_open_slice, never by name (it claims none).  Reads,
 * the change check and advice go to the parent, shifted by the range's
 * offset and clipped to its length.
 *
 * Not for: decompressing (zsource.c wraps a slice as it wraps a file).
 */
#include "io/slice.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "io/backend.h"

struct slice {
	struct source *parent;  /* not owned */
	uint64_t off, len;
};

static int slice_claims(const char *uri)
{
	return 0;	/* opened by source_open_slice only */
}

static ssize_t slice_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct slice *sl = s->priv;

	if (off >= sl->len)
		return 0;
	if (n > sl->len - off)
		n = (size_t)(sl->len - off);
	return source_pread(sl->parent, buf, n, sl->off + off);
}

static ssize_t slice_preadv(struct source *s, struct iovec *iov, int n, uint64_t off)
{
	struct slice *sl = s->priv;
	uint64_t room;
	int i;

	if (off >= sl->len)
		return 0;
	/* the buffers past the slice's end are left out: a short read */
	for (room = sl->len - off, i = 0; i < n && room > 0; room -= iov[i++].iov_len)
		if (iov[i].iov_len > room)
			iov[i].iov_len = (size_t)room;
	return source_preadv(sl->parent, iov, i, sl->off + off);
}

static int slice_changed(struct source *s)
{
	struct slice *sl = s->priv;

	return source_check(sl->parent) < 0;
}

static void slice_advise(struct source *s, uint64_t off, uint64_t len,
			 enum source_advice adv)
{
	struct slice *sl = s->priv;

	if (off >= sl->len)
		return;
	if (!len || len > sl->len - off)
		len = sl->len - off;
	source_advise(sl->parent, sl->off + off, len, adv);
}

static void slice_close(struct source *s)
{
	free(s->priv);
}

static const struct source_backend slice_backend = {
	.name = "slice",
	.claims = slice_claims,
	.pread = slice_pread,
	.preadv = slice_preadv,
	.changed = slice_changed,
	.advise = slice_advise,
	.close = slice_close,
};

/* The parent's stamp with the slice's size; the parent's size and ETag
 * in the ETag, so a stamp names one version of the parent. */
static void slice_stamp(struct source *s, const struct source *parent,
			uint64_t len)
{
	const struct source_stamp *p = source_stamp(parent);

	s->stamp = *p;
	s->stamp.size = len;
	snprintf(s->stamp.etag, sizeof(s->stamp.etag), "slice:%llu:%.100s",
		 (unsigned long long)p->size, p->etag);
}

int source_open_range(struct source *parent, uint64_t off, uint64_t len,
		      const char *name, struct source **out)
{
	uint64_t psize = source_stamp(parent)->size;
	struct source *s = NULL;
	struct slice *sl = NULL;

	*out = NULL;
	if (off > psize || len > psize - off)
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))) || !(sl = calloc(1, sizeof(*sl))) ||
	    !(s->name = strdup(name))) {
		free(s);
		free(sl);
		return -ENOMEM;
	}
	sl->parent = parent;
	sl->off = off;
	sl->len = len;
	s->be = &slice_backend;
	s->env = parent->env;
	s->priv = sl;
	slice_stamp(s, parent, len);
	*out = s;
	return 0;
}

int source_open_slice(struct source *parent, uint64_t off, uint64_t len,
		      const char *name, struct source **out)
{
	struct source *s;
	int rc = source_open_range(parent, off, len, name, &s);

	/* a compressed member reads as its uncompressed bytes, as a file */
	return rc < 0 ? rc : source_counted_wrap(s, out);
}
