/*
 * test_log.c - core/log.c: the rate limit with given times (the first
 * message of a key always shown, `burst` per window, the count of the
 * suppressed ones reported with the next shown one or at the end, keys
 * apart, a full table), and what -o log=FILE holds: timestamped lines
 * tagged with the mount point, rate-limited only once serving.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "capture.h"
#include "log.h"

#define S 1000000000ull

static int admit(struct sfs_ratelimit *rl, const void *key, uint64_t now,
		 unsigned *supp)
{
	return sfs_ratelimit_admit(rl, key, LOG_WARNING, key, now, supp);
}

Test(ratelimit, first_then_burst_then_counted)
{
	struct sfs_ratelimit rl;
	static const char a[] = "a";
	unsigned supp, shown = 0, i;
	int level;

	sfs_ratelimit_init(&rl, 3, 60 * S);
	cr_expect(admit(&rl, a, 1000, &supp), "the first is always shown");
	cr_expect_eq(supp, 0);
	for (i = 0; i < 10; i++) {
		shown += (unsigned)admit(&rl, a, 1000 + i, &supp);
		cr_expect_eq(supp, 0);
	}
	cr_expect_eq(shown, 2, "burst 3 in all: first + 2 more, got %u", shown);
	/* still in the window (59 s after its start): suppressed */
	cr_expect(!admit(&rl, a, 1000 + 59 * S, &supp));
	/* a new window: shown, with the 9 suppressed before it */
	cr_expect(admit(&rl, a, 1000 + 60 * S, &supp));
	cr_expect_eq(supp, 9, "suppressed reported: %u", supp);
	cr_expect(admit(&rl, a, 1001 + 60 * S, &supp));
	cr_expect_eq(supp, 0, "reported once only");
	cr_expect_null(sfs_ratelimit_take(&rl, &supp, &level), "nothing left to report");
}

Test(ratelimit, keys_apart_and_take)
{
	struct sfs_ratelimit rl;
	static const char a[] = "a", b[] = "b";
	unsigned supp, i;
	int level;

	sfs_ratelimit_init(&rl, 1, 10 * S);
	cr_expect(admit(&rl, a, 5, &supp));
	for (i = 0; i < 4; i++)
		cr_expect(!admit(&rl, a, 6, &supp));
	cr_expect(admit(&rl, b, 7, &supp), "another key's first is shown");
	cr_expect(!admit(&rl, b, 8, &supp));
	cr_expect_str_eq(sfs_ratelimit_take(&rl, &supp, &level), a);
	cr_expect_eq(supp, 4);
	cr_expect_str_eq(sfs_ratelimit_take(&rl, &supp, &level), b);
	cr_expect_eq(supp, 1);
	cr_expect_null(sfs_ratelimit_take(&rl, &supp, &level));
}

Test(ratelimit, full_table_never_drops_a_first)
{
	struct sfs_ratelimit rl;
	static char keys[SFS_RATELIMIT_KEYS * 3];
	unsigned supp, i;

	sfs_ratelimit_init(&rl, 1, 100 * S);
	for (i = 0; i < sizeof(keys); i++)
		cr_expect(admit(&rl, &keys[i], i, &supp), "first of key %u dropped", i);
	/* the most recent keys are still remembered: their second is not shown */
	cr_expect(!admit(&rl, &keys[sizeof(keys) - 1], sizeof(keys), &supp));
}

