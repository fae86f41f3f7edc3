/*
 * download.c - the transfer engine of samplefs-download (download.h): a
 * libcurl multi loop on the caller's thread, one slot per transfer at
 * once, each slot taking the next item when its own ends.  A slot whose
 * transfer failed waits out its backoff in place (no request running).
 *
 * MD5 with OpenSSL's libcrypto (EVP), which the process has loaded
 * anyway: Debian's libcurl is its OpenSSL flavour, so no second crypto
 * library is mapped; its EVP_DecodeBlock reads x-goog-hash's base64.
 *
 * Not for: what to fetch (the caller lists it), reads for a mount
 * (httpreq.c, httpcache.c: those retry within one read's deadline and
 * write only into a caller's buffers).
 */
#include "io/download.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "io/backend.h"
#include "io/http/bucket.h"
#include "io/dlnames.h"
#include "io/http/httpreq.h"
#include "log.h"

#define POLL_MS      50             /* the stop flag is looked at this often */
#define TICK_NS      200000000LL    /* progress reports: five a second */
#define BACKOFF_MS   200            /* first retry's delay; doubles */
#define BACKOFF_MAX  10000
#define RETRY_AFTER_MAX 60          /* s: a longer Retry-After is cut to this */
#define BUFFER       (256 << 10)    /* libcurl's receive buffer */
#define HASH_CHUNK   (1 << 20)      /* reading a file back to hash it */

struct run;

/* One transfer slot. */
struct job {
	struct run *run;
	struct download_item *it;       /* NULL: the slot is free */
	CURL *h;                        /* this attempt's */
	struct curl_slist *hdrs;
	char *url, *final, *part;
	const struct httpauth *auth;
	int fd;
	EVP_MD_CTX *md;                 /* of the .part's bytes [0, have) */
	uint64_t have;                  /* bytes in the .part */
	uint64_t kept;                  /* of those, kept from an earlier run */
	uint64_t counted;               /* of them, in run->t.bytes_done */
	uint64_t from;                  /* where this attempt's body starts */
	int resumed;                    /* bytes from an earlier attempt or run */
	int refetched;                  /* fetched whole after a failed MD5 */
	int bucket;                     /* the response's ETag is an MD5 */
	unsigned attempts;
	int64_t not_before;             /* waiting: the next attempt's time */
	int running;                    /* in the multi handle */
	/* this attempt's response */
	long status;
	int64_t cr_from;                /* Content-Range's first byte; -1 */
	int bad;                        /* the body was refused: why in it->why */
	int werr;                       /* a local write failed: its errno */
	unsigned char resp_md5[16];
	int has_resp_md5;
};

struct run {
	const struct download_opts *o;
	const struct source_config *cfg;
	CURLM *m;
	struct job *jobs;
	unsigned njobs;
	struct download_totals t;
	uint64_t rng;
};

static void md5_hex(const unsigned char md5[16], char out[33])
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", md5[i]);
}

/* ---- local files ---- */

/* Makes the directories of path's parent, as mkdir -p.  0 or -errno. */
static int make_parents(char *path)
{
	char *s;
	int rc = 0;

	for (s = strchr(path + 1, '/'); s && !rc; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			rc = -errno;
		*s = '/';
	}
	return rc;
}

/* The MD5 of fd's first len bytes, into md (initialised here).  0 or -errno. */
static int hash_file(int fd, uint64_t len, EVP_MD_CTX *md)
{
	char *buf = malloc(HASH_CHUNK);
	uint64_t off = 0;
	ssize_t got;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	while (off < len) {
		size_t want = len - off < HASH_CHUNK ? (size_t)(len - off) : HASH_CHUNK;

		got = pread(fd, buf, want, (off_t)off);
		if (got <= 0) {
			rc = got < 0 ? -errno : -EIO;
			break;
		}
		EVP_DigestUpdate(md, buf, (size_t)got);
		off += (uint64_t)got;
	}
	free(buf);
	return rc;
}

/* 1 when the file at path is the item, complete: its size, and its MD5
 * when one is known. */
