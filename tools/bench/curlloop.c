/*
 * curlloop - the bucket bench's floor: the ranged GETs a reader of one
 * object's samples needs, and nothing else, with T threads, each with its
 * own libcurl easy handle (connections kept alive), signed by libcurl's
 * SigV4 as samplefs signs them.
 *
 * Usage: curlloop [-t THREADS] URL LISTFILE
 *   URL is the object (http://127.0.0.1:PORT/BUCKET/KEY, path style);
 *   LISTFILE has one "OFFSET SIZE" line per sample: the bytes of a member
 *   inside the object (tools/bench/bucketbench.sh writes it from Python's
 *   tarfile, not from samplefs).  Credentials: AWS_ACCESS_KEY_ID and
 *   AWS_SECRET_ACCESS_KEY; region AWS_REGION (default us-east-1).
 * Prints one line, as readfiles does:
 *   files=N bytes=B errors=E secs=S files_per_s=R MB_per_s=M
 * Exits 1 when a request fails or returns other than its SIZE bytes.
 *
 * Not samplefs code and not a test: built ad hoc by bucketbench.sh.
 * Threads share the sample table (read-only after loading) and atomic
 * counters; each has its own handle.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sample {
	uint64_t off, size;
};

static const char *url;
static struct sample *samples;
static size_t nsamples;
static atomic_size_t next_i, errors;
static atomic_uint_fast64_t bytes;
static char sigv4[128];
static const char *user, *secret;

static size_t sink(char *p, size_t size, size_t nmemb, void *arg)
{
	*(uint64_t *)arg += size * nmemb;
	(void)p;
	return size * nmemb;
}

static int get_one(CURL *h, struct curl_slist *hdrs, const struct sample *s)
{
	char range[64];
	uint64_t got = 0;
	long code = 0;
	CURLcode cc;

	snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, s->off, s->off + s->size - 1);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_RANGE, range);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK || code != 206 || got != s->size) {
		if (atomic_fetch_add(&errors, 1) < 5)
			fprintf(stderr, "curlloop: bytes %s: curl %d, HTTP %ld, %" PRIu64
				" of %" PRIu64 " bytes\n", range, (int)cc, code, got, s->size);
		return -1;
	}
	atomic_fetch_add(&bytes, got);
	return 0;
}

static void *worker(void *arg)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdrs = curl_slist_append(NULL,
		"x-amz-content-sha256: UNSIGNED-PAYLOAD");
	size_t i;

	(void)arg;
	if (!h || !hdrs) {
		atomic_fetch_add(&errors, 1);
		return NULL;
	}
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERNAME, user);
	curl_easy_setopt(h, CURLOPT_PASSWORD, secret);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
	while ((i = atomic_fetch_add(&next_i, 1)) < nsamples)
		get_one(h, hdrs, &samples[i]);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return NULL;
}

static int load(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0;
	unsigned long long off, size;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fscanf(f, "%llu %llu", &off, &size) == 2) {
		if (nsamples == cap) {
			cap = cap ? 2 * cap : 4096;
			if (!(samples = realloc(samples, cap * sizeof(*samples)))) {
				fclose(f);
				return -1;
			}
		}
		samples[nsamples++] = (struct sample){ off, size };
	}
	fclose(f);
	return nsamples ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *region = getenv("AWS_REGION");
	int threads = 1, c, i;
	pthread_t *tid;
	struct timespec t0, t1;
	double secs;

	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't' || (threads = atoi(optarg)) < 1) {
			fprintf(stderr, "usage: curlloop [-t THREADS] URL LISTFILE\n");
			return 2;
		}
	}
	user = getenv("AWS_ACCESS_KEY_ID");
	secret = getenv("AWS_SECRET_ACCESS_KEY");
	if (argc - optind != 2 || !user || !secret) {
		fprintf(stderr, "usage: curlloop [-t THREADS] URL LISTFILE "
			"(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY set)\n");
		return 2;
	}
	url = argv[optind];
	snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", region && *region ? region : "us-east-1");
	if (load(argv[optind + 1])) {
		fprintf(stderr, "curlloop: %s: no \"OFFSET SIZE\" lines\n", argv[optind + 1]);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_ALL);
	if (!(tid = calloc((size_t)threads, sizeof(*tid))))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, NULL);
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("files=%zu bytes=%" PRIu64 " errors=%zu secs=%.3f files_per_s=%.1f MB_per_s=%.2f\n",
	       nsamples, (uint64_t)bytes, (size_t)errors, secs, nsamples / secs,
	       (double)bytes / 1e6 / secs);
	curl_global_cleanup();
	free(tid);
	free(samples);
	return errors ? 1 : 0;
}
