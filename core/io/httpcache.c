/*
 * httpcache.c - reading an HTTP source (see http.c) through block caches.
 *
 * The source is cut into BLOCK-aligned blocks kept in the mount's LRU
 * (cfg.cache_bytes, io/lru.h, keyed by the source's id and the block
 * number) and, with cfg.cache_dir, on disk (diskcache.c).  A read takes
 * what the caches have and fetches each run of missing blocks with one
 * request (httpreq.c), which every response is checked against the stamp.
 *
 * Sequential reads: a read that goes on where the last one of its source
 * ended is sequential; from the second in a row a window opens (RA_START
 * blocks, doubling per read up to ra_max) and a fetch also takes the
 * window's blocks.  Past that, while reads go on in order, prefetch threads
 * keep up to AHEAD_JOBS requests of a window each running ahead of the
 * reader, so a sequential pass streams instead of waiting a round trip per
 * window.
 *
 * Shared fetches (struct flight, http_int.h): a read missing blocks another
 * thread is fetching waits for that fetch rather than asking again, and
 * takes its outcome: the blocks from the cache, or its error, with no
 * round of retries of its own.  A failed read's error is kept for reads of
 * the same bytes that arrive within FAIL_HOLD_MS (the kernel asks again for
 * the page of a failed readahead at once), so a frozen server costs a
 * reader one read_timeout, not one per request the kernel sends; reads of
 * other bytes in the same blocks (the next member) send their own, so a
 * server back answers them at once.  A fetch whose reader is cancelled is
 * dropped; reads that waited for it send their own.
 *
 * Bounds: each read has a deadline (read_timeout_s from its start, or from
 * the arrival of the FUSE request it serves: source_cancel.since) and the
 * thread's cancel flag (source_cancel_scope); both bound its requests
 * (httpreq.c) and its waits for others' (timed waits, POLL_MS apart, on
 * h->landed).  Prefetches have a deadline of their own and no cancel flag.
 *
 * Scattered reads: a small read that starts no stream, in a source larger
 * than the memory cache and with no disk cache, and alone in its 1 MiB
 * region among the last REGIONS such reads, fetches only its own bytes and
 * keeps none: a block around a random member of a large tar is not read
 * again before it is evicted.  Reads that come back to a region fetch
 * blocks as above.
 *
 * Index builds (source_build): a build's read that fails is sent again
 * with backoff (BUILD_BACKOFF_MS doubling to BUILD_BACKOFF_MAX, jittered)
 * until build_timeout_s after the build started, unless its source
 * changed or it was cancelled; its requests give up after BUILD_STALL_S
 * without progress rather than timeout_s (a trickle costs seconds, not
 * 30 s, and the retry usually lands on a healthy answer); its failures are
 * not held for FAIL_HOLD_MS (nobody else reads, and its next round must
 * send again); a wait for another thread's fetch lasts HEDGE_MS at most
 * from that fetch's start, after which the read sends its own request for
 * the blocks (a hedge: one slow request of the store does not stall the
 * build, and whichever answer lands first fills the cache); and its
 * sequential readahead keeps up to BUILD_JOBS windows in flight, not
 * AHEAD_JOBS.  The whole-file reads of a tar's header walk are sequential,
 * so that window is what runs ahead of the walk.
 *
 * No-wait mode: a read fully in memory is served (and may start prefetches,
 * which only queue), else -EAGAIN at once.
 *
 * Failures are logged here, rate-limited by log.c, naming the URL, the
 * byte range and the last cause; that read gives EIO (reads sharing the
 * failure say nothing more).  An index build's read says a failed round
 * as a warning, and only giving up as an error.  Prefetches fail quietly:
 * the read that needed the blocks asks again, and says so.  A cancelled
 * read gives EINTR, unlogged: its reader is gone.
 *
 * Not for: opening, names and listings (http.c), requests (httpreq.c).
 */
#include "io/http_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clock.h"
#include "io/diskcache.h"
#include "io/httpreq.h"
#include "io/lru.h"
#include "log.h"

#define RA_START   2            /* blocks read ahead once reads go forward */
#define RUN_MAX    64           /* missing blocks of a read in one request */
#define WAITS_MAX  3            /* for others' fetches, in one read */
#define AHEAD_JOBS 2            /* prefetches of one source at once */
/* ... and with source_advise(WILLNEED) hints (SOURCE_WILLNEED_MAX): a
 * layout asks for the members ahead of a shard's reader one range each
 * (imagenet_ahead.h), and needs as many in flight as there are prefetch
 * threads, and a few queued */
