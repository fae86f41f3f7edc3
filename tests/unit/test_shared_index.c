/*
 * test_shared_index.c - one index for every node: the build lock
 * (core/index/lock.c: a live holder is waited for, a dead one's lock is
 * broken), index_load building once among processes sharing an index
 * directory, and prebuilt indexes (core/index/prebuilt.c: saved, fetched
 * into another directory, checked; stale, corrupt or missing ones build
 * instead, or fail with index_only).
 *
 * The oracles are independent of the code under test: a build counter in
 * a file every builder appends to, the section bytes each build writes,
 * and the directory's listing.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "index/index.h"
#include "index/lock.h"
#include "index/prebuilt.h"
#include "log.h"

#define TAG_D INDEX_TAG('D', 'A', 'T', 'A')

static char dir[64];

static void mkdir_tmp(void)
{
	strcpy(dir, "/tmp/sfs-test-shidx.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(shidx, .init = mkdir_tmp, .fini = rm_tmp);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void in_dir(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Files in d whose names contain `part` (NULL: all but . and ..). */
static int count_in(const char *d, const char *part)
{
	DIR *dd = opendir(d);
	struct dirent *e;
	int n = 0;

	if (!dd)
		return -1;
	while ((e = readdir(dd)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    (!part || strstr(e->d_name, part)))
			n++;
	closedir(dd);
	return n;
}

/* ---- the lock ---- */

/* Forks a process that takes the lock of path and holds it for hold_s
 * seconds (then releases it), or until killed (hold_s < 0); returns once
 * it holds it. */
static pid_t fork_holder(const char *path, int hold_s)
{
	struct index_lock *mine;
	int pipefd[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		if (index_lock_take(path, 1, &mine) != 0 || write(pipefd[1], "x", 1) != 1)
			_exit(1);
		if (hold_s < 0)
			for (;;)
				pause();
		sleep((unsigned)hold_s);
		index_lock_release(mine);
		_exit(0);
	}
	cr_assert_eq(read(pipefd[0], &c, 1), 1, "the holder did not take the lock");
	close(pipefd[0]);
	close(pipefd[1]);
	return pid;
}

/* A live holder (heartbeat running, every BEAT_S = 1 s) for longer than
 * stale_s is waited for, not broken; its release wakes the waiter with 1.
 * stale_s is 3 beats: with 1, a heartbeat a moment late on a loaded
 * machine (make test's jobs) broke the lock. */
Test(shidx, live_holder_is_waited_for)
{
	char path[128], lock[160];
	struct index_lock *lk;
	double t0;
	pid_t pid;
	int st;

	in_dir(path, sizeof(path), "x.sfsidx");
	snprintf(lock, sizeof(lock), "%s.lock", path);
	pid = fork_holder(path, 5);	/* past stale_s: the heartbeat keeps it */
	t0 = now();
	cr_assert_eq(index_lock_take(path, 3, &lk), 1, "a live holder's lock was broken");
	cr_assert_null(lk);
	cr_assert_geq(now() - t0, 4.0, "returned before the holder let go");
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_not(exists(lock), "the released lock is still there");
}

/* A holder killed with SIGKILL leaves its lock; it is broken after
 * stale_s without heartbeat, and taken. */
Test(shidx, dead_holder_lock_is_broken)
{
	char path[128], lock[160];
	struct index_lock *lk;
	double t0;
	pid_t pid;

	in_dir(path, sizeof(path), "x.sfsidx");
	snprintf(lock, sizeof(lock), "%s.lock", path);
	pid = fork_holder(path, -1);
	cr_assert(exists(lock));
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert(exists(lock), "a killed holder's lock should stay behind");
	t0 = now();
	cr_assert_eq(index_lock_take(path, 1, &lk), 0);
	cr_assert_not_null(lk);
	cr_assert_lt(now() - t0, 5.0, "the dead lock took too long to break");
	index_lock_release(lk);
	cr_assert_eq(count_in(dir, NULL), 0, "the lock or a moved-aside copy is left");
}

/* ---- index_load: one build among many, and prebuilt indexes ---- */

struct job_arg {
	const char *counter;	/* one byte appended per build */
	uint64_t v;		/* what the build writes, and attach expects */
	double sleep_s;
};

static int build_d(void *arg, struct index_writer *w)
{
	struct job_arg *a = arg;
	int fd = open(a->counter, O_WRONLY | O_APPEND | O_CREAT, 0644);

	if (fd < 0 || write(fd, "b", 1) != 1)
		return -EIO;
	close(fd);
	if (a->sleep_s > 0)
		usleep((useconds_t)(a->sleep_s * 1e6));
	return index_writer_add(w, TAG_D, &a->v, sizeof(a->v));
}

static int attach_d(void *arg, const struct index_map *m, const char *path)
{
	struct job_arg *a = arg;
	uint64_t len;
	const uint64_t *d = index_map_section(m, TAG_D, &len);

	return d && len == sizeof(*d) && *d == a->v ? 0 : -EBADMSG;
}

static long builds(const char *counter)
{
	struct stat st;

	return stat(counter, &st) == 0 ? (long)st.st_size : 0;
}

/* index_load of the job of value v, under options (index_dir, index,
 * index_only) */
static int load(const char *index_dir, const char *prebuilt, int only,
		const char *counter, uint64_t v, double sleep_s)
{
	struct sfs_opts o;
	struct index_fp fp;
	struct job_arg a = { counter, v, sleep_s };
	struct index_job job = { "test", "k", &fp, build_d, attach_d, &a, NULL, NULL };
	struct index_map m;
	int rc;

	sfs_opts_default(&o);
	o.source = "/nonexistent/source";
	o.index_dir = index_dir;
	o.index = prebuilt;
	o.index_only = only;
	o.remote.retries = 1;	/* an unreachable prebuilt index fails at once */
	index_fp_init(&fp, "test");
	index_fp_add_u64(&fp, v);
	rc = index_load(&o, &job, &m);
	if (rc == 0)
		index_map_close(&m);
	return rc;
}

/*
 * The daemon's own wait (index_load, with INDEX_LOCK_STALE_S): a builder
 * killed with SIGKILL holds the next mount for the 10 s docs/sources.md promises
 * ("its build lock, after 10 s without a heartbeat"), then that mount
 * breaks the lock and builds.  Not much longer: a mount held 30 s looks
 * hung; nor shorter than 9 s, which would break live locks of builders
 * stopped a moment (a heartbeat is every second).
 */
Test(shidx, dead_builder_holds_a_mount_about_10_s)
{
	char counter[128], idx[128], path[4096];
	struct sfs_opts o;
	double t0, took;
	pid_t pid;

	in_dir(counter, sizeof(counter), "builds");
	in_dir(idx, sizeof(idx), "idx");
	sfs_opts_default(&o);
	o.source = "/nonexistent/source";	/* as load() has it */
	o.index_dir = idx;
	cr_assert_eq(index_path(&o, "test", "k", path, sizeof(path)), 0);
	pid = fork_holder(path, -1);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	t0 = now();
	cr_assert_eq(load(idx, NULL, 0, counter, 5, 0), 0);
	took = now() - t0;
	cr_assert_eq(builds(counter), 1, "the mount did not build after breaking the lock");
	cr_assert_geq(took, 9.0, "a dead builder's lock was broken after %.1f s, before 10 s", took);
	cr_assert_leq(took, 15.0, "a dead builder's lock held the mount %.1f s; docs/sources.md "
		      "says it is broken after 10 s without a heartbeat", took);
}

/* Six processes at once on one index directory: one build, all load it. */
Test(shidx, many_loaders_build_once)
{
	char counter[128], idx[128];
	pid_t pids[6];
	int i, st;

	in_dir(counter, sizeof(counter), "builds");
	in_dir(idx, sizeof(idx), "idx");
	for (i = 0; i < 6; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(load(idx, NULL, 0, counter, 7, 0.5) == 0 ? 0 : 1);
	}
	for (i = 0; i < 6; i++) {
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "loader %d failed", i);
	}
	cr_assert_eq(builds(counter), 1, "%ld builds, expected 1", builds(counter));
	cr_assert_eq(count_in(idx, NULL), 1, "more than the index is left");
}

