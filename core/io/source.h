/*
 * source.h - the one place source bytes are read.
 *
 * A source is one file a layout is built from: a local file, an
 * http:// or https:// URL, or an object in a bucket (s3://BUCKET/KEY,
 * gs://BUCKET/KEY: bucket.c).  Everything above core/io (formats, index,
 * layouts) reads, stats and lists sources only through this header, so a
 * new kind of source (a bucket, a compressed stream) is one new backend
 * here and nothing else.  Local files keep their fast paths: a source can
 * hand out its descriptor for splicing, and in no-wait mode a read that
 * would block fails with -EAGAIN instead of waiting.
 *
 * Names: a source is named by a URI string: a path ("/data/x.tar",
 * "rel/x.npy") or a URL ("https://host/dir/x.tar").  source_join() builds
 * a child name (percent-encoding for URLs), so callers never paste strings.
 *
 * Stamps: a source is opened once and keeps the stamp it had then (size,
 * mtime, ETag).  Indexes are fingerprinted by stamps; source_check() says
 * whether the source still matches its stamp (one way, for every layout).
 * A change, once seen, stays: every later read of that source gives EIO,
 * bytes cached before the change included, for every backend; for URLs
 * mount-wide (another struct source of the same URL in the same
 * source_env, opened before or after, reads EIO too) until the env is
 * freed (the unmount).
 *
 * Threads: a struct source may be read from many threads at once
 * (source_pread, source_check, source_fd); open and close are not
 * concurrent with anything else on the same source.  The environment
 * (connection pool, caches) is shared by all sources of a mount and is
 * locked inside core/io.  The no-wait flag and the cancel scope are per
 * thread (thread-local): the only state outside the mount context, on
 * purpose, since they belong to the request the thread is running.
 *
 * Bounds (URLs): one source_pread, its retries, backoff and waits for
 * other threads' requests included, gives up with EIO read_timeout_s after
 * it started, or after its request arrived when the cancel scope says when
 * (source_cancel.since: a FUSE read that waited for a worker counts that
 * wait); and, under a cancel scope, with EINTR within POLL_MS (50 ms) of
 * source_cancel().  Reads waiting for the same blocks share one request
 * and its outcome, a failure included, and a read of the same bytes that
 * arrives within FAIL_HOLD_MS (2 s) of a failed read takes that failure
 * rather than starting a round of its own (what the kernel does right
 * after a failed readahead: it asks again for the page); reads of other
 * bytes, in the same blocks or not, send their own requests.
 *
 * Errors: negative errno.  Remote failures are logged here, once per cause
 * and rate-limited (log.h), naming the URL, the range and what the server
 * answered; local ones are not (callers name the file with strerror).
 *
 * Not for: writing, mapping or locking index files, log files or anything
 * samplefs itself writes; those are local files handled by their own
 * modules (core/index/index.c, core/log.c).  A saved index may be read as
 * a local source where its reads want the no-wait mode (the Quick, Draw!
 * stroke blocks: blockstore_read_from).
 */
#ifndef SFS_SOURCE_H
#define SFS_SOURCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What identifies one version of a source. */
struct source_stamp {
	uint64_t size;
	int64_t  mtime_ns;   /* 0 when the server gives no Last-Modified */
	char     etag[128];  /* HTTP ETag as sent (quotes kept); "" if none */
	/* GCS's object generation, from a listing: an object replaced by
	 * the same bytes keeps its ETag (an MD5) but not this; 0 if none */
	uint64_t generation;
};

/* Settings for remote sources (options of the mount); zero = default. */
/* Default of cfg.cache_bytes (-o cache_mem=). */
#define SOURCE_CACHE_DEFAULT (64ull << 20)