/* The lines of FILE, whole. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);
	size_t n;

	cr_assert(f && buf);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static unsigned count(const char *text, const char *needle)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void repeat_warning(unsigned i)
{
	sfs_warn("source x changed: read %u gives EIO", i);
}

Test(log, file_lines_and_rate_limit_once_serving)
{
	char path[] = "/tmp/sfs-test-log.XXXXXX", want[128];
	struct capture c;
	char *text, *err;
	int fd = mkstemp(path);
	unsigned i;

	cr_assert(fd >= 0);
	close(fd);
	capture_start(&c);
	cr_assert_eq(sfs_log_open("/mnt/x", path), 0);
	for (i = 0; i < 3; i++)	/* before serving: every one */
		repeat_warning(i);
	sfs_log_serving(0);
	for (i = 3; i < 23; i++)	/* serving: 5 a minute from one call site */
		repeat_warning(i);
	sfs_err("another call site");
	sfs_log_close();
	err = capture_end(&c);
	text = slurp(path);
	unlink(path);
	snprintf(want, sizeof(want), " samplefs[%d]: /mnt/x: warning: source x changed: read 0 gives EIO\n",
		 (int)getpid());
	cr_expect(strstr(text, want), "want '%s' in:\n%s", want, text);
	cr_expect(text[0] >= '2' && text[4] == '-' && text[10] == 'T',
		  "a timestamp first: %.30s", text);
	cr_expect_eq(count(text, "gives EIO\n"), 3 + 5, "in the file:\n%s", text);
	cr_expect_eq(count(err, "gives EIO\n"), 3 + 5, "on stderr:\n%s", err);
	cr_expect(strstr(text, "read 7 gives EIO"));
	cr_expect(!strstr(text, "read 8 gives EIO"), "the 6th while serving is suppressed");
	cr_expect(strstr(text, "/mnt/x: error: another call site\n"));
	/* the last one suppressed, as it would have been printed */
	cr_expect(strstr(text, "warning: 15 more messages like \"source x changed: read 22 gives EIO\" were suppressed"),
		  "the count said at the end:\n%s", text);
	cr_expect(!strstr(text, "%u"), "no format string:\n%s", text);
	cr_expect(strstr(err, "samplefs: warning: source x changed: read 0 gives EIO\n"),
		  "stderr as before: %s", err);
	free(text);
	free(err);
}

Test(log, unwritable_file_fails)
{
	struct capture c;
	char *err;

	capture_start(&c);
	cr_expect_lt(sfs_log_open("/mnt/x", "/nonexistent-dir/x.log"), 0);
	err = capture_end(&c);
	cr_expect(strstr(err, "-o log=/nonexistent-dir/x.log: cannot open for appending: No such file"),
		  "%s", err);
	free(err);
}

static void repeat_error(unsigned i)
{
	sfs_err("https://store/%0300u.tar: bytes %u-%u: HTTP 503; EIO after 6 "
		"attempts", i, i, i + 1);
}

static void once_more_error(void)
{
	sfs_err("source y: read gives EIO");
}

/* Issue 25: the report of what was suppressed keeps their level (errors
 * stay errors), holds the last one whole however long it is (it was cut
 * at 199 characters), and says "1 more message ... was" for one. */
Test(log, suppressed_report_keeps_level_whole_line_and_plural)
{
	char path[] = "/tmp/sfs-test-log.XXXXXX", want[600];
	struct capture c;
	char *text, *err;
	int fd = mkstemp(path);
	unsigned i;

	cr_assert(fd >= 0);
	close(fd);
	capture_start(&c);
	cr_assert_eq(sfs_log_open("/mnt/y", path), 0);
	sfs_log_serving(0);
	for (i = 0; i < 8; i++)		/* 5 shown, 3 suppressed */
		repeat_error(i);
	for (i = 0; i < 6; i++)		/* 5 shown, 1 suppressed */
		once_more_error();
	sfs_log_close();
	err = capture_end(&c);
	text = slurp(path);
	unlink(path);
	snprintf(want, sizeof(want), "/mnt/y: error: 3 more messages like "
		 "\"https://store/%0300u.tar: bytes 7-8: HTTP 503; EIO after 6 "
		 "attempts\" were suppressed\n", 7);
	cr_expect(strstr(text, want), "want '%s' in:\n%s", want, text);
	cr_expect(strstr(text, "/mnt/y: error: 1 more message like \"source y: "
			 "read gives EIO\" was suppressed\n"), "one, said so:\n%s", text);
	cr_expect(!strstr(text, "warning: "), "no warning here:\n%s", text);
	free(text);
	free(err);
}