static int complete(const char *path, const struct download_item *it, EVP_MD_CTX *md)
{
	unsigned char got[EVP_MAX_MD_SIZE];
	struct stat st;
	int fd, same = 0;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != it->size)
		return 0;
	if (!it->has_md5)
		return 1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (!hash_file(fd, it->size, md) && EVP_DigestFinal_ex(md, got, NULL))
		same = !memcmp(got, it->md5, 16);
	close(fd);
	return same;
}

/* ---- one slot ---- */

static void job_close(struct job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	curl_slist_free_all(j->hdrs);
	j->hdrs = NULL;
	free(j->url);
	free(j->final);
	free(j->part);
	j->url = j->final = j->part = NULL;
	j->it = NULL;
}

static void report(struct run *r, int ev, const struct download_item *it, uint64_t from)
{
	if (r->o->report)
		r->o->report(r->o->arg, ev, it, from, &r->t);
}

/* Ends the slot's item: status 1 skipped, 0 done, else failed (why set). */
static void job_finish(struct run *r, struct job *j, int status)
{
	struct download_item *it = j->it;

	it->status = status;
	r->t.files_done++;
	if (status >= 0)
		r->t.bytes_done += it->size - j->counted;
	else
		r->t.bytes_done -= j->counted;
	j->counted = 0;
	job_close(j);
	report(r, status == 1 ? DL_SKIP : status == 0 ? DL_DONE : DL_FAIL, it, 0);
}

static int job_fail(struct run *r, struct job *j, int err, const char *fmt, ...)
	SFS_PRINTF(4, 5);
static int job_fail(struct run *r, struct job *j, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->it->why, sizeof(j->it->why), fmt, ap);
	va_end(ap);
	job_finish(r, j, err);
	return err;
}

/* Empties the .part: the next attempt fetches the object whole. */
static int restart_whole(struct job *j)
{
	if (ftruncate(j->fd, 0))
		return -errno;
	j->have = 0;
	j->resumed = 0;
	j->run->t.bytes_done -= j->counted;
	j->counted = 0;
	EVP_DigestInit_ex(j->md, EVP_md5(), NULL);
	return 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct job *j = arg;
	size_t len = size * n;
	unsigned long long a;

	if (len > 5 && !strncmp(p, "HTTP/", 5)) {	/* a new response */
		j->cr_from = -1;
		j->has_resp_md5 = 0;
	} else if (len > 12 && !strncasecmp(p, "x-goog-hash:", 12)) {
		if (dlnames_md5_of_goog_hash(p + 12, len - 12, j->resp_md5))
			j->has_resp_md5 = 1;
	} else if (j->bucket && len > 5 && !strncasecmp(p, "etag:", 5) && !j->has_resp_md5) {
		char tag[64];

		if (sscanf(p + 5, " %63[^\r\n ]", tag) == 1 &&
		    dlnames_md5_of_etag(tag, j->resp_md5))
			j->has_resp_md5 = 1;
	} else if (len > 14 && !strncasecmp(p, "content-range:", 14) &&
		   sscanf(p + 14, " bytes %llu-", &a) == 1) {
		j->cr_from = (int64_t)a;
	}
	return len;
}

/* The first body bytes: is this the body the .part wants? 0, or 1 to drop
 * the transfer (why in it->why). */
static int body_start(struct job *j)
{
	curl_easy_getinfo(j->h, CURLINFO_RESPONSE_CODE, &j->status);
	if (j->status == 200 && j->from) {
		/* the server ignored the Range: take the whole object */
		if ((j->werr = -restart_whole(j)))
			return 1;
		j->from = 0;
	} else if (j->status == 206 && (int64_t)j->from != j->cr_from) {
		snprintf(j->it->why, sizeof(j->it->why), "a 206 from byte %" PRId64
			 " to a Range from byte %" PRIu64, j->cr_from, j->from);
		j->bad = 1;
		return 1;
	}
	return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct job *j = arg;
	size_t len = size * n, done = 0;
	ssize_t w;

	if (!j->status && body_start(j))
		return 0;
	if (j->status != 200 && j->status != 206)
		return len;		/* an error's body: not the object's */
	if (j->have + len > j->it->size) {
		snprintf(j->it->why, sizeof(j->it->why), "more than the %" PRIu64
			 " bytes listed", j->it->size);
		j->bad = 1;
		return 0;
	}
	while (done < len) {
		w = pwrite(j->fd, p + done, len - done, (off_t)(j->have + done));
		if (w < 0) {
			j->werr = errno;
			return 0;
		}
		done += (size_t)w;
	}
	EVP_DigestUpdate(j->md, p, len);
	j->have += len;
	j->counted += len;
	j->run->t.bytes_done += len;
	j->run->t.received += len;
	return len;
}