_Static_assert(SOURCE_WILLNEED_MAX >= PREFETCHERS, "hints for every prefetcher");
#define EXACT_MAX  BLOCK        /* reads alone in their region fetch only their bytes */
#define POLL_MS    50           /* a waiting read looks at its cancel flag this often */
/* Index builds (source_build).  A stall of 2 s: a healthy store answers
 * a 4 MiB range in well under a second even across a continent; the
 * request is retried, not failed, so a slow but live store costs retries,
 * never the build. */
#define BUILD_STALL_S     2
#define HEDGE_MS          1000   /* a wait for another's fetch, then our own */
#define BUILD_JOBS        6      /* readahead windows in flight */
#define BUILD_BACKOFF_MS  500    /* a failed read's first wait; doubles */
#define BUILD_BACKOFF_MAX 15000

/* One read: [off, end) of a source of `size` bytes, into buf; a prefetch
 * is a read of nothing (buf NULL, off = end = 0).  It gives up at deadline
 * (sfs_now_ns) or when cancel is set. */
struct rd {
	struct source *s;
	struct http_src *h;
	char *buf;
	uint64_t off, end, size;
	int64_t deadline;
	const struct source_cancel *cancel;
	int build;              /* an index build's read (source_build) */
	int *hard;              /* set when a failure is not worth sending
				 * again (httpresp.retryable); may be NULL */
	int64_t since;          /* when its request arrived (sfs_now_ns) */
	int fresh;              /* source_refetch: no cached copy is taken,
				 * and the caches' are replaced */
	char *why;              /* a build's read: its failures are said
				 * here (whylen bytes), for build_read to
				 * say once, instead of logged */
	size_t whylen;
};

static uint64_t key_of(const struct http_src *h, uint64_t b)
{
	return (uint64_t)h->id << 32 | b;
}

static size_t block_len(const struct rd *r, uint64_t b)
{
	uint64_t left = r->size - b * BLOCK;

	return left < BLOCK ? (size_t)left : BLOCK;
}

/* The part of block b the read wants: [*lo, *hi) of the source; 0 when
 * it wants none. */
static int piece(const struct rd *r, uint64_t b, uint64_t *lo, uint64_t *hi)
{
	*lo = b * BLOCK;
	*hi = *lo + block_len(r, b);
	if (*lo < r->off)
		*lo = r->off;
	if (*hi > r->end)
		*hi = r->end;
	return *lo < *hi;
}

/* Copies the part of block b (its bytes at data) that the read wants. */
static void take_piece(const struct rd *r, uint64_t b, const char *data)
{
	uint64_t lo, hi;

	if (piece(r, b, &lo, &hi))
		memcpy(r->buf + (lo - r->off), data + (lo - b * BLOCK), hi - lo);
}

/* Block b's piece from memory: 1, or 0 when it is not there. */
static int from_memory(const struct rd *r, uint64_t b)
{
	uint64_t lo, hi;
	char none;

	if (!piece(r, b, &lo, &hi))
		return lru_copy_out(r->h->he->mem, key_of(r->h, b), 0, &none, 0) == 1;
	return lru_copy_out(r->h->he->mem, key_of(r->h, b), lo - b * BLOCK,
			    r->buf + (lo - r->off), hi - lo) == 1;
}

/* Block b from the disk cache into memory, and its piece: 1, or 0. */
static int from_disk(const struct rd *r, uint64_t b)
{
	size_t len = block_len(r, b);
	char *data;

	if (!r->h->disk || !(data = malloc(len)))
		return 0;
	if (!diskcache_get(r->h->he->disk, r->s->name, &r->s->stamp, b, data, len)) {
		free(data);
		return 0;
	}
	take_piece(r, b, data);
	lru_insert(r->h->he->mem, key_of(r->h, b), data, len);
	return 1;
}

