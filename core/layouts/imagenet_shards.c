/*
 * imagenet_shards.c - the bytes of an ImageNet split's shards and shuffled
 * file (imagenet_shards.h): vtar.h's callbacks over a split view's orders
 * and sparse offsets, and the shuffled.txt lines between kept offsets.
 */
#include "layouts/imagenet_shards.h"

#include <errno.h>
#include <string.h>

#include "formats/vtar.h"
#include "layouts/imagenet_ahead.h"
#include "layouts/imagenet_samples.h"
#include "search.h"

#define NAME_MAX_ 512	/* "<k>/<label>.<member>\n": member names are <= 255 */

/* Sources one read remembers, to check once at its end (shard_check):
 * a shard's members come from one tar, or from a few class tars in a row */
#define READ_SRCS 8

/* One shard as vtar sees it (the argument of its callbacks): positions
 * [first, first + n) of split view sp, whose records start at byte `base`
 * of the split's records; and the sources a read took members from, to
 * check once it has them all */
struct shard_span {
	const struct in_split *sp;
	uint64_t first, n, base;
	struct source *read[READ_SRCS];
	unsigned nread;
};

uint64_t imagenet_shard_len(const struct in_layout *L, const struct in_split *sp, uint64_t k)
{
	uint64_t first = k * L->S;

	return sp->h.n - first < L->S ? sp->h.n - first : L->S;
}

static int shard_entry(void *arg, uint64_t i, struct vtar_entry *e)
{
	const struct shard_span *v = arg;
	uint32_t c = v->sp->ord[v->first + i], node = in_split_node(v->sp, c);
	const char *name = tarindex_name(&v->sp->t, node);

	e->stem = name;
	e->stem_len = imagenet_stem_len(name);
	e->size = tarindex_node_size(tarindex_node(&v->sp->t, node));
	e->label = imagenet_label_of(v->sp, c);
	return 0;
}

static int shard_offset(void *arg, uint64_t i, uint64_t *off)
{
	const struct shard_span *v = arg;

	*off = imagenet_cum_offset(v->sp, v->first + i) - v->base;
	return 0;
}

/* Notes that the read takes bytes of s, for shard_check: 1, or 0 when
 * there is no room left to note it (the caller checks s itself, after
 * reading its bytes) */
static int read_from(struct shard_span *v, struct source *s)
{
	unsigned k;

	for (k = 0; k < v->nread; k++)
		if (v->read[k] == s)
			return 1;
	if (v->nread == READ_SRCS)
		return 0;
	v->read[v->nread++] = s;
	return 1;
}

/* vtar's check: every source the read took bytes of is unchanged since
 * mounting, checked after reading them (tarindex.h: as tarindex_pread
 * checks), so bytes of a changed source are never served */
static int shard_check(void *arg)
{
	struct shard_span *v = arg;
	unsigned k;
	int rc = 0;

	for (k = 0; k < v->nread; k++)
		if (source_check(v->read[k]) < 0)
			rc = -EIO;
	v->nread = 0;
	return rc;
}

static ssize_t shard_pread(void *arg, uint64_t i, unsigned part, void *buf, size_t len,
			uint64_t off)
{
	struct shard_span *v = arg;
	struct source *from = NULL;
	ssize_t got;

	got = tarindex_pread_unchecked(&v->sp->t, in_split_node(v->sp, v->sp->ord[v->first + i]),
				       buf, len, off, &from);
	if (got > 0 && !read_from(v, from) && source_check(from) < 0)
		return -EIO;	/* checked now, after reading: no room to note it */
	return got;
}

/* Sample i's member in place in a local source (vtar.h's in_place): not
 * sparse, compressed or checksummed (-o checksums: its bytes are checked
 * on the way, so copied), and the source unchanged since mounting, which
 * shard_check says before the read's spans go out (a splice of changed
 * bytes could not be caught after: layout.h's extent). */
static int shard_in_place(void *arg, uint64_t i, unsigned part, struct source **src,
			  uint64_t *off)
{
	struct shard_span *v = arg;
	uint32_t node = in_split_node(v->sp, v->sp->ord[v->first + i]);
	const struct tarindex_node *n = tarindex_node(&v->sp->t, node);
	struct source *s = tarindex_src(&v->sp->t, tarindex_node_src(n));
	uint64_t fdbase;
	int fd;

	(void)part;
	/* a source the read cannot note (shard_check) is read through
	 * shard_pread, which checks it after reading */
	if (!tarindex_in_place(&v->sp->t, node) || source_fd(s, &fd, &fdbase) < 0 ||
	    !read_from(v, s))
		return -ENOTSUP;
	*src = s;
	*off = n->off;
	return 0;
}