static unsigned min_rate(const struct download_opts *o)
{
	return o->min_rate ? o->min_rate : DOWNLOAD_MIN_RATE;
}

/* The options of one attempt on j's handle.  0 or -ENOMEM. */
static int attempt_setup(struct run *r, struct job *j)
{
	const struct source_config *cfg = r->cfg;
	const struct httpauth *a = j->auth;
	char range[32];
	CURL *h;
	CURLcode cc = CURLE_OK;

	/* a fresh handle per attempt: curl 7.88 refuses some options
	 * (CURLOPT_BUFFERSIZE) on a handle whose transfer failed, even after
	 * curl_easy_reset; connections stay in the multi handle's pool */
	if (j->h)
		curl_easy_cleanup(j->h);
	if (!(h = j->h = curl_easy_init()))
		return -ENOMEM;
	curl_slist_free_all(j->hdrs);
	j->hdrs = NULL;
	/* what every transfer of samplefs has (httpreq.c); a trickle ends
	 * too, not only a stall (download.h) */
	cc = httpreq_curl_common(h, cfg, "samplefs-download", (long)min_rate(r->o),
				 (long)BUFFER);
#define SET(opt, val) do { if (cc == CURLE_OK) cc = curl_easy_setopt(h, opt, val); } while (0)
	SET(CURLOPT_URL, j->url);
	SET(CURLOPT_PRIVATE, j);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, j);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, j);
	if (j->have) {
		snprintf(range, sizeof(range), "%" PRIu64 "-", j->have);
		SET(CURLOPT_RANGE, range);	/* copied by libcurl */
	}
	/* as the mount's requests: no redirect with credentials */
	if (a && cc == CURLE_OK)
		cc = httpreq_auth_set(h, a, &j->hdrs);
#undef SET
	return cc == CURLE_OK ? 0 : -ENOMEM;
}

static int attempt_start(struct run *r, struct job *j)
{
	int rc;

	j->from = j->have;
	j->status = 0;
	j->cr_from = -1;
	j->bad = j->werr = 0;
	j->has_resp_md5 = 0;
	if ((rc = attempt_setup(r, j)))
		return job_fail(r, j, rc, "cannot set up a request");
	if (curl_multi_add_handle(r->m, j->h) != CURLM_OK)
		return job_fail(r, j, -ENOMEM, "cannot start a request");
	j->running = 1;
	report(r, DL_START, j->it, j->from);
	return 0;
}

/* Opens the .part, hashing what it holds.  0 or -errno (the item failed). */
static int part_open(struct run *r, struct job *j)
{
	struct stat st;
	int rc;

	j->fd = open(j->part, O_RDWR | O_CREAT | O_CLOEXEC | (r->o->fresh ? O_TRUNC : 0),
		     0644);
	if (j->fd < 0 || fstat(j->fd, &st)) {
		rc = -errno;
		return job_fail(r, j, rc, "%s: %s", j->part, strerror(-rc));
	}
	j->have = (uint64_t)st.st_size;
	j->kept = j->have;
	if (j->have > j->it->size) {
		sfs_warn("%s: %" PRIu64 " bytes kept from an earlier run, more than "
			 "the %" PRIu64 " listed: fetching %s whole again", j->part,
			 j->have, j->it->size, j->it->rel);
		return (rc = restart_whole(j)) ?
		       job_fail(r, j, rc, "%s: %s", j->part, strerror(-rc)) : 0;
	}
	if ((rc = hash_file(j->fd, j->have, j->md)) && (rc = restart_whole(j)))
		return job_fail(r, j, rc, "%s: %s", j->part, strerror(-rc));
	j->resumed = j->have > 0;
	j->counted = j->have;
	r->t.bytes_done += j->have;
	return 0;
}

