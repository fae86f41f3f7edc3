/*
 * tarindex_sums.c - the members' CRC32C of a tar index (-o checksums; see
 * "Checksums" in tarindex.h): computed at the end of a build, from the
 * file nodes as they were numbered (tarbuild_sums_write, called by
 * tarindex_tree.c), and checked by reads of a mounted index
 * (tarindex_sums_read, called by tarindex.c's tarindex_pread).
 *
 * The build reads each member's bytes once, in the order they lie in their
 * source (a forward pass with gaps: the headers), whatever the node order;
 * members sharing their bytes (hard links) are read once.  Memory: 32
 * bytes per file member while it runs, 4 per node and 4 per 64 KiB of the
 * large members for the sections.
 *
 * Not for: which members are checksummed (tarindex_sums_cover in
 * tarindex_int.h, the one rule: tarindex_tree.c hands this file those
 * members, tarindex_summed asks it at mount), zip members or compressed
 * streams (they carry CRCs of their own, checked where they are read).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/crc.h"
#include "io/lru.h"
#include "io/source.h"
#include "index/progress.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"

#define CHUNK (1u << 20)   /* a multiple of SUMS_PIECE */
/* the checked members' cache without a mount's pool (tools, tests) */
#define CHECKED_OWN (8u << 20)
_Static_assert(CHUNK % SUMS_PIECE == 0, "whole pieces per chunk");
_Static_assert(SUMS_PIECED <= CHUNK, "a member read whole fits a chunk");

static uint64_t npieces(uint64_t size)
{
	return (size + SUMS_PIECE - 1) / SUMS_PIECE;
}

/* ------------------------------------------------------------ build */

static int node_cmp_sum(const void *pa, const void *pb)
{
	uint32_t i = ((const struct tarbuild_sum *)pa)->node;
	uint32_t j = ((const struct tarbuild_sum *)pb)->node;

	return (i > j) - (i < j);
}

static int sum_cmp(const void *pa, const void *pb)
{
	const struct tarbuild_sum *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	return (a->node > b->node) - (a->node < b->node);
}

/* Reads member e's bytes (in buf, CHUNK bytes) for its CRC32C into
 * sums[e->node] and its pieces' into pcs.  0 or -EIO (said). */
static int sum_member(const struct builder *b, const struct tarbuild_sum *e,
		      char *buf, uint32_t *sums, uint32_t *pcs)
{
	struct source *s = b->src[e->src].src;
	uint32_t crc = 0;
	uint64_t done = 0, j = 0;

	while (done < e->size) {
		size_t want = e->size - done < CHUNK ? (size_t)(e->size - done) : CHUNK;
		ssize_t got = source_pread(s, buf, want, e->off + done);
		size_t k;

		if (got != (ssize_t)want) {
			sfs_err("%s: reading member data at offset %llu for its "
				"checksum: %s", source_name(s),
				(unsigned long long)(e->off + done),
				got < 0 ? strerror((int)-got) : "the file is shorter");
			return -EIO;
		}
		crc = crc32c(crc, buf, want);
		for (k = 0; e->first != UINT64_MAX && k < want; k += SUMS_PIECE)
			pcs[e->first + j++] = crc32c(0, buf + k, want - k < SUMS_PIECE ?
						     want - k : SUMS_PIECE);
		done += want;
	}
	sums[e->node] = crc;
	return 0;
}

/* Writes the sections from sums, pcs and the pieced members of e[0..n)
 * (in node order). */
static int sums_sections(struct index_writer *w, uint32_t c,
			 const struct tarbuild_sum *e, uint32_t n, const uint32_t *sums,
			 uint32_t nnodes, const uint32_t *pcs, uint64_t npcs)
{
	struct tarindex_sums_hdr h = { SUMS_PIECE, SUMS_PIECED, n, npcs };
	struct tarindex_pieced *px;
	uint32_t k, np = 0;
	int rc;

	for (k = 0; k < n; k++)
		np += e[k].first != UINT64_MAX;
	if (!(px = malloc(((size_t)np + 1) * sizeof(*px))))
		return -ENOMEM;
	for (k = 0, np = 0; k < n; k++)
		if (e[k].first != UINT64_MAX)
			px[np++] = (struct tarindex_pieced){ e[k].node, 0, e[k].first };
	rc = index_writer_add(w, TAG(c, 'C', 'H'), &h, sizeof(h));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'C', 'K'), sums,
				      (uint64_t)nnodes * sizeof(*sums));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'P', 'X'), px, (uint64_t)np * sizeof(*px));
	if (rc == 0)
		rc = index_writer_add(w, TAG(c, 'P', 'C'), pcs, npcs * sizeof(*pcs));
	free(px);
	return rc;
}

