/*
 * layouts.h - the table of layouts (layouts.c): every layout by name, its
 * detection and its options, and opening the one a mount asks for or
 * whose shape its source has.  What the FUSE layer and the tools call to
 * get a layout; what a layout implements is layout.h's contract (each
 * layout includes that alone, so the table calls down into the layouts
 * and none calls back).
 */
#ifndef SFS_LAYOUTS_H
#define SFS_LAYOUTS_H

#include "layouts/layout.h"

/*
 * Opens the layout named by o->layout, or detects it from the source when
 * o->layout is NULL.  On error prints one clear line (naming the file) and
 * returns -errno.  Builds or loads the persistent index as needed.  Every
 * source of the mount is opened in out->env.
 */
int layout_open(const struct sfs_opts *o, const struct source_info *seen,
		struct layout *out);
/*
 * The layout layout_open would open: o->layout if it is a row of
 * layout_kinds (returned as its static name), else the detected one;
 * NULL, with one line printed and errno set, when the source is missing
 * (stat's errno) or cannot be reached (a URL: that cause, once), or the
 * layout unknown (EINVAL).  *seen (may be NULL) gets what the source's
 * stat said, for layout_open's `seen`, which then need not ask again
 * (NULL there: it asks).
 */
const char *layout_choose(const struct sfs_opts *o, struct source_info *seen);
void layout_close(struct layout *l);

/* One layout: a row of layout_kinds. */
struct layout_kind {
	const char *name;	/* -o layout=NAME */
	const char *title;	/* its section of --help */
	/* 1 when SOURCE (source_stat's info) has this layout's shape */
	int (*detect)(struct source_env *env, const char *source,
		      const struct source_info *info);
	/* sets out->ops and out->priv; its sources are opened in env (NULL:
	 * local paths only), which outlives the layout */
	int (*open)(const struct sfs_opts *o, struct source_env *env,
		    struct layout *out);
	/* the -o options only some layouts take that this one takes,
	 * space-separated; fs/opts.c refuses them for the other layouts */
	const char *options;
};

/* Every layout, in the order detection tries them; a NULL name ends it. */
extern const struct layout_kind layout_kinds[];
/* The row named `name`, or NULL. */
const struct layout_kind *layout_kind(const char *name);
/* 1 if option `opt` (without '=') is in k->options. */
int layout_kind_takes(const struct layout_kind *k, const char *opt);

#endif
