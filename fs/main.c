/*
 * main.c - the samplefs daemon:
 *
 *     samplefs [FUSE options] [-o samplefs options] SOURCE MOUNTPOINT
 *
 * also run as `mount -t fuse.samplefs SOURCE MNT -o OPTS` or from fstab
 * through mount.fuse3.  Everything that can fail because of the source or
 * the options (parsing, opening the layout, building its index) happens
 * before mounting, so such errors print one line and exit non-zero with
 * nothing mounted.  The mount is always read-only.
 *
 * What can be checked cheaply (the mount point, /dev/fuse, the index
 * directory) is checked before the index build, which can take minutes.
 * In the background (no -f) the process forks before the build; the
 * parent waits until the child serves the mount (its first request, INIT,
 * answered) or fails, and exits with the child's status, passing on
 * SIGINT, SIGTERM and SIGHUP meanwhile (stops_build: those ignored at
 * start); the child ends too should the parent die first (kill -9).  The
 * child's messages reach the terminal until then.  Those signals are
 * heeded from the first instruction on: before the mount serves they end
 * the process (by the signal, as the shell expects of Ctrl-C), removing
 * an unfinished index build's temporary files and leaving nothing
 * mounted; once it serves, they unmount and the exit status is 0.  Ones
 * ignored at start are heeded too when a process sends them (a script's
 * `kill -INT $!`), not from the terminal (stops_build).
 */
#include "ops.h"
#include "opts.h"
#include "readahead.h"
#include "clock.h"
#include "log.h"

#include "index/index.h"
#include "io/codecs/zpool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

/* The largest READ: libfuse 3.14 negotiates max_pages 256 (-o readahead). */
#define REPLY_MAX (1u << 20)
#define MMAP_MIN  (256 << 10)	/* see main */

#define TIMEOUT 86400.0	/* the tree never changes while mounted */

static void usage(const char *prog)
{
	printf("usage: %s [options] SOURCE MOUNTPOINT\n\n", prog);
	sfs_opts_help();
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

/* Layouts keep one fd per source file open: allow as many as we may. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * Read-only, and named after the source (or -o fsname=) in /proc/mounts
 * and df (the subtype, "samplefs", is added by fuse_parse_cmdline).
 */
static int add_mount_args(struct fuse_args *args, const char *source)
{
	char *esc = NULL, *arg = NULL;
	int rc = -1;

	if (fuse_opt_add_opt_escaped(&esc, source) ||
	    asprintf(&arg, "-oro,fsname=%s", esc) < 0) {
		arg = NULL;
		goto out;
	}
	rc = fuse_opt_add_arg(args, arg);
out:
	free(esc);
	free(arg);
	return rc;
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *userdata)
{
	return devpoll_read(&((struct sfs_fs *)userdata)->dp, fd, buf, len);
}

/*
 * -o sessions=N (N > 1) with poll: libfuse's multi-threaded loop with N
 * threads, none left to end when idle, each reading its own clone of the
 * device (clone_fd: the kernel hands a request to whichever clone is
 * read first, and its reply goes back on the fd it came from); each
 * thread polls as the single one does (devpoll.h).  libfuse starts the
 * threads as requests find none idle, up to N.
 */
static int loop_sessions(struct fuse_session *se, unsigned n)
{
	struct fuse_loop_config *cfg;
	int rc;

	if (!(cfg = fuse_loop_cfg_create()))
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg, n);
	fuse_loop_cfg_set_idle_threads(cfg, n);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

/*
 * -o poll (the default): one session thread (-o sessions: N, see
 * loop_sessions) that polls the device and answers from memory, and
 * workers for the reads that wait for the disk (none with -s).  On a VM
 * this halves the cost of a round trip, because waking a sleeping thread
 * on another vCPU is what a round trip mostly costs there (see
 * devpoll.h).  -o poll=0: libfuse's own loops.
 */
static int run_polling(struct sfs_fs *fs, struct fuse_session *se,
		       const struct fuse_cmdline_opts *c)
{
	struct workers io;
	int rc;

	if ((rc = devpoll_install(&fs->dp, se, fs->opts.poll_us, dev_read)) < 0) {
		sfs_err("cannot poll /dev/fuse: %s", strerror(-rc));
		return -1;
	}
	if (!c->singlethread && fs->opts.workers) {
		if ((rc = workers_start(&io, fs->opts.workers, fs->opts.poll_us, fs)) < 0) {
			sfs_err("cannot start %u worker threads: %s",
				fs->opts.workers, strerror(-rc));
			devpoll_uninstall(&fs->dp);
			return -1;
		}
		fs->io = &io;
	}
	if (c->singlethread || fs->opts.sessions <= 1)
		rc = fuse_session_loop(se);
	else
		rc = loop_sessions(se, fs->opts.sessions);
	/* the loop resets the session on its way out: mark it ended again so
	 * replies of reads still queued fail quietly (the kernel is gone) */
	fuse_session_exit(se);
	if (fs->io)
		workers_stop(&io);
	fs->io = NULL;
	devpoll_uninstall(&fs->dp);
	return rc;
}

static int run_loop(struct sfs_fs *fs, struct fuse_session *se,
		    const struct fuse_cmdline_opts *c)
{
	struct fuse_loop_config *cfg;
	int rc;

	if (fs->opts.poll_us)
		return run_polling(fs, se, c);
	if (c->singlethread)
		return fuse_session_loop(se);
	if (!(cfg = fuse_loop_cfg_create()))
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)c->clone_fd);
	if (c->max_idle_threads != UINT_MAX)	/* UINT_MAX: not given */
		fuse_loop_cfg_set_idle_threads(cfg, c->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, c->max_threads);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

