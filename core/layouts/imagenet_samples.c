/*
 * imagenet_samples.c - per-sample helpers of the ImageNet layout
 * (imagenet_samples.h), shared by the layout index's build and the
 * mounted tree.
 */
#include "layouts/imagenet_samples.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

static unsigned digits(uint64_t v)
{
	unsigned d = 1;

	for (; v >= 10; v /= 10)
		d++;
	return d;
}

/* the length of line j as shuffled_line prints it: the build sums 1.28 M
 * of these, and printing them took half a second */
uint64_t imagenet_shuffled_len(const struct in_split *sp, uint64_t S, uint64_t j)
{
	uint32_t c = sp->shuf[j];

	return digits(sp->pos[c] / S) + 1 + digits(imagenet_label_of(sp, c)) + 1 +
	       strlen(tarindex_name(&sp->t, in_split_node(sp, c))) + 1;
}

/* class `name` in a sorted WNID table, or -ENOENT */
int64_t imagenet_find_class_in(const char (*wnid)[WNID_LEN], uint32_t n, const char *name)
{
	uint32_t i = SFS_PARTITION_POINT(uint32_t, 0, n, m,
					 strncmp(wnid[m], name, WNID_LEN) < 0);

	return i < n && !strncmp(wnid[i], name, WNID_LEN) ? (int64_t)i : -ENOENT;
}