/* The files of the prebuilt tests: the build counter, three index
 * directories, the prebuilt index. */
struct files {
	char counter[128], a[128], b[128], c[128], pre[128];
};

/* Names them, builds the index of value 11 in a, saves it to pre. */
static void prebuilt_of_11(struct files *f)
{
	in_dir(f->counter, sizeof(f->counter), "builds");
	in_dir(f->a, sizeof(f->a), "a");
	in_dir(f->b, sizeof(f->b), "b");
	in_dir(f->c, sizeof(f->c), "c");
	in_dir(f->pre, sizeof(f->pre), "pre.sfsidx");
	cr_assert_eq(load(f->a, NULL, 0, f->counter, 11, 0), 0);
	cr_assert_eq(builds(f->counter), 1);
	cr_assert_eq(index_prebuilt_save(f->a, f->pre), 0);
}

/* Saved from one directory, fetched into another: no build there, even
 * with index_only; a second mount maps the copy it fetched. */
Test(shidx, prebuilt_round_trip)
{
	struct files f;

	prebuilt_of_11(&f);
	cr_assert_eq(load(f.b, f.pre, 1, f.counter, 11, 0), 0);
	cr_assert_eq(builds(f.counter), 1, "built although a prebuilt index fits");
	cr_assert_eq(count_in(f.b, ".sfsidx"), 1);
	cr_assert_eq(count_in(f.b, NULL), 1, "a download or lock is left");
	cr_assert_eq(load(f.b, NULL, 1, f.counter, 11, 0), 0);
	cr_assert_eq(builds(f.counter), 1);
}

