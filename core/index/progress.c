/*
 * progress.c - the one-line index-build progress display (see progress.h).
 * Redrawn in place with "\r" at most five times a second, so a build of
 * millions of small files spends nothing on it; only on a terminal.
 * Not a logger: messages go through log.h, which ends the bar's line
 * before one (sfs_log_bar), and the next redraw starts a new bar below.
 */
#include "index/progress.h"
#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define REDRAW_SEC 0.2
#define MB (1024.0 * 1024.0)

/* "1h02m", "3m07s", "12s" */
static void fmt_secs(char *out, size_t n, double s)
{
	unsigned long t = s > 0 && s < 1e8 ? (unsigned long)(s + 0.5) : 0;

	if (t >= 3600)
		snprintf(out, n, "%luh%02lum", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(out, n, "%lum%02lus", t / 60, t % 60);
	else
		snprintf(out, n, "%lus", t);
}

static void draw(struct progress *p, double t)
{
	double el = t - p->start, rate = el > 0 ? (double)p->bytes / el : 0;
	char eta[32] = "?", total[32] = "";

	if (rate > 0 && p->total_bytes > p->bytes)
		fmt_secs(eta, sizeof(eta), (double)(p->total_bytes - p->bytes) / rate);
	else if (p->total_bytes && p->bytes >= p->total_bytes)
		fmt_secs(eta, sizeof(eta), 0);
	if (p->total_files)	/* 0: not known before the walk (tars) */
		snprintf(total, sizeof(total), "/%llu", (unsigned long long)p->total_files);
	/* one fprintf, and \033[K clears what a longer earlier line left */
	fprintf(stderr, "\rsamplefs: %s: %llu%s files, %.1f/%.1f MB, %.1f MB/s, ETA %s\033[K",
		p->what, (unsigned long long)p->files, total, (double)p->bytes / MB,
		(double)p->total_bytes / MB, rate / MB, eta);
	sfs_log_bar(1);
	p->last_draw = t;
}

void progress_start(struct progress *p, const char *what, uint64_t total_files,
		    uint64_t total_bytes, int quiet)
{
	p->what = what;
	p->total_files = total_files;
	p->total_bytes = total_bytes;
	p->files = p->bytes = 0;
	p->start = sfs_now_s();
	p->last_draw = 0;
	p->enabled = !quiet && isatty(STDERR_FILENO);
}

void progress_update(struct progress *p, uint64_t files_done, uint64_t bytes_done)
{
	double t;

	p->files = files_done;
	p->bytes = bytes_done;
	if (!p->enabled)
		return;
	t = sfs_now_s();
	if (t - p->last_draw >= REDRAW_SEC)
		draw(p, t);
}

void progress_finish(struct progress *p)
{
	char el[32];
	double t;

	if (!p->enabled)
		return;
	t = sfs_now_s();
	if (t - p->start < 60)
		snprintf(el, sizeof(el), "%.1fs", t - p->start);
	else
		fmt_secs(el, sizeof(el), t - p->start);
	fprintf(stderr, "\rsamplefs: %s: %llu files, %.1f MB in %s (%.1f MB/s)\033[K\n",
		p->what, (unsigned long long)p->files, (double)p->bytes / MB, el,
		t > p->start ? (double)p->bytes / MB / (t - p->start) : 0.0);
	sfs_log_bar(0);
	p->enabled = 0;
}
