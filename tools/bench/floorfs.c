/*
 * floorfs - the FUSE floor for the samplefs benchmark.
 *
 * A minimal libfuse3 low-level filesystem that serves `files` read-only files
 * of `size` bytes each, straight from one buffer in memory, in the tree
 *
 *     /d<k>/<i:06d>.<ext>      k = i / per_dir, i = 0 .. files-1
 *
 * It does the least work any FUSE filesystem can do per file: inode numbers
 * are computed from names, lookups and attributes are cached by the kernel
 * "forever", open/opendir answer ENOSYS so the kernel sends no open/release
 * round trips and keeps the page cache, readdirplus hands out attributes with
 * the names, and reads are one memcpy-free reply from a shared buffer.  What
 * a first pass through it costs is the price of FUSE itself on this machine,
 * which is what samplefs is compared against.
 *
 * Not part of samplefs and does not use core/: a benchmark tool only.
 *
 * Usage: samplefs-floorfs [-f] [-s] -o files=N,size=S,per_dir=K[,ext=npy] MNT
 *
 * One big file (files=1,size=1000000000) is the floor of a sequential
 * read, as of a shard: -o readahead=KIB sets the mount's read-ahead window
 * as samplefs' option of that name does (fs/readahead.h; root only), so
 * both are read in READs of the same size.  With -o backing=PATH the
 * bytes are PATH's, one pread of each READ into a buffer and then the
 * reply: the floor of a server that copies its bytes from the page cache
 * (a READ too large to splice), where the default serves them from memory.
 *
 * Threads: everything the request handlers read (struct floor and the data
 * buffer) is filled before the session starts and read-only afterwards.
 */
#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>

#include "../../fs/devpoll.h"
#include "../../fs/readahead.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Long enough that nothing expires during a benchmark run. */
#define FLOOR_TIMEOUT (365.0 * 86400.0)
#define FLOOR_NAME_MAX 64

struct floor_opts {
	unsigned long files;
	unsigned long size;
	unsigned long per_dir;
	char *ext;
	unsigned long poll_us;
	unsigned long readahead_kib;
	char *backing;
};

struct floor {
	uint64_t files, size, per_dir, ndirs;
	const char *ext;
	time_t mtime;
	char *data;	/* `size` bytes, the content of every file */
	unsigned poll_us;	/* -o poll=N: as samplefs' option of that name */
	unsigned readahead_kib;	/* -o readahead=KIB: likewise; 0 = the kernel's */
	int backing_fd;		/* -o backing=PATH: read from it; -1: data */
	struct devpoll dp;
};

static const struct fuse_opt floor_opt_spec[] = {
	{ "files=%lu", offsetof(struct floor_opts, files), 0 },
	{ "size=%lu", offsetof(struct floor_opts, size), 0 },
	{ "per_dir=%lu", offsetof(struct floor_opts, per_dir), 0 },
	{ "ext=%s", offsetof(struct floor_opts, ext), 0 },
	{ "poll=%lu", offsetof(struct floor_opts, poll_us), 0 },
	{ "readahead=%lu", offsetof(struct floor_opts, readahead_kib), 0 },
	{ "backing=%s", offsetof(struct floor_opts, backing), 0 },
	FUSE_OPT_END
};

/*
 * Inode numbers: 1 the root, 2 .. ndirs+1 the directories, then the files.
 * No table: each number says what it is.
 */
static uint64_t dir_ino(const struct floor *f, uint64_t k)
{
	(void)f;
	return 2 + k;
}

static uint64_t file_ino(const struct floor *f, uint64_t i)
{
	return 2 + f->ndirs + i;
}

static int ino_is_dir(const struct floor *f, uint64_t ino)
{
	return ino >= 2 && ino < 2 + f->ndirs;
}

static int ino_is_file(const struct floor *f, uint64_t ino)
{
	return ino >= 2 + f->ndirs && ino < 2 + f->ndirs + f->files;
}

/* Files of directory k: [*lo, *hi). */
static void dir_range(const struct floor *f, uint64_t k, uint64_t *lo,
		      uint64_t *hi)
{
	*lo = k * f->per_dir;
	*hi = *lo + f->per_dir;
	if (*hi > f->files)
		*hi = f->files;
}

