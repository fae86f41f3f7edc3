/*
 * load.c - "load the index, or build it when missing or stale", once for
 * every layout (see index_load in index.h): map the saved index, let the
 * layout check and bind it, and when any of that fails for a reason a
 * rebuild can cure, build it, save it and load it again, saying why in one
 * message format.  The build is done holding the index's lock (lock.c), so
 * daemons sharing an index directory build it once, and is replaced by a
 * fetch when the mount was given a prebuilt index (prebuilt.c).
 *
 * Not for: the file format (index.c) or what goes in the sections (the
 * layouts' builders).
 */
#include "index/index.h"
#include "clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/source.h"
#include "index/lock.h"
#include "index/prebuilt.h"
#include "log.h"

/* What an index was made for, in the clear beside the sections: SOURCE
 * (as index_path names it), NUL, layout, NUL, key, NUL.  The layouts do
 * not read it; a prebuilt index that has no index for a mount says from
 * it what differs (explain_missing). */
#define TAG_MADE INDEX_TAG('M', 'A', 'D', 'E')

static int add_made(struct index_writer *w, const struct sfs_opts *o,
		    const struct index_job *job)
{
	char *src = source_resolve(o->source ? o->source : "");
	const char *key = job->key ? job->key : "";
	int rc;

	if (!src)
		return 0;	/* best effort: only messages read it */
	if (!(rc = index_writer_begin(w, TAG_MADE)) &&
	    !(rc = index_writer_append(w, src, strlen(src) + 1)) &&
	    !(rc = index_writer_append(w, job->layout, strlen(job->layout) + 1)) &&
	    !(rc = index_writer_append(w, key, strlen(key) + 1)))
		rc = index_writer_end(w);
	free(src);
	return rc;
}

/*
 * Writes the index at path with job->build.  0 or -errno (said).  An
 * index the build marked unsaved (index_writer_set_unsaved) is left at a
 * temporary name instead, put in unsaved (len bytes), with its why in
 * why (whylen); unsaved is "" otherwise.
 */
static int build(const struct sfs_opts *o, const struct index_job *job,
		 const char *path, char *unsaved, size_t len, char *why,
		 size_t whylen)
{
	struct index_writer *w;
	int rc = index_writer_open(&w, path);

	unsaved[0] = '\0';
	if (rc < 0)
		return rc;
	source_build(1);	/* its reads wait out a flaky store (source.h) */
	rc = job->build(job->arg, w);
	source_build(0);
	if (rc == 0)
		rc = add_made(w, o, job);
	if (rc < 0) {
		index_writer_abort(w);
		return rc;
	}
	if (!index_writer_unsaved(w))
		return index_writer_commit(w, job->fp);
	snprintf(why, whylen, "%s", index_writer_unsaved(w));
	return index_writer_commit_unsaved(w, job->fp, unsaved, len);
}

/* A stale index: what differs, as its job sees it (the fingerprint is a
 * hash and cannot say), in place of index_map_open's generic why. */
static void explain_stale(const struct index_job *job, const char *path,
			  char *why, size_t whylen)
{
	struct index_map peek;
	char said[256] = "";

	if (index_map_open(&peek, path, NULL, NULL, 0) < 0)
		return;
	job->stale(job->arg, &peek, said, sizeof(said));
	index_map_close(&peek);
	if (said[0])
		snprintf(why, whylen, "%s", said);
}

/* Maps path and lets the layout bind it: 0; -ENOENT, -ESTALE or -EBADMSG
 * (why says which) when a build would cure it; another -errno. */
static int map_attach(const struct index_job *job, const char *path,
		      struct index_map *m, char *why, size_t whylen)
{
	int rc = index_map_open(m, path, job->fp, why, whylen);

	if (rc == -ENOENT)
		snprintf(why, whylen, "there is none");
	if (rc == -ESTALE && job->stale)
		explain_stale(job, path, why, whylen);
	if (rc < 0)
		return rc;
	rc = job->attach(job->arg, m, path);
	if (rc == 0) {
		/* in use: damage found from now on cannot be rebuilt here */
		m->unlink_damaged = 1;
		return 0;
	}
	if (rc == -EBADMSG && index_map_damaged(m))
		snprintf(why, whylen, "a section fails its checksum");
	else if (rc == -EBADMSG)
		snprintf(why, whylen, "its sections do not fit the sources or this "
			 "version of samplefs");
	index_map_close(m);
	memset(m, 0, sizeof(*m));
	return rc;
}

