/*
 * httpahead.c - reading an HTTP source ahead of its reader: the stream
 * windows of sequential reads, the walks of index builds, the prefetch
 * threads that fetch both, and source_advise(WILLNEED).  Called by
 * httpcache.c (each read notes itself here and queues what follows it)
 * and http.c (threads, advice); fetches through httpfetch.c.
 *
 * Sequential reads: a read that goes on where the last one of its source
 * ended is sequential; from the second in a row a window opens (RA_START
 * blocks, doubling per read up to ra_max) and a fetch also takes the
 * window's blocks.  Past that, while reads go on in order, prefetch threads
 * keep up to AHEAD_JOBS requests of a window each running ahead of the
 * reader (BUILD_JOBS for an index build's reads), so a sequential pass
 * streams instead of waiting a round trip per window.
 *
 * Scattered reads: a read (up to 1 MiB, a READ's largest) that starts no
 * stream, in a source larger than the memory cache and with no disk cache,
 * and alone in its 1 MiB region among the last REGIONS such reads, fetches
 * only its own bytes and keeps none: a block around a random member of a large tar is not read
 * again before it is evicted.  Reads that come back to a region fetch
 * blocks.
 *
 * Prefetches run on PREFETCHERS threads per mount, from a queue of
 * QUEUE_MAX; each has a deadline of its own and no cancel flag, and fails
 * quietly.
 *
 * Not for: the reads themselves (httpcache.c), blocks and requests
 * (httpfetch.c).
 */
#include "io/http/http_int.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "clock.h"

#define RA_START   2            /* blocks read ahead once reads go forward */
#define AHEAD_JOBS 2            /* prefetches of one source at once */
/* ... and with source_advise(WILLNEED) hints (SOURCE_WILLNEED_MAX): a
 * layout asks for the members ahead of a shard's reader one range each
 * (imagenet_ahead.h), and needs as many in flight as there are prefetch
 * threads, and a few queued */
_Static_assert(SOURCE_WILLNEED_MAX >= PREFETCHERS, "hints for every prefetcher");
/* a hint of SOURCE_WILLNEED_SPAN bytes, anywhere, is one fetch of the
 * blocks around it (hf_fetch takes RUN_MAX + RA_MAX); a gap of a block
 * costs a joined hint a block at most */
#define HINT_BLOCKS (SOURCE_WILLNEED_SPAN / BLOCK + 1)
_Static_assert(SOURCE_WILLNEED_SPAN % BLOCK == 0 && HINT_BLOCKS <= RUN_MAX + RA_MAX,
	       "a hint's span is one fetch");
_Static_assert(SOURCE_WILLNEED_GAP <= BLOCK, "a hint's gap costs a block at most");
#define BUILD_JOBS 6            /* an index build's readahead windows in flight */
/* walks (walk_note, walk_shape) */
#define WALK_GAPS      8            /* the last gaps that decide: stream or hop */
#define WALK_JOBS      6            /* windows in flight at most */
#define WALK_WIN_MIN   4            /* blocks in a window at least */
#define WALK_WIN_MAX   (RUN_MAX + RA_MAX) /* and at most: one hf_fetch */
#define WALK_DEPTH_MIN (1u << 20)   /* bytes in flight at least */

/*
 * Whether a read that starts no stream lands in a region (REGION_SHIFT)
 * no recent such read did, and remembers its region (h->lock held).  Reads
 * scattered over a large source (random members of a 4.8 GB tar) are
 * alone: a block of them is never read again, so they fetch only their
 * bytes; reads shuffled within a small part (one class's tar, a small
 * file) come back to a region and fetch blocks, which their neighbours
 * then find in the cache.
 */
static int alone(struct http_src *h, uint64_t off)
{
	uint64_t reg = (off >> REGION_SHIFT) + 1;
	unsigned i;

	for (i = 0; i < REGIONS; i++)
		if (h->regions[i] == reg)
			return 0;
	h->regions[h->region_next] = reg;
	h->region_next = (h->region_next + 1) % REGIONS;
	return 1;
}

/*
 * Notes a read of blocks b0..b1 (from byte off) for readahead and gives
 * the window to read ahead with.  From the second sequential read in a
 * row, not the first: two reads of one member of an archive, read at
 * random, should not pull in the members after it.  *lone: the read starts
 * no stream and is alone in its region (see alone()).
 */
