/*
 * httpfetch.c - the blocks of an HTTP source and the requests that fetch
 * them: the lowest part of the HTTP backend's reads (httpcache.c reads,
 * httpahead.c reads ahead, both through the functions here).
 *
 * The source is cut into BLOCK-aligned blocks kept in the mount's LRU
 * (cfg.cache_bytes, io/lru.h, keyed by the source's id and the block
 * number) and, with cfg.cache_dir, on disk (diskcache.c).  A run of
 * missing blocks is fetched with one request (httpreq.c), which every
 * response is checked against the stamp.
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
 * dropped; reads that waited for it send their own.  An index build's
 * read waits for another's fetch HEDGE_MS at most from that fetch's start,
 * then sends its own (a hedge; see httpcache.c).
 *
 * Bounds: each read has a deadline and the thread's cancel flag
 * (source_cancel_scope); both bound its requests (httpreq.c) and its waits
 * for others' (timed waits, POLL_MS apart, on h->landed).
 *
 * The link: every fetch's time to its first byte and its rate are noted
 * (hf_link_note) for the walks of index builds (httpahead.c), which read
 * through short gaps instead of hopping over them when the link delivers
 * a gap in less than a round trip.
 *
 * Failures are logged here, rate-limited by log.c, naming the URL, the
 * byte range and the last cause; that read gives EIO (reads sharing the
 * failure say nothing more).  An index build's read says its causes in
 * r->why instead, for build_read (httpcache.c) to say once.  Prefetches
 * fail quietly: the read that needed the blocks asks again, and says so.
 * A cancelled read gives EINTR, unlogged: its reader is gone.
 *
 * Not for: when to fetch what (httpcache.c, httpahead.c), opening and
 * names (http.c), the requests themselves (httpreq.c).
 */
#include "io/http/http_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clock.h"
#include "io/http/diskcache.h"
#include "io/http/httpreq.h"
#include "io/lru.h"
#include "log.h"

#define WAITS_MAX  3            /* for others' fetches, in one read */
#define POLL_MS    50           /* a waiting read looks at its cancel flag this often */
/* Index builds (source_build).  A stall of 2 s: a healthy store answers
 * a 4 MiB range in well under a second even across a continent; the
 * request is retried, not failed, so a slow but live store costs retries,
 * never the build. */
#define BUILD_STALL_S     2
#define HEDGE_MS          1000   /* a wait for another's fetch, then our own */
/* The link (link_note): bodies this large time its rate; a latency
 * sample is capped (a 2 s delay of a flaky store is no link's); until a
 * fetch was timed, a round trip is guessed to deliver LINK_GUESS_BDP, and
 * until a large one was, the rate is guessed high: a walk then streams,
 * and its windows measure the rate (a guess too low would hop, and hops
 * time no rate). */
#define LINK_BODY       (256u << 10)
#define LINK_LAT_MAX    (1000 * 1000000LL)
#define LINK_GUESS_BDP  (1u << 20)
#define LINK_GUESS_RATE (1000ull << 20)

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
int hf_from_memory(const struct rd *r, uint64_t b)
{
	uint64_t lo, hi;
	char none;

	if (!piece(r, b, &lo, &hi))
		return lru_copy_out(r->h->he->mem, key_of(r->h, b), 0, &none, 0) == 1;
	return lru_copy_out(r->h->he->mem, key_of(r->h, b), lo - b * BLOCK,
			    r->buf + (lo - r->off), hi - lo) == 1;
}

/* Block b from the disk cache into memory, and its piece: 1, or 0. */
int hf_from_disk(const struct rd *r, uint64_t b)
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

void hf_forget(struct http_src *h, const char *name, uint64_t b)
{
	lru_drop(h->he->mem, key_of(h, b));
	if (h->disk)
		diskcache_drop(h->he->disk, name, b);
}

