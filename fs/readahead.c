/*
 * readahead.c - sets a FUSE mount's read-ahead window (see readahead.h):
 * finds the mount's device in /proc/self/mountinfo and writes the window to
 * its bdi's read_ahead_kb.  Not for: reading the sources.
 */
#include "readahead.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo (octal) */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/*
 * A mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...".  Lines come in
 * mount order, so the last one at mnt is the mount on top (the one just
 * made, even when -o stack put it over another).
 */
int readahead_path(const char *mnt, char *path, size_t len)
{
	char *line = NULL, dev[32] = "", point[4096];
	size_t cap = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char d[32];

		if (sscanf(line, "%*d %*d %31s %*s %4095s", d, point) != 2)
			continue;
		unescape(point);
		if (!strcmp(point, mnt)) {
			memcpy(dev, d, sizeof(dev));
			rc = 0;
		}
	}
	free(line);
	fclose(f);
	if (rc)
		return rc;
	if ((size_t)snprintf(path, len, "/sys/class/bdi/%s/read_ahead_kb", dev) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int readahead_set(const char *mnt, unsigned kib, char *path, size_t len)
{
	char val[16];
	int fd, n, rc;

	if ((rc = readahead_path(mnt, path, len)) < 0)
		return rc;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	errno = 0;
	n = snprintf(val, sizeof(val), "%u\n", kib);
	if (write(fd, val, (size_t)n) != n)
		rc = errno ? -errno : -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}
