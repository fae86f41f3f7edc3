/*
 * rdplus.c - see rdplus.h: the adaptive choice of attributes in listings.
 */
#include "rdplus.h"

#define PROBES   8	/* files per listing given without attributes */
#define EVIDENCE 4	/* probes needed before a listing changes the guess */

void rdplus_init(struct rdplus *r)
{
	pthread_mutex_init(&r->lock, NULL);
	atomic_store(&r->dir, 0);
	r->probes = r->looked = 0;
	r->with_attrs = 0;	/* start as `find` wants: names only */
}

void rdplus_destroy(struct rdplus *r)
{
	pthread_mutex_destroy(&r->lock);
}

void rdplus_listing(struct rdplus *r, uint64_t dir, uint64_t off)
{
	if (off != 0)
		return;
	pthread_mutex_lock(&r->lock);
	/* weigh what followed the previous listing: were its files stat'ed?
	 * (A directory of directories says nothing either way.) */
	if (atomic_load(&r->dir) != dir && r->probes >= EVIDENCE)
		r->with_attrs = 2 * r->looked >= r->probes;
	atomic_store(&r->dir, dir);
	r->probes = r->looked = 0;
	pthread_mutex_unlock(&r->lock);
}

int rdplus_file_entry(struct rdplus *r, uint64_t dir)
{
	int attrs;

	pthread_mutex_lock(&r->lock);
	if (atomic_load(&r->dir) != dir) {
		attrs = r->with_attrs;	/* another listing is watched */
	} else {
		attrs = r->with_attrs && r->probes >= PROBES;
		if (!attrs)
			r->probes++;
	}
	pthread_mutex_unlock(&r->lock);
	return attrs;
}

void rdplus_lookup(struct rdplus *r, uint64_t parent)
{
	if (atomic_load(&r->dir) != parent)
		return;
	pthread_mutex_lock(&r->lock);
	if (atomic_load(&r->dir) == parent && r->looked < r->probes)
		r->looked++;
	pthread_mutex_unlock(&r->lock);
}