/* Block b's piece from the caches, counted (source_env_stats): 1, or 0. */
static int cached(const struct rd *r, uint64_t b)
{
	struct source_counters *c = &r->s->env->ctr;

	if (from_memory(r, b)) {
		SOURCE_COUNT(c, mem_hits);
		return 1;
	}
	SOURCE_COUNT(c, mem_misses);
	if (!r->h->disk)
		return 0;
	if (from_disk(r, b)) {
		SOURCE_COUNT(c, disk_hits);
		return 1;
	}
	SOURCE_COUNT(c, disk_misses);
	return 0;
}

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
static unsigned note_read(struct http_src *h, uint64_t b0, uint64_t b1,
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

/*
 * A FAILED slot is free again once no read that arrived during its hold
 * can still be waiting: read_timeout after the hold (a read queued for a
 * thread since then is out of time), h->lock held.
 */
static void expire(struct http_src *h, struct flight *f, int64_t now)
{
	if (f->state == FL_FAILED && now >= f->until + h->he->read_timeout_ns)
		f->state = FL_FREE;
}

/* Whether the failure held in f is read r's, for its bytes in blocks
 * lo..hi: r arrived before the hold ended and wants some of the bytes of
 * the read that failed (the page the kernel asks for again), not merely
 * others in the same blocks (another member). */
static int held_for(const struct flight *f, const struct rd *r, uint64_t lo,
		    uint64_t hi)
{
	uint64_t a = lo * BLOCK > r->off ? lo * BLOCK : r->off;
	uint64_t b = (hi + 1) * BLOCK < r->end ? (hi + 1) * BLOCK : r->end;

	return r->since < f->until && a < f->end && f->off < b;
}

/* The fetch running over any of blocks lo..hi, or failed for r's bytes
 * there (held_for), or -1 (h->lock held). */
static int flight_over(const struct rd *r, uint64_t lo, uint64_t hi)
{
	int64_t now = sfs_now_ns();
	struct flight *f;
	int i;

	for (i = 0; i < NFLIGHT; i++) {
		f = &r->h->flight[i];
		expire(r->h, f, now);
		if (f->state == FL_FREE || f->hi < lo || hi < f->lo)
			continue;
		if (f->state == FL_RUNNING || held_for(f, r, lo, hi))
			return i;
	}
	return -1;
}

/* Whether a fetch runs over block b (h->lock held). */
static int running_over(const struct http_src *h, uint64_t b)
{
	int i;

	for (i = 0; i < NFLIGHT; i++)
		if (h->flight[i].state == FL_RUNNING && h->flight[i].lo <= b &&
		    b <= h->flight[i].hi)
			return 1;
	return 0;
}

/* A slot for a new fetch: a free one, else the FAILED one whose hold
 * ended first, if one has (only reads queued since wait for it: a fetch
 * not tracked costs more, it is shared with nobody), else -1 (h->lock
 * held). */
static int free_slot(struct http_src *h, int64_t now)
{
	int i, old = -1;

	for (i = 0; i < NFLIGHT; i++) {
		expire(h, &h->flight[i], now);
		if (h->flight[i].state == FL_FREE)
			return i;
		if (h->flight[i].state == FL_FAILED && now >= h->flight[i].until &&
		    (old < 0 || h->flight[i].until < h->flight[old].until))
			old = i;
	}
	return old;
}

/* Trims *hi before others' fetches after `need` and records lo..*hi; its
 * slot, or -1 when all are taken (h->lock held). */
static int record(struct http_src *h, uint64_t lo, uint64_t need, uint64_t *hi)
{
	int64_t now = sfs_now_ns();
	uint64_t b;
	int i;

	for (b = need + 1; b <= *hi; b++)
		if (running_over(h, b))
			break;
	*hi = b - 1;
	if ((i = free_slot(h, now)) >= 0)
		h->flight[i] = (struct flight){ lo, *hi, FL_RUNNING, 0, 0, 0, 0,
						h->flight[i].gen + 1, now };
	return i;
}

/* Whether the read is out of time or cancelled: -EIO or -EINTR, else 0. */
static int read_over(const struct rd *r)
{
	if (r->cancel && atomic_load(&r->cancel->cancelled))
		return -EINTR;
	return sfs_now_ns() >= r->deadline ? -ETIMEDOUT : 0;
}

/*
 * Waits (h->lock held) until fetch i, of generation gen, ends, the read's
 * deadline passes or it is cancelled, looking at the cancel flag every
 * POLL_MS.  1: it ended well, or was dropped (look in the cache again);
 * its error when it failed; -ETIMEDOUT or -EINTR; 2 when a build's read
 * has waited until HEDGE_MS after the fetch started (send your own).
 */
static int wait_for(const struct rd *r, int i, unsigned gen)
{
	struct http_src *h = r->h;
	const struct flight *f = &h->flight[i];
	int64_t until, hedge = f->started + HEDGE_MS * 1000000LL;
	struct timespec ts;
	int rc;

	while (f->gen == gen && f->state == FL_RUNNING) {
		if ((rc = read_over(r)))
			return rc;
		if (r->build && sfs_now_ns() >= hedge)
			return 2;
		until = sfs_now_ns() + POLL_MS * 1000000LL;
		if (until > r->deadline)
			until = r->deadline;
		if (r->build && until > hedge)
			until = hedge;
		ts.tv_sec = (time_t)(until / 1000000000);
		ts.tv_nsec = (long)(until % 1000000000);
		pthread_cond_timedwait(&h->landed, &h->lock, &ts);
	}
	return f->gen == gen && f->state == FL_FAILED ? f->rc : 1;
}

/*
 * Before fetching blocks lo..need (and readahead up to *hi): when another
 * fetch has some of lo..need, waits for it and returns 1 (look in the
 * cache again), or its error when it failed or fails (the read shares its
 * outcome: no round of retries of its own), -ETIMEDOUT or -EINTR.  Else
 * records this fetch (its slot in *slot) and returns 0.  After WAITS_MAX
 * waits a read fetches what it still misses itself.
 */
static int claim(const struct rd *r, uint64_t lo, uint64_t need, uint64_t *hi,
		 int *waits, int *slot)
{
	struct http_src *h = r->h;
	struct flight *f;
	int i, rc = 0, wait;
	unsigned gen;

	pthread_mutex_lock(&h->lock);
	i = flight_over(r, lo, need);
	/* a build's read takes no failure of another round: it sends again */
	wait = i >= 0 && (r->build ? h->flight[i].state == FL_RUNNING && *waits < WAITS_MAX :
			  h->flight[i].state == FL_FAILED || *waits < WAITS_MAX);
	if (wait) {
		++*waits;
		f = &h->flight[i];
		gen = f->gen;
		rc = wait_for(r, i, gen);
		/* its failure is this read's too: held for its bytes as well,
		 * which the kernel may ask for again */
		if (rc < 0 && f->gen == gen && f->state == FL_FAILED) {
			f->off = r->off < f->off ? r->off : f->off;
			f->end = r->end > f->end ? r->end : f->end;
		}
	}
	if (!wait || rc == 2) {
		*slot = record(h, lo, need, hi);	/* ours (a hedge: a second one) */
		rc = 0;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/*
 * Ends read r's fetch that took blocks up to hi with rc: a failure is kept
 * for the reads of r's bytes that arrive within FAIL_HOLD_MS (held_for);
 * a success, or a fetch dropped (-EINTR: its reader was interrupted, the
 * reads waiting for it send their own) or quiet (a prefetch), frees the
 * slot.
 */
static void release(const struct rd *r, int slot, uint64_t hi, int rc, int hold)
{
	struct http_src *h = r->h;
	struct flight *f;

	pthread_mutex_lock(&h->lock);
	if (slot >= 0) {
		f = &h->flight[slot];
		f->state = FL_FREE;
		if (rc && rc != -EINTR && hold) {
			f->state = FL_FAILED;
			f->rc = rc;
			f->until = sfs_now_ns() + FAIL_HOLD_MS * 1000000LL;
			f->off = r->off;
			f->end = r->end;
		}
	}
	if (h->ra_win && hi > h->ahead)
		h->ahead = hi;	/* a sequential stream's readahead */
	pthread_cond_broadcast(&h->landed);
	pthread_mutex_unlock(&h->lock);
}

#define PLURAL(n) ((n) == 1 ? "" : "s")

/*
 * Logs a read that failed and gives its errno (-EIO).  One call site per
 * kind of cause: log.c rate-limits by call site, so a burst of timeouts
 * does not hide the first "ignores Range" or change after it.  A build's
 * read (r->why) logs nothing but a change: the cause goes to r->why, and
 * build_read says it once, as a warning while it sends the read again,
 * as an error when it gives up (a build that ends well logs no error).
 */
static int read_failed(const struct rd *r, const struct httpreq *req,
		       const struct httpresp *resp, int quiet)
{
	const char *u = r->s->name, *c = resp->cause;
	uint64_t a = req->from, b = req->to;
	unsigned n = resp->attempts;

	if (resp->fail == FAIL_CANCELLED)
		return -EINTR;	/* the reader is gone: nothing to say */
	if (r->hard && !resp->retryable)
		*r->hard = 1;
	if (resp->changed) {
		atomic_store(r->h->url_changed, 1);
		source_mark_changed(r->s);
		if (quiet)
			return -EIO;
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s", u, a, b, c);
		return source_check(r->s);	/* its one warning */
	}
	if (quiet)
		return -EIO;
	if (r->why) {
		snprintf(r->why, r->whylen, "the request for bytes %" PRIu64 "-%"
			 PRIu64 " failed: %s%s (%u attempt%s)", a, b,
			 resp->fail == FAIL_BODY ? "a wrong body: " : "", c, n,
			 PLURAL(n));
		return -EIO;
	}
	switch (resp->fail) {
	case FAIL_STATUS:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": the server answered %s; "
			"EIO after %u attempt%s", u, a, b, c, n, PLURAL(n));
		break;
	case FAIL_NORANGE:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; EIO", u, a, b, c);
		break;
	case FAIL_BODY:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": a wrong body: %s; EIO "
			"after %u attempt%s", u, a, b, c, n, PLURAL(n));
		break;
	default:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; EIO after %u attempt%s",
			u, a, b, c, n, PLURAL(n));
		break;
	}
	return -EIO;
}

