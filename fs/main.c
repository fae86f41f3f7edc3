/*
 * main.c - the samplefs daemon:
 *
 *     samplefs [FUSE options] [-o samplefs options] SOURCE MOUNTPOINT
 *
 * also run as `mount -t fuse.samplefs SOURCE MNT -o OPTS` or from fstab
 * through mount.fuse3.  Everything that can fail because of the source or
 * the options (parsing, opening the layout, building its index) happens
 * before mounting and daemonizing, so such errors print one line and exit
 * non-zero with nothing mounted.  The mount is always read-only.
 */
#include "ops.h"
#include "opts.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define SAMPLEFS_VERSION "0.1"
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
 * -o poll (the default): one session thread that polls the device and
 * answers from memory, and workers for the reads that wait for the disk
 * (none with -s).  On a VM this halves the cost of a round trip, because
 * waking a sleeping thread on another vCPU is what a round trip mostly
 * costs there (see devpoll.h).  -o poll=0: libfuse's own loops.
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
		if ((rc = workers_start(&io, fs->opts.workers, fs)) < 0) {
			sfs_err("cannot start %u worker threads: %s",
				fs->opts.workers, strerror(-rc));
			devpoll_uninstall(&fs->dp);
			return -1;
		}
		fs->io = &io;
	}
	rc = fuse_session_loop(se);
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

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts = {0};
	struct fuse_session *se = NULL;
	struct sfs_fs fs = {0};
	int ret = 1, rc, mounted = 0, handlers = 0;
	const char *layout;

	fs.uid = getuid();
	fs.gid = getgid();
	fs.timeout = TIMEOUT;
	if (sfs_opts_parse(&args, &fs.opts) || fuse_parse_cmdline(&args, &copts))
		goto out;
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
	if (sfs_opts_absolute_source(&fs.opts.core) ||
	    !(layout = layout_choose(&fs.opts.core)) ||
	    sfs_opts_check_layout(&fs.opts, layout) ||
	    add_mount_args(&args, fs.opts.fsname ? fs.opts.fsname : fs.opts.core.source))
		goto out;
	/* before the layout: libfuse rejects unknown options here */
	se = fuse_session_new(&args, &sfs_ll_ops, sizeof(sfs_ll_ops), &fs);
	if (!se)
		goto out;
	raise_nofile();
	if (layout_open(&fs.opts.core, &fs.layout))
		goto out;
	if (fuse_set_signal_handlers(se))
		goto out;
	handlers = 1;
	if (fuse_session_mount(se, copts.mountpoint))
		goto out;
	mounted = 1;
	if (fuse_daemonize(copts.foreground)) {
		sfs_err("%s: cannot go to the background", copts.mountpoint);
		goto out;
	}
	rc = run_loop(&fs, se, &copts);
	/* the loop returns the number of a signal that ended it: a clean end */
	ret = rc && rc != SIGINT && rc != SIGTERM && rc != SIGHUP ? 1 : 0;
out:
	if (mounted)
		fuse_session_unmount(se);
	if (handlers)
		fuse_remove_signal_handlers(se);
	if (se)
		fuse_session_destroy(se);
	layout_close(&fs.layout);
	sfs_opts_free(&fs.opts);
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
