/*
 * imagenet_samples.c - per-sample helpers of the ImageNet layout
 * (imagenet_samples.h), shared by the layout index's build and the
 * mounted tree.
 */
#include "layouts/imagenet_samples.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "formats/vtar.h"
#include "search.h"

/* the label of canonical sample c: the last class starting at or before c */
uint32_t imagenet_label_of(const struct in_split *sp, uint64_t c)
{
	return SFS_PARTITION_POINT(uint32_t, 1, sp->ncls, i, sp->cstart[i] <= c) - 1;
}

/* a member's WebDataset key: its name up to the last dot */
size_t imagenet_stem_len(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot && dot != name ? (size_t)(dot - name) : strlen(name);
}

uint64_t imagenet_record_bytes(const struct in_split *sp, uint64_t p)
{
	uint32_t node = in_split_node(sp, sp->ord[p]);

	return vtar_sample_size(imagenet_stem_len(tarindex_name(&sp->t, node)),
				tarindex_node_size(tarindex_node(&sp->t, node)), 0);
}

/* byte offset of position p in the concatenated records of the split */
uint64_t imagenet_cum_offset(const struct in_split *sp, uint64_t p)
{
	uint64_t q = p - p % VOFF_STEP, off = sp->voff[p / VOFF_STEP];

	for (; q < p; q++)
		off += imagenet_record_bytes(sp, q);
	return off;
}

/* line j of shuffled/<split>.txt into buf; returns its length */
int imagenet_shuffled_line(const struct in_split *sp, uint64_t S, uint64_t j,
		  char *buf, size_t len)
{
	uint32_t c = sp->shuf[j];

	return snprintf(buf, len, "%llu/%u.%s\n",
			(unsigned long long)(sp->pos[c] / S), imagenet_label_of(sp, c),
			tarindex_name(&sp->t, in_split_node(sp, c)));
}

/*
 * The sparse prefix sums of split sp in its orders (n = sp->h.n): voff,
 * n / VOFF_STEP + 1 vtar record offsets, and soff, n / SOFF_STEP + 1
 * shuffled.txt line offsets; *txt_size the shuffled.txt size.  The build
 * stores them; an epoch's view (imagenet_epochs.c) makes its own.  What
 * a sample adds is found in canonical order first (its name and size,
 * read in index order) and then summed in the orders' (a gather from
 * those arrays): summed straight in a shuffled order, each sample's name
 * was a cache miss, and an epoch took 2.7-3.9x as long for ImageNet's
 * 1.28 M (tools/bench/epochbench.sh).  0 or -ENOMEM.
 */
int imagenet_make_offsets(const struct in_split *sp, uint64_t S, uint64_t *voff,
			  uint64_t *soff, uint64_t *txt_size)
{
	uint64_t n = sp->h.n, p, c, off = 0, *rb;
	uint32_t *tl, l = 0;

	rb = malloc(n * (sizeof(*rb) + sizeof(*tl)) + 1);
	if (!rb)
		return -ENOMEM;
	tl = (uint32_t *)(rb + n);
	for (c = 0; c < n; c++) {
		uint32_t node = in_split_node(sp, c);
		const char *name = tarindex_name(&sp->t, node);

		while (l + 1 < sp->ncls && sp->cstart[l + 1] <= c)
			l++;	/* imagenet_label_of(sp, c), walking */
		rb[c] = vtar_sample_size(imagenet_stem_len(name),
					 tarindex_node_size(tarindex_node(&sp->t, node)), 0);
		/* "<k>/<label>.<name>\n" but for <k> */
		tl[c] = decimal_digits(l) + 1 + (uint32_t)strlen(name) + 2;
	}
	for (p = 0; p <= n; off += p < n ? rb[sp->ord[p]] : 0, p++)
		if (p % VOFF_STEP == 0)
			voff[p / VOFF_STEP] = off;
	for (p = 0, off = 0; p <= n; p++) {
		if (p % SOFF_STEP == 0)
			soff[p / SOFF_STEP] = off;
		if (p < n)
			off += decimal_digits(sp->pos[sp->shuf[p]] / S) + tl[sp->shuf[p]];
	}
	free(rb);
	*txt_size = off;
	return 0;
}

/* class `name` in a sorted WNID table, or -ENOENT */
int64_t imagenet_find_class_in(const char (*wnid)[WNID_LEN], uint32_t n, const char *name)
{
	uint32_t i = SFS_PARTITION_POINT(uint32_t, 0, n, m,
					 strncmp(wnid[m], name, WNID_LEN) < 0);

	return i < n && !strncmp(wnid[i], name, WNID_LEN) ? (int64_t)i : -ENOENT;
}
