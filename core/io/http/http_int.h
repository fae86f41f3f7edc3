/*
 * http_int.h - what the parts of the HTTP backend share: http.c (opening,
 * stamps, names, listings, the mount's state), httpcache.c (reads through
 * the block caches), httpahead.c (readahead, walks, prefetch threads) and
 * httpfetch.c (blocks, shared fetches, requests); calls go down that list
 * only.  Private to those files, and to bucket.c, whose objects are read
 * as URLs (http_attach).
 */
#ifndef SFS_IO_HTTP_INT_H
#define SFS_IO_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/backend.h"

/*
 * 32 KiB: a random read of a small member pulls in at most two blocks,
 * and readahead makes sequential requests large anyway.  128 KiB blocks
 * cost 1.5-1.9x the daemon CPU per random 3 KB ImageNet member over
 * loopback (the bytes are received and copied whether wanted or not);
 * 16 KiB gained nothing more: the request's own cost dominates there.
 */
#define BLOCK      (32u << 10)
#define RA_MAX     128          /* blocks read ahead at most: 4 MiB */
#define NFLIGHT    8            /* fetches of one source tracked at once */
#define FAIL_HOLD_MS 2000       /* a failed fetch's outcome is kept this long */
#define QUEUE_MAX  64           /* prefetches waiting for a thread */
#define PREFETCHERS 8           /* threads per mount, started at first open: an
				 * index build keeps BUILD_JOBS requests in flight */
#define REGION_SHIFT 20         /* 1 MiB regions, for telling random reads apart */
#define REGIONS    32           /* regions of recent random reads remembered */
#define STAMP_MEMO 8            /* HEAD answers remembered (http.c: stamp_of) */

struct httpreq_ctx;
struct diskcache;
struct lru;
struct known;

struct prefetch {
	struct source *s;
	uint64_t lo, hi;
	int build;                      /* queued by an index build's read */
};

/* env->http: per mount. */
struct http_env {
	struct httpreq_ctx *net;
	struct lru *mem;                /* blocks, keyed by source id and number */
	struct diskcache *disk;         /* NULL without cache_dir */
	unsigned ra_max;                /* blocks read ahead at most */
	int64_t read_timeout_ns;        /* cfg.read_timeout_s: one read's bound */
	int64_t build_timeout_ns;       /* cfg.build_timeout_s: a build's reads' */
	uint64_t cache_bytes;           /* of the memory cache (cfg.cache_bytes) */
	pthread_mutex_t ids_lock;       /* the sources known, by URL hash: */
	struct known **known;           /* nknown chains, a power of two */
	size_t nknown, count;
	uint32_t next_id;
	/* the last HEAD answers, by URL (http.c: stamp_of), under ids_lock;
	 * round robin */
	struct stamp_memo {
		char *url;              /* NULL: free */
		int64_t at_ns;          /* when it was answered (sfs_now_ns) */
		int is_dir;
		struct source_stamp st;
	} memo[STAMP_MEMO];
	unsigned memo_next;
	/* prefetch threads and their queue */
	pthread_mutex_t q_lock;
	pthread_cond_t q_more;
	struct prefetch queue[QUEUE_MAX];
	unsigned q_len;
	pthread_t threads[PREFETCHERS];
	unsigned nthreads;
	int stopping;
	/* the link, as the fetches found it (httpfetch.c: hf_link_bdp):
	 * moving averages of the time to a response's first byte and of the
	 * rate of the large ones, summed over the fetches running together,
	 * and the least time to a first byte lately (a decaying minimum) */
	_Atomic int64_t lat_ns, lat_min_ns;
	_Atomic uint64_t rate;          /* bytes/s; 0: none measured yet */
	atomic_uint running;            /* fetches in flight, mount-wide */
};

/*
 * A fetch of blocks lo..hi of a source (httpfetch.c), which reads needing
 * any of them wait for rather than asking again: RUNNING, or FAILED (its
 * error is that of every read of the same bytes [off, end) arriving before
 * `until`: the kernel asks again for a page right after its readahead
 * failed, and that is the same read as the user sees it; a read of other
 * bytes, another member in the same block, is not).  gen tells a waiter whether the slot is still the fetch it
 * waited for.
 */