/*
 * The record holding vtar offset off: a binary search over the split's
 * kept offsets (every VOFF_STEP positions), then a walk of fewer than
 * VOFF_STEP records; vtar_read's own search would sum up to VOFF_STEP
 * record sizes at each of its steps.
 */
static int shard_find(void *arg, uint64_t off, uint64_t *i, uint64_t *start)
{
	const struct shard_span *v = arg;
	const struct in_split *sp = v->sp;
	uint64_t want = v->base + off, lo = v->first / VOFF_STEP;
	uint64_t hi = (v->first + v->n - 1) / VOFF_STEP + 1, p, at, rb;

	/* the last kept offset at or before want (voff[lo] <= want) */
	lo = SFS_PARTITION_POINT(uint64_t, lo + 1, hi, m, sp->voff[m] <= want) - 1;
	p = lo * VOFF_STEP;
	at = sp->voff[lo];
	if (p < v->first) {
		p = v->first;
		at = v->base;
	}
	for (; p + 1 < v->first + v->n && at + (rb = imagenet_record_bytes(sp, p)) <= want; p++)
		at += rb;
	*i = p - v->first;
	*start = at - v->base;
	return 0;
}

/* shard k of split view sp: a split's, or an epoch's (imagenet_epochs.h) */
static void vtar_of(const struct in_layout *L, const struct in_split *sp, uint64_t k,
		    struct vtar_shard *v, struct shard_span *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->sp = sp;
	ctx->first = k * L->S;
	ctx->n = imagenet_shard_len(L, sp, k);
	ctx->base = imagenet_cum_offset(sp, ctx->first);
	*v = (struct vtar_shard){ ctx->n, L->mtime, ctx, shard_entry, shard_offset, shard_pread,
				  shard_find, shard_in_place, shard_check };
}

int imagenet_shard_size(const struct in_layout *L, const struct in_split *sp, uint64_t k,
			uint64_t *size)
{
	struct vtar_shard v;
	struct shard_span ctx;

	vtar_of(L, sp, k, &v, &ctx);
	return vtar_size(&v, size);
}

/* bytes of shuffled/<split>.txt, regenerated from the nearest kept offset */
ssize_t imagenet_shuffled_read(const struct in_layout *L, const struct in_split *sp,
			     char *buf, size_t size, uint64_t off)
{
	uint64_t lo, j, at;
	size_t done = 0;
	char line[NAME_MAX_];

	if (off >= sp->h.txt_size)
		return 0;
	if (size > sp->h.txt_size - off)
		size = (size_t)(sp->h.txt_size - off);
	/* the last block starting at or before off */
	lo = SFS_PARTITION_POINT(uint64_t, 1, sp->h.n / SOFF_STEP + 1, m,
				 sp->soff[m] <= off) - 1;
	for (j = lo * SOFF_STEP, at = sp->soff[lo]; done < size && j < sp->h.n; j++) {
		int n = imagenet_shuffled_line(sp, L->S, j, line, sizeof(line));
		uint64_t cur = off + done;

		if (n <= 0 || (size_t)n >= sizeof(line) || cur < at)
			return -EIO;	/* cur < at: offsets not the lines' */
		if (cur < at + (uint64_t)n) {
			size_t from = (size_t)(cur - at), k = (size_t)n - from;

			if (k > size - done)
				k = size - done;
			memcpy(buf + done, line + from, k);
			done += k;
		}
		at += (uint64_t)n;
	}
	return done == size ? (ssize_t)done : -EIO;
}

/* bytes of shard k of split view sp, the vtar `ino`; with o, members in
 * place left as spans (vtar_read_spans) */
ssize_t imagenet_shard_read(struct in_layout *L, const struct in_split *sp, uint64_t k,
			    uint64_t ino, char *buf, size_t size, uint64_t off,
			    struct vtar_spans *o)
{
	struct vtar_shard v;
	struct shard_span ctx;

	vtar_of(L, sp, k, &v, &ctx);
	/* before the read, which may wait for the disk: the advice goes
	 * out first, and with it the members after this one */
	imagenet_ahead(&L->ahead, &(struct in_shard){ ctx.sp, ctx.first, ctx.n, ctx.base },
		       ino, off, size);
	return o ? vtar_read_spans(&v, buf, size, off, o) : vtar_read(&v, buf, size, off);
}
