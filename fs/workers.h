/*
 * workers.h - a few threads for the reads that must wait for the disk.
 *
 * With -o poll (the default) one thread takes every request off the device
 * and answers it at once when the bytes are in memory; a read that would
 * wait for I/O (source_pread in no-wait mode says so: core/io/source.h) is
 * queued here instead, so the disk latency of one file never holds up the
 * requests behind it and cold reads from several readers still reach the
 * disk in parallel.
 *
 * Every read that would wait comes here, so a hand-off must be cheap: on a
 * VM, waking a sleeping thread costs tens of microseconds.  After a job, one
 * worker at a time spins (sched_yield) for up to spin_us before it sleeps,
 * as the session thread polls the device: a reader's next cold read then
 * finds it awake.  Only one spins, so idle workers never eat the CPUs the
 * readers need.
 *
 * A bounded ring of jobs under one mutex; nothing is allocated per job.
 */
#ifndef SFS_FS_WORKERS_H
#define SFS_FS_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define WORKERS_MAX 64
#define WORKERS_QUEUE 256	/* jobs waiting; when full, the caller waits */

struct worker_job {
	void (*fn)(void *ctx, const struct worker_job *job);
	void *req;		/* fuse_req_t, opaque here */
	uint64_t ino, off;
	size_t size;
	int64_t t0;		/* sfs_now_ns at the request: its wait (ctl.h) */
};

struct workers {
	pthread_mutex_t lock;	/* guards everything below */
	pthread_cond_t more;	/* a job was queued, or stop */
	pthread_cond_t room;	/* a job was taken */
	struct worker_job q[WORKERS_QUEUE];
	unsigned head, count;
	int stop;
	unsigned sleepers;	/* waiting on `more` */
	int spinning;		/* a worker is spinning for the next job */
	_Atomic unsigned queued;/* = count, for the spinner to watch unlocked */
	_Atomic int stopping;	/* = stop, likewise */
	long long spin_ns;
	unsigned nthreads;
	pthread_t threads[WORKERS_MAX];
	void *ctx;		/* passed to every job's fn */
};

/* Starts n (1..WORKERS_MAX) threads that spin up to spin_us for a next
 * job (0: never).  Returns 0 or -errno. */
int workers_start(struct workers *w, unsigned n, unsigned spin_us, void *ctx);

/* Queues a job (copied); waits while the queue is full. */
void workers_submit(struct workers *w, const struct worker_job *job);

/* Runs the jobs still queued, then joins the threads. */
void workers_stop(struct workers *w);

#endif
