/*
 * prebuilt.c - the prebuilt index file (see prebuilt.h for the contract
 * and the layout): saving one from an index directory, and fetching one
 * into an index directory.  Both go through index.c's writer (temporary
 * file, fsync, rename) and mapper (version, checksum, bounds), so there is
 * one way to write and to check an index file.
 *
 * Not for: when a prebuilt index is used (load.c), nor its members'
 * contents (the layouts').
 */
#include "index/prebuilt.h"
#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "index/index.h"
#include "io/dlnames.h"
#include "io/download.h"
#include "io/source.h"
#include "log.h"

#define TAG_NAMES INDEX_TAG('P', 'N', 'A', 'M')
#define TAG_MEMBER(i) INDEX_TAG('P', 'F', (i) & 255, (i) >> 8)
#define MAX_MEMBERS 65536u
#define SUFFIX ".sfsidx"

/* Every prebuilt index has this fingerprint: it depends on nothing, so
 * mapping it checks the version and the table; the members' blocks are
 * checked as each is taken out (index_map_section). */
static void prebuilt_fp(struct index_fp *fp)
{
	index_fp_init(fp, "samplefs-prebuilt");
}

/* A member's name: an index file's, and nothing that leaves the directory. */
static int good_name(const char *name)
{
	size_t n = strlen(name), k = strlen(SUFFIX);

	return n > k && n < NAME_MAX && name[0] != '.' && !strchr(name, '/') &&
	       !strcmp(name + n - k, SUFFIX);
}

/* ---- saving ---- */

struct names {
	char **v;
	size_t n, cap;
};

static int add_name(void *arg, const char *name, int is_dir)
{
	struct names *ns = arg;
	char **v;

	if (is_dir || !good_name(name))
		return 0;
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? 2 * ns->cap : 8;
		if (!(v = realloc(ns->v, ns->cap * sizeof(*v))))
			return -ENOMEM;
		ns->v = v;
	}
	if (!(ns->v[ns->n] = strdup(name)))
		return -ENOMEM;
	ns->n++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the member file dir/name as section i. */
static int add_member(struct index_writer *w, const char *dir, const char *name,
		      uint32_t i)
{
	struct index_map m;
	char why[256], *path = source_join(dir, name);
	int rc;

	if (!path)
		return -ENOMEM;
	/* a peek (header and bounds): the mount checks the rest */
	rc = index_map_open(&m, path, NULL, why, sizeof(why));
	if (rc < 0) {
		sfs_err("%s: not an index file (%s)", path, why);
		goto out;
	}
	rc = index_writer_add(w, TAG_MEMBER(i), m.base, m.len);
	index_map_close(&m);
out:
	free(path);
	return rc;
}

