/*
 * tarwalk.h - visits every node of an open tarindex and checks what
 * tarindex.h promises, for fuzz_tarindex.c and fuzz_index.c.
 *
 * From the root down: every file is read whole with tarindex_pread in
 * chunks (and at its end), and its bytes must be the source's bytes at its
 * offset (`src`, the one source file every source of the index holds)
 * whenever the read succeeds: -EIO is allowed (a source shorter than the
 * index says), wrong bytes are not; symlinks have a target that ends
 * where stated.  With `strict` (an index just built), the tree must also be
 * well formed: names non-empty without '/', each directory's children
 * sorted, tarindex_lookup finding each by name, tarindex_parent leading
 * back, tarindex_find of its full path finding it, no node reached twice,
 * no NUL inside a symlink target.
 * Without it (an index edited after its build: tarindex_children checks
 * names, order and child ranges, but a crafted index may still hold paths
 * deeper than any build makes) the same calls are made, for the
 * sanitizers, and the shape is not judged; a directory whose block fails
 * its checksum (-EIO) is not walked.
 *
 * A sparse file (possibly terabytes of holes) is read at its start, its
 * end and the edges of its first chunks, and each byte must be what its
 * map says, worked out here by a linear scan of the map (tarindex does a
 * binary search): a chunk's byte from the source, a hole's zero.
 */
#ifndef SFS_FUZZ_TARWALK_H
#define SFS_FUZZ_TARWALK_H

#include "fuzz.h"
#include "index/tarindex/tarindex.h"

#define TW_CHUNK (64u << 10)

/* Byte p of sparse file node i by its map; -1 where the source ends. */
static int tw_sparse_byte(const struct tarindex *t, uint32_t i, const uint8_t *src,
			  size_t srclen, uint64_t p)
{
	const struct tarindex_node *n = tarindex_node(t, i);
	const struct tarindex_sparse *sp = NULL;
	const struct tarindex_chunk *c;
	uint32_t k;

	for (k = 0; k < t->nsparse && !sp; k++)
		if (t->sparse[k].node == i)
			sp = &t->sparse[k];
	FUZZ_CHECK(sp);
	c = &t->chunks[sp->map];
	for (k = 0; k < sp->nchunks; k++) {
		uint64_t len = c[k + 1].data - c[k].data;

		if (p >= c[k].off && p - c[k].off < len) {
			uint64_t at = n->off + c[k].data + (p - c[k].off);

			return at < srclen ? src[at] : -1;
		}
	}
	return 0;
}

/* Reads [off, off + len) of sparse node i and checks it byte by byte. */
static void tw_sparse_range(const struct tarindex *t, uint32_t i, const uint8_t *src,
			    size_t srclen, uint8_t *buf, uint64_t off, size_t len)
{
	uint64_t size = tarindex_node_size(tarindex_node(t, i));
	ssize_t k = tarindex_pread(t, i, buf, len, off);
	size_t j;

	if (k == -EIO)
		return;
	FUZZ_CHECK(k == (ssize_t)(off >= size ? 0 : size - off < len ? size - off : len));
	for (j = 0; j < (size_t)k; j++) {
		int want = tw_sparse_byte(t, i, src, srclen, off + j);

		FUZZ_CHECK(want < 0 || buf[j] == (uint8_t)want);
	}
}

static void tw_sparse(const struct tarindex *t, uint32_t i, const uint8_t *src,
		      size_t srclen, uint8_t *buf)
{
	uint64_t size = tarindex_node_size(tarindex_node(t, i));
	const struct tarindex_sparse *sp = NULL;
	uint32_t k;

	tw_sparse_range(t, i, src, srclen, buf, 0, 4096);
	tw_sparse_range(t, i, src, srclen, buf, size > 4096 ? size - 4096 : 0, 4096);
	for (k = 0; k < t->nsparse && !sp; k++)
		if (t->sparse[k].node == i)
			sp = &t->sparse[k];
	for (k = 0; sp && k < sp->nchunks && k < 16; k++) {
		uint64_t at = t->chunks[sp->map + k].off;

		tw_sparse_range(t, i, src, srclen, buf, at > 8 ? at - 8 : 0, 16);
		at += t->chunks[sp->map + k + 1].data - t->chunks[sp->map + k].data;
		tw_sparse_range(t, i, src, srclen, buf, at > 8 ? at - 8 : 0, 16);
	}
	FUZZ_CHECK(tarindex_pread(t, i, buf, 1, size) == 0);
}

