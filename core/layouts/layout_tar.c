/*
 * layout_tar.c - `-o layout=tar`: the members of a tar or a zip, or of a
 * directory of them (shards), as files.
 *
 * SOURCE is a tar or zip file (its members at the root) or a directory
 * holding *.tar and *.zip files (each one's members under a directory
 * named like the shard minus its suffix; see layout_tar_shard_suffix).  Nested tars are expanded -o recursive=N levels (see
 * tarindex.h).  The tree lives in a persistent tarindex (index_load: rebuilt
 * with a message when missing, stale or corrupt), used in place from the
 * mmap.
 *
 * Inodes (layout.h's scheme, kind 0): node number + 1, so node 0 (the
 * root) is SFS_ROOT_INO; a tar has under 2^26 nodes.  Member
 * data (unless sparse) is one range of a source, so `extent` lets the
 * FUSE layer splice it, unless the index has the members' checksums
 * (-o checksums: tarindex.h), whose reads are copied once checked; when
 * the source changed since mounting (size or mtime),
 * `extent` and read() both answer -EIO (source_check).
 *
 * Threads: after layout_tar_open everything here is read-only; reads of
 * the shared sources are thread-safe.
 *
 * Not for: compressed tars, tar shards synthesised from samples (vtar.c).
 */
#include "layouts/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index.h"
#include "index/tarindex/tarindex.h"
#include "formats/tar.h"
#include "io/source.h"
#include "log.h"

#define INO0 1          /* inode of node 0: node i is SFS_INO(0, INO0 + i) */
#define TAG_PREFIX 'T'

struct tar_layout {
	const struct sfs_opts *o;	/* while opening only */
	struct index_map map;
	struct tarindex t;
	struct tarindex_source *src;
	size_t nsrc;
	uint32_t recursive; /* -o recursive=, as the index was built */
	char *strings;      /* the sources' paths and dirs, one allocation */
	uint32_t *hidden;   /* symlinks that leave the mount through others, */
	uint32_t nhidden;   /* increasing (tarindex_escaping_links) */
	uint32_t nlinked;   /* names of hard-linked files but the first */
};

/* ------------------------------------------------------------ sources */

/*
 * The shards a directory source holds, by suffix: each one's members go
 * under a directory named like the shard minus the suffix ("shard-000000"
 * for "shard-000000.tar"), as WebDataset names a sample by its key and
 * the shard by its basename: the tar archives' names (tar_archive_suffix,
 * compressed ones read as the tar inside by core/io/codecs/zsource.c) and zips.
 */
