/*
 * layouts.c - the table of layouts (layout_kinds: name, detection,
 * constructor, the options only it takes) and picking one for a source:
 * the one named by -o layout=, or the first row whose shape the source
 * has.  Adding a layout is one row here.
 * Not a layout itself; it only dispatches to their constructors.
 */
#include "layouts/layouts.h"
#include "layouts/imagenet_files.h"
#include "index/zstore.h"
#include "io/codecs/zsource.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), m = strlen(suffix);

	return n > m && !strcmp(name + n - m, suffix);
}

/* source_list callback: stops (1) at a visible entry ending in arg */
static int ends_in(void *arg, const char *name, int is_dir)
{
	return name[0] != '.' && has_suffix(name, arg);
}

/* A file named *suffix, or a directory holding one. */
static int is_or_holds(struct source_env *env, const char *source,
		       const struct source_info *info, const char *suffix)
{
	if (!info->is_dir)
		return has_suffix(source, suffix);
	return source_list(env, source, ends_in, (void *)suffix) == 1;
}

static int npy_detect(struct source_env *env, const char *source,
		      const struct source_info *info)
{
	return is_or_holds(env, source, info, ".npy");
}

/* source_list callback: stops (1) at a shard of layout=tar */
static int is_shard(void *arg, const char *name, int is_dir)
{
	(void)arg;
	return layout_tar_shard_suffix(name) != 0;
}

static int tar_detect(struct source_env *env, const char *source,
		      const struct source_info *info)
{
	if (!info->is_dir)
		return layout_tar_shard_suffix(source) != 0;
	return source_list(env, source, is_shard, NULL) == 1;
}

/* In the order detection tries them: the more specific shapes first (an
 * ImageNet directory holds tars too). */
const struct layout_kind layout_kinds[] = {
	{ "quickdraw", "Quick, Draw!", layout_quickdraw_detect, layout_quickdraw_open,
	  "classes per_class image stroke_len seed split images strokes shard_size shard_seed" },
	{ "imagenet", "ImageNet", imagenet_detect, layout_imagenet_open,
	  "shard_size shard_seed shuffle_seed shard_prefetch checksums" },
	{ "npy", "arrays", npy_detect, layout_npy_open, "per_class" },
	{ "tar", "tars", tar_detect, layout_tar_open, "recursive checksums" },
	{ NULL, NULL, NULL, NULL, NULL }
};

const struct layout_kind *layout_kind(const char *name)
{
	const struct layout_kind *k;

	for (k = layout_kinds; k->name; k++)
		if (!strcmp(name, k->name))
			return k;
	return NULL;
}