/* A file of a derived source (a nested compressed tar): its bytes must
 * be that source's, read directly. */
static void tw_derived_file(const struct tarindex *t, uint32_t i, uint8_t *buf)
{
	static uint8_t want[TW_CHUNK];
	const struct tarindex_node *n = tarindex_node(t, i);
	struct source *s = tarindex_src(t, tarindex_node_src(n));
	uint64_t size = tarindex_node_size(n), off = 0;
	ssize_t k;

	while (off < size && !tarindex_node_sparse(n)) {
		k = tarindex_pread(t, i, buf, TW_CHUNK, off);
		if (k == -EIO)
			return;
		FUZZ_CHECK(k > 0 && (uint64_t)k <= size - off);
		FUZZ_CHECK(source_pread(s, want, (size_t)k, n->off + off) == k);
		FUZZ_CHECK(memcmp(buf, want, (size_t)k) == 0);
		off += (uint64_t)k;
	}
}

static void tw_file(const struct tarindex *t, uint32_t i, const uint8_t *src,
		    size_t srclen, uint8_t *buf)
{
	const struct tarindex_node *n = tarindex_node(t, i);
	uint64_t size = tarindex_node_size(n), off = 0;
	ssize_t k;

	if (tarindex_node_src(n) >= t->ntop) {
		tw_derived_file(t, i, buf);
		return;
	}
	if (tarindex_node_sparse(n)) {
		tw_sparse(t, i, src, srclen, buf);
		return;
	}
	while (off < size) {
		k = tarindex_pread(t, i, buf, TW_CHUNK, off);
		if (k == -EIO)
			return;
		FUZZ_CHECK(k > 0 && (uint64_t)k <= size - off);
		FUZZ_CHECK((uint64_t)k == size - off || k == TW_CHUNK);
		FUZZ_CHECK(n->off + off + (uint64_t)k <= srclen);
		FUZZ_CHECK(memcmp(buf, src + n->off + off, (size_t)k) == 0);
		off += (uint64_t)k;
	}
	FUZZ_CHECK(tarindex_pread(t, i, buf, 1, size) == 0);
}

/* path holds dir's path (len bytes); visits its subtree */
static void tw_dir(const struct tarindex *t, uint32_t dir, char *path, size_t len,
		   const uint8_t *src, size_t srclen, uint8_t *buf, int depth,
		   uint64_t *visits, int strict)
{
	uint32_t first, count, c;
	const char *prev = NULL;

	FUZZ_CHECK(depth <= TAR_PATH_MAX);
	/* -EIO: a block of the index fails its checksum, found on first use */
	if (!strict && tarindex_children(t, dir, &first, &count) == -EIO)
		return;
	FUZZ_CHECK(tarindex_children(t, dir, &first, &count) == 0);
	/* tarindex_open checks child ranges against nnodes */
	FUZZ_CHECK(count == 0 || (uint64_t)first + count <= t->nnodes);
	if (count && first <= dir) {	/* breadth-first: children come later */
		FUZZ_CHECK(!strict);
		return;
	}
	for (c = first; c < first + count; c++) {
		const char *name = tarindex_name(t, c);
		size_t nl = strlen(name);
		enum tarindex_type ty = tarindex_node_type(tarindex_node(t, c));

		int ok;

		/* a tree: no node is anyone else's child too (else a walk of
		 * the mount could grow exponentially with the index) */
		if (++*visits >= t->nnodes) {
			FUZZ_CHECK(!strict);
			return;
		}
		ok = nl > 0 && !strchr(name, '/') && (!prev || strcmp(prev, name) < 0);
		prev = name;
		ok &= tarindex_lookup(t, dir, name) == c;
		ok &= tarindex_parent(t, c) == dir;
		if (len + 1 + nl > TAR_PATH_MAX) {
			FUZZ_CHECK(!strict);
			continue;
		}
		if (len)
			path[len] = '/';
		memcpy(path + len + (len ? 1 : 0), name, nl + 1);
		ok &= tarindex_find(t, path) == c;
		if (strict && !ok) {
			fprintf(stderr, "tarwalk.h: invariant failed: tree shape (node %u \"%s\" "
				"under node %u: bad name, order, lookup, parent or find)\n",
				c, path, dir);
			abort();
		}
		if (ty == TARINDEX_DIR) {
			tw_dir(t, c, path, len + (len ? 1 : 0) + nl, src, srclen, buf, depth + 1,
			       visits, strict);
		} else if (ty == TARINDEX_SYMLINK) {
			uint64_t ll = 0;
			const char *l = tarindex_link(t, c, &ll);

			/* tarindex_open checks the NUL at the end (readlink
			 * copies ll + 1 bytes); one inside only strict */
			FUZZ_CHECK(l && l[ll] == '\0');
			FUZZ_CHECK(!strict || strlen(l) == ll);
			FUZZ_CHECK(tarindex_pread(t, c, buf, 1, 0) == -EINVAL);
		} else {
			FUZZ_CHECK(ty == TARINDEX_FILE);
			tw_file(t, c, src, srclen, buf);
		}
		path[len] = '\0';
	}
}

