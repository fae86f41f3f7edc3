/*
 * bounded.h - runs a function in a forked child and measures how much the
 * child's resident memory grew (its VmHWM at the end minus its VmRSS at the
 * start), so a unit test can check that a parser given a hostile input
 * stays within a memory bound.  Outside ASan the child also gets an
 * address-space limit of that bound plus its current size, so code that
 * would allocate gigabytes fails there (ENOMEM) instead of taking the
 * machine's memory.  Test-only: asserts instead of returning errors.
 */
#ifndef SFS_TEST_BOUNDED_H
#define SFS_TEST_BOUNDED_H

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define BOUNDED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BOUNDED_ASAN 1
#endif
#endif

/* A "Vm...:" line of /proc/self/status, in bytes; -1 if absent. */
static inline long long bounded_status(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long long kb = -1;
	size_t n = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			kb = atoll(line + n + 1);
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

struct bounded_result {
	long rc;		/* what fn returned */
	long long grew;		/* peak RSS growth, bytes */
	long long vm_grew;	/* peak address space growth, bytes: counts
				 * allocations never written, too */
};

/*
 * fn(arg) in a child limited to `limit` more bytes of address space (not
 * under ASan); its return value and peak RSS growth.  A child that dies
 * (a crash, an abort) fails the test.
 */
static inline struct bounded_result bounded_run(long (*fn)(void *), void *arg,
						long long limit)
{
	struct bounded_result r = { 0, 0, 0 };
	int fds[2], status;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		long long rss0 = bounded_status("VmRSS"), vm0 = bounded_status("VmSize");
#ifndef BOUNDED_ASAN
		struct rlimit rl;
		long long vm = bounded_status("VmSize");

		rl.rlim_cur = rl.rlim_max = (rlim_t)(vm + limit);
		if (vm < 0 || setrlimit(RLIMIT_AS, &rl))
			_exit(3);
#endif
		r.rc = fn(arg);
		r.grew = bounded_status("VmHWM") - rss0;
		r.vm_grew = bounded_status("VmPeak") - vm0;
		if (rss0 < 0 || write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(4);
		_exit(0);
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], &r, sizeof(r)), (ssize_t)sizeof(r),
		     "the bounded child died before reporting");
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the bounded child failed (status 0x%x)", status);
	return r;
}

#endif
