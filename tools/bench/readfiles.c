/*
 * readfiles - the benchmark's reader: opens, reads to the end and closes
 * every file named in a list, with T threads, and reports files/s.
 *
 * Usage: readfiles [-t THREADS] [-p PREFIX] [-l] [-r FILE] LISTFILE
 *   LISTFILE has one path per line (relative paths get PREFIX/ in front).
 *   -r reads ranges of FILE instead: each line is "OFFSET SIZE", pread
 *   from one descriptor (the disk's own rate for a shard's members, with
 *   no file system above the source: shufbench.sh's floor).
 *   -l lists first, as a loader calling sorted(glob(...)) per class does:
 *   every directory the list names is read to its end (readdir, no stat),
 *   in order of first appearance, by one thread, inside the timed span.
 *   Threads take the next path from a shared counter, so with one thread the
 *   files are read exactly in list order.
 * Prints one line:  files=N bytes=B errors=E secs=S files_per_s=R MB_per_s=M
 * Exits 1 if any file could not be read (the error is printed for the first
 * few), so a broken mount cannot pass for a fast one.
 *
 * Not a test of content: that is what the integration tests are for.
 * Built ad hoc by tools/bench/bench.sh; not part of samplefs.
 *
 * Threads share the path table (read-only after loading) and three atomic
 * counters.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RBUF_SIZE (1 << 20)
#define MAX_REPORTED_ERRORS 5

struct job {
	char **paths;
	size_t npaths;
	atomic_size_t next;
	atomic_ullong bytes;
	atomic_ullong errors;
	int range_fd;		/* -r: the file the lines are ranges of; else -1 */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Bytes read from `path`, or -errno. */
static long long read_one(const char *path, char *buf)
{
	long long total = 0;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf, RBUF_SIZE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		total += n;
	}
	close(fd);
	return err ? err : total;
}

/* Bytes of the range "OFFSET SIZE" of fd, or -errno. */
static long long read_range(int fd, const char *line, char *buf)
{
	unsigned long long off, size, done = 0;
	ssize_t n;

	if (sscanf(line, "%llu %llu", &off, &size) != 2)
		return -EINVAL;
	while (done < size) {
		n = pread(fd, buf, size - done < RBUF_SIZE ? size - done : RBUF_SIZE,
			  (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (unsigned long long)n;
	}
	return (long long)done;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	unsigned long long bytes = 0;
	long long r;
	size_t i;
	char *buf = malloc(RBUF_SIZE);

	if (!buf) {
		atomic_fetch_add(&j->errors, 1);
		return NULL;
	}
	while ((i = atomic_fetch_add(&j->next, 1)) < j->npaths) {
		r = j->range_fd >= 0 ? read_range(j->range_fd, j->paths[i], buf) :
				       read_one(j->paths[i], buf);
		if (r >= 0) {
			bytes += (unsigned long long)r;
			continue;
		}
		if (atomic_fetch_add(&j->errors, 1) < MAX_REPORTED_ERRORS)
			fprintf(stderr, "readfiles: %s: %s\n", j->paths[i],
				strerror((int)-r));
	}
	atomic_fetch_add(&j->bytes, bytes);
	free(buf);
	return NULL;
}

/* Lists every directory holding a path of the list once, in order of first
 * appearance (the list is grouped by directory, as a loader's is); returns
 * the number of entries seen, or -1. */
static long long list_dirs(const struct job *j)
{
	char prev[4096] = "", dir[4096];
	long long entries = 0;
	struct dirent *de;
	size_t i, len;
	DIR *d;

	for (i = 0; i < j->npaths; i++) {
		const char *slash = strrchr(j->paths[i], '/');

		len = slash ? (size_t)(slash - j->paths[i]) : 0;
		if (len >= sizeof(dir))
			return -1;
		memcpy(dir, j->paths[i], len);
		dir[len] = '\0';
		if (!strcmp(dir, prev))
			continue;
		strcpy(prev, dir);
		d = opendir(len ? dir : ".");
		if (!d) {
			fprintf(stderr, "readfiles: %s: %s\n", dir, strerror(errno));
			return -1;
		}
		while ((de = readdir(d)))
			entries++;
		closedir(d);
	}
	return entries;
}

/* Reads the list into j->paths.  0 or -1 (message printed). */
static int load_list(const char *list, const char *prefix, struct job *j)
{
	FILE *fp = fopen(list, "r");
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t n;
	char **p;
	int ret = -1;

	if (!fp) {
		fprintf(stderr, "readfiles: %s: %s\n", list, strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, fp)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n == 0)
			continue;
		if (j->npaths == alloc) {
			alloc = alloc ? alloc * 2 : 4096;
			p = realloc(j->paths, alloc * sizeof(*p));
			if (!p)
				goto out;
			j->paths = p;
		}
		if (prefix && line[0] != '/') {
			if (asprintf(&j->paths[j->npaths], "%s/%s", prefix,
				     line) < 0)
				goto out;
		} else if (!(j->paths[j->npaths] = strdup(line))) {
			goto out;
		}
		j->npaths++;
	}
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "readfiles: out of memory reading %s\n", list);
	free(line);
	fclose(fp);
	return ret;
}

int main(int argc, char **argv)
{
	struct job j;
	pthread_t *tids;
	const char *prefix = NULL;
	double t0, secs;
	long nthreads = 1, t;
	size_t i;
	int c, list_first = 0;

	memset(&j, 0, sizeof(j));
	j.range_fd = -1;
	while ((c = getopt(argc, argv, "t:p:lr:")) != -1) {
		if (c == 't')
			nthreads = strtol(optarg, NULL, 10);
		else if (c == 'p')
			prefix = optarg;
		else if (c == 'l')
			list_first = 1;
		else if (c == 'r' && (j.range_fd = open(optarg, O_RDONLY)) < 0) {
			fprintf(stderr, "readfiles: %s: %s\n", optarg, strerror(errno));
			return 1;
		} else if (c != 'r')
			goto usage;
	}
	if (optind != argc - 1 || nthreads < 1 || nthreads > 256)
		goto usage;
	if (load_list(argv[optind], prefix, &j))
		return 1;
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!tids)
		return 1;
	t0 = now();
	if (list_first && list_dirs(&j) < 0)
		return 1;
	for (t = 0; t < nthreads; t++)
		if (pthread_create(&tids[t], NULL, worker, &j) != 0) {
			fprintf(stderr, "readfiles: cannot start thread\n");
			return 1;
		}
	for (t = 0; t < nthreads; t++)
		pthread_join(tids[t], NULL);
	secs = now() - t0;
	printf("files=%zu bytes=%llu errors=%llu secs=%.4f files_per_s=%.1f "
	       "MB_per_s=%.2f\n", j.npaths, (unsigned long long)j.bytes,
	       (unsigned long long)j.errors, secs, j.npaths / secs,
	       j.bytes / secs / 1e6);
	for (i = 0; i < j.npaths; i++)
		free(j.paths[i]);
	free(j.paths);
	free(tids);
	return j.errors ? 1 : 0;
usage:
	fprintf(stderr, "usage: %s [-t THREADS] [-p PREFIX] [-l] [-r FILE] LISTFILE\n",
		argv[0]);
	return 2;
}