static void fill_stat(const struct floor *f, uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mtime = st->st_ctime = st->st_atime = f->mtime;
	st->st_blksize = 4096;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2 + f->ndirs;
	} else if (ino_is_dir(f, ino)) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)f->size;
		st->st_blocks = (blkcnt_t)((f->size + 511) / 512);
	}
}

static void fill_entry(const struct floor *f, uint64_t ino,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = FLOOR_TIMEOUT;
	e->entry_timeout = FLOOR_TIMEOUT;
	fill_stat(f, ino, &e->attr);
}

/* Name of the n-th entry (0-based, without "." and "..") of directory ino. */
static void entry_name(const struct floor *f, uint64_t ino, uint64_t n,
		       char *name, uint64_t *child)
{
	uint64_t lo, hi;

	if (ino == FUSE_ROOT_ID) {
		snprintf(name, FLOOR_NAME_MAX, "d%llu", (unsigned long long)n);
		*child = dir_ino(f, n);
		return;
	}
	dir_range(f, ino - 2, &lo, &hi);
	snprintf(name, FLOOR_NAME_MAX, "%06llu.%s",
		 (unsigned long long)(lo + n), f->ext);
	*child = file_ino(f, lo + n);
}

static uint64_t dir_nentries(const struct floor *f, uint64_t ino)
{
	uint64_t lo, hi;

	if (ino == FUSE_ROOT_ID)
		return f->ndirs;
	dir_range(f, ino - 2, &lo, &hi);
	return hi - lo;
}

/*
 * Parses a decimal number that fills `s` up to `end` (or the string's end
 * when end is NULL).  Returns 0 or -1.  Names are checked again by
 * formatting them back, so leading zeros and the like need no care here.
 */
static int parse_u64(const char *s, const char *end, uint64_t *out)
{
	char *stop;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &stop, 10);
	if (errno || (end ? stop != end : *stop != '\0'))
		return -1;
	*out = v;
	return 0;
}

