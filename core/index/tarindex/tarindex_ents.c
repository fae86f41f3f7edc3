/*
 * tarindex_ents.c - what every stage of the tar index build works on (see
 * tarindex_build_int.h): growing arrays, the string arena, the path order
 * and the entry records with their sorts, the nested walks' ranges, the
 * sources' names.  A leaf under the stages: the walk (tarindex_build.c),
 * links (tarindex_links.c), the tree (tarindex_tree.c), zip sources
 * (tarindex_zip.c) and nested compressed tars (tarindex_znest.c) call it,
 * and it calls none of them.
 *
 * Not for: walking archives or writing sections.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/spill.h"
#include "index/tarindex/tarindex_int.h"
#include "index/tarindex/tarindex_build_int.h"
#include "formats/tar.h"
#include "search.h"

/* Room for element n of *p (elt bytes each, *cap of them), doubling:
 * 0 or -ENOMEM. */
int tarbuild_grow(void **p, uint32_t *cap, uint32_t n, size_t elt)
{
	uint32_t c = *cap ? *cap : 64;
	void *q;

	if (n < *cap)
		return 0;
	while (c <= n)
		c *= 2;
	q = realloc(*p, (size_t)c * elt);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* Room for element n of *p (elt bytes each): its address, or NULL. */
void *tarbuild_slot(void **p, uint32_t *cap, uint32_t n, size_t elt)
{
	return tarbuild_grow(p, cap, n, elt) < 0 ? NULL : (char *)*p + (size_t)n * elt;
}

/* Appends a NUL-terminated string (two pieces joined by '/' if a is set). */
int tarbuild_arena_put(struct tarbuild_arena *ar, const char *a, const char *s, size_t slen,
		 uint64_t *out)
{
	size_t alen = a && *a ? strlen(a) + 1 : 0;
	uint64_t need = ar->len + alen + slen + 1;

	/* 8 spare bytes: pathcmp reads whole words */
	if (need + 8 > ar->cap) {
		uint64_t c = ar->cap ? ar->cap : 1 << 16;
		char *q;

		while (c < need + 8)
			c *= 2;
		q = realloc(ar->p, c);
		if (!q)
			return -ENOMEM;
		memset(q + ar->len, 0, c - ar->len);
		ar->p = q;
		ar->cap = c;
	}
	*out = ar->len;
	if (alen) {
		memcpy(ar->p + ar->len, a, alen - 1);
		ar->p[ar->len + alen - 1] = '/';
	}
	memcpy(ar->p + ar->len + alen, s, slen);
	ar->p[need - 1] = '\0';
	ar->len = need;
	return 0;
}

/*
 * Path order, component by component: "" < "/" < every other byte.  The
 * sort spends most of its time in long common prefixes ("n01440764/
 * n01440764_..."), so equal 8-byte words without a NUL are skipped first
 * (both strings need 7 readable bytes past their NUL).
 */
int tarbuild_pathcmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;
	unsigned cx, cy;
	uint64_t u, v;

	for (;;) {
		memcpy(&u, x, 8);
		memcpy(&v, y, 8);
		if (u != v || ((u - 0x0101010101010101ull) & ~u & 0x8080808080808080ull))
			break;
		x += 8;
		y += 8;
	}
	while (*x && *x == *y) {
		x++;
		y++;
	}
	cx = *x == '/' ? 1u : *x ? *x + 1u : 0u;
	cy = *y == '/' ? 1u : *y ? *y + 1u : 0u;
	return (int)cx - (int)cy;
}

static int entry_rec_cmp(const void *pa, const void *pb, void *arg)
{
	const struct entry_rec *x = pa, *y = pb;
	int r = tarbuild_pathcmp(x->s, y->s);

	(void)arg;
	if (r)
		return r;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Fills record r with the strings path and link; its length. */
size_t tarbuild_entry_set(struct entry_rec *r, const char *path, size_t plen,
		   const char *link, size_t llen)
{
	r->path_len = (uint32_t)plen;
	r->link_len = (uint32_t)llen;
	memcpy(r->s, path, plen);
	r->s[plen] = '\0';
	memcpy(r->s + plen + 1, link, llen);
	/* the link's NUL and the 8 bytes tarbuild_pathcmp may read past the path */
	memset(r->s + plen + 1 + llen, 0, 9);
	return offsetof(struct entry_rec, s) + plen + llen + 10;
}

/* Copies r's path and link into ar (a link of 0 bytes: offset 0, ""). */
int tarbuild_entry_strings(struct tarbuild_arena *ar, const struct entry_rec *r, uint64_t *path,
		    uint64_t *link)
{
	int rc = tarbuild_arena_put(ar, NULL, r->s, r->path_len, path);

	*link = 0;
	if (rc == 0 && r->link_len)
		rc = tarbuild_arena_put(ar, NULL, r->s + r->path_len + 1, r->link_len, link);
	return rc;
}

int tarbuild_sort_open(struct builder *b, struct spill **s, size_t budget,
		 spill_cmp_fn cmp)
{
	return spill_open(s, b->scratch, budget, cmp, NULL);
}

int tarbuild_ents_open(struct builder *b, struct spill **s)
{
	return tarbuild_sort_open(b, s, b->budget, entry_rec_cmp);
}

/* The next entry record of s: 1, 0 at the end, -errno. */
int tarbuild_next(struct spill *s, const struct entry_rec **r)
{
	const void *p;
	size_t len;
	int rc = spill_next(s, &p, &len);

	*r = p;
	return rc;
}

/*
 * Symlinks may point anywhere inside the mount, judged lexically from the
 * link's directory prefix/path (an absolute target always leaves).
 */
int tarbuild_symlink_inside(const char *prefix, const char *path, const char *target)
{
	char buf[3 * TAR_PATH_MAX + 3];
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;

	if (target[0] == '/' || strlen(prefix) + dlen + strlen(target) + 3 > sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%s/%.*s/%s", prefix, (int)dlen, path, target);
	return tar_normalise(buf) != -EINVAL;
}

const char *tarbuild_src_what(const struct builder *b, uint32_t src)
{
	return src < b->nsrc ? b->src[src].path :
			       b->der[src - b->nsrc].what;
}

/* How many nested directories come before archive position seq. */
uint32_t tarbuild_nests_before(const struct builder *b, uint32_t seq)
{
	return SFS_PARTITION_POINT(uint32_t, 0, b->nnests, i, b->nests[i].seq < seq);
}

/*
 * The nested walk innermost around archive position seq (one that added
 * it: nests[i].seq < seq < nests[i].end), or NONE.  The walks' ranges
 * nest, so the last one to start before seq is it or inside it.
 */
uint32_t tarbuild_enclosing(const struct builder *b, uint32_t seq)
{
	uint32_t lo = tarbuild_nests_before(b, seq), i;

	for (i = lo ? lo - 1 : NONE; i != NONE && seq >= b->nests[i].end; )
		i = b->nests[i].up;
	return i;
}