/* Another source's or options' prebuilt index: a build with a warning,
 * or with index_only an error and no build. */
Test(shidx, stale_prebuilt_builds_or_fails)
{
	struct files f;

	prebuilt_of_11(&f);
	cr_assert_eq(load(f.b, f.pre, 1, f.counter, 12, 0), -ENOENT);
	cr_assert_eq(builds(f.counter), 1, "index_only built");
	cr_assert_eq(load(f.c, f.pre, 0, f.counter, 12, 0), 0);
	cr_assert_eq(builds(f.counter), 2, "a stale prebuilt index was not rebuilt");
}

/* A damaged or missing prebuilt index is never used: its checksum fails. */
Test(shidx, corrupt_or_missing_prebuilt_is_not_used)
{
	struct files f;
	char none[128];
	struct stat st;
	int fd;
	char x;

	prebuilt_of_11(&f);
	in_dir(none, sizeof(none), "none.sfsidx");
	/* one byte of the member's data (its header and the table stay) */
	cr_assert_eq(stat(f.pre, &st), 0);
	fd = open(f.pre, O_RDWR);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &x, 1, st.st_size / 2), 1);
	x ^= 0x40;
	cr_assert_eq(pwrite(fd, &x, 1, st.st_size / 2), 1);
	close(fd);
	cr_assert_eq(load(f.b, f.pre, 1, f.counter, 11, 0), -ENOENT);
	cr_assert_eq(count_in(f.b, ".sfsidx"), 0, "a member of a corrupt file was written");
	cr_assert_eq(load(f.c, none, 1, f.counter, 11, 0), -ENOENT);
	cr_assert_eq(load(f.c, none, 0, f.counter, 11, 0), 0);
	cr_assert_eq(builds(f.counter), 2);
}

/* A prebuilt index that cannot be fetched (nothing listens there): the
 * mount builds, or fails with index_only; it is never an error of its own. */
Test(shidx, unreachable_prebuilt_builds_or_fails)
{
	char counter[128], a[128];
	const char *url = "http://127.0.0.1:1/pre.sfsidx";

	in_dir(counter, sizeof(counter), "builds");
	in_dir(a, sizeof(a), "a");
	cr_assert_eq(load(a, url, 1, counter, 11, 0), -ENOENT);
	cr_assert_eq(builds(counter), 0);
	cr_assert_eq(load(a, url, 0, counter, 11, 0), 0);
	cr_assert_eq(builds(counter), 1);
}

/* The prebuilt file of a directory without indexes is refused. */
Test(shidx, save_needs_indexes)
{
	char pre[128];

	in_dir(pre, sizeof(pre), "pre.sfsidx");
	cr_assert_eq(index_prebuilt_save(dir, pre), -ENOENT);
	cr_assert_not(exists(pre));
}
