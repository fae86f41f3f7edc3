/*
 * log.c - where messages go (see log.h): stderr, syslog once daemonised,
 * the -o log=FILE file, and the rate limit while serving.
 *
 * The one piece of process-wide state in samplefs lives here, as syslog's
 * own does: messages come from any thread of core/ and fs/ with no context
 * to carry a sink, so sfs_log_open/sfs_log_serving set it up once and a
 * mutex guards it (messages are rare, so one lock costs nothing).  Each
 * message is one fprintf, one write(2) on an O_APPEND file and one
 * syslog(3) call, so lines from different threads or daemons never
 * interleave.  Not a logging framework.
 */
#include "log.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* While serving, per call site: 5 messages a minute after the first.  A
 * source that changed while mounted warns on every read otherwise. */
#define BURST    5
#define INTERVAL (60 * 1000000000ull)

static struct {
	pthread_mutex_t lock;
	char *mountpoint;	/* tag for syslog and the file; NULL: none */
	int fd;			/* -o log=FILE, or -1 */
	int serving;		/* rate-limited from now on */
	int syslog;		/* daemonised: syslog instead of stderr */
	int bar;		/* stderr ends in a progress bar's partial line */
	struct sfs_ratelimit rl;
} sink = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

void sfs_ratelimit_init(struct sfs_ratelimit *rl, unsigned burst, uint64_t interval)
{
	memset(rl, 0, sizeof(*rl));
	rl->burst = burst;
	rl->interval = interval;
}

/* The slot of key, or a free one, or the one whose window opened first. */
static struct sfs_ratelimit_key *slot_of(struct sfs_ratelimit *rl, const void *key)
{
	struct sfs_ratelimit_key *k, *oldest = &rl->keys[0];

	for (k = rl->keys; k < rl->keys + SFS_RATELIMIT_KEYS; k++) {
		if (k->key == key || !k->key)
			return k;
		if (k->start < oldest->start)
			oldest = k;
	}
	oldest->key = NULL;
	return oldest;
}

int sfs_ratelimit_admit(struct sfs_ratelimit *rl, const void *key, int level,
			const char *line, uint64_t now, unsigned *suppressed)
{
	struct sfs_ratelimit_key *k = slot_of(rl, key);

	*suppressed = 0;
	if (!k->key || now - k->start >= rl->interval) {
		*suppressed = k->key ? k->suppressed : 0;
		k->key = key;
		k->start = now;
		k->shown = 1;
		k->suppressed = 0;
		return 1;
	}
	if (k->shown < rl->burst) {
		k->shown++;
		*suppressed = k->suppressed;
		k->suppressed = 0;
		return 1;
	}
	k->suppressed++;
	k->level = level;
	snprintf(k->last, sizeof(k->last), "%s", line);
	return 0;
}

const char *sfs_ratelimit_take(struct sfs_ratelimit *rl, unsigned *suppressed,
			       int *level)
{
	struct sfs_ratelimit_key *k;

	for (k = rl->keys; k < rl->keys + SFS_RATELIMIT_KEYS; k++)
		if (k->key && k->suppressed) {
			*suppressed = k->suppressed;
			*level = k->level;
			k->suppressed = 0;
			return k->last;
		}
	return NULL;
}

/* "2024-05-01T12:00:00+0200 samplefs[PID]: MNT: warning: ...\n" */
static void to_file(const char *kind, const char *line)
{
	char stamp[40], buf[2400];
	struct tm tm;
	time_t t = time(NULL);
	int n;

	if (!localtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", &tm))
		stamp[0] = '\0';
	n = snprintf(buf, sizeof(buf), "%s samplefs[%d]: %s%s%s%s\n", stamp,
		     (int)getpid(), sink.mountpoint ? sink.mountpoint : "",
		     sink.mountpoint ? ": " : "", kind, line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf)) {
		n = sizeof(buf) - 1;
		buf[n - 1] = '\n';
	}
	/* a full disk must not stop the daemon: the message is lost */
	if (write(sink.fd, buf, (size_t)n) < 0)
		return;
}

