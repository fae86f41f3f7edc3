/*
 * imagenet_ahead.h - prefetch in a shard's order: when a reader streams a
 * virtual shard (/shards/<split>-<k>.tar, ordered or shuffled), the
 * members it is about to reach are asked for (source_advise WILLNEED:
 * many reads in flight on a local disk, queued ranged GETs over HTTP),
 * up to a budget of bytes ahead of it; members next to each other in
 * their source as one range (one GET), up to SOURCE_WILLNEED_SPAN.
 *
 * A read is part of a stream when it starts within IN_AHEAD_SLACK of where
 * the shard's last reads ended (the kernel's readahead may reorder them a
 * little); the first read of a stream only opens its slot, so one read
 * here and there never causes advice.  The advice is asked by one thread
 * per mount (started at the first stream), and stops with the reads: it
 * never gets more than `budget` bytes past a reader's last read, so what
 * is left in flight when a reader stops is at most that, per stream, for
 * IN_STREAMS streams; then the thread sleeps.  Over URLs, whose fetches
 * wait in the mount's memory cache for their readers, the streams read
 * lately share one budget (at most half that cache: layout_imagenet.c).
 *
 * Not for: the shard's bytes (vtar.h, layout_imagenet.c), members that are
 * not one range of their source (compressed or sparse: no advice).
 */
#ifndef SFS_IMAGENET_AHEAD_H
#define SFS_IMAGENET_AHEAD_H

#include <stddef.h>
#include <stdint.h>

#include "layouts/imagenet_index.h"

#define IN_AHEAD_SLACK (4u << 20)
#define IN_ACTIVE_MS 1000	/* a stream read this recently shares a URL budget */

/* budget: bytes ahead of a reader (0: no advice).  url: the sources are
 * URLs, whose hints land in the mount's memory cache (budget at most half
 * of it): the budget is then that of the streams read in the last
 * IN_ACTIVE_MS together, shared equally, and at most SOURCE_WILLNEED_MAX
 * hints (ranges of one or more records) are ahead of a reader, as many as
 * the source takes at once. */
void imagenet_ahead_init(struct in_ahead *a, uint64_t budget, int url);
void imagenet_ahead_destroy(struct in_ahead *a);

/* One shard as imagenet_ahead sees it: split sp's shard positions
 * [first, first + n), whose records start at byte `base` of the split. */
struct in_shard {
	const struct in_split *sp;
	uint64_t first, n, base;
};

/* A read of [off, off + len) of the vtar `ino` (shard sh): when it
 * continues a stream, wakes the advisor to ask for what comes next.  Never
 * fails, never waits for I/O.  Stops and joins the advisor: destroy. */
void imagenet_ahead(struct in_ahead *a, const struct in_shard *sh, uint64_t ino,
		    uint64_t off, size_t len);

/* Ends the streams of split view sp, whose orders are about to be freed
 * (an epoch's, imagenet_epochs.c): the advisors read a view's orders only
 * under the lock, so none is used after this returns. */
void imagenet_ahead_forget(struct in_ahead *a, const struct in_split *sp);

#endif
