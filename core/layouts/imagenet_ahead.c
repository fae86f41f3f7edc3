/*
 * imagenet_ahead.c - prefetch in a shard's order (imagenet_ahead.h): the
 * readers' stream slots, and the advisor thread that asks for the members
 * ahead of each.
 *
 * A read only moves its stream's end on and wakes an advisor: the advice
 * (a syscall per member locally, and the index pages that say where each
 * member is, cold on a first pass) costs the request path nothing, and
 * runs beside the reads.  IN_ADVISORS threads share it, each taking the
 * next BATCH members of a stream: a WILLNEED of a 110 KB member costs the
 * kernel ~90 us of CPU (pages allocated and queued for reading), so one
 * thread asks for ~11k such members a second at best, and a fraction of
 * that on a loaded machine; the disk under it reads 7-8k a second with
 * many in flight (tools/bench/willneed.py).  Advisors sleep whenever every
 * stream is advised as far as its budget allows.
 *
 * Members that lie next to each other in their source (an ordered shard
 * streams the tar in its order: only headers and padding between them)
 * are asked for as one range, up to SOURCE_WILLNEED_SPAN: over HTTP one
 * GET for many members instead of one each; a shuffled shard's members lie
 * apart, and each stays a range of its own.
 */
#include "layouts/imagenet_ahead.h"

#include <string.h>

#include "clock.h"
#include "layouts/imagenet_samples.h"
#include "io/source.h"
#include "search.h"

/* members one advisor takes at once: small, so that the advisors share a
 * stream's advice, and a new stream is served soon */
#define BATCH 16
/* records one plan walks at most, under the lock the READ path takes too:
 * hints of small members in order are not given (goes_on), so BATCH
 * alone would let a plan walk a whole budget of them (32 MiB of 3 KB
 * members: ~9,000 records) */
#define PLAN_RECORDS 1024
/* a URL source's depth (SOURCE_WILLNEED_MAX hints) is counted */
_Static_assert(SOURCE_WILLNEED_MAX <= IN_HINTS, "the hints a URL source takes are counted");

void imagenet_ahead_init(struct in_ahead *a, uint64_t budget, int url)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->more, NULL);
	a->budget = budget;
	a->depth = url ? SOURCE_WILLNEED_MAX : UINT64_MAX;
	a->shared = url;
}

void imagenet_ahead_destroy(struct in_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	a->stopping = 1;
	pthread_cond_broadcast(&a->more);
	pthread_mutex_unlock(&a->lock);
	while (a->started > 0)
		pthread_join(a->advisor[--a->started], NULL);
	pthread_cond_destroy(&a->more);
	pthread_mutex_destroy(&a->lock);
}

/* the slot whose stream a read at off of ino continues, or NULL */
static struct in_stream *find_stream(struct in_ahead *a, uint64_t ino, uint64_t off)
{
	int i;

	for (i = 0; i < IN_STREAMS; i++) {
		struct in_stream *s = &a->s[i];

		if (s->ino == ino && off + IN_AHEAD_SLACK >= s->next &&
		    off <= s->next + IN_AHEAD_SLACK)
			return s;
	}
	return NULL;
}

/* a slot for a new stream: a free one, else the least recently used */
static void open_stream(struct in_ahead *a, const struct in_shard *sh, uint64_t ino,
			uint64_t end, int64_t now)
{
	struct in_stream *s = &a->s[0];
	int i;

	for (i = 1; i < IN_STREAMS && s->ino; i++)
		if (!a->s[i].ino || a->s[i].used < s->used)
			s = &a->s[i];
	*s = (struct in_stream){ .ino = ino, .sp = sh->sp, .first = sh->first,
				 .n = sh->n, .base = sh->base, .next = end,
				 .cur_i = UINT64_MAX, .used = ++a->tick, .read_ns = now };
}

static uint64_t record_bytes(const struct in_stream *s, uint64_t i)
{
	return imagenet_record_bytes(s->sp, s->first + i);
}

/* the record whose bytes hold vtar offset off (past the body: the last) */
static uint64_t record_at(const struct in_stream *s, uint64_t off)
{
	return SFS_PARTITION_POINT(uint64_t, 1, s->n, i,
			imagenet_cum_offset(s->sp, s->first + i) - s->base <= off) - 1;
}

/* s->cur_i/cur_off on to the record holding s->next: a step or two
 * forward for a reader going on, a search when new or gone back */
static void follow(struct in_stream *s)
{
	uint64_t rb;

	if (s->cur_i == UINT64_MAX || s->next < s->cur_off) {
		s->cur_i = record_at(s, s->next);
		s->cur_off = imagenet_cum_offset(s->sp, s->first + s->cur_i) - s->base;
		s->ahead_i = s->cur_i;
		s->ahead_off = s->cur_off;
		s->nhints = 0;
		return;
	}
	while (s->cur_i + 1 < s->n && s->cur_off + (rb = record_bytes(s, s->cur_i)) <= s->next) {
		s->cur_off += rb;
		s->cur_i++;
	}
}

