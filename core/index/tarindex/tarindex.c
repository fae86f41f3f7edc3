/*
 * tarindex.c - the mounted half of the tar index described in tarindex.h:
 * checks the small sections of a mapped index at open and each directory's
 * children the first time it is used (so lookups need no bounds checks,
 * and a mount reads what it touches), then answers lookups, listings,
 * a link's target and reads in place in the mmap'ed index file, zip
 * members' reads included (the section tarindex_zip.c builds: small ones
 * inflated whole by zipread.c, large ones through derived sources).
 *
 * Not for: building the index (tarindex_build.c), which links leave the
 * mount (tarindex_escape.c), layout decisions (names of the mount's top
 * level, inodes).
 */
#include "index/tarindex/tarindex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/source.h"
#include "formats/zipread.h"
#include "index/tarindex/tarindex_int.h"
#include "search.h"

/* ---------------------------------------------------------------- mounted */

/* The zip section (below: sources that are zips, built by tarindex_zip.c). */
struct lru_pool;
static int zip_open(struct tarindex *t, const struct index_map *m, uint32_t c,
		    struct lru_pool *mem);
static void zip_close(struct tarindex *t);

static int bad(const char *what, uint64_t i)
{
	sfs_warn("tar index: %s (node %llu): rebuilding", what, (unsigned long long)i);
	return -EBADMSG;
}

/* Found after the mount began (a directory checked as it is first used):
 * too late to rebuild, so what needs it gives EIO.  Blocks that pass
 * their checksums and still do not fit come from a bug, or an index made
 * elsewhere. */
static int bad_late(const struct tarindex *t, const char *what, uint64_t i)
{
	sfs_err("%s: tar index: %s (node %llu): what needs it gives EIO; remove "
		"the file to rebuild it", t->map->path, what, (unsigned long long)i);
	return -EIO;
}

/* Bytes [p, p + len) of a section of t's map, checked: 0 or -EIO. */
static int ok(const struct tarindex *t, const void *p, uint64_t len)
{
	return index_map_check(t->map, p, len);
}

/* A NUL-terminated string at `off` in the pool, checked with its NUL
 * (the pool's last byte is one, checked at open, so strlen stops). */
static int pool_ok(const struct tarindex *t, uint64_t off)
{
	return ok(t, t->pool + off, strlen(t->pool + off) + 1);
}

/*
 * Node i's fields against the counts and the pool's length (its block
 * checked by the caller): what a lookup trusts.  Its name's and a
 * symlink's target's bytes are strings_ok's.
 */
static int node_ok(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *n = &t->nodes[i];
	uint64_t size = tarindex_node_size(n);

	if (n->name >= t->pool_len)
		return bad_late(t, "name outside the pool", i);
	switch (tarindex_node_type(n)) {
	case TARINDEX_DIR:
		/* children come after their directory, inside the table;
		 * no sum, as off is any 64-bit value and off + size can wrap */
		if (size && (n->off <= i || n->off >= t->nnodes ||
			     size > t->nnodes - n->off))
			return bad_late(t, "child range out of bounds", i);
		break;
	case TARINDEX_FILE:
		if (tarindex_node_src(n) >= t->nsrc || n->off + size < n->off)
			return bad_late(t, "bad source or extent", i);
		break;
	case TARINDEX_SYMLINK:
		if (n->off >= t->pool_len || size >= t->pool_len - n->off)
			return bad_late(t, "symlink target outside the pool", i);
		break;
	default:
		return bad_late(t, "unknown node type", i);
	}
	return 0;
}

/* Node i's name (one path component: readdir hands it to the kernel) and
 * a symlink's target, checked; node_ok passed. */
static int strings_ok(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *n = &t->nodes[i];
	uint64_t size = tarindex_node_size(n);
	int rc;

	if ((rc = pool_ok(t, n->name)) < 0)
		return rc;
	if (i && (!t->pool[n->name] || strchr(t->pool + n->name, '/')))
		return bad_late(t, "empty name or one with a '/'", i);
	if (tarindex_node_type(n) != TARINDEX_SYMLINK)
		return 0;
	if ((rc = ok(t, t->pool + n->off, size + 1)) < 0)
		return rc;
	if (t->pool[n->off + size] != '\0' || memchr(t->pool + n->off, '\0', size))
		return bad_late(t, "symlink target outside the pool", i);
	return 0;
}