size_t layout_tar_shard_suffix(const char *name)
{
	const char *sfx = tar_archive_suffix(name);
	size_t n = strlen(name);

	if (name[0] == '.')
		return 0;
	if (sfx)
		return strlen(sfx);
	return n > 4 && !strcmp(name + n - 4, ".zip") ? 4 : 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.tar files of a directory, as source_list finds them. */
struct tar_names {
	struct source_env *env;
	const char *dir;
	char **v;
	size_t n, cap;
};

/* Keeps `name` if it is a *.tar regular file (following symlinks). */
static int take_tar(void *arg, const char *name, int is_dir)
{
	struct tar_names *tn = arg;
	struct source_info info;
	char *path, **q;

	if (!layout_tar_shard_suffix(name))
		return 0;
	if (!(path = source_join(tn->dir, name)))
		return -ENOMEM;
	if (is_dir || source_stat(tn->env, path, &info) < 0 || info.is_dir) {
		sfs_warn("%s: not a regular file: skipped", path);
		free(path);
		return 0;
	}
	free(path);
	if (tn->n == tn->cap) {
		tn->cap = tn->cap ? 2 * tn->cap : 64;
		if (!(q = realloc(tn->v, tn->cap * sizeof(*q))))
			return -ENOMEM;
		tn->v = q;
	}
	if (!(tn->v[tn->n] = strdup(name)))
		return -ENOMEM;
	tn->n++;
	return 0;
}

/* The *.tar files of directory `dir`, sorted: names in *out (malloc'ed). */
static int list_tars(struct source_env *env, const char *dir, char ***out, size_t *n)
{
	struct tar_names tn = { .env = env, .dir = dir };
	int rc = source_list(env, dir, take_tar, &tn);

	/* a URL's failure was named by core/io with what the server said
	 * (source.h); "not there" is said by nobody */
	if (rc < 0 && rc != -ENOMEM && (!source_is_url(dir) || rc == -ENOENT))
		sfs_err("%s: cannot list: %s", dir, strerror(-rc));
	else if (rc == 0 && tn.n == 0) {
		sfs_err("%s: no .tar or .zip files in this directory", dir);
		rc = -ENOENT;
	}
	if (rc < 0) {
		while (tn.n)
			free(tn.v[--tn.n]);
		free(tn.v);
		return rc;
	}
	if (tn.n > 1)
		qsort(tn.v, tn.n, sizeof(*tn.v), name_cmp);
	*out = tn.v;
	*n = tn.n;
	return 0;
}

/* Fills l->src from SOURCE: one tar, or every tar of a directory, and
 * opens them. */
static int find_sources(struct tar_layout *l, struct source_env *env,
			const char *source)
{
	char **names = NULL, *p;
	size_t i, n = 1, len = strlen(source) + 2;
	struct source_info info;
	int rc;

	if ((rc = source_stat(env, source, &info)) < 0) {
		sfs_err("%s: %s", source, strerror(-rc));
		return rc;
	}
	if (info.is_dir) {
		rc = list_tars(env, source, &names, &n);
		if (rc < 0)
			return rc;
		/* a joined path, percent-encoded in a URL: 3 bytes a byte */
		for (i = 0; i < n; i++)
			len += strlen(source) + 4 * strlen(names[i]) + 4;
	}
	l->src = calloc(n, sizeof(*l->src));
	l->strings = p = malloc(len);
	rc = -ENOMEM;
	if (!l->src || !p)
		goto out;
	l->nsrc = n;
	if (!names) {
		l->src[0].path = strcpy(p, source);
		l->src[0].dir = p + strlen(p);  /* "" */
	}
	for (i = 0; names && i < n; i++) {
		char *path = source_join(source, names[i]);

		if (!path)
			goto out;
		l->src[i].path = strcpy(p, path);
		p += strlen(path) + 1;
		free(path);
		l->src[i].dir = p;
		p += sprintf(p, "%.*s", (int)(strlen(names[i]) -
					      layout_tar_shard_suffix(names[i])), names[i]) + 1;
	}
	rc = tarindex_sources_open(env, l->src, l->nsrc);
out:
	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ------------------------------------------------------------ index */

static int build_index(void *arg, struct index_writer *w)
{
	struct tar_layout *l = arg;
	struct tarindex_build_opts bo = {
		.recursive = l->o->recursive, .quiet = l->o->quiet, .what = "indexing tar",
		.checksums = l->o->checksums,
	};

	return tarindex_build(w, TAG_PREFIX, l->src, l->nsrc, &bo);
}

static int attach_index(void *arg, const struct index_map *m, const char *path)
{
	struct tar_layout *l = arg;
	int rc = tarindex_open(&l->t, m, TAG_PREFIX, l->src, l->nsrc);

	/* -o checksums wants them: an index without is rebuilt (with them,
	 * an index is used by every mount, which then checks its reads) */
	if (rc == 0 && l->o->checksums && !l->t.sums) {
		sfs_info("%s: the index has no checksums, which -o checksums asks for",
			 path);
		tarindex_close(&l->t);
		rc = -EBADMSG;
	}
	return rc;
}

/* Maps the index, building it first when missing, stale or corrupt. */
static int load_index(struct tar_layout *l, const struct sfs_opts *o)
{
	struct index_fp fp;
	char key[16];
	/* one file per option set that shapes the tree, as ImageNet's are:
	 * mounts with other options then do not rebuild each other's */
	struct index_job job = { "tar", key, &fp, build_index, attach_index, l, NULL, NULL };
	int rc;

	index_fp_init(&fp, "tar");
	rc = tarindex_fp_add(&fp, l->src, l->nsrc, o->recursive);
	snprintf(key, sizeof(key), "r%u", o->recursive);
	l->o = o;
	return rc < 0 ? rc : index_load(o, &job, &l->map);
}

/*
 * A symlink that leads out of the mount through other symlinks is not
 * shown (the build already skipped those whose own target leaves).
 */
static int hidden(const struct tar_layout *l, uint32_t i)
{
	uint32_t k = tarindex_count_below(l->hidden, l->nhidden, i);

	return k < l->nhidden && l->hidden[k] == i;
}

/* Finds the hidden symlinks once, at mount, and says so. */
static int find_hidden(struct tar_layout *l, const char *source)
{
	int rc = tarindex_escaping_links(&l->t, &l->hidden, &l->nhidden);

	if (rc < 0)
		sfs_err("%s: following the symlinks: %s", source, strerror(-rc));
	else if (l->nhidden)
		sfs_warn("%s: %u symlink(s) lead out of the mount through other symlinks "
			 "(the first: '%s'): not shown", source, l->nhidden,
			 tarindex_name(&l->t, l->hidden[0]));
	return rc;
}

/* ------------------------------------------------------------ ops */

static int node_of(const struct tar_layout *l, uint64_t ino, uint32_t *i)
{
	if (SFS_INO_KIND(ino) != 0 || ino < INO0 || ino - INO0 >= l->t.nnodes)
		return -ENOENT;
	*i = (uint32_t)(ino - INO0);
	return hidden(l, *i) ? -ENOENT : 0;
}

/* Directories among nodes [0, end). */
static uint32_t dirs_before(const struct tarindex *t, uint64_t end)
{
	return tarindex_count_below(t->dirs, t->ndirs, end);
}

/*
 * A file's names (hard links) are one inode, that of the group's first
 * node, as tar -x makes them: du, cp -a and rsync -H see one file.
 */
static void fill_attr(const struct tar_layout *l, uint32_t i, struct sfs_attr *a)
{
	const struct tarindex_node *n = tarindex_node(&l->t, i);
	const struct tarindex_hardlink *h;
	uint64_t size = tarindex_node_size(n);

	a->ino = i + INO0;
	a->mtime = n->mtime;
	a->hole = 0;
	switch (tarindex_node_type(n)) {
	case TARINDEX_DIR:
		/* children are contiguous, so are their subdirectories */
		a->mode = S_IFDIR | 0555;
		a->nlink = 2 + dirs_before(&l->t, n->off + size) -
			   dirs_before(&l->t, n->off);
		a->size = 0;
		break;
	case TARINDEX_SYMLINK:
		a->mode = S_IFLNK | 0777;
		a->nlink = 1;
		a->size = size;
		break;
	default:
		a->mode = S_IFREG | 0444;
		a->nlink = 1;
		a->size = size;
		a->hole = size - tarindex_stored(&l->t, i);
		if ((h = tarindex_hardlink(&l->t, i))) {
			a->ino = h->first + INO0;
			a->nlink = h->nlink;
		}
	}
}

static int tar_getattr(void *priv, uint64_t ino, struct sfs_attr *out)
{
	struct tar_layout *l = priv;
	uint32_t i;
	int rc = node_of(l, ino, &i);

	if (rc == 0)
		fill_attr(l, i, out);
	return rc;
}

static int tar_lookup(void *priv, uint64_t parent, const char *name,
		      struct sfs_attr *out)
{
	struct tar_layout *l = priv;
	uint32_t dir;
	int64_t i;
	int rc = node_of(l, parent, &dir);

	if (rc < 0)
		return rc;
	i = tarindex_lookup(&l->t, dir, name);
	if (i < 0)
		return (int)i;
	if (hidden(l, (uint32_t)i))
		return -ENOENT;
	fill_attr(l, (uint32_t)i, out);
	return 0;
}

static int tar_readdir(void *priv, uint64_t ino, uint64_t off, sfs_fill_fn fill,
		       void *arg)
{
	struct tar_layout *l = priv;
	struct sfs_attr a;
	uint32_t dir, first, count;
	uint64_t k;
	int rc = node_of(l, ino, &dir);

	if (rc == 0)
		rc = tarindex_children(&l->t, dir, &first, &count);
	if (rc < 0)
		return rc;
	for (k = off; k < count; k++) {
		if (hidden(l, first + (uint32_t)k))
			continue;
		fill_attr(l, first + (uint32_t)k, &a);
		if (fill(arg, tarindex_name(&l->t, first + (uint32_t)k), &a, k + 1))
			break;
	}
	return 0;
}

static ssize_t tar_read(void *priv, uint64_t ino, char *buf, size_t size,
			uint64_t off)
{
	struct tar_layout *l = priv;
	uint32_t i;
	int rc = node_of(l, ino, &i);

	if (rc < 0)
		return rc;
	return tarindex_pread(&l->t, i, buf, size, off);
}

/*
 * The member's bytes are [off, off + size) of its source.  A source that
 * changed since mounting would splice other bytes, or short ones (which the
 * kernel would take for the end of the file): checked here, -EIO.
 */
static int tar_extent(void *priv, uint64_t ino, struct source **src,
		      uint64_t *base)
{
	struct tar_layout *l = priv;
	const struct tarindex_node *n;
	uint32_t i;

	if (node_of(l, ino, &i) < 0)
		return -ENOTSUP;
	n = tarindex_node(&l->t, i);
	if (!tarindex_in_place(&l->t, i))
		return -ENOTSUP;	/* sparse, deflated, or a zip member not yet checked */
	if (source_check(tarindex_src(&l->t, tarindex_node_src(n))) < 0)
		return -EIO;
	*src = tarindex_src(&l->t, tarindex_node_src(n));
	*base = n->off;
	return 0;
}

static int tar_readlink(void *priv, uint64_t ino, char *buf, size_t size)
{
	struct tar_layout *l = priv;
	const char *target;
	uint64_t len;
	uint32_t i;
	int rc = node_of(l, ino, &i);

	if (rc < 0)
		return rc;
	target = tarindex_link(&l->t, i, &len);
	if (!target)
		return -EINVAL;
	if (len + 1 > size)
		return -ENAMETOOLONG;
	memcpy(buf, target, len + 1);
	return 0;
}

static void tar_statfs(void *priv, uint64_t *files, uint64_t *bytes)
{
	struct tar_layout *l = priv;

	*files = l->t.nnodes - l->nhidden - l->nlinked;	/* inodes */
	*bytes = l->t.total_bytes;
}

static void tar_destroy(void *priv)
{
	struct tar_layout *l = priv;

	if (!l)
		return;
	if (l->t.nodes) {
		tarindex_close(&l->t);
		index_map_close(&l->map);
	}
	tarindex_sources_close(l->src, l->nsrc);
	free(l->src);
	free(l->strings);
	free(l->hidden);
	free(l);
}

static size_t tar_tars(void *priv, const char **names, uint32_t *depth,
		       size_t max)
{
	struct tar_layout *l = priv;
	size_t i;

	for (i = 0; i < l->nsrc && i < max; i++) {
		names[i] = l->src[i].path;
		depth[i] = l->recursive;
	}
	return l->nsrc;
}

static uint64_t tar_checksummed(void *priv)
{
	return tarindex_nsummed(&((struct tar_layout *)priv)->t);
}

static const struct layout_ops tar_ops = {
	.name = "tar",
	.getattr = tar_getattr,
	.lookup = tar_lookup,
	.readdir = tar_readdir,
	.read = tar_read,
	.extent = tar_extent,
	.readlink = tar_readlink,
	.tars = tar_tars,
	.checksummed = tar_checksummed,
	.statfs = tar_statfs,
	.destroy = tar_destroy,
};

int layout_tar_open(const struct sfs_opts *o, struct source_env *env,
		    struct layout *out)
{
	struct tar_layout *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -ENOMEM;
	l->recursive = o->recursive;
	rc = find_sources(l, env, o->source);
	if (rc == 0)
		rc = load_index(l, o);
	if (rc == 0)
		rc = find_hidden(l, o->source);
	for (uint32_t k = 0; rc == 0 && k < l->t.nhardlinks; k++)
		l->nlinked += l->t.hardlinks[k].node != l->t.hardlinks[k].first;
	if (rc < 0) {
		tar_destroy(l);
		return rc;
	}
	out->ops = &tar_ops;
	out->priv = l;
	return 0;
}