int layout_kind_takes(const struct layout_kind *k, const char *opt)
{
	size_t n = strlen(opt);
	const char *p;

	for (p = k->options; (p = strstr(p, opt)); p += n)
		if ((p == k->options || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/* "quickdraw|imagenet|npy|tar" (sep "|") into buf. */
static const char *names(char *buf, size_t len, const char *sep)
{
	const struct layout_kind *k;
	size_t at = 0;

	buf[0] = '\0';
	for (k = layout_kinds; k->name && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       k == layout_kinds ? "" : sep, k->name);
	return buf;
}

/* source_list callback: stops at the first entry */
static int any(void *arg, const char *name, int is_dir)
{
	return 1;
}

/*
 * Before probing a URL directory for each layout's files: list it once.
 * When that fails for a cause every probe would meet (TLS verification,
 * a connection refused: -EIO; a bucket's refusal of the credentials:
 * -EACCES; said by core/io naming the URL and the cause), that one line is
 * all: -errno.  A 404 (*absent) is kept for the
 * end, as files may still be served under a directory with no listing.
 */
static int reachable(struct source_env *env, const char *source,
		     const struct source_info *info, int *absent)
{
	int rc;

	*absent = 0;
	if (!source_is_url(source) || !info->is_dir)
		return 0;
	rc = source_list(env, source, any, NULL);
	*absent = rc == -ENOENT;
	/* -EACCES: a bucket refused the credentials (an HTTP server's 401 or
	 * 403 to a listing is -ENOTSUP: its files may still be served) */
	return rc == -EIO || rc == -EACCES ? rc : 0;
}

/* A file in a compression samplefs does not read (x.tar.lz4): said, 1. */
static int other_codec(struct source_env *env, const char *source)
{
	struct source *s;
	int said;

	if (source_open(env, source, &s) < 0)
		return 0;
	said = zsource_refuse_other(s, source);
	source_close(s);
	return said;
}

/* An archive read through libarchive (formats/arcwalk.h, in place;
 * io/codecs/arxsource.h, decompressed once), by its name. */
static int by_libarchive_name(const char *base)
{
	static const char *const sfx[] = {
		".7z", ".rar", ".cpio", ".iso", ".tar.Z", ".taz", ".tar.lz4",
		".tar.lz", ".tlz", ".tar.lzma", ".tar.lzo", ".tzo", NULL,
	};
	size_t i;

	for (i = 0; sfx[i]; i++)
		if (has_suffix(base, sfx[i]))
			return 1;
	return 0;
}

/*
 * A single file's layout when its name says it, with no request: Kaggle's
 * ImageNet zip, a tar (compressed or not) or zip, an .npy.  Probing sends
 * one or more requests per layout's file names (some 44 for a URL), on
 * every mount; the probes would pick the same layout for these names.
 */
static const struct layout_kind *by_name(const char *source)
{
	const char *base = strrchr(source, '/');

	base = base ? base + 1 : source;
	if (!strcmp(base, IMAGENET_KAGGLE_ZIP))
		return layout_kind("imagenet");
	if (layout_tar_shard_suffix(base) || by_libarchive_name(base))
		return layout_kind("tar");
	if (has_suffix(base, ".npy"))
		return layout_kind("npy");
	return NULL;
}

static const struct layout_kind *detect(struct source_env *env, const char *source,
					const struct source_info *info)
{
	const struct layout_kind *k;
	char buf[128];
	int absent;

	if (!info->is_dir && (k = by_name(source)))
		return k;
	if ((errno = -reachable(env, source, info, &absent)))
		return NULL;
	for (k = layout_kinds; k->name; k++)
		if (k->detect(env, source, info))
			return k;
	if (absent)	/* every probe found nothing: no guess */
		sfs_err("%s: not found on the server (HTTP 404 to its listing and "
			"to every file a layout is detected by)", source);
	else if (info->is_dir || !other_codec(env, source))
		sfs_err("cannot tell the layout of %s; use -o layout=%s", source,
			names(buf, sizeof(buf), "|"));
	errno = absent ? ENOENT : EINVAL;
	return NULL;
}

/* layout_choose with the mount's environment */
static const struct layout_kind *choose(const struct sfs_opts *o,
					struct source_env *env, struct source_info *seen)
{
	const struct layout_kind *k;
	struct source_info info;
	char buf[128];
	int rc;

	if ((rc = source_stat(env, o->source, &info)) < 0) {
		/* core/io said why a URL failed, but for a plain 404 */
		if (!source_is_url(o->source))
			sfs_err("%s: %s", o->source, strerror(-rc));
		else if (rc == -ENOENT)
			sfs_err("%s: not found on the server", o->source);
		errno = -rc;
		return NULL;
	}
	if (seen)
		*seen = info;
	if (!o->layout)
		return detect(env, o->source, &info);
	if ((k = layout_kind(o->layout)))
		return k;
	sfs_err("unknown layout '%s'; expected one of %s", o->layout,
		names(buf, sizeof(buf), ", "));
	errno = EINVAL;
	return NULL;
}

/* A new environment for o's sources, or NULL with errno set (said). */
static struct source_env *env_for(const struct sfs_opts *o)
{
	struct source_env *env;
	int rc = source_env_new(&o->remote, &env);

	if (rc < 0) {
		sfs_err("%s: cannot set up its sources: %s", o->source, strerror(-rc));
		errno = -rc;
		return NULL;
	}
	index_zstore_attach(env, o);	/* gzip sources' access points */
	return env;
}

const char *layout_choose(const struct sfs_opts *o, struct source_info *seen)
{
	struct source_env *env = env_for(o);
	const struct layout_kind *k;
	int e;

	if (!env)
		return NULL;
	k = choose(o, env, seen);
	e = errno;
	source_env_free(env);
	errno = e;
	return k ? k->name : NULL;
}

int layout_open(const struct sfs_opts *o, const struct source_info *seen,
		struct layout *out)
{
	const struct layout_kind *k;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(out->env = env_for(o)))
		return -errno;
	if (seen)
		source_stat_seen(out->env, o->source, seen);
	k = choose(o, out->env, NULL);
	rc = k ? k->open(o, out->env, out) : -errno;
	if (rc < 0) {
		source_env_free(out->env);
		out->env = NULL;
	}
	return rc;
}

void layout_close(struct layout *l)
{
	if (l->ops && l->ops->destroy)
		l->ops->destroy(l->priv);
	source_env_free(l->env);
	l->ops = NULL;
	l->priv = NULL;
	l->env = NULL;
}