struct source_config {
	unsigned timeout_s;       /* connect, and no progress for this long; 30 */
	unsigned retries;         /* retries of one read before EIO; 5 */
	unsigned read_timeout_s;  /* one read, retries and waits included;
				   * 2 * timeout_s */
	unsigned build_timeout_s; /* an index build's reads retry a failing
				   * range until this long after the build
				   * started (source_build); 600 */
	const char *cacert;       /* CA bundle for https; NULL = system's */
	int insecure;             /* 1: do not verify TLS peers */
	uint64_t cache_bytes;     /* the mount's cache memory, one pool shared
				   * by every cache (fetched blocks, inflated
				   * spans and stroke blocks, small zip
				   * members: io/lru.h); 64 MiB */
	const char *cache_dir;    /* optional on-disk block cache */
	uint64_t cache_dir_bytes; /* its bound; 1 GiB */
	unsigned max_redirects;   /* 8 */
	/* buckets (s3://, gs://; bucket.c) */
	const char *endpoint;     /* the store's URL; NULL: AWS's, Google's
				   * (or AWS_ENDPOINT_URL for s3://) */
	const char *region;       /* S3; NULL: AWS_REGION, AWS_DEFAULT_REGION,
				   * else us-east-1 */
	int addressing;           /* S3: 0 path-style for an endpoint given,
				   * virtual-hosted for AWS's; 1 path; 2 virtual */
	const char *profile;      /* in ~/.aws/credentials; NULL: AWS_PROFILE */
	int anonymous;            /* 1: unsigned requests, whatever the
				   * environment holds */
	unsigned max_keys;        /* keys per listing request; 1000 */
	/* compressed sources (zsource.h), any backend */
	uint64_t span_bytes;      /* output between access points; 1 MiB */
};

/* Per-mount state shared by its sources (connections, caches). */
struct source_env;

/*
 * What the remote sources of an env did since it was made, summed over
 * them (local files are counted above core/io: their reads are the FUSE
 * layer's replies).  requests: HTTP requests sent, each attempt counted;
 * retries: those attempts after a request's first; errors: requests that
 * failed after their retries; mem_ and disk_: blocks a read looked for
 * in the memory and disk caches (a miss in memory that the disk has is a
 * mem_miss and a disk_hit; disk_ stay 0 without cache_dir).
 * checksum_failures: reads whose bytes failed a checksum kept for them
 * (the CRC32C of a tar member, -o checksums: source_count_checksum), local
 * sources too; checksum_refetches: those read again past every cache
 * (source_refetch) after such a failure.
 */
struct source_stats {
	uint64_t requests, retries, errors;
	uint64_t mem_hits, mem_misses, disk_hits, disk_misses;
	uint64_t checksum_failures, checksum_refetches;
	uint64_t prefetch_hints;	/* WILLNEED hints given to sources */
};
/* Fills *out; from any thread, at any time (relaxed counters: each one
 * exact, the set not one instant's). */
void source_env_stats(const struct source_env *env, struct source_stats *out);

/* The configuration in force: as given, defaults filled in (the region
 * too: region=, else AWS_REGION, AWS_DEFAULT_REGION, else us-east-1), but
 * span_bytes, 0 for zsource.h's default. */
const struct source_config *source_env_config(const struct source_env *env);
/* How many sources were opened through env as the uncompressed bytes of
 * a compressed file or member (zsource.h) so far. */
uint64_t source_env_decompressed(const struct source_env *env);

/* cfg may be NULL (defaults).  0 or -errno. */
int source_env_new(const struct source_config *cfg, struct source_env **out);
void source_env_free(struct source_env *env);

struct source;
/*
 * Called once per source of env when its change is first seen (with its
 * warning), on the thread that saw it, possibly deep inside a read and
 * under a layout's locks: it may only take note and return.  For whoever
 * caches bytes above core/io (the kernel's page cache, through the FUSE
 * layer), so those are dropped too.  Set before reads start; NULL: none.
 */
typedef void (*source_change_fn)(void *arg, const struct source *s);
void source_env_on_change(struct source_env *env, source_change_fn fn,
			  void *arg);

/*
 * Opens `uri` (path or URL) and records its stamp.  env may be NULL for
 * local paths.  -ENOENT, -EACCES, -EISDIR (a directory), -EINVAL (not a
 * regular file: a FIFO or device, which is never waited on), -EIO (the
 * server failed or cannot serve ranges: a remote source must answer a
 * Range request with 206), or another -errno.
 * A compressed file (gzip, by its first bytes; a URL only when its name
 * ends in .gz, .tgz, .bgz or .gzip; xz, zstd, bzip2 likewise) opens as its
 * uncompressed bytes when env is not NULL: zsource.h, whose first pass over
 * the file runs in a thread from then on (source_stamp waits for it,
 * source_extent and reads at its frontier follow it).
 */
int source_open(struct source_env *env, const char *uri, struct source **out);
void source_close(struct source *s);

/* The mount's cache memory (cfg.cache_bytes): every cache of the mount is
 * made in it (lru_new_in, io/lru.h), whatever layer it is in.  Of a
 * source: its environment's, NULL for a source opened without one. */
struct lru_pool;
struct lru_pool *source_env_cache(struct source_env *env);
struct lru_pool *source_cache(const struct source *s);

