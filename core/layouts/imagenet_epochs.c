/*
 * imagenet_epochs.c - the epoch views' cache (imagenet_epochs.h): making
 * an epoch's orders and offsets in a slot, and taking a slot over.
 */
#include "layouts/imagenet_epochs.h"

#include <errno.h>
#include <stdlib.h>

#include "layouts/imagenet_ahead.h"
#include "layouts/imagenet_orders.h"
#include "layouts/imagenet_samples.h"

struct in_epochs *imagenet_epochs_new(const struct in_layout *L, struct in_ahead *ahead)
{
	struct in_epochs *E = calloc(1, sizeof(*E));
	int i, s;

	if (!E)
		return NULL;
	pthread_mutex_init(&E->lock, NULL);
	pthread_cond_init(&E->freed, NULL);
	E->L = L;
	E->ahead = ahead;
	/* the rest of a view (tarindex, samples, classes) is the split's, the
	 * same whichever epoch its slot holds: the advisors read sp->t unlocked */
	for (i = 0; i < IN_EPOCHS; i++)
		for (s = 0; s < NSPLIT; s++) {
			struct in_split *sp = &E->slot[i].sp[s];

			*sp = L->sp[s];
			sp->orders = NULL;
			sp->ord = sp->pos = sp->shuf = NULL;
			sp->voff = sp->soff = NULL;
		}
	return E;
}

/* frees a slot's orders and offsets, once no one holds it (locked);
 * forget: end its prefetch streams first (0 once the advisors stopped) */
static void drop(struct in_epochs *E, struct in_epoch *ep, int forget)
{
	int s;

	for (s = 0; s < NSPLIT; s++) {
		if (forget && ep->sp[s].orders)
			imagenet_ahead_forget(E->ahead, &ep->sp[s]);
		imagenet_free_orders(&ep->sp[s]);
		free(ep->offs[s]);
		ep->offs[s] = NULL;
		ep->sp[s].voff = ep->sp[s].soff = NULL;
	}
	ep->valid = 0;
}

/* after imagenet_ahead_destroy: no advisor left to read a view */
void imagenet_epochs_free(struct in_epochs *E)
{
	int i;

	if (!E)
		return;
	for (i = 0; i < IN_EPOCHS; i++)
		drop(E, &E->slot[i], 0);
	pthread_cond_destroy(&E->freed);
	pthread_mutex_destroy(&E->lock);
	free(E);
}

/* split s's view for epoch e in ep (locked, ep unheld) */
static int make_split(struct in_epochs *E, struct in_epoch *ep, int s, uint32_t e)
{
	struct in_split *sp = &ep->sp[s];
	uint64_t n = sp->h.n, *offs;
	int rc;

	offs = malloc((n / VOFF_STEP + 1 + n / SOFF_STEP + 1) * sizeof(uint64_t));
	if (!offs)
		return -ENOMEM;
	ep->offs[s] = offs;	/* freed by drop, even on failure */
	rc = imagenet_make_epoch_orders(sp, E->L->epoch_seed, e);
	if (!rc)
		rc = imagenet_make_offsets(sp, E->L->S, offs, offs + n / VOFF_STEP + 1,
					   &sp->h.txt_size);
	sp->voff = offs;
	sp->soff = offs + n / VOFF_STEP + 1;
	return rc;
}

/* the slot to take over for a new epoch, waiting while all are held */
static struct in_epoch *victim(struct in_epochs *E)
{
	struct in_epoch *best;
	int i;

	for (;;) {
		best = NULL;
		for (i = 0; i < IN_EPOCHS; i++) {
			struct in_epoch *ep = &E->slot[i];

			if (!ep->refs && (!best || !ep->valid ||
					  (best->valid && ep->used < best->used)))
				best = ep;
		}
		if (best)
			return best;
		pthread_cond_wait(&E->freed, &E->lock);
	}
}

int imagenet_epoch_get(struct in_epochs *E, uint32_t e, struct in_epoch **out)
{
	struct in_epoch *ep = NULL;
	int i, s, rc = 0;

	pthread_mutex_lock(&E->lock);
	for (i = 0; i < IN_EPOCHS && !ep; i++)
		if (E->slot[i].valid && E->slot[i].e == e)
			ep = &E->slot[i];
	if (!ep) {
		ep = victim(E);
		/* a waiter may have made e meanwhile: look again */
		for (i = 0; i < IN_EPOCHS; i++)
			if (E->slot[i].valid && E->slot[i].e == e)
				ep = &E->slot[i];
	}
	if (!ep->valid || ep->e != e) {
		drop(E, ep, 1);
		for (s = 0; !rc && s < NSPLIT; s++)
			if (E->L->sp[s].h.labelled)
				rc = make_split(E, ep, s, e);
		if (rc) {
			drop(E, ep, 1);
			pthread_mutex_unlock(&E->lock);
			return rc;
		}
		ep->e = e;
		ep->valid = 1;
	}
	ep->refs++;
	ep->used = ++E->tick;
	pthread_mutex_unlock(&E->lock);
	*out = ep;
	return 0;
}

void imagenet_epoch_put(struct in_epochs *E, struct in_epoch *ep)
{
	pthread_mutex_lock(&E->lock);
	if (--ep->refs == 0)
		pthread_cond_broadcast(&E->freed);
	pthread_mutex_unlock(&E->lock);
}
