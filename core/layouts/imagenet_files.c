/*
 * imagenet_files.c - finding the ILSVRC2012 tars and the devkit under
 * SOURCE, by their names (imagenet_files.h), through source_stat and
 * source_list, so a URL directory works as a local one.
 *
 * Says what under SOURCE is not served.
 *
 * Not for: reading them (imagenet_tars.c, imagenet_build.c).
 */
#include "layouts/imagenet_files.h"
#include "formats/tar.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* <wnid>.tar, or recompressed: <wnid>.tar.gz... */
static int is_wnid_tar(const char *name)
{
	const char *sfx;
	int i;

	if (name[0] != 'n')
		return 0;
	for (i = 1; i <= 8; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	sfx = tar_archive_suffix(name);
	return sfx && !strcmp(name + 9, sfx);
}

/* Whether `name` is base + an archive suffix (a release tar's name). */
static int is_release(const char *name, const char *base)
{
	size_t n = strlen(base);
	const char *sfx = tar_archive_suffix(name);

	return sfx && !strncmp(name, base, n) && !strcmp(name + n, sfx);
}

/* Whether `path` is a file; its stamp in *st if so. */
static int is_file(struct source_env *env, const char *path, struct source_stamp *st)
{
	struct source_info info;

	if (source_stat(env, path, &info) || info.is_dir)
		return 0;
	if (st)
		*st = info.stamp;
	return 1;
}

static int add_source(struct in_split *sp, char *path, const char *dir)
{
	struct tarindex_source *n;

	if (!path)
		return -ENOMEM;
	n = realloc(sp->src, (sp->nsrc + 1) * sizeof(*n));
	if (!n) {
		free(path);
		return -ENOMEM;
	}
	sp->src = n;
	memset(&n[sp->nsrc], 0, sizeof(*n));
	n[sp->nsrc].path = path;
	n[sp->nsrc].dir = strdup(dir);
	if (!n[sp->nsrc].dir) {
		free(path);
		return -ENOMEM;
	}
	sp->nsrc++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct wnid_tars {
	char **v;
	size_t n;
};

/* source_list callback: keeps the <wnid>.tar names */
static int take_wnid_tar(void *arg, const char *name, int is_dir)
{
	struct wnid_tars *w = arg;
	char **nn;

	if (!is_wnid_tar(name))
		return 0;
	if (!(nn = realloc(w->v, (w->n + 1) * sizeof(*nn))))
		return -ENOMEM;
	w->v = nn;
	if (!(nn[w->n] = strdup(name)))
		return -ENOMEM;
	w->n++;
	return 0;
}

/* train/<wnid>.tar, sorted: each class tar is a source at dir <wnid>.  A
 * directory that cannot be listed has none. */
static int scan_class_tars(struct source_env *env, struct in_split *sp, const char *dir)
{
	struct wnid_tars w = { NULL, 0 };
	char wnid[16];
	size_t i;
	int rc = source_list(env, dir, take_wnid_tar, &w);

	rc = rc == -ENOMEM ? rc : 0;
	if (w.n > 1)	/* qsort(NULL, 0) is undefined */
		qsort(w.v, w.n, sizeof(*w.v), cmp_str);
	for (i = 0; i < w.n; i++) {
		if (!rc) {
			memcpy(wnid, w.v[i], 9);
			wnid[9] = '\0';
			rc = add_source(sp, source_join(dir, w.v[i]), wnid);
		}
		free(w.v[i]);
	}
	free(w.v);
	return rc;
}

/* Kaggle's zip: SOURCE itself (a *.zip file), or IMAGENET_KAGGLE_ZIP in
 * it; both splits read it (imagenet_tars.c finds their directories).
 * 1 if found, 0 if not, -ENOMEM. */
static int find_kaggle(struct in_layout *L, struct source_env *env, const char *root)
{
	size_t n = strlen(root);
	char *p = n > 4 && !strcmp(root + n - 4, ".zip") && is_file(env, root, NULL) ?
		  strdup(root) : source_join(root, IMAGENET_KAGGLE_ZIP);
	int rc;

	if (!p)
		return -ENOMEM;
	if (!is_file(env, p, NULL)) {
		free(p);
		return 0;
	}
	rc = add_source(&L->sp[TRAIN], p, "");
	if (!rc)
		rc = add_source(&L->sp[VAL], strdup(p), "");
	L->kaggle = 1;
	return rc ? rc : 1;
}

/* root's release tar `base` + the first archive suffix naming a file (the
 * plain ".tar" first): malloc'ed, or NULL (none; ENOMEM). */
static char *find_release(struct source_env *env, const char *root,
			  const char *base)
{
	const char *sfx;
	char name[64], *p;
	size_t i;

	for (i = 0; (sfx = tar_archive_suffix_nth(i)); i++) {
		snprintf(name, sizeof(name), "%s%s", base, sfx);
		if (!(p = source_join(root, name)))
			return NULL;
		if (is_file(env, p, NULL))
			return p;
		free(p);
	}
	return NULL;
}

int imagenet_find_sources(struct in_layout *L, struct source_env *env,
			  const char *root)
{
	char *p;
	int rc = find_kaggle(L, env, root);

	if (rc)
		return rc < 0 ? rc : 0;

	p = find_release(env, root, IMAGENET_TRAIN_BASE);
	if (p) {
		rc = add_source(&L->sp[TRAIN], p, "");
		L->sp[TRAIN].recursive = 1;	/* expand the class tars */
	} else {
		p = source_join(root, "train");
		rc = p ? scan_class_tars(env, &L->sp[TRAIN], p) : -ENOMEM;
		free(p);
	}
	p = rc ? NULL : find_release(env, root, IMAGENET_VAL_BASE);
	if (p)
		rc = add_source(&L->sp[VAL], p, "");
	p = source_join(root, IMAGENET_DEVKIT);
	if (p && is_file(env, p, &L->devkit_stamp))
		L->devkit = p;
	else
		free(p);
	return rc;
}

int imagenet_detect(struct source_env *env, const char *source,
		    const struct source_info *info)
{
	struct in_layout L;
	int found;
	size_t s, i;

	memset(&L, 0, sizeof(L));
	if (imagenet_find_sources(&L, env, source))
		return 0;
	found = L.sp[TRAIN].nsrc || L.sp[VAL].nsrc;
	/* a zip is Kaggle's by its name only: any other is layout=tar's */
	if (L.kaggle && !info->is_dir) {
		const char *base = strrchr(source, '/');

		found = !strcmp(base ? base + 1 : source, IMAGENET_KAGGLE_ZIP);
	}
	for (s = 0; s < NSPLIT; s++) {
		for (i = 0; i < L.sp[s].nsrc; i++) {
			free((char *)L.sp[s].src[i].path);
			free((char *)L.sp[s].src[i].dir);
		}
		free(L.sp[s].src);
	}
	free(L.devkit);
	return found;
}

struct unserved {
	const struct in_layout *L;
	const char *root;
};

/* source_list callback: warns of an entry of SOURCE the layout leaves out */
static int warn_unserved(void *arg, const char *name, int is_dir)
{
	const struct unserved *u = arg;
	const struct in_split *tr = &u->L->sp[TRAIN];
	/* train/ is used when its class tars are, not beside the train tar */
	int train_dir = tr->nsrc && !tr->recursive;
	char *path;

	if (name[0] == '.' || (!is_dir && (is_release(name, IMAGENET_TRAIN_BASE) ||
					   is_release(name, IMAGENET_VAL_BASE) ||
					   !strcmp(name, IMAGENET_DEVKIT))) ||
	    (is_dir && train_dir && !strcmp(name, "train")))
		return 0;
	if (!(path = source_join(u->root, name)))
		return -ENOMEM;
	sfs_warn("%s: not served (layout=imagenet serves " IMAGENET_TRAIN_TAR
		 " or train/<wnid>.tar, " IMAGENET_VAL_TAR " and " IMAGENET_DEVKIT ")",
		 path);
	free(path);
	return 0;
}

void imagenet_say_unserved(const struct in_layout *L, struct source_env *env,
			   const char *root)
{
	struct unserved u = { L, root };

	if (L->kaggle)
		return;	/* one zip: imagenet_tars.c says what it lacks */
	/* a server that gives no listing: nothing to say of its other files */
	source_list(env, root, warn_unserved, &u);
	if (!L->sp[TRAIN].nsrc)
		sfs_warn("%s: layout=imagenet without " IMAGENET_TRAIN_TAR " or "
			 "train/<wnid>.tar: /train is not served", root);
	if (!L->sp[VAL].nsrc)
		sfs_warn("%s: layout=imagenet without " IMAGENET_VAL_TAR ": /val "
			 "is not served", root);
	if (!L->devkit)
		sfs_warn("%s: layout=imagenet without " IMAGENET_DEVKIT ": "
			 "classes.txt has no words%s", root, L->sp[VAL].nsrc ?
			 ", and /val is flat, without labels or shards" : "");
}
