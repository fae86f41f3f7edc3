/*
 * tarindex_fixture.h - what tests/unit/test_tarindex.c and
 * test_tarindex_written.c share: an index of one tarindex built into a
 * temporary file, mapped and opened (build, unbuild).  Static inline
 * functions: each test program includes it once.
 *
 * Not for: anything but those two test programs.
 */
#ifndef SFS_TEST_TARINDEX_FIXTURE_H
#define SFS_TEST_TARINDEX_FIXTURE_H

/* An index file holding one tarindex, opened, and its open sources. */
struct built {
	char path[64];
	struct index_fp fp;
	struct index_map m;
	struct tarindex t;
	struct tarindex_source *src;
	size_t nsrc;
	struct tarindex_source one;	/* a source that lives as long as b */
};

/* Opens the sources in env (closed by unbuild, or here on failure),
 * builds. */
static inline int build_in(struct source_env *env, struct built *b,
		    struct tarindex_source *src, size_t n, uint32_t recursive)
{
	struct tarindex_build_opts bo = { .recursive = recursive, .quiet = 1 };
	struct index_writer *w;
	char why[256];
	int fd, rc;

	b->src = src;
	b->nsrc = n;
	cr_assert_eq(tarindex_sources_open(env, src, n), 0);
	strcpy(b->path, "/tmp/sfs-tarindex-XXXXXX");
	fd = mkstemp(b->path);
	cr_assert(fd >= 0);
	close(fd);
	index_fp_init(&b->fp, "tar");
	cr_assert_eq(tarindex_fp_add(&b->fp, src, n, recursive), 0);
	cr_assert_eq(index_writer_open(&w, b->path), 0);
	rc = tarindex_build(w, 'A', src, n, &bo);
	if (rc < 0) {
		index_writer_abort(w);
		unlink(b->path);
		tarindex_sources_close(src, n);
		return rc;
	}
	cr_assert_eq(index_writer_commit(w, &b->fp), 0);
	cr_assert_eq(index_map_open(&b->m, b->path, &b->fp, why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(tarindex_open(&b->t, &b->m, 'A', src, n), 0);
	return 0;
}

static inline int build(struct built *b, struct tarindex_source *src, size_t n,
		 uint32_t recursive)
{
	return build_in(NULL, b, src, n, recursive);
}

static inline void unbuild(struct built *b)
{
	tarindex_close(&b->t);
	index_map_close(&b->m);
	unlink(b->path);
	tarindex_sources_close(b->src, b->nsrc);
}

#endif
