/*
 * file.c - the local file backend: pread on a descriptor kept open for the
 * mount (a file replaced by rename keeps serving the bytes it had), fstat
 * for the change check, readdir for listings.  In no-wait mode a read uses
 * preadv2(RWF_NOWAIT) and gives -EAGAIN for bytes not in the page cache, so
 * the FUSE layer can hand it to a worker thread.
 *
 * Not for: URLs (http.c), or writing and mapping index files (core/index).
 */
#include "io/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct file_src {
	int fd;
};

static int file_claims(const char *uri)
{
	return !source_is_url(uri);
}

static void stamp_of(const struct stat *st, struct source_stamp *out)
{
	memset(out, 0, sizeof(*out));
	out->size = (uint64_t)st->st_size;
	out->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static int file_open(struct source *s)
{
	struct file_src *f = calloc(1, sizeof(*f));
	struct stat st;
	int rc = 0;

	if (!f)
		return -ENOMEM;
	/* O_NONBLOCK: a FIFO named like a source must not hang the mount;
	 * it is refused below, and regular files read as usual without it */
	f->fd = open(s->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	if (fcntl(f->fd, F_SETFL, 0) < 0) {
		rc = -errno;
		goto out;
	}
	stamp_of(&st, &s->stamp);
	s->priv = f;
out:
	if (rc) {
		if (f->fd >= 0)
			close(f->fd);
		free(f);
	}
	return rc;
}

/* preadv until every buffer is full or end of file (iov is consumed); in
 * no-wait mode a range only partly in the page cache reads short, so go on
 * until a page that is not there (-EAGAIN). */
static ssize_t file_preadv(struct source *s, struct iovec *iov, int n, uint64_t off)
{
	struct file_src *f = s->priv;
	int nowait = source_nowait_mode();
	size_t done = 0;
	ssize_t got;

	while (n > 0) {
		got = preadv2(f->fd, iov, n, (off_t)(off + done), nowait ? RWF_NOWAIT : 0);
		if (got < 0 && errno == EINTR)
			continue;
		/* without RWF_NOWAIT support: "would block", so the caller
		 * retries where waiting is allowed */
		if (got < 0 && nowait && (errno == EOPNOTSUPP || errno == EINVAL))
			return -EAGAIN;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
		for (; n > 0 && (size_t)got >= iov->iov_len; iov++, n--)
			got -= (ssize_t)iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + got;
			iov->iov_len -= (size_t)got;
		}
	}
	return (ssize_t)done;
}

static ssize_t file_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct iovec iov = { buf, n };

	return n ? file_preadv(s, &iov, 1, off) : 0;
}

static int file_changed(struct source *s)
{
	struct file_src *f = s->priv;
	struct source_stamp now;
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	stamp_of(&st, &now);
	return now.size != s->stamp.size || now.mtime_ns != s->stamp.mtime_ns;
}

static int file_fd(struct source *s, int *fd, uint64_t *base)
{
	*fd = ((struct file_src *)s->priv)->fd;
	*base = 0;
	return 0;
}

static void file_advise(struct source *s, uint64_t off, uint64_t len,
			enum source_advice adv)
{
	static const int advice[] = {
		[SOURCE_ADV_NORMAL] = POSIX_FADV_NORMAL,
		[SOURCE_ADV_RANDOM] = POSIX_FADV_RANDOM,
		[SOURCE_ADV_WILLNEED] = POSIX_FADV_WILLNEED,
		/* a walk skips the data between headers: no readahead */
		[SOURCE_ADV_WALK] = POSIX_FADV_RANDOM,
	};

	(void)posix_fadvise(((struct file_src *)s->priv)->fd, (off_t)off,
			    (off_t)len, advice[adv]);
}

static void file_close(struct source *s)
{
	struct file_src *f = s->priv;

	if (f) {
		close(f->fd);
		free(f);
	}
}

static int file_stat(struct source_env *env, const char *uri, struct source_info *out)
{
	struct stat st;

	if (stat(uri, &st) < 0)
		return -errno;
	out->is_dir = S_ISDIR(st.st_mode);
	if (!out->is_dir && !S_ISREG(st.st_mode))
		return -EINVAL;	/* a device or fifo is no source */
	stamp_of(&st, &out->stamp);
	return 0;
}

static int file_list(struct source_env *env, const char *uri, source_list_fn fn,
		     void *arg)
{
	DIR *d = opendir(uri);
	struct dirent *de;
	int rc = 0, is_dir;

	if (!d)
		return -errno;
	errno = 0;
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		is_dir = de->d_type == DT_DIR;
		if (de->d_type == DT_UNKNOWN || de->d_type == DT_LNK) {
			struct stat st;

			is_dir = !fstatat(dirfd(d), de->d_name, &st, 0) &&
				 S_ISDIR(st.st_mode);
		}
		rc = fn(arg, de->d_name, is_dir);
		errno = 0;
	}
	if (!rc && errno)
		rc = -errno;
	closedir(d);
	return rc;
}

const struct source_backend source_file_backend = {
	.name = "file",
	.claims = file_claims,
	.open = file_open,
	.pread = file_pread,
	.preadv = file_preadv,
	.changed = file_changed,
	.fd = file_fd,
	.advise = file_advise,
	.close = file_close,
	.stat = file_stat,
	.list = file_list,
};