/* Fetches blocks lo..hi with one request: the pieces the read wants into
 * its buffer, every block into the caches.  0 or -EIO (-ENOMEM). */
static int fetch(const struct rd *r, uint64_t lo, uint64_t hi, int quiet)
{
	struct iovec iov[RUN_MAX + RA_MAX];
	struct httpreq req = { .url = r->h->url, .auth = r->h->auth, .ranged = 1, .iov = iov,
			       .expect = &r->s->stamp, .deadline_ns = r->deadline,
			       .cancel = r->cancel, .stall_s = r->build ? BUILD_STALL_S : 0 };
	struct httpresp resp;
	unsigned n = (unsigned)(hi - lo + 1), i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		iov[i].iov_len = block_len(r, lo + i);
		if (!(iov[i].iov_base = malloc(iov[i].iov_len))) {
			rc = -ENOMEM;
			n = i;
			goto out;
		}
	}
	req.niov = (int)n;
	req.from = lo * BLOCK;
	req.to = (hi + 1) * BLOCK < r->size ? (hi + 1) * BLOCK - 1 : r->size - 1;
	if (httpreq_do(r->h->he->net, &req, &resp)) {
		rc = read_failed(r, &req, &resp, quiet);
		goto out;
	}
	for (i = 0; i < n; i++) {
		take_piece(r, lo + i, iov[i].iov_base);
		if (r->h->disk)
			diskcache_put(r->h->he->disk, r->s->name, &r->s->stamp,
				      lo + i, iov[i].iov_base, iov[i].iov_len);
		if (r->fresh)	/* the copy it replaces is not believed */
			lru_drop(r->h->he->mem, key_of(r->h, lo + i));
		lru_insert(r->h->he->mem, key_of(r->h, lo + i), iov[i].iov_base,
			   iov[i].iov_len);
		iov[i].iov_base = NULL;
	}