int index_prebuilt_save(const char *dir, const char *out)
{
	struct names ns = { NULL, 0, 0 };
	struct index_writer *w = NULL;
	struct index_fp fp;
	size_t i;
	int rc;

	rc = source_list(NULL, dir, add_name, &ns);
	if (rc < 0) {
		sfs_err("%s: cannot list the index directory: %s", dir, strerror(-rc));
		goto out;
	}
	rc = -ENOENT;
	if (ns.n == 0 || ns.n > MAX_MEMBERS) {
		sfs_err("%s: %zu index files, expected 1 to %u", dir, ns.n, MAX_MEMBERS);
		goto out;
	}
	qsort(ns.v, ns.n, sizeof(*ns.v), by_name);
	if ((rc = index_writer_open(&w, out)) < 0)
		goto out;
	rc = index_writer_begin(w, TAG_NAMES);
	for (i = 0; rc == 0 && i < ns.n; i++)
		rc = index_writer_append(w, ns.v[i], strlen(ns.v[i]) + 1);
	if (rc == 0)
		rc = index_writer_end(w);
	for (i = 0; rc == 0 && i < ns.n; i++)
		rc = add_member(w, dir, ns.v[i], (uint32_t)i);
	if (rc < 0) {
		sfs_err("%s: cannot write the prebuilt index: %s", out, strerror(-rc));
		index_writer_abort(w);
		goto out;
	}
	prebuilt_fp(&fp);
	rc = index_writer_commit(w, &fp);
out:
	for (i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
	return rc;
}

int index_prebuilt_upload(const struct sfs_opts *o, const char *dir, const char *url)
{
	struct source_env *env = NULL;
	struct index_map m;
	struct index_fp fp;
	char why[256], *tmp = NULL;
	double t0 = sfs_now_s();
	int rc, mapped = 0;

	/* not a "*.sfsidx" name: the listing of dir below must skip it */
	if (asprintf(&tmp, "%s/upload.prebuilt", dir) < 0)
		return -ENOMEM;
	if ((rc = index_prebuilt_save(dir, tmp)) < 0)
		goto out;
	prebuilt_fp(&fp);
	if ((rc = index_map_open(&m, tmp, &fp, why, sizeof(why))) < 0) {
		sfs_err("%s: the prebuilt index just written does not map (%s)", tmp, why);
		goto out;
	}
	mapped = 1;
	if ((rc = source_env_new(&o->remote, &env)) < 0)
		goto out;
	if ((rc = source_upload(env, url, m.base, m.len)) == 0)
		sfs_info("%s: prebuilt index uploaded, %.1f MB in %.2f s", url,
			 m.len / 1e6, sfs_now_s() - t0);
out:
	source_env_free(env);
	if (mapped)
		index_map_close(&m);
	unlink(tmp);
	free(tmp);
	return rc;
}

/* ---- fetching ---- */

/* Copies n bytes to a new file at path (temporary file, rename). */
static int write_copy(const char *path, const void *data, uint64_t n)
{
	struct index_writer *w;
	int rc = index_writer_open_copy(&w, path);

	if (rc < 0)
		return rc;
	rc = index_writer_copy(w, data, n);
	if (rc < 0) {
		index_writer_abort(w);
		return rc;
	}
	return index_writer_commit_copy(w);
}

/*
 * Downloads the URL o->index into dir/name: one streamed GET through the
 * downloader's engine (download.h: size, and the MD5 a bucket's ETag
 * gives, checked before the rename), not block reads through the mount's
 * cache, whose ranged requests one after another cost a round trip per
 * 2 MiB (a 60 MB index took 6 s from Swift).  0 or -errno (said).
 */
static int download(const struct sfs_opts *o, const char *dir, const char *name)
{
	struct source_env *env = NULL;
	struct source_info info;
	struct download_item it = { .uri = (char *)o->index, .rel = (char *)name };
	struct download_opts d = { .dest = dir, .jobs = 1, .fresh = 1 };
	int rc;

	if ((rc = source_env_new(&o->remote, &env)) < 0)
		goto out;
	if ((rc = source_stat(env, o->index, &info)) < 0 || info.is_dir) {
		rc = rc < 0 ? rc : -EISDIR;
		sfs_warn("%s: cannot fetch the prebuilt index: %s", o->index, strerror(-rc));
		goto out;
	}
	it.size = info.stamp.size;
	it.has_md5 = source_is_bucket(o->index) &&
		     dlnames_md5_of_etag(info.stamp.etag, it.md5);
	d.retries = o->remote.retries;
	d.timeout_s = o->remote.timeout_s;
	d.env = env;
	rc = download_run(&it, 1, &d);
	if (rc < 0)
		sfs_warn("%s: cannot fetch the prebuilt index: %s", o->index,
			 it.why[0] ? it.why : strerror(-rc));
out:
	source_env_free(env);
	return rc;
}

/* Member i, named `name`, into dir, unless the file there is the same
 * (same header: length, fingerprint and checksum). */
static int extract(const struct index_map *pm, uint32_t i, const char *name,
		   const char *from, const char *dir)
{
	struct index_map old;
	uint64_t len;
	const void *p = index_map_section(pm, TAG_MEMBER(i), &len);
	char *path = source_join(dir, name);
	int rc = -EBADMSG, same;

	if (!path)
		return -ENOMEM;
	if (!p || len < 64) {
		sfs_warn("%s: member %u (%s) is missing or short", from, i, name);
		goto out;
	}
	same = index_map_open(&old, path, NULL, NULL, 0) == 0 && old.len == len &&
	       !memcmp(old.base, p, 64);
	index_map_close(&old);
	rc = same ? 0 : write_copy(path, p, len);
out:
	free(path);
	return rc;
}

/* Writes every member of the mapped prebuilt index pm into dir. */
static int extract_all(const struct index_map *pm, const char *from, const char *dir,
		       void (*each)(void *arg, const char *name), void *arg)
{
	uint64_t len;
	const char *names = index_map_section(pm, TAG_NAMES, &len), *p;
	uint32_t i = 0;
	int rc = 0;

	if (!names || !len || names[len - 1]) {
		sfs_warn("%s: not a prebuilt index (no list of members)", from);
		return -EBADMSG;
	}
	for (p = names; rc == 0 && p < names + len; p += strlen(p) + 1, i++) {
		if (!good_name(p) || i >= MAX_MEMBERS) {
			sfs_warn("%s: member %u has a bad name", from, i);
			return -EBADMSG;
		}
		rc = extract(pm, i, p, from, dir);
		if (rc == 0 && each)
			each(arg, p);
	}
	return rc;
}

int index_prebuilt_fetch(const struct sfs_opts *o, const char *dir,
			 void (*each)(void *arg, const char *name), void *arg)
{
	struct index_fp fp, h;
	struct index_map pm;
	char why[256], *dl = NULL, name[64];
	const char *from = o->index;
	double t0 = sfs_now_s();
	int rc;

	if (source_is_url(o->index)) {
		/* a local copy, named by the URL, mapped and removed below */
		index_fp_init(&h, "prebuilt-download");
		index_fp_add_str(&h, o->index);
		snprintf(name, sizeof(name), "prebuilt-%016llx.download",
			 (unsigned long long)h.h);
		if (!(dl = source_join(dir, name)))
			return -ENOMEM;
		if ((rc = download(o, dir, name)) < 0)
			goto out;
		from = dl;
	}
	prebuilt_fp(&fp);
	rc = index_map_open(&pm, from, &fp, why, sizeof(why));
	if (rc == -ESTALE)
		snprintf(why, sizeof(why), "an index file, but not a prebuilt one");
	if (rc < 0) {
		sfs_warn("%s: not a usable prebuilt index (%s)", o->index, why);
		rc = rc == -ENOENT ? rc : -EBADMSG;
		goto out;
	}
	rc = extract_all(&pm, o->index, dir, each, arg);
	if (rc == 0)
		sfs_info("%s: prebuilt index fetched and checked, %.1f MB in %.2f s",
			 o->index, pm.len / 1e6, sfs_now_s() - t0);
	index_map_close(&pm);
out:
	if (dl)
		unlink(dl);
	free(dl);
	return rc;
}
