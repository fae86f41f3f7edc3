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
 * themselves, and
 * each request's buffers are its own (stack, or malloc'd and freed before
 * replying returns).  A read that waits (a worker's, or any with poll=0)
 * runs under a cancel scope that the kernel's FUSE_INTERRUPT sets
 * (read_cancellable): its reader killed or interrupted, it answers EINTR.
 */
#include "ops.h"
#include "clock.h"
#include "log.h"
#include "io/source.h"
#include "io/codecs/zpool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define BACKGROUND_MAX 128	/* READs of readahead in flight (sfs_init) */
#define BLKSIZE    65536	/* st_blksize: what cp and friends read at once */
#define STACK_READ 65536	/* reads up to this use a stack buffer */
#define STACK_DIR  16384	/* and readdir replies (the kernel asks 4 KiB) */
/*
 * Extent reads shorter than this are copied here, not spliced: libfuse
 * (fuse_send_data_iov) sends replies under two pages through a buffer from
 * posix_memalign(page size, len), and glibc 2.36's memalign never reuses
 * the chunks free() leaves in each thread's tcache (those up to 1032
 * bytes).  Every thread's tcache then filled up, over minutes, with
 * page-aligned chunks of the sizes of file tails, each pinning the pages
 * around it, and the malloc arenas grew by megabytes (the soak, cold
 * reads).  libfuse copied such replies anyway; read_copy copies them to
 * the stack.
 */
#define SPLICE_MIN (2 * (size_t)sysconf(_SC_PAGESIZE))
/* Pieces of a reply made of spans (read_spans): a 512 KiB READ of a
 * shard of 110 KB members takes about 10; past this many (or past what
 * the pipe holds: spans_max), the layout copies */
#define SPANS_MAX 64
/* The pipe's size when /proc/sys/fs/pipe-max-size cannot be read (its
 * default since Linux 2.6.35) */
#define PIPE_MAX_DEFAULT ((size_t)1 << 20)
#define FUSE_OUT_HEADER 16	/* struct fuse_out_header, before every reply */

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
	fs->pipe_max = pipe_max_size();

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

/* ---- read ---- */

/* Clamps a read to the file's size, so small files never need the heap. */
static int clamp_to_size(struct sfs_fs *fs, fuse_ino_t ino, size_t *size,
			 off_t off)
{
	struct sfs_attr a;
	int rc;

	if ((rc = fs->layout.ops->getattr(fs->layout.priv, ino, &a)) < 0)
		return rc;
	if ((uint64_t)off >= a.size)
		*size = 0;
	else if (*size > a.size - (uint64_t)off)
		*size = a.size - (uint64_t)off;
	return 0;
}

/* The file's bytes are a range of a source with a descriptor: let libfuse
 * splice them.  -ENOTSUP: not an extent, a source with no descriptor (a
 * remote one), or too short to splice; the caller copies. */
static int read_extent(fuse_req_t req, struct sfs_fs *fs, fuse_ino_t ino,
		       size_t size, off_t off)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);
	struct source *src;
	uint64_t base, fdbase;
	int fd, rc;

	/* -EIO: the source changed since mounting (the layout checked), and a
	 * splice would send other bytes, or short ones, which the kernel would
	 * take for a new end of file. */
	rc = fs->layout.ops->extent(fs->layout.priv, ino, &src, &base);
	if (rc < 0)
		return rc == -EIO ? -EIO : -ENOTSUP;
	if (source_fd(src, &fd, &fdbase) < 0)
		return -ENOTSUP;
	if ((rc = clamp_to_size(fs, ino, &size, off)) < 0)
		return rc;
	if (size < SPLICE_MIN)
		return -ENOTSUP;	/* read_copy: see SPLICE_MIN */
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fd;
	bv.buf[0].pos = (off_t)(fdbase + base + (uint64_t)off);
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
	ctl_read_done(&fs->ctl, (uint64_t)off, size, 1, 0);
	return 0;
}

/* Which bytes of which source the file is, when it is one range of one
 * (the layout's extent): a remote source then fetches the whole file with
 * the first READ's request, and the kernel's next READs of it (cut by its
 * read-ahead window) come from memory (source.h, source_cancel). */
