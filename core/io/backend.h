/*
 * backend.h - what a kind of source (local file, HTTP) implements, and the
 * struct source they share.  Private to core/io: everything above uses
 * source.h.
 *
 * backends.c chooses the backend by the name's scheme (from a table, as
 * squashfuse chooses its decompressors) and source.c owns the generic
 * parts of an open source (the stamp, the one "changed since mounting"
 * warning, the thread's no-wait flag); a backend only moves bytes and says
 * what it saw.
 */
#ifndef SFS_IO_BACKEND_H
#define SFS_IO_BACKEND_H

#include <stdatomic.h>

#include "io/source.h"

struct source_backend;

struct source {
	const struct source_backend *be;
	struct source_env *env;
	char *name;                 /* as opened, for messages */
	struct source_stamp stamp;  /* at open */
	atomic_int changed;         /* 1 once a change was seen: for good */
	atomic_int warned;          /* 1 once the change was reported */
	void *priv;                 /* the backend's */
};

/* source_stats' counters, added to (relaxed) by the threads reading and
 * read by source_env_stats: none is on a local file's read path but the
 * checksum ones, counted on failures only. */
struct source_counters {
	_Atomic uint64_t requests, retries, errors;
	_Atomic uint64_t mem_hits, mem_misses, disk_hits, disk_misses;
	_Atomic uint64_t checksum_failures, checksum_refetches;
	_Atomic uint64_t prefetch_hints;	/* source_advise's WILLNEED */
	_Atomic uint64_t decompressed;  /* sources opened as their uncompressed
					 * bytes (source_env_decompressed) */
};

/* Adds 1 to a counter of struct source_counters (ctr may be NULL). */
#define SOURCE_COUNT(ctr, field) do { if (ctr) \
	atomic_fetch_add_explicit(&(ctr)->field, 1, memory_order_relaxed); } while (0)

struct source_env {
	struct source_config cfg;   /* defaults filled in */
	source_change_fn on_change; /* source_env_on_change; set before reads */
	void *on_change_arg;
	void *http;                 /* the HTTP backend's shared state, or NULL */
	void *bucket;               /* the bucket backend's (bucket.c), or NULL */
	void *z;                    /* decompressing sources' (zsource.c) */
	struct source_counters ctr; /* source_env_stats */
	struct lru_pool *mem;       /* cfg.cache_bytes, for every cache */
};

struct source_backend {
	const char *name;
	/* 1 if this backend handles uri */
	int (*claims)(const char *uri);
	/* opens s->name, sets s->priv and s->stamp; 0 or -errno */
	int (*open)(struct source *s);
	/* as source_pread; the no-wait flag is source_nowait_mode() */
	ssize_t (*pread)(struct source *s, void *buf, size_t n, uint64_t off);
	/* optional: as source_preadv */
	ssize_t (*preadv)(struct source *s, struct iovec *iov, int n, uint64_t off);
	/* optional, for sources whose bytes travel a network (no checksum
	 * guards them on the way): as source_refetch */
	ssize_t (*refetch)(struct source *s, void *buf, size_t n, uint64_t off);
	/* optional: as source_forget */
	void (*forget)(struct source *s, uint64_t off, uint64_t n);
	/* 1 if the source no longer matches s->stamp, 0 if it does, -errno;
	 * source_check remembers a 1 (s->changed) */
	int (*changed)(struct source *s);
	/* optional: as source_fd */
	int (*fd)(struct source *s, int *fd, uint64_t *base);
	/* optional: as source_advise */
	void (*advise)(struct source *s, uint64_t off, uint64_t len,
		       enum source_advice adv);
	void (*close)(struct source *s);
	/* optional, for sources whose size is found while they are read
	 * (zsource.c): as source_extent; source_stamp calls it with want
	 * UINT64_MAX first.  Without it the stamp's size is final. */
	int (*extent)(struct source *s, uint64_t want, uint64_t *have);
	/* optional: as source_identity (default: the stamp) */
	void (*identity)(const struct source *s, struct source_stamp *out);
	int (*stat)(struct source_env *env, const char *uri,
		    struct source_info *out);
	/* optional: as source_stat_seen */
	void (*seen)(struct source_env *env, const char *uri,
		     const struct source_info *info);
	int (*list)(struct source_env *env, const char *uri,
		    source_list_fn fn, void *arg);
	/* optional: stores len bytes as the object uri (buckets); 0 or
	 * -errno, said naming uri and what the store answered */
	int (*upload)(struct source_env *env, const char *uri, const void *data,
		      uint64_t len);
	/* optional: per-mount state in env->http etc.; 0 or -errno */
	int (*env_init)(struct source_env *env);
	void (*env_fini)(struct source_env *env);
};

/* The calling thread's cancel scope (source_cancel_scope), or NULL. */
const struct source_cancel *source_cancel_current(void);
/* When the calling thread's index build started (sfs_now_ns), 0 when it
 * is not building (source_build). */
int64_t source_build_since(void);

/* Marks s changed, for good (a response showed another ETag or size, or
 * fstat another size or mtime); the warning is given by source_check / the
 * failing read. */
void source_mark_changed(struct source *s);

extern const struct source_backend source_file_backend;
extern const struct source_backend source_http_backend;
extern const struct source_backend source_bucket_backend;
/* Never claims a name: it wraps a source whose first bytes are a
 * compressed format's (zsource.h), and keeps the mount's span cache. */
extern const struct source_backend source_z_backend;
/* Never claims a name either: an archive decompressed once (arxsource.h). */
extern const struct source_backend source_arx_backend;

/* After a backend opened `in`: *out = in when it is not compressed, else
 * a new source of its uncompressed bytes that owns in.  0, or -errno
 * with in closed (said: a failed pass, a scratch file). */
int zsource_wrap(struct source *in, struct source **out);
/* zsource_wrap, counting in env a source that was decompressed (backends.c). */
int source_counted_wrap(struct source *in, struct source **out);
/* AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 (backends.c). */
const char *source_default_region(void);

#endif