int tarindex_node_check(const struct tarindex *t, uint32_t i)
{
	int rc;

	if (i >= t->nnodes)
		return bad_late(t, "node number out of bounds", i);
	if ((rc = ok(t, &t->nodes[i], sizeof(t->nodes[i]))) < 0 ||
	    (rc = node_ok(t, i)) < 0)
		return rc;
	return strings_ok(t, i);
}

/* Whether directory node i is in the directory list. */
static int listed(const struct tarindex *t, uint32_t i)
{
	uint32_t k = tarindex_count_below(t->dirs, t->ndirs, i);

	return k < t->ndirs && t->dirs[k] == i;
}

#define CHECKED_NODES 1u	/* the children's nodes: enough for a lookup,
				 * which checks the names it compares */
#define CHECKED_NAMES 2u	/* and their names, targets and order: for
				 * tarindex_children's callers (readdir) */

/*
 * The children of directory d (checked itself) the first time they are
 * used: their nodes, and with `what` CHECKED_NAMES their names, targets
 * and order too (lookups are binary searches; a lookup alone reads a few
 * names, wherever the pool holds them: a tar's order puts a directory's
 * name far from its siblings').  Then d's bits are set, and later calls
 * cost a load.  Two threads may check one directory at once: both find
 * the same.
 */
static int dir_check(const struct tarindex *t, uint32_t d, unsigned what)
{
	const struct tarindex_node *n = &t->nodes[d];
	unsigned shift = (d & 3) * 2, done;
	uint64_t first = n->off, count = tarindex_node_size(n), i;
	int rc;

	done = (__atomic_load_n(&t->checked[d >> 2], __ATOMIC_ACQUIRE) >> shift) & 3;
	if ((done & what) == what)
		return 0;
	if (!(done & CHECKED_NODES)) {
		/* d itself first (its parent's check did, unless d came from
		 * elsewhere: the directory list, a layout): its child range */
		if ((rc = ok(t, n, sizeof(*n))) < 0 || (rc = node_ok(t, d)) < 0)
			return rc;
		if (count && (rc = ok(t, &t->nodes[first], count * sizeof(*n))) < 0)
			return rc;
		for (i = first; i < first + count; i++) {
			if ((rc = node_ok(t, (uint32_t)i)) < 0)
				return rc;
			/* only listed directories were checked to tile */
			if (tarindex_node_type(&t->nodes[i]) == TARINDEX_DIR &&
			    !listed(t, (uint32_t)i))
				return bad_late(t, "directory not in the directory list", i);
		}
	}
	for (i = first; what & CHECKED_NAMES && i < first + count; i++) {
		if ((rc = strings_ok(t, (uint32_t)i)) < 0)
			return rc;
		if (i > first && strcmp(tarindex_name(t, (uint32_t)i - 1),
					tarindex_name(t, (uint32_t)i)) >= 0)
			return bad_late(t, "children not sorted", i);
	}
	__atomic_fetch_or(&t->checked[d >> 2], (uint8_t)(what << shift), __ATOMIC_RELEASE);
	return 0;
}