out:
	for (i = 0; i < n; i++)
		free(iov[i].iov_base);
	return rc;
}

/*
 * A small read alone in its region (note_read): only its bytes from block
 * b on, straight into its buffer, nothing cached.  Random 3 KB ImageNet
 * members over loopback, 4 threads: 3.4 KiB a GET instead of 34.8 (a
 * block, or two when the member straddles), and the daemon's CPU per file
 * from ~160 to ~100 us (medians of 4 runs on the shared 2-core VM).
 * 0 or -EIO.
 */
static int fetch_exact(const struct rd *r, uint64_t b)
{
	uint64_t from = b * BLOCK > r->off ? b * BLOCK : r->off;
	struct iovec iov = { r->buf + (from - r->off), (size_t)(r->end - from) };
	struct httpreq req = { .url = r->h->url, .auth = r->h->auth, .ranged = 1, .iov = &iov,
			       .niov = 1, .from = from, .to = r->end - 1,
			       .expect = &r->s->stamp, .deadline_ns = r->deadline,
			       .cancel = r->cancel, .stall_s = r->build ? BUILD_STALL_S : 0 };
	struct httpresp resp;

	if (httpreq_do(r->h->he->net, &req, &resp))
		return read_failed(r, &req, &resp, 0);
	return 0;
}

/* The blocks to fetch from b: the run of missing ones (at most RUN_MAX),
 * and, when it ends the read, `win` more not cached yet.  *need is the
 * run's last block; returns the request's last. */
