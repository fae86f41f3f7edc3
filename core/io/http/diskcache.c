/*
 * diskcache.c - remote blocks kept on disk across mounts (see diskcache.h).
 *
 * A block is the file DIR/<hash of the URL>/<block number>: a header (the
 * stamp it was read under, its number and length, the URL itself, since
 * hashes collide, and a CRC-32 of the data), the URL, then the data.  It
 * is written to a temporary name and renamed into place, so readers see a
 * whole file or none; the CRC catches what a crash leaves behind.  Paths
 * are relative to a descriptor of DIR kept open for the mount.
 *
 * Recency is the file's mtime, refreshed on each hit, so it survives
 * remounts without an index file; the bound is kept by one pass over the
 * directory, sorting by mtime, whenever the total passes it (rare: each
 * pass frees a tenth of the bound).
 *
 * Not for: the memory cache (http.c); deciding what to cache.
 */
#include "io/http/diskcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "log.h"
#include "hash.h"

#define MAGIC      "SFSBLK1\n"
#define URL_MAX    65536
#define TMP_PREFIX ".tmp-"
#define TMP_STALE  3600     /* s: a temporary file this old was left by a crash */

struct dc_head {
	char magic[8];
	uint64_t size;          /* the source's stamp */
	int64_t mtime_ns;
	char etag[128];
	uint64_t block;
	uint32_t len;           /* data bytes */
	uint32_t url_len;
	uint32_t crc;           /* of the data */
	uint32_t pad;
};

struct diskcache {
	char *dir;              /* for messages */
	int dfd;
	uint64_t max_bytes;
	pthread_mutex_t lock;   /* total */
	uint64_t total;
	pthread_mutex_t evicting;
	atomic_uint seq;        /* temporary files' names */
};

/* FNV-1a: spreads URLs over directories; collisions are told apart by the
 * URL stored in each file. */
static uint64_t url_hash(const char *url)
{
	return sfs_fnv1a(SFS_FNV_OFFSET, url, strlen(url));
}

static void block_path(const char *url, uint64_t block, char *sub, char *path)
{
	snprintf(sub, 17, "%016llx", (unsigned long long)url_hash(url));
	snprintf(path, 48, "%s/%llu", sub, (unsigned long long)block);
}

static void charge(struct diskcache *dc, int64_t delta)
{
	pthread_mutex_lock(&dc->lock);
	if (delta < 0 && (uint64_t)-delta > dc->total)
		dc->total = 0;
	else
		dc->total += (uint64_t)delta;
	pthread_mutex_unlock(&dc->lock);
}

struct dc_file {
	int64_t mtime_ns;
	uint64_t size;
	char path[48];
};

static int by_mtime(const void *a, const void *b)
{
	const struct dc_file *x = a, *y = b;

	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

/* Appends the files of DIR/sub to *v; removes stale temporary files. */
static void scan_sub(struct diskcache *dc, const char *sub, struct dc_file **v,
		     size_t *n, size_t *cap)
{
	int fd = openat(dc->dfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	time_t now = time(NULL);
	struct dirent *de;
	struct stat st;
	struct dc_file *f;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && strncmp(de->d_name, TMP_PREFIX, 5))
			continue;
		if (strlen(de->d_name) > 32 || fstatat(fd, de->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (!strncmp(de->d_name, TMP_PREFIX, 5)) {
			if (now - st.st_mtime > TMP_STALE)
				unlinkat(fd, de->d_name, 0);
			continue;
		}
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 256;
			if (!(f = realloc(*v, *cap * sizeof(**v))))
				break;
			*v = f;
		}
		f = &(*v)[(*n)++];
		f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		f->size = (uint64_t)st.st_size;
		snprintf(f->path, sizeof(f->path), "%s/%s", sub, de->d_name);
	}
	closedir(d);
}

/* Counts the files; with `evict`, removes the oldest down to 90% of the
 * bound.  Sets dc->total. */
static void scan(struct diskcache *dc, int evict)
{
	struct dc_file *v = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0, keep = dc->max_bytes / 10 * 9;
	struct dirent *de;
	int fd = dup(dc->dfd);
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d)))
		if (strlen(de->d_name) == 16)
			scan_sub(dc, de->d_name, &v, &n, &cap);
	for (i = 0; i < n; i++)
		total += v[i].size;
	if (evict) {
		qsort(v, n, sizeof(*v), by_mtime);
		for (i = 0; i < n && total > keep; i++)
			if (!unlinkat(dc->dfd, v[i].path, 0))
				total -= v[i].size;
		/* the directories left empty */
		rewinddir(d);
		while ((de = readdir(d)))
			if (strlen(de->d_name) == 16)
				unlinkat(dc->dfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
	free(v);
	pthread_mutex_lock(&dc->lock);
	dc->total = total;
	pthread_mutex_unlock(&dc->lock);
}

int diskcache_open(const char *dir, uint64_t max_bytes, struct diskcache **out)
{
	struct diskcache *dc = calloc(1, sizeof(*dc));
	int rc;

	if (!dc || !(dc->dir = strdup(dir))) {
		free(dc);
		return -ENOMEM;
	}
	dc->max_bytes = max_bytes;
	pthread_mutex_init(&dc->lock, NULL);
	pthread_mutex_init(&dc->evicting, NULL);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		sfs_err("-o cache_dir=%s: cannot create it: %s", dir, strerror(errno));
		goto fail;
	}
	if ((dc->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		sfs_err("-o cache_dir=%s: %s", dir, strerror(errno));
		goto fail;
	}
	scan(dc, 0);
	*out = dc;
	return 0;
fail:
	dc->dfd = -1;
	diskcache_close(dc);
	return rc;
}

void diskcache_close(struct diskcache *dc)
{
	if (!dc)
		return;
	if (dc->dfd >= 0)
		close(dc->dfd);
	pthread_mutex_destroy(&dc->lock);
	pthread_mutex_destroy(&dc->evicting);
	free(dc->dir);
	free(dc);
}

static int read_all(int fd, void *buf, size_t n, off_t off)
{
	ssize_t got;
	size_t done = 0;

	while (done < n) {
		got = pread(fd, (char *)buf + done, n - done, off + (off_t)done);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		done += (size_t)got;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
	ssize_t put;
	size_t done = 0;

	while (done < n) {
		put = write(fd, (const char *)buf + done, n - done);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return -1;
		done += (size_t)put;
	}
	return 0;
}

static uint32_t crc_of(const void *data, size_t len)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)len);
}

