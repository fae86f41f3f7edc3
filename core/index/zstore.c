/*
 * zstore.c - the index layer's store of access-point tables (zstore.h):
 * zsource.h's load/release/save, on index.h's files (temporary file,
 * checksum, rename into place, mapping), so a table is never half-written
 * and two daemons sharing the directory see a whole one or none.
 *
 * Threads: called from source_open, on the thread opening; nothing here
 * is shared but the options (read-only).
 *
 * Not for: prebuilt indexes (-o index=): a table is made by the first
 * mount on each machine (README, Limitations).
 */
#include "index/zstore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "io/zsource.h"
#include "log.h"

#define ZTAG INDEX_TAG('Z', 'P', 'T', 'S')

/* Where the table of `name` lives and what it must have been made from. */
static int locate(const struct sfs_opts *o, const char *name,
		  const struct source_stamp *st, uint64_t span, char *path,
		  size_t pathlen, struct index_fp *fp)
{
	index_fp_init(fp, "gz");
	index_fp_add_source(fp, name, st);
	index_fp_add_u64(fp, span);
	return index_path(o, "gz", name, path, pathlen);
}

static int zs_load(void *arg, const char *name, const struct source_stamp *st,
		   uint64_t span, const void **blob, size_t *len, void **hold)
{
	struct index_map *m = malloc(sizeof(*m));
	struct index_fp fp;
	char path[4096], why[128];
	uint64_t slen;
	int rc = -ENOMEM;

	if (!m || (rc = locate(arg, name, st, span, path, sizeof(path), &fp)) < 0)
		goto fail;
	if ((rc = index_map_open(m, path, &fp, why, sizeof(why))) < 0) {
		if (rc == -EBADMSG)
			sfs_warn("%s: %s: making it again", path, why);
		goto fail;
	}
	if (!(*blob = index_map_section(m, ZTAG, &slen))) {
		index_map_close(m);
		rc = -ENOENT;
		goto fail;
	}
	*len = (size_t)slen;
	*hold = m;
	return 0;
fail:
	free(m);
	return rc;
}

static void zs_release(void *arg, void *hold)
{
	index_map_close(hold);
	free(hold);
}

static void zs_save(void *arg, const char *name, const struct source_stamp *st,
		    uint64_t span, const void *blob, size_t len)
{
	struct index_writer *w;
	struct index_fp fp;
	char path[4096];
	int rc;

	if ((rc = locate(arg, name, st, span, path, sizeof(path), &fp)) < 0) {
		sfs_warn("%s: no place for its access points (%s): they are "
			 "made again at the next mount", name, strerror(-rc));
		return;
	}
	if ((rc = index_writer_open(&w, path)) < 0)
		return;
	if ((rc = index_writer_add(w, ZTAG, blob, len)) < 0) {
		index_writer_abort(w);
		return;
	}
	index_writer_commit(w, &fp);
}

static const struct zsource_store ops = { zs_load, zs_release, zs_save };

void index_zstore_attach(struct source_env *env, const struct sfs_opts *o)
{
	source_env_zstore(env, &ops, (void *)o);
}
