/*
 * httpcache.c - reading an HTTP source (see http.c) through block caches:
 * source_pread and source_refetch of the HTTP and bucket backends.
 *
 * A read takes what the caches have and fetches each run of missing blocks
 * with one request, or waits for another thread's fetch of them
 * (httpfetch.c: blocks, shared fetches, requests); before and after, it
 * notes itself for readahead and queues the windows that follow it
 * (httpahead.c: sequential streams, the walks of index builds).
 *
 * Bounds: each read has a deadline (read_timeout_s from its start, or from
 * the arrival of the FUSE request it serves: source_cancel.since) and the
 * thread's cancel flag (source_cancel_scope).
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
 * readahead keeps up to BUILD_JOBS windows in flight, not AHEAD_JOBS.
 *
 * Files read in parts: a read of part of a file that is one range of the
 * source (source_cancel's file_src, set by the daemon from the layout's
 * extent) fetches the whole file's blocks, up to FILE_WHOLE_MAX, in one
 * request and keeps them: the kernel's other READs of the file find them.
 *
 * No-wait mode: a read fully in memory is served (and may start prefetches,
 * which only queue), else -EAGAIN at once.
 *
 * Failures: an index build's read says a failed round as a warning, and
 * only giving up as an error; other reads' failures are said where the
 * request failed (httpfetch.c) or here when a read ran out of time
 * waiting.  A cancelled read gives EINTR, unlogged: its reader is gone.
 *
 * Not for: opening, names and listings (http.c), blocks and requests
 * (httpfetch.c), readahead (httpahead.c).
 */
#include "io/http/http_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "io/http/httpreq.h"
#include "log.h"

/* reads alone in their region fetch only their bytes: up to a READ's
 * largest (1 MiB), so a whole member read at random is one GET of its
 * range, not of the 32 KiB blocks around it */
#define EXACT_MAX  (1u << 20)
/* a read of part of a file that is one range of the source fetches the
 * whole file, up to this (RUN_MAX blocks: one request) */
#define FILE_WHOLE_MAX (RUN_MAX * (uint64_t)BLOCK)
#define BUILD_BACKOFF_MS  500    /* a failed read's first wait; doubles */
#define BUILD_BACKOFF_MAX 15000

/* The blocks to fetch from b: the run of missing ones (at most RUN_MAX),
 * and, when it ends the read, `win` more not cached yet.  *need is the
 * run's last block; returns the request's last. */
static uint64_t plan(const struct rd *r, uint64_t b, uint64_t b1, unsigned win,
		     uint64_t *need)
{
	uint64_t last = (r->size - 1) / BLOCK, m = b;

	while (m < b1 && m - b + 1 < RUN_MAX && !hf_from_memory(r, m + 1) &&
	       !hf_from_disk(r, m + 1))
		m++;
	*need = m;
	if (m != b1)
		return m;
	while (win-- && m < last && !hf_from_memory(r, m + 1))
		m++;
	return m;
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
		if (!r->fresh && hf_cached(r, b)) {
			b++;
			continue;
		}
		if (lone)
			need = hi = b1;	/* its bytes from b on, nothing cached */
		else if (r->fresh)
			need = hi = b1 - b < RUN_MAX ? b1 : b + RUN_MAX - 1;
		else
			hi = plan(r, b, b1, win, &need);
		if ((rc = hf_claim(r, b, need, &hi, &waits, &slot)) == 1)
			continue;	/* another thread fetched it: look again */
		if (rc)
			return wait_failed(r, b, need, rc);
		if (hf_read_over(r) == -ETIMEDOUT)
			rc = too_late(r);
		else
			rc = lone ? hf_fetch_exact(r, b) : hf_fetch(r, b, hi, 0);
		hf_release(r, slot, lone ? 0 : hi, rc, !r->build);
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

/*
 * Whether r reads part of a file that is one range of its source
 * (source_cancel's file_src), at most FILE_WHOLE_MAX long.  The kernel cuts
 * a file's read into READs of its read-ahead window (128 KiB for users
 * other than root), some sent at once: each was a GET of its own.
 */
static int part_of_file(const struct rd *r)
{
	const struct source_cancel *c = r->cancel;

	return c && c->file_src == r->s && r->off >= c->file_lo &&
	       r->end <= c->file_end && r->end - r->off < c->file_end - c->file_lo &&
	       c->file_end <= r->size && c->file_end - c->file_lo <= FILE_WHOLE_MAX;
}

/*
 * A read of part of a file (part_of_file): the whole file's blocks, in one
 * request and kept in the memory cache, then r's part of them.  Each of the
 * file's READs does so; the first sends the request and the others, the
 * READs sent at once among them, wait for it (a shared fetch, httpfetch.c)
 * or find the blocks in memory.  0 or -errno.
 */
static int read_whole_file(struct rd *r)
{
	const struct source_cancel *c = r->cancel;
	struct rd w = *r;
	int rc;

	if (!(w.buf = malloc(c->file_end - c->file_lo)))
		return -ENOMEM;
	w.off = c->file_lo;
	w.end = c->file_end;
	rc = w.build ? build_read(&w, 0, 0) : read_round(&w, 0, 0);
	if (rc == 0)
		memcpy(r->buf, w.buf + (r->off - w.off), r->end - r->off);
	free(w.buf);
	return rc;
}

ssize_t httpcache_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct rd r;
	ssize_t got;
	uint64_t b0, b1, b;
	int rc, lone = 0, walking, part = 0;
	unsigned win = 0;

	if ((got = rd_start(&r, s, buf, &n, off)) != 1)
		return got;
	b0 = off / BLOCK;
	b1 = (r.end - 1) / BLOCK;
	if (source_nowait_mode()) {
		for (b = b0; b <= b1; b++)
			if (!hf_from_memory(&r, b))
				return -EAGAIN;	/* the waiting read counts */
		for (b = b0; b <= b1; b++)
			SOURCE_COUNT(&s->env->ctr, mem_hits);
		ha_prefetch_after(&r, b1, ha_note_read(r.h, b0, b1, off, &lone));
		return (ssize_t)n;
	}
	/* a walk that streams has queued the windows after this read, which
	 * then fetches its own blocks only */
	walking = ha_walk_ahead(&r, b1);
	if (!walking)
		win = ha_note_read(r.h, b0, b1, off, &lone);
	/* blocks when they may be read again: with a disk cache (the next
	 * epoch), or when the whole source fits in the memory cache */
	lone = lone && n <= EXACT_MAX && !r.h->disk && r.size > r.h->he->cache_bytes;
	/* a file read in parts comes whole with its first part, and nothing
	 * after it: the READs of one file look sequential, and their window
	 * would fetch the start of whichever member follows it */
	if (!walking && (part = part_of_file(&r)))
		rc = read_whole_file(&r);	/* its other READs find it */
	else
		rc = r.build ? build_read(&r, win, lone) : read_round(&r, win, lone);
	if (rc)
		return rc;
	if (!lone && !walking && !part)
		ha_prefetch_after(&r, b1, win);
	return (ssize_t)n;
}

void httpcache_forget(struct source *s, uint64_t off, uint64_t n)
{
	struct http_src *h = s->priv;
	uint64_t b;

	if (!n || off >= s->stamp.size)
		return;
	for (b = off / BLOCK; b <= (off + n - 1) / BLOCK; b++)
		hf_forget(h, s->name, b);
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
