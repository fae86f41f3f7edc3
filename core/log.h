/*
 * log.h - one place where samplefs reports to the user.
 *
 * Messages name the file, the offset and what was expected.  Where they go
 * (docs/control.md, "Where messages go"): to stderr, prefixed "samplefs: ", until
 * the daemon goes to the background, then to syslog (ident "samplefs",
 * tagged with the mount point); and, from the start, to the file of
 * -o log=FILE when given, appended with a timestamp.  While serving,
 * repeated warnings and errors from one call site are rate-limited: the
 * first is always shown.  Not a logging framework: no levels beyond
 * warn/error/info, no configuration beyond sfs_log_open/sfs_log_serving.
 */
#ifndef SFS_LOG_H
#define SFS_LOG_H

#include <stdint.h>

#if defined(__GNUC__)
#define SFS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SFS_PRINTF(a, b)
#endif

void sfs_err(const char *fmt, ...) SFS_PRINTF(1, 2);
void sfs_warn(const char *fmt, ...) SFS_PRINTF(1, 2);
void sfs_info(const char *fmt, ...) SFS_PRINTF(1, 2);

/*
 * Tags later messages with `mountpoint` (syslog and the file) and, when
 * `file` is not NULL, appends them to it as well (created 0644).  Called
 * once, before any other thread starts and before the daemon changes
 * directory (a relative FILE is the caller's).  -errno, with a message,
 * when FILE cannot be opened.
 */
int sfs_log_open(const char *mountpoint, const char *file);

/* Called once the mount serves requests: from now on repeated messages
 * are rate-limited, and when `daemonised` (stderr is gone) they go to
 * syslog instead of stderr. */
void sfs_log_serving(int daemonised);

/* on: stderr ends in a partial line (a progress bar, redrawn with "\r"),
 * which the next message on stderr ends first; off: the bar ended it. */
void sfs_log_bar(int on);

/* Reports what the rate limit suppressed since it was last said, and
 * closes the file and syslog.  Messages after it go to stderr. */
void sfs_log_close(void);

/*
 * The rate limit, per call site (key: the format string): of the messages
 * with one key, the first of a window of `interval` (ns) opens the window
 * and is shown; `burst` are shown per window, the rest counted.  Public for
 * the unit test, which gives the times.
 */
#define SFS_RATELIMIT_KEYS 64
struct sfs_ratelimit {
	uint64_t interval;
	unsigned burst;
	struct sfs_ratelimit_key {
		const void *key;	/* NULL: free */
		uint64_t start;		/* of its window */
		unsigned shown;		/* in this window */
		unsigned suppressed;	/* not yet reported */
		int level;		/* of the messages (LOG_ERR, LOG_WARNING) */
		char last[1024];	/* the last one suppressed, whole, for the
					 * report (vlog's lines are this long) */
	} keys[SFS_RATELIMIT_KEYS];
};

void sfs_ratelimit_init(struct sfs_ratelimit *rl, unsigned burst, uint64_t interval);

/* 1: show this message (`line`, as it would be printed, of syslog level
 * `level`), and with it "(*suppressed similar messages suppressed)" when
 * *suppressed is not 0; 0: suppress it, keeping `line` and `level` for
 * the report.  The first message of a
 * key is always shown: when every slot is taken, the one whose window
 * opened first is reused and its unreported count lost. */
int sfs_ratelimit_admit(struct sfs_ratelimit *rl, const void *key, int level,
			const char *line, uint64_t now, unsigned *suppressed);

/* For the report at the end: the last suppressed message of the next key
 * with messages suppressed and not reported, their count (then zeroed)
 * and their level; NULL when there is none. */
const char *sfs_ratelimit_take(struct sfs_ratelimit *rl, unsigned *suppressed,
			       int *level);

#endif
