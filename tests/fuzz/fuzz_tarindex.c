/*
 * fuzz_tarindex.c - libFuzzer target for core/index/tarindex/tarindex_build.c and
 * tarindex.c: build, then use.
 *
 * Feeds: the input as a tar file (memfd, by its /proc/self/fd path) placed
 * twice in one tree, at the root and under "x" (two sources, as the
 * ImageNet layout has), to tarindex_build with recursive=2 (nested tars
 * expanded two levels) into an index file in a private temporary directory,
 * with the members' checksums (-o checksums) for inputs of odd length;
 * a build that succeeds must then load (index_map_open, tarindex_open:
 * the tar layout gives up when a fresh index does not) and every node is
 * visited (tarwalk.h): lookups, find by full path, parent, symlink targets,
 * and tarindex_pread of every file, whose bytes must be the source's
 * (with checksums: read through their checks, which the intact source
 * passes).
 * The sources are opened in a source env, so members named "*.tar.gz",
 * "*.tar.xz"... that decompress to tars are expanded through derived
 * sources (tarindex_znest.c) and opened again by tarindex_open.
 * Seeds: the same tars as fuzz_tar, and make_tars.py's znest.tar.
 */
#include "fuzz.h"
#include "index/index.h"
#include "index/tarindex/tarindex.h"
#include "tarwalk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tarindex_build_opts bo = { .recursive = 2, .quiet = 1, .what = "fuzz",
					  .checksums = (int)(size & 1) };
	struct tarindex_source src[2];
	struct source_env *env = fuzz_env();
	struct index_writer *w = NULL;
	struct index_map m;
	struct index_fp fp;
	struct tarindex t;
	char fdpath[64], path[512], why[256];
	int fd, rc;

	fd = fuzz_memfd(data, size);
	if (fd < 0)
		return 0;
	fuzz_fd_path(fd, fdpath, sizeof(fdpath));
	src[0] = (struct tarindex_source){ fdpath, "", NULL };
	src[1] = (struct tarindex_source){ fdpath, "x", NULL };
	if (!env || tarindex_sources_open(env, src, 2))
		goto out;
	snprintf(path, sizeof(path), "%s/tarindex.sfsidx", fuzz_tmpdir());
	index_fp_init(&fp, "fuzz");
	FUZZ_CHECK(tarindex_fp_add(&fp, src, 2, bo.recursive) == 0);
	FUZZ_CHECK(index_writer_open(&w, path) == 0);
	rc = tarindex_build(w, 'T', src, 2, &bo);
	if (rc) {
		index_writer_abort(w);
		goto out;
	}
	FUZZ_CHECK(index_writer_commit(w, &fp) == 0);
	rc = index_map_open(&m, path, &fp, why, sizeof(why));
	FUZZ_CHECK(rc == 0);
	rc = tarindex_open(&t, &m, 'T', src, 2);
	FUZZ_CHECK(rc == 0);
	tarwalk(&t, data, size, 1);
	tarindex_close(&t);
	index_map_close(&m);
	unlink(path);
out:
	tarindex_sources_close(src, 2);
	close(fd);
	return 0;
}
