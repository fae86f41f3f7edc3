/*
 * httpreq.h - one HTTP request with libcurl, retried: the connection side
 * of the HTTP backend (http.c).  A mount's requests share one curl_share
 * (DNS, TLS sessions) and a pool of easy handles, each keeping its own
 * connections alive, one taken per request, so a request reuses a warm
 * connection and no handle outlives the mount.  Retries with exponential
 * backoff and jitter on what may pass (5xx, 429 with its Retry-After,
 * resets, timeouts, short bodies), all within one deadline per request
 * (the read's, see source_config.read_timeout_s), and stops at once when
 * the caller's cancel flag is set; bodies are written only into the
 * caller's buffers, never past them.
 *
 * Private to core/io.  Not for: caching, what a response means to a source
 * (http.c), or listings (autoindex.c).
 */
#ifndef SFS_IO_HTTPREQ_H
#define SFS_IO_HTTPREQ_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "io/source.h"

struct httpreq_ctx;

/*
 * What a bucket's request carries besides the URL (bucket.c): libcurl
 * signs it with AWS SigV4 when sigv4 is set ("aws:amz:REGION:s3", user the
 * access key, password the secret), and the header lines go as they are
 * ("x-amz-security-token: ...", "Authorization: Bearer ...").  Such a
 * request follows no redirect: credentials and tokens go to the host they
 * were meant for only.  Secrets stay in these strings: nothing here copies
 * them into a message.
 */
struct httpauth {
	const char *sigv4;
	const char *user, *password;
	const char *const *headers;   /* NULL-terminated, or NULL */
};

/*
 * The options every transfer of samplefs has, the mount's and
 * samplefs-download's alike (download.c): HTTP/2 over TLS where offered,
 * http and https only, redirects up to cfg->max_redirects, cfg's connect
 * timeout and certificates, a transfer slower than low_speed bytes/s for
 * cfg->timeout_s ended, no signals.  And the credentials of a request:
 * a's header lines (appended to *hdrs, the caller's to free) and SigV4,
 * with redirects off (tokens and signatures are for this host only).
 */
CURLcode httpreq_curl_common(CURL *h, const struct source_config *cfg,
			     const char *agent, long low_speed, long buffer);
CURLcode httpreq_auth_set(CURL *h, const struct httpauth *a,
			  struct curl_slist **hdrs);

/* cfg is the mount's (defaults filled in); kept, not copied: it must
 * outlive the context.  0 or -errno (with a message). */
int httpreq_ctx_new(const struct source_config *cfg, struct httpreq_ctx **out);
/* Counts c's requests, retries and failures into ctr (backend.h), which
 * must outlive c; before the first request. */
struct source_counters;
void httpreq_ctx_count(struct httpreq_ctx *c, struct source_counters *ctr);
/* After every request has returned. */
void httpreq_ctx_free(struct httpreq_ctx *c);

struct httpreq {
	const char *url;
	int head;                 /* 1: HEAD, no body */
	int ranged;               /* 1: Range: bytes=from-to (inclusive) */
	uint64_t from, to;
	/* Where the body goes, when the status is `accept` (206 for ranged
	 * requests, else 200): into iov (at most their total), or, when iov is
	 * NULL, into a buffer grown up to max_body (*body, malloc'ed, NUL
	 * terminated, the caller's to free).  Other statuses' bodies are
	 * dropped. */
	const struct iovec *iov;
	int niov;
	size_t max_body;
	/* For ranged reads of an opened source: a 206 must show this size as
	 * its Content-Range total and this ETag (when the stamp has one), and
	 * cover exactly from-to; anything else fails the request (a changed
	 * source sets resp.changed, with no retry). */
	const struct source_stamp *expect;
	/* When the whole request, retries and backoff included, gives up:
	 * sfs_now_ns()'s clock (clock.h); 0: cfg->read_timeout_s from now.  Each
	 * attempt is cut there, and no retry starts whose backoff would end
	 * past it. */
	int64_t deadline_ns;
	/* Polled (every POLL_MS at most) while the request waits; once set,
	 * the transfer is dropped and httpreq_do returns -EINTR.  NULL: none. */
	const struct source_cancel *cancel;
	/* An attempt that makes no progress (under 1 KiB/s) this long is
	 * cut and retried, and connecting may take this long; 0:
	 * cfg->timeout_s.  Index builds ask for less (source_build). */
	unsigned stall_s;
	/* Signing and headers (bucket sources); NULL: a plain request. */
	const struct httpauth *auth;
};

