/*
 * zrun.c - the first pass of a decompressing source, in its own thread,
 * and the reads served from it while it runs (zsource_int.h).
 *
 * The pass runs in a thread of the source (struct zrun), started
 * by the first read, source_extent or source_stamp, so that the reads
 * that follow a first open (the tar index build, from the start) take
 * the bytes the pass inflates instead of inflating them again: one
 * inflation at the first mount, the pass (zlib) and the reader on two
 * cores.  The pass hands each span, whole, to the cache as it ends; once
 * a reader has called source_extent (it streams: it will ask at the end
 * whether what it read was sound), a read of bytes the pass has not
 * reached waits for them (its end, error or cancellation wakes the read),
 * and other reads wait for the end (bytes checked, as before); the pass waits when it is `ahead` bytes
 * past the furthest byte asked for, so its memory stays the cache's and
 * a source nobody reads costs nothing.  Until the pass ends the size is
 * unknown: source_stamp waits for the end; source_extent says how far the
 * bytes go so far (the tar walk's bound, formats/tar.c); index
 * fingerprints take source_identity (the compressed file's stamp).  Spans
 * read while the pass ran are noted: when the pass then finds any of them
 * damaged (a CRC-32 known only at a member's end), source_extent fails
 * with EIO, so a build that read them fails as it would have had it read
 * them after the pass (EIO).  A span evicted before its reader got to it
 * makes that reader wait for the end and inflate it from the table.
 * A pass started by an index build's thread reads as the build does
 * (source_build: a failing read is sent again until build_timeout, a slow
 * request hedged), so a flaky store costs it retries, not the build.
 *
 * Threads: the pass thread and the readers share struct zrun under its
 * mutex; the table, the size and the pass's result are written by the
 * pass thread before it clears z->growing (release) and read after a
 * read of it (acquire) or under that mutex.  The thread is detached: it
 * touches z for the last time under mu, where it sets `done`, so
 * zrun_stop waits for `done` instead of joining, and a source whose pass
 * has ended holds no thread (a mount may open thousands: zip members).
 *
 * Not for: the pass itself (ztable.c and the codecs), reads once the
 * table is bound (zsource.c).
 */
#include "io/backend.h"
#include "io/codecs/zsource_int.h"
#include "io/codecs/ztable.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/lru.h"
#include "log.h"
#include "search.h"

static void *pass_main(void *arg);

/* The first pass while it runs (see above); under mu. */
struct zrun {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* a span ended, the end, a reader asked */
	uint64_t *starts;             /* span i's first byte, spans ended so far */
	uint8_t *touched;             /* 1: a reader took bytes of span i */
	uint64_t nspans, cap;
	uint64_t frontier;            /* bytes in the spans ended so far */
	uint64_t asked;               /* the furthest byte a reader asked for */
	uint64_t ahead;               /* the pass waits this far past `asked` */
	int started, cancel, done;
	int streamed;                 /* a reader called source_extent: reads
				       * are served at the frontier */
	const struct zrun_hooks *hooks; /* zsource.c's, for the pass */
	int build;                    /* started by an index build's thread:
				       * the pass reads as the build would
				       * (source_build: retried until
				       * build_timeout, hedged), set before
				       * the thread starts */
};

/* The span holding off among those ended (off < frontier); mu held. */
static uint64_t run_span(const struct zrun *r, uint64_t off)
{
	return SFS_PARTITION_POINT(uint64_t, 1, r->nspans, i, r->starts[i] <= off) - 1;
}

/* Starts the pass on the first demand; mu held.  A thread that cannot be
 * made publishes the end at once, with the error. */
static void run_start(struct zsrc *z)
{
	struct zrun *r = z->run;
	pthread_attr_t at;
	int rc;

	if (r->started)
		return;
	r->started = 1;
	r->build = source_build_since() != 0;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&r->tid, &at, pass_main, z);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		r->started = 0;
		sfs_err("%s: cannot start its first pass: %s", source_name(z->in),
			strerror(rc));
		z->pass_rc = -rc;
		r->done = 1;
		atomic_store_explicit(&z->growing, 0, memory_order_release);
	}
}

/* A reader asks for the bytes before `end`: the pass may go on to there
 * (and `ahead` past it); mu held. */
static void run_ask(struct zsrc *z, uint64_t end)
{
	struct zrun *r = z->run;

	run_start(z);
	if (end > r->asked) {
		r->asked = end;
		pthread_cond_broadcast(&r->cv);
	}
}

/*
 * The bytes [off, off + n) the pass has inflated, from the cache, waiting
 * for the pass to reach them; *done: how many were copied.  Stops short
 * (0) when the pass has ended meanwhile (the table reads the rest) or a
 * span was evicted (after waiting for the end, for the same reason);
 * -EAGAIN in no-wait mode where it would wait.  Only for a source a
 * reader streams (source_extent called: that reader learns at the end
 * whether the bytes were damaged); other reads wait for the end, so they
 * get bytes the pass has checked, as before the pass ran in a thread.
 */
