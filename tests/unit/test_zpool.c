/*
 * test_zpool.c - core/io/codecs/zpool.c, the span buffer pool: a buffer given
 * back is the next one got (no fresh memory), at most max_free are kept
 * (the rest freed: leaks and double frees show under ASan), a buffer for
 * more than cap bytes or for 3/4 of it or less is never pooled (and
 * zpool_held says what each holds), and threads getting and giving back
 * at once never share a buffer (each writes its own pattern into the
 * whole cap and checks it).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/codecs/zpool.h"

#define CAP 4096

Test(zpool, reuse_is_lifo)
{
	struct zpool *p = zpool_new(CAP, 4);
	unsigned long made;
	unsigned kept;
	void *a, *b, *c;

	cr_assert(p);
	a = zpool_get(p, CAP);
	b = zpool_get(p, CAP - CAP / 4 + 1);
	cr_assert(a && b && a != b);
	memset(a, 1, CAP);	/* every buffer holds cap bytes */
	memset(b, 2, CAP);
	zpool_put(p, a, CAP);
	zpool_put(p, b, CAP - CAP / 4 + 1);
	zpool_usage(p, &made, &kept);
	cr_assert_eq(made, 2);
	cr_assert_eq(kept, 2);
	cr_assert_eq(zpool_get(p, CAP - 1), b, "the last given back comes first");
	c = zpool_get(p, CAP);
	cr_assert_eq(c, a);
	zpool_usage(p, &made, &kept);
	cr_assert_eq(made, 2, "no fresh buffer while some are kept");
	cr_assert_eq(kept, 0);
	zpool_put(p, b, CAP - 1);
	zpool_put(p, c, CAP);
	zpool_free(p);	/* frees the kept ones */
}

Test(zpool, bound_and_sizes)
{
	struct zpool *p = zpool_new(CAP, 3);
	void *b[8], *big, *small;
	unsigned long made;
	unsigned kept;
	int i;

	for (i = 0; i < 8; i++)
		cr_assert((b[i] = zpool_get(p, CAP)));
	for (i = 0; i < 8; i++)
		zpool_put(p, b[i], CAP);
	zpool_usage(p, &made, &kept);
	cr_assert_eq(made, 8);
	cr_assert_eq(kept, 3, "at most max_free kept, the rest freed");
	cr_assert_eq(zpool_held(p, CAP), CAP);
	cr_assert_eq(zpool_held(p, CAP - CAP / 4 + 1), CAP);
	cr_assert_eq(zpool_held(p, CAP - CAP / 4), CAP - CAP / 4, "a short prefix: exact");
	cr_assert_eq(zpool_held(p, 3 * CAP), 3 * CAP);
	big = zpool_get(p, 3 * CAP);
	small = zpool_get(p, CAP - CAP / 4);
	cr_assert(big && small);
	memset(big, 3, 3 * CAP);
	memset(small, 4, CAP - CAP / 4);
	zpool_usage(p, &made, &kept);
	cr_assert_eq(kept, 3, "neither takes a pooled buffer");
	cr_assert_eq(made, 8);
	zpool_put(p, big, 3 * CAP);
	zpool_put(p, small, CAP - CAP / 4);
	zpool_usage(p, &made, &kept);
	cr_assert_eq(kept, 3);
	for (i = 0; i < 3; i++)
		b[i] = zpool_get(p, CAP);
	zpool_put(p, malloc(CAP + 1), CAP + 1);	/* longer than cap: freed */
	zpool_put(p, malloc(10), 10);		/* short: freed */
	zpool_usage(p, &made, &kept);
	cr_assert_eq(kept, 0);
	cr_assert_eq(made, 8, "the 3 came from the pool");
	for (i = 0; i < 3; i++)
		zpool_put(p, b[i], CAP);
	zpool_free(p);
}

Test(zpool, empty_pool_and_null)
{
	struct zpool *p = zpool_new(CAP, 0);
	void *a = zpool_get(p, CAP);
	unsigned long made;
	unsigned kept;

	cr_assert(a);
	zpool_put(p, a, CAP);
	zpool_put(p, NULL, CAP);
	zpool_usage(p, &made, &kept);
	cr_assert_eq(kept, 0, "max_free 0 keeps nothing");
	zpool_free(p);
	zpool_free(NULL);
}

struct hammer {
	struct zpool *p;
	pthread_barrier_t *go;
	int id;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;
	unsigned char *b[3];
	int i, k;
	size_t j;

	pthread_barrier_wait(h->go);	/* all at once */
	for (i = 0; i < 2000; i++) {
		for (k = 0; k < 3; k++) {
			cr_assert((b[k] = zpool_get(h->p, CAP - (size_t)(i % (CAP / 4)))));
			memset(b[k], h->id * 3 + k, CAP);
		}
		for (k = 0; k < 3; k++) {
			for (j = 0; j < CAP; j += 511)
				cr_assert_eq(b[k][j], (unsigned char)(h->id * 3 + k),
					     "a buffer shared by two holders");
			zpool_put(h->p, b[k], CAP);
		}
	}
	return NULL;
}

Test(zpool, threads)
{
	struct zpool *p = zpool_new(CAP, 5);
	struct hammer h[4];
	pthread_barrier_t go;
	pthread_t t[4];
	unsigned long made;
	unsigned kept;
	int i;

	pthread_barrier_init(&go, NULL, 4);
	for (i = 0; i < 4; i++) {
		h[i] = (struct hammer){ p, &go, i + 1 };
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, &h[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	zpool_usage(p, &made, &kept);
	/* every buffer given back at the end: the last thread's 3 at least,
	 * never more than max_free */
	cr_assert(kept >= 3 && kept <= 5 && made >= kept, "kept %u, made %lu",
		  kept, made);
	zpool_free(p);
}
