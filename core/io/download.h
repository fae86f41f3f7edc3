/*
 * download.h - copies remote objects into a local directory, N transfers
 * at a time on the calling thread (one libcurl multi handle), for
 * samplefs-download (tools/download).
 *
 * Contract, per item, into DEST/<rel>:
 *  - a complete file (its size, and its MD5 when one is known) is skipped
 *    and not rewritten;
 *  - bytes go to DEST/<dir>/.<name>.part (hidden: a samplefs mount of
 *    DEST, and every layout's listing, passes dot files over), resumed
 *    with a Range from its size when it exists;
 *  - at the end the size and the MD5 (from the listing's ETag, or the
 *    response's ETag or x-goog-hash: md5=) are checked, then the file is
 *    renamed into place with the object's Last-Modified as its mtime; an
 *    MD5 that fails after a resume is fetched again whole (a damaged
 *    partial file), a second failure is the item's error;
 *  - 5xx, 429 (its Retry-After), resets and timeouts are retried with
 *    exponential backoff and jitter, `retries` times, keeping the bytes
 *    received; other statuses fail the item at once;
 *  - an attempt averaging under `min_rate` bytes/s for the env's
 *    timeout_s (a stall, or a server trickling a few bytes a second,
 *    which would otherwise hold the transfer for ever) is a timeout:
 *    retried, and its why gives the rate seen.
 * No fsync: a file is renamed only once verified, and the next run checks
 * a complete file's size and MD5 again, so a copy torn by a crash of the
 * machine is fetched again, as a killed run's .part is resumed.
 *
 * Stopping: once `stop` is set (a signal handler may set it), transfers
 * are dropped within POLL_MS and download_run returns -EINTR, leaving the
 * .part files for the next run.
 *
 * Threads: none; everything runs on the caller's, the callbacks too.
 * Not for: listing what to fetch (tools/download), parsing names and
 * hashes (dlnames.h), the command line and what it prints
 * (tools/download), reading sources for a mount (source.h).
 */
#ifndef SFS_IO_DOWNLOAD_H
#define SFS_IO_DOWNLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "io/source.h"

/* The default of download_opts.min_rate (and of --min-rate): as mounts'
 * reads (httpreq.c), 1 KiB/s. */
#define DOWNLOAD_MIN_RATE 1024u

/* One object to fetch. */
struct download_item {
	char *uri;                 /* its name, for messages (s3://..., https://...) */
	char *rel;                 /* where under DEST: "a/b c.npy" (no "..", no
				    * leading '/', no empty component) */
	uint64_t size;             /* from the listing or a HEAD */
	unsigned char md5[16];
	int has_md5;               /* md5 holds the object's MD5 */
	/* the engine's, filled in by download_run */
	int status;                /* 0 done, 1 skipped, -errno failed */
	char why[256];             /* for a failure: what happened */
};

/* What download_run reports as it goes. */
enum download_event {
	DL_START,                  /* a transfer began (or resumed: item, from) */
	DL_DONE,                   /* verified and renamed into place */
	DL_SKIP,                   /* already complete */
	DL_FAIL,                   /* given up: item->why */
};

struct download_totals {
	uint64_t files, files_done;    /* done, skipped or failed */
	uint64_t bytes, bytes_done;    /* sizes; done counts skipped files' */
	uint64_t received;             /* bytes received in this run */
};

struct download_opts {
	const char *dest;          /* the directory (made when missing) */
	unsigned jobs;             /* transfers at once; 8 when 0 */
	unsigned retries;          /* per item; 8 when 0 */
	unsigned timeout_s;        /* connect, and no progress for this long; 30 */
	unsigned min_rate;         /* bytes/s an attempt must average over
				    * timeout_s; DOWNLOAD_MIN_RATE when 0 */
	struct source_env *env;    /* for request URLs and signing (buckets) */
	const struct source_cancel *stop;
	/* 1: nothing found in DEST counts: a complete file is fetched again
	 * and a .part emptied (for one who cannot tell a leftover of another
	 * version: a prebuilt index fetched over plain HTTP, no MD5) */
	int fresh;
	/* each event, and (ev = -1, item NULL) about five times a second */
	void (*report)(void *arg, int ev, const struct download_item *item,
		       uint64_t from, const struct download_totals *t);
	void *arg;
};

/*
 * Fetches items[0..n) as the contract says.  0 when every item is done
 * or skipped, -EIO when some failed (each with DL_FAIL and item->why),
 * -EINTR when stopped, or another -errno (DEST not usable: said).
 */
int download_run(struct download_item *items, size_t n,
		 const struct download_opts *o);

#endif
