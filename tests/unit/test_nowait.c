/*
 * test_nowait.c - core/nowait: in no-wait mode a read of bytes that are
 * not in the page cache fails with EAGAIN instead of waiting; cached bytes,
 * and every read outside that mode, come back whole.  The oracle for "not
 * cached" is mincore(2) on a mapping of the same file, and for the bytes
 * the pattern the test wrote.
 */
#include <criterion/criterion.h>

#include "io/nowait.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FILE_BYTES (1 << 20)

static char path[64];
static int fd = -1;

static uint8_t byte_at(size_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static void make_file(void)
{
	static uint8_t buf[FILE_BYTES];
	size_t i;

	/* /var/tmp, not /tmp: a disk file system can drop pages; tmpfs cannot */
	strcpy(path, "/var/tmp/sfs-nowait-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
	for (i = 0; i < FILE_BYTES; i++)
		buf[i] = byte_at(i);
	cr_assert(write(fd, buf, FILE_BYTES) == FILE_BYTES);
}

static void remove_file(void)
{
	nowait_set(0);
	if (fd >= 0)
		close(fd);
	unlink(path);
}

/* Drops the file from the page cache; 1 if mincore agrees none is left. */
static int evict(void)
{
	unsigned char vec[FILE_BYTES / 4096];
	void *map;
	size_t i;

	cr_assert(fdatasync(fd) == 0);
	cr_assert(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
	map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert(map != MAP_FAILED);
	cr_assert(mincore(map, FILE_BYTES, vec) == 0);
	munmap(map, FILE_BYTES);
	for (i = 0; i < sizeof(vec); i++)
		if (vec[i] & 1)
			return 0;
	return 1;
}

static void check_bytes(const uint8_t *buf, size_t n, size_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		cr_assert_eq(buf[i], byte_at(off + i), "byte %zu", off + i);
}

/*
 * A no-wait read of bytes just read (so cached).  The kernel may still drop
 * them in between under memory pressure, so an EAGAIN is retried after
 * reading them again; any other result is the function's answer.
 */
static ssize_t nowait_pread_cached(uint8_t *buf, size_t n, off_t off)
{
	ssize_t r = -1;

	for (int attempt = 0; attempt < 5; attempt++) {
		nowait_set(0);
		cr_assert(pread(fd, buf, n, off) >= 0);
		nowait_set(1);
		errno = 0;
		r = nowait_pread(fd, buf, n, off);
		if (!(r < 0 && errno == EAGAIN))
			break;
	}
	return r;
}

TestSuite(nowait, .init = make_file, .fini = remove_file);

Test(nowait, cached_bytes_read_whole_in_either_mode)
{
	uint8_t buf[10000];

	cr_assert_eq(nowait_pread_cached(buf, sizeof(buf), 4000), (ssize_t)sizeof(buf));
	check_bytes(buf, sizeof(buf), 4000);
	nowait_set(0);
	cr_assert_eq(nowait_pread(fd, buf, sizeof(buf), 123456), (ssize_t)sizeof(buf));
	check_bytes(buf, sizeof(buf), 123456);
}

Test(nowait, short_only_at_end_of_file)
{
	uint8_t buf[8192];

	cr_assert_eq(nowait_pread_cached(buf, sizeof(buf), FILE_BYTES - 100), 100);
	check_bytes(buf, 100, FILE_BYTES - 100);
	cr_assert_eq(nowait_pread(fd, buf, sizeof(buf), FILE_BYTES), 0);
}

Test(nowait, uncached_bytes_give_eagain_then_read_when_waiting_is_allowed)
{
	uint8_t buf[3000];

	if (!evict())
		cr_skip_test("this file system kept the pages (mincore): cannot test");
	nowait_set(1);
	errno = 0;
	cr_assert_eq(nowait_pread(fd, buf, sizeof(buf), 500000), -1);
	cr_assert_eq(errno, EAGAIN);
	nowait_set(0);
	cr_assert_eq(nowait_pread(fd, buf, sizeof(buf), 500000), (ssize_t)sizeof(buf));
	check_bytes(buf, sizeof(buf), 500000);
}

static void *read_in_thread(void *arg)
{
	static uint8_t buf[3000];

	(void)arg;
	if (nowait_pread(fd, buf, sizeof(buf), 700000) != (ssize_t)sizeof(buf))
		return NULL;
	return buf;
}

Test(nowait, the_mode_belongs_to_one_thread)
{
	pthread_t t;
	void *got;

	if (!evict())
		cr_skip_test("this file system kept the pages (mincore): cannot test");
	nowait_set(1);	/* this thread only: the other one may wait */
	cr_assert(pthread_create(&t, NULL, read_in_thread, NULL) == 0);
	cr_assert(pthread_join(t, &got) == 0);
	cr_assert(got, "a thread that never asked for no-wait reads got no bytes");
	check_bytes(got, 3000, 700000);
}
