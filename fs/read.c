/*
 * read.c - the FUSE READ request (sfs_read, in ops.c's table): the bytes
 * of a file from the layout (core/layouts/layout.h), and how they are
 * sent.  A file that is one range of a source with a descriptor is
 * spliced (read_extent); one made of spans, a virtual shard, has its
 * sources' ranges spliced and the rest copied (read_spans, reply_spans);
 * anything else is copied (read_copy).  With workers (fs->io) the session
 * thread answers what is in memory and queues the reads that would wait
 * (sfs_read); a read that waits runs under a cancel scope that the
 * kernel's FUSE_INTERRUPT sets (read_cancellable): its reader killed or
 * interrupted, it answers EINTR.  Control files (ctl.h) are read here
 * too, from their snapshots.
 *
 * Threads: as ops.c; each request's buffers are its own (stack, or the
 * mount's reply pool, fs->replies, given back before returning).
 *
 * Not for: the other requests, the connection's setup (sfs_init, which
 * reads pipe-max-size for spans_max) (ops.c); formats, sources (core/).
 */
#include "read.h"
#include "clock.h"
#include "log.h"
#include "io/source.h"
#include "io/codecs/zpool.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#define STACK_READ 65536	/* reads up to this use a stack buffer */
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
#define FUSE_OUT_HEADER 16	/* struct fuse_out_header, before every reply */

/*
 * A buffer for a reply of `size` bytes over STACK_READ: always one of the
 * mount's kept buffers of the largest READ's size (zpool), whatever the
 * READ's size.  A READ of 128-768 KiB (every user's but root's) got a
 * malloc of its own, which glibc gave back to the kernel on free and the
 * next one faulted in again: 100 page faults and a TLB shootdown a 512 KiB
 * READ, half the daemon's CPU streaming a shard.
 */
static size_t reply_held(const struct sfs_fs *fs, size_t size)
{
	size_t cap = zpool_cap(fs->replies);

	return size <= cap ? cap : size;
}

static char *reply_get(struct sfs_fs *fs, size_t size)
{
	return zpool_get(fs->replies, reply_held(fs, size));
}

static void reply_put(struct sfs_fs *fs, char *buf, size_t size)
{
	zpool_put(fs->replies, buf, reply_held(fs, size));
}

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
	/* a big reply's buffer is one the mount keeps (reply_get): 1 MiB
	 * READs (-o readahead) malloc'ed and freed in turn by every thread
	 * grew glibc's arenas by tens of MiB in the soak */
	if (size > sizeof(stack) && !(buf = reply_get(fs, size))) {
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
		reply_put(fs, buf, size);
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
 * (F_SETPIPE_SZ, which rounds up to a power of two pages), and a pipe
 * stops at fs->pipe_max (ops.c's pipe_limit: pipe-max-size, 1 MiB by
 * default, unless the process has CAP_SYS_RESOURCE, which root in a
 * container may lack): so a 1 MiB READ (-o readahead's default for root)
 * only with a 2 MiB pipe, else libfuse would copy it after all, through a
 * buffer of its own.  And the pipe must not fill: each
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
	if (!(buf = reply_get(fs, size)))
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
	reply_put(fs, buf, size);
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
void sfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct sfs_fs *fs = fuse_req_userdata(req);
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
