/*
 * samplefs-stat - a live table of what a samplefs mount serves, like
 * `iostat 1`:
 *
 *     samplefs-stat MOUNT [INTERVAL [COUNT]]
 *
 * Every INTERVAL seconds (default 1) it reads MOUNT/.samplefs/stats.json
 * (or .samplefs-ctl/ when the dataset took the name: fs/ctl.h) and prints
 * the rates since the last one: files/s (reads at offset 0), MB/s served,
 * reads/s, hit% (reads answered without waiting for the disk or network),
 * blk% (remote blocks found in the memory cache), waits/s and their mean
 * in ms, retries and errors (failed reads and failed requests).  Rates are
 * over the mount's own uptime between two documents, not this process's
 * sleep.  Not for: scraping (read metrics), or anything but a mount.
 */
#include "statdoc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DOC_MAX (1 << 20)
#define HEADER_EVERY 20

enum { UP, FILES, BYTES, READS, WAITS, WAIT_NS, RERR, SERR, RETRIES, MHIT,
       MMISS, NFIELDS };
static const char *const keys[NFIELDS] = {
	"uptime_s", "files_read", "bytes_served", "read", "waits", "wait_ns",
	"read_errors", "errors", "retries", "mem_hits", "mem_misses",
};

/* Reads the document at path and its fields into v: 0, or -1 (said). */
static int sample(const char *path, double v[NFIELDS])
{
	static char doc[DOC_MAX];
	size_t len = 0;
	ssize_t n;
	int fd, i;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "samplefs-stat: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (len < sizeof(doc) && (n = read(fd, doc + len, sizeof(doc) - len)) > 0)
		len += (size_t)n;
	close(fd);
	for (i = 0; i < NFIELDS; i++)
		if (statdoc_get(doc, len, keys[i], &v[i])) {
			fprintf(stderr, "samplefs-stat: %s: no number \"%s\" in %zu "
				"bytes: not a samplefs stats.json?\n", path, keys[i], len);
			return -1;
		}
	return 0;
}

/* The stats.json of mount mnt, under whichever name the mount gave it. */
static char *stats_path(const char *mnt)
{
	static const char *const dirs[] = { ".samplefs", ".samplefs-ctl" };
	char *p;

	for (size_t i = 0; i < 2; i++) {
		if (asprintf(&p, "%s/%s/stats.json", mnt, dirs[i]) < 0)
			return NULL;
		if (access(p, R_OK) == 0 || i == 1)
			return p;
		free(p);
	}
	return NULL;
}

static void row(const double a[NFIELDS], const double b[NFIELDS])
{
	double dt = b[UP] - a[UP], reads = b[READS] - a[READS];
	double waits = b[WAITS] - a[WAITS];
	double blk = (b[MHIT] - a[MHIT]) + (b[MMISS] - a[MMISS]);
	char hit[16], bhit[16], wms[16];

	if (dt <= 0)
		dt = 1e-9;
	snprintf(hit, sizeof(hit), reads > 0 ? "%.1f" : "-",
		 100.0 * (reads - waits) / reads);
	snprintf(bhit, sizeof(bhit), blk > 0 ? "%.1f" : "-",
		 100.0 * (b[MHIT] - a[MHIT]) / blk);
	snprintf(wms, sizeof(wms), waits > 0 ? "%.2f" : "-",
		 (b[WAIT_NS] - a[WAIT_NS]) / waits / 1e6);
	printf("%9.1f %9.2f %9.1f %6s %6s %9.1f %8s %8.0f %7.0f\n",
	       (b[FILES] - a[FILES]) / dt, (b[BYTES] - a[BYTES]) / dt / 1e6,
	       reads / dt, hit, bhit, waits / dt, wms, b[RETRIES] - a[RETRIES],
	       (b[RERR] - a[RERR]) + (b[SERR] - a[SERR]));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double prev[NFIELDS] = { 0 }, cur[NFIELDS], interval = 1;
	long count = -1, lines = 0;
	struct timespec ts;
	char *path, *end;

	if (argc < 2 || argc > 4 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: samplefs-stat MOUNT [INTERVAL [COUNT]]\n");
		return argc < 2 || argc > 4 ? 2 : 0;
	}
	if (argc > 2 && (interval = strtod(argv[2], &end), *end || interval <= 0)) {
		fprintf(stderr, "samplefs-stat: INTERVAL %s: seconds > 0\n", argv[2]);
		return 2;
	}
	if (argc > 3 && (count = strtol(argv[3], &end, 10), *end || count < 1)) {
		fprintf(stderr, "samplefs-stat: COUNT %s: a number > 0\n", argv[3]);
		return 2;
	}
	if (!(path = stats_path(argv[1])) || sample(path, prev))
		return 1;
	ts.tv_sec = (time_t)interval;
	ts.tv_nsec = (long)((interval - (double)ts.tv_sec) * 1e9);
	while (count < 0 || count-- > 0) {
		nanosleep(&ts, NULL);
		if (sample(path, cur))
			return 1;
		if (lines++ % HEADER_EVERY == 0)
			printf("%9s %9s %9s %6s %6s %9s %8s %8s %7s\n", "files/s", "MB/s",
			       "reads/s", "hit%", "blk%", "waits/s", "wait_ms",
			       "retries", "errors");
		row(prev, cur);
		memcpy(prev, cur, sizeof(prev));
	}
	free(path);
	return 0;
}