/*
 * The mount's read-ahead window (-o readahead, fs/readahead.h), once INIT is
 * answered (its reply may lower the window: set after it).  Not setting it
 * is not fatal: reads are then 128-512 KiB each, as on any FUSE mount.  The
 * default (root's) says nothing when it fails; a value given says why.
 */
static void set_readahead(const struct fs_opts *o, const char *mnt)
{
	char path[128] = "the mount's read_ahead_kb";
	int rc;

	if (!o->readahead_kib)
		return;
	rc = readahead_set(mnt, o->readahead_kib, path, sizeof(path));
	if (rc < 0 && readahead_given(o))
		sfs_warn("-o readahead=%u: cannot write %s: %s%s; files read in "
			 "order come in READs of 128-512 KiB (the kernel's "
			 "window)", o->readahead_kib, path,
			 strerror(-rc), rc == -EACCES || rc == -EPERM ?
			 " (only root may)" : "");
}

/* ---- checks before the build ---- */

/* Whether mnt is the root of a mount (statx's attribute, Linux >= 5.8;
 * before that: a device differing from its parent's). */
static int is_mount_root(const char *mnt, const struct statx *sx)
{
	char *parent;
	struct stat st;
	int root;

	if (sx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		return !!(sx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
	if (asprintf(&parent, "%s/..", mnt) < 0)
		return 0;
	root = stat(parent, &st) == 0 &&
	       makedev(sx->stx_dev_major, sx->stx_dev_minor) != st.st_dev;
	free(parent);
	return root;
}

/*
 * A directory, not mounted already (unless -o stack), not the dead mount
 * of a daemon gone: mounting on a file gives a root that answers EIO, and
 * over a mount hides it.
 */
static int check_mountpoint(const char *mnt, int stack)
{
	struct statx sx;

	if (statx(AT_FDCWD, mnt, AT_NO_AUTOMOUNT, STATX_TYPE, &sx) < 0) {
		if (errno == ENOTCONN)
			sfs_err("%s: Transport endpoint is not connected: the daemon that "
				"served it has died; run 'fusermount3 -u %s' first", mnt, mnt);
		else
			sfs_err("%s: mount point: %s", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sx.stx_mode)) {
		sfs_err("%s: not a directory: the mount point must be one", mnt);
		return -1;
	}
	if (!stack && is_mount_root(mnt, &sx)) {
		sfs_err("%s: already mounted: unmount it first ('fusermount3 -u %s' or "
			"umount), or give -o stack to mount over it", mnt, mnt);
		return -1;
	}
	return 0;
}

/* Checked as the mount will be: fusermount3 opens it as the real user. */
static int check_fuse_device(void)
{
	if (access("/dev/fuse", R_OK | W_OK) == 0)
		return 0;
	if (errno == ENOENT)
		sfs_err("/dev/fuse: %s: is the fuse module loaded? (modprobe fuse)",
			strerror(errno));
	else
		sfs_err("/dev/fuse: %s: this user cannot mount FUSE file systems "
			"(it needs read-write access to /dev/fuse)", strerror(errno));
	return -1;
}

/* ---- signals during the build ---- */

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

/* Which stop signals were ignored when the command started (set once,
 * before the fork; read by the handler). */
static volatile sig_atomic_t ignored_at_start[NSTOP];

static void stop_signals_note(void)
{
	struct sigaction sa;

	for (size_t i = 0; i < NSTOP; i++)
		ignored_at_start[i] = sigaction(stop_signals[i], NULL, &sa) == 0 &&
				      sa.sa_handler == SIG_IGN;
}

/*
 * Whether a stop signal, sent as `code` says (si_code), ends the build.
 * One ignored at start stays ignored when the terminal sends it
 * (SI_KERNEL: the Ctrl-C a shell shields its scripts' background jobs from
 * by ignoring SIGINT), but not when a process does: `kill PID` from that
 * script is a request to stop.  SIGHUP ignored at start (nohup) is never
 * caught: a shell passes its hangup on to its jobs with kill(2).
 */
static int stops_build(int sig, int code)
{
	for (size_t i = 0; i < NSTOP; i++)
		if (stop_signals[i] == sig)
			return !ignored_at_start[i] || (sig != SIGHUP && code != SI_KERNEL);
	return 0;
}

/* 1 while layout_open runs: on_build_signal's message says so. */
static volatile sig_atomic_t building;
/* The stop signal heeded once serving handlers are in (0: none), and the
 * session it ends: on_serve_signal's. */
static volatile sig_atomic_t stop_sig;
static struct fuse_session *volatile serving_se;

/* Removes the build's temporary files, says so, and ends the process by
 * the signal (nothing is mounted yet).  Async-signal-safe calls only. */
static void on_build_signal(int sig, siginfo_t *si, void *ctx)
{
	static const char msg[] = "samplefs: interrupted: index build stopped, "
				  "its temporary files removed\n";
	static const char before[] = "samplefs: interrupted: nothing mounted\n";

	(void)ctx;
	if (!stops_build(sig, si->si_code))
		return;
	index_remove_unfinished();
	if (building)
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	else
		(void)!write(STDERR_FILENO, before, sizeof(before) - 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* From the mount on: ends the session (as libfuse's handler does), so the
 * loop, or the mount's setup, stops and unmounts. */
static void on_serve_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (!stops_build(sig, si->si_code))
		return;
	stop_sig = sig;
	if (serving_se)
		fuse_session_exit(serving_se);
}

/*
 * Installs on_build_signal for the stop signals, ignored ones too (it
 * tells which of their senders to heed: stops_build), but SIGHUP under
 * nohup; old[] keeps what to restore.
 */
static void signals_install(const struct sigaction old[NSTOP],
			    void (*fn)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa = { .sa_sigaction = fn, .sa_flags = SA_SIGINFO | flags };
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NSTOP; i++)
		sigaddset(&sa.sa_mask, stop_signals[i]);
	for (i = 0; i < NSTOP; i++)
		if (old[i].sa_handler == SIG_DFL ||
		    (old[i].sa_handler == SIG_IGN && stop_signals[i] != SIGHUP))
			sigaction(stop_signals[i], &sa, NULL);
}

static void build_signals_install(struct sigaction old[NSTOP])
{
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], NULL, &old[i]);
	/* SA_RESTART: a signal it lets pass must not fail the build's calls */
	signals_install(old, on_build_signal, SA_RESTART);
}

/*
 * From on_build_signal to on_serve_signal, before the mount, with the stop
 * signals blocked meanwhile (one sent then is heeded by the new handler),
 * and libfuse's SIGPIPE handler; libfuse leaves the stop signals to ours
 * (it sets only those at SIG_DFL).  No SA_RESTART: the session's reads must
 * see EINTR.  0, or -1 when libfuse's fails.
 */
static int serve_signals_install(struct fuse_session *se,
				 const struct sigaction old[NSTOP])
{
	sigset_t stops, mask;
	int rc;

	sigemptyset(&stops);
	for (size_t i = 0; i < NSTOP; i++)
		sigaddset(&stops, stop_signals[i]);
	sigprocmask(SIG_BLOCK, &stops, &mask);
	serving_se = se;
	signals_install(old, on_serve_signal, 0);
	rc = fuse_set_signal_handlers(se);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	return rc;
}

/* ---- going to the background ---- */

/*
 * The parent's part: waits for the child's byte (sent once it serves the
 * mount) or its end, sending it the stop signals it gets meanwhile (they
 * are blocked here and read from a signalfd).  Returns the exit status;
 * a child ended by a signal ends the parent by the same signal.
 */
/* Passes on to child the stop signals pending on sfd: 1 if one was. */
static int stop_pending(int sfd, pid_t child)
{
	struct signalfd_siginfo si;
	struct pollfd p = { .fd = sfd, .events = POLLIN };
	int sent = 0;

	while (poll(&p, 1, 0) == 1 &&
	       read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (stops_build((int)si.ssi_signo, si.ssi_code)) {
			kill(child, (int)si.ssi_signo);
			sent = 1;
		}
	return sent;
}

static int wait_for_child(pid_t child, int rfd, const sigset_t *stops)
{
	struct signalfd_siginfo si;
	struct pollfd p[2];
	int sfd = signalfd(-1, stops, SFD_CLOEXEC), status = 0, served = 0;
	ssize_t n = 0;
	char ok;

	for (;;) {
		p[0] = (struct pollfd){ .fd = rfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN) &&
		    read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
		    stops_build((int)si.ssi_signo, si.ssi_code))
			kill(child, (int)si.ssi_signo);
		if (p[0].revents) {
			n = read(rfd, &ok, 1);	/* 0: the child ended unserved */
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
	}
	/* one that came with the byte is heeded too: passed on, and the
	 * child's end (its unmount) awaited */
	if (n == 1 && sfd >= 0 && stop_pending(sfd, child))
		n = served = 2;
	if (sfd >= 0)
		close(sfd);
	close(rfd);
	if (n == 1)
		return 0;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		sigprocmask(SIG_UNBLOCK, stops, NULL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	if (served && WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;	/* served, then unmounted by the signal */
	return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
}

/*
 * Forks: returns in the child (0, its end of the pipe in *wfd) or, in the
 * parent, the status to exit with (> 0 set in *parent_status, returns 1).
 * The stop signals are blocked across the fork; the child unblocks them
 * once its build handlers are in place.  The parent, `self`, reads them
 * from a signalfd, ignored ones too (stops_build tells which to pass on).
 * The child gets SIGTERM should the parent die (kill -9) before the mount
 * serves: nobody would be left to report to.
 */
static int go_background(pid_t self, int *wfd, int *parent_status,
			 sigset_t *stops, sigset_t *oldmask)
{
	int fds[2];
	pid_t pid;

	sigemptyset(stops);
	for (size_t i = 0; i < NSTOP; i++)
		sigaddset(stops, stop_signals[i]);
	if (pipe2(fds, O_CLOEXEC) < 0) {
		sfs_err("cannot go to the background: pipe: %s", strerror(errno));
		return -1;
	}
	sigprocmask(SIG_BLOCK, stops, oldmask);
	pid = fork();
	if (pid < 0) {
		sfs_err("cannot go to the background: fork: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid > 0) {
		close(fds[1]);
		for (size_t i = 0; i < NSTOP; i++)	/* blocked: queued, not acted on */
			if (ignored_at_start[i] && stop_signals[i] != SIGHUP)
				signal(stop_signals[i], SIG_DFL);
		*parent_status = wait_for_child(pid, fds[0], stops);
		return 1;
	}
	close(fds[0]);
	/* checked after prctl: a parent gone before it sent no signal */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != self) {
		close(fds[1]);
		return -1;
	}
	setsid();	/* out of the terminal's process group: Ctrl-C comes
			   through the parent */
	*wfd = fds[1];
	return 0;
}

/*
 * Serving: stdio to /dev/null and out of the caller's directory, as
 * fuse_daemonize does, then the byte that lets the parent, `starter`,
 * exit 0.  -1 if it has died meanwhile (its SIGTERM ignored at start):
 * nobody asked for the mount any more.
 */
static int detach(int wfd, pid_t starter)
{
	int fd, ret = -1;

	prctl(PR_SET_PDEATHSIG, 0);	/* the parent's exit 0 must not end us */
	if (getppid() != starter) {
		sfs_err("the samplefs command that started this mount has ended: "
			"unmounting");
		goto out;
	}
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (chdir("/") < 0)
		sfs_warn("chdir /: %s", strerror(errno));
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	ret = write(wfd, "", 1) == 1 ? 0 : -1;	/* EPIPE: SIGPIPE is ignored */
out:
	close(wfd);
	return ret;
}

/*
 * Answers the kernel's first request, INIT, before the mount is reported
 * done: libfuse refuses some settings only there (it ends the session),
 * and a background mount must not have exited 0 by then.
 */
static int serve_init(struct fuse_session *se, const char *mnt)
{
	struct fuse_buf buf = { .mem = NULL };
	int rc;

	do
		rc = fuse_session_receive_buf(se, &buf);
	while (rc == -EINTR && !fuse_session_exited(se));
	if (rc > 0)
		fuse_session_process_buf(se, &buf);
	free(buf.mem);
	if (rc > 0 && !fuse_session_exited(se))
		return 0;
	if (stop_sig)
		return -1;	/* main says so */
	sfs_err("%s: the mount ended before serving: %s", mnt,
		rc < 0 ? strerror(-rc) : "refused at FUSE INIT (see above)");
	return -1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts = {0};
	struct fuse_session *se = NULL;
	struct sfs_fs fs = {0};
	struct sigaction old_sa[NSTOP];
	sigset_t stops, oldmask;
	int ret = 1, rc, mounted = 0, handlers = 0, private_idx = 0;
	int background = 0, wfd = -1, serving = 0;
	pid_t starter = getpid();
	struct source_info seen;	/* layout_choose's look, for layout_open */
	const char *layout;
	double build_s;

	/* first: a stop signal from now on ends us (script's kill -INT $!) */
	stop_signals_note();
	build_signals_install(old_sa);
	/* Buffers of 256 KiB and more always mmap'ed, and unmapped when freed.
	 * glibc otherwise raises the threshold to the largest block freed, and
	 * then serves 1 MiB blocks (libfuse's reply buffers with 1 MiB READs,
	 * -o readahead) from each thread's arena, which grew by tens of MiB
	 * over a 10 s soak and never shrank. */
	mallopt(M_MMAP_THRESHOLD, MMAP_MIN);
	fs.uid = getuid();
	fs.gid = getgid();
	fs.timeout = TIMEOUT;
	rdplus_init(&fs.rdp);
	if (sfs_opts_parse(&args, &fs.opts))
		goto out;
	if (fuse_parse_cmdline(&args, &copts)) {
		/* libfuse said what failed; say what to do about a dead mount */
		if (fs.opts.mountpoint && access(fs.opts.mountpoint, F_OK) < 0 &&
		    errno == ENOTCONN)
			check_mountpoint(fs.opts.mountpoint, 1);
		goto out;
	}
	if (copts.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out;
	}
	if (copts.show_version) {
		printf("samplefs version %s\n", SAMPLEFS_VERSION);
		printf("FUSE library version %s\n", fuse_pkgversion());
		fuse_lowlevel_version();
		ret = 0;
		goto out;
	}
	if (!fs.opts.core.source || !copts.mountpoint) {
		sfs_err("usage: %s [options] SOURCE MOUNTPOINT (see --help)", argv[0]);
		goto out;
	}
	/* before the layout, so its warnings reach -o log=FILE too */
	if (sfs_log_open(copts.mountpoint, fs.opts.log_file))
		goto out;
	if (fs.opts.readahead_kib > READAHEAD_MAX_KIB) {
		sfs_err("-o readahead=%u: at most %u KiB", fs.opts.readahead_kib,
			READAHEAD_MAX_KIB);
		goto out;
	}
	if (fs.opts.workers > WORKERS_MAX || fs.opts.poll_us > 1000000) {
		sfs_err("-o workers=%u, poll=%u: at most %d threads and 1000000 us",
			fs.opts.workers, fs.opts.poll_us, WORKERS_MAX);
		goto out;
	}
	if (fs.opts.core.shard_size == 0 || fs.opts.core.shard_size > UINT32_MAX) {
		sfs_err("-o shard_size=%llu: from 1 to %u samples",
			(unsigned long long)fs.opts.core.shard_size, UINT32_MAX);
		goto out;
	}
	if (check_mountpoint(copts.mountpoint, fs.opts.stack) || check_fuse_device() ||
	    index_dir_prepare(&fs.opts.core, &private_idx))
		goto out;
	if (sfs_opts_absolute_source(&fs.opts.core) ||
	    !(layout = layout_choose(&fs.opts.core, &seen)) ||
	    sfs_opts_check_layout(&fs.opts, layout) ||
	    add_mount_args(&args, fs.opts.fsname ? fs.opts.fsname : fs.opts.core.source))
		goto out;
	/* before the layout: libfuse rejects unknown options here */
	se = fuse_session_new(&args, &sfs_ll_ops, sizeof(sfs_ll_ops), &fs);
	if (!se)
		goto out;
	raise_nofile();
	if (!copts.foreground) {
		rc = go_background(starter, &wfd, &ret, &stops, &oldmask);
		if (rc > 0)
			private_idx = 0;	/* the child's to remove */
		if (rc)
			goto out;
		background = 1;
	}
	if (background)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	build_s = sfs_now_s();
	building = 1;
	rc = layout_open(&fs.opts.core, &seen, &fs.layout);
	building = 0;
	if (rc || sfs_opts_check_data(&fs.opts, fs.layout.env ?
				      source_env_decompressed(fs.layout.env) : 0))
		goto out;
	/* READs are at most 1 MiB (libfuse 3.14's max_pages, 256); a buffer
	 * for each thread that may copy a reply at once, kept */
	if (ctl_init(&fs.ctl, &fs.layout, &fs.opts, sfs_now_s() - build_s) ||
	    !(fs.replies = zpool_new(REPLY_MAX, fs.opts.workers + 2))) {
		sfs_err("out of memory");
		goto out;
	}
	inval_init(&fs.inval, se, &fs.layout);
	if (serve_signals_install(se, old_sa))
		goto out;
	handlers = 1;
	if (stop_sig || fuse_session_mount(se, copts.mountpoint))
		goto out;
	mounted = 1;
	if (serve_init(se, copts.mountpoint) || stop_sig)
		goto out;
	set_readahead(&fs.opts, copts.mountpoint);
	if (stop_sig)	/* one that came meanwhile: as at serve_init */
		goto out;
	if (background) {
		rc = detach(wfd, starter);
		wfd = -1;
		if (rc)
			goto out;
	}
	sfs_log_serving(!copts.foreground);	/* stderr is /dev/null when daemonised */
	serving = 1;
	rc = run_loop(&fs, se, &copts);
	/* the loop returns the number of a signal that ended it: a clean end */
	ret = rc && rc != SIGINT && rc != SIGTERM && rc != SIGHUP && !stop_sig ? 1 : 0;
out:
	inval_stop(&fs.inval);
	if (wfd >= 0)
		close(wfd);	/* unserved: the parent exits with our status */
	if (mounted)
		fuse_session_unmount(se);
	if (handlers)
		fuse_remove_signal_handlers(se);
	if (se)
		fuse_session_destroy(se);
	ctl_destroy(&fs.ctl);
	zpool_free(fs.replies);
	layout_close(&fs.layout);
	rdplus_destroy(&fs.rdp);
	if (private_idx)
		index_dir_remove_private(fs.opts.core.index_dir);
	sfs_opts_free(&fs.opts);
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	sfs_log_close();
	if (stop_sig && !serving) {	/* as a signal before the mount does */
		(void)!write(STDERR_FILENO, "samplefs: interrupted: nothing mounted\n", 39);
		signal(stop_sig, SIG_DFL);
		raise(stop_sig);
	}
	return ret;
}