/* Block b's piece from the caches, counted (source_env_stats): 1, or 0. */
int hf_cached(const struct rd *r, uint64_t b)
{
	struct source_counters *c = &r->s->env->ctr;

	if (hf_from_memory(r, b)) {
		SOURCE_COUNT(c, mem_hits);
		return 1;
	}
	SOURCE_COUNT(c, mem_misses);
	if (!r->h->disk)
		return 0;
	if (hf_from_disk(r, b)) {
		SOURCE_COUNT(c, disk_hits);
		return 1;
	}
	SOURCE_COUNT(c, disk_misses);
	return 0;
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
int hf_flight_over(const struct rd *r, uint64_t lo, uint64_t hi)
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
static int running_over(const struct http_src *h, uint64_t b, int skip)
{
	int i;

	for (i = 0; i < NFLIGHT; i++)
		if (i != skip && h->flight[i].state == FL_RUNNING && h->flight[i].lo <= b &&
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
/* hf_record, but the fetch in slot skip (one a walk's read hedges) does
 * not trim *hi. */
static int record_but(struct http_src *h, uint64_t lo, uint64_t need,
		      uint64_t *hi, int skip)
{
	int64_t now = sfs_now_ns();
	uint64_t b;
	int i;

	for (b = need + 1; b <= *hi; b++)
		if (running_over(h, b, skip))
			break;
	*hi = b - 1;
	if ((i = free_slot(h, now)) >= 0)
		h->flight[i] = (struct flight){ lo, *hi, FL_RUNNING, 0, 0, 0, 0,
						h->flight[i].gen + 1, now };
	return i;
}

int hf_record(struct http_src *h, uint64_t lo, uint64_t need, uint64_t *hi)
{
	return record_but(h, lo, need, hi, -1);
}

/* Whether the read is out of time or cancelled: -EIO or -EINTR, else 0. */
int hf_read_over(const struct rd *r)
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
		if ((rc = hf_read_over(r)))
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
int hf_claim(const struct rd *r, uint64_t lo, uint64_t need, uint64_t *hi,
		 int *waits, int *slot)
{
	struct http_src *h = r->h;
	struct flight *f = NULL;
	int i, rc = 0, wait, skip = -1;
	unsigned gen;

	pthread_mutex_lock(&h->lock);
	i = hf_flight_over(r, lo, need);
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
	if (rc == 2 && h->walk && f->hi > *hi) {
		/* a walk's window is slow: the hedge takes the rest of it, or
		 * each header in it would send one of its own */
		*hi = f->hi - lo < RUN_MAX + RA_MAX ? f->hi : lo + RUN_MAX + RA_MAX - 1;
		skip = i;
	}
	if (!wait || rc == 2) {
		*slot = record_but(h, lo, need, hi, skip);	/* ours (a hedge: a second one) */
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
void hf_release(const struct rd *r, int slot, uint64_t hi, int rc, int hold)
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
	const struct httpreq_count n = httpreq_attempts(resp->attempts);

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
			 PRIu64 " failed: %s%s (%s)", a, b,
			 resp->fail == FAIL_BODY ? "a wrong body: " : "", c, n.s);
		return -EIO;
	}
	switch (resp->fail) {
	case FAIL_STATUS:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": the server answered %s; "
			"EIO after %s", u, a, b, c, n.s);
		break;
	case FAIL_NORANGE:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; EIO", u, a, b, c);
		break;
	case FAIL_BODY:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": a wrong body: %s; EIO "
			"after %s", u, a, b, c, n.s);
		break;
	default:
		sfs_err("%s: bytes %" PRIu64 "-%" PRIu64 ": %s; EIO after %s",
			u, a, b, c, n.s);
		break;
	}
	return -EIO;
}

/* Fetches blocks lo..hi with one request: the pieces the read wants into
 * its buffer, every block into the caches.  0 or -EIO (-ENOMEM). */
/*
 * The link, from a fetch of `bytes` that ended (resp): a moving average
 * (1/4 new) of the time to the first byte and a decaying minimum of it
 * (a request queued behind others, in the store or a proxy, waits
 * longer for its first byte than one alone), and of the rate of bodies of
 * LINK_BODY or more, times the fetches that ran alongside (which shared
 * the link: its rate is their sum).  Failed fetches say nothing of the
 * link's rate, only of its latency when they got an answer.  Lock-free:
 * a racing update loses a sample, nothing else.
 */
static void link_note(struct http_env *he, const struct httpresp *resp,
		      uint64_t bytes)
{
	int64_t lat = atomic_load(&he->lat_ns), t = resp->ttfb_ns;
	int64_t least = atomic_load(&he->lat_min_ns);
	uint64_t rate = atomic_load(&he->rate), v;
	unsigned along = atomic_load(&he->running);

	if (t <= 0 || !resp->status)
		return;
	if (t > LINK_LAT_MAX)
		t = LINK_LAT_MAX;
	atomic_store(&he->lat_ns, lat ? (3 * lat + t) / 4 : t);
	atomic_store(&he->lat_min_ns, !least || t < least ? t : (15 * least + t) / 16);
	if (resp->status != 206 || bytes < LINK_BODY || resp->total_ns <= resp->ttfb_ns)
		return;
	v = (uint64_t)((double)bytes * 1e9 / (double)(resp->total_ns - resp->ttfb_ns));
	v *= along ? along : 1;
	atomic_store(&he->rate, rate ? (3 * rate + v) / 4 : v);
}

uint64_t hf_link_bdp(const struct http_env *he, int bare)
{
	int64_t lat = atomic_load(bare ? &he->lat_min_ns : &he->lat_ns);
	uint64_t rate = atomic_load(&he->rate);

	if (!lat)
		return LINK_GUESS_BDP;
	return (uint64_t)((double)(rate ? rate : LINK_GUESS_RATE) * (double)lat / 1e9);
}

int hf_fetch(const struct rd *r, uint64_t lo, uint64_t hi, int quiet)
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
	atomic_fetch_add(&r->h->he->running, 1);
	rc = httpreq_do(r->h->he->net, &req, &resp);
	link_note(r->h->he, &resp, req.to - req.from + 1);
	atomic_fetch_sub(&r->h->he->running, 1);
	if (rc) {
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
 * A read alone in its region (note_read; up to 1 MiB): only its bytes from
 * block b on, straight into its buffer, nothing cached: one GET of the
 * member's own range, not of the blocks around it (real-size members,
 * 60-160 KB, over nginx with 16 readers: 12 % fewer bytes in a 64 MB tar,
 * where half the reads came back to a recent region and fetched blocks).  Random 3 KB ImageNet
 * members over loopback, 4 threads: 3.4 KiB a GET instead of 34.8 (a
 * block, or two when the member straddles), and the daemon's CPU per file
 * from ~160 to ~100 us (medians of 4 runs on the shared 2-core VM).
 * 0 or -EIO.
 */
int hf_fetch_exact(const struct rd *r, uint64_t b)
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
