/*
 * nowait.c - see nowait.h.  The only state is one thread-local flag.
 */
#include "io/nowait.h"

#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

static _Thread_local int nowait_mode;

void nowait_set(int on)
{
	nowait_mode = on;
}

ssize_t nowait_pread(int fd, void *buf, size_t n, off_t off)
{
	struct iovec iov;
	size_t done = 0;
	ssize_t got;

	if (!nowait_mode)
		return pread(fd, buf, n, off);
	/* A range partly in the page cache reads short: go on until the end,
	 * end of file, or a page that is not there. */
	while (done < n) {
		iov.iov_base = (char *)buf + done;
		iov.iov_len = n - done;
		got = preadv2(fd, &iov, 1, off + (off_t)done, RWF_NOWAIT);
		if (got < 0 && errno == EINTR)
			continue;
		/* without RWF_NOWAIT support: "would block", so the caller
		 * retries where waiting is allowed */
		if (got < 0 && (errno == EOPNOTSUPP || errno == EINVAL))
			errno = EAGAIN;
		if (got < 0)
			return -1;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	return (ssize_t)done;
}