/* A hint: bytes [off, end) of source number src of a split's tarindex. */
struct hint {
	uint32_t src;
	uint64_t off, end;
};

/*
 * Where record i of s has its data, when that is one range of its source
 * (read in place, or copied through its checksums: -o checksums): 1 with
 * *h set, else 0 (compressed, sparse, empty: no advice).  Reads the
 * orders, so under the lock.
 */
static int record_range(const struct in_stream *s, uint64_t i, struct hint *h)
{
	const struct in_split *sp = s->sp;
	uint32_t node = in_split_node(sp, sp->ord[s->first + i]);
	const struct tarindex_node *n = tarindex_node(&sp->t, node);
	uint64_t size = tarindex_node_size(n);

	if (!size || !(tarindex_in_place(&sp->t, node) || tarindex_summed(&sp->t, node)))
		return 0;
	*h = (struct hint){ tarindex_node_src(n), n->off, n->off + size };
	return 1;
}

/* Whether e continues h in its source (the gap between them a tar's
 * headers and padding) within a hint's span: then h takes it in. */
static int join(struct hint *h, const struct hint *e)
{
	if (e->src != h->src || e->off < h->end || e->off - h->end > SOURCE_WILLNEED_GAP ||
	    e->end - h->off > SOURCE_WILLNEED_SPAN)
		return 0;
	h->end = e->end;
	return 1;
}

/* Hints ahead of s's reader (those whose records it has not all passed),
 * the others forgotten; a depth past IN_HINTS counts none (it bounds
 * nothing: local sources). */
static unsigned hints_ahead(const struct in_ahead *a, struct in_stream *s)
{
	while (s->nhints && s->hint_last[s->hint0] < s->cur_i) {
		s->hint0 = (s->hint0 + 1) % IN_HINTS;
		s->nhints--;
	}
	return a->depth <= IN_HINTS ? s->nhints : 0;
}

/* Notes a hint ending with record last (the oldest is dropped from a full
 * ring: only with a depth past IN_HINTS, which counts none). */
static void note_hint(struct in_stream *s, uint64_t last)
{
	if (s->nhints == IN_HINTS) {
		s->hint0 = (s->hint0 + 1) % IN_HINTS;
		s->nhints--;
	}
	s->hint_last[(s->hint0 + s->nhints++) % IN_HINTS] = last;
}

/*
 * The bytes s may have advised past its reader: the budget, or with a
 * shared one (URL sources: what lands waits in the mount's memory cache
 * for its reader) an equal part of it for each stream read in the last
 * IN_ACTIVE_MS, s included.  Under the lock.
 */
static uint64_t stream_budget(const struct in_ahead *a, const struct in_stream *s)
{
	int64_t now;
	uint64_t n = 0;
	int i;

	if (!a->shared)
		return a->budget;
	now = sfs_now_ns();
	for (i = 0; i < IN_STREAMS; i++)
		if (a->s[i].ino && (&a->s[i] == s ||
				    now - a->s[i].read_ns < IN_ACTIVE_MS * 1000000LL))
			n++;
	return a->budget / (n ? n : 1);
}

/*
 * Whether hint h, records [first, last) of s, goes on from the record
 * before it in the same local source (a header and padding apart: an
 * ordered shard's next members) and is of small members, and so is left
 * to the source's own readahead: the daemon reads that source in order,
 * and the kernel's readahead of it follows (read_ahead_kb, megabytes).
 * Advice on top of it queued the same bytes deep, and more READs waited
 * for them, each made twice (the no-wait try, then a worker): at 3 KB
 * members a cold ordered shard streamed at 0.65x its rate without advice.
 * Members of SMALL_MEMBER or more are advised still: there the advice's
 * depth keeps the disk busier (60-160 KB: 1.46 against 1.29 GB/s without,
 * tools/bench/seqbench.sh's data).  A shuffled shard's members lie apart,
 * and URL sources are always advised (a hint is one GET for many).
 */
#define SMALL_MEMBER (16u << 10)
static int goes_on(const struct in_ahead *a, const struct in_stream *s, uint64_t first,
		   uint64_t last, const struct hint *h)
{
	struct hint p;

	return !a->shared && first > 0 && (h->end - h->off) / (last - first) < SMALL_MEMBER &&
	       record_range(s, first - 1, &p) && p.src == h->src && h->off >= p.end &&
	       h->off - p.end <= SOURCE_WILLNEED_GAP;
}

/*
 * Moves s's advice on to the records that start within the budget past
 * the reader, as hints into out (BATCH at most, `depth` ahead of the
 * reader at most).  Records that lie next to each other in their source
 * (an ordered shard's) make one hint, up to SOURCE_WILLNEED_SPAN: a URL
 * source fetches it with one GET.  A hint that the budget cut while the
 * next record would still join it waits, unadvised, until it can be
 * min(span, budget / 2) long: else a reader going on record by record
 * would free the budget a record at a time, and each record would be a
 * GET of its own again.  A hint of small members that goes on from the
 * record before it in a local source is not given (goes_on).  Walks
 * PLAN_RECORDS records at most.  Clears s->dirty once caught up.  Under
 * the lock.
 */
