/*
 * workers.c - the thread pool of workers.h: a ring of jobs, a mutex and
 * two condition variables.  Not a general executor: jobs are reads, run in
 * the order they came.
 */
#include "workers.h"
#include "clock.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/* Called and returns with w->lock held; drops it while spinning. */
static void spin_for_job(struct workers *w)
{
	long long until;

	if (w->count || w->stop || !w->spin_ns || w->spinning)
		return;
	w->spinning = 1;
	pthread_mutex_unlock(&w->lock);
	until = sfs_now_ns() + w->spin_ns;
	while (!atomic_load(&w->queued) && !atomic_load(&w->stopping) &&
	       sfs_now_ns() < until)
		sched_yield();
	pthread_mutex_lock(&w->lock);
	w->spinning = 0;
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	struct worker_job job;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		spin_for_job(w);
		while (!w->count && !w->stop) {
			w->sleepers++;
			pthread_cond_wait(&w->more, &w->lock);
			w->sleepers--;
		}
		if (!w->count)
			break;	/* stopping, and nothing left to do */
		job = w->q[w->head];
		w->head = (w->head + 1) % WORKERS_QUEUE;
		w->count--;
		atomic_store(&w->queued, w->count);
		pthread_cond_signal(&w->room);
		pthread_mutex_unlock(&w->lock);
		job.fn(w->ctx, &job);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_start(struct workers *w, unsigned n, unsigned spin_us, void *ctx)
{
	sigset_t all, old;
	int rc = 0;

	if (n < 1 || n > WORKERS_MAX)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
	w->spin_ns = spin_us * 1000LL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->more, NULL);
	pthread_cond_init(&w->room, NULL);
	/* signals (SIGINT, SIGTERM: unmount) go to the session thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (; w->nthreads < n; w->nthreads++) {
		rc = -pthread_create(&w->threads[w->nthreads], NULL, worker_main, w);
		if (rc)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc && w->nthreads == 0)
		return rc;
	return 0;	/* fewer threads than asked still work */
}

void workers_submit(struct workers *w, const struct worker_job *job)
{
	int wake;

	pthread_mutex_lock(&w->lock);
	while (w->count == WORKERS_QUEUE)
		pthread_cond_wait(&w->room, &w->lock);
	w->q[(w->head + w->count) % WORKERS_QUEUE] = *job;
	w->count++;
	atomic_store(&w->queued, w->count);
	/* a spinning worker takes one job without a wake-up */
	wake = w->sleepers && w->count > (unsigned)w->spinning;
	pthread_mutex_unlock(&w->lock);
	/* after the unlock: a worker woken under it would at once block on
	 * the lock and need a second wake-up (seen in strace as a futex
	 * wait on the mutex after every hand-off) */
	if (wake)
		pthread_cond_signal(&w->more);
}

void workers_stop(struct workers *w)
{
	unsigned i;

	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	atomic_store(&w->stopping, 1);
	pthread_cond_broadcast(&w->more);
	pthread_mutex_unlock(&w->lock);
	for (i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	pthread_cond_destroy(&w->more);
	pthread_cond_destroy(&w->room);
	pthread_mutex_destroy(&w->lock);
}