static int same_stamp(const struct dc_head *h, const struct source_stamp *st)
{
	return h->size == st->size && h->mtime_ns == st->mtime_ns &&
	       !strncmp(h->etag, st->etag, sizeof(h->etag));
}

/* 1: the file holds this block of this URL, with the right stamp and CRC;
 * 0: another URL's (a hash collision: left alone); -1: stale or damaged. */
static int check_file(int fd, const char *url, const struct source_stamp *st,
		      uint64_t block, void *buf, size_t len)
{
	struct dc_head h;
	size_t ul = strlen(url);
	char *u;
	int same;

	if (read_all(fd, &h, sizeof(h), 0) || memcmp(h.magic, MAGIC, 8) ||
	    h.url_len > URL_MAX)
		return -1;
	if (h.url_len != ul)
		return 0;
	if (!(u = malloc(ul)))
		return 0;
	same = !read_all(fd, u, ul, sizeof(h)) && !memcmp(u, url, ul);
	free(u);
	if (!same)
		return 0;
	if (!same_stamp(&h, st) || h.block != block || h.len != len ||
	    read_all(fd, buf, len, (off_t)(sizeof(h) + ul)) ||
	    crc_of(buf, len) != h.crc)
		return -1;
	return 1;
}

int diskcache_get(struct diskcache *dc, const char *url,
		  const struct source_stamp *st, uint64_t block, void *buf,
		  size_t len)
{
	char sub[17], path[48];
	struct stat fs;
	int fd, rc;

	block_path(url, block, sub, path);
	if ((fd = openat(dc->dfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	rc = check_file(fd, url, st, block, buf, len);
	if (rc == 1)
		futimens(fd, NULL);	/* recently used */
	if (rc < 0 && !fstat(fd, &fs) && !unlinkat(dc->dfd, path, 0))
		charge(dc, -(int64_t)fs.st_size);
	close(fd);
	return rc == 1;
}

void diskcache_drop(struct diskcache *dc, const char *url, uint64_t block)
{
	char sub[17], path[48];
	struct stat fs;

	block_path(url, block, sub, path);
	if (!fstatat(dc->dfd, path, &fs, 0) && !unlinkat(dc->dfd, path, 0))
		charge(dc, -(int64_t)fs.st_size);
}

static int put_file(struct diskcache *dc, const char *url,
		    const struct source_stamp *st, uint64_t block,
		    const void *data, size_t len, int64_t *delta)
{
	struct dc_head h;
	char sub[17], path[48], tmp[48];
	size_t ul = strlen(url);
	struct stat old;
	int fd, rc = 0;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, 8);
	h.size = st->size;
	h.mtime_ns = st->mtime_ns;
	memcpy(h.etag, st->etag, sizeof(h.etag));
	h.block = block;
	h.len = (uint32_t)len;
	h.url_len = (uint32_t)ul;
	h.crc = crc_of(data, len);
	block_path(url, block, sub, path);
	if (mkdirat(dc->dfd, sub, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "%d-%u", sub, (int)gettid(),
		 atomic_fetch_add(&dc->seq, 1));
	fd = openat(dc->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write_all(fd, &h, sizeof(h)) || write_all(fd, url, ul) ||
	    write_all(fd, data, len))
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	*delta = (int64_t)(sizeof(h) + ul + len);
	if (!rc && !fstatat(dc->dfd, path, &old, 0))
		*delta -= (int64_t)old.st_size;
	if (!rc && renameat(dc->dfd, tmp, dc->dfd, path) < 0)
		rc = -errno;
	if (rc)
		unlinkat(dc->dfd, tmp, 0);
	return rc;
}

void diskcache_put(struct diskcache *dc, const char *url,
		   const struct source_stamp *st, uint64_t block,
		   const void *data, size_t len)
{
	int64_t delta = 0;
	int rc, over;

	if (sizeof(struct dc_head) + strlen(url) + len > dc->max_bytes ||
	    strlen(url) > URL_MAX)
		return;
	if ((rc = put_file(dc, url, st, block, data, len, &delta))) {
		sfs_warn("-o cache_dir=%s: cannot store a block of %s: %s (it "
			 "will be read from the network again)", dc->dir, url,
			 strerror(-rc));
		return;
	}
	charge(dc, delta);
	pthread_mutex_lock(&dc->lock);
	over = dc->total > dc->max_bytes;
	pthread_mutex_unlock(&dc->lock);
	/* one pass at a time; the others go on reading */
	if (over && !pthread_mutex_trylock(&dc->evicting)) {
		scan(dc, 1);
		pthread_mutex_unlock(&dc->evicting);
	}
}
