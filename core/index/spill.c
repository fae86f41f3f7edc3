/*
 * spill.c - the external sort of spill.h: sorted runs of at most `budget`
 * bytes in unlinked scratch files, merged through a heap of buffered run
 * readers (in passes of `fanin` runs when there are more).
 *
 * A record is stored as a uint64_t of its padded length, then its bytes
 * padded to 8, in memory and in the files alike, so a run is read back
 * with no parsing but that length.
 */
#include "index/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define HDR 8u
#define WBUF (256u << 10)

struct run {
	uint64_t start, end;    /* bytes of the scratch file */
};

/* A buffered reader of one run, holding its current record at buf + at. */
struct reader {
	uint64_t pos, end;      /* file bytes not yet in buf */
	uint8_t *buf;
	size_t have, at;        /* bytes in buf; offset of the current record */
	size_t len;             /* the current record's padded length */
};

struct spill {
	char *prefix;
	size_t budget;
	spill_cmp_fn cmp;
	void *arg;
	uint8_t *mem;           /* records being gathered: header + bytes */
	size_t mem_len, mem_cap;
	size_t *recs;           /* their offsets in mem */
	size_t n, recs_cap;
	uint64_t count;
	int fd;                 /* scratch file of the runs, or -1 */
	uint64_t fd_len;
	struct run *runs;
	uint32_t nruns, runs_cap;
	uint8_t *wbuf;
	size_t wlen;
	int sorted;             /* mem sorted (in-memory reading) */
	int merged;             /* runs down to fanin (run reading) */
	size_t next;            /* in-memory reading: next index */
	struct reader *rd;
	uint32_t nrd, rd_cap, *heap, nheap;
	int last;               /* reader of the record returned last, or -1 */
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int spill_open(struct spill **sp, const char *dir_prefix, size_t budget,
	       spill_cmp_fn cmp, void *arg)
{
	struct spill *s = calloc(1, sizeof(*s));

	*sp = NULL;
	if (!s || !(s->prefix = strdup(dir_prefix))) {
		free(s);
		return -ENOMEM;
	}
	s->budget = budget < 4096 ? 4096 : budget;
	s->cmp = cmp;
	s->arg = arg;
	s->fd = -1;
	s->last = -1;
	*sp = s;
	return 0;
}

/*
 * A scratch file next to the index: created and unlinked with signals
 * held, so that a signal between the two leaves nothing.  fd or -errno.
 */
static int scratch_open(const struct spill *s)
{
	sigset_t all, old;
	char *name;
	int fd, err = 0;

	if (asprintf(&name, "%s.spill.XXXXXX", s->prefix) < 0)
		return -ENOMEM;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	fd = mkostemp(name, O_CLOEXEC);
	if (fd < 0)
		err = errno;
	else
		unlink(name);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (fd < 0)
		sfs_err("%s: cannot create a scratch file for the build: %s", name,
			strerror(err));
	free(name);
	return fd < 0 ? -err : fd;
}

static int wflush(struct spill *s, int fd)
{
	const uint8_t *p = s->wbuf;
	size_t n = s->wlen;

	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int err = errno;

			sfs_err("%s.spill: write: %s", s->prefix, strerror(err));
			return -err;
		}
		p += k;
		n -= (size_t)k;
	}
	s->wlen = 0;
	return 0;
}

/* Writes header and record r (len padded bytes) to fd through wbuf. */
static int wput(struct spill *s, int fd, const uint8_t *r, size_t len,
		uint64_t *flen)
{
	uint64_t h = len;
	int rc;

	if (!s->wbuf && !(s->wbuf = malloc(WBUF)))
		return -ENOMEM;
	if (s->wlen + HDR + len > WBUF && (rc = wflush(s, fd)) < 0)
		return rc;
	memcpy(s->wbuf + s->wlen, &h, HDR);
	memcpy(s->wbuf + s->wlen + HDR, r, len);
	s->wlen += HDR + len;
	*flen += HDR + len;
	return 0;
}

static int rec_cmp(const void *pa, const void *pb, void *arg)
{
	const struct spill *s = arg;

	return s->cmp(s->mem + *(const size_t *)pa + HDR,
		      s->mem + *(const size_t *)pb + HDR, s->arg);
}

static void sort_mem(struct spill *s)
{
	if (s->cmp && !s->sorted && s->n > 1)
		qsort_r(s->recs, s->n, sizeof(*s->recs), rec_cmp, s);
	s->sorted = 1;
}