static int plan(const struct in_ahead *a, struct in_stream *s, struct hint *out)
{
	uint64_t budget = stream_budget(a, s), stop, i, off, first;
	uint64_t hold = budget / 2 < SOURCE_WILLNEED_SPAN ? budget / 2 : SOURCE_WILLNEED_SPAN;
	struct hint h, e, t;
	unsigned walked = 0;
	int k = 0;

	follow(s);
	if (s->ahead_i < s->cur_i) {	/* the reader overtook the advice */
		s->ahead_i = s->cur_i;
		s->ahead_off = s->cur_off;
	}
	stop = s->next + budget;
	while (k < BATCH && walked < PLAN_RECORDS && s->ahead_i < s->n && s->ahead_off < stop &&
	       hints_ahead(a, s) < a->depth) {
		first = i = s->ahead_i;
		off = s->ahead_off + record_bytes(s, i);
		walked++;
		if (!record_range(s, i++, &h)) {	/* no advice for it */
			s->ahead_i = i;
			s->ahead_off = off;
			continue;
		}
		for (; i < s->n && off < stop && walked < PLAN_RECORDS &&
		       record_range(s, i, &e) && join(&h, &e); walked++)
			off += record_bytes(s, i++);
		t = h;
		if (i < s->n && off >= stop && h.end - h.off < hold &&
		    record_range(s, i, &e) && join(&t, &e))
			break;	/* cut short by the budget: the reader frees more */
		if (!goes_on(a, s, first, i, &h)) {
			out[k++] = h;
			note_hint(s, i - 1);
		}
		s->ahead_i = i;
		s->ahead_off = off;
	}
	if (k < BATCH && walked < PLAN_RECORDS)
		s->dirty = 0;
	return k;
}

/* a dirty stream, the least recently advised first, or NULL (locked) */
static struct in_stream *dirty_stream(struct in_ahead *a, unsigned *rr)
{
	unsigned i;

	for (i = 0; i < IN_STREAMS; i++) {
		struct in_stream *s = &a->s[(*rr + i) % IN_STREAMS];

		if (s->ino && s->dirty) {
			*rr = (*rr + i + 1) % IN_STREAMS;
			return s;
		}
	}
	return NULL;
}

/* An advisor: a batch of one dirty stream at a time, round robin.  A
 * slot taken over while its batch is advised only costs that batch. */
static void *advisor(void *arg)
{
	struct in_ahead *a = arg;
	const struct in_split *sp;
	struct hint todo[BATCH];
	struct in_stream *s;
	unsigned rr = 0;
	int k, i;

	pthread_mutex_lock(&a->lock);
	while (!a->stopping) {
		if (!(s = dirty_stream(a, &rr))) {
			pthread_cond_wait(&a->more, &a->lock);
			continue;
		}
		sp = s->sp;
		k = plan(a, s, todo);	/* the orders are only read locked */
		if (s->dirty)	/* more than a batch to ask: another advisor helps */
			pthread_cond_signal(&a->more);
		pthread_mutex_unlock(&a->lock);
		/* sp->t only: an epoch's orders may be freed meanwhile
		 * (imagenet_ahead_forget), its tarindex never is */
		for (i = 0; i < k; i++)
			source_advise(tarindex_src(&sp->t, todo[i].src), todo[i].off,
				      todo[i].end - todo[i].off, SOURCE_ADV_WILLNEED);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

void imagenet_ahead_forget(struct in_ahead *a, const struct in_split *sp)
{
	int i;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < IN_STREAMS; i++)
		if (a->s[i].ino && a->s[i].sp == sp)
			memset(&a->s[i], 0, sizeof(a->s[i]));
	pthread_mutex_unlock(&a->lock);
}

void imagenet_ahead(struct in_ahead *a, const struct in_shard *sh, uint64_t ino,
		    uint64_t off, size_t len)
{
	uint64_t end = off + len;
	struct in_stream *s;
	int64_t now;

	if (!a->budget || !sh->n || !len)
		return;
	now = a->shared ? sfs_now_ns() : 0;	/* stream_budget's */
	pthread_mutex_lock(&a->lock);
	s = find_stream(a, ino, off);
	if (!s) {
		open_stream(a, sh, ino, end, now);
	} else {
		s->used = ++a->tick;
		s->read_ns = now;
		if (end > s->next)
			s->next = end;
		s->dirty = 1;
		while (!a->stopping && a->started < IN_ADVISORS &&
		       !pthread_create(&a->advisor[a->started], NULL, advisor, a))
			a->started++;
		pthread_cond_signal(&a->more);
	}
	pthread_mutex_unlock(&a->lock);
}
