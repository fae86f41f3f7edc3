/*
 * imagenet_ahead.c - prefetch in a shard's order (imagenet_ahead.h): the
 * readers' stream slots, and the advice for the members ahead of each.
 */
#include "layouts/imagenet_ahead.h"

#include <string.h>

#include "layouts/imagenet_samples.h"
#include "io/source.h"

/* members advised by one read at most: bounds the time a read spends
 * asking (the rest is asked for by the reads that follow) */
#define BATCH 256

void imagenet_ahead_init(struct in_ahead *a, uint64_t budget, uint64_t depth)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	a->budget = budget;
	a->depth = depth;
}

void imagenet_ahead_destroy(struct in_ahead *a)
{
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
static void open_stream(struct in_ahead *a, uint64_t ino, uint64_t end)
{
	struct in_stream *s = &a->s[0];
	int i;

	for (i = 1; i < IN_STREAMS && s->ino; i++)
		if (!a->s[i].ino || a->s[i].used < s->used)
			s = &a->s[i];
	*s = (struct in_stream){ .ino = ino, .next = end, .cur_i = UINT64_MAX,
				 .used = ++a->tick };
}

/* the record whose bytes hold vtar offset off (past the body: the last) */
static uint64_t record_at(const struct in_shard *sh, uint64_t off)
{
	uint64_t lo = 0, hi = sh->n;

	while (hi - lo > 1) {	/* record lo starts at or before off */
		uint64_t mid = lo + (hi - lo) / 2;

		if (imagenet_cum_offset(sh->sp, sh->first + mid) - sh->base <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t record_bytes(const struct in_shard *sh, uint64_t i)
{
	return imagenet_record_bytes(sh->sp, sh->first + i);
}

/* s->cur_i/cur_off on to the record holding s->next: a step or two
 * forward for a reader going on, a search when new or gone back */
static void follow(struct in_stream *s, const struct in_shard *sh)
{
	uint64_t rb;

	if (s->cur_i == UINT64_MAX || s->next < s->cur_off) {
		s->cur_i = record_at(sh, s->next);
		s->cur_off = imagenet_cum_offset(sh->sp, sh->first + s->cur_i) - sh->base;
		s->ahead_i = s->cur_i;
		s->ahead_off = s->cur_off;
		return;
	}
	while (s->cur_i + 1 < sh->n && s->cur_off + (rb = record_bytes(sh, s->cur_i)) <= s->next) {
		s->cur_off += rb;
		s->cur_i++;
	}
}

/*
 * Moves s's advice on to the records that start within the budget past
 * the reader (and within `depth` records of it); their positions in the
 * split go into out (BATCH at most).  Under the lock.
 */
static int plan(const struct in_ahead *a, struct in_stream *s,
		const struct in_shard *sh, uint64_t *out)
{
	int k = 0;

	follow(s, sh);
	if (s->ahead_i < s->cur_i) {	/* the reader overtook the advice */
		s->ahead_i = s->cur_i;
		s->ahead_off = s->cur_off;
	}
	while (k < BATCH && s->ahead_i < sh->n && s->ahead_i - s->cur_i < a->depth &&
	       s->ahead_off < s->next + a->budget) {
		out[k++] = sh->first + s->ahead_i;
		s->ahead_off += record_bytes(sh, s->ahead_i);
		s->ahead_i++;
	}
	return k;
}

/* WILLNEED for the data of the sample at split position p, when it is
 * one range of its source */
static void advise_position(const struct in_split *sp, uint64_t p)
{
	uint32_t node = in_split_node(sp, sp->ord[p]);
	const struct tarindex_node *n = tarindex_node(&sp->t, node);
	uint64_t size = tarindex_node_size(n);

	if (size && tarindex_in_place(&sp->t, node))
		source_advise(tarindex_src(&sp->t, tarindex_node_src(n)), n->off, size,
			      SOURCE_ADV_WILLNEED);
}

void imagenet_ahead(struct in_ahead *a, const struct in_shard *sh, uint64_t ino,
		    uint64_t off, size_t len)
{
	uint64_t todo[BATCH], end = off + len;
	struct in_stream *s;
	int k = 0, i;

	if (!a->budget || !sh->n || !len)
		return;
	pthread_mutex_lock(&a->lock);
	s = find_stream(a, ino, off);
	if (!s) {
		open_stream(a, ino, end);
	} else {
		s->used = ++a->tick;
		if (end > s->next)
			s->next = end;
		k = plan(a, s, sh, todo);
	}
	pthread_mutex_unlock(&a->lock);
	for (i = 0; i < k; i++)
		advise_position(sh->sp, todo[i]);
}
