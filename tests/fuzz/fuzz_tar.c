/*
 * fuzz_tar.c - libFuzzer target for core/formats/tar.c's header walker.
 *
 * Feeds: the input as a file (memfd) to tar_walk over its whole length;
 * each member whose data tarindex_member_is_tar takes for a nested tar is
 * walked in turn over its data range, two levels deep, as tarindex_build.c does.
 * Checks what tar.h promises of every member reported: a non-empty path
 * that tar_normalise leaves as it is, a known type, data after its header
 * and inside the walked range, no link target on a plain file or dir, a
 * sparse map in order, inside the size and adding up to the stored bytes.
 * Seeds: the tars of tests/fixtures/make_tars.py (every format, pax,
 * GNU long names, sparse, base-256, truncated, hostile names) and the
 * ImageNet fixture tars.
 */
#include "fuzz.h"
#include "formats/tar.h"
#include "index/tarindex/tarindex.h"

struct ctx {
	struct source *src;
	uint64_t lo, hi;
	int depth;
	unsigned members;
};

static int walk(struct ctx *c);

static int member(void *arg, const struct tar_member *m)
{
	struct ctx *c = arg, sub;
	char copy[TAR_PATH_MAX + 1];
	size_t n;

	c->members++;
	FUZZ_CHECK(m->path && m->path[0]);
	n = strlen(m->path);
	FUZZ_CHECK(n <= TAR_PATH_MAX);
	memcpy(copy, m->path, n + 1);
	FUZZ_CHECK(tar_normalise(copy) == 0 && strcmp(copy, m->path) == 0);
	FUZZ_CHECK(m->type >= TAR_FILE && m->type <= TAR_SYMLINK);
	FUZZ_CHECK(m->link);
	FUZZ_CHECK(m->header >= c->lo && m->header % TAR_BLOCK == c->lo % TAR_BLOCK);
	FUZZ_CHECK(m->offset >= m->header + TAR_BLOCK);
	if (m->type == TAR_FILE || m->type == TAR_DIR)
		FUZZ_CHECK(m->link[0] == '\0');
	if (m->type != TAR_FILE)
		return 0;
	FUZZ_CHECK(m->offset <= c->hi && m->stored <= c->hi - m->offset);
	FUZZ_CHECK(m->sparse || m->stored == m->size);
	if (m->sparse) {        /* tar.h: in order, inside size, summing to stored */
		uint64_t end = 0, sum = 0;
		uint32_t i;

		FUZZ_CHECK(m->nchunks == 0 || m->chunks);
		for (i = 0; i < m->nchunks; i++) {
			FUZZ_CHECK(m->chunks[i].len > 0 && m->chunks[i].off >= end);
			FUZZ_CHECK(m->chunks[i].len <= m->size - m->chunks[i].off);
			end = m->chunks[i].off + m->chunks[i].len;
			sum += m->chunks[i].len;
		}
		FUZZ_CHECK(sum == m->stored);
	}
	if (c->depth < 2 && tarindex_member_is_tar(c->src, m)) {
		sub = (struct ctx){ c->src, m->offset, m->offset + m->size, c->depth + 1, 0 };
		(void)walk(&sub);
	}
	return 0;
}

static int walk(struct ctx *c)
{
	return tar_walk(c->src, c->lo, c->hi - c->lo, "fuzz.tar", member, c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = { .lo = 0, .hi = size };
	int fd, rc;

	if (size >= TAR_BLOCK)
		(void)tar_header_ok(data);
	fd = fuzz_memfd(data, size);
	if (fd < 0)
		return 0;
	if ((c.src = fuzz_source(fd))) {
		rc = walk(&c);
		FUZZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -EINVAL || rc == -ENOMEM);
		source_close(c.src);
	}
	close(fd);
	return 0;
}