/* Child `name` of directory `parent`: its inode number, or 0 if none. */
static uint64_t find_child(const struct floor *f, uint64_t parent,
			   const char *name)
{
	char want[FLOOR_NAME_MAX];
	uint64_t n, lo, hi, child;
	const char *dot;

	if (parent == FUSE_ROOT_ID) {
		if (name[0] != 'd' || parse_u64(name + 1, NULL, &n) ||
		    n >= f->ndirs)
			return 0;
		entry_name(f, parent, n, want, &child);
		return strcmp(want, name) ? 0 : child;
	}
	dot = strchr(name, '.');
	if (!dot || parse_u64(name, dot, &n))
		return 0;
	dir_range(f, parent - 2, &lo, &hi);
	if (n < lo || n >= hi)
		return 0;
	entry_name(f, parent, n - lo, want, &child);
	return strcmp(want, name) ? 0 : child;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct floor *f = fuse_req_userdata(req);
	struct fuse_entry_param e;
	uint64_t child = 0;

	if (parent == FUSE_ROOT_ID || ino_is_dir(f, parent))
		child = find_child(f, parent, name);
	else if (ino_is_file(f, parent)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (!child) {
		/* a negative entry with a timeout: cached by the kernel too */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FLOOR_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	fill_entry(f, child, &e);
	fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	const struct floor *f = fuse_req_userdata(req);
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && !ino_is_dir(f, ino) && !ino_is_file(f, ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(f, ino, &st);
	fuse_reply_attr(req, &st, FLOOR_TIMEOUT);
}

/* ENOSYS: the kernel stops sending open/release and keeps the page cache. */
static void floor_open(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

/* -o backing: the READ's bytes pread from the backing file into a buffer
 * of the calling thread's, then replied (the buffer lives as long as the
 * thread: a malloc of 1 MiB per READ would be an mmap and a munmap) */
static void floor_read_backing(fuse_req_t req, const struct floor *f, size_t size,
			       off_t off)
{
	static __thread char *buf;
	size_t done = 0;
	ssize_t n;

	if (!buf && !(buf = malloc(1u << 20))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (size > 1u << 20)
		size = 1u << 20;	/* a short read: the kernel asks again */
	while (done < size) {
		n = pread(f->backing_fd, buf + done, size - done, off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fuse_reply_err(req, EIO);
			return;
		}
		done += (size_t)n;
	}
	fuse_reply_buf(req, buf, size);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	const struct floor *f = fuse_req_userdata(req);

	(void)fi;
	if (!ino_is_file(f, ino)) {
		fuse_reply_err(req, ino_is_dir(f, ino) ? EISDIR : ENOENT);
		return;
	}
	if (off < 0 || (uint64_t)off >= f->size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > f->size - (uint64_t)off)
		size = f->size - (uint64_t)off;
	if (f->backing_fd >= 0) {
		floor_read_backing(req, f, size, off);
		return;
	}
	fuse_reply_buf(req, f->data + off, size);
}

/*
 * Entries from position `off`: 0 is ".", 1 is "..", n + 2 the n-th child.
 * Each entry's offset field is the position of the next one.
 */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       int plus)
{
	const struct floor *f = fuse_req_userdata(req);
	char name[FLOOR_NAME_MAX];
	struct fuse_entry_param e;
	uint64_t pos, n = dir_nentries(f, ino), child;
	size_t used = 0, len;
	char *buf;

	if (ino != FUSE_ROOT_ID && !ino_is_dir(f, ino)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (pos = off < 0 ? 0 : (uint64_t)off; pos < n + 2; pos++) {
		if (pos < 2) {
			strcpy(name, pos ? ".." : ".");
			child = ino;	/* the kernel ignores the dots' attributes */
		} else {
			entry_name(f, ino, pos - 2, name, &child);
		}
		fill_entry(f, child, &e);
		if (plus)
			len = fuse_add_direntry_plus(req, buf + used,
						     size - used, name, &e,
						     (off_t)pos + 1);
		else
			len = fuse_add_direntry(req, buf + used, size - used,
						name, &e.attr, (off_t)pos + 1);
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

static void floor_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			      off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

/* Inode numbers are not allocated, so there is nothing to forget. */
static void floor_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void floor_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static void floor_statfs(fuse_req_t req, fuse_ino_t ino)
{
	const struct floor *f = fuse_req_userdata(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = (f->files * f->size + 4095) / 4096;
	sv.f_files = 1 + f->ndirs + f->files;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops floor_ops = {
	.lookup = floor_lookup,
	.forget = floor_forget,
	.forget_multi = floor_forget_multi,
	.getattr = floor_getattr,
	.open = floor_open,
	.opendir = floor_open,
	.read = floor_read,
	.readdir = floor_readdir,
	.readdirplus = floor_readdirplus,
	.statfs = floor_statfs,
};

static void usage(const char *prog)
{
	printf("usage: %s [options] MOUNTPOINT\n"
	       "  -o files=N      number of files (default 1000)\n"
	       "  -o size=S       bytes per file (default 3264)\n"
	       "  -o per_dir=K    files per directory d<k> (default 3000)\n"
	       "  -o ext=EXT      file name extension (default npy)\n"
	       "  -o poll=USEC    poll /dev/fuse as samplefs does (default 0: libfuse's loop)\n"
	       "  -o readahead=KIB  the mount's read-ahead, as samplefs' option (default 0: the kernel's)\n"
	       "  -o backing=PATH the files' bytes are PATH's, pread per READ (default: from memory)\n\n",
	       prog);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* Checks the options and fills the shared, read-only state. 0 or -1. */
static int floor_init(struct floor *f, const struct floor_opts *o)
{
	uint64_t i;

	if (o->files == 0 || o->per_dir == 0 || o->size > (1UL << 30) ||
	    strlen(o->ext) > 16 || strchr(o->ext, '/')) {
		fprintf(stderr, "floorfs: need files >= 1, per_dir >= 1, "
			"size <= 1 GiB and a short ext without '/'\n");
		return -1;
	}
	f->files = o->files;
	f->size = o->size;
	f->per_dir = o->per_dir;
	f->ndirs = (f->files + f->per_dir - 1) / f->per_dir;
	f->ext = o->ext;
	f->poll_us = (unsigned)o->poll_us;
	f->readahead_kib = (unsigned)o->readahead_kib;
	f->mtime = time(NULL);
	f->backing_fd = -1;
	if (o->backing) {
		struct stat st;

		f->backing_fd = open(o->backing, O_RDONLY | O_CLOEXEC);
		if (f->backing_fd < 0 || fstat(f->backing_fd, &st) < 0 ||
		    (uint64_t)st.st_size < f->size) {
			fprintf(stderr, "floorfs: -o backing=%s: cannot open it, or "
				"shorter than size=%llu\n", o->backing,
				(unsigned long long)f->size);
			return -1;
		}
		f->data = NULL;	/* every READ reads the file */
		return 0;
	}
	f->data = malloc(f->size ? f->size : 1);
	if (!f->data) {
		fprintf(stderr, "floorfs: cannot allocate %llu bytes\n",
			(unsigned long long)f->size);
		return -1;
	}
	/* not all zeros, so a reader cannot be fooled by holes */
	for (i = 0; i < f->size; i++)
		f->data[i] = (char)(i * 131 + 7);
	return 0;
}

static ssize_t floor_dev_read(int fd, void *buf, size_t len, void *userdata)
{
	return devpoll_read(&((struct floor *)userdata)->dp, fd, buf, len);
}

/* As samplefs' -o readahead: INIT answered here first (its reply may lower
 * the window), then the window set.  0 or -1 (the session ended). */
static int floor_readahead(struct fuse_session *se, const char *mnt,
			   const struct floor *f)
{
	struct fuse_buf buf = { .mem = NULL };
	char path[128] = "read_ahead_kb";
	int rc;

	do
		rc = fuse_session_receive_buf(se, &buf);
	while (rc == -EINTR && !fuse_session_exited(se));
	if (rc > 0)
		fuse_session_process_buf(se, &buf);
	free(buf.mem);
	if (rc <= 0 || fuse_session_exited(se))
		return -1;
	rc = readahead_set(mnt, f->readahead_kib, path, sizeof(path));
	if (rc < 0)
		fprintf(stderr, "floorfs: cannot write %s: %s\n", path, strerror(-rc));
	return 0;
}

static int floor_serve(struct fuse_args *args, struct fuse_cmdline_opts *c,
		       struct floor *f)
{
	struct fuse_session *se;
	struct fuse_loop_config *cfg;
	int ret = 1;

	se = fuse_session_new(args, &floor_ops, sizeof(floor_ops), f);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (fuse_session_mount(se, c->mountpoint) != 0)
		goto out_signals;
	if (f->poll_us && devpoll_install(&f->dp, se, f->poll_us, floor_dev_read))
		goto out_unmount;
	fuse_daemonize(c->foreground);
	if (f->readahead_kib && floor_readahead(se, c->mountpoint, f))
		goto out_unmount;
	if (c->singlethread || f->poll_us) {	/* polling: as samplefs does */
		ret = fuse_session_loop(se);
	} else {
		cfg = fuse_loop_cfg_create();
		if (!cfg)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(cfg, c->clone_fd);
		/* UINT_MAX means "not given": keep libfuse's defaults */
		if (c->max_threads != UINT_MAX)
			fuse_loop_cfg_set_max_threads(cfg, c->max_threads);
		if (c->max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(cfg,
						       c->max_idle_threads);
		ret = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
	return ret ? 1 : 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts c;
	struct floor_opts o = { 1000, 3264, 3000, NULL, 0, 0, NULL };
	struct floor f;
	int ret = 1;

	memset(&c, 0, sizeof(c));
	if (fuse_opt_parse(&args, &o, floor_opt_spec, NULL) != 0)
		goto out;
	if (!o.ext)
		o.ext = strdup("npy");
	if (fuse_parse_cmdline(&args, &c) != 0)
		goto out;
	if (c.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out;
	}
	if (c.show_version) {
		printf("FUSE library version %s\n", fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!c.mountpoint) {
		usage(argv[0]);
		goto out;
	}
	if (!o.ext || floor_init(&f, &o) != 0)
		goto out;
	ret = floor_serve(&args, &c, &f);
	free(f.data);
out:
	free(c.mountpoint);
	free(o.ext);
	free(o.backing);
	fuse_opt_free_args(&args);
	return ret;
}