static void file_span(struct sfs_fs *fs, fuse_ino_t ino, struct source_cancel *c)
{
	struct sfs_attr a;
	struct source *src;
	uint64_t base;

	if (!fs->layout.ops->extent ||
	    fs->layout.ops->extent(fs->layout.priv, ino, &src, &base) < 0 ||
	    fs->layout.ops->getattr(fs->layout.priv, ino, &a) < 0)
		return;
	c->file_src = src;
	c->file_lo = base;
	c->file_end = base + a.size;
}

/* libfuse's interrupt callback (its session thread, under its lock of
 * req): the reader was killed or interrupted while its read waits. */
static void read_interrupted(fuse_req_t req, void *data)
{
	(void)req;
	source_cancel(data);
}

/*
 * The layout's read, which may wait for the network: it gives -EINTR soon
 * after the kernel sends FUSE_INTERRUPT for req (a signal to the reader,
 * kill -9 included: for a read already sent the kernel waits for the
 * answer, uninterruptibly, so this is what lets the reader go).  The
 * callback is unset before returning, so it never outlives `c`: libfuse
 * runs it under req's lock, which unsetting takes.  (Readahead is sent as
 * background requests, never interrupted: those end at read_timeout.)
 * t0: when the request arrived (sfs_now_ns), from which read_timeout
 * counts: a read queued for a worker while others wait out a frozen server
 * has had that much of it already (docs/sources.md: read_timeout is the
 * whole read).
 */
static ssize_t read_cancellable(fuse_req_t req, struct sfs_fs *fs,
				fuse_ino_t ino, char *buf, size_t size, off_t off,
				int64_t t0, struct source_span *sp, unsigned *nsp,
				unsigned max)
{
	struct source_cancel c = { .since = t0 };
	ssize_t n;

	file_span(fs, ino, &c);
	fuse_req_interrupt_func(req, read_interrupted, &c);
	source_cancel_scope(&c);
	n = sp ? fs->layout.ops->spans(fs->layout.priv, ino, buf, size, (uint64_t)off,
				       sp, max, nsp) :
		 fs->layout.ops->read(fs->layout.priv, ino, buf, size, (uint64_t)off);
	source_cancel_scope(NULL);
	fuse_req_interrupt_func(req, NULL, NULL);
	return n;
}

/* What the layout's read of `size` bytes gave (n): size is already cut to
 * st_size, so fewer bytes means the layout could not make bytes the file
 * claims; a short reply would be taken by the kernel as a new end of file,
 * so it is EIO instead. */
static ssize_t whole_or_eio(fuse_ino_t ino, size_t size, off_t off, ssize_t n)
{
	if (n < 0 || (size_t)n == size)
		return n;
	sfs_err("inode %llu: read of %zu bytes at offset %lld gave %zd",
		(unsigned long long)ino, size, (long long)off, n);
	return -EIO;
}

/* Replies with the bytes the layout makes; or, in no-wait mode (`wait`
 * 0), returns -EAGAIN without replying when they are not in memory yet.
 * t0: when the request arrived (read_cancellable). */
static int read_copy(fuse_req_t req, struct sfs_fs *fs, fuse_ino_t ino,
		     size_t size, off_t off, int wait, int64_t t0)
{
	char stack[STACK_READ], *buf = stack;
	ssize_t n;
	int rc;

	if ((rc = clamp_to_size(fs, ino, &size, off)) < 0) {
		ctl_read_done(&fs->ctl, (uint64_t)off, 0, 0, 1);
		fuse_reply_err(req, -rc);
		return 0;
	}
	if (size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return 0;
	}
	/* a big reply's buffer is one the mount keeps (zpool): 1 MiB READs
	 * (-o readahead) malloc'ed and freed in turn by every thread grew
	 * glibc's arenas by tens of MiB in the soak */
	if (size > sizeof(stack) && !(buf = zpool_get(fs->replies, size))) {
		fuse_reply_err(req, ENOMEM);
		return 0;
	}
	n = wait ? read_cancellable(req, fs, ino, buf, size, off, t0, NULL, NULL, 0) :
		   fs->layout.ops->read(fs->layout.priv, ino, buf, size, (uint64_t)off);
	if (n == -EAGAIN) {
		rc = -EAGAIN;
		goto out;
	}
	n = whole_or_eio(ino, size, off, n);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	ctl_read_done(&fs->ctl, (uint64_t)off, n < 0 ? 0 : (size_t)n, 0, n < 0);
out:
	if (buf != stack)
		zpool_put(fs->replies, buf, size);
	return rc;
}