struct flight {
	uint64_t lo, hi;
	enum { FL_FREE, FL_RUNNING, FL_FAILED } state;
	int rc;                         /* FAILED: the error */
	int64_t until;                  /* FAILED: for reads arriving before
					 * this (sfs_now_ns) */
	uint64_t off, end;              /* FAILED: the bytes of the read that
					 * failed, which only reads of those
					 * bytes take the failure of */
	unsigned gen;
	int64_t started;                /* RUNNING: since (sfs_now_ns), for hedging */
};

/* s->priv: per open source. */
struct http_src {
	struct http_env *he;
	char *url;                      /* requests go here (s->name for URLs) */
	const struct httpauth *auth;    /* and carry this (buckets), or NULL */
	uint32_t id;
	int disk;                       /* the stamp can tell versions apart */
	atomic_int *url_changed;        /* the mount's: a change of this URL seen */
	pthread_mutex_t lock;           /* the fields below */
	pthread_cond_t landed;          /* a fetch or prefetch ended (CLOCK_MONOTONIC) */
	struct flight flight[NFLIGHT];
	uint64_t ra_next;               /* block where the last read ended */
	unsigned ra_seq;                /* reads in a row that went on from it */
	unsigned ra_win;
	uint64_t ahead;                 /* last block fetched or queued ahead */
	uint64_t regions[REGIONS];      /* of recent random reads, + 1 (0: none) */
	unsigned region_next;
	unsigned jobs;                  /* prefetches queued or running */
	/* a walk (SOURCE_ADV_WALK: httpahead.c) */
	int walk;
	uint64_t w_end;                 /* where its last read ended; 0: none */
	unsigned w_short;               /* the last 8 gaps, bit set: short */
	unsigned w_gaps;                /* gaps noted (counts to 8) */
};

/* http.c, for the bucket backend (bucket.c), whose objects are URLs
 * read with signed requests: once s->stamp is known, sets s->priv up for
 * reads of url (copied) with auth (kept: it must outlive s).  0 or -errno.
 * s is then read, checked, advised and closed with the functions below. */
int http_attach(struct source *s, const char *url, const struct httpauth *auth);
int http_changed(struct source *s);
void http_close(struct source *s);
void http_advise(struct source *s, uint64_t off, uint64_t len,
		 enum source_advice adv);
/* The errno an answer to a file's request means (0: a success). */
int http_status_errno(long status);
/* FNV-1a of a name: the hash of the tables of sources by name. */
uint64_t http_hash(const char *name);
/* A stamp a bucket's listing gave for name: known in this mount from now
 * on, as an open's stamp is (another stamp of the same name, seen by a
 * later listing or open, is a change).  0 or -ENOMEM. */
int http_know(struct http_env *he, const char *name,
	      const struct source_stamp *st);
/* The stamp name was last known with (a listing, an open): 1, else 0. */
int http_known_stamp(struct http_env *he, const char *name,
		     struct source_stamp *st);
/* A HEAD's answer for name, remembered for a second (http.c: a mount's
 * start looks at its source up to four times): http_memo_get 1 and the
 * answer when one is that fresh, else 0; http_memo_put remembers one. */
int http_memo_get(struct http_env *he, const char *name, struct source_stamp *st,
		  int *is_dir);
void http_memo_put(struct http_env *he, const char *name, const struct source_stamp *st,
		   int is_dir);

#define RUN_MAX    64           /* missing blocks of a read in one request */
#define PLURAL(n) ((n) == 1 ? "" : "s")

/* One read: [off, end) of a source of `size` bytes, into buf; a prefetch
 * is a read of nothing (buf NULL, off = end = 0).  It gives up at deadline
 * (sfs_now_ns) or when cancel is set. */
struct rd {
	struct source *s;
	struct http_src *h;
	char *buf;
	uint64_t off, end, size;
	int64_t deadline;
	const struct source_cancel *cancel;
	int build;              /* an index build's read (source_build) */
	int *hard;              /* set when a failure is not worth sending
				 * again (httpresp.retryable); may be NULL */
	int64_t since;          /* when its request arrived (sfs_now_ns) */
	int fresh;              /* source_refetch: no cached copy is taken,
				 * and the caches' are replaced */
	char *why;              /* a build's read: its failures are said
				 * here (whylen bytes), for build_read to
				 * say once, instead of logged */
	size_t whylen;
};

