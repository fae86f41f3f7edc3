/*
 * headers.c - the floor of a tar index build: reads every header block of
 * a tar (pread of 512 bytes, seeking over the data), and of each member
 * named "*.tar" as a nested tar, nothing else.  `headers TAR` prints the
 * headers read and the seconds; tools/bench/bigtar.sh compares the build's
 * time with it.  ustar/GNU sizes in octal only (gen_bigtar.py's tars).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long nheaders;

static void walk(int fd, unsigned long long off, unsigned long long end)
{
	unsigned char h[512];

	while (off + 512 <= end && pread(fd, h, 512, (off_t)off) == 512 && h[0]) {
		unsigned long long size = strtoull((const char *)h + 124, NULL, 8);
		size_t n = strnlen((const char *)h, 100);

		nheaders++;
		off += 512;
		if (n > 4 && !memcmp(h + n - 4, ".tar", 4))
			walk(fd, off, off + size);
		off += (size + 511) & ~511ull;
	}
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	int fd = argc == 2 ? open(argv[1], O_RDONLY) : -1;

	if (fd < 0) {
		fprintf(stderr, "usage: headers TAR\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	walk(fd, 0, (unsigned long long)lseek(fd, 0, SEEK_END));
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%llu headers in %.2f s\n", nheaders,
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