int tarbuild_sums_write(struct builder *b, struct index_writer *w, uint32_t c,
		  struct tarbuild_sum *e, uint32_t n, uint32_t nnodes)
{
	uint32_t *sums = calloc((size_t)nnodes + 1, sizeof(*sums));
	uint32_t *pcs = NULL;
	char *buf = malloc(CHUNK);
	uint64_t npcs = 0, bytes = 0, total = 0;
	struct progress pr;
	uint32_t m = 0, i;
	int rc = -ENOMEM;

	if (!sums || !buf)
		goto out;
	for (m = 0; m < n; m++) {	/* still in node order */
		e[m].first = e[m].size > SUMS_PIECED ? npcs : UINT64_MAX;
		if (e[m].size > SUMS_PIECED)
			npcs += npieces(e[m].size);
		total += e[m].size;
	}
	if (!(pcs = malloc((npcs + 1) * sizeof(*pcs))))
		goto out;
	if (m)	/* e is NULL when there are no files */
		qsort(e, m, sizeof(*e), sum_cmp);
	rc = 0;
	progress_start(&pr, "checksums", m, total, b->quiet);
	for (i = 0; i < m && rc == 0; i++) {
		const struct tarbuild_sum *p = i ? &e[i - 1] : NULL;

		/* forward with gaps (the headers), to the end: a walk, which
		 * a remote source reads through with windows in flight */
		if (!p || p->src != e[i].src) {
			if (p)
				source_advise(b->src[p->src].src, 0, 0, SOURCE_ADV_NORMAL);
			source_advise(b->src[e[i].src].src, e[i].off, 0, SOURCE_ADV_WALK);
		}

		if (p && p->src == e[i].src && p->off == e[i].off &&
		    p->size == e[i].size) {	/* the same bytes: a hard link */
			sums[e[i].node] = sums[p->node];
			if (e[i].first != UINT64_MAX)
				memcpy(pcs + e[i].first, pcs + p->first,
				       npieces(e[i].size) * sizeof(*pcs));
			continue;
		}
		rc = sum_member(b, &e[i], buf, sums, pcs);
		bytes += e[i].size;
		progress_update(&pr, (uint64_t)i + 1, bytes);
	}
	progress_finish(&pr);
	if (m)
		source_advise(b->src[e[m - 1].src].src, 0, 0, SOURCE_ADV_NORMAL);
	if (rc == 0) {
		if (m)
			qsort(e, m, sizeof(*e), node_cmp_sum);
		rc = sums_sections(w, c, e, m, sums, nnodes, pcs, npcs);
	}
	if (rc == 0)
		sfs_info("checksums (CRC32C) of %u members, %llu MB read",
			 m, (unsigned long long)(bytes >> 20));
out:
	free(sums);
	free(pcs);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------ mount */

static int bad_sums(const struct tarindex *t, const char *why)
{
	sfs_warn("%s: the tar index's checksums %s: rebuilding", t->map->path, why);
	return -EBADMSG;
}

int tarindex_sums_open(struct tarindex *t, const struct index_map *m, uint32_t c)
{
	const struct tarindex_sums_hdr *h;
	uint64_t len[4];
	uint32_t k;

	h = index_map_section(m, TAG(c, 'C', 'H'), &len[0]);
	if (!h && !index_map_damaged(m))
		return 0;	/* built without them */
	/* the large ones are checked as they are used */
	t->sums = index_map_section_unchecked(m, TAG(c, 'C', 'K'), &len[1]);
	t->pieced = index_map_section(m, TAG(c, 'P', 'X'), &len[2]);
	t->piece_sums = index_map_section_unchecked(m, TAG(c, 'P', 'C'), &len[3]);
	if (index_map_damaged(m))
		return -EBADMSG;	/* said, and rebuilt */
	if (len[0] != sizeof(*h) || h->piece != SUMS_PIECE ||
	    h->pieced != SUMS_PIECED || !t->sums ||
	    len[1] != (uint64_t)t->nnodes * sizeof(*t->sums) ||
	    len[2] % sizeof(*t->pieced) || len[3] != h->npieces * sizeof(uint32_t))
		return bad_sums(t, "do not fit the index");
	t->npieced = (uint32_t)(len[2] / sizeof(*t->pieced));
	t->npiece_sums = h->npieces;
	t->nsummed = h->nsummed;
	for (k = 0; k < t->npieced; k++)
		if (t->pieced[k].node >= t->nnodes ||
		    (k && t->pieced[k].node <= t->pieced[k - 1].node) ||
		    t->pieced[k].first > t->npiece_sums)
			return bad_sums(t, "are out of order");
	return 0;
}

int tarindex_sums_start(struct tarindex *t, struct lru_pool *mem)
{
	if (!t->sums)
		return 0;
	t->checked_members = lru_new_in(mem, "checked members", CHECKED_OWN);
	return t->checked_members ? 0 : -ENOMEM;
}

void tarindex_sums_close(struct tarindex *t)
{
	lru_free(t->checked_members);
	t->checked_members = NULL;
}

static int pieced_cmp(const void *pa, const void *pb)
{
	uint32_t i = ((const struct tarindex_pieced *)pa)->node;
	uint32_t j = ((const struct tarindex_pieced *)pb)->node;

	return (i > j) - (i < j);
}

/* The pieces of node i, or NULL when it has none. */
static const struct tarindex_pieced *pieced_of(const struct tarindex *t, uint32_t i)
{
	struct tarindex_pieced key = { .node = i };

	return t->npieced ? bsearch(&key, t->pieced, t->npieced, sizeof(key),
				    pieced_cmp) : NULL;
}

/* What [lo, hi) of a member is checked against. */
struct span {
	uint64_t lo, hi;                /* in the member */
	const uint32_t *want;           /* its CRCs: one, or one per piece */
	uint64_t nwant;
	int pieces;
};

/* The first CRC of sp that buf (sp's bytes) fails: its index, or -1. */
static int64_t first_bad(const struct span *sp, const char *buf)
{
	uint64_t j, at;

	if (!sp->pieces)
		return crc32c(0, buf, sp->hi - sp->lo) == sp->want[0] ? -1 : 0;
	for (j = 0, at = sp->lo; at < sp->hi; j++, at += SUMS_PIECE) {
		uint64_t n = sp->hi - at < SUMS_PIECE ? sp->hi - at : SUMS_PIECE;

		if (crc32c(0, buf + (at - sp->lo), n) != sp->want[j])
			return (int64_t)j;
	}
	return -1;
}

/* Reads sp's bytes at `at` (the member's data offset) of s, fresh or not:
 * 0, -EAGAIN, -ENOTSUP (no fresh copy: a local file) or -EIO. */
static int read_span(struct source *s, const struct span *sp, uint64_t at,
		     char *buf, int fresh)
{
	size_t len = (size_t)(sp->hi - sp->lo);
	ssize_t k = fresh ? source_refetch(s, buf, len, at + sp->lo) :
			    source_pread(s, buf, len, at + sp->lo);

	if (k == -EAGAIN || k == -ENOTSUP)
		return (int)k;
	if (k < 0 || (size_t)k != len) {
		source_check(s);	/* the usual cause: say so */
		return -EIO;
	}
	return 0;
}

/* At a read: the index's pieces do not fit its nodes (a damaged index
 * that passed its block checksums, or a bug): EIO, said. */
static int bad_pieces(const struct tarindex *t, uint32_t i)
{
	sfs_err("%s: the tar index's checksums miss the pieces of node %u: EIO "
		"(remove the index to rebuild it)", t->map->path, i);
	return -EIO;
}

/* Fills *sp for a read of [off, off + size) of node i (size fsize). */
static int span_of(const struct tarindex *t, uint32_t i, uint64_t fsize,
		   uint64_t off, size_t size, struct span *sp)
{
	const struct tarindex_pieced *p = fsize > SUMS_PIECED ? pieced_of(t, i) : NULL;

	if (fsize > SUMS_PIECED && !p)
		return bad_pieces(t, i);
	sp->pieces = p != NULL;
	if (!p) {
		sp->lo = 0;
		sp->hi = fsize;
		sp->want = &t->sums[i];
		sp->nwant = 1;
	} else {
		sp->lo = off / SUMS_PIECE * SUMS_PIECE;
		sp->hi = (off + size + SUMS_PIECE - 1) / SUMS_PIECE * SUMS_PIECE;
		if (sp->hi > fsize)
			sp->hi = fsize;
		sp->nwant = npieces(sp->hi - sp->lo);
		if (p->first + npieces(fsize) > t->npiece_sums)
			return bad_pieces(t, i);
		sp->want = t->piece_sums + p->first + sp->lo / SUMS_PIECE;
	}
	/* the index's blocks holding them: checked once per map */
	return index_map_check(t->map, sp->want, sp->nwant * sizeof(uint32_t));
}

/* Says that piece j of sp (or its whole span) of member i failed, with
 * what happens next. */
static void say_bad(const char *name, struct source *s,
		    uint64_t at, const struct span *sp, int64_t j, const char *next,
		    int err)
{
	uint64_t lo = sp->lo, hi = sp->hi;

	if (sp->pieces) {
		lo = sp->lo + (uint64_t)j * SUMS_PIECE;
		if (hi > lo + SUMS_PIECE)
			hi = lo + SUMS_PIECE;
	}
	(err ? sfs_err : sfs_warn)("%s: member '%s' (data at offset %llu of the "
		"source): bytes %llu-%llu fail their checksum (CRC32C)%s",
		source_name(s), name, (unsigned long long)at,
		(unsigned long long)lo, (unsigned long long)hi - 1, next);
}

int tarindex_sums_read(const struct tarindex *t, uint32_t i, const char *name,
		       uint32_t src, uint64_t at, uint64_t fsize, char *buf,
		       size_t size, uint64_t off)
{
	struct source *s = t->srcs[src];
	struct span sp;
	char *tmp = buf;
	int64_t j;
	int rc = span_of(t, i, fsize, off, size, &sp);

	if (rc < 0)
		return rc;
	/* a ranged read of a member read and checked whole before */
	if (!sp.pieces && (off || size != fsize) &&
	    lru_copy_out(t->checked_members, i, (size_t)off, buf, size) == 1)
		return 0;
	if ((sp.lo != off || sp.hi != off + size) &&
	    !(tmp = malloc((size_t)(sp.hi - sp.lo) + 1)))
		return -ENOMEM;
	if ((rc = read_span(s, &sp, at, tmp, 0)) < 0 ||
	    (j = first_bad(&sp, tmp)) < 0)
		goto out;
	if (source_nowait_mode()) {
		rc = -EAGAIN;	/* the refetch waits: on a worker thread */
		goto out;
	}
	source_count_checksum(s, 0);
	rc = read_span(s, &sp, at, tmp, 1);
	if (rc == 0) {
		say_bad(name, s, at, &sp, j, ": read again past every cache", 0);
		source_count_checksum(s, 1);
		if ((j = first_bad(&sp, tmp)) < 0)
			goto out;	/* damaged on its way only */
		source_count_checksum(s, 0);
		say_bad(name, s, at, &sp, j, " again: EIO", 1);
		/* the caches hold the bad copy: the next read fetches anew */
		source_forget(s, at + sp.lo, sp.hi - sp.lo);
		rc = -EIO;
	} else if (rc == -ENOTSUP) {
		say_bad(name, s, at, &sp, j, ": the file holds other bytes than "
			"when it was indexed: EIO", 1);
		rc = -EIO;
	}
out:
	if (rc == 0 && tmp != buf)
		memcpy(buf, tmp + (off - sp.lo), size);
	if (rc == 0 && tmp != buf && !sp.pieces) {
		/* its next ranged reads take the checked copy */
		lru_insert(t->checked_members, i, tmp, (size_t)fsize);
		tmp = buf;
	}
	if (tmp != buf)
		free(tmp);
	return rc;
}