static int add_run(struct spill *s, uint64_t start, uint64_t end)
{
	if (s->nruns == s->runs_cap) {
		uint32_t c = s->runs_cap ? 2 * s->runs_cap : 16;
		struct run *q = realloc(s->runs, c * sizeof(*q));

		if (!q)
			return -ENOMEM;
		s->runs = q;
		s->runs_cap = c;
	}
	s->runs[s->nruns++] = (struct run){ start, end };
	return 0;
}

/* Sorts the records in memory and writes them as one more run. */
static int flush_run(struct spill *s)
{
	uint64_t start;
	size_t i;
	int rc = 0;

	if (s->fd < 0 && (s->fd = scratch_open(s)) < 0) {
		rc = s->fd;
		s->fd = -1;
		return rc;
	}
	sort_mem(s);
	start = s->fd_len;
	for (i = 0; rc == 0 && i < s->n; i++) {
		uint64_t len;

		memcpy(&len, s->mem + s->recs[i], HDR);
		rc = wput(s, s->fd, s->mem + s->recs[i] + HDR, len, &s->fd_len);
	}
	if (rc == 0)
		rc = wflush(s, s->fd);
	if (rc == 0)
		rc = add_run(s, start, s->fd_len);
	s->n = 0;
	s->mem_len = 0;
	s->sorted = 0;
	return rc;
}

static int grow(void **p, size_t *cap, size_t need, size_t elt, size_t first)
{
	size_t c = *cap ? *cap : first;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elt);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

int spill_add(struct spill *s, const void *rec, size_t len)
{
	size_t plen = pad8(len);
	uint64_t h = plen;
	int rc;

	if (!len || len > SPILL_MAX_REC)
		return -EINVAL;
	if (s->n && s->mem_len + HDR + plen + (s->n + 1) * sizeof(size_t) > s->budget &&
	    (rc = flush_run(s)) < 0)
		return rc;
	rc = grow((void **)&s->mem, &s->mem_cap, s->mem_len + HDR + plen, 1, 64 << 10);
	if (rc == 0)
		rc = grow((void **)&s->recs, &s->recs_cap, s->n + 1, sizeof(size_t), 1024);
	if (rc < 0)
		return rc;
	memcpy(s->mem + s->mem_len, &h, HDR);
	memcpy(s->mem + s->mem_len + HDR, rec, len);
	memset(s->mem + s->mem_len + HDR + len, 0, plen - len);
	s->recs[s->n++] = s->mem_len;
	s->mem_len += HDR + plen;
	s->count++;
	s->sorted = 0;
	return 0;
}

/* Loads the next record of r into its buffer: 1, 0 at the run's end, -EIO. */
static int rd_load(const struct spill *s, int fd, struct reader *r)
{
	uint64_t len;
	size_t need;

	r->at += r->len ? HDR + r->len : 0;
	r->len = 0;
	for (;;) {
		size_t left = r->have - r->at;

		need = HDR;
		if (left >= HDR) {
			memcpy(&len, r->buf + r->at, HDR);
			need = HDR + (size_t)len;
			if (len > pad8(SPILL_MAX_REC))
				goto bad;
		}
		if (left >= need && left >= HDR)
			break;
		if (r->pos == r->end) {
			if (left)
				goto bad;
			return 0;
		}
		memmove(r->buf, r->buf + r->at, left);
		r->have = left;
		r->at = 0;
		while (r->have < SPILL_READ_BUF && r->pos < r->end) {
			size_t want = SPILL_READ_BUF - r->have;
			ssize_t k;

			if (want > r->end - r->pos)
				want = (size_t)(r->end - r->pos);
			k = pread(fd, r->buf + r->have, want, (off_t)r->pos);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				goto bad;
			r->have += (size_t)k;
			r->pos += (uint64_t)k;
		}
	}
	r->len = (size_t)len;
	return 1;
bad:
	sfs_err("%s.spill: run short or damaged at offset %llu: expected a "
		"record", s->prefix, (unsigned long long)r->pos);
	return -EIO;
}

static int rd_less(const struct spill *s, uint32_t a, uint32_t b)
{
	const struct reader *x = &s->rd[a], *y = &s->rd[b];
	int r = s->cmp ? s->cmp(x->buf + x->at + HDR, y->buf + y->at + HDR, s->arg) : 0;

	return r < 0 || (r == 0 && a < b);
}