static uint64_t plan(const struct rd *r, uint64_t b, uint64_t b1, unsigned win,
		     uint64_t *need)
{
	uint64_t last = (r->size - 1) / BLOCK, m = b;

	while (m < b1 && m - b + 1 < RUN_MAX && !from_memory(r, m + 1) &&
	       !from_disk(r, m + 1))
		m++;
	*need = m;
	if (m != b1)
		return m;
	while (win-- && m < last && !from_memory(r, m + 1))
		m++;
	return m;
}

/* ---- prefetch ---- */

/* A prefetch thread's job: blocks lo..hi of s, unless others have them. */
static void prefetch_run(const struct prefetch *p)
{
	struct http_src *h = p->s->priv;
	struct rd r = { p->s, h, NULL, 0, 0, p->s->stamp.size,
			sfs_now_ns() + h->he->read_timeout_ns, NULL, p->build, NULL,
			sfs_now_ns(), 0, NULL, 0 };
	uint64_t lo = p->lo, hi = p->hi;
	int slot;

	while (lo <= hi && (from_memory(&r, lo) || from_disk(&r, lo)))
		lo++;
	if (lo > hi || atomic_load(&r.s->changed))
		return;
	pthread_mutex_lock(&r.h->lock);
	slot = flight_over(&r, lo, lo) >= 0 ? -2 : record(r.h, lo, lo, &hi);
	pthread_mutex_unlock(&r.h->lock);
	if (slot == -2)
		return;
	/* quiet, and its failure not kept: the reader that needs the blocks
	 * asks again, and says why */
	fetch(&r, lo, hi, 1);
	release(&r, slot, 0, 0, 0);
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

void httpcache_start(struct http_env *he)
{
	pthread_mutex_lock(&he->q_lock);
	while (!he->stopping && he->nthreads < PREFETCHERS &&
	       !pthread_create(&he->threads[he->nthreads], NULL, prefetcher, he))
		he->nthreads++;
	pthread_mutex_unlock(&he->q_lock);
}

void httpcache_stop(struct http_env *he)
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

void httpcache_forget(struct source *s)
{
	struct http_src *h = s->priv;
	struct http_env *he = h->he;
	unsigned i, kept = 0, dropped;

	pthread_mutex_lock(&he->q_lock);
	for (i = 0; i < he->q_len; i++)
		if (he->queue[i].s != s)
			he->queue[kept++] = he->queue[i];
	dropped = he->q_len - kept;
	he->q_len = kept;
	pthread_mutex_unlock(&he->q_lock);
	pthread_mutex_lock(&h->lock);
	h->jobs -= dropped;
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
 * After a sequential read ending in block b1 with window win: queues
 * prefetches of the windows after the last block the stream has fetched or
 * queued (h->ahead), while they end within jobs + 1 windows of the reader
 * and fewer than jobs of the source's are queued or running (jobs:
 * AHEAD_JOBS, BUILD_JOBS for a build's read).  Never waits (no-wait mode
 * calls it).
 */
static void prefetch_after(const struct rd *r, uint64_t b1, unsigned win)
{
	uint64_t last = (r->size - 1) / BLOCK, lo, hi;
	unsigned jobs = r->build ? BUILD_JOBS : AHEAD_JOBS;

	if (win < RA_START * 2 || b1 >= last)
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

/*
 * source_advise(WILLNEED): the blocks of [off, off + len) (RUN_MAX at
 * most, one request) are fetched by a prefetch thread unless they are in
 * memory or on their way: a layout's hint that a reader is about to start
 * there (the next class of an epoch).  The reader's own readahead then
 * starts as usual and skips what landed.  Never waits.
 */
void httpcache_willneed(struct source *s, uint64_t off, uint64_t len)
{
	struct http_src *h = s->priv;
	uint64_t size = s->stamp.size, lo, hi;

	if (off >= size || !len || atomic_load(&s->changed))
		return;
	if (len > size - off)
		len = size - off;
	lo = off / BLOCK;
	hi = (off + len - 1) / BLOCK;
	if (hi - lo >= RUN_MAX)
		hi = lo + RUN_MAX - 1;
	pthread_mutex_lock(&h->lock);
	if (h->jobs >= SOURCE_WILLNEED_MAX) {
		pthread_mutex_unlock(&h->lock);
		return;
	}
	h->jobs++;
	pthread_mutex_unlock(&h->lock);
	queue_prefetch(s, lo, hi, source_build_since() != 0);
}

/* ---- reads ---- */

/*
 * A read that waited for another's fetch and took its outcome: -EIO (the
 * fetch failed, and said so; or the deadline passed while waiting, said
 * here, or in r->why for a build's read) or -EINTR.
 */
static int wait_failed(const struct rd *r, uint64_t lo, uint64_t hi, int rc)
{
	struct http_src *h = r->h;
	uint64_t a = lo * BLOCK;
	uint64_t b = (hi + 1) * BLOCK < r->size ? (hi + 1) * BLOCK - 1 : r->size - 1;
	unsigned rt = (unsigned)(h->he->read_timeout_ns / 1000000000);

	if (rc == -EINTR || atomic_load(&r->s->changed))
		return rc == -EINTR ? rc : source_check(r->s);
	if (rc == -ETIMEDOUT && r->why)
		snprintf(r->why, r->whylen, "no answer within read_timeout=%u s "
			 "to another read's request for bytes %" PRIu64 "-%" PRIu64,
			 rt, a, b);
	else if (rc == -ETIMEDOUT)
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": no answer within "
			"read_timeout=%u s (waiting for another read's request for "
			"them); EIO", r->s->name, a, b, rt);
	return -EIO;
}

/* Whether a change of s was seen, by any of its URL's sources. */
static int seen_changed(struct source *s)
{
	struct http_src *h = s->priv;

	if (atomic_load(h->url_changed))
		source_mark_changed(s);
	return atomic_load(&s->changed);
}

/*
 * A read whose read_timeout passed before it could send a request: it
 * waited that long for a thread (all busy with reads of a frozen server)
 * or for others' requests, counted since its request arrived (rd.since).
 * Said; -EIO.
 */
static int too_late(const struct rd *r)
{
	sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": read_timeout=%u s passed "
		"before a request for them could be sent (%.1f s since the read "
		"arrived, waiting for a thread or for other reads' requests); EIO",
		r->s->name,
		r->off, r->end - 1, (unsigned)(r->h->he->read_timeout_ns / 1000000000),
		(double)(sfs_now_ns() - r->since) / 1e9);
	return -EIO;
}

