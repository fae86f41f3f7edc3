/*
 * workers.c - the thread pool of workers.h: a ring of jobs, a mutex and
 * two condition variables.  Not a general executor: jobs are reads, run in
 * the order they came.
 */
#include "workers.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	struct worker_job job;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->count && !w->stop)
			pthread_cond_wait(&w->more, &w->lock);
		if (!w->count)
			break;	/* stopping, and nothing left to do */
		job = w->q[w->head];
		w->head = (w->head + 1) % WORKERS_QUEUE;
		w->count--;
		pthread_cond_signal(&w->room);
		pthread_mutex_unlock(&w->lock);
		job.fn(w->ctx, &job);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_start(struct workers *w, unsigned n, void *ctx)
{
	sigset_t all, old;
	int rc = 0;

	if (n < 1 || n > WORKERS_MAX)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
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
	pthread_mutex_lock(&w->lock);
	while (w->count == WORKERS_QUEUE)
		pthread_cond_wait(&w->room, &w->lock);
	w->q[(w->head + w->count) % WORKERS_QUEUE] = *job;
	w->count++;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
}

void workers_stop(struct workers *w)
{
	unsigned i;

	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->more);
	pthread_mutex_unlock(&w->lock);
	for (i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	pthread_cond_destroy(&w->more);
	pthread_cond_destroy(&w->room);
	pthread_mutex_destroy(&w->lock);
}