/* The name it was opened with, for messages. */
const char *source_name(const struct source *s);
/* The stamp recorded at open.  For a decompressed source whose first
 * pass still runs (zsource.h) this waits for the pass to end, so its size
 * is the uncompressed size (0 when the pass failed: its reads say why). */
const struct source_stamp *source_stamp(const struct source *s);

/*
 * What identifies the source's bytes, known at open without waiting, for
 * index fingerprints: its stamp, except that a decompressed source's size
 * there is the compressed file's (its ETag names the codec and that size
 * too: the uncompressed bytes are a function of the compressed ones).
 */
void source_identity(const struct source *s, struct source_stamp *out);

/*
 * For a reader going through a source from its start while its size may
 * not be known yet (a tar index build over a decompressed source at its
 * first open: its pass runs in a thread and reads at the pass's frontier
 * wait for it).  Waits until at least `want` bytes exist or the size is
 * known (want 0: never waits), then *have = the bytes known to exist.
 * 1 when *have is the final size (every source but a growing one), 0 when
 * it may still grow (then *have >= want), -ERESTART when bytes read while
 * it ran turned out damaged (said: drop what was read and read again;
 * reads of the damaged bytes now give EIO at once), another -errno when
 * the source cannot give its bytes (the pass failed: said).  The wait is
 * bounded by the pass, which always ends.
 * A call with want < UINT64_MAX makes the caller the source's streaming
 * reader: reads are served as the pass inflates them, before a member's
 * CRC-32 (at its end) has checked them, so the caller must call it with
 * UINT64_MAX at the end and drop what it read if that fails.  Until a
 * first such call, reads of a growing source wait for the pass's end.
 */
int source_extent(struct source *s, uint64_t want, uint64_t *have);
/* A stamp's mtime in whole seconds (rounded down), for attributes. */
static inline int64_t source_stamp_sec(const struct source_stamp *st)
{
	return st->mtime_ns >= 0 ? st->mtime_ns / 1000000000 :
				   -((-st->mtime_ns + 999999999) / 1000000000);
}
/* 1 for network sources (no descriptor, reads may take a round trip). */
int source_is_remote(const struct source *s);

/*
 * Reads n bytes at off: returns n, fewer only at the end of the source, or
 * -errno.  -EAGAIN only in no-wait mode, when the bytes are not at hand
 * (local: not in the page cache; remote: not in the block cache): retry on
 * a thread where waiting is allowed.  -EIO when the source changed since
 * open (checked on every remote response; locally on a short read), once
 * a change was seen (cached bytes are not served then either), or a
 * remote read failed after its retries or read_timeout_s.  -EINTR when the
 * thread's cancel scope was cancelled while the read waited (remote only:
 * a local read is never cancelled).
 */
ssize_t source_pread(struct source *s, void *buf, size_t n, uint64_t off);

/*
 * As source_pread, for bytes the caller cannot believe (a tar header whose
 * checksum fails): read again from where the source lives, past every
 * cache, whose copies of them are replaced.  Over a network a byte may
 * change on its way (TCP's checksum is weak, and a proxy or a NIC may flip
 * one); a file's bytes cannot, so -ENOTSUP for sources whose bytes do not
 * travel a network (local files, decompressed streams, which check their
 * own and read their compressed bytes again this way: zsource.c).
 * Bounded as source_pread; in an index build retried as its reads.
 */
ssize_t source_refetch(struct source *s, void *buf, size_t n, uint64_t off);
/* Drops every cached copy of the bytes [off, off + n) of s (the blocks
 * holding them, in memory and in cache_dir): they failed a checksum the
 * caller holds, after a refetch too, so the next read fetches them
 * again.  Nothing for sources with no cache of their own (local files). */
void source_forget(struct source *s, uint64_t off, uint64_t n);
/* Counts, in s's environment (none: nothing), a read of s whose bytes
 * failed a checksum the caller holds for them (refetch 0), or a refetch
 * made after one (1): source_stats. */
void source_count_checksum(struct source *s, int refetch);
/* 1 when source_refetch reads s again (its bytes travel a network), so
 * damage read in it may not be in the source: an index cut there is not
 * to be saved (tarindex_build). */
int source_refetches(const struct source *s);

/*
 * Whether the source still matches its stamp: 0, or -EIO with one warning
 * for this source ("... changed since mounting ...: reads give EIO").
 * Local: fstat (size, mtime).  Remote: what the responses so far showed
 * (no request is sent), for any source of that URL in the mount.  Once a
 * change was seen it stays: -EIO until the source is closed (a local file
 * whose size and mtime are put back still gives EIO).
 */
