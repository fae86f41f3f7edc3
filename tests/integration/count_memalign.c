/*
 * count_memalign.c - LD_PRELOAD'ed into the daemon by test_replies.sh:
 * counts posix_memalign(3) calls and, at exit, writes the count to the file
 * $SFS_MEMALIGN_OUT.  libfuse 3.14 calls it only to copy a reply it was
 * asked to splice (fuse_send_data_iov and its fallback), which samplefs must
 * not ask for when the reply is short (see SPLICE_MIN in fs/read.c).
 * Not a general malloc tracer: one counter, one function.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_long calls;

int posix_memalign(void **p, size_t align, size_t size)
{
	static int (*real)(void **, size_t, size_t);

	if (!real)
		real = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	if (!real)
		return ENOMEM;
	atomic_fetch_add(&calls, 1);
	return real(p, align, size);
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("SFS_MEMALIGN_OUT");
	FILE *f;

	if (!path || !(f = fopen(path, "w")))
		return;
	fprintf(f, "%ld\n", atomic_load(&calls));
	fclose(f);
}