/* httpcache.c: the backends' pread and refetch */
ssize_t httpcache_pread(struct source *s, void *buf, size_t n, uint64_t off);
/* source_refetch: the blocks of [off, off + n) fetched again, replacing
 * the caches' copies. */
ssize_t httpcache_refetch(struct source *s, void *buf, size_t n, uint64_t off);
/* source_forget: the blocks around [off, off + n) leave both caches. */
void httpcache_forget(struct source *s, uint64_t off, uint64_t n);

/* httpahead.c */
/* Starts the prefetch threads if they are not running (the first open of
 * a mount: a daemon forks before it, threads would not survive that). */
void httpahead_start(struct http_env *he);
/* Stops them (all sources closed). */
void httpahead_stop(struct http_env *he);
/* Drops s's queued prefetches and waits for its running ones: before
 * close. */
void httpahead_forget(struct source *s);
/* source_advise(WILLNEED) for HTTP sources: prefetch, never wait. */
void httpahead_willneed(struct source *s, uint64_t off, uint64_t len);
/* source_advise(WALK) (on 1) and the advice that ends a walk (on 0). */
void httpahead_walk(struct source *s, int on);
/* Before a read r ending in block b1 fetches: when it is a walk's
 * (h->walk) and the walk streams, queues the windows ahead of it and
 * returns 1 (the read then fetches its own blocks only); else 0 (the read
 * is as any). */
int ha_walk_ahead(const struct rd *r, uint64_t b1);
/* Notes a read of blocks b0..b1 (from byte off) for readahead: the window
 * to read ahead with; *lone: the read starts no stream and is alone in
 * its region, so it fetches only its bytes. */
unsigned ha_note_read(struct http_src *h, uint64_t b0, uint64_t b1,
		      uint64_t off, int *lone);
/* After a sequential read ending in block b1 with window win: queues the
 * windows that run ahead of it.  Never waits. */
void ha_prefetch_after(const struct rd *r, uint64_t b1, unsigned win);

/* httpfetch.c */
/* Block b's piece (the part read r wants) from memory, or from the disk
 * cache into memory too: 1, or 0 when it is not there. */
int hf_from_memory(const struct rd *r, uint64_t b);
int hf_from_disk(const struct rd *r, uint64_t b);
/* Either, counted (source_env_stats). */
int hf_cached(const struct rd *r, uint64_t b);
/* Drops block b of h (source name `name`) from memory and disk. */
void hf_forget(struct http_src *h, const char *name, uint64_t b);
/* The fetch running over any of blocks lo..hi, or failed for r's bytes
 * there, or -1 (h->lock held). */
int hf_flight_over(const struct rd *r, uint64_t lo, uint64_t hi);
/* Trims *hi before others' fetches after `need` and records lo..*hi; its
 * slot, or -1 when all are taken (h->lock held). */
int hf_record(struct http_src *h, uint64_t lo, uint64_t need, uint64_t *hi);
/* Whether the read is out of time or cancelled: -ETIMEDOUT or -EINTR,
 * else 0. */
int hf_read_over(const struct rd *r);
/* Before fetching blocks lo..need (readahead up to *hi): waits for
 * another's fetch of them (1: look in the cache again; its error), or
 * records this one in *slot (0). */
int hf_claim(const struct rd *r, uint64_t lo, uint64_t need, uint64_t *hi,
	     int *waits, int *slot);
/* Ends read r's fetch (slot) that took blocks up to hi with rc; hold: a
 * failure is kept for FAIL_HOLD_MS. */
void hf_release(const struct rd *r, int slot, uint64_t hi, int rc, int hold);
/* Fetches blocks lo..hi with one request into r's buffer and the caches;
 * quiet: a failure is not said.  0 or -EIO (-ENOMEM, -EINTR). */
int hf_fetch(const struct rd *r, uint64_t lo, uint64_t hi, int quiet);
/* Only r's bytes from block b on, into its buffer, nothing cached. */
int hf_fetch_exact(const struct rd *r, uint64_t b);
/* What the link delivers in one round trip (latency x rate, both as the
 * fetches so far found them), in bytes; a guess before any was timed.
 * bare 1: the round trip of a request alone (the least latency lately:
 * what a hop costs); 0: as requests see it, queued behind each other
 * (what the windows in flight must cover). */
uint64_t hf_link_bdp(const struct http_env *he, int bare);

#endif