int source_check(struct source *s);

/*
 * A piece of a reply answered in pieces (layout.h's `spans`): `len` bytes
 * at `off` of `src`, a source with a descriptor (source_fd) whose bytes are
 * sent in place (spliced); or, src NULL, `len` bytes the caller's buffer
 * holds at `off` (the piece's offset in the reply).
 */
struct source_span {
	struct source *src;
	uint64_t off;
	size_t len;
};

/*
 * For splicing: the descriptor holding the bytes and the offset in it of
 * the source's byte 0.  -ENOTSUP for remote sources.  The descriptor stays
 * owned by the source.
 */
int source_fd(struct source *s, int *fd, uint64_t *base);

/*
 * Reads a reply answered in pieces into buf, where it is copied, not
 * spliced: the bytes of each span of a source (one with a descriptor) go
 * to its place in the reply (the sum of the lengths of the spans before
 * it); buf's own spans are left as they are.  Spans of one source whose
 * ranges follow each other within SOURCE_FILL_GAP bytes (a tar's members:
 * a header and padding apart) are read with one source_preadv,
 * the bytes between them into a scratch block, not one pread each: at 3
 * KB members the calls, not the bytes, were a third of a streamed shard's
 * CPU.  In no-wait mode -EAGAIN when a byte is not in the page cache.  No
 * change check (the caller's, after: tarindex.h).  0 or -errno (-EIO: a
 * source shorter than a span).
 */
#define SOURCE_FILL_GAP 4096
int source_fill_spans(const struct source_span *sp, unsigned n, char *buf);

/* source_pread into n buffers (iov, which the call may change), for
 * sources read in place (local files and their slices); -ENOTSUP for the
 * others.  Bytes read (short only at the end), -EAGAIN in no-wait mode,
 * or -errno. */
struct iovec;
ssize_t source_preadv(struct source *s, struct iovec *iov, int n, uint64_t off);

/* Turns no-wait mode on or off for the calling thread. */
void source_nowait(int on);
/* The calling thread's no-wait flag: 1 when a read that would wait is to
 * give -EAGAIN (for callers above io that would wait otherwise: opening
 * a zip member's source looks its table up, formats/zipread.c). */
int source_nowait_mode(void);

/*
 * Cancelling reads: a thread reading for a request that may be abandoned
 * (a FUSE read whose reader was killed or interrupted) sets a cancel scope
 * for the reads it makes; another thread then calls source_cancel() and
 * the read gives -EINTR within POLL_MS (it polls the flag while it waits
 * for the network or for another thread's request).  A request running
 * for the cancelled read alone is dropped; one that other reads wait for
 * is dropped too and one of them sends it again (see httpcache.c).
 * Shared: `cancelled` is atomic, set by any thread, read by the one whose
 * scope it is; nothing else is, so source_cancel needs no lock and can be
 * called from a callback that runs under another library's lock.
 */
struct source_cancel {
	atomic_int cancelled;
	/* when the request the reads are for arrived (sfs_now_ns), or 0:
	 * each read's read_timeout_s counts from here, so time spent queued
	 * for a thread is part of it (docs/sources.md promises read_timeout for
	 * the whole read); set before the scope, never changed in it */
	int64_t since;
	/* the file the request reads, when it is one range of a source (a
	 * layout's extent): bytes [file_lo, file_end) of file_src, else
	 * file_src NULL.  A remote read of part of it fetches the whole file
	 * in its one request (up to 2 MiB: source_http's FILE_WHOLE_MAX), so
	 * the kernel's next READs of it, cut by its read-ahead window, find
	 * the bytes in memory instead of each sending a GET; set before the
	 * scope, never changed in it */
	const struct source *file_src;
	uint64_t file_lo, file_end;
};
/* The calling thread's reads look at c from now on (NULL: none).  c must
 * outlive the scope. */
void source_cancel_scope(struct source_cancel *c);
/* From any thread: the reads under c's scope give up (-EINTR). */
void source_cancel(struct source_cancel *c);

/*
 * Index builds: from source_build(1) to source_build(0), the calling
 * thread builds an index, whose reads of remote sources differ from a
 * served read's: a read that fails (read_timeout_s, retries spent) is sent
 * again with growing backoff until build_timeout_s after source_build(1)
 * (a source that changed still fails at once); each attempt gives up after
 * a shorter stall (BUILD_STALL_S in httpfetch.c), a read waiting for a
 * slow request of another thread sends its own after HEDGE_MS, and more
 * readahead requests are kept in flight.  A build is expensive to redo and
 * nobody is waiting on one of its pages, so it waits out a flaky store
 * where a served read must give EIO.  Thread-local, as the no-wait flag.
 */
