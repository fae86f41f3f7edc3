/*
 * samplefs-inspect - what samplefs would serve from SOURCE, without FUSE.
 *
 *   samplefs-inspect [--verify] [--save-index=FILE] [-o key=value,...] SOURCE
 *
 * Opens the layout the daemon would (building its index if needed) and
 * prints one summary line: for ImageNet
 *   Classes: 1000 | Train: 1281167 | Val: 50000 | Elapsed: 12.3s
 * and for other sources the files and bytes the mount would show.
 * --verify then streams every member of every source tar (and of tars
 * nested in them), checking header checksums and that each member's data
 * is all there; the first bad member is reported with its offset and the
 * exit status is 1.  For layouts with no tars behind them (quickdraw, npy)
 * it reads every file of the tree as the mount would serve it: for Quick,
 * Draw! every stroke record decoded, every stroke block's checksum.
 *
 * --save-index=FILE builds SOURCE's indexes afresh (in a temporary
 * directory next to FILE, removed after) and writes them to FILE as one
 * prebuilt index (index/prebuilt.h), for mounts on other machines to take
 * with -o index=FILE or a URL serving it: the cluster's one build.
 * FILE may be a bucket's key, s3://BUCKET/KEY or gs://BUCKET/KEY: the
 * index is built in $TMPDIR (else /tmp) and uploaded there, with the
 * bucket options (endpoint, region, profile) and credentials a mount
 * would use, for mounts to take with -o index=s3://BUCKET/KEY.
 *
 * --verify reads the tars the layout itself lists (layout_ops.tars), so a
 * URL SOURCE is verified as a local one.
 *
 * --checksums (or -o checksums) builds the index with every member's
 * CRC32C, reading all their bytes once (tarindex.h, "Checksums"): with
 * --save-index, the cluster's one pass over them.  --verify on an index
 * that has checksums also scrubs the tree: every file read through the
 * layout, which checks each member against its CRC32C (ImageNet: train/
 * and val/, each member once; its shards are views of the same members);
 * every member that fails is listed ("bad: PATH"), and the exit status is
 * 1 when any does.
 *
 * Not a mount and not a repair tool.  Only the -o options that shape an
 * index are understood here (layout, index_dir, shard_size, shard_seed,
 * shuffle_seed, recursive, classes, per_class, seed, quiet), cacert and
 * insecure for https, and the bucket options (endpoint, region, profile).
 */
#include "layouts/layouts.h"
#include "clock.h"
#include "layouts/layout_imagenet.h"
#include "log.h"
#include "options.h"
#include "formats/tar.h"
#include "formats/zipwalk.h"
#include "index/index.h"
#include "index/prebuilt.h"
#include "index/tarindex/tarindex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static int parse_u32(const char *v, uint32_t *out)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (!*v || *end || x > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

/* one key=value; the strings stay owned by argv */
static int set_opt(struct sfs_opts *o, char *kv)
{
	char *v = strchr(kv, '=');

	if (!strcmp(kv, "quiet"))
		return o->quiet = 1, 0;
	if (!strcmp(kv, "insecure"))
		return o->remote.insecure = 1, 0;
	if (!strcmp(kv, "anonymous"))
		return o->remote.anonymous = 1, 0;
	if (!strcmp(kv, "checksums"))
		return o->checksums = 1, 0;
	if (!v)
		return -EINVAL;
	*v++ = '\0';
	if (!strcmp(kv, "layout"))
		return o->layout = v, 0;
	if (!strcmp(kv, "index_dir"))
		return o->index_dir = v, 0;
	if (!strcmp(kv, "classes"))
		return o->classes_file = v, 0;
	if (!strcmp(kv, "cacert"))
		return o->remote.cacert = v, 0;
	if (!strcmp(kv, "endpoint"))
		return o->remote.endpoint = v, 0;
	if (!strcmp(kv, "region"))
		return o->remote.region = v, 0;
	if (!strcmp(kv, "profile"))
		return o->remote.profile = v, 0;
	if (!strcmp(kv, "addressing"))	/* as fs/opts.c: 1 path, 2 virtual */
		return !strcmp(v, "path") ? (o->remote.addressing = 1, 0) :
		       !strcmp(v, "virtual") ? (o->remote.addressing = 2, 0) : -EINVAL;
	if (!strcmp(kv, "shard_size"))
		return sfs_parse_size(v, &o->shard_size) || !o->shard_size ? -EINVAL : 0;
	if (!strcmp(kv, "per_class"))
		return sfs_parse_size(v, &o->per_class);
	if (!strcmp(kv, "shard_seed"))
		return o->has_shard_seed = 1, parse_u32(v, &o->shard_seed);
	if (!strcmp(kv, "shuffle_seed"))
		return parse_u32(v, &o->shuffle_seed);
	if (!strcmp(kv, "recursive"))
		return parse_u32(v, &o->recursive);
	if (!strcmp(kv, "seed"))
		return parse_u32(v, &o->seed);
	return -EINVAL;
}

