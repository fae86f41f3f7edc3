/*
 * ops.c - FUSE low-level operations: one function per request, each only
 * translating to struct layout calls (core/layouts/layout.h) and replying.
 *
 * The tree never changes while mounted, so entries and attributes are
 * cached by the kernel for a day, unknown names are cached as negative
 * entries, open/opendir answer ENOSYS (the kernel then stops sending
 * open/release and keeps the page cache), and forget is a no-op because
 * inode numbers are computed by the layout, not allocated here (but for
 * the control directory's snapshots, ctl.h, freed at their forget).
 * Everything that would write answers EROFS.  Each request is counted
 * (ctl.h), and inodes of kind SFS_INO_KIND_CTL go to the control
 * directory, not the layout.
 *
 * Threads: requests run concurrently (the libfuse multi-threaded loop, or
 * with -o poll one session thread plus the reads it queues on fs->io);
 * struct sfs_fs is read-only apart from fs->io and fs->rdp, which lock
 * themselves, and each request's buffers are its own (stack, or malloc'd
 * and freed before replying returns).
 *
 * Not for: READ, its splices and copies, its workers and cancel scopes
 * (read.c, whose sfs_read is in the table here).
 */
#include "ops.h"
#include "read.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define BACKGROUND_MAX 128	/* READs of readahead in flight (sfs_init) */
#define BLKSIZE    65536	/* st_blksize: what cp and friends read at once */
#define STACK_DIR  16384	/* readdir replies up to this use a stack buffer
				 * (the kernel asks 4 KiB) */
/* The pipe's size when /proc/sys/fs/pipe-max-size cannot be read (its
 * default since Linux 2.6.35) */
#define PIPE_MAX_DEFAULT ((size_t)1 << 20)
/* A pipe for a 1 MiB READ of 64 spans: a page each, the reply's 257 and
 * a slot more for each span's ends, in a power of two pages (read.c) */
#define PIPE_WANT ((size_t)2 << 20)

static struct sfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void to_stat(const struct sfs_fs *fs, const struct sfs_attr *a,
		    struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_size = (off_t)a->size;
	/* 512-byte blocks of the data, as du counts them: holes take none */
	st->st_blocks = (blkcnt_t)((a->size - (a->hole < a->size ? a->hole : a->size)
				    + 511) / 512);
	st->st_blksize = BLKSIZE;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim.tv_sec = a->mtime;
	st->st_mtim.tv_sec = a->mtime;
	st->st_ctim.tv_sec = a->mtime;
}

static void to_entry(const struct sfs_fs *fs, const struct sfs_attr *a,
		     struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->attr_timeout = fs->timeout;
	e->entry_timeout = fs->timeout;
	to_stat(fs, a, &e->attr);
}

/* The largest pipe an unprivileged process may have (F_SETPIPE_SZ) */
static size_t pipe_max_size(void)
{
	unsigned long v = 0;
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? (size_t)v : PIPE_MAX_DEFAULT;
}

/*
 * The largest pipe libfuse can grow for a reply: pipe-max-size, or
 * PIPE_WANT when a pipe grows past that (CAP_SYS_RESOURCE: root outside a
 * container), which holds a 1 MiB READ of a shard with all its spans
 * (read.c's spans_max).  Asked of a pipe of our own, as libfuse asks of
 * its own (fuse_send_data_iov); the answer is the same for both.
 */
static size_t pipe_limit(void)
{
	size_t max = pipe_max_size();
	int p[2];

	if (max >= PIPE_WANT || pipe2(p, O_CLOEXEC) < 0)
		return max;
	if (fcntl(p[0], F_SETPIPE_SZ, (int)PIPE_WANT) >= (int)PIPE_WANT)
		max = PIPE_WANT;
	close(p[0]);
	close(p[1]);
	return max;
}