void source_build(int on);

/* How the caller is about to read [off, off + len) (len 0: to the end). */
enum source_advice {
	SOURCE_ADV_NORMAL,    /* the default again */
	SOURCE_ADV_RANDOM,    /* small reads here and there: no readahead */
	SOURCE_ADV_WILLNEED,  /* these bytes soon: fetch them in the background */
	/* forward reads with gaps, to the end (a walk of a tar's headers,
	 * which skips the members' data): a remote source reads through
	 * the gaps its link delivers within a round trip, with windows in
	 * flight ahead of the reader, and hops over the others (httpahead.c);
	 * a local file takes it as RANDOM */
	SOURCE_ADV_WALK,
};
/* A hint, as posix_fadvise: local files pass it to the kernel; a backend
 * may ignore it.  Never fails. */
/* URL sources take SOURCE_WILLNEED_MAX WILLNEED hints at once (queued or
 * being fetched) and drop the rest: a caller hinting many ranges in turn
 * keeps no more than this many ahead of its reader. */
#define SOURCE_WILLNEED_MAX 16
/* A URL source fetches one WILLNEED hint with one ranged GET, of the
 * source's blocks around it, up to SOURCE_WILLNEED_SPAN bytes (a longer
 * hint is cut there).  A caller about to read ranges that lie next to each
 * other (apart by at most SOURCE_WILLNEED_GAP: a tar's headers and padding)
 * hints them as one range of up to the span: one GET for many members,
 * not one each (the gap's bytes are fetched anyway, in the blocks around
 * the members, or cost at most a block more). */
#define SOURCE_WILLNEED_SPAN (2u << 20)
#define SOURCE_WILLNEED_GAP  (32u << 10)
void source_advise(struct source *s, uint64_t off, uint64_t len,
		   enum source_advice adv);

/* What source_stat says of a name. */
struct source_info {
	int is_dir;
	/* files; for a directory its mtime where known (local), else 0 */
	struct source_stamp stamp;
};

/* -ENOENT when absent; -EINVAL for what is neither a regular file nor a
 * directory (a FIFO, a device); for URLs a HEAD (a name ending in '/' is
 * a directory).  Follows symlinks.  0 or -errno. */
int source_stat(struct source_env *env, const char *uri,
		struct source_info *out);
/* Tells env what a source_stat of uri in another environment of the same
 * mount said just now (layout_choose's, made before the daemon forks), so
 * that env's next look at uri within a second takes it instead of asking
 * the server again: one round trip less at every mount of a URL.  Nothing
 * for local names (their stat is cheap) or backends without the memo. */
void source_stat_seen(struct source_env *env, const char *uri,
		      const struct source_info *info);

/* Called once per entry (never "." or ".."); nonzero stops the listing and
 * is returned by source_list. */
typedef int (*source_list_fn)(void *arg, const char *name, int is_dir);

/*
 * Lists a directory: local with readdir; remote from the server's listing
 * (nginx `autoindex_format json`).  Order is unspecified (callers sort).
 * -ENOTDIR, -ENOENT, -ENOTSUP (a server that gives no listing), -errno.
 */
int source_list(struct source_env *env, const char *dir_uri,
		source_list_fn fn, void *arg);

/*
 * Stores len bytes as the object uri, whole (an s3:// or gs:// key: a
 * prebuilt index uploaded for a cluster's mounts).  0; -EOPNOTSUPP (said)
 * for names no backend can write (paths, http URLs: callers write files
 * themselves); another -errno, said naming uri and the store's answer.
 */
int source_upload(struct source_env *env, const char *uri, const void *data,
		  uint64_t len);

/* dir + "/" + name, the name percent-encoded for URLs; malloc'ed, NULL on
 * ENOMEM.  dir may end in '/'. */
char *source_join(const char *dir_uri, const char *name);
/* 1 if uri is a URL this build can open (http, https, s3, gs): a remote
 * source, named as a URL (source_join percent-encodes). */
int source_is_url(const char *uri);
/* 1 if uri names an object or prefix of a bucket (s3://, gs://). */
int source_is_bucket(const char *uri);
/* The name a source is known by from anywhere: a URL as given, a path
 * made absolute with its symlinks resolved (realpath).  malloc'ed, or
 * NULL with errno set (a path that does not resolve, ENOMEM). */
char *source_resolve(const char *uri);

#endif