static int map_sections(struct tarindex *t, const struct index_map *m,
			uint32_t c)
{
	const struct tarindex_hdr *h;
	uint64_t len[8];

	h = index_map_section(m, TAG(c, 'H', 'D'), &len[0]);
	/* the large ones, checked as they are used */
	t->nodes = index_map_section_unchecked(m, TAG(c, 'N', 'D'), &len[1]);
	t->pool = index_map_section_unchecked(m, TAG(c, 'N', 'M'), &len[3]);
	t->dirs = index_map_section(m, TAG(c, 'D', 'R'), &len[2]);
	t->src_sizes = index_map_section(m, TAG(c, 'S', 'R'), &len[4]);
	t->sparse = index_map_section(m, TAG(c, 'S', 'T'), &len[5]);
	t->chunks = index_map_section(m, TAG(c, 'S', 'M'), &len[6]);
	t->hardlinks = index_map_section(m, TAG(c, 'H', 'L'), &len[7]);
	if (index_map_damaged(m))
		return -EBADMSG;	/* said, and rebuilt */
	if (!h || len[0] != sizeof(*h) || h->version != TARINDEX_VERSION)
		return bad("missing header or other version", 0);
	if (!t->nodes || !h->nnodes || len[1] != (uint64_t)h->nnodes * sizeof(*t->nodes) ||
	    len[2] != (uint64_t)h->ndirs * sizeof(*t->dirs) ||
	    !t->pool || len[3] != h->pool_len ||
	    len[5] != (uint64_t)h->nsparse * sizeof(*t->sparse) ||
	    len[6] != h->nchunks * sizeof(*t->chunks) || h->nchunks > len[6] ||
	    len[7] != (uint64_t)h->nhardlinks * sizeof(*t->hardlinks) ||
	    (uint64_t)h->nsrc + h->nderived > TARINDEX_MAX_SOURCES ||
	    len[4] != ((uint64_t)h->nsrc + h->nderived) * sizeof(uint64_t))
		return bad("section sizes disagree with the header", 0);
	/* strings in the pool end at its last byte at the latest */
	if (ok(t, t->pool + len[3] - 1, 1) < 0)
		return -EBADMSG;	/* said, and rebuilt */
	if (t->pool[len[3] - 1] != '\0')
		return bad("the names do not end with a NUL", 0);
	t->nnodes = h->nnodes;
	t->ndirs = h->ndirs;
	t->pool_len = h->pool_len;
	t->ntop = h->nsrc;
	t->nsrc = h->nsrc + h->nderived;
	t->nfiles = h->nfiles;
	t->total_bytes = h->total_bytes;
	t->nsparse = h->nsparse;
	t->nchunks = h->nchunks;
	t->nhardlinks = h->nhardlinks;
	t->nsymlinks = h->nsymlinks;
	return 0;
}

/*
 * The directories' child ranges must tile [1, nnodes) in node order, each
 * after its directory (so the tree has no cycles, and tarindex_parent, a
 * search of the list, finds each node's): what a mount uses before any
 * lookup.  It reads the directory nodes only (their blocks checked); that
 * every directory is listed is checked as their parents are (dir_check).
 */
static int check_dirs(const struct tarindex *t)
{
	uint64_t cursor = 1;
	uint32_t k, prev = 0;

	if (!t->ndirs || t->dirs[0] != 0)
		return bad("root is not the first directory", 0);
	for (k = 0; k < t->ndirs; k++) {
		const struct tarindex_node *n;

		if (t->dirs[k] >= t->nnodes || (k && t->dirs[k] <= prev))
			return bad("directory list out of order", k);
		n = &t->nodes[t->dirs[k]];
		if (ok(t, n, sizeof(*n)) < 0)
			return -EBADMSG;	/* said, and rebuilt */
		if (tarindex_node_type(n) != TARINDEX_DIR || n->off != cursor ||
		    (tarindex_node_size(n) && n->off <= t->dirs[k]) ||
		    t->nnodes - cursor < tarindex_node_size(n))
			return bad("directory ranges do not tile", t->dirs[k]);
		cursor += tarindex_node_size(n);
		prev = t->dirs[k];
	}
	if (cursor != t->nnodes)
		return bad("directory ranges do not tile", cursor);
	if (tarindex_node_check(t, 0) < 0)
		return -EBADMSG;
	return 0;
}

/*
 * Chunks j and j + 1 of the section are in order: offsets and stored
 * bytes do not decrease, and chunk j stores no more than the span to j + 1.
 */
static int chunks_in_order(const struct tarindex_chunk *c, uint64_t j)
{
	return c[j].data <= c[j + 1].data && c[j].off <= c[j + 1].off &&
	       c[j + 1].data - c[j].data <= c[j + 1].off - c[j].off;
}