/*
 * The reference for tarindex_escaping_links: each link followed on its
 * own, recursively, the way path lookup does (40 links at most; a loop
 * runs into that).  1: above the root; 0: ended at *cur; -1: nowhere.
 */
static int tw_walk_link(const struct tarindex *t, uint32_t *cur, const char *path,
			size_t len, int *hops)
{
	char comp[256];
	size_t a = 0, b, n;
	int64_t c;

	if (len && path[0] == '/')
		return 1;
	for (; a < len; a = b + 1) {
		for (b = a; b < len && path[b] != '/'; b++)
			;
		n = b - a;
		if (n == 0 || (n == 1 && path[a] == '.'))
			continue;
		if (tarindex_node_type(tarindex_node(t, *cur)) != TARINDEX_DIR)
			return -1;
		if (n == 2 && path[a] == '.' && path[a + 1] == '.') {
			if (*cur == TARINDEX_ROOT)
				return 1;
			*cur = tarindex_parent(t, *cur);
			continue;
		}
		if (n >= sizeof(comp))
			return -1;
		memcpy(comp, path + a, n);
		comp[n] = '\0';
		if ((c = tarindex_lookup(t, *cur, comp)) < 0)
			return -1;
		if (tarindex_node_type(tarindex_node(t, (uint32_t)c)) == TARINDEX_SYMLINK) {
			uint64_t tlen = 0;
			const char *target = tarindex_link(t, (uint32_t)c, &tlen);
			int r;

			if (++*hops > 40)
				return -1;
			if ((r = tw_walk_link(t, cur, target, (size_t)tlen, hops)) != 0)
				return r;
		} else {
			*cur = (uint32_t)c;
		}
	}
	return 0;
}

/* tarindex_escaping_links names exactly the links the reference finds
 * leaving, in order. */
static void tw_escaping(const struct tarindex *t, int strict)
{
	uint32_t *out = NULL, n = 0, i, k = 0;
	int rc = tarindex_escaping_links(t, &out, &n);

	/* a damaged block (-EIO); or a header that says there are no
	 * symlinks, which the walk then does not look for (it reads no node
	 * when there are none): an index just built says right */
	if (!strict && (rc == -EIO || !t->nsymlinks))
		return;
	FUZZ_CHECK(rc == 0);
	for (i = 0; i < t->nnodes; i++) {
		uint32_t cur = tarindex_parent(t, i);
		uint64_t len = 0;
		const char *target = tarindex_link(t, i, &len);
		int hops = 1;

		if (target && tw_walk_link(t, &cur, target, (size_t)len, &hops) == 1) {
			if (k >= n || out[k] != i) {
				fprintf(stderr, "tarwalk.h: symlink node %u leaves the tree, "
					"tarindex_escaping_links says %s\n", i,
					k < n ? "another" : "no more");
				abort();
			}
			k++;
		}
	}
	FUZZ_CHECK(k == n);
	free(out);
}

/* Visits the whole tree (see above for `strict`). */
static void tarwalk(const struct tarindex *t, const uint8_t *src, size_t srclen,
		    int strict)
{
	char *path = malloc(TAR_PATH_MAX + 2);
	uint8_t *buf = malloc(TW_CHUNK);
	uint64_t visits = 0;

	FUZZ_CHECK(path && buf);
	FUZZ_CHECK(t->nnodes > 0);
	FUZZ_CHECK(tarindex_node_type(tarindex_node(t, TARINDEX_ROOT)) == TARINDEX_DIR);
	path[0] = '\0';
	FUZZ_CHECK(tarindex_find(t, "") == TARINDEX_ROOT);
	tw_dir(t, TARINDEX_ROOT, path, 0, src, srclen, buf, 0, &visits, strict);
	tw_escaping(t, strict);
	free(path);
	free(buf);
}

#endif