static void sift_down(struct spill *s, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i, t;

		if (l < s->nheap && rd_less(s, s->heap[l], s->heap[m]))
			m = l;
		if (l + 1 < s->nheap && rd_less(s, s->heap[l + 1], s->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/* Readers and heap over runs[first .. first + n). */
static int merge_start(struct spill *s, int fd, uint32_t first, uint32_t n)
{
	uint32_t i;
	int rc;

	for (i = 0; i < n; i++) {
		struct reader *r = &s->rd[i];

		r->pos = s->runs[first + i].start;
		r->end = s->runs[first + i].end;
		r->have = r->at = r->len = 0;
	}
	s->nrd = n;
	s->nheap = 0;
	s->last = -1;
	for (i = 0; i < n; i++) {
		rc = rd_load(s, fd, &s->rd[i]);
		if (rc < 0)
			return rc;
		if (rc)
			s->heap[s->nheap++] = i;
	}
	for (i = s->nheap / 2; i-- > 0; )
		sift_down(s, i);
	return 0;
}

/* The smallest record of the merge: 1, 0 when done, -errno. */
static int merge_next(struct spill *s, int fd, const void **rec, size_t *len)
{
	int rc;

	if (s->last >= 0) {
		rc = rd_load(s, fd, &s->rd[s->last]);
		if (rc < 0)
			return rc;
		if (!rc)
			s->heap[0] = s->heap[--s->nheap];
		if (s->nheap)
			sift_down(s, 0);
		s->last = -1;
	}
	if (!s->nheap)
		return 0;
	s->last = (int)s->heap[0];
	*rec = s->rd[s->last].buf + s->rd[s->last].at + HDR;
	*len = s->rd[s->last].len;
	return 1;
}

/* Merges passes of `fanin` runs into a new scratch file until that many are left. */
static int merge_down(struct spill *s, uint32_t fanin)
{
	while (s->nruns > fanin) {
		int fd = scratch_open(s), rc = 0;
		uint64_t flen = 0, start;
		uint32_t i, k = 0, n;
		const void *rec;
		size_t len;

		if (fd < 0)
			return fd;
		for (i = 0; rc == 0 && i < s->nruns; i += n) {
			n = s->nruns - i < fanin ? s->nruns - i : fanin;
			start = flen;
			rc = merge_start(s, s->fd, i, n);
			while (rc == 0 && (rc = merge_next(s, s->fd, &rec, &len)) > 0)
				rc = wput(s, fd, rec, len, &flen);
			if (rc == 0)
				rc = wflush(s, fd);
			if (rc == 0)
				s->runs[k++] = (struct run){ start, flen };
		}
		close(s->fd);
		s->fd = fd;
		s->fd_len = flen;
		s->nruns = k;
		if (rc < 0)
			return rc;
	}
	return 0;
}

int spill_rewind(struct spill *s)
{
	uint32_t fanin = (uint32_t)(s->budget / SPILL_READ_BUF), i;
	int rc;

	s->next = 0;
	if (!s->nruns) {
		sort_mem(s);
		return 0;
	}
	if (s->n && (rc = flush_run(s)) < 0)
		return rc;
	free(s->mem);
	free(s->recs);
	s->mem = NULL;
	s->recs = NULL;
	s->mem_cap = s->recs_cap = 0;
	fanin = fanin < 2 ? 2 : fanin > 1024 ? 1024 : fanin;
	if (!s->rd) {
		uint32_t n = s->nruns < fanin ? s->nruns : fanin;

		s->rd = calloc(n, sizeof(*s->rd));
		s->heap = calloc(n, sizeof(*s->heap));
		if (!s->rd || !s->heap)
			return -ENOMEM;
		s->rd_cap = n;
		for (i = 0; i < n; i++)
			if (!(s->rd[i].buf = malloc(SPILL_READ_BUF)))
				return -ENOMEM;
	}
	if (!s->merged && (rc = merge_down(s, fanin)) < 0)
		return rc;
	s->merged = 1;
	free(s->wbuf);
	s->wbuf = NULL;
	return merge_start(s, s->fd, 0, s->nruns);
}

int spill_next(struct spill *s, const void **rec, size_t *len)
{
	uint64_t h;

	if (s->nruns)
		return merge_next(s, s->fd, rec, len);
	if (s->next == s->n)
		return 0;
	memcpy(&h, s->mem + s->recs[s->next], HDR);
	*rec = s->mem + s->recs[s->next++] + HDR;
	*len = (size_t)h;
	return 1;
}

uint64_t spill_count(const struct spill *s)
{
	return s->count;
}

uint32_t spill_runs(const struct spill *s)
{
	return s->nruns;
}

void spill_close(struct spill *s)
{
	uint32_t i;

	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	for (i = 0; s->rd && i < s->rd_cap; i++)
		free(s->rd[i].buf);
	free(s->rd);
	free(s->heap);
	free(s->runs);
	free(s->mem);
	free(s->recs);
	free(s->wbuf);
	free(s->prefix);
	free(s);
}