/*
 * Sends the spans the layout made (sp[0..n), layout.h's spans): ranges of
 * sources spliced, the bytes between them (tar headers, padding, members
 * that are copied) from buf.  libfuse writes the memory pieces into its
 * pipe and splices the others (fuse_send_data_iov, fuse_buf_copy); when
 * its pipe is too small it copies the whole reply instead, still right.
 * Returns 1 when a span was a source's (the reply splices), 0 when every
 * byte is in buf, or -EIO.
 */
static int reply_spans(fuse_req_t req, char *buf, const struct source_span *sp,
		       unsigned n, size_t size)
{
	struct {
		struct fuse_bufvec bv;
		struct fuse_buf more[SPANS_MAX - 1];	/* bv.buf[1..] */
	} v = { .bv = FUSE_BUFVEC_INIT(0) };
	struct fuse_buf *b = v.bv.buf;
	uint64_t fdbase;
	size_t sum = 0;
	unsigned i, from_src = 0;
	int fd;

	for (i = 0; i < n; i++, b++) {
		*b = (struct fuse_buf){ .size = sp[i].len };
		sum += sp[i].len;
		if (!sp[i].src) {
			b->mem = buf + sp[i].off;
			continue;
		}
		if (source_fd(sp[i].src, &fd, &fdbase) < 0)
			return -EIO;	/* cannot happen: the layout checked */
		b->flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		b->fd = fd;
		b->pos = (off_t)(fdbase + sp[i].off);
		from_src = 1;
	}
	if (sum != size || n == 0)
		return -EIO;	/* the spans must be the reply, byte for byte */
	v.bv.count = n;
	if (from_src)
		fuse_reply_data(req, &v.bv, FUSE_BUF_SPLICE_MOVE);
	else
		fuse_reply_buf(req, buf, size);
	return from_src;
}

/*
 * How many spans a reply of `size` bytes may have and still be spliced;
 * 0: none (copy it).  libfuse 3.14 (fuse_send_data_iov) splices a reply
 * only when its pipe grows to a page per buffer plus header and reply
 * (F_SETPIPE_SZ, which rounds up to a power of two pages), and an
 * unprivileged process's pipe stops at pipe-max-size (1 MiB by default;
 * root in a container may lack CAP_SYS_RESOURCE too): so never a 1 MiB
 * READ (-o readahead's default for root), which libfuse would copy after
 * all, through a buffer of its own.  And the pipe must not fill: each
 * span takes up to two slots more than its bytes' pages (a range of a
 * file starts and ends inside a page; a write after a spliced page takes
 * a slot of its own), else libfuse copies what did not fit.
 */
static unsigned spans_max(const struct sfs_fs *fs, size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t body = (size + FUSE_OUT_HEADER + page - 1) / page, asked, slots;
	unsigned n;

	if (size < SPLICE_MIN)
		return 0;
	for (n = SPANS_MAX; n >= 3; n--) {
		asked = n + 2 + body;	/* libfuse: iovecs + buffers + 1 */
		for (slots = 1; slots < asked; slots *= 2)
			;
		if (slots * page <= fs->pipe_max && 1 + body + 2 * (size_t)n <= slots)
			return n;
	}
	return 0;		/* room for no span of a source */
}

/*
 * The file is generated bytes and ranges of sources (layout.h's spans: a
 * virtual tar shard): splice the ranges, copy the rest.  -ENOTSUP: the
 * layout has no spans for it, or the read is too short or too long to
 * splice (SPLICE_MIN, spans_max); the caller copies.  t0: when the
 * request arrived.
 */
static int read_spans(fuse_req_t req, struct sfs_fs *fs, fuse_ino_t ino,
		      size_t size, off_t off, int64_t t0)
{
	struct source_span sp[SPANS_MAX];
	char *buf;
	unsigned n = 0, max;
	ssize_t got;
	int rc;

	if ((rc = clamp_to_size(fs, ino, &size, off)) < 0)
		return rc;
	if (!(max = spans_max(fs, size)))
		return -ENOTSUP;
	if (!(buf = zpool_get(fs->replies, size)))
		return -ENOMEM;
	got = read_cancellable(req, fs, ino, buf, size, off, t0, sp, &n, max);
	if (got == -ENOTSUP) {
		rc = -ENOTSUP;
		goto out;
	}
	got = whole_or_eio(ino, size, off, got);
	rc = got < 0 ? (int)got : reply_spans(req, buf, sp, n, size);
	if (rc >= 0)
		ctl_read_done(&fs->ctl, (uint64_t)off, size, rc, 0);
	rc = rc < 0 ? rc : 0;
out:
	zpool_put(fs->replies, buf, size);
	return rc;
}