/*
 * One round of a read whose stream window is win: each block from the
 * caches, or fetched (with the blocks after it that it misses, in one
 * request), or from another thread's fetch of it.  A fresh read
 * (source_refetch) takes nothing from the caches and fetches its own
 * blocks only.  0 or -errno.
 */
static int read_round(struct rd *r, unsigned win, int lone)
{
	uint64_t b = r->off / BLOCK, b1 = (r->end - 1) / BLOCK, need, hi;
	int waits = 0, slot = -1, rc;

	while (b <= b1) {
		if (!r->fresh && cached(r, b)) {
			b++;
			continue;
		}
		if (lone)
			need = hi = b1;	/* its bytes from b on, nothing cached */
		else if (r->fresh)
			need = hi = b1 - b < RUN_MAX ? b1 : b + RUN_MAX - 1;
		else
			hi = plan(r, b, b1, win, &need);
		if ((rc = claim(r, b, need, &hi, &waits, &slot)) == 1)
			continue;	/* another thread fetched it: look again */
		if (rc)
			return wait_failed(r, b, need, rc);
		if (read_over(r) == -ETIMEDOUT)
			rc = too_late(r);
		else
			rc = lone ? fetch_exact(r, b) : fetch(r, b, hi, 0);
		release(r, slot, lone ? 0 : hi, rc, !r->build);
		if (rc || lone)
			return rc;
		b = need + 1;
	}
	return 0;
}

/*
 * An index build's read (source_build): rounds until one succeeds, the
 * source changed, a failure would not pass (a 4xx, a server ignoring
 * Range: httpresp.retryable), the read was cancelled, or the next round
 * would start past build_timeout_s after the build started; growing
 * waits between them.  A round's failure is a warning (the build goes on
 * and may well end well); giving up is the error.  0 or -errno.
 */