static int verify_and_rename(struct run *r, struct job *j);

/* Takes item it into free slot j: skipped, or its first attempt started.
 * 0 or the item's -errno. */
static int job_begin(struct run *r, struct job *j, struct download_item *it)
{
	const char *rel = it->rel, *base = strrchr(rel, '/');
	int rc;

	j->it = it;
	j->counted = 0;
	j->status = 0;
	j->has_resp_md5 = 0;
	j->attempts = 0;
	j->refetched = 0;
	j->not_before = 0;
	j->bucket = source_is_bucket(it->uri);
	base = base ? base + 1 : rel;
	if (!dlnames_rel_ok(rel))
		return job_fail(r, j, -EINVAL, "not a relative path a directory can hold");
	if (asprintf(&j->final, "%s/%s", r->o->dest, rel) < 0 ||
	    asprintf(&j->part, "%s/%.*s.%s.part", r->o->dest, (int)(base - rel), rel,
		     base) < 0) {
		j->final = j->part = NULL;
		return job_fail(r, j, -ENOMEM, "out of memory");
	}
	if (!r->o->fresh && complete(j->final, it, j->md)) {
		job_finish(r, j, 1);
		return 0;
	}
	if (j->bucket)
		rc = bucket_request(r->o->env, it->uri, &j->url, &j->auth);
	else
		rc = (j->url = strdup(it->uri)) ? 0 : -ENOMEM;
	if (rc)
		return job_fail(r, j, rc, "no request URL: %s", strerror(-rc));
	if ((rc = make_parents(j->final)))
		return job_fail(r, j, rc, "%s: cannot make its directory: %s", j->final,
				strerror(-rc));
	if ((rc = part_open(r, j)))
		return rc;
	/* complete but not renamed (a run killed between the two): check it
	 * here, no request needed */
	if (j->have && j->have == it->size)
		return verify_and_rename(r, j);
	return attempt_start(r, j);
}

/* Exponential backoff with jitter (half to all of it), at least what
 * Retry-After asked (cut at RETRY_AFTER_MAX). */
static int64_t backoff_ns(struct run *r, unsigned attempt, curl_off_t retry_after)
{
	uint64_t ms = (uint64_t)BACKOFF_MS << (attempt < 10 ? attempt : 10);

	if (ms > BACKOFF_MAX)
		ms = BACKOFF_MAX;
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	ms = ms / 2 + r->rng % (ms / 2 + 1);
	if (retry_after > RETRY_AFTER_MAX)
		retry_after = RETRY_AFTER_MAX;
	if (retry_after > 0 && (uint64_t)retry_after * 1000 > ms)
		ms = (uint64_t)retry_after * 1000;
	return (int64_t)ms * 1000000;
}

/* Another attempt after a backoff, or the item's failure when its retries
 * are spent.  why: this attempt's failure. */
static int job_retry(struct run *r, struct job *j, curl_off_t retry_after, const char *why)
{
	if (j->attempts++ >= r->o->retries)
		return job_fail(r, j, -EIO, "%s (%s)", why,
				httpreq_attempts(j->attempts).s);
	snprintf(j->it->why, sizeof(j->it->why), "%s", why);
	j->not_before = sfs_now_ns() + backoff_ns(r, j->attempts, retry_after);
	return 0;
}