static void sfs_init(void *userdata, struct fuse_conn_info *conn)
{
	unsigned want = FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
			FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO |
			FUSE_CAP_ASYNC_READ | FUSE_CAP_CACHE_SYMLINKS |
			FUSE_CAP_PARALLEL_DIROPS;

	struct sfs_fs *fs = userdata;
	int mode = fs->opts.readdirplus;

	if (mode == RDPLUS_BY_LAYOUT)
		mode = fs->layout.ops->listed_then_read ? RDPLUS_ALWAYS
							: RDPLUS_ADAPTIVE;
	fs->pipe_max = pipe_limit();

	/* conn->max_readahead stays the kernel's offer: it can only lower it */
	conn->want |= conn->capable & want;
	/* The kernel sends readahead as background requests, at most
	 * max_background (12 by default) at once, and past the congestion
	 * threshold (9) drops a readahead whose pages are all "async": the
	 * first read of a small file then comes as 4 KiB READs, one page at a
	 * time, each a request to the source (16 threads reading random
	 * members over HTTP: 1.42 GETs a file, 0.74 READs of 4 KiB).  With
	 * room for every reader's readahead, a file comes in one READ. */
	conn->max_background = BACKGROUND_MAX;
	conn->congestion_threshold = BACKGROUND_MAX;
	/* no writeback cache: nothing is ever written; no checks of cached
	 * pages against the file's attributes on every read: nothing changes */
	conn->want &= ~(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_AUTO_INVAL_DATA);
	/* Without READDIRPLUS_AUTO every listing is a READDIRPLUS: a loader's
	 * glob() then leaves a dentry per file and its np.load() sends one
	 * request (READ), not two (LOOKUP, READ).  Auto would give attributes
	 * only to the first reply of a listing, since the lookups come after.
	 * Adaptive listings are READDIRPLUS too; the entries the guess leaves
	 * without attributes (node id 0) cost the kernel nothing. */
	if (mode == RDPLUS_ALWAYS || mode == RDPLUS_ADAPTIVE)
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	fs->adaptive = mode == RDPLUS_ADAPTIVE &&
		       (conn->want & FUSE_CAP_READDIRPLUS);
}

static void sfs_destroy(void *userdata)
{
	(void)userdata;	/* main() closes the layout after the loop ends */
}

/* The control directory's entries time out at once: each open of a file
 * there looks it up again, which makes its new snapshot at a new inode
 * (ctl.h). */
static void ctl_entry(fuse_req_t req, struct sfs_fs *fs, fuse_ino_t parent,
		      const char *name)
{
	struct fuse_entry_param e;
	struct sfs_attr a;
	int rc;

	if ((rc = ctl_lookup(&fs->ctl, parent, name, &a)) < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	to_entry(fs, &a, &e);
	e.attr_timeout = 0;
	e.entry_timeout = 0;
	fuse_reply_entry(req, &e);
}

static void sfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct sfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct sfs_attr a;
	int rc;

	ctl_op(&fs->ctl, CTL_LOOKUP);
	if (ctl_is(parent) || ctl_is_dir_name(&fs->ctl, parent, name)) {
		ctl_entry(req, fs, parent, name);
		return;
	}
	rc = fs->layout.ops->lookup(fs->layout.priv, parent, name, &a);
	if (rc == -ENOENT) {
		/* ino 0 with a timeout: the kernel caches the miss */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (fs->adaptive && !S_ISDIR(a.mode))
		rdplus_lookup(&fs->rdp, parent);
	to_entry(fs, &a, &e);
	fuse_reply_entry(req, &e);
}

static void sfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct sfs_fs *fs = fs_of(req);

	ctl_op(&fs->ctl, CTL_FORGET);
	if (ctl_is(ino))
		ctl_forget(&fs->ctl, ino, nlookup);
	fuse_reply_none(req);
}

static void sfs_forget_multi(fuse_req_t req, size_t count,
			     struct fuse_forget_data *forgets)
{
	struct sfs_fs *fs = fs_of(req);
	size_t i;

	ctl_op(&fs->ctl, CTL_FORGET);
	for (i = 0; i < count; i++)
		if (ctl_is(forgets[i].ino))
			ctl_forget(&fs->ctl, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void sfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct sfs_fs *fs = fs_of(req);
	struct sfs_attr a;
	struct stat st;
	int rc;

	(void)fi;
	ctl_op(&fs->ctl, CTL_GETATTR);
	if (ctl_is(ino))
		rc = ctl_getattr(&fs->ctl, ino, &a);
	else
		rc = fs->layout.ops->getattr(fs->layout.priv, ino, &a);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	to_stat(fs, &a, &st);
	fuse_reply_attr(req, &st, ctl_is(ino) ? 0 : fs->timeout);
}

static void sfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_fs *fs = fs_of(req);
	char buf[PATH_MAX];
	int rc = -EINVAL;