int zrun_read(struct zsrc *z, void *buf, size_t n, uint64_t off, size_t *done)
{
	struct zrun *r = z->run;
	uint64_t j, lo, hi, at;
	size_t k;
	int hit = 1;

	pthread_mutex_lock(&r->mu);
	if (!r->streamed)	/* verified bytes only: after the pass */
		off = UINT64_MAX - n;
	if (!r->done && r->frontier < off + n && source_nowait_mode()) {
		pthread_mutex_unlock(&r->mu);
		return -EAGAIN;
	}
	run_ask(z, off + n);
	while (!r->done && r->frontier < off + n)
		pthread_cond_wait(&r->cv, &r->mu);
	while (!r->done && *done < n && hit) {
		at = off + *done;
		j = run_span(r, at);
		lo = r->starts[j];
		hi = j + 1 < r->nspans ? r->starts[j + 1] : r->frontier;
		r->touched[j] = 1;
		pthread_mutex_unlock(&r->mu);
		k = hi - at < n - *done ? (size_t)(hi - at) : n - *done;
		hit = lru_copy_out(z->ze->cache, z->id << 33 | j << 1 | 1,
				   (size_t)(at - lo), (char *)buf + *done, k) == 1;
		if (hit)
			*done += k;
		pthread_mutex_lock(&r->mu);
	}
	if (!hit)	/* evicted unread: the table will have it */
		run_ask(z, UINT64_MAX);
	while (!r->done && *done < n)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int zrun_extent(struct zsrc *z, uint64_t want, uint64_t *have)
{
	struct zrun *r = z->run;
	int done;

	pthread_mutex_lock(&r->mu);
	if (want != UINT64_MAX)
		r->streamed = 1;
	run_ask(z, want);
	while (!r->done && r->frontier < want)
		pthread_cond_wait(&r->cv, &r->mu);
	*have = r->frontier;
	done = r->done;
	pthread_mutex_unlock(&r->mu);
	return done;
}

/* Span i of the pass has ended (struct zspans): into the cache, readers
 * woken; waits while the pass is `ahead` past what was asked.  The next
 * span is wanted only while a reader streams and has not asked for the
 * end (then nobody reads the spans in order: copying them is waste). */
static int pass_keep(void *arg, uint64_t i, void *buf, size_t len)
{
	struct zsrc *z = arg;
	struct zrun *r = z->run;
	uint64_t c;
	void *q;
	int rc = 0;

	if (buf)
		lru_insert(z->ze->cache, z->id << 33 | i << 1 | 1, buf, len);
	pthread_mutex_lock(&r->mu);
	if (r->nspans == r->cap) {
		c = r->cap ? 2 * r->cap : 1024;
		if ((q = realloc(r->starts, c * sizeof(*r->starts))))
			r->starts = q;
		if (q && (q = realloc(r->touched, c)))
			r->touched = q;
		if (q)
			r->cap = c;
		else
			rc = -ENOMEM;
	}
	if (rc == 0 && i != r->nspans)
		rc = -EPROTO;	/* the pass ends its spans in order */
	if (rc == 0) {
		r->starts[r->nspans] = r->frontier;
		r->touched[r->nspans++] = 0;
		r->frontier += len;
	}
	pthread_cond_broadcast(&r->cv);
	while (rc == 0 && !r->cancel && r->frontier > r->asked &&
	       r->frontier - r->asked > r->ahead)
		pthread_cond_wait(&r->cv, &r->mu);
	if (r->cancel)
		rc = -ECANCELED;
	else if (rc == 0)
		rc = r->streamed && r->asked != UINT64_MAX;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* The spans read while the pass ran that it found damaged: -ERESTART
 * (said: the reader drops what it read and reads it again, when reads of
 * the damaged bytes give EIO at once), else 0; mu held, the table bound. */
static int damage_read(struct zsrc *z)
{
	const struct zrun *r = z->run;
	uint64_t j, at;

	for (j = 0; j < r->nspans && j < z->npts; j++)
		if (r->touched[j] && (z->pts[j].flags & ZP_BAD)) {
			at = z->pts[j].out;
			sfs_warn("%s: it is damaged %llu MiB into its uncompressed "
				 "bytes (%llu%%), where its first reader had already "
				 "read: reading it again, up to the damage only",
				 source_name(z->in), (unsigned long long)(at >> 20),
				 (unsigned long long)(z->usize ? at * 100 / z->usize : 0));
			return -ERESTART;
		}
	return 0;
}

/* The pass's thread: the table, saved and bound, then the end published. */
static void *pass_main(void *arg)
{
	struct zsrc *z = arg;
	struct zrun *r = z->run;
	struct zspans out = { pass_keep, r->hooks->span_buf, z };
	const uint8_t *blob = NULL;
	size_t len = 0;
	int rc;

	/* a build's source: a flaky store costs the pass retries, as it
	 * would the build's own reads, not the build */
	source_build(r->build);
	rc = ztable_build(z->in, z->codec, z->ze->span, z->want, &out, &blob, &len);

	if (rc == 0) {
		z->blob = blob;
		z->blob_len = len;
		z->own_map = 1;
		r->hooks->table_made(z);
	}
	pthread_mutex_lock(&r->mu);
	z->pass_rc = rc;
	if (rc == 0)
		z->extent_rc = damage_read(z);
	z->outer->stamp.size = z->usize;
	r->done = 1;
	atomic_store_explicit(&z->growing, 0, memory_order_release);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* The pass, made ready to run on the first demand (run_start). */
int zrun_init(struct zsrc *z, const struct zrun_hooks *hooks)
{
	struct zrun *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->ahead = z->ze->cache_bytes / 4;
	r->hooks = hooks;
	z->run = r;
	atomic_store(&z->growing, 1);
	return 0;
}

/* Cancels the pass (it ends at its next span) and waits for its end: the
 * thread is detached and no longer touches z or r once `done` is set. */
void zrun_stop(struct zrun *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->cancel = 1;
	pthread_cond_broadcast(&r->cv);
	while (r->started && !r->done)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->starts);
	free(r->touched);
	free(r);
}
