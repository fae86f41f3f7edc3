/*
 * layout.c - picks the layout for a source: the one named by -o layout=,
 * or the first whose shape the source has (Quick, Draw!, ImageNet, a .npy
 * file or directory of them, a .tar file or directory of them).
 * Not a layout itself; it only dispatches to their constructors.
 */
#include "layouts/layout.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

typedef int (*open_fn)(const struct sfs_opts *o, struct layout *out);

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

/* Whether `dir` holds at least one entry ending in `suffix`. */
static int dir_has(const char *dir, const char *suffix)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d)))
		found = de->d_name[0] != '.' && has_suffix(de->d_name, suffix);
	closedir(d);
	return found;
}

static const char *detect(const char *source)
{
	struct stat st;
	int isdir;

	if (layout_quickdraw_detect(source))
		return "quickdraw";
	if (layout_imagenet_detect(source))
		return "imagenet";
	if (stat(source, &st))
		return NULL;
	isdir = S_ISDIR(st.st_mode);
	if (isdir ? dir_has(source, ".npy") : has_suffix(source, ".npy"))
		return "npy";
	if (isdir ? dir_has(source, ".tar") : has_suffix(source, ".tar"))
		return "tar";
	return NULL;
}

const char *layout_choose(const struct sfs_opts *o)
{
	const char *name = o->layout;
	struct stat st;
	size_t i;

	if (!strstr(o->source, "://") && stat(o->source, &st)) {
		int e = errno;

		sfs_err("%s: %s", o->source, strerror(e));
		errno = e;
		return NULL;
	}
	if (!name && !(name = detect(o->source))) {
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

int layout_open(const struct sfs_opts *o, struct layout *out)
{
	const char *name = layout_choose(o);

	return name ? by_name(name)(o, out) : -errno;
}

void layout_close(struct layout *l)
{
	if (l->ops && l->ops->destroy)
		l->ops->destroy(l->priv);
	l->ops = NULL;
	l->priv = NULL;
}
