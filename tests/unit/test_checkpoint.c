/*
 * test_checkpoint.c - core/index/checkpoint.c: a build's saved progress.
 * What is written comes back: the members up to the last mark, in order,
 * with their fields (a sparse map, a nested tar's flag, depths), and the
 * resume point; what follows the last boundary is cut off at close; a
 * record cut short at the end (a kill mid-write) leaves the marks before
 * it usable; a flipped byte makes the whole checkpoint ignored (a fresh
 * one); another fingerprint or part is not resumed; done removes the file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/checkpoint.h"

#define FP 0x1234567890abcdefull

static char dir[64], idx[128], file[160];

static void setup(void)
{
	strcpy(dir, "/tmp/sfs-test-ckpt.XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(idx, sizeof(idx), "%s/tar-x.sfsidx", dir);
	snprintf(file, sizeof(file), "%s.ckpt.54", idx);
}

static void teardown(void)
{
	unlink(file);
	rmdir(dir);
}

TestSuite(checkpoint, .init = setup, .fini = teardown);

static const struct tar_sparse_chunk chunks[2] = { { 0, 7 }, { 100, 9 } };

/* Member i of a made-up walk: source i / 10, every 5th a nested tar with
 * the next one inside it, every 7th sparse. */
static struct ckpt_member member(unsigned i, char *path)
{
	struct ckpt_member m = { 0 };

	snprintf(path, 32, "d/m%u", i);
	m.m = (struct tar_member){ .path = path, .link = "", .type = TAR_FILE,
				   .mode = 0600, .mtime = 1000 + i, .size = 16 + i,
				   .offset = 512 * (2 * i + 1), .stored = 16 + i,
				   .header = 512 * 2 * i };
	if (i % 7 == 3) {
		m.m.sparse = 1;
		m.m.nchunks = 2;
		m.m.chunks = chunks;
	}
	m.src = i / 10;
	m.depth = i % 5 == 1 && i % 10 != 0 ? 1 : 0;
	m.nested = i % 5 == 0;
	return m;
}

/* Writes members 0..n-1, boundaries before each top-level one (marked
 * when `mark_each`), then closes (not done). */
static void write_walk(unsigned n, int mark_each)
{
	struct ckpt_resume r;
	struct ckpt *c;
	char path[32];
	unsigned i;

	cr_assert_eq(ckpt_open(&c, idx, 'T', FP, &r), 0);
	for (i = 0; i < n; i++) {
		struct ckpt_member m = member(i, path);

		if (m.depth == 0)
			cr_assert_eq(ckpt_boundary(c, m.src, m.m.header, mark_each), 0);
		cr_assert_eq(ckpt_add(c, &m), 0);
	}
	ckpt_close(c, 0);
}

/* Resumes and checks every replayed member against member(); returns
 * how many. */
static uint64_t check_replay(struct ckpt_resume *r, int expect)
{
	struct ckpt_member *m;
	struct ckpt *c;
	char path[32];
	uint64_t n = 0;

	cr_assert_eq(ckpt_open(&c, idx, 'T', FP, r), expect);
	while (ckpt_next(c, &m) == 1) {
		struct ckpt_member w = member((unsigned)n, path);

		cr_expect_str_eq(m->m.path, w.m.path);
		cr_expect_eq(m->m.offset, w.m.offset);
		cr_expect_eq(m->m.size, w.m.size);
		cr_expect_eq(m->m.mtime, w.m.mtime);
		cr_expect_eq(m->src, w.src);
		cr_expect_eq(m->depth, w.depth);
		cr_expect_eq(m->nested, w.nested);
		cr_expect_eq(m->m.sparse, w.m.sparse);
		if (w.m.sparse) {
			cr_assert_eq(m->m.nchunks, 2);
			cr_expect_eq(m->m.chunks[1].off, 100);
			cr_expect_eq(m->m.chunks[1].len, 9);
		}
		free(m);
		n++;
	}
	ckpt_close(c, 0);
	return n;
}

Test(checkpoint, resumes_at_the_last_boundary)
{
	struct ckpt_resume r;

	/* 23 members: the last top-level boundary is before member 22
	 * (source 2); member 21 is inside member 20, a nested tar */
	write_walk(23, 1);
	cr_assert_eq(check_replay(&r, 1), 22);
	cr_expect_eq(r.members, 22);
	cr_expect_eq(r.src, 2);
	cr_expect_eq(r.off, 512 * 2 * 22);
}

Test(checkpoint, close_cuts_after_the_boundary)
{
	struct ckpt_resume r;

	/* no mark while walking (one per second at most): close marks the
	 * last boundary, before member 20, whose nested member 21 is cut */
	write_walk(22, 0);
	cr_assert_eq(check_replay(&r, 1), 20);
	cr_expect_eq(r.src, 2);
	cr_expect_eq(r.off, 512 * 2 * 20);
}

Test(checkpoint, a_record_cut_short_keeps_the_marks_before)
{
	struct ckpt_resume r;
	struct stat st;

	write_walk(23, 1);
	cr_assert_eq(stat(file, &st), 0);
	cr_assert_eq(truncate(file, st.st_size - 5), 0);	/* into the last mark */
	cr_assert_eq(check_replay(&r, 1), 20);
	cr_expect_eq(r.off, 512 * 2 * 20);
}

Test(checkpoint, a_flipped_byte_ignores_it)
{
	struct ckpt_resume r;
	struct stat st;
	FILE *f;
	int ch;

	write_walk(23, 1);
	cr_assert_eq(stat(file, &st), 0);
	cr_assert(f = fopen(file, "r+b"));
	fseek(f, st.st_size / 2, SEEK_SET);
	ch = fgetc(f);
	fseek(f, st.st_size / 2, SEEK_SET);
	fputc(ch ^ 0x10, f);
	fclose(f);
	cr_expect_eq(check_replay(&r, 0), 0);
	cr_expect_eq(r.members, 0);
	cr_expect_eq(ckpt_check_file(file, 'T', FP), 0);	/* started afresh */
}

Test(checkpoint, another_fingerprint_or_part_is_not_resumed)
{
	struct ckpt_resume r;
	struct ckpt *c;

	write_walk(23, 1);
	cr_expect_eq(ckpt_check_file(file, 'T', FP + 1), 0);
	cr_expect_eq(ckpt_check_file(file, 'V', FP), 0);
	cr_expect_eq(ckpt_check_file(file, 'T', FP), 0);	/* replays all: 0 at its end */
	cr_assert_eq(ckpt_open(&c, idx, 'T', FP + 1, &r), 0);
	cr_expect_eq(r.members, 0);
	ckpt_close(c, 1);
	cr_expect_neq(access(file, F_OK), 0, "done removes the checkpoint");
}
