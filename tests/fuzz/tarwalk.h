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
 * Without it (an index edited after its build, which tarindex_open does
 * not fully check: see tests/fuzz/pending/README.md) the same calls are
 * made, for the sanitizers, and their answers are not checked.
 *
 * Not for: sparse members (expanded reads differ from the stored bytes:
 * when tarindex serves them, skip them here).
 */
#ifndef SFS_FUZZ_TARWALK_H
#define SFS_FUZZ_TARWALK_H

#include "fuzz.h"
#include "tarindex.h"

#define TW_CHUNK (64u << 10)

static void tw_file(const struct tarindex *t, uint32_t i, const uint8_t *src,
		    size_t srclen, uint8_t *buf)
{
	const struct tarindex_node *n = tarindex_node(t, i);
	uint64_t size = tarindex_node_size(n), off = 0;
	ssize_t k;

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
			(void)tarindex_symlink_escapes(t, c);
			FUZZ_CHECK(tarindex_pread(t, c, buf, 1, 0) == -EINVAL);
		} else {
			FUZZ_CHECK(ty == TARINDEX_FILE);
			tw_file(t, c, src, srclen, buf);
		}
		path[len] = '\0';
	}
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
	free(path);
	free(buf);
}

#endif
