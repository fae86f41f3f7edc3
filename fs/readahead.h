/*
 * readahead.h - the read-ahead window of a FUSE mount, which sets how large
 * the READ requests of a sequential reader are.
 *
 * Why: the kernel reads ahead of a sequential reader by its backing device
 * info's read_ahead_kb, which is 128 KiB for a new FUSE mount, and FUSE
 * INIT can only lower it (fuse_conn_info.max_readahead).  So a streamed
 * file (a virtual shard) arrives in 128 KiB READs, a round trip each, even
 * though libfuse 3.14 takes 1 MiB (max_pages 256).  Root may raise it after
 * mounting: /sys/class/bdi/MAJ:MIN/read_ahead_kb, MAJ:MIN being the
 * mount's device (/proc/self/mountinfo).  Others may not (the file is
 * root's, mode 0644): their mounts keep 128 KiB.
 *
 * Not for: anything inside the daemon's own reads of its sources (the
 * source files' read-ahead is their file systems').  No state: used by
 * main.c once after mounting, and by the bench's floorfs.
 */
#ifndef SFS_FS_READAHEAD_H
#define SFS_FS_READAHEAD_H

#include <stddef.h>

/* What -o readahead means by default for root (KiB): one READ of libfuse
 * 3.14's largest (1 MiB) at a time in flight per reader, and the next one
 * asked for while it is served; larger windows measured no faster (the
 * daemon serves them in the same 1 MiB pieces). */
#define READAHEAD_ROOT_KIB 1024
/* A bound on -o readahead (1 GiB): more only pins memory. */
#define READAHEAD_MAX_KIB (1024 * 1024)

/*
 * The sysfs file of the read-ahead window of the newest mount at `mnt` (an
 * absolute path, as fuse_parse_cmdline makes it) in this process's mount
 * namespace, into path[len].  0 or -errno (-ENOENT: nothing mounted there).
 */
int readahead_path(const char *mnt, char *path, size_t len);

/* Sets that window to `kib` KiB.  0 or -errno (-EACCES, -EPERM when not
 * root); the file's name is in `path` (len bytes) for the caller's message. */
int readahead_set(const char *mnt, unsigned kib, char *path, size_t len);

#endif