static int verify_and_rename(struct run *r, struct job *j)
{
	struct download_item *it = j->it;
	const unsigned char *want = it->has_md5 ? it->md5 :
				    j->has_resp_md5 ? j->resp_md5 : NULL;
	unsigned char got[EVP_MAX_MD_SIZE];
	char w[33], g[33];
	curl_off_t mt = -1;
	int rc;

	EVP_DigestFinal_ex(j->md, got, NULL);
	if (want && memcmp(want, got, 16)) {
		md5_hex(want, w);
		md5_hex(got, g);
		snprintf(it->why, sizeof(it->why), "MD5 %s, expected %s", g, w);
		if (!j->resumed || j->refetched)
			return job_fail(r, j, -EIO, "%s%s", it->why,
					j->refetched ? " (fetched whole twice)" : "");
		/* the bytes kept from before were not the object's */
		sfs_warn("%s: the %" PRIu64 " bytes kept from an earlier run are damaged "
			 "or another version's (MD5 of the whole %s, expected %s): "
			 "fetching %s whole again", j->part, j->kept, g, w, it->rel);
		j->refetched = 1;
		if ((rc = restart_whole(j)))
			return job_fail(r, j, rc, "%s: %s", j->part, strerror(-rc));
		return attempt_start(r, j);
	}
	if (j->status)
		curl_easy_getinfo(j->h, CURLINFO_FILETIME_T, &mt);
	if (mt >= 0) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_NOW }, { .tv_sec = (time_t)mt } };

		(void)futimens(j->fd, ts);	/* best effort: mtimes are not checked */
	}
	if (rename(j->part, j->final)) {
		rc = -errno;
		return job_fail(r, j, rc, "rename to %s: %s", j->final, strerror(-rc));
	}
	job_finish(r, j, 0);
	return 0;
}

/* What cc means for j's attempt: libcurl's words, but for a timeout
 * once the response began, which is the low-speed limit: the rate seen. */
static void say_curl_error(const struct run *r, struct job *j, CURLcode cc,
			   char *why, size_t len)
{
	curl_off_t got = 0, us = 0;
	long code = 0;

	curl_easy_getinfo(j->h, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OPERATION_TIMEDOUT || code == 0) {
		snprintf(why, len, "%s", curl_easy_strerror(cc));
		return;
	}
	curl_easy_getinfo(j->h, CURLINFO_SIZE_DOWNLOAD_T, &got);
	curl_easy_getinfo(j->h, CURLINFO_TOTAL_TIME_T, &us);
	snprintf(why, len, "slower than %u bytes/s for %u s (--min-rate, "
		 "--timeout): %.0f bytes/s seen, %" PRId64 " bytes in %.1f s",
		 min_rate(r->o), r->cfg->timeout_s,
		 us > 0 ? (double)got * 1e6 / (double)us : 0.0, (int64_t)got,
		 (double)us / 1e6);
}

/* j's transfer ended with cc. */
static int job_end(struct run *r, struct job *j, CURLcode cc)
{
	struct download_item *it = j->it;
	curl_off_t ra = 0;
	char why[256];
	int rc;

	curl_multi_remove_handle(r->m, j->h);
	j->running = 0;
	if (j->werr)
		return job_fail(r, j, -j->werr, "%s: %s", j->part, strerror(j->werr));
	if (j->bad) {	/* a wrong body: what was written of it is suspect */
		snprintf(why, sizeof(why), "%s", it->why);
		if ((rc = restart_whole(j)))
			return job_fail(r, j, rc, "%s: %s", j->part, strerror(-rc));
		return job_retry(r, j, 0, why);
	}
	if (cc != CURLE_OK) {
		say_curl_error(r, j, cc, why, sizeof(why));
		if (!httpreq_transient(cc))
			return job_fail(r, j, -EIO, "%s", why);
		j->resumed |= j->have > 0;
		return job_retry(r, j, 0, why);
	}
	curl_easy_getinfo(j->h, CURLINFO_RESPONSE_CODE, &j->status);
	if (j->status == 200 || j->status == 206) {
		if (j->have != it->size) {
			snprintf(why, sizeof(why), "%" PRIu64 " bytes of %" PRIu64,
				 j->have, it->size);
			j->resumed |= j->have > 0;
			return job_retry(r, j, 0, why);
		}
		return verify_and_rename(r, j);
	}
	snprintf(why, sizeof(why), "HTTP %ld", j->status);
	if (j->status == 416) {	/* the .part is not a start of this object */
		sfs_warn("%s: the server refused a Range from byte %" PRIu64 " (HTTP 416): "
			 "the bytes kept are not a start of %s; fetching it whole again",
			 j->part, j->from, it->rel);
		if ((rc = restart_whole(j)))
			return job_fail(r, j, rc, "%s: %s", j->part, strerror(-rc));
		return job_retry(r, j, 0, why);
	}
	if (j->status >= 500 || j->status == 429 || j->status == 408) {
		curl_easy_getinfo(j->h, CURLINFO_RETRY_AFTER, &ra);
		return job_retry(r, j, ra, why);
	}
	return job_fail(r, j, -EIO, "%s", why);
}

