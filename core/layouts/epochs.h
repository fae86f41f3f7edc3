/*
 * epochs.h - the views behind a layout's /epochs/<e> (issue 28), one
 * mechanism for every layout that serves them (ImageNet's, Quick, Draw!'s):
 * epoch e's view (its permutation, and whatever the layout derives from
 * it) is made when the epoch is first asked about, by the layout's `make`,
 * and kept in one of EPOCH_SLOTS slots, the least recently used with no
 * holder taken over (the layout's `drop` frees it).  Also the names under
 * /epochs, parsed the one way.
 *
 * Epoch e's permutation, in every layout, is numpy's
 * np.random.seed([seed, e]); np.random.shuffle(np.arange(n)) (mt19937.h's
 * mt19937_seed_array) of a base order the layout documents.
 *
 * Threads: get and put under the cache's lock; make and drop outside it,
 * on a slot its maker holds (other epochs are served meanwhile; a reader
 * of the epoch being made waits for it).  A held slot's view is read-only
 * and never dropped.  A caller holds one slot at a time (get waits for a
 * slot while all are held).
 *
 * Not for: the trees' names and inodes (the layouts).
 */
#ifndef SFS_EPOCHS_H
#define SFS_EPOCHS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define EPOCH_SLOTS 4
#define EPOCH_MAX 2147483647u	/* epochs are 0 .. 2^31 - 1 */

struct epoch_ops {
	/* slot's view for epoch e: 0 or -errno (then drop is called) */
	int (*make)(void *arg, unsigned slot, uint32_t e);
	/* frees slot's view (made or half made); live: the mount is up (at
	 * unmount, 0: whatever reads the views has stopped) */
	void (*drop)(void *arg, unsigned slot, int live);
};

struct epochs {
	pthread_mutex_t lock;
	pthread_cond_t freed;		/* a slot's refs went to 0, or made */
	uint64_t tick;
	const struct epoch_ops *ops;
	void *arg;
	struct {
		uint32_t e;
		int valid, refs;
		int making;		/* e's view is being made (refs held) */
		uint64_t used;
	} slot[EPOCH_SLOTS];
};

void epochs_init(struct epochs *E, const struct epoch_ops *ops, void *arg);
/* drops every view (live 0) */
void epochs_destroy(struct epochs *E);

/* Epoch e's view, held in *slot until put.  0 or make's -errno. */
int epochs_get(struct epochs *E, uint32_t e, unsigned *slot);
void epochs_put(struct epochs *E, unsigned slot);

/* "<e>": decimal, no sign, no leading zero, e <= EPOCH_MAX.  0 or -ENOENT. */
int epochs_parse(const char *name, uint32_t *e);
/* "<split>-<k:06d>.tar", as printf writes it (k < 10^15).  0 or -ENOENT. */
int epochs_parse_shard(const char *name, const char *split, uint64_t *k);

#endif