unsigned ha_note_read(struct http_src *h, uint64_t b0, uint64_t b1,
			  uint64_t off, int *lone)
{
	unsigned win;

	pthread_mutex_lock(&h->lock);
	if (h->ra_next != UINT64_MAX && (b0 == h->ra_next || b0 == h->ra_next + 1))
		h->ra_seq++;
	else
		h->ra_seq = h->ahead = 0;	/* a new stream, if any */
	if (h->ra_seq < 2)
		h->ra_win = 0;
	else
		h->ra_win = h->ra_win ? h->ra_win * 2 : RA_START;
	if (h->ra_win > h->he->ra_max)
		h->ra_win = h->he->ra_max;
	h->ra_next = b1;
	win = h->ra_win;
	*lone = h->ra_seq == 0 && alone(h, off);
	pthread_mutex_unlock(&h->lock);
	return win;
}

/* ---- prefetch ---- */

/* A prefetch thread's job: blocks lo..hi of s but those cached or on
 * their way, as few requests as others' fetches in the window leave (a
 * walk's reader may have sent for its header's block while the window
 * waited for a thread: the rest of the window is still wanted).  Stops
 * at the first failure, quietly: its reader asks again, and says why. */
static void prefetch_run(const struct prefetch *p)
{
	struct http_src *h = p->s->priv;
	struct rd r = { p->s, h, NULL, 0, 0, p->s->stamp.size,
			sfs_now_ns() + h->he->read_timeout_ns, NULL, p->build, NULL,
			sfs_now_ns(), 0, NULL, 0 };
	uint64_t lo = p->lo, hi;
	int slot, i, rc = 0;

	while (rc == 0 && lo <= p->hi) {
		while (lo <= p->hi && (hf_from_memory(&r, lo) || hf_from_disk(&r, lo)))
			lo++;
		if (lo > p->hi || atomic_load(&r.s->changed))
			return;
		pthread_mutex_lock(&r.h->lock);
		if ((i = hf_flight_over(&r, lo, lo)) >= 0) {
			lo = r.h->flight[i].hi + 1;	/* past another's fetch */
			pthread_mutex_unlock(&r.h->lock);
			continue;
		}
		hi = p->hi;
		slot = hf_record(r.h, lo, lo, &hi);	/* up to the next such */
		pthread_mutex_unlock(&r.h->lock);
		/* its failure is not kept for others: quiet */
		rc = hf_fetch(&r, lo, hi, 1);
		hf_release(&r, slot, 0, 0, 0);
		lo = hi + 1;
	}
}

static void *prefetcher(void *arg)
{
	struct http_env *he = arg;
	struct prefetch p;
	struct http_src *h;

	pthread_mutex_lock(&he->q_lock);
	for (;;) {
		while (!he->q_len && !he->stopping)
			pthread_cond_wait(&he->q_more, &he->q_lock);
		if (he->stopping)
			break;
		p = he->queue[0];
		memmove(he->queue, he->queue + 1, --he->q_len * sizeof(he->queue[0]));
		pthread_mutex_unlock(&he->q_lock);
		prefetch_run(&p);
		/* after this, p.s may be closed at any time */
		h = p.s->priv;
		pthread_mutex_lock(&h->lock);
		h->jobs--;
		pthread_cond_broadcast(&h->landed);
		pthread_mutex_unlock(&h->lock);
		pthread_mutex_lock(&he->q_lock);
	}
	pthread_mutex_unlock(&he->q_lock);
	return NULL;
}

void httpahead_start(struct http_env *he)
{
	pthread_mutex_lock(&he->q_lock);
	while (!he->stopping && he->nthreads < PREFETCHERS &&
	       !pthread_create(&he->threads[he->nthreads], NULL, prefetcher, he))
		he->nthreads++;
	pthread_mutex_unlock(&he->q_lock);
}

void httpahead_stop(struct http_env *he)
{
	unsigned i;

	pthread_mutex_lock(&he->q_lock);
	he->stopping = 1;
	pthread_cond_broadcast(&he->q_more);
	pthread_mutex_unlock(&he->q_lock);
	for (i = 0; i < he->nthreads; i++)
		pthread_join(he->threads[i], NULL);
	he->nthreads = 0;
}

