/*
 * clock.h - the one clock samplefs measures time with: CLOCK_MONOTONIC, for
 * deadlines, rate limits, progress and spinning.  Not for timestamps that
 * are shown or stored (log lines, lock heartbeats): those want the wall
 * clock.  Like log.h and options.h it sits at the top of core/ and may be
 * included anywhere, fs/ and tools/ too.
 */
#ifndef SFS_CLOCK_H
#define SFS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds since an arbitrary start. */
static inline int64_t sfs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The same, in seconds. */
static inline double sfs_now_s(void)
{
	return (double)sfs_now_ns() / 1e9;
}

#endif