/* A read that may wait for the disk: splice when the file is an extent,
 * or made of spans.  t0: when the request arrived. */
static void read_waiting(fuse_req_t req, struct sfs_fs *fs, fuse_ino_t ino,
			 size_t size, off_t off, int64_t t0)
{
	int rc;

	rc = fs->layout.ops->extent ? read_extent(req, fs, ino, size, off) : -ENOTSUP;
	if (rc == -ENOTSUP && fs->layout.ops->spans)
		rc = read_spans(req, fs, ino, size, off, t0);
	if (rc != -ENOTSUP) {
		if (rc < 0) {
			ctl_read_done(&fs->ctl, (uint64_t)off, 0, 0, 1);
			fuse_reply_err(req, -rc);
		}
		return;
	}
	if (read_copy(req, fs, ino, size, off, 1, t0) == -EAGAIN)
		fuse_reply_err(req, EIO);	/* cannot happen: waiting allowed */
}

static void read_job(void *ctx, const struct worker_job *job)
{
	struct sfs_fs *fs = ctx;

	read_waiting(job->req, fs, job->ino, job->size, (off_t)job->off, job->t0);
	ctl_waited(&fs->ctl, sfs_now_ns() - job->t0);
}

/* 1 when the read is one read_spans answers (a big read, not too big,
 * of a file made of spans: a virtual shard) */
static int read_has_spans(struct sfs_fs *fs, fuse_ino_t ino, size_t size)
{
	unsigned n;

	return spans_max(fs, size) && fs->layout.ops->spans &&
	       fs->layout.ops->spans(fs->layout.priv, ino, NULL, 0, 0, NULL, 0, &n) == 0;
}

/* A read of a control file: its snapshot's bytes (ctl.h). */
static void read_ctl(fuse_req_t req, struct sfs_fs *fs, fuse_ino_t ino,
		     size_t size, off_t off)
{
	char stack[STACK_READ];
	ssize_t n;

	if (size > sizeof(stack))
		size = sizeof(stack);	/* a short read: the kernel asks again */
	n = ctl_read(&fs->ctl, ino, stack, size, (uint64_t)off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, stack, (size_t)n);
}

/*
 * With workers, the session thread first tries to answer from memory (no
 * splice: for a cached file's bytes a copy costs the same) and queues the
 * read only when it would wait for I/O.  A big read of a shard made of
 * spans is queued at once: its members are spliced, not copied, cached or
 * not (a splice of pages not yet read waits for the disk, which the session
 * thread must not), and copying them here cost a shard streamed twice the
 * daemon CPU of the same bytes as files (docs/benchmarks.md).
 */
static void sfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct sfs_fs *fs = fs_of(req);
	struct worker_job job;
	int rc;

	(void)fi;
	ctl_op(&fs->ctl, CTL_READ);
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (ctl_is(ino)) {
		read_ctl(req, fs, ino, size, off);
		return;
	}
	ctl_read_asked(&fs->ctl, size);
	if (!fs->io) {
		read_waiting(req, fs, ino, size, off, sfs_now_ns());
		return;
	}
	if (!read_has_spans(fs, ino, size)) {
		source_nowait(1);
		rc = read_copy(req, fs, ino, size, off, 0, 0);
		source_nowait(0);
		if (rc != -EAGAIN)
			return;
	}
	/* Every read that would wait goes to a worker, even when it is the
	 * only request waiting: done here, it held up the requests that
	 * arrived during its disk (or network) wait, so several readers got
	 * one read in flight at a time (4 threads read cold ImageNet members
	 * at 0.62-0.80x the extracted tree).  A worker's wake-up costs a few
	 * microseconds against the device's hundreds. */
	job = (struct worker_job){ read_job, req, ino, (uint64_t)off, size,
				   sfs_now_ns() };
	workers_submit(fs->io, &job);
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
