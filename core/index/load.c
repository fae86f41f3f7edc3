/*
 * load.c - "load the index, or build it when missing or stale", once for
 * every layout (see index_load in index.h): map the saved index, let the
 * layout check and bind it, and when any of that fails for a reason a
 * rebuild can cure, build it, save it and load it again, saying why in one
 * message format.
 *
 * Not for: the file format (index.c) or what goes in the sections (the
 * layouts' builders).
 */
#include "index/index.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Writes the index at path with job->build.  0 or -errno (said). */
static int build(const struct index_job *job, const char *path)
{
	struct index_writer *w;
	int rc = index_writer_open(&w, path);

	if (rc < 0)
		return rc;
	rc = job->build(job->arg, w);
	if (rc < 0) {
		index_writer_abort(w);
		return rc;
	}
	return index_writer_commit(w, job->fp);
}

int index_load(const struct sfs_opts *o, const struct index_job *job,
	       struct index_map *m)
{
	char path[4096], why[256] = "";
	/* a layout with two indexes says which is which */
	const char *what = job->what ? job->what : "";
	const char *of = job->what ? " of " : "", *sp = job->what ? " " : "";
	double t0 = 0;
	int rc, built = 0, named = 0;

	rc = index_path(o, job->layout, job->key, path, sizeof(path));
	if (rc < 0)
		return rc;
	for (;;) {
		rc = index_map_open(m, path, job->fp, why, sizeof(why));
		if (rc == 0) {
			rc = job->attach(job->arg, m, path);
			if (rc == 0)
				break;
			index_map_close(m);
			memset(m, 0, sizeof(*m));
			if (rc != -EBADMSG)
				return rc;
			snprintf(why, sizeof(why), "its sections do not fit the "
				 "sources or this version of samplefs");
		} else if (rc != -ENOENT && rc != -ESTALE && rc != -EBADMSG) {
			return rc;
		}
		if (built) {    /* what we just wrote does not load: give up */
			sfs_err("%s: the index just built does not load (%s)", path, why);
			return -EIO;
		}
		if (rc != -ENOENT) {
			sfs_info("%s: rebuilding index%s%s (%s)", path, of, what, why);
			named = 1;
		}
		t0 = now();
		if ((rc = build(job, path)) < 0)
			return rc;
		built = 1;
	}
	if (!built)
		sfs_info("%s: using the saved index%s%s", path, of, what);
	else if (named)	/* the path once: the rebuild message named it */
		sfs_info("%s: indexed%s%s in %.2f s, %.1f MB", o->source, sp,
			 what, now() - t0, m->len / 1e6);
	else
		sfs_info("%s: indexed%s%s in %.2f s, %.1f MB, into %s", o->source,
			 sp, what, now() - t0, m->len / 1e6, path);
	return 0;
}
