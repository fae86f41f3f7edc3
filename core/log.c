/*
 * log.c - stderr reporting for core/ (see log.h).  Each message is written
 * with a single fprintf so lines from different threads do not interleave.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static void vlog(const char *kind, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "samplefs: %s%s\n", kind, line);
}

void sfs_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("error: ", fmt, ap);
	va_end(ap);
}

void sfs_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void sfs_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}
