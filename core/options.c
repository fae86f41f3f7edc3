/*
 * options.c - defaults and value parsing for struct sfs_opts.
 * Not the command line parser: that is fs/opts.c.
 */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sfs_opts_default(struct sfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->stroke_len = 130;
	o->seed = 42;
	o->split[0] = 80;
	o->split[1] = 10;
	o->split[2] = 10;
	o->recursive = 1;
	o->shard_size = 10000;
	o->shard_prefetch = 32u << 20;
}

int sfs_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || (v && mul > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}