	ctl_op(&fs->ctl, CTL_READLINK);
	if (fs->layout.ops->readlink && !ctl_is(ino))
		rc = fs->layout.ops->readlink(fs->layout.priv, ino, buf, sizeof(buf));
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

/*
 * ENOSYS makes the kernel treat open and opendir as always succeeding with
 * FOPEN_KEEP_CACHE (fs/fuse/file.c: fc->no_open), so no open/release round
 * trips and the page cache survives close.
 */
static void sfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	ctl_op(&fs_of(req)->ctl, CTL_OPEN);
	fuse_reply_err(req, ENOSYS);
}

static void sfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	ctl_op(&fs_of(req)->ctl, CTL_OPEN);
	fuse_reply_err(req, ENOSYS);
}

/* ---- readdir ---- */

/*
 * Directory offsets: 0 and 1 are before "." and ".."; layout entry with
 * cookie c gets offset c + 2, and offset o >= 2 resumes the layout at o - 2.
 */
struct dirbuf {
	fuse_req_t req;
	struct sfs_fs *fs;
	fuse_ino_t dir;
	char *buf;
	size_t size, pos;
	int plus;
};

/* `link` = 0 for "." and "..": readdirplus then hands out no lookup
 * (entry ino 0), while d_ino stays real for tools that skip d_ino 0. */
static int add_entry(struct dirbuf *d, const char *name,
		     const struct sfs_attr *a, uint64_t next, int link)
{
	struct fuse_entry_param e;
	size_t n;

	to_entry(d->fs, a, &e);
	if (!link)
		e.ino = 0;
	if (d->plus)
		n = fuse_add_direntry_plus(d->req, d->buf + d->pos, d->size - d->pos,
					   name, &e, (off_t)next);
	else
		n = fuse_add_direntry(d->req, d->buf + d->pos, d->size - d->pos,
				      name, &e.attr, (off_t)next);
	if (n > d->size - d->pos)
		return 1;	/* full: not added */
	d->pos += n;
	return 0;
}

static int fill(void *arg, const char *name, const struct sfs_attr *a,
		uint64_t cookie)
{
	struct dirbuf *d = arg;
	int link = 1;

	if (ctl_is(d->dir))	/* an entry would outlive its snapshot (ctl.h) */
		link = ctl_listed_link(a->ino);
	else if (d->plus && d->fs->adaptive && !S_ISDIR(a->mode))
		link = rdplus_file_entry(&d->fs->rdp, d->dir);
	return add_entry(d, name, a, cookie + 2, link);
}

/* ".." gets the root's number: the layout does not say who the parent is,
 * and the kernel resolves ".." itself. */
static int add_dots(struct dirbuf *d, fuse_ino_t ino, uint64_t off)
{
	struct sfs_attr a = {.mode = S_IFDIR | 0555};

	if (off == 0) {
		a.ino = ino;
		if (add_entry(d, ".", &a, 1, 0))
			return 1;
	}
	if (off <= 1) {
		a.ino = SFS_ROOT_INO;
		if (add_entry(d, "..", &a, 2, 0))
			return 1;
	}
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       int plus)
{
	struct sfs_fs *fs = fs_of(req);
	struct dirbuf d = {.req = req, .fs = fs, .dir = ino, .size = size,
			   .plus = plus};
	char stack[STACK_DIR];
	int rc = 0;

	d.buf = size <= sizeof(stack) ? stack : malloc(size);
	ctl_op(&fs->ctl, plus ? CTL_READDIRPLUS : CTL_READDIR);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (ctl_is(ino)) {
		if (!add_dots(&d, ino, (uint64_t)off))
			rc = ctl_readdir(&fs->ctl, ino, off < 2 ? 0 : (uint64_t)off - 2,
					 fill, &d);
		goto reply;
	}
	if (plus && fs->adaptive)
		rdplus_listing(&fs->rdp, ino, (uint64_t)off);
	if (!add_dots(&d, ino, (uint64_t)off))
		rc = fs->layout.ops->readdir(fs->layout.priv, ino,
					     off < 2 ? 0 : (uint64_t)off - 2, fill, &d);
reply:
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.pos);
	if (d.buf != stack)
		free(d.buf);
}

