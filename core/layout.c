/*
 * layout.c - picks the layout for a source: the one named by -o layout=,
 * or the first whose shape the source has (Quick, Draw!, ImageNet, a .npy
 * file or directory of them, a .tar file or directory of them).
 * Not a layout itself; it only dispatches to their constructors.
 */
#include "layout.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

typedef int (*open_fn)(const struct sfs_opts *o, struct layout *out);

static open_fn by_name(const char *name)
{
	if (!strcmp(name, "npy"))
		return layout_npy_open;
	if (!strcmp(name, "quickdraw"))
		return layout_quickdraw_open;
	if (!strcmp(name, "tar"))
		return layout_tar_open;
	if (!strcmp(name, "imagenet"))
		return layout_imagenet_open;
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

int layout_open(const struct sfs_opts *o, struct layout *out)
{
	const char *name = o->layout;
	struct stat st;
	open_fn fn;

	if (!strstr(o->source, "://") && stat(o->source, &st)) {
		int rc = -errno;
		sfs_err("%s: %s", o->source, strerror(errno));
		return rc;
	}
	if (!name && !(name = detect(o->source))) {
		sfs_err("cannot tell the layout of %s; use -o layout=quickdraw|npy|tar|imagenet",
			o->source);
		return -EINVAL;
	}
	if (!(fn = by_name(name))) {
		sfs_err("unknown layout '%s'; expected quickdraw, npy, tar or imagenet", name);
		return -EINVAL;
	}
	return fn(o, out);
}

void layout_close(struct layout *l)
{
	if (l->ops && l->ops->destroy)
		l->ops->destroy(l->priv);
	l->ops = NULL;
	l->priv = NULL;
}
