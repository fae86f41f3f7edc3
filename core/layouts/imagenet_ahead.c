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
 */
#include "layouts/imagenet_ahead.h"

#include <string.h>

#include "layouts/imagenet_samples.h"
#include "io/source.h"
#include "search.h"

/* members one advisor takes at once: small, so that the advisors share a
 * stream's advice, and a new stream is served soon */
#define BATCH 16

void imagenet_ahead_init(struct in_ahead *a, uint64_t budget, uint64_t depth)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->more, NULL);
	a->budget = budget;
	a->depth = depth;
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
			uint64_t end)
{
	struct in_stream *s = &a->s[0];
	int i;

	for (i = 1; i < IN_STREAMS && s->ino; i++)
		if (!a->s[i].ino || a->s[i].used < s->used)
			s = &a->s[i];
	*s = (struct in_stream){ .ino = ino, .sp = sh->sp, .first = sh->first,
				 .n = sh->n, .base = sh->base, .next = end,
				 .cur_i = UINT64_MAX, .used = ++a->tick };
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
		return;
	}
	while (s->cur_i + 1 < s->n && s->cur_off + (rb = record_bytes(s, s->cur_i)) <= s->next) {
		s->cur_off += rb;
		s->cur_i++;
	}
}

/*
 * Moves s's advice on to the records that start within the budget past
 * the reader (and within `depth` records of it); their positions in the
 * split go into out (BATCH at most).  Clears s->dirty once caught up.
 * Under the lock.
 */
static int plan(const struct in_ahead *a, struct in_stream *s, uint64_t *out)
{
	int k = 0;

	follow(s);
	if (s->ahead_i < s->cur_i) {	/* the reader overtook the advice */
		s->ahead_i = s->cur_i;
		s->ahead_off = s->cur_off;
	}
	while (k < BATCH && s->ahead_i < s->n && s->ahead_i - s->cur_i < a->depth &&
	       s->ahead_off < s->next + a->budget) {
		out[k++] = s->first + s->ahead_i;
		s->ahead_off += record_bytes(s, s->ahead_i);
		s->ahead_i++;
	}
	if (k < BATCH)
		s->dirty = 0;
	return k;
}

/* WILLNEED for the data of tarindex node `node` of split sp, when it is
 * one range of its source (read in place, or copied through its
 * checksums: -o checksums).  Reads sp->t only: an epoch's orders may be
 * freed meanwhile (imagenet_ahead_forget), its tarindex never is. */
static void advise_node(const struct in_split *sp, uint32_t node)
{
	const struct tarindex_node *n = tarindex_node(&sp->t, node);
	uint64_t size = tarindex_node_size(n);

	if (size && (tarindex_in_place(&sp->t, node) || tarindex_summed(&sp->t, node)))
		source_advise(tarindex_src(&sp->t, tarindex_node_src(n)), n->off, size,
			      SOURCE_ADV_WILLNEED);
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
	uint64_t todo[BATCH];
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
		k = plan(a, s, todo);
		for (i = 0; i < k; i++)	/* the orders are only read locked */
			todo[i] = in_split_node(sp, sp->ord[todo[i]]);
		if (s->dirty)	/* more than a batch to ask: another advisor helps */
			pthread_cond_signal(&a->more);
		pthread_mutex_unlock(&a->lock);
		for (i = 0; i < k; i++)
			advise_node(sp, (uint32_t)todo[i]);
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

	if (!a->budget || !sh->n || !len)
		return;
	pthread_mutex_lock(&a->lock);
	s = find_stream(a, ino, off);
	if (!s) {
		open_stream(a, sh, ino, end);
	} else {
		s->used = ++a->tick;
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
