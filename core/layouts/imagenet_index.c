/*
 * imagenet_index.c - the ImageNet layout index: binding the mapped index
 * into struct in_layout.  A mount checks once every value the tree will
 * index with (imagenet_bind_layout), so lookups and reads need no bounds
 * checks.  Loading it, or building it when missing or stale, is
 * imagenet_build.c's (imagenet_open_layout_index), which calls this: the
 * build includes this file's header, never the other way round.
 *
 * The ImageNet layout is in files by job: imagenet_files.c (finding the
 * sources), imagenet_tars.c (the tar index), imagenet_build.c (building
 * and loading the layout index), imagenet_samples.c (per-sample helpers),
 * imagenet_orders.c (the orders), this file (the layout index's in-memory
 * form and binding), layout_imagenet.c (the tree).
 *
 * Threads: all of it runs in layout_imagenet_open, before another thread
 * can see the layout.
 */
#include "layouts/imagenet_index.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *const imagenet_split_name[NSPLIT] = { "train", "val" };

static const void *sect(const struct index_map *m, uint32_t tag, uint64_t want,
			int *bad)
{
	uint64_t len;
	const void *p = index_map_section(m, tag, &len);

	if (len != want || (want && !p))
		*bad = 1;
	return p;
}

/* every value that a lookup or read will index with is checked once here */
static int check_split(const struct in_split *sp, uint32_t nclasses)
{
	uint64_t n = sp->h.n, i;

	if (sp->h.samp_dense && (uint64_t)sp->h.samp_base + n > sp->t.nnodes)
		return -EBADMSG;
	/* the nodes are reached by number, not through a lookup: checked
	 * here (tarindex_node_check: their index blocks and bounds) */
	for (i = 0; i < n; i++)
		if (tarindex_node_check(&sp->t, in_split_node(sp, i)) < 0 ||
		    tarindex_node_type(tarindex_node(&sp->t, in_split_node(sp, i))) != TARINDEX_FILE)
			return -EBADMSG;
	if (!sp->h.labelled)
		return 0;
	if (sp->cstart[0] != 0 || sp->cstart[nclasses] != n)
		return -EBADMSG;
	for (i = 0; i < nclasses; i++)
		if (sp->cstart[i] > sp->cstart[i + 1])
			return -EBADMSG;
	return 0;
}

static int bind_split(struct in_layout *L, int s)
{
	struct in_split *sp = &L->sp[s];
	uint64_t n;
	int bad = 0;

	sp->h = L->head->split[s];
	n = sp->h.n;
	if (n > UINT32_MAX || (n && !sp->nsrc) || (sp->h.labelled && !L->head->nclasses))
		return -EBADMSG;
	sp->samp = sp->h.samp_dense ? NULL : sect(&L->lay, IN_STAG(s, 'S', 'P'), n * 4, &bad);
	if (sp->h.labelled) {
		sp->ncls = L->head->nclasses;
		sp->cstart = sect(&L->lay, IN_STAG(s, 'C', 'S'), (sp->ncls + 1) * 4ull, &bad);
		sp->voff = sect(&L->lay, IN_STAG(s, 'V', 'O'), (n / VOFF_STEP + 1) * 8, &bad);
		sp->soff = sect(&L->lay, IN_STAG(s, 'S', 'O'), (n / SOFF_STEP + 1) * 8, &bad);
		if (!bad && (sp->soff[0] || sp->voff[0] ||
			     sp->soff[n / SOFF_STEP] > sp->h.txt_size ||
			     sp->h.nshards != (n + L->S - 1) / L->S))
			bad = 1;
	}
	return bad ? -EBADMSG : check_split(sp, sp->ncls);
}

int imagenet_bind_layout(struct in_layout *L)
{
	int bad = 0, s, rc = 0;

	L->head = sect(&L->lay, IN_TAG('H', 'D', 'R'), sizeof(struct in_head), &bad);
	if (bad || L->head->version != IN_LAYOUT_VERSION || L->head->shard_size != L->S ||
	    L->head->nclasses > DEVKIT_MAX_CLASSES)
		return -EBADMSG;
	L->mtime = L->head->mtime;
	L->wnid = sect(&L->lay, IN_TAG('C', 'L', 'S'), (uint64_t)L->head->nclasses * WNID_LEN, &bad);
	L->classes_txt = index_map_section(&L->lay, IN_TAG('T', 'X', 'T'), &L->classes_len);
	for (uint32_t i = 0; !bad && i < L->head->nclasses; i++)
		bad = !memchr(L->wnid[i], '\0', WNID_LEN);	/* printed with %s */
	for (s = 0; !bad && !rc && s < NSPLIT; s++)
		rc = bind_split(L, s);
	/* classes.txt may be absent, but not damaged (said: rebuilt) */
	if (index_map_damaged(&L->lay))
		bad = 1;
	return bad ? -EBADMSG : rc;
}
