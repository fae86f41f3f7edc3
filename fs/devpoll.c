/*
 * devpoll.c - a short busy poll on /dev/fuse before sleeping (see devpoll.h
 * for why).  It changes only how a request is read from the device; what
 * is done with it and how the reply is written stay libfuse's.
 *
 * Threads: one session thread reads; struct devpoll is read-only once
 * installed.
 */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "devpoll.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

int devpoll_install(struct devpoll *dp, struct fuse_session *se, unsigned usec,
		    ssize_t (*read_cb)(int fd, void *buf, size_t len,
				       void *userdata))
{
	struct fuse_custom_io io;
	int fd = fuse_session_fd(se), fl;

	dp->usec = usec;
	dp->fd = fd;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	memset(&io, 0, sizeof(io));
	io.read = read_cb;
	io.writev = dev_writev;
	return fuse_session_custom_io(se, &io, fd);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int devpoll_pending(const struct devpoll *dp)
{
	struct pollfd pfd = { .fd = dp->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

/*
 * Reads without blocking until a request comes or `usec` pass, then sleeps
 * in poll(2).  EINTR (a signal: unmount) goes back to libfuse, which
 * checks whether the session has ended.
 */
ssize_t devpoll_read(struct devpoll *dp, int fd, void *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long long until = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, buf, len);
		if (n >= 0 || errno != EAGAIN)
			break;
		if (!until)
			until = now_ns() + dp->usec * 1000LL;
		if (dp->usec && now_ns() < until) {
			/* a reader woken onto this CPU must not wait for
			 * the poll to end: let it run and send its request */
			sched_yield();
			continue;
		}
		if (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
			n = -1;
			break;
		}
		until = 0;
	}
	return n;
}
