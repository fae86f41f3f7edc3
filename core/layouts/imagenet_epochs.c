/*
 * imagenet_epochs.c - ImageNet's epoch views (imagenet_epochs.h): making
 * a slot's split copies for an epoch, and freeing them.
 */
#include "layouts/imagenet_epochs.h"

#include <errno.h>
#include <stdlib.h>

#include "layouts/imagenet_ahead.h"
#include "layouts/imagenet_orders.h"
#include "layouts/imagenet_samples.h"

/* frees a slot's orders and offsets (epochs.h's drop) */
static void drop(void *arg, unsigned slot, int live)
{
	struct in_epochs *E = arg;
	int s;

	for (s = 0; s < NSPLIT; s++) {
		struct in_split *sp = &E->sp[slot][s];

		if (live && sp->orders)
			imagenet_ahead_forget(E->ahead, sp);
		imagenet_free_orders(sp);
		free(E->offs[slot][s]);
		E->offs[slot][s] = NULL;
		sp->voff = sp->soff = NULL;
	}
}

/* split s's view for epoch e in slot `slot` */
static int make_split(struct in_epochs *E, unsigned slot, int s, uint32_t e)
{
	struct in_split *sp = &E->sp[slot][s];
	uint64_t n = sp->h.n, *offs;
	int rc;

	offs = malloc((n / VOFF_STEP + 1 + n / SOFF_STEP + 1) * sizeof(uint64_t));
	if (!offs)
		return -ENOMEM;
	E->offs[slot][s] = offs;	/* freed by drop, even on failure */
	rc = imagenet_make_epoch_orders(sp, E->L->epoch_seed, e);
	if (!rc)
		rc = imagenet_make_offsets(sp, E->L->S, offs, offs + n / VOFF_STEP + 1,
					   &sp->h.txt_size);
	sp->voff = offs;
	sp->soff = offs + n / VOFF_STEP + 1;
	return rc;
}

/* epochs.h's make */
static int make(void *arg, unsigned slot, uint32_t e)
{
	struct in_epochs *E = arg;
	int s, rc = 0;

	for (s = 0; !rc && s < NSPLIT; s++)
		if (E->L->sp[s].h.labelled)
			rc = make_split(E, slot, s, e);
	return rc;
}

static const struct epoch_ops ops = { make, drop };

struct in_epochs *imagenet_epochs_new(const struct in_layout *L, struct in_ahead *ahead)
{
	struct in_epochs *E = calloc(1, sizeof(*E));
	unsigned i;
	int s;

	if (!E)
		return NULL;
	E->L = L;
	E->ahead = ahead;
	/* the rest of a view (tarindex, samples, classes) is the split's, the
	 * same whichever epoch its slot holds: the advisors read sp->t unlocked */
	for (i = 0; i < EPOCH_SLOTS; i++)
		for (s = 0; s < NSPLIT; s++) {
			struct in_split *sp = &E->sp[i][s];

			*sp = L->sp[s];
			sp->orders = NULL;
			sp->ord = sp->pos = sp->shuf = NULL;
			sp->voff = sp->soff = NULL;
		}
	epochs_init(&E->cache, &ops, E);
	return E;
}

void imagenet_epochs_free(struct in_epochs *E)
{
	if (!E)
		return;
	epochs_destroy(&E->cache);
	free(E);
}

int imagenet_epoch_get(struct in_epochs *E, uint32_t e, const struct in_split **views,
		       unsigned *slot)
{
	int rc = epochs_get(&E->cache, e, slot);

	if (!rc)
		*views = E->sp[*slot];
	return rc;
}

void imagenet_epoch_put(struct in_epochs *E, unsigned slot)
{
	epochs_put(&E->cache, slot);
}