/*
 * Sparse entry k: its node is a sparse file, after the previous entry's;
 * its map lies inside the chunk section, its chunks are in order and do
 * not overlap (no pair out of order in it: unordered[x] counts those
 * before chunk x, so a map shared by many links is not walked for each),
 * end at the file's size, and its stored bytes fit.
 */
static int check_sparse(const struct tarindex *t, uint32_t k,
			const uint64_t *unordered)
{
	const struct tarindex_sparse *sp = &t->sparse[k];
	const struct tarindex_node *n;
	const struct tarindex_chunk *c;

	if (sp->node >= t->nnodes || (k && sp->node <= t->sparse[k - 1].node))
		return bad("sparse list out of order", k);
	n = &t->nodes[sp->node];
	if (ok(t, n, sizeof(*n)) < 0)
		return -EBADMSG;	/* said, and rebuilt */
	if (tarindex_node_type(n) != TARINDEX_FILE || !tarindex_node_sparse(n) ||
	    sp->map >= t->nchunks || sp->nchunks >= t->nchunks - sp->map)
		return bad("sparse entry does not match its node", sp->node);
	c = &t->chunks[sp->map];
	if (c[0].data != 0 ||
	    unordered[sp->map + sp->nchunks] != unordered[sp->map])
		return bad("sparse map out of order", sp->node);
	if (c[sp->nchunks].off != tarindex_node_size(n) ||
	    n->off + c[sp->nchunks].data < n->off)
		return bad("sparse map does not end at the file's size", sp->node);
	return 0;
}

/* Every sparse entry is valid.  (A sparse node without one reads EIO:
 * sparse_read.) */
static int check_sparse_all(const struct tarindex *t)
{
	uint64_t *unordered, j;
	uint32_t k;
	int rc = 0;

	if (!t->nsparse)
		return 0;
	unordered = malloc((t->nchunks + 1) * sizeof(*unordered));
	if (!unordered)
		return -ENOMEM;
	for (j = 0; j < t->nchunks; j++)
		unordered[j] = j ? unordered[j - 1] + !chunks_in_order(t->chunks, j - 1) : 0;
	for (k = 0; rc == 0 && k < t->nsparse; k++)
		rc = check_sparse(t, k, unordered);
	free(unordered);
	return rc;
}

/*
 * Hard link entries: in node order, each a file node listed in the group
 * of its first node, with that node's data, so one inode has one file.
 */
static int check_hardlinks(const struct tarindex *t)
{
	for (uint32_t k = 0; k < t->nhardlinks; k++) {
		const struct tarindex_hardlink *h = &t->hardlinks[k], *f;

		if (h->node >= t->nnodes || h->first >= t->nnodes ||
		    (k && h->node <= t->hardlinks[k - 1].node))
			return bad("hard link list out of order", k);
		if (ok(t, &t->nodes[h->node], sizeof(t->nodes[0])) < 0 ||
		    ok(t, &t->nodes[h->first], sizeof(t->nodes[0])) < 0)
			return -EBADMSG;	/* said, and rebuilt */
		f = tarindex_hardlink(t, h->first);
		if (!f || f->first != h->first || f->nlink != h->nlink || h->nlink < 2 ||
		    tarindex_node_type(&t->nodes[h->node]) != TARINDEX_FILE ||
		    t->nodes[h->node].off != t->nodes[h->first].off ||
		    t->nodes[h->node].meta != t->nodes[h->first].meta)
			return bad("hard link does not match its group", h->node);
	}
	return 0;
}

