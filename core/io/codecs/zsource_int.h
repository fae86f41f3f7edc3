/*
 * zsource_int.h - what zsource.c and zrun.c share: the per-mount and
 * per-source state of the decompressing source, and the few functions
 * one calls in the other.  Private to core/io/codecs/zsource.c and zrun.c; the
 * API is zsource.h.
 */
#ifndef SAMPLEFS_IO_ZSOURCE_INT_H
#define SAMPLEFS_IO_ZSOURCE_INT_H

#include "io/source.h"
#include "io/codecs/zcodec.h"
#include "io/codecs/zseq.h"
#include "io/codecs/zsource.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct zrun;

/*
 * Per-mount state (env->z).  Span buffers: every span in the cache was
 * inflated into a buffer of the pool (by the pass, zrecorder_outbuf, or by a
 * read miss), and the cache gives each one it evicts or refuses back to
 * the pool (lru_set_release), which keeps POOL_SPARE of them: once the
 * cache is full, a span is inflated into memory an evicted one held, not
 * into fresh pages.  A buffer is owned by exactly one of: the pool, the
 * cache, or the one thread inflating into it (the pass thread for its
 * current span, a FUSE worker for its miss) until it inserts it.
 */
struct zenv {
	struct lru *cache;
	struct zpool *pool;
	atomic_uint next_id;
	const struct zsource_store *store;
	void *store_arg;
	enum zengine eng;
	uint64_t span;
	uint64_t cache_bytes;         /* the mount's cache memory, which the
				       * span cache shares */
	atomic_uint nseq;             /* decoders kept by its sources (zseq.c) */
	zsource_decoded_fn decoded;   /* set before reads, then only read */
	void *decoded_arg;
};

/* Per-source state (s->priv). */
struct zsrc {
	struct source *in;            /* the compressed bytes */
	const struct zcodec *codec;
	struct zenv *ze;
	uint64_t id;                  /* the cache's key base */
	const uint8_t *blob;          /* the table, mapped */
	size_t blob_len;
	const struct zpoint *pts;
	uint64_t npts, usize;
	void *hold;                   /* the store's mapping, or NULL */
	int own_map;                  /* 1: blob is our own mmap */
	int no_pass;                  /* the store forbids a pass (-EPERM) */
	struct zdecoder_cache keep;            /* xz, zstd: the decoder kept (zseq.h) */
	atomic_int refused;           /* 1: the last read that failed did so
				       * for damage (zsource_damage) */
	atomic_uchar *failed;         /* per span, 1: a read found it damaged
				       * (not the pass: ZP_BAD); NULL: none
				       * kept (set at bind, ENOMEM) */
	struct source *outer;         /* the source z is the priv of */
	struct zrun *run;             /* the first pass, or NULL (stored table) */
	const struct zexpect *want;   /* raw deflate: &want_buf; else NULL */
	struct zexpect want_buf;
	atomic_int growing;           /* 1 until the pass's end is published */
	int pass_rc;                  /* the pass failed: every read gives it */
	int extent_rc;                /* -ERESTART: bytes read while it ran
				       * were damaged (source_extent says it) */
};

/*
 * What the pass needs of zsource.c, which hands it over at zrun_init: the
 * pass calls up through these pointers, never by name, so zsource.c stands
 * above zrun.c.  span_buf: a span buffer of the mount's pool (struct
 * zspans' `get`: arg is the zsrc); table_made: the pass's table, saved to
 * the store and bound to z (and the long-block warning).
 */
struct zrun_hooks {
	void *(*span_buf)(void *arg, size_t len);
	void (*table_made)(struct zsrc *z);
};

/*
 * zrun.c: the first pass in its thread.  zrun_init makes it ready to run
 * on the first demand (z->growing set); zrun_read serves [off, off + n)
 * from the spans the pass has ended (*done: bytes copied; 0 with *done < n
 * when the table must read the rest; -EAGAIN in no-wait mode); zrun_extent
 * waits until the pass has gone past `want` or ended: 0 with *have while
 * it runs, 1 once it has ended; zrun_stop cancels it and waits for its
 * thread.
 */
int zrun_init(struct zsrc *z, const struct zrun_hooks *hooks);
int zrun_read(struct zsrc *z, void *buf, size_t n, uint64_t off, size_t *done);
int zrun_extent(struct zsrc *z, uint64_t want, uint64_t *have);
void zrun_stop(struct zrun *r);

#endif