static void emit(int prio, const char *kind, const char *line)
{
	if (sink.syslog)
		syslog(prio, "%s: %s%s", sink.mountpoint ? sink.mountpoint : "",
		       kind, line);
	else
		fprintf(stderr, "%ssamplefs: %s%s\n", sink.bar ? "\n" : "", kind, line);
	sink.bar = 0;
	if (sink.fd >= 0)
		to_file(kind, line);
}

/* limited: rate-limited by the call site (fmt) once serving */
static void vlog(int prio, const char *kind, int limited, const char *fmt, va_list ap)
{
	char line[1024];
	unsigned suppressed = 0;
	size_t len;

	vsnprintf(line, sizeof(line), fmt, ap);
	pthread_mutex_lock(&sink.lock);
	if (limited && sink.serving &&
	    !sfs_ratelimit_admit(&sink.rl, fmt, prio, line, (uint64_t)sfs_now_ns(),
				 &suppressed))
		goto out;
	if (suppressed) {
		len = strlen(line);
		snprintf(line + len, sizeof(line) - len, " (%u similar message%s "
			 "suppressed)", suppressed, suppressed == 1 ? "" : "s");
	}
	emit(prio, kind, line);
out:
	pthread_mutex_unlock(&sink.lock);
}

void sfs_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_ERR, "error: ", 1, fmt, ap);
	va_end(ap);
}

void sfs_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, "warning: ", 1, fmt, ap);
	va_end(ap);
}

void sfs_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, "", 0, fmt, ap);
	va_end(ap);
}

int sfs_log_open(const char *mountpoint, const char *file)
{
	char *mnt = mountpoint ? strdup(mountpoint) : NULL;
	int fd = -1, rc;

	if (mountpoint && !mnt)
		return -ENOMEM;
	if (file && (fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		rc = -errno;
		sfs_err("-o log=%s: cannot open for appending: %s", file, strerror(errno));
		free(mnt);
		return rc;
	}
	pthread_mutex_lock(&sink.lock);
	free(sink.mountpoint);
	sink.mountpoint = mnt;
	if (sink.fd >= 0)
		close(sink.fd);
	sink.fd = fd;
	pthread_mutex_unlock(&sink.lock);
	return 0;
}

void sfs_log_bar(int on)
{
	pthread_mutex_lock(&sink.lock);
	sink.bar = on;
	pthread_mutex_unlock(&sink.lock);
}

void sfs_log_serving(int daemonised)
{
	pthread_mutex_lock(&sink.lock);
	sfs_ratelimit_init(&sink.rl, BURST, INTERVAL);
	sink.serving = 1;
	if (daemonised && !sink.syslog) {
		/* LOG_NDELAY: connect now, while /dev/log is the one we see */
		openlog("samplefs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
		sink.syslog = 1;
	}
	pthread_mutex_unlock(&sink.lock);
}

void sfs_log_close(void)
{
	const char *last;
	unsigned n;
	int level;

	pthread_mutex_lock(&sink.lock);
	while ((last = sfs_ratelimit_take(&sink.rl, &n, &level))) {
		/* the message whole (it may be as long as a line), at the
		 * level the suppressed ones had: errors stay errors */
		char line[sizeof(sink.rl.keys[0].last) + 64];

		snprintf(line, sizeof(line), "%u more message%s like \"%s\" %s "
			 "suppressed", n, n == 1 ? "" : "s", last,
			 n == 1 ? "was" : "were");
		emit(level, level == LOG_ERR ? "error: " : "warning: ", line);
	}
	if (sink.syslog)
		closelog();
	if (sink.fd >= 0)
		close(sink.fd);
	free(sink.mountpoint);
	sink.mountpoint = NULL;
	sink.fd = -1;
	sink.serving = 0;
	sink.syslog = 0;
	pthread_mutex_unlock(&sink.lock);
}