struct httpresp {
	long status;              /* of the last response; 0: none */
	char etag[128];           /* "" when none (truncated as stamps are) */
	int64_t mtime_ns;         /* Last-Modified; 0 when none */
	int64_t length;           /* Content-Length; -1 when none */
	int has_range;            /* a Content-Range was given */
	uint64_t r_from, r_to;    /* its range (when not "*") */
	int64_t r_total;          /* its total; -1: "*" */
	int to_dir;               /* a redirect led to a URL ending in '/' */
	int accept_ranges;        /* Accept-Ranges: bytes */
	size_t got;               /* body bytes kept */
	char *body;               /* see httpreq.iov */
	int changed;              /* expect failed: another size or ETag */
	/* the store's CRC32C of the whole object (GCS's x-goog-hash, S3's
	 * x-amz-checksum-crc32c), checked when a 206 of an expected read
	 * holds the whole object: one that fails is retried (counted in
	 * checksum_failures) */
	int has_crc32c, crc32c_failed;
	uint32_t crc32c;
	unsigned attempts;
	/* the last attempt's time to its first byte and in all (ns): the
	 * link's latency and rate, for the walks of index builds */
	int64_t ttfb_ns, total_ns;
	int retryable;            /* failed for what may pass (a 5xx, a reset,
				   * the deadline), not for what another
				   * attempt would meet again (a 4xx, a 200 to
				   * a Range, a wrong answer) */
	enum httpfail {           /* what kind of failure, for messages: */
		FAIL_NONE,        /* one call site (rate-limit key) each */
		FAIL_NET,         /* connect, reset, timeout, TLS: curl's */
		FAIL_STATUS,      /* an HTTP status, after the retries */
		FAIL_NORANGE,     /* 200 to a Range request */
		FAIL_BODY,        /* short, too long, another range */
		FAIL_CHANGED,     /* another size or ETag: resp.changed */
		FAIL_CANCELLED,   /* req.cancel was set: -EINTR */
	} fail;
	char cause[320];          /* why it failed, for messages */
	/* The start of the last response's body when its status was not the
	 * one whose body is kept (an S3 <Error> document, for messages);
	 * NUL-terminated, "" when none. */
	char errbody[1024];
};

/*
 * Sends req, retrying up to cfg->retries times until its deadline.  0 when
 * a final response came (resp->status says which; for `expect` requests
 * only a valid 206), -EIO when none did after the retries or by the
 * deadline, or a response was wrong (resp->cause says why, resp->changed
 * when the source changed), -EINTR when req->cancel was set.
 * Never logs: callers name the source and range.
 */
int httpreq_do(struct httpreq_ctx *c, const struct httpreq *req,
	       struct httpresp *resp);

/* 1 when a libcurl result (a CURLcode) may pass on a retry: resets,
 * timeouts, refused connections, short bodies.  For the downloader
 * (download.c), which runs its own transfers. */
int httpreq_transient(int curl_code);

/*
 * PUTs len bytes of data as the whole body of url (a bucket's object:
 * bucket.c), signed as auth says, retried as httpreq_do retries (the same
 * bytes again) within read_timeout_s plus the time to send them at the
 * minimum rate.  0 when a final response came (resp->status says which:
 * 200 is stored; errbody holds the start of an error's body), -EIO when
 * none did (resp->cause).  resp->body is never kept.  Never logs.
 */
int httpreq_put(struct httpreq_ctx *c, const char *url, const struct httpauth *auth,
		const void *data, uint64_t len, struct httpresp *resp);
/* Sleeps until `until` (sfs_now_ns), looking at cancel (may be NULL)
 * every POLL_MS: 0, or -EINTR as soon as it is set.  The backoff's wait,
 * and that of an index build's retries (httpcache.c). */
int httpreq_wait_until(int64_t until, const struct source_cancel *cancel);

/*
 * "1 attempt", "3 attempts": how every message says how many attempts a
 * request made (httpresp.attempts, the downloader's own count), formatted
 * here once.  The text lives in the struct returned, which lasts to the
 * end of the call it is an argument of:
 *   sfs_err("%s: %s (%s)", url, cause, httpreq_attempts(n).s);
 */
struct httpreq_count {
	char s[24];
};
struct httpreq_count httpreq_attempts(unsigned n);

#endif