/* Drops s's prefetches still queued (h->lock held). */
static void unqueue(struct source *s)
{
	struct http_src *h = s->priv;
	struct http_env *he = h->he;
	unsigned i, kept = 0;

	pthread_mutex_lock(&he->q_lock);
	for (i = 0; i < he->q_len; i++)
		if (he->queue[i].s != s)
			he->queue[kept++] = he->queue[i];
	h->jobs -= he->q_len - kept;
	he->q_len = kept;
	pthread_mutex_unlock(&he->q_lock);
}

void httpahead_forget(struct source *s)
{
	struct http_src *h = s->priv;

	pthread_mutex_lock(&h->lock);
	unqueue(s);
	while (h->jobs)
		pthread_cond_wait(&h->landed, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

/* Queues a prefetch of blocks lo..hi of s, whose h->jobs the caller has
 * counted (and which is uncounted here when the queue cannot take it). */
static void queue_prefetch(struct source *s, uint64_t lo, uint64_t hi, int build)
{
	struct http_src *h = s->priv;
	struct http_env *he = h->he;
	int queued = 0;

	pthread_mutex_lock(&he->q_lock);
	if (he->nthreads && he->q_len < QUEUE_MAX && !he->stopping) {
		he->queue[he->q_len++] = (struct prefetch){ s, lo, hi, build };
		pthread_cond_signal(&he->q_more);
		queued = 1;
	}
	pthread_mutex_unlock(&he->q_lock);
	if (!queued) {
		pthread_mutex_lock(&h->lock);
		h->jobs--;
		pthread_cond_broadcast(&h->landed);
		pthread_mutex_unlock(&h->lock);
	}
}

/*
 * After a read ending in block b1: queues prefetches of windows of win
 * blocks after the last block the stream has fetched or queued (h->ahead),
 * while they end within jobs + 1 windows of the reader and fewer than jobs
 * of the source's are queued or running.  Never waits (no-wait mode calls
 * it).  For sequential reads jobs is AHEAD_JOBS, BUILD_JOBS for a build's
 * read (ha_prefetch_after); a walk's are shaped by the link (walk_shape).
 */
static void queue_windows(const struct rd *r, uint64_t b1, unsigned win,
			  unsigned jobs)
{
	uint64_t last = (r->size - 1) / BLOCK, lo, hi;

	if (b1 >= last)
		return;
	for (;;) {
		pthread_mutex_lock(&r->h->lock);
		lo = r->h->ahead >= b1 + 1 ? r->h->ahead + 1 : b1 + 1;
		/* whole windows only, within jobs + 1 of the reader: it reads
		 * a landed window at memory speed, then waits on the next */
		if (lo > last || lo > b1 + (uint64_t)jobs * win + 1 || r->h->jobs >= jobs) {
			pthread_mutex_unlock(&r->h->lock);
			return;
		}
		hi = lo + win - 1 < last ? lo + win - 1 : last;
		r->h->ahead = hi;
		r->h->jobs++;
		pthread_mutex_unlock(&r->h->lock);
		queue_prefetch(r->s, lo, hi, r->build);
	}
}

void ha_prefetch_after(const struct rd *r, uint64_t b1, unsigned win)
{
	if (win >= RA_START * 2)
		queue_windows(r, b1, win, r->build ? BUILD_JOBS : AHEAD_JOBS);
}

/*
 * source_advise(WILLNEED): the blocks of [off, off + len) (those of its
 * first SOURCE_WILLNEED_SPAN bytes at most: one request) are fetched by a
 * prefetch thread unless they are in memory or on their way: a layout's
 * hint that a reader is about to start there (the next class of an epoch,
 * the next members of a shard, joined when they lie next to each other).
 * The reader's own readahead then starts as usual and skips what landed.
 * Never waits.
 */
void httpahead_willneed(struct source *s, uint64_t off, uint64_t len)
{
	struct http_src *h = s->priv;
	uint64_t size = s->stamp.size, lo, hi;

	if (off >= size || !len || atomic_load(&s->changed))
		return;
	if (len > size - off)
		len = size - off;
	lo = off / BLOCK;
	hi = (off + len - 1) / BLOCK;
	if (hi - lo >= HINT_BLOCKS)
		hi = lo + HINT_BLOCKS - 1;
	pthread_mutex_lock(&h->lock);
	if (h->jobs >= SOURCE_WILLNEED_MAX) {
		pthread_mutex_unlock(&h->lock);
		return;
	}
	h->jobs++;
	pthread_mutex_unlock(&h->lock);
	queue_prefetch(s, lo, hi, source_build_since() != 0);
}

/* ---- walks (SOURCE_ADV_WALK) ---- */

/*
 * A walk that ends (on 0) drops its windows still queued (none should be:
 * the walk waited for each window holding a header, in order, up to the
 * archive's end).  The blocks it streamed stay in the memory cache, as a
 * sequential reader's do: a tar smaller than the cache is then read from
 * memory, a larger one's last stretch.  The regions its header reads
 * noted (a walk that hops reads one header per member) are forgotten: they
 * say nothing of where the readers will go, and a reader's random member
 * in one of them would fetch blocks instead of only its bytes.
 */
void httpahead_walk(struct source *s, int on)
{
	struct http_src *h = s->priv;

	pthread_mutex_lock(&h->lock);
	h->walk = on;
	h->w_end = 0;
	h->w_short = h->w_gaps = 0;
	memset(h->regions, 0, sizeof(h->regions));
	h->region_next = 0;
	if (!on)
		unqueue(s);
	pthread_mutex_unlock(&h->lock);
}

/*
 * Notes the gap between the walk's last read and this one, [off, end),
 * and says whether the walk streams (h->lock held): when at least half of
 * its last WALK_GAPS gaps were short.  A gap is short within what the link
 * delivers in half the round trip of a request alone (hf_link_bdp(, 1)
 * / 2): reading through it costs less than the hop over it would, with a
 * margin for the rate, an estimate summed over concurrent requests (at a
 * whole round trip, a tar of 25 MB members at 20 ms streamed 4 times the
 * bytes it hops with, and took longer).  So a walk streams from its first
 * gap on when that is short (the first request timed the latency; until a
 * window times the rate it is guessed high: hf_link_bdp), until its gaps
 * say otherwise.  A read at or before the last one's end (the archive's
 * first header read again, a nested tar's first header read to see
 * whether it is one, then walked) is no gap.
 */
static int walk_note(struct http_src *h, uint64_t off, uint64_t end)
{
	uint64_t bdp = hf_link_bdp(h->he, 1);
	unsigned n;

	if (h->w_end && off >= h->w_end) {
		h->w_short = (h->w_short << 1 | (off - h->w_end <= bdp / 2)) &
			     ((1u << WALK_GAPS) - 1);
		if (h->w_gaps < WALK_GAPS)
			h->w_gaps++;
	}
	if (end > h->w_end)
		h->w_end = end;
	n = h->w_gaps;
	return n && 2 * (unsigned)__builtin_popcount(h->w_short & ((1u << n) - 1)) >= n;
}

/*
 * A streaming walk's windows: twice what the link delivers in a round
 * trip as the windows see it in flight (so the pipe stays full while each
 * window waits for its first byte), at least WALK_DEPTH_MIN, at most
 * half the memory cache (landed windows wait there for the walk, and must
 * not push each other out; the build's memory stays within 1.5 times
 * cache_mem), cut into up to WALK_JOBS windows of WALK_WIN_MIN to
 * WALK_WIN_MAX blocks.
 */
static void walk_shape(const struct http_env *he, unsigned *win, unsigned *jobs)
{
	uint64_t depth = 2 * hf_link_bdp(he, 0), cap = he->cache_bytes / 2, w;

	if (depth < WALK_DEPTH_MIN)
		depth = WALK_DEPTH_MIN;
	if (depth > cap)
		depth = cap;
	w = depth / WALK_JOBS / BLOCK;
	if (w > WALK_WIN_MAX)
		w = WALK_WIN_MAX;
	if (w < WALK_WIN_MIN)
		w = WALK_WIN_MIN;
	*win = (unsigned)w;
	w = depth / (w * BLOCK);
	*jobs = w < 1 ? 1 : w > WALK_JOBS ? WALK_JOBS : (unsigned)w;
}

int ha_walk_ahead(const struct rd *r, uint64_t b1)
{
	unsigned win, jobs;
	int stream;

	/* the walk's first reads (the archive's first header, which says
	 * whether it is a tar at all) have no gap before them: reads like
	 * any other */
	pthread_mutex_lock(&r->h->lock);
	stream = r->h->walk && walk_note(r->h, r->off, r->end);
	pthread_mutex_unlock(&r->h->lock);
	if (!stream)
		return 0;
	walk_shape(r->h->he, &win, &jobs);
	queue_windows(r, b1, win, jobs);
	return 1;
}
