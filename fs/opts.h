/*
 * opts.h - the samplefs command line: SOURCE and the -o options that fill
 * struct sfs_opts (what core/ needs) and the few that only say how this
 * daemon serves requests.  FUSE's own options (-f, -d, -s, allow_other, ...) are
 * left in the argument list for libfuse.  Not for option semantics: the
 * layouts decide what each value means.
 */
#ifndef SFS_FS_OPTS_H
#define SFS_FS_OPTS_H

#include <fuse_opt.h>
#include <stdio.h>

#include "options.h"

/* Every samplefs option: core's, then the daemon's own. */
struct fs_opts {
	struct sfs_opts core;
	uint32_t poll_us;	/* -o poll=USEC: busy poll of /dev/fuse (default 50, 0 = libfuse's loop) */
	uint32_t workers;	/* -o workers=N: threads for reads that wait (default 4; 16 for URLs) */
	uint32_t sessions;	/* -o sessions=N: session threads with poll (default SESSIONS_PER_CPUS) */
	int readdirplus;	/* -o readdirplus=auto|always|adaptive: RDPLUS_* */
	char *log_file;		/* -o log=FILE: messages appended there too (core/log.h) */
	int stack;		/* -o stack: mount over an existing mount */
	char *mountpoint;	/* MOUNTPOINT as given (libfuse parses it too) */
	char *fsname;		/* -o fsname=NAME: /proc/mounts' first field (NULL = SOURCE) */
	uint32_t readahead_kib;	/* -o readahead=KIB: the mount's read-ahead (fs/readahead.h); 0 = the kernel's */
	uint64_t given;		/* bit i: option row i was given */
	uint64_t old_cache_bytes; /* -o cache=, span_cache=: cache_mem='s old names */
};

/* Default -o workers=: for local sources, and for URLs (reads that wait
 * for the network: one round trip each, so more in flight). */
#define WORKERS_LOCAL 4
#define WORKERS_URL   16

/* Default -o sessions=: one session thread per SESSIONS_PER_CPUS CPUs, at
 * most SESSIONS_MAX.  Each polls the device after its requests (devpoll.h),
 * which on a small machine takes the CPU the readers need; on a large one
 * a single thread's ~200k requests a second is the mount's ceiling. */
#define SESSIONS_PER_CPUS 8
#define SESSIONS_MAX      16

/* How listings answer (FUSE readdirplus).  ALWAYS: every listed entry comes
 * with its attributes, so the kernel needs no LOOKUP when the file is then
 * opened, at the price of a kernel inode per listed entry.  AUTO: the
 * kernel's choice (attributes for the start of a listing, and where names
 * are being looked up).  ADAPTIVE: attributes when the files listed are
 * being stat'ed, as by du or ls -l (fs/rdplus.h).  BY_LAYOUT: ALWAYS for
 * layouts whose directories loaders list and then read
 * (layout_ops.listed_then_read), else ADAPTIVE. */
enum { RDPLUS_BY_LAYOUT, RDPLUS_AUTO, RDPLUS_ALWAYS, RDPLUS_ADAPTIVE };

/*
 * Removes SOURCE (the first non-option argument) and every samplefs option
 * from args into o (after sfs_opts_default), accepting and dropping the
 * mount(8)/fstab options that mean nothing to a FUSE daemon (nofail,
 * noauto, _netdev, x-*, ...).  Prints one line and returns -1 on a bad
 * value, and on -o max_read (libfuse fails it at the first request unless
 * the file system repeats it).  o->core.source is NULL when no SOURCE was
 * given, o->mountpoint when no MOUNTPOINT was.
 */
int sfs_opts_parse(struct fuse_args *args, struct fs_opts *o);

/*
 * Refuses (one line per option, -EINVAL) the options given that do not
 * apply to `layout` (a row of layout_kinds, which says which options are
 * its own) or, for a local SOURCE, to URL sources only, and sets
 * o->core.layout to it when it was detected, so the layout is not
 * detected twice.
 */
int sfs_opts_check_layout(struct fs_opts *o, const char *layout);

/* Replaces o->source by its realpath (kept as is for http(s) URLs; other
 * "scheme://" names are refused, with a message); -errno. */
int sfs_opts_absolute_source(struct sfs_opts *o);

/* Whether -o readahead was given (not its default). */
int readahead_given(const struct fs_opts *o);

/* Frees the strings sfs_opts_parse allocated. */
void sfs_opts_free(struct fs_opts *o);

/*
 * After layout_open: refuses (one line per option, -EINVAL) the options
 * given for compressed data (span=, span_cache=) when the layout opened
 * none (`decompressed`: source_env_decompressed).
 */
int sfs_opts_check_data(const struct fs_opts *o, uint64_t decompressed);

struct layout;
/* The options that apply to this mount (its source's kind, layout and
 * data), one "name=value" line each (SOURCE first) with the value in
 * force (defaults filled in: layout->env's), values of options named
 * secret, token or password shown as "***": the control directory's
 * config (fs/ctl.h). */
void sfs_opts_print(const struct fs_opts *o, const struct layout *layout, FILE *f);

/* The "-o" lines of --help. */
void sfs_opts_help(void);

#endif
