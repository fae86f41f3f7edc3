/*
 * source.c - what is done with an open source, once for every kind: each
 * call goes to the source's backend, with the stamp, the change check and
 * its one warning (a change once seen stays) kept here; and the thread's
 * no-wait flag, build mode and cancel scope.  See source.h for the
 * contract.  Compressed sources (zsource.c) are backends that read their
 * inner source through these same calls, so nothing here knows of them.
 *
 * Not for: opening or naming sources (backends.c), moving bytes (file.c,
 * http.c), anything about formats.
 */
#include "io/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clock.h"
#include "log.h"

static _Thread_local int nowait_mode;
static _Thread_local struct source_cancel *cancel_scope;
static _Thread_local int64_t build_since;	/* sfs_now_ns(), 0: not building */

void source_nowait(int on)
{
	nowait_mode = on;
}

int source_nowait_mode(void)
{
	return nowait_mode;
}

void source_build(int on)
{
	build_since = on ? sfs_now_ns() : 0;
}

int64_t source_build_since(void)
{
	return build_since;
}

void source_cancel_scope(struct source_cancel *c)
{
	cancel_scope = c;
}

const struct source_cancel *source_cancel_current(void)
{
	return cancel_scope;
}

void source_cancel(struct source_cancel *c)
{
	atomic_store(&c->cancelled, 1);
}

void source_close(struct source *s)
{
	if (!s)
		return;
	s->be->close(s);
	free(s->name);
	free(s);
}

struct lru_pool *source_cache(const struct source *s)
{
	return s->env ? s->env->mem : NULL;
}

const char *source_name(const struct source *s)
{
	return s->name;
}

const struct source_stamp *source_stamp(const struct source *s)
{
	uint64_t have;

	/* the stamp's size is final once the backend says so; the source
	 * itself is not changed, only waited for */
	if (s->be->extent)
		(void)s->be->extent((struct source *)s, UINT64_MAX, &have);
	return &s->stamp;
}

void source_identity(const struct source *s, struct source_stamp *out)
{
	if (s->be->identity)
		s->be->identity(s, out);
	else
		*out = s->stamp;
}

int source_extent(struct source *s, uint64_t want, uint64_t *have)
{
	if (s->be->extent)
		return s->be->extent(s, want, have);
	*have = s->stamp.size;
	return 1;
}

int source_is_remote(const struct source *s)
{
	return s->be != &source_file_backend;
}

ssize_t source_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	/* a change once seen stays: no byte of it is served again */
	if (atomic_load(&s->changed))
		return source_check(s);
	return s->be->pread(s, buf, n, off);
}

ssize_t source_refetch(struct source *s, void *buf, size_t n, uint64_t off)
{
	if (!s->be->refetch)
		return -ENOTSUP;
	if (atomic_load(&s->changed))
		return source_check(s);
	return s->be->refetch(s, buf, n, off);
}

void source_forget(struct source *s, uint64_t off, uint64_t n)
{
	if (s->be->forget)
		s->be->forget(s, off, n);
}

void source_count_checksum(struct source *s, int refetch)
{
	if (!s->env)
		return;
	if (refetch)
		SOURCE_COUNT(&s->env->ctr, checksum_refetches);
	else
		SOURCE_COUNT(&s->env->ctr, checksum_failures);
}

int source_refetches(const struct source *s)
{
	return s->be->refetch != NULL;
}

void source_mark_changed(struct source *s)
{
	atomic_store(&s->changed, 1);
}

int source_check(struct source *s)
{
	/* a change once seen stays (docs/choices.md: EIO until the unmount):
	 * a file put back, or blocks cached before the change, are not served */
	if (!atomic_load(&s->changed)) {
		if (s->be->changed(s) == 0)
			return 0;
		source_mark_changed(s);
	}
	/* one warning however many threads and reads see the change */
	if (!atomic_exchange(&s->warned, 1)) {
		sfs_warn("%s: changed since mounting (%s): reads of it give EIO "
			 "until remounted", s->name,
			 source_is_remote(s) ? "size or ETag" : "size or mtime");
		if (s->env && s->env->on_change)
			s->env->on_change(s->env->on_change_arg, s);
	}
	return -EIO;
}

int source_fd(struct source *s, int *fd, uint64_t *base)
{
	if (!s->be->fd)
		return -ENOTSUP;
	return s->be->fd(s, fd, base);
}

/* iovecs of one preadv of source_fill_spans: a span and a gap each */
#define FILL_IOV 256

ssize_t source_preadv(struct source *s, struct iovec *iov, int n, uint64_t off)
{
	/* a change once seen stays, as for source_pread */
	if (atomic_load(&s->changed))
		return source_check(s);
	if (!s->be->preadv)
		return -ENOTSUP;
	return s->be->preadv(s, iov, n, off);
}

/* iov[0..k) read at off of s, wholly: 0, or -errno (-EIO: s ends first) */
static int fill_run(struct source *s, struct iovec *iov, int k, uint64_t off)
{
	size_t want = 0;
	ssize_t got;
	int i;

	for (i = 0; i < k; i++)
		want += iov[i].iov_len;
	got = source_preadv(s, iov, k, off);
	if (got < 0)
		return (int)got;
	return (size_t)got == want ? 0 : -EIO;
}

int source_fill_spans(const struct source_span *sp, unsigned n, char *buf)
{
	struct iovec iov[FILL_IOV];
	char gap[SOURCE_FILL_GAP];
	uint64_t start, end;
	size_t pos = 0, p;
	unsigned i = 0, j;
	struct source *s;
	int k, rc;

	while (i < n) {
		if (!sp[i].src) {
			pos += sp[i].len;
			i++;
			continue;
		}
		s = sp[i].src;
		start = sp[i].off;
		end = start + sp[i].len;
		k = 0;
		iov[k++] = (struct iovec){ buf + pos, sp[i].len };
		pos += sp[i].len;
		/* the next span of the same source, past the reply's own bytes
		 * between them, joins when it follows soon */
		for (i++; i < n && k + 2 <= FILL_IOV; i = j + 1) {
			for (j = i, p = pos; j < n && !sp[j].src; j++)
				p += sp[j].len;
			if (j == n || sp[j].src != s || sp[j].off < end ||
			    sp[j].off - end > SOURCE_FILL_GAP)
				break;
			if (sp[j].off > end)
				iov[k++] = (struct iovec){ gap, (size_t)(sp[j].off - end) };
			iov[k++] = (struct iovec){ buf + p, sp[j].len };
			end = sp[j].off + sp[j].len;
			pos = p + sp[j].len;
		}
		if ((rc = fill_run(s, iov, k, start)) < 0)
			return rc;
	}
	return 0;
}

void source_advise(struct source *s, uint64_t off, uint64_t len,
		   enum source_advice adv)
{
	if (adv == SOURCE_ADV_WILLNEED && s->env)
		SOURCE_COUNT(&s->env->ctr, prefetch_hints);
	if (s->be->advise)
		s->be->advise(s, off, len, adv);
}