/* ---- the loop ---- */

static void run_free(struct run *r)
{
	unsigned i;

	for (i = 0; r->jobs && i < r->njobs; i++) {
		struct job *j = &r->jobs[i];

		if (j->running)
			curl_multi_remove_handle(r->m, j->h);
		if (j->it)
			job_close(j);
		if (j->h)
			curl_easy_cleanup(j->h);
		EVP_MD_CTX_free(j->md);
	}
	free(r->jobs);
	if (r->m)
		curl_multi_cleanup(r->m);
}

static int run_init(struct run *r, size_t n)
{
	unsigned i;

	r->njobs = r->o->jobs ? r->o->jobs : 8;
	if (r->njobs > n)
		r->njobs = n ? (unsigned)n : 1;
	r->rng = (uint64_t)sfs_now_ns() | 1;
	if (!(r->m = curl_multi_init()) ||
	    !(r->jobs = calloc(r->njobs, sizeof(*r->jobs))))
		return -ENOMEM;
	/* connections per host: the slots, kept for the next items */
	curl_multi_setopt(r->m, CURLMOPT_MAXCONNECTS, (long)r->njobs);
	for (i = 0; i < r->njobs; i++) {
		r->jobs[i].fd = -1;
		r->jobs[i].run = r;
		if (!(r->jobs[i].md = EVP_MD_CTX_new()))
			return -ENOMEM;
	}
	return 0;
}

static int stopped(const struct run *r)
{
	return r->o->stop && atomic_load(&r->o->stop->cancelled);
}

/* Starts what can start: free slots take the next items, waiting slots
 * whose backoff is over try again. */
static void fill(struct run *r, struct download_item *items, size_t n, size_t *next)
{
	int64_t now = sfs_now_ns();
	unsigned i;

	for (i = 0; i < r->njobs; i++) {
		struct job *j = &r->jobs[i];

		while (!j->it && *next < n)
			(void)job_begin(r, j, &items[(*next)++]);
		if (j->it && !j->running && j->not_before <= now)
			(void)attempt_start(r, j);
	}
}

static void collect(struct run *r)
{
	CURLMsg *msg;
	void *j;
	int left;

	while ((msg = curl_multi_info_read(r->m, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &j);
		(void)job_end(r, j, msg->data.result);
	}
}

int download_run(struct download_item *items, size_t n, const struct download_opts *o)
{
	struct run r = { .o = o, .cfg = &o->env->cfg };
	size_t next = 0, i;
	int64_t tick = 0;
	int running, rc;

	if (mkdir(o->dest, 0755) && errno != EEXIST) {
		rc = -errno;
		sfs_err("%s: cannot make the directory: %s", o->dest, strerror(-rc));
		return rc;
	}
	for (i = 0; i < n; i++) {
		items[i].status = -EINPROGRESS;
		r.t.bytes += items[i].size;
	}
	r.t.files = n;
	if ((rc = run_init(&r, n)))
		goto out;
	while (r.t.files_done < n) {
		if (stopped(&r)) {
			rc = -EINTR;
			goto out;
		}
		fill(&r, items, n, &next);
		if (curl_multi_perform(r.m, &running) != CURLM_OK) {
			rc = -ENOMEM;
			goto out;
		}
		collect(&r);
		if (sfs_now_ns() - tick >= TICK_NS) {
			tick = sfs_now_ns();
			report(&r, -1, NULL, 0);
		}
		if (r.t.files_done < n)
			curl_multi_poll(r.m, NULL, 0, POLL_MS, NULL);
	}
	report(&r, -1, NULL, 0);
	for (i = 0; i < n && !rc; i++)
		if (items[i].status < 0)
			rc = -EIO;
out:
	run_free(&r);
	return rc;
}
