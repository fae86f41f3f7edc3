/*
 * devpoll.h - reading /dev/fuse with a short busy poll before sleeping.
 *
 * Why: on a virtual machine a FUSE round trip is dominated by waking the
 * sleeping daemon thread on another vCPU (measured here: 70-80 us for a
 * cross-CPU pipe ping-pong, 10 us when one side polls).  A reader that
 * goes file after file sends the next request a few microseconds after
 * the last reply, so a daemon thread that polls the device for a short
 * while after each request catches it without being woken.  After
 * `usec` microseconds without a request it sleeps in poll(2) as usual,
 * so an idle mount costs no CPU.
 *
 * For one session thread (fuse_session_loop), or a few on a machine with
 * many CPUs (-o sessions: fuse_session_loop_mt, each thread on its own
 * clone of the device, made non-blocking at its first read): several
 * threads polling take the CPU the readers need on a small machine
 * (measured: slower than not polling on 2 vCPUs).  Not an event loop of
 * its own: it plugs into libfuse's through fuse_session_custom_io
 * (libfuse >= 3.14), which hands each thread's read its own fd.
 */
#ifndef SFS_FS_DEVPOLL_H
#define SFS_FS_DEVPOLL_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

struct fuse_session;

struct devpoll {
	unsigned usec;		/* how long to poll before sleeping; 0: never */
	int fd;			/* the session's device */
	sigset_t sleep_mask;	/* the thread's mask before install: SIGINT,
				   SIGTERM, SIGHUP come only through ppoll */
};

/*
 * Makes the session's device fd non-blocking and routes its reads through
 * devpoll_read.  `read_cb` is the caller's fuse_custom_io read callback,
 * which finds its struct devpoll from the session's userdata and calls
 * devpoll_read.  Call after fuse_session_mount, from the thread that will
 * run fuse_session_loop: it blocks the signals that end the session in
 * that thread (libfuse's handler only sets a flag, which a poll in
 * progress would not see) and lets them in only while it sleeps in
 * ppoll(2), so an unmount by signal is never missed.  Returns 0 or -errno.
 */
int devpoll_install(struct devpoll *dp, struct fuse_session *se, unsigned usec,
		    ssize_t (*read_cb)(int fd, void *buf, size_t len,
				       void *userdata));

/* Gives the calling thread its signal mask back; after the session loop. */
void devpoll_uninstall(struct devpoll *dp);

/* One request into buf, as read(2) on a blocking device would give it. */
ssize_t devpoll_read(struct devpoll *dp, int fd, void *buf, size_t len);

#endif