static int curable(int rc)
{
	return rc == -ENOENT || rc == -ESTALE || rc == -EBADMSG;
}

/* The directory part of path, which index_path made "<dir>/<name>". */
static void dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, len, "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
}

/* What explain_missing found among a prebuilt index's members. */
struct missing {
	const struct sfs_opts *o;
	const struct index_job *job;
	const char *dir;
	char *src;		/* the mount's SOURCE as index_path names it */
	unsigned others;	/* members of other layouts */
	unsigned unknown;	/* of this layout, made before TAG_MADE */
	char other_src[512];	/* one made for another source */
	char other_key[128];	/* one made for this source, other options */
};

/* index_prebuilt_fetch's callback: looks at one member. */
static void look_at_member(void *arg, const char *name)
{
	struct missing *ms = arg;
	size_t n = strlen(ms->job->layout);
	struct index_map peek;
	const char *made, *lay, *key;
	uint64_t len;
	char *path;

	if (strncmp(name, ms->job->layout, n) || name[n] != '-') {
		ms->others++;
		return;
	}
	if (!(path = source_join(ms->dir, name)))
		return;
	if (index_map_open(&peek, path, NULL, NULL, 0) < 0) {
		free(path);
		return;
	}
	made = index_map_section(&peek, TAG_MADE, &len);
	if (!made || !len || made[len - 1] || (lay = made + strlen(made) + 1) >= made + len ||
	    (key = lay + strlen(lay) + 1) >= made + len) {
		ms->unknown++;
	} else if (strcmp(made, ms->src)) {
		snprintf(ms->other_src, sizeof(ms->other_src), "%s", made);
	} else if (strcmp(key, ms->job->key ? ms->job->key : "")) {
		snprintf(ms->other_key, sizeof(ms->other_key), "%s", key);
	}
	index_map_close(&peek);
	free(path);
}

/* Why the prebuilt index has no member for this mount, into why. */
static void explain_missing(struct missing *ms, char *why, size_t whylen)
{
	const char *lay = ms->job->layout, *key = ms->job->key ? ms->job->key : "";

	if (ms->other_key[0])
		snprintf(why, whylen, "its index of %s for this source was made with "
			 "other options, which shape the tree: \"%s\", this mount's "
			 "\"%s\" (the layout's options: see config in the control "
			 "directory, or --help)", lay, ms->other_key, key);
	else if (ms->other_src[0])
		snprintf(why, whylen, "its index of %s is for another source, %s, "
			 "not %s (saved with samplefs-inspect --save-index from that "
			 "name)", lay, ms->other_src, ms->src);
	else if (!ms->unknown)
		snprintf(why, whylen, "it holds no index of layout %s (%u of other "
			 "layouts)", lay, ms->others);
	else
		snprintf(why, whylen, "none of its %u indexes of %s is for this source "
			 "and these options (it does not say what they were made for: "
			 "saved by an older samplefs)", ms->unknown, lay);
}

/*
 * Under the lock, the index still missing or stale (rc, why): fetches the
 * prebuilt index when there is one and maps its member.  0 with m bound;
 * else the -errno of the map after the fetch (why updated), with a
 * warning that the mount builds instead unless it may not.
 */
static int from_prebuilt(const struct sfs_opts *o, const struct index_job *job,
			 const char *path, struct index_map *m, char *why, size_t whylen)
{
	const char *what = job->what ? job->what : "";
	const char *of = job->what ? " of " : "";
	char dir[4096];
	int rc;

	struct missing ms = { .o = o, .job = job, .dir = dir };

	dir_of(path, dir, sizeof(dir));
	ms.src = source_resolve(o->source ? o->source : "");
	rc = index_prebuilt_fetch(o, dir, ms.src ? look_at_member : NULL, &ms);
	if (rc == 0) {
		rc = map_attach(job, path, m, why, whylen);
		if (rc == -ENOENT && ms.src)
			explain_missing(&ms, why, whylen);
	} else {	/* said; whatever the cause, a build can do without it */
		snprintf(why, whylen, "it cannot be fetched or fails its checks");
		rc = -ENOENT;
	}
	free(ms.src);
	if (rc == 0) {
		sfs_info("%s: using the prebuilt index%s%s from %s", path, of, what, o->index);
		return 0;
	}
	if (!o->index_only)
		sfs_warn("%s: the prebuilt index %s has no usable index%s%s for these "
			 "sources and options (%s): building it (-o index_only fails instead)",
			 path, o->index, of, what, why);
	return rc;
}

