/*
 * epochs.c - the cache of epoch views (epochs.h): a slot found, or taken
 * over and made; and the names of /epochs.
 */
#include "layouts/epochs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void epochs_init(struct epochs *E, const struct epoch_ops *ops, void *arg)
{
	memset(E, 0, sizeof(*E));
	pthread_mutex_init(&E->lock, NULL);
	pthread_cond_init(&E->freed, NULL);
	E->ops = ops;
	E->arg = arg;
}

void epochs_destroy(struct epochs *E)
{
	unsigned i;

	for (i = 0; i < EPOCH_SLOTS; i++)
		E->ops->drop(E->arg, i, 0);
	pthread_cond_destroy(&E->freed);
	pthread_mutex_destroy(&E->lock);
}

/* the slot holding e or making it, or -1 (locked) */
static int find(const struct epochs *E, uint32_t e)
{
	int i;

	for (i = 0; i < EPOCH_SLOTS; i++)
		if ((E->slot[i].valid || E->slot[i].making) && E->slot[i].e == e)
			return i;
	return -1;
}

/* a slot to take over: unheld, empty or least recently used; waits while
 * all are held (locked) */
static int victim(struct epochs *E)
{
	int i, best;

	for (;;) {
		best = -1;
		for (i = 0; i < EPOCH_SLOTS; i++)
			if (!E->slot[i].refs && (best < 0 || !E->slot[i].valid ||
			    (E->slot[best].valid && E->slot[i].used < E->slot[best].used)))
				best = i;
		if (best >= 0)
			return best;
		pthread_cond_wait(&E->freed, &E->lock);
	}
}

/* slot i (held, marked making) made for epoch e outside the lock; the
 * lock is held on entry and on return.  0 or make's -errno. */
static int make_slot(struct epochs *E, int i, uint32_t e)
{
	int rc;

	pthread_mutex_unlock(&E->lock);
	E->ops->drop(E->arg, (unsigned)i, 1);
	rc = E->ops->make(E->arg, (unsigned)i, e);
	if (rc)
		E->ops->drop(E->arg, (unsigned)i, 1);
	pthread_mutex_lock(&E->lock);
	E->slot[i].making = 0;
	E->slot[i].valid = !rc;
	pthread_cond_broadcast(&E->freed);
	return rc;
}

int epochs_get(struct epochs *E, uint32_t e, unsigned *slot)
{
	int i, rc = 0;

	pthread_mutex_lock(&E->lock);
	for (;;) {
		if ((i = find(E, e)) >= 0 && E->slot[i].making) {
			pthread_cond_wait(&E->freed, &E->lock);	/* being made */
			continue;
		}
		if (i >= 0)
			break;
		i = victim(E);		/* may wait: look for e again */
		if (find(E, e) >= 0)
			continue;
		E->slot[i].e = e;
		E->slot[i].valid = 0;
		E->slot[i].making = 1;
		E->slot[i].refs++;	/* nobody takes it over meanwhile */
		rc = make_slot(E, i, e);
		E->slot[i].refs--;
		if (rc) {
			pthread_mutex_unlock(&E->lock);
			return rc;
		}
	}
	E->slot[i].refs++;
	E->slot[i].used = ++E->tick;
	pthread_mutex_unlock(&E->lock);
	*slot = (unsigned)i;
	return 0;
}

void epochs_put(struct epochs *E, unsigned slot)
{
	pthread_mutex_lock(&E->lock);
	if (--E->slot[slot].refs == 0)
		pthread_cond_broadcast(&E->freed);
	pthread_mutex_unlock(&E->lock);
}

/* decimal digits [s, s + n) into *v, n <= 15 */
static int digits_of(const char *s, size_t n, uint64_t *v)
{
	size_t i;

	if (!n || n > 15)
		return -ENOENT;
	for (*v = 0, i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -ENOENT;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return 0;
}

int epochs_parse(const char *name, uint32_t *e)
{
	size_t n = strlen(name);
	uint64_t v;

	if ((name[0] == '0' && n > 1) || digits_of(name, n, &v) || v > EPOCH_MAX)
		return -ENOENT;
	*e = (uint32_t)v;
	return 0;
}

int epochs_parse_shard(const char *name, const char *split, uint64_t *k)
{
	size_t n = strlen(name), pl = strlen(split);
	char buf[64];

	if (n < pl + 6 || n > pl + 5 + 15 || strncmp(name, split, pl) || name[pl] != '-' ||
	    strcmp(name + n - 4, ".tar") || digits_of(name + pl + 1, n - pl - 5, k))
		return -ENOENT;
	/* one name per shard: the one listed (k:06d) */
	snprintf(buf, sizeof(buf), "%06llu", (unsigned long long)*k);
	return strlen(buf) == n - pl - 5 ? 0 : -ENOENT;
}
