/*
 * layout.c - picks the layout for a source: the one named by -o layout=,
 * or the first whose shape the source has (Quick, Draw!, ImageNet, a .npy
 * file or directory of them, a .tar file or directory of them).
 * Not a layout itself; it only dispatches to their constructors.
 */
#include "layouts/layout.h"
#include "layouts/imagenet_files.h"
#include "log.h"

#include <errno.h>
#include <string.h>

typedef int (*open_fn)(const struct sfs_opts *o, struct source_env *env,
		       struct layout *out);

static const char *const names[] = { "quickdraw", "npy", "tar", "imagenet" };
static const open_fn opens[] = { layout_quickdraw_open, layout_npy_open,
				 layout_tar_open, layout_imagenet_open };

static open_fn by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return opens[i];
	return NULL;
}

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

/* Whether `dir` holds at least one entry ending in `suffix`. */
static int dir_has(struct source_env *env, const char *dir, const char *suffix)
{
	return source_list(env, dir, ends_in, (void *)suffix) == 1;
}

static const char *detect(struct source_env *env, const char *source)
{
	struct source_info info;
	int isdir;

	if (layout_quickdraw_detect(env, source))
		return "quickdraw";
	if (imagenet_detect(env, source))
		return "imagenet";
	if (source_stat(env, source, &info))
		return NULL;
	isdir = info.is_dir;
	if (isdir ? dir_has(env, source, ".npy") : has_suffix(source, ".npy"))
		return "npy";
	if (isdir ? dir_has(env, source, ".tar") : has_suffix(source, ".tar"))
		return "tar";
	return NULL;
}

/* layout_choose with the mount's environment */
static const char *choose(const struct sfs_opts *o, struct source_env *env)
{
	const char *name = o->layout;
	struct source_info info;
	size_t i;
	int rc;

	if ((rc = source_stat(env, o->source, &info)) < 0) {
		sfs_err("%s: %s", o->source, strerror(-rc));
		errno = -rc;
		return NULL;
	}
	if (!name && !(name = detect(env, o->source))) {
		sfs_err("cannot tell the layout of %s; use -o layout=quickdraw|npy|tar|imagenet",
			o->source);
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return names[i];
	sfs_err("unknown layout '%s'; expected quickdraw, npy, tar or imagenet", name);
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
	return env;
}

const char *layout_choose(const struct sfs_opts *o)
{
	struct source_env *env = env_for(o);
	const char *name;
	int e;

	if (!env)
		return NULL;
	name = choose(o, env);
	e = errno;
	source_env_free(env);
	errno = e;
	return name;
}

int layout_open(const struct sfs_opts *o, struct layout *out)
{
	const char *name;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(out->env = env_for(o)))
		return -errno;
	name = choose(o, out->env);
	rc = name ? by_name(name)(o, out->env, out) : -errno;
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