/* Builds the index (or fetches a prebuilt one) holding its lock: 0 with
 * m bound, or -errno (said).  rc, why: what the last look found. */
static int build_locked(const struct sfs_opts *o, const struct index_job *job,
			const char *path, struct index_map *m, int rc, char *why,
			size_t whylen)
{
	const char *what = job->what ? job->what : "";
	const char *of = job->what ? " of " : "", *sp = job->what ? " " : "";
	/* the path once: a warning or the rebuild message named it */
	int named = o->index != NULL;
	char unsaved[4200], cut[256];
	double t0;

	if (o->index && (rc = from_prebuilt(o, job, path, m, why, whylen)) == 0)
		return 0;
	if (!curable(rc))
		return rc;
	if (o->index_only) {
		sfs_err("%s: no usable index%s%s (%s), and -o index_only forbids "
			"building one", path, of, what, why);
		return -ENOENT;
	}
	if (rc != -ENOENT && !named) {
		sfs_info("%s: rebuilding index%s%s (%s)", path, of, what, why);
		named = 1;
	}
	if (!job->build)	/* the caller makes it, and saves it */
		return -ENOENT;
	t0 = sfs_now_s();
	if ((rc = build(o, job, path, unsaved, sizeof(unsaved), cut, sizeof(cut))) < 0)
		return rc;
	if (unsaved[0]) {	/* for this mount only: mapped, then gone */
		rc = map_attach(job, unsaved, m, why, whylen);
		unlink(unsaved);
		if (rc < 0) {
			sfs_err("%s: the index just built does not load (%s)", path, why);
			return -EIO;
		}
		sfs_warn("%s: the index%s%s just built is incomplete (%s): this "
			 "mount uses it, but it is not saved: the next mount builds "
			 "it again", path, of, what, cut);
		return 0;
	}
	rc = map_attach(job, path, m, why, whylen);
	if (rc < 0) {
		sfs_err("%s: the index just built does not load (%s)", path, why);
		return -EIO;
	}
	if (named)
		sfs_info("%s: indexed%s%s in %.2f s, %.1f MB", o->source, sp,
			 what, sfs_now_s() - t0, m->len / 1e6);
	else
		sfs_info("%s: indexed%s%s in %.2f s, %.1f MB, into %s", o->source,
			 sp, what, sfs_now_s() - t0, m->len / 1e6, path);
	return 0;
}

int index_load(const struct sfs_opts *o, const struct index_job *job,
	       struct index_map *m)
{
	struct index_lock *lk = NULL;
	char path[4096], why[1200] = "";
	const char *what = job->what ? job->what : "";
	const char *of = job->what ? " of " : "";
	int rc, waited = 0, said = 0;

	rc = index_path(o, job->layout, job->key, path, sizeof(path));
	if (rc < 0)
		return rc;
	rc = map_attach(job, path, m, why, sizeof(why));
	/* missing or stale: another daemon on this index directory may be
	 * building it; wait for it (1: it let go, look again), or build */
	while (curable(rc) && (rc = index_lock_take(path, INDEX_LOCK_STALE_S, &lk)) == 1) {
		waited = 1;
		rc = map_attach(job, path, m, why, sizeof(why));
	}
	if (lk) {	/* it may have been built since we looked */
		rc = map_attach(job, path, m, why, sizeof(why));
		waited = 1;
		if (curable(rc)) {
			rc = build_locked(o, job, path, m, rc, why, sizeof(why));
			said = 1;
		}
		index_lock_release(lk);
	}
	if (rc == 0 && !said)
		sfs_info("%s: using the %s index%s%s", path,
			 waited ? "just built" : "saved", of, what);
	return rc;
}
