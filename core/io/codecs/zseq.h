/*
 * zseq.h - sequential reads inside long xz blocks and zstd frames, for
 * zsource.c: the codecs that read through a decoder (zcodec.h, dec_*)
 * restart only at block or frame starts, so a span inside a long block
 * (ZP_SEQ) is decoded on from the block's start, and the decoder is kept
 * where it stopped, so that the next span of a sequential reader costs
 * only itself.  Private to core/io.
 *
 * Not for: the cache, the table's checks (zsource.c decides what a
 * decoded span is worth), codecs with a span function (gzip).
 */
#ifndef SFS_IO_ZSEQ_H
#define SFS_IO_ZSEQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "io/codecs/zcodec.h"

/* What zseq reads: one source's table, and where the spans it decodes
 * on the way to a later one go. */
struct zseq_view {
	struct source *in;
	const struct zcodec *codec;
	const struct zpoint *pts;
	uint64_t npts, usize;
	/* span j (len bytes, buf the caller's to keep or free), one of the
	 * few decoded just before the span asked for (the kernel's
	 * read-ahead asks out of order) */
	void (*passed)(void *arg, uint64_t j, unsigned char *buf, size_t len);
	/* after a span read: the decoder produced uncompressed [from, to) */
	void (*decoded)(void *arg, uint64_t from, uint64_t to);
	/* a buffer for such a span (zsource's pool: the cache's buffers) */
	void *(*get)(void *arg, size_t len);
	void *arg;
	/* a span read again after it failed: by a decoder of its own from
	 * the restart point, not the one kept, whose reads of the source go
	 * past every cache (zreader.fresh) */
	int fresh;
};

/*
 * A source's kept decoder.  Threads: `kept` is taken out under `lock`
 * and used unlocked (one thread has it at a time); `run` is held by the
 * caller while a ZP_SEQ span decodes (zsource.c's seq_copy), so that
 * ZP_SEQ spans of a source decode one at a time and the next reader
 * finds its span cached or the decoder just before it.  `nkept` counts
 * the mount's kept decoders (a dictionary's memory each: at most 8).
 */
struct zdecoder_cache {
	pthread_mutex_t lock;
	pthread_mutex_t run;
	struct zseq *kept;
	atomic_uint *nkept;
};

void zdecoder_cache_init(struct zdecoder_cache *k, atomic_uint *nkept);
/* Frees the kept decoder (codec c's). */
void zdecoder_cache_fini(struct zdecoder_cache *k, const struct zcodec *c);

/* Decodes the whole of span i (len bytes) into buf, through the kept
 * decoder when it is at or before the span and not before its restart
 * point: 0 or -errno (the codec says why; *failed: the span the decoder
 * was in, i or one before it on the way; *read_rc: a read of the source
 * that failed, its -errno, else 0). */
int zseq_span(struct zdecoder_cache *k, const struct zseq_view *v, uint64_t i,
	      unsigned char *buf, size_t len, uint64_t *failed, int *read_rc);

/* Says at open when a read may decode far (a restart point more than
 * 64 MiB before the end of a span after it), with the codec's fix. */
void zseq_warn_far(const struct zseq_view *v);

#endif
