/*
 * devpoll.c - a short busy poll on /dev/fuse before sleeping (see devpoll.h
 * for why).  It changes only how a request is read from the device; what
 * is done with it and how the reply is written stay libfuse's.
 *
 * Threads: one session thread or several (-o sessions: libfuse's
 * multi-threaded loop, each thread reading its own clone of the device);
 * struct devpoll is read-only once installed.  What each thread keeps of
 * its own (its count of reads, which clone it made non-blocking) is
 * thread-local: the threads share no counter to bounce between CPUs.
 */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "devpoll.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}

/* Given, libfuse 3.14 keeps offering splice replies (FUSE_CAP_SPLICE_*). */
static ssize_t dev_splice_send(int fdin, off_t *offin, int fdout, off_t *offout,
			       size_t len, unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int devpoll_install(struct devpoll *dp, struct fuse_session *se, unsigned usec,
		    ssize_t (*read_cb)(int fd, void *buf, size_t len,
				       void *userdata))
{
	struct fuse_custom_io io;
	sigset_t ends;
	int fd = fuse_session_fd(se), fl, rc;

	dp->usec = usec;
	dp->fd = fd;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	memset(&io, 0, sizeof(io));
	io.read = read_cb;
	io.writev = dev_writev;
	io.splice_send = dev_splice_send;	/* never splice_receive: it
						   would bypass devpoll_read */
	if ((rc = fuse_session_custom_io(se, &io, fd)) < 0)
		return rc;
	sigemptyset(&ends);
	sigaddset(&ends, SIGINT);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGHUP);
	return -pthread_sigmask(SIG_BLOCK, &ends, &dp->sleep_mask);
}

void devpoll_uninstall(struct devpoll *dp)
{
	pthread_sigmask(SIG_SETMASK, &dp->sleep_mask, NULL);
}

/* how many requests may pass without a look for session-ending signals */
#define SIGNAL_CHECK_EVERY 256

/* this thread's calls of devpoll_read, and the device fd (its clone of the
 * session's, with -o sessions) it made non-blocking */
static __thread unsigned long reads;
static __thread int nonblocking_fd = -1;

/* libfuse opens each thread's clone of the device blocking; the poll needs
 * it non-blocking.  Once per thread (a thread keeps its clone). */
static int make_nonblocking(struct devpoll *dp, int fd)
{
	int fl;

	if (fd == nonblocking_fd || fd == dp->fd)
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	nonblocking_fd = fd;
	return 0;
}

/*
 * Lets a pending session-ending signal in (ppoll with no wait and the
 * thread's old mask): its handler runs and this returns 1.
 */
static int signal_came(struct devpoll *dp, struct pollfd *pfd)
{
	static const struct timespec no_wait = { 0, 0 };

	return ppoll(pfd, 1, &no_wait, &dp->sleep_mask) < 0 && errno == EINTR;
}

/*
 * Reads without blocking until a request comes or `usec` pass, then sleeps
 * in ppoll(2).  The session-ending signals get in there, while spinning, and
 * every SIGNAL_CHECK_EVERY requests when they never stop coming (a mount
 * under steady load must still end on SIGTERM).  EINTR goes back to
 * libfuse, which then sees the session has ended.  It polls
 * after every request, one that waited for the disk too: the reader's next
 * request comes some 20-50 us after its reply, and waking a sleeping thread
 * costs more than that on a VM (sleeping there cut cold random tar reads by
 * a quarter, measured).
 */
ssize_t devpoll_read(struct devpoll *dp, int fd, void *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long long until = 0;
	ssize_t n;

	if (make_nonblocking(dp, fd) < 0)
		return -1;
	if (++reads % SIGNAL_CHECK_EVERY == 0 && signal_came(dp, &pfd))
		return -1;
	for (;;) {
		n = read(fd, buf, len);
		if (n >= 0 || errno != EAGAIN)
			break;
		if (!until)
			until = sfs_now_ns() + dp->usec * 1000LL;
		if (dp->usec && sfs_now_ns() < until) {
			/* a reader woken onto this CPU must not wait for
			 * the poll to end: let it run and send its request */
			sched_yield();
			if (signal_came(dp, &pfd)) {
				n = -1;
				break;
			}
			continue;
		}
		if (ppoll(&pfd, 1, NULL, &dp->sleep_mask) < 0 && errno == EINTR) {
			n = -1;
			break;
		}
		until = 0;
	}
	return n;
}