static void sfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 0);
}

static void sfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, 1);
}

static void sfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct sfs_fs *fs = fs_of(req);
	struct statvfs sv;
	uint64_t files = 0, bytes = 0;

	(void)ino;
	ctl_op(&fs->ctl, CTL_STATFS);
	fs->layout.ops->statfs(fs->layout.priv, &files, &bytes);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (bytes + 511) / 512;
	sv.f_files = files;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* ---- everything that would write: EROFS ---- */

static void sfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int to_set, struct fuse_file_info *fi)
{
	(void)ino; (void)attr; (void)to_set; (void)fi;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode)
{
	(void)parent; (void)name; (void)mode;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent; (void)name;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent; (void)name;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			const char *name)
{
	(void)link; (void)parent; (void)name;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname, unsigned flags)
{
	(void)parent; (void)name; (void)newparent; (void)newname; (void)flags;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		     const char *newname)
{
	(void)ino; (void)newparent; (void)newname;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		      size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino; (void)buf; (void)size; (void)off; (void)fi;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	(void)parent; (void)name; (void)mode; (void)fi;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 const char *value, size_t size, int flags)
{
	(void)ino; (void)name; (void)value; (void)size; (void)flags;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino; (void)name;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

/*
 * No extended attributes.  listxattr gives an empty list, so rsync -X and
 * cp -a, which list before they get, copy quietly.  getxattr answers ENOSYS
 * once: the kernel then answers EOPNOTSUPP itself, as on file systems
 * without xattr support, and never asks again.  ENODATA, the answer of a
 * file system that has xattrs but not this one, cost two round trips per
 * file for `ls -l` (security.selinux and system.posix_acl_access): 27 s of
 * a 1.28 M-file `ls -lR`.
 */
static void sfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 size_t size)
{
	(void)ino; (void)name; (void)size;
	ctl_op(&fs_of(req)->ctl, CTL_XATTR);
	fuse_reply_err(req, ENOSYS);
}

static void sfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	ctl_op(&fs_of(req)->ctl, CTL_XATTR);
	if (size == 0)
		fuse_reply_xattr(req, 0);	/* the size the list needs */
	else
		fuse_reply_buf(req, NULL, 0);
}

static void sfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			  off_t offset, off_t length, struct fuse_file_info *fi)
{
	(void)ino; (void)mode; (void)offset; (void)length; (void)fi;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

static void sfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
				struct fuse_file_info *fi_in, fuse_ino_t ino_out,
				off_t off_out, struct fuse_file_info *fi_out,
				size_t len, int flags)
{
	(void)ino_in; (void)off_in; (void)fi_in; (void)ino_out;
	(void)off_out; (void)fi_out; (void)len; (void)flags;
	ctl_op(&fs_of(req)->ctl, CTL_DENIED);
	fuse_reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops sfs_ll_ops = {
	.init = sfs_init,
	.destroy = sfs_destroy,
	.lookup = sfs_lookup,
	.forget = sfs_forget,
	.forget_multi = sfs_forget_multi,
	.getattr = sfs_getattr,
	.readlink = sfs_readlink,
	.open = sfs_open,
	.opendir = sfs_opendir,
	.read = sfs_read,
	.readdir = sfs_readdir,
	.readdirplus = sfs_readdirplus,
	.statfs = sfs_statfs,
	.setattr = sfs_setattr,
	.mknod = sfs_mknod,
	.mkdir = sfs_mkdir,
	.unlink = sfs_unlink,
	.rmdir = sfs_rmdir,
	.symlink = sfs_symlink,
	.rename = sfs_rename,
	.link = sfs_link,
	.write = sfs_write,
	.create = sfs_create,
	.setxattr = sfs_setxattr,
	.removexattr = sfs_removexattr,
	.getxattr = sfs_getxattr,
	.listxattr = sfs_listxattr,
	.fallocate = sfs_fallocate,
	.copy_file_range = sfs_copy_file_range,
};
