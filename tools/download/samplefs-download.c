/*
 * samplefs-download - a local copy of a dataset, for users who want one:
 *
 *   samplefs-download [-j N] [--classes FILE] [--include GLOB]...
 *                     [--endpoint URL] [--region R] [--profile NAME] [--anonymous]
 *                     [--retries N] [--timeout S] [--min-rate RATE] [-q]
 *                     SOURCE DEST
 *
 * SOURCE is a bucket prefix (s3://BUCKET/PREFIX/, gs://...), an HTTP
 * directory served with nginx's JSON listings, or a file (path or URL)
 * of URLs, one a line.  The objects kept (select.h)
 * are fetched into DEST N at a time (core/io/download.h: skips complete
 * files, resumes partial ones, verifies, retries); a run interrupted,
 * even by kill -9, and started again finishes the job.  On a terminal a
 * progress bar (files, bytes, rate, ETA), otherwise one line per file on
 * stdout: "[DOWNLOAD] rel", "[SKIP] rel", "[FAIL] rel: why".  Exit status
 * 0 when every file is there, 1 when some failed (each named on stderr),
 * 2 for a usage error, 130 when interrupted (Ctrl-C, SIGTERM: .part files
 * are left for the next run; a second Ctrl-C ends at once).
 *
 * Not for: uploads, or mounting (DEST is then mounted by samplefs).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/progress.h"
#include "io/download.h"
#include "io/source.h"
#include "log.h"
#include "options.h"
#include "select.h"

/* What the report callback draws with. */
struct ui {
	struct progress bar;
	int tty, quiet;
};

/* Set by SIGINT / SIGTERM; read by download_run. */
static struct source_cancel stop;

static void on_signal(int sig)
{
	(void)sig;
	source_cancel(&stop);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: samplefs-download [-j N] [--classes FILE] [--include GLOB]...\n"
		"                         [--endpoint URL] [--region R] [--profile NAME] [--anonymous]\n"
		"                         [--retries N] [--timeout S] [--min-rate RATE] [-q]\n"
		"                         SOURCE DEST\n"
		"SOURCE: s3://BUCKET/PREFIX/, gs://BUCKET/PREFIX/, an http(s) directory\n"
		"(nginx's JSON listing), or a file (path or URL) of URLs, one a line\n");
}

static void on_report(void *arg, int ev, const struct download_item *it, uint64_t from,
		      const struct download_totals *t)
{
	struct ui *u = arg;

	if (ev == DL_FAIL) {
		sfs_err("[FAIL] %s: %s (%s)", it->rel, it->why, it->uri);
	} else if (u->tty) {
		if (!u->quiet)
			progress_update(&u->bar, t->files_done, t->bytes_done);
	} else if (u->quiet) {
		return;
	} else if (ev == DL_START && from) {
		printf("[DOWNLOAD] %s (resumed at byte %" PRIu64 ")\n", it->rel, from);
	} else if (ev == DL_START) {
		printf("[DOWNLOAD] %s\n", it->rel);
	} else if (ev == DL_SKIP) {
		printf("[SKIP] %s\n", it->rel);
	}
	if (!u->tty && ev != -1)
		fflush(stdout);
}

static int parse_uint(const char *v, unsigned max, unsigned *out)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	if (!*v || *end || errno || x < 1 || x > max)
		return -1;
	*out = (unsigned)x;
	return 0;
}

/* --min-rate: bytes/s, "512", "10k", "1M" (powers of 1024), 1 B/s to 1 GiB/s. */
static int parse_rate(const char *v, unsigned *out)
{
	uint64_t x;

	if (sfs_parse_size(v, &x) < 0 || x < 1 || x > (1u << 30))
		return -1;
	*out = (unsigned)x;
	return 0;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;	/* a second signal ends the run at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Names every file that failed, after the run. */
static void say_failures(const struct select_list *l)
{
	size_t i, n = l->failed;

	for (i = 0; i < l->n; i++)
		n += l->v[i].status < 0;
	if (!n)
		return;
	sfs_err("%zu file%s failed:", n, n == 1 ? "" : "s");
	for (i = 0; i < l->n; i++)
		if (l->v[i].status < 0)
			fprintf(stderr, "  %s: %s\n", l->v[i].rel, l->v[i].why);
	if (l->failed)
		fprintf(stderr, "  and %zu URL%s that could not be looked up (above)\n",
			l->failed, l->failed == 1 ? "" : "s");
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "classes", required_argument, NULL, 'c' },
		{ "include", required_argument, NULL, 'i' },
		{ "endpoint", required_argument, NULL, 'e' },
		{ "region", required_argument, NULL, 'r' },
		{ "profile", required_argument, NULL, 'p' },
		{ "anonymous", no_argument, NULL, 'a' },
		{ "retries", required_argument, NULL, 'R' },
		{ "timeout", required_argument, NULL, 't' },
		{ "min-rate", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct source_config cfg = {0};
	struct download_opts o = { .jobs = 8, .retries = 8, .stop = &stop };
	struct select sel = {0};
	struct select_list l = {0};
	struct ui u = {0};
	const char **globs = calloc((size_t)argc, sizeof(char *));
	const char *classes = NULL;
	struct source_env *env = NULL;
	int c, rc, status = 2;

	if (!globs)
		return 1;
	while ((c = getopt_long(argc, argv, "j:qh", longs, NULL)) != -1) {
		switch (c) {
		case 'j': if (parse_uint(optarg, 256, &o.jobs)) goto bad; break;
		case 'c': classes = optarg; break;
		case 'i': globs[sel.nglobs++] = optarg; break;
		case 'e': cfg.endpoint = optarg; break;
		case 'r': cfg.region = optarg; break;
		case 'p': cfg.profile = optarg; break;
		case 'a': cfg.anonymous = 1; break;
		case 'R': if (parse_uint(optarg, 1000, &o.retries)) goto bad; break;
		case 't': if (parse_uint(optarg, 3600, &cfg.timeout_s)) goto bad; break;
		case 'm': if (parse_rate(optarg, &o.min_rate)) goto bad; break;
		case 'q': u.quiet = 1; break;
		case 'h': usage(stdout); status = 0; goto out;
		default: goto bad;
		}
	}
	if (argc - optind != 2)
		goto bad;
	sel.globs = globs;
	o.dest = argv[optind + 1];
	o.arg = &u;
	o.report = on_report;
	status = 1;
	if (source_env_new(&cfg, &env) ||
	    (classes && select_read_classes(&sel, env, classes)) ||
	    select_find(&sel, env, argv[optind], &l))
		goto out;
	o.env = env;
	u.tty = isatty(STDERR_FILENO);
	if (u.tty)
		progress_start(&u.bar, "download", l.n, 0, u.quiet);
	for (size_t i = 0; i < l.n; i++)
		u.bar.total_bytes += l.v[i].size;
	catch_signals();
	rc = download_run(l.v, l.n, &o);
	if (u.tty)
		progress_finish(&u.bar);
	if (rc == -EINTR) {
		sfs_err("interrupted: run it again to finish (partial files are kept)");
		status = 130;
		goto out;
	}
	say_failures(&l);
	status = rc || l.failed ? 1 : 0;
	goto out;
bad:
	usage(stderr);
	status = 2;
out:
	select_list_free(&l);
	select_free(&sel);
	source_env_free(env);
	free(globs);
	return status;
}