int tarindex_open(struct tarindex *t, const struct index_map *m,
		  uint32_t tag_prefix_char, const struct tarindex_source *src,
		  size_t nsrc)
{
	uint32_t i;
	int rc;

	memset(t, 0, sizeof(*t));
	t->map = m;
	rc = map_sections(t, m, tag_prefix_char);
	if (rc == 0)
		rc = tarindex_sums_open(t, m, tag_prefix_char);
	if (rc == 0)
		rc = zip_open(t, m, tag_prefix_char,
				       nsrc ? source_cache(src[0].src) : NULL);
	if (rc == 0 && t->ntop != nsrc)
		rc = bad("number of sources differs", nsrc);
	if (rc == 0)
		rc = check_dirs(t);
	if (rc == 0)
		rc = check_sparse_all(t);
	if (rc == 0)
		rc = check_hardlinks(t);
	if (rc < 0)
		goto out;
	/* calloc: zero pages, taken as directories are checked */
	t->checked = calloc((size_t)t->nnodes / 4 + 1, 1);
	t->srcs = calloc((size_t)t->nsrc + 1, sizeof(*t->srcs));
	if (!t->srcs || !t->checked) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nsrc; i++) {
		uint64_t size = source_stamp(src[i].src)->size;

		/* the fingerprint is of these open sources' stamps; a size
		 * that differs all the same means sections that lie */
		if (size != t->src_sizes[i]) {
			sfs_warn("%s: %llu bytes, the index says %llu: changed while "
				 "mounting", src[i].path, (unsigned long long)size,
				 (unsigned long long)t->src_sizes[i]);
			rc = -EBADMSG;
			goto out;
		}
		t->srcs[i] = src[i].src;
	}
	rc = tarindex_derived_open(t, m, tag_prefix_char, t->nsrc - t->ntop);
	if (rc == 0)
		rc = tarindex_sums_start(t, nsrc ? source_cache(src[0].src) : NULL);
	if (rc == 0)
		return 0;
out:
	tarindex_close(t);
	return rc;
}

void tarindex_close(struct tarindex *t)
{
	zip_close(t);
	tarindex_sums_close(t);
	tarindex_derived_close(t);
	free(t->srcs);
	free(t->checked);
	memset(t, 0, sizeof(*t));
}