static int parse_opts(struct sfs_opts *o, char *list)
{
	char *save = NULL, *kv;

	for (kv = strtok_r(list, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
		if (set_opt(o, kv)) {
			fprintf(stderr, "samplefs-inspect: bad option '%s'\n", kv);
			return -EINVAL;
		}
	return 0;
}

/* ---- --verify ----------------------------------------------------------- */

struct verify {
	struct source *src;
	const char *what;
	uint32_t depth;		/* nested tar levels still to expand */
	uint64_t members, bytes;
	char last[TAR_PATH_MAX];	/* the last good member, for messages */
	uint64_t last_hdr;
	char *buf;
};

static int walk_range(struct verify *v, uint64_t base, uint64_t len,
		      const char *what);

/* streams the member's data: all of it must be there */
static int stream_member(struct verify *v, const struct tar_member *m)
{
	uint64_t done = 0;

	while (done < m->stored) {
		size_t want = m->stored - done < CHUNK ? (size_t)(m->stored - done) : CHUNK;
		ssize_t n = source_pread(v->src, v->buf, want, m->offset + done);

		if (n <= 0) {
			fprintf(stderr, "verify: %s: member %s (header at offset %llu): "
				"data ends at %llu of %llu bytes\n", v->what, m->path,
				(unsigned long long)m->header, (unsigned long long)done,
				(unsigned long long)m->stored);
			return -EIO;
		}
		done += (uint64_t)n;
	}
	v->bytes += m->stored;
	return 0;
}

static int verify_member(void *arg, const struct tar_member *m)
{
	struct verify *v = arg;
	char nested[TAR_PATH_MAX * 2];
	int rc;

	if (m->type != TAR_FILE)
		return 0;
	rc = stream_member(v, m);
	if (rc)
		return rc;
	v->members++;
	snprintf(v->last, sizeof(v->last), "%s", m->path);
	v->last_hdr = m->header;
	if (v->depth && tarindex_member_is_tar(v->src, m)) {
		snprintf(nested, sizeof(nested), "%s:%s", v->what, m->path);
		v->depth--;
		rc = walk_range(v, m->offset, m->size, nested);
		v->depth++;
	}
	return rc;
}

static int walk_range(struct verify *v, uint64_t base, uint64_t len,
		      const char *what)
{
	const char *outer = v->what;
	char last[TAR_PATH_MAX];
	uint64_t last_hdr = v->last_hdr;
	int rc;

	memcpy(last, v->last, sizeof(last));
	v->what = what;
	v->last[0] = '\0';
	rc = tar_walk(v->src, base, len, what, verify_member, v);
	if (rc == -EBADMSG || rc == -EINVAL)
		fprintf(stderr, "verify: %s: damaged after member '%s' (header at offset %llu)\n",
			what, v->last[0] ? v->last : "(none)", (unsigned long long)v->last_hdr);
	v->what = outer;
	memcpy(v->last, last, sizeof(last));	/* the outer walk's last member */
	v->last_hdr = last_hdr;
	return rc;
}

/* One source of the layout streamed as a tar: 0, -errno, or 1 when it is
 * a zip (no tar headers to check: its members are verified by reading
 * them through the layout, which checks each one's CRC-32). */
static int verify_file(struct source_env *env, const char *path, uint32_t depth,
		       uint64_t *members, uint64_t *bytes)
{
	struct verify v = { .depth = depth };
	int rc = source_open(env, path, &v.src);

	if (rc < 0) {
		fprintf(stderr, "verify: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	if ((rc = zip_sniff(v.src)) != 0) {
		if (rc < 0)
			fprintf(stderr, "verify: %s: %s\n", path, strerror(-rc));
		source_close(v.src);
		return rc;
	}
	v.buf = malloc(CHUNK);
	rc = v.buf ? walk_range(&v, 0, source_stamp(v.src)->size, path) : -ENOMEM;
	free(v.buf);
	source_close(v.src);
	*members += v.members;
	*bytes += v.bytes;
	return rc;
}

/*
 * Layouts with no tars behind them (quickdraw, npy): every file of the
 * tree read through the layout, as the mount would serve it, and its size
 * checked.  For Quick, Draw! that decodes every stroke record and checks
 * the adler32 of every block of the index's stroke store (each block holds
 * a sample's record), and reads every image row and split line.
 */
#define TREE_BATCH 256

struct tree_entry {
	struct sfs_attr a;
	char name[NAME_MAX + 1];
};

struct tree_batch {
	struct tree_entry e[TREE_BATCH];
	size_t n;
	uint64_t next;		/* cookie after the last entry taken */
};

struct tree_verify {
	const struct layout *l;
	char *buf;
	uint64_t files, dirs, bytes;
	int scrub;		/* list files that fail, and go on */
	int skip_views;		/* not the layout's views: the members again */
	uint64_t bad;
};

static int take_entry(void *arg, const char *name, const struct sfs_attr *a,
		      uint64_t cookie)
{
	struct tree_batch *b = arg;

	if (b->n == TREE_BATCH)
		return 1;
	b->e[b->n].a = *a;
	snprintf(b->e[b->n].name, sizeof(b->e[b->n].name), "%s", name);
	b->n++;
	b->next = cookie;
	return 0;
}

static int verify_tree_file(struct tree_verify *t, const struct sfs_attr *a,
			    const char *path)
{
	uint64_t off = 0;
	ssize_t n;

	do {
		n = t->l->ops->read(t->l->priv, a->ino, t->buf, CHUNK, off);
		if (n == -EIO && t->scrub) {
			printf("bad: %s\n", path + 1);	/* said why above */
			t->bad++;
			return 0;
		}
		if (n < 0) {
			fprintf(stderr, "verify: %s: read at offset %llu: %s\n", path,
				(unsigned long long)off, strerror((int)-n));
			return (int)n;
		}
		off += (uint64_t)n;
	} while (n == CHUNK);
	if (off != a->size) {
		fprintf(stderr, "verify: %s: %llu bytes read, its size is %llu\n", path,
			(unsigned long long)off, (unsigned long long)a->size);
		return -EIO;
	}
	t->files++;
	t->bytes += off;
	return 0;
}

static int verify_tree_dir(struct tree_verify *t, uint64_t dir, const char *path)
{
	struct tree_batch *b = malloc(sizeof(*b));
	uint64_t off = 0;
	char *sub = NULL;
	size_t i;
	int rc = 0;

	if (!b)
		return -ENOMEM;
	t->dirs++;
	do {
		b->n = 0;
		rc = t->l->ops->readdir(t->l->priv, dir, off, take_entry, b);
		if (rc < 0) {
			fprintf(stderr, "verify: %s/: listing: %s\n", path, strerror(-rc));
			goto out;
		}
		for (i = 0; i < b->n && !rc; i++) {
			const struct sfs_attr *a = &b->e[i].a;

			if (asprintf(&sub, "%s/%s", path, b->e[i].name) < 0) {
				sub = NULL;
				rc = -ENOMEM;
				goto out;
			}
			if ((a->mode & S_IFMT) == S_IFDIR && t->skip_views &&
			    t->l->ops->view && t->l->ops->view(t->l->priv, a->ino))
				;	/* members read (and checked) elsewhere in the tree */
			else if ((a->mode & S_IFMT) == S_IFDIR)
				rc = verify_tree_dir(t, a->ino, sub);
			else if ((a->mode & S_IFMT) == S_IFREG)
				rc = verify_tree_file(t, a, sub);
			free(sub);
			sub = NULL;
		}
		off = b->next;
	} while (!rc && b->n == TREE_BATCH);
out:
	free(b);
	return rc;
}

static int verify_tree(const struct layout *l)
{
	struct tree_verify t = { .l = l };
	int rc;

	if (!(t.buf = malloc(CHUNK)))
		return -ENOMEM;
	rc = verify_tree_dir(&t, SFS_ROOT_INO, "");
	free(t.buf);
	printf("Verified: %llu files, %llu bytes in %llu directories, read through "
	       "the %s layout: %s\n", (unsigned long long)t.files,
	       (unsigned long long)t.bytes, (unsigned long long)t.dirs,
	       l->ops->name, rc ? "FAILED" : "ok");
	return rc;
}

/* --verify of a layout whose files have checksums: every file read
 * through it (each checked), each that fails listed; 0 or -EIO. */
static int scrub_tree(const struct layout *l)
{
	/* a layout's views (ImageNet's shards) hold its members again: each
	 * member is read (and checked) once */
	struct tree_verify t = { .l = l, .scrub = 1, .skip_views = 1 };
	int rc;

	if (!(t.buf = malloc(CHUNK)))
		return -ENOMEM;
	rc = verify_tree_dir(&t, SFS_ROOT_INO, "");
	free(t.buf);
	printf("Scrubbed: %llu files, %llu bytes against %llu checksums: %llu bad\n",
	       (unsigned long long)t.files, (unsigned long long)t.bytes,
	       (unsigned long long)l->ops->checksummed(l->priv),
	       (unsigned long long)t.bad);
	return rc ? rc : t.bad ? -EIO : 0;
}

/* Every tar the layout reads (its own list: any backend, any layout
 * that has tars), or else every file of its tree; a layout with zips
 * among its sources has its tree read too (the zips' members). */
static int verify_all(const struct layout *l)
{
	uint64_t members = 0, bytes = 0;
	const char **names = NULL;
	uint32_t *depth = NULL;
	size_t n, i, zips = 0;
	int rc = 0;

	if (!l->ops->tars)
		return verify_tree(l);
	n = l->ops->tars(l->priv, NULL, NULL, 0);
	names = calloc(n + 1, sizeof(*names));
	depth = calloc(n + 1, sizeof(*depth));
	if (!names || !depth) {
		rc = -ENOMEM;
		goto out;
	}
	l->ops->tars(l->priv, names, depth, n);
	for (i = 0; i < n && rc >= 0; i++) {
		/* as the daemon caps it; each level takes ~12 KiB of stack */
		rc = verify_file(l->env, names[i], depth[i] < TARINDEX_MAX_NEST ?
				 depth[i] : TARINDEX_MAX_NEST, &members, &bytes);
		zips += rc == 1;
	}
	rc = rc < 0 ? rc : 0;
	if (n > zips)
		printf("Verified: %llu members, %llu bytes in %zu tars: %s\n",
		       (unsigned long long)members, (unsigned long long)bytes,
		       n - zips, rc ? "FAILED" : "ok");
	if (zips && rc == 0)
		rc = verify_tree(l);
out:
	free(names);
	free(depth);
	return rc;
}

/* ---- main --------------------------------------------------------------- */

static void summary(const struct layout *l, double t0)
{
	struct imagenet_summary s;
	uint64_t files = 0, bytes = 0;

	if (layout_imagenet_summary(l, &s) == 0) {
		printf("Classes: %u | Train: %llu | Val: %llu | Elapsed: %.1fs\n",
		       s.classes, (unsigned long long)s.train, (unsigned long long)s.val,
		       sfs_now_s() - t0);
		return;
	}
	if (l->ops->statfs)
		l->ops->statfs(l->priv, &files, &bytes);
	printf("Layout: %s | Files: %llu | Bytes: %llu | Elapsed: %.1fs\n",
	       l->ops->name, (unsigned long long)files, (unsigned long long)bytes,
	       sfs_now_s() - t0);
}

static void usage(void)
{
	fprintf(stderr, "usage: samplefs-inspect [--verify] [--save-index=FILE] "
		"[--checksums] [-o key=value,...] SOURCE\n");
}

/* A new directory next to `out` (in $TMPDIR when out is a bucket's key)
 * for a build whose indexes go to out: malloc'ed, or NULL (said). */
static char *prebuild_dir(const char *out)
{
	const char *slash = strrchr(out, '/'), *tmp = getenv("TMPDIR");
	char *dir;
	int rc;

	if (source_is_bucket(out))
		rc = asprintf(&dir, "%s/.samplefs-prebuild.XXXXXX",
			      tmp && *tmp ? tmp : "/tmp");
	else
		rc = asprintf(&dir, "%.*s.samplefs-prebuild.XXXXXX",
			      slash ? (int)(slash - out + 1) : 0, out);
	if (rc < 0)
		return NULL;
	if (!mkdtemp(dir)) {
		fprintf(stderr, "samplefs-inspect: %s: cannot create a directory "
			"next to the prebuilt index: %s\n", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

int main(int argc, char **argv)
{
	char *real = NULL, *tmpdir = NULL;
	const char *save = NULL;
	struct sfs_opts o;
	struct layout l;
	int i, verify = 0, rc;
	double t0 = sfs_now_s();

	sfs_opts_default(&o);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--verify")) {
			verify = 1;
		} else if (!strcmp(argv[i], "--checksums")) {
			o.checksums = 1;	/* as -o checksums */
		} else if (!strncmp(argv[i], "--save-index=", 13) && argv[i][13]) {
			save = argv[i] + 13;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			if (parse_opts(&o, argv[++i]))
				return 2;
		} else if (argv[i][0] != '-' && !o.source) {
			o.source = argv[i];
		} else {
			usage();
			return 2;
		}
	}
	if (!o.source) {
		usage();
		return 2;
	}
	if (!source_is_url(o.source) && (real = source_resolve(o.source)))
		o.source = real;
	if (save) {	/* a build of its own, all of it: nothing saved before */
		if (!(tmpdir = prebuild_dir(save)))
			return 1;
		o.index_dir = tmpdir;
	}
	rc = layout_open(&o, NULL, &l);
	if (rc) {
		fprintf(stderr, "samplefs-inspect: %s: %s\n", o.source, strerror(-rc));
		goto out;
	}
	summary(&l, t0);
	if (verify)
		rc = verify_all(&l);
	if (verify && l.ops->checksummed && l.ops->checksummed(l.priv)) {
		int src = scrub_tree(&l);

		rc = rc ? rc : src;
	}
	layout_close(&l);
	if (rc == 0 && save)
		rc = source_is_bucket(save) ? index_prebuilt_upload(&o, tmpdir, save) :
		     index_prebuilt_save(tmpdir, save);
	if (rc == 0 && save)
		printf("Prebuilt index: %s\n", save);
out:
	if (tmpdir)
		index_dir_remove_private(tmpdir);
	free(tmpdir);
	free(real);
	return rc ? 1 : 0;
}
