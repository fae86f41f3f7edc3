/*
 * zseq.c - the decoders zsource.c keeps between reads of xz and zstd
 * sources (zseq.h): a span is decoded on from the decoder left just
 * before it, or from its restart point (the last point without ZP_SEQ);
 * spans passed on the way are handed back to zsource.c to cache.
 *
 * Not for: spans of codecs with a span function (gzip), the cache, the
 * table (zsource.c, ztable.c).
 */
#include "io/codecs/zseq.h"

#include <errno.h>
#include <stdlib.h>

#include "io/codecs/ztable.h"
#include "log.h"

#define ZSEQ_KEPT  8               /* decoders kept between reads, a mount */
#define SEQ_READ   (256u << 10)    /* the decoder's reads of the source */
#define SEQ_WARN   (64ull << 20)   /* a read may decode this far: warned */
#define SEQ_CACHE  4               /* spans decoded on the way, handed back */

/* A codec's decoder (dec_*) where the last read left it. */
struct zseq {
	struct zreader in;
	void *dec;
	uint64_t j;                   /* the span it is at the start of */
};

void zdecoder_cache_init(struct zdecoder_cache *k, atomic_uint *nkept)
{
	pthread_mutex_init(&k->lock, NULL);
	pthread_mutex_init(&k->run, NULL);
	k->kept = NULL;
	k->nkept = nkept;
}

static void seq_free(const struct zcodec *c, struct zseq *q)
{
	if (!q)
		return;
	if (q->dec)
		c->dec_free(q->dec);
	free(q->in.buf);
	free(q);
}

void zdecoder_cache_fini(struct zdecoder_cache *k, const struct zcodec *c)
{
	if (k->kept) {
		seq_free(c, k->kept);
		atomic_fetch_sub(k->nkept, 1);
	}
	pthread_mutex_destroy(&k->lock);
	pthread_mutex_destroy(&k->run);
}

/* The last restart point at or before span i (the first never is ZP_SEQ). */
static uint64_t restart_of(const struct zseq_view *v, uint64_t i)
{
	while (i && (v->pts[i].flags & ZP_SEQ))
		i--;
	return i;
}

/* A decoder at or before span i and not before its restart point: the
 * one kept, when it is (and the read is not v->fresh), else a new one at
 * the restart point. */
static int seq_take(struct zdecoder_cache *k, const struct zseq_view *v, uint64_t i,
		    struct zseq **qp, int *read_rc)
{
	uint64_t r = restart_of(v, i);
	struct zseq *q;
	int rc;

	pthread_mutex_lock(&k->lock);
	q = k->kept;
	if (q && !v->fresh && q->j >= r && q->j <= i) {
		k->kept = NULL;
		atomic_fetch_sub(k->nkept, 1);
	} else {
		q = NULL;
	}
	pthread_mutex_unlock(&k->lock);
	if (q) {
		*qp = q;
		return 0;
	}
	if (!(q = calloc(1, sizeof(*q))) ||
	    zreader_init(&q->in, v->in, SEQ_READ) < 0) {
		free(q);
		return -ENOMEM;
	}
	q->in.fresh = v->fresh;
	if ((rc = v->codec->dec_open(&q->in, &v->pts[r], &q->dec)) < 0) {
		*read_rc = q->in.read_rc;
		seq_free(v->codec, q);
		return rc;
	}
	q->j = r;
	*qp = q;
	return 0;
}

/* Keeps q for the next read (in place of an older one), unless the
 * mount keeps ZSEQ_KEPT already. */
static void seq_keep(struct zdecoder_cache *k, const struct zcodec *c, struct zseq *q)
{
	struct zseq *old;

	pthread_mutex_lock(&k->lock);
	old = k->kept;
	if (old || atomic_fetch_add(k->nkept, 1) < ZSEQ_KEPT) {
		k->kept = q;
		q = NULL;
	} else {
		atomic_fetch_sub(k->nkept, 1);
	}
	pthread_mutex_unlock(&k->lock);
	seq_free(c, old ? old : q);
}

/* Decodes span j, which q is at, on the way to span i: handed back when
 * it is one of the SEQ_CACHE spans just before i and the read takes span
 * i whole (reads in order, whose neighbours other readers may want; a
 * random read's would cost a buffer and a CRC-32 each for nobody), else
 * decoded into buf (cap bytes) and dropped. */
static int seq_pass_span(const struct zseq_view *v, struct zseq *q,
			 uint64_t i, int whole, unsigned char *buf, size_t cap)
{
	uint64_t j = q->j;
	size_t len = (size_t)(v->pts[j + 1].out - v->pts[j].out), k, done;
	unsigned char *keep = whole && i - j <= SEQ_CACHE ?
			      v->get(v->arg, len ? len : 1) : NULL;
	int rc = 0;

	for (done = 0; rc == 0 && done < len; done += k) {
		k = keep ? len : len - done < cap ? len - done : cap;
		rc = v->codec->dec_read(q->dec, &q->in, keep ? keep : buf, k);
	}
	q->j++;
	if (rc == 0 && keep) {
		v->passed(v->arg, j, keep, len);
		keep = NULL;
	}
	free(keep);
	return rc;
}

int zseq_span(struct zdecoder_cache *k, const struct zseq_view *v, uint64_t i,
	      unsigned char *buf, size_t len, uint64_t *failed, int *read_rc)
{
	int whole = len == span_end(v->pts, v->npts, i, v->usize) - v->pts[i].out;
	struct zseq *q;
	uint64_t from;
	int rc;

	*failed = restart_of(v, i);
	*read_rc = 0;
	if ((rc = seq_take(k, v, i, &q, read_rc)) < 0)
		return rc;
	q->in.read_rc = 0;
	from = v->pts[q->j].out;
	while (rc == 0 && q->j < i) {
		*failed = q->j;
		rc = seq_pass_span(v, q, i, whole, buf, len);
	}
	if (rc == 0) {
		*failed = i;
		rc = v->codec->dec_read(q->dec, &q->in, buf, len);
	}
	q->j = i + 1;
	*read_rc = q->in.read_rc;
	q->in.fresh = 0;	/* kept: later reads take the caches again */
	if (rc == 0 && v->decoded)
		v->decoded(v->arg, from, v->pts[i].out + len);
	/* only a decoder at a span's start is worth keeping */
	if (rc == 0 && whole)
		seq_keep(k, v->codec, q);
	else
		seq_free(v->codec, q);
	return rc;
}

void zseq_warn_far(const struct zseq_view *v)
{
	uint64_t i, r = 0, far = 0, d;

	for (i = 0; i < v->npts && v->codec->seq_fix; i++) {
		if (!(v->pts[i].flags & ZP_SEQ))
			r = i;
		d = span_end(v->pts, v->npts, i, v->usize) - v->pts[r].out;
		far = d > far ? d : far;
	}
	if (far > SEQ_WARN)
		sfs_warn("%s: up to %llu MiB of it in one %s block or frame: "
			 "sequential reads are fast, a random read decodes up "
			 "to that much; %s", source_name(v->in),
			 (unsigned long long)(far >> 20), v->codec->name,
			 v->codec->seq_fix);
}