int tarindex_sources_open(struct source_env *env, struct tarindex_source *src,
			  size_t nsrc)
{
	size_t i;
	int rc;

	for (i = 0; i < nsrc; i++) {
		if (src[i].src)
			continue;
		rc = source_open(env, src[i].path, &src[i].src);
		if (rc < 0) {
			sfs_err("%s: cannot open: %s", src[i].path, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

void tarindex_sources_close(struct tarindex_source *src, size_t nsrc)
{
	size_t i;

	for (i = 0; src && i < nsrc; i++) {
		source_close(src[i].src);
		src[i].src = NULL;
	}
}

/* Children of dir, checked as `what` says (dir_check). */
static int children(const struct tarindex *t, uint32_t dir, unsigned what,
		    uint32_t *first, uint32_t *count)
{
	const struct tarindex_node *n = &t->nodes[dir];
	int rc;

	if (dir >= t->nnodes)
		return -ENOTDIR;
	if (tarindex_node_type(n) != TARINDEX_DIR)
		return -ENOTDIR;
	if ((rc = dir_check(t, dir, what)) < 0)
		return rc;
	*first = (uint32_t)n->off;
	*count = (uint32_t)tarindex_node_size(n);
	return 0;
}

int tarindex_children(const struct tarindex *t, uint32_t dir, uint32_t *first,
		      uint32_t *count)
{
	return children(t, dir, CHECKED_NODES | CHECKED_NAMES, first, count);
}

int64_t tarindex_lookup(const struct tarindex *t, uint32_t dir, const char *name)
{
	uint32_t first, count, i;
	int rc = children(t, dir, CHECKED_NODES, &first, &count);

	if (rc < 0)
		return rc;
	/* a name whose pool block is damaged stops the search (rc, said) */
	rc = 0;
	i = SFS_PARTITION_POINT(uint32_t, first, first + count, m, rc == 0 &&
				(rc = pool_ok(t, t->nodes[m].name)) == 0 &&
				strcmp(tarindex_name(t, m), name) < 0);
	if (rc < 0)
		return rc;
	if (i == first + count || (rc = pool_ok(t, t->nodes[i].name)) < 0)
		return i == first + count ? -ENOENT : rc;
	return strcmp(tarindex_name(t, i), name) ? -ENOENT : (int64_t)i;
}

int64_t tarindex_find(const struct tarindex *t, const char *path)
{
	char comp[256];
	int64_t cur = TARINDEX_ROOT;
	const char *p = path, *e;

	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		if ((size_t)(e - p) >= sizeof(comp))
			return -ENOENT;
		memcpy(comp, p, (size_t)(e - p));
		comp[e - p] = '\0';
		cur = tarindex_lookup(t, (uint32_t)cur, comp);
		if (cur < 0)
			return cur;
		p = e;
	}
	return cur;
}

/* The directory whose child range holds i: the first one ending after i. */
uint32_t tarindex_parent(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *d;
	uint32_t k;
	int bad = 0;

	if (i == TARINDEX_ROOT || i >= t->nnodes)
		return TARINDEX_ROOT;
	/* a directory's node in a damaged block (said) ends at the root */
	k = SFS_PARTITION_POINT(uint32_t, 0, t->ndirs, m,
		!bad && (d = &t->nodes[t->dirs[m]], !(bad = ok(t, d, sizeof(*d)) < 0)) &&
		d->off + tarindex_node_size(d) <= i);
	return !bad && k < t->ndirs ? t->dirs[k] : TARINDEX_ROOT;
}

const char *tarindex_link(const struct tarindex *t, uint32_t i, uint64_t *len)
{
	const struct tarindex_node *n = &t->nodes[i];

	if (tarindex_node_type(n) != TARINDEX_SYMLINK)
		return NULL;
	/* a lookup checked the node, not the target; a caller may also
	 * have the number from elsewhere (tarindex_escaping_links' scan) */
	if (tarindex_node_check(t, i) < 0)
		return NULL;	/* said */
	*len = tarindex_node_size(n);
	return t->pool + n->off;
}

/* Zip entries in (source, offset) order: the section's and its search's. */
int tarindex_zip_cmp(const void *pa, const void *pb)
{
	const struct tarindex_zip *a = pa, *b = pb;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	return (a->off > b->off) - (a->off < b->off);
}

/* ---- zip members (sources that are zips: tarindex_zip.c builds) ---- */

/*
 * Large member d as a derived source (zipread_member_open), named as a
 * nested compressed tar is, after the zip, the data's offset and the
 * member ("x.zip@1234:big.bin"): its access points are stored under that
 * name and the zip's stamp, so a remount finds them without a pass, and
 * the pass's messages name all three.
 */
static int member_open(const struct zip_data *d, struct source **out)
{
	char *name = tarindex_derived_name(d->path, d->off, d->name);
	int rc;

	if (!name)
		return -ENOMEM;
	rc = zipread_member_open(d, name, out);
	free(name);
	return rc;
}

static int zip_open(struct tarindex *t, const struct index_map *m, uint32_t c,
		      struct lru_pool *mem)
{
	uint64_t len = 0, k;

	t->zips = index_map_section(m, TAG(c, 'Z', 'P'), &len);
	if (!t->zips)
		return 0;
	if (len % sizeof(*t->zips)) {
		sfs_warn("tar index: zip section of %llu bytes: rebuilding",
			 (unsigned long long)len);
		return -EBADMSG;
	}
	t->nzips = len / sizeof(*t->zips);
	for (k = 0; k < t->nzips; k++) {
		if (t->zips[k].src >= t->nsrc ||
		    (k && tarindex_zip_cmp(&t->zips[k - 1], &t->zips[k]) >= 0) ||
		    t->zips[k].off > t->src_sizes[t->zips[k].src] ||
		    t->zips[k].csize > t->src_sizes[t->zips[k].src] - t->zips[k].off) {
			sfs_warn("tar index: zip entry %llu out of order or past its "
				 "source: rebuilding", (unsigned long long)k);
			return -EBADMSG;
		}
	}
	/* keys: an entry's number + 1 */
	t->zr = t->nzips ? zipread_new(mem, t->nzips + 1, member_open) : NULL;
	return t->nzips && !t->zr ? -ENOMEM : 0;
}

static void zip_close(struct tarindex *t)
{
	zipread_free(t->zr);
	t->zr = NULL;
}

/* The zip entry of file node i, or NULL when its data is a plain range. */
static const struct tarindex_zip *zip_of(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *n = &t->nodes[i];
	struct tarindex_zip key = { .off = n->off, .src = tarindex_node_src(n) };

	if (!t->nzips || tarindex_node_type(n) != TARINDEX_FILE)
		return NULL;
	return bsearch(&key, t->zips, t->nzips, sizeof(*t->zips), tarindex_zip_cmp);
}

/* Entry z of file node i as zipread reads it. */
static struct zip_data data_of(const struct tarindex *t, uint32_t i,
			       const struct tarindex_zip *z)
{
	return (struct zip_data){
		.src = t->srcs[z->src], .path = source_name(t->srcs[z->src]),
		.name = tarindex_name(t, i), .off = z->off, .csize = z->csize,
		.usize = tarindex_node_size(&t->nodes[i]), .crc32 = z->crc32,
		.method = z->method, .flags = z->flags,
	};
}

int tarindex_in_place(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_zip *z;

	if (tarindex_node_type(&t->nodes[i]) != TARINDEX_FILE ||
	    tarindex_node_sparse(&t->nodes[i]))
		return 0;
	if (!(z = zip_of(t, i)))
		return !tarindex_summed(t, i);	/* a splice is not checked */
	return zipread_in_place(t->zr, (uint64_t)(z - t->zips) + 1);
}

int tarindex_summed(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *n = &t->nodes[i];

	return t->sums && tarindex_node_type(n) == TARINDEX_FILE &&
	       tarindex_sums_cover(t->zips, t->nzips, t->ntop,
				   tarindex_node_src(n), tarindex_node_sparse(n));
}

uint64_t tarindex_nsummed(const struct tarindex *t)
{
	return t->sums ? t->nsummed : 0;
}

int tarindex_zipped(const struct tarindex *t, uint32_t i)
{
	return zip_of(t, i) != NULL;
}

static ssize_t zip_pread(const struct tarindex *t, uint32_t i,
			   const struct tarindex_zip *z, void *buf, size_t size,
			   uint64_t off)
{
	struct zip_data d = data_of(t, i, z);

	/* the entry's number names the member in the cache */
	return zipread_pread(t->zr, (uint64_t)(z - t->zips) + 1, &d, buf, size, off);
}

/*
 * Reads len bytes at `at` of source src: 0, -EAGAIN (it would wait for
 * the disk, in no-wait mode) or -EIO (shorter than indexed: it changed,
 * warned).
 */
static int read_source(const struct tarindex *t, uint32_t src, char *buf,
		       size_t len, uint64_t at)
{
	ssize_t k = source_pread(t->srcs[src], buf, len, at);

	if (k == -EAGAIN)
		return -EAGAIN;
	if (k < 0 || (size_t)k != len) {
		source_check(t->srcs[src]);	/* the usual cause: say so */
		return -EIO;
	}
	return 0;
}

/* The sparse entry of node i (the list is in node order), or NULL. */
static const struct tarindex_sparse *sparse_entry(const struct tarindex *t,
						  uint32_t i)
{
	uint32_t k = SFS_PARTITION_POINT(uint32_t, 0, t->nsparse, m,
					 t->sparse[m].node < i);

	return k < t->nsparse && t->sparse[k].node == i ? &t->sparse[k] : NULL;
}

const struct tarindex_hardlink *tarindex_hardlink(const struct tarindex *t,
						 uint32_t i)
{
	struct tarindex_hardlink key = { .node = i };

	return t->nhardlinks ? bsearch(&key, t->hardlinks, t->nhardlinks,
				       sizeof(*t->hardlinks), hardlink_cmp) : NULL;
}

uint64_t tarindex_stored(const struct tarindex *t, uint32_t i)
{
	const struct tarindex_node *n = &t->nodes[i];
	const struct tarindex_sparse *sp;

	if (!tarindex_node_sparse(n))
		return tarindex_node_size(n);
	sp = sparse_entry(t, i);
	return sp ? t->chunks[sp->map + sp->nchunks].data : 0;
}

/*
 * Bytes [off, off + size) of sparse file node i (inside its size): each
 * run is either in chunk k - 1, read from the source, or in the hole
 * before chunk k (or before the end: map[nchunks] is {size, stored}), zeros.
 */
static int sparse_read(const struct tarindex *t, uint32_t i, char *buf,
		       size_t size, uint64_t off)
{
	const struct tarindex_node *n = &t->nodes[i];
	const struct tarindex_sparse *sp = sparse_entry(t, i);
	const struct tarindex_chunk *c;
	uint32_t lo;
	size_t done = 0, run;
	int rc;

	if (!sp)
		return -EIO;    /* tarindex_open checked that there is one */
	c = &t->chunks[sp->map];
	/* the first chunk after off */
	lo = SFS_PARTITION_POINT(uint32_t, 0, sp->nchunks, m, c[m].off <= off);
	while (done < size) {
		uint64_t pos = off + done, in = lo ? pos - c[lo - 1].off : 0;

		if (lo && in < c[lo].data - c[lo - 1].data) {
			run = c[lo].data - c[lo - 1].data - in;
			run = run < size - done ? run : size - done;
			rc = read_source(t, tarindex_node_src(n), buf + done, run,
					 n->off + c[lo - 1].data + in);
			if (rc < 0)
				return rc;
		} else {
			run = c[lo].off - pos < size - done ? c[lo].off - pos : size - done;
			memset(buf + done, 0, run);
		}
		done += run;
		while (lo < sp->nchunks && c[lo].off <= off + done)
			lo++;
	}
	return 0;
}

ssize_t tarindex_pread_unchecked(const struct tarindex *t, uint32_t i, void *buf,
				 size_t size, uint64_t off, struct source **from)
{
	const struct tarindex_node *n = &t->nodes[i];
	const struct tarindex_zip *z;
	uint64_t fsize;
	uint32_t src;
	ssize_t got;
	int rc;

	/* node i came from a lookup, which checked it, or from a layout's
	 * own section: its block is checked again (a byte's load) */
	if (i >= t->nnodes || ok(t, n, sizeof(*n)) < 0)
		return -EIO;	/* said */
	fsize = tarindex_node_size(n);
	src = tarindex_node_src(n);
	if (tarindex_node_type(n) == TARINDEX_DIR)
		return -EISDIR;
	if (tarindex_node_type(n) != TARINDEX_FILE)
		return -EINVAL;
	if (src >= t->nsrc)
		return -EIO;
	if (off >= fsize)
		return 0;
	if (size > fsize - off)
		size = (size_t)(fsize - off);
	/* a zip member's bytes go through zipread, which checks them */
	if ((z = t->nzips ? zip_of(t, i) : NULL)) {
		got = zip_pread(t, i, z, buf, size, off);
		if (got < 0)
			return got;
		rc = got == (ssize_t)size ? 0 : -EIO;
	} else if (tarindex_summed(t, i))
		rc = tarindex_sums_read(t, i, tarindex_name(t, i), src, n->off,
					fsize, buf, size, off);
	else
		rc = tarindex_node_sparse(n) ? sparse_read(t, i, buf, size, off) :
		     read_source(t, src, buf, size, n->off + off);
	if (rc < 0)
		return rc;
	*from = t->srcs[src];
	return (ssize_t)size;
}

ssize_t tarindex_pread(const struct tarindex *t, uint32_t i, void *buf,
		       size_t size, uint64_t off)
{
	struct source *from = NULL;
	ssize_t got = tarindex_pread_unchecked(t, i, buf, size, off, &from);

	/* checked after reading: bytes of a file that changed before or while
	 * they were read are not served (see tarindex.h for the limits) */
	if (got > 0 && source_check(from) < 0)
		return -EIO;
	return got;
}