static int build_read(struct rd *r, unsigned win, int lone)
{
	const struct http_env *he = r->h->he;
	int64_t since = source_build_since(), until = since + he->build_timeout_ns;
	unsigned bt = (unsigned)(he->build_timeout_ns / 1000000000);
	uint64_t ms = BUILD_BACKOFF_MS;
	char why[400];
	int64_t next;
	unsigned round;
	int rc, hard = 0;

	r->hard = &hard;
	r->why = why;
	r->whylen = sizeof(why);
	for (round = 1;; round++) {
		snprintf(why, sizeof(why), "failed");
		r->deadline = sfs_now_ns() + he->read_timeout_ns;
		if (r->deadline > until)
			r->deadline = until;
		rc = read_round(r, win, lone);
		if (rc != -EIO || seen_changed(r->s))
			return rc;	/* done, cancelled, or a change (said) */
		if (hard) {
			sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; EIO (not "
				"worth sending again)", r->s->name, r->off,
				r->end - 1, why);
			return rc;
		}
		next = sfs_now_ns() + (int64_t)ms * 1000000;
		if (next >= until) {
			sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; still failing "
				"after %u round%s, and the index build gives up: it "
				"started %.0f s ago (build_timeout=%u s)", r->s->name,
				r->off, r->end - 1, why, round, PLURAL(round),
				(double)(sfs_now_ns() - since) / 1e9, bt);
			return rc;
		}
		sfs_warn("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; the index build "
			 "sends it again in %.1f s (round %u failed; build_timeout=%u s)",
			 r->s->name, r->off, r->end - 1, why, (double)ms / 1000,
			 round, bt);
		if ((rc = httpreq_wait_until(next, r->cancel)))
			return rc;
		ms = ms * 2 < BUILD_BACKOFF_MAX ? ms * 2 : BUILD_BACKOFF_MAX;
	}
}

/* A read of s at [off, off + n) (n > 0, inside the source), with the
 * deadline read_timeout after its request arrived (source_cancel.since,
 * else now). */
/*
 * The read of [off, off + n) of s into buf, cut to the source's size:
 * 1 with r set up, or what to return at once (0: nothing to read; a
 * change seen before: source_check's EIO).
 */
static ssize_t rd_start(struct rd *r, struct source *s, void *buf, size_t *n,
			uint64_t off)
{
	struct http_src *h = s->priv;
	const struct source_cancel *c = source_cancel_current();
	int64_t now;

	if (seen_changed(s))
		return source_check(s);
	if (off >= s->stamp.size || *n == 0)
		return 0;
	if (*n > s->stamp.size - off)
		*n = (size_t)(s->stamp.size - off);
	now = sfs_now_ns();
	*r = (struct rd){ .s = s, .h = h, .buf = buf, .off = off, .end = off + *n,
			  .size = s->stamp.size, .cancel = c,
			  .build = source_build_since() != 0,
			  .since = c && c->since && c->since < now ? c->since : now };
	r->deadline = r->since + h->he->read_timeout_ns;
	return 1;
}

ssize_t httpcache_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct rd r;
	ssize_t got;
	uint64_t b0, b1, b;
	int rc, lone;
	unsigned win;

	if ((got = rd_start(&r, s, buf, &n, off)) != 1)
		return got;
	b0 = off / BLOCK;
	b1 = (r.end - 1) / BLOCK;
	if (source_nowait_mode()) {
		for (b = b0; b <= b1; b++)
			if (!from_memory(&r, b))
				return -EAGAIN;	/* the waiting read counts */
		for (b = b0; b <= b1; b++)
			SOURCE_COUNT(&s->env->ctr, mem_hits);
		prefetch_after(&r, b1, note_read(r.h, b0, b1, off, &lone));
		return (ssize_t)n;
	}
	win = note_read(r.h, b0, b1, off, &lone);
	/* blocks when they may be read again: with a disk cache (the next
	 * epoch), or when the whole source fits in the memory cache */
	lone = lone && n <= EXACT_MAX && !r.h->disk && r.size > r.h->he->cache_bytes;
	rc = r.build ? build_read(&r, win, lone) : read_round(&r, win, lone);
	if (rc)
		return rc;
	if (!lone)
		prefetch_after(&r, b1, win);
	return (ssize_t)n;
}

/* source_refetch: the whole blocks around [off, off + n), fetched again
 * and put in the caches in place of what they held (a fresh read); no
 * readahead, and the stream's state is left as it was. */
ssize_t httpcache_refetch(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct rd r;
	ssize_t got;
	int rc;

	if ((got = rd_start(&r, s, buf, &n, off)) != 1)
		return got;
	r.fresh = 1;
	rc = r.build ? build_read(&r, 0, 0) : read_round(&r, 0, 0);
	return rc ? rc : (ssize_t)n;
}
