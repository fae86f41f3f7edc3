/*
 * test_devkit.c - labels from fake devkit tarballs against the generator's
 * truth (tests/fixtures/make_imagenet.py): classes sorted by WNID with their
 * ILSVRC2012_IDs and words, one label per val image in file-name order.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/devkit.h"
#include "io/source.h"
#include "capture.h"
#include "bounded.h"

/* devkit_load of the file at path, through a source of its own: 0, or
 * source_open's or devkit_load's -errno */
static int load_path(const char *path, struct devkit *dk)
{
	struct source *src;
	int rc = source_open(NULL, path, &src);

	if (rc)
		return rc;
	rc = devkit_load(src, dk);
	source_close(src);
	return rc;
}

static char *fixture_path(const char *name, char *buf, size_t len)
{
	const char *dir = getenv("SFS_FIXTURES");

	cr_assert(dir, "SFS_FIXTURES is not set");
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

static void check_variant(const char *variant)
{
	char path[4096], line[1024];
	struct devkit dk;
	uint32_t n = 0;
	FILE *f;

	snprintf(line, sizeof(line), "%s/ILSVRC2012_devkit_t12.tar.gz", variant);
	cr_assert_eq(load_path(fixture_path(line, path, sizeof(path)), &dk), 0);

	snprintf(line, sizeof(line), "%s.classes.txt", variant);
	f = fopen(fixture_path(line, path, sizeof(path)), "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned label, id;
		char wnid[32];
		int pos;

		line[strcspn(line, "\n")] = 0;
		cr_assert_eq(sscanf(line, "%u\t%31s\t%u\t%n", &label, wnid, &id, &pos), 3);
		cr_assert_lt(label, dk.nclasses);
		cr_assert_str_eq(dk.wnid[label], wnid);
		cr_assert_str_eq(dk.words[label], line + pos);
		cr_assert_leq(id, dk.max_id);
		cr_assert_eq(dk.id_label[id], label);
		cr_assert_eq(devkit_label(&dk, wnid), (int64_t)label);
		n++;
	}
	fclose(f);
	cr_assert_eq(dk.nclasses, n, "%u classes, the truth has %u", dk.nclasses, n);
	cr_assert_eq(devkit_label(&dk, "n99999999"), -1);
	cr_assert_eq(devkit_label(&dk, "n00000000"), -1);

	snprintf(line, sizeof(line), "%s.val.txt", variant);
	f = fopen(fixture_path(line, path, sizeof(path)), "r");
	cr_assert(f);
	for (n = 0; fgets(line, sizeof(line), f); n++) {
		cr_assert_lt(n, dk.nval);
		cr_assert_eq(dk.val_label[n], (uint32_t)atoi(line), "val %u", n + 1);
	}
	fclose(f);
	cr_assert_eq(dk.nval, n);
	devkit_free(&dk);
}

Test(devkit, scipy_compressed) { check_variant("imagenet"); }
Test(devkit, scipy_uncompressed) { check_variant("imagenet-plain"); }
Test(devkit, matlab_style) { check_variant("imagenet-matlab"); }

Test(devkit, missing_file)
{
	struct devkit dk;

	cr_assert_lt(load_path("/nonexistent/devkit.tar.gz", &dk), 0);
}

Test(devkit, not_a_tarball)
{
	char path[4096];
	struct devkit dk;

	/* a MAT-file is not a tar: libarchive must say so, not crash */
	cr_assert_lt(load_path(fixture_path("imagenet.meta.mat", path, sizeof(path)), &dk), 0);
}

Test(devkit, hostile_meta)
{
	const char *bad[] = { "mat-bomb.mat", "mat-dims.mat", "mat-wrongtype.mat",
			      "mat-text.mat", "mat-deep.mat" };
	struct devkit dk;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char path[4096];
		FILE *f = fopen(fixture_path(bad[i], path, sizeof(path)), "rb");
		static uint8_t buf[1 << 20];
		size_t n;

		cr_assert(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		cr_assert_lt(devkit_parse_meta(buf, n, bad[i], &dk), 0, "%s", bad[i]);
		cr_assert_null(dk.wnid);
	}
}

Test(devkit, bad_truth)
{
	char path[4096];
	struct devkit dk;
	static const char *bad[] = { "1\nx\n", "1\n99999\n", "1 2\n", "0\n",
				     "18446744073709551617\n" };
	size_t i;
	FILE *f = fopen(fixture_path("imagenet.meta.mat", path, sizeof(path)), "rb");
	static uint8_t buf[1 << 20];
	size_t n;

	cr_assert(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	cr_assert_eq(devkit_parse_meta(buf, n, "meta.mat", &dk), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(devkit_parse_truth(bad[i], strlen(bad[i]), "gt", &dk),
			     -EBADMSG, "%s", bad[i]);
	cr_assert_eq(devkit_parse_truth("1\r\n2", 4, "gt", &dk), 0);
	cr_assert_eq(dk.nval, 2);
	cr_assert_eq(dk.val_label[0], dk.id_label[1]);
	cr_assert_eq(dk.val_label[1], dk.id_label[2]);
	devkit_free(&dk);
}

/* Runs devkit_parse_meta (or devkit_load when buf is NULL) with stderr
 * captured into msg. */
static int parse_capturing(const char *path, const uint8_t *buf, size_t n,
			   const char *what, struct devkit *dk, char *msg, size_t cap)
{
	struct capture c;
	char *text;
	int rc;

	capture_start(&c);
	rc = buf ? devkit_parse_meta(buf, n, what, dk) : load_path(path, dk);
	text = capture_end(&c);
	snprintf(msg, cap, "%s", text);
	free(text);
	return rc;
}

/*
 * A leaf WNID becomes a directory name: "../x", "a/b", "..", "." or one
 * with a space (written by scipy.io.savemat, tests/fixtures/make_imagenet.py)
 * must refuse the devkit, as any other bad leaf does, with a message that
 * names the synsets entry and its ILSVRC2012_ID.  The labels then come from
 * the train class names (imagenet_build.c).
 */
Test(devkit, hostile_wnid_refused)
{
	char path[4096], line[512], msg[2048];
	struct devkit dk;
	int n = 0, rc;
	FILE *f = fopen(fixture_path("mat-wnid.txt", path, sizeof(path)), "r");

	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		static uint8_t buf[1 << 20];
		char name[256], want[128];
		unsigned idx, id;
		size_t len;
		FILE *m;

		cr_assert_eq(sscanf(line, "%255s %u %u", name, &idx, &id), 3);
		m = fopen(fixture_path(name, path, sizeof(path)), "rb");
		cr_assert(m);
		len = fread(buf, 1, sizeof(buf), m);
		fclose(m);
		rc = parse_capturing(NULL, buf, len, name, &dk, msg, sizeof(msg));
		cr_expect_eq(rc, -EBADMSG, "%s: rc %d", name, rc);
		cr_expect_null(dk.wnid, "%s", name);
		if (!rc)
			devkit_free(&dk);
		snprintf(want, sizeof(want), "synsets(%u), ILSVRC2012_ID %u: expected a WNID", idx, id);
		cr_expect(strstr(msg, name) && strstr(msg, want), "%s: message: %s", name, msg);
		n++;
	}
	fclose(f);
	cr_expect_geq(n, 5);

	/* the whole tarball: devkit_load says which member, and fails */
	fixture_path("devkit-badwnid.tar.gz", path, sizeof(path));
	rc = parse_capturing(path, NULL, 0, NULL, &dk, msg, sizeof(msg));
	cr_expect_eq(rc, -EBADMSG, "devkit_load: rc %d", rc);
	cr_expect_null(dk.wnid);
	cr_expect(strstr(msg, "data/meta.mat") && strstr(msg, "'../x'"), "message: %s", msg);
	if (!rc)
		devkit_free(&dk);
}

static long load_job(void *path)
{
	struct devkit dk;
	int rc = load_path(path, &dk);

	if (!rc)
		devkit_free(&dk);
	return rc;
}

/* devkit_load of the fixture `name` in a bounded child (bounded.h) that
 * must fail with -EFBIG and grow by less than `grew` bytes; its stderr. */
static char *load_refused_bounded(const char *name, long long grew)
{
	char path[4096];
	struct bounded_result r;
	struct capture c;
	char *text;

	fixture_path(name, path, sizeof(path));
	capture_start(&c);
	r = bounded_run(load_job, path, 48LL << 20);
	text = capture_end(&c);
	cr_expect_eq(r.rc, -EFBIG, "%s: rc %ld; stderr: %s", name, r.rc, text);
	cr_expect_lt(r.grew, grew, "%s: resident memory grew by %lld bytes", name, r.grew);
	return text;
}

/*
 * A 40 KB tarball whose meta.mat inflates to 40 MiB (tests/fixtures/
 * make_hostile.py): refused once the member passes 16 MiB, naming it,
 * without holding more (the MAT-file budget is a multiple of its size).
 */
Test(devkit, hostile_member_size)
{
	char *text = load_refused_bounded("hostile/devkit-bomb.tar.gz", 40LL << 20);

	cr_expect(strstr(text, "devkit-bomb.tar.gz") && strstr(text, "data/meta.mat") &&
		  strstr(text, "at most 16 MiB"), "message: %s", text);
	free(text);
}

/*
 * 18 bytes of lzma header (a fuzz finding): libarchive's lzma decoder
 * allocated the 128 MiB dictionary the header asks for.  Only gzip (and
 * plain tar) is read, so this is no tarball, and nothing much is held.
 */
Test(devkit, lzma_header_is_not_read)
{
	static const unsigned char lzma[18] = {
		0x30, 0, 0, 0, 0x08, 0, 0x31, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0x06, 0,
	};
	char path[] = "/tmp/sfs-devkit-lzma-XXXXXX";
	struct bounded_result r;
	struct capture c;
	char *text;
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, lzma, sizeof(lzma)), (ssize_t)sizeof(lzma));
	close(fd);
	capture_start(&c);
	r = bounded_run(load_job, path, 200LL << 20);
	text = capture_end(&c);
	unlink(path);
	cr_expect_lt(r.rc, 0, "refused: rc %ld", r.rc);
	cr_expect_lt(r.vm_grew, 64LL << 20, "address space grew by %lld bytes", r.vm_grew);
	free(text);
}

/*
 * The devkit's tar read from gzip in two members with 1 KiB of zeros after
 * them (tests/fixtures/make_imagenet.py): the same labels as the tarball
 * it came from, as `gzip -d | tar` reads it.
 */
Test(devkit, concatenated_gzip_members)
{
	char path[4096];
	struct devkit one, two;
	uint32_t i;

	cr_assert_eq(load_path(fixture_path("imagenet/ILSVRC2012_devkit_t12.tar.gz", path,
					    sizeof(path)), &one), 0);
	cr_assert_eq(load_path(fixture_path("imagenet-multigz.tar.gz", path, sizeof(path)),
			       &two), 0);
	cr_assert_eq(two.nclasses, one.nclasses);
	for (i = 0; i < one.nclasses; i++)
		cr_expect_str_eq(two.wnid[i], one.wnid[i]);
	cr_assert_eq(two.nval, one.nval);
	cr_expect_arr_eq(two.val_label, one.val_label, one.nval * sizeof(uint32_t));
	devkit_free(&one);
	devkit_free(&two);
}

/*
 * 80 MiB of zeros in a member that is not kept, in an 82 KB tarball
 * (tests/fixtures/make_hostile.py): skipping inflates too,
 * so the walk stops at 64 MiB inflated, naming the member and the offset.
 * (It used to inflate on to the end; 2 GiB took 5 s.)
 */
Test(devkit, hostile_skipped_member)
{
	char *text = load_refused_bounded("hostile/devkit-skip.tgz", 32LL << 20);

	cr_expect(strstr(text, "devkit-skip.tgz: past member ILSVRC2012_devkit_t12/evaluation/junk: "
			 "inflated offset ") &&
		  strstr(text, "expected data/meta.mat and the ground truth within 64 MiB"),
		  "message: %s", text);
	free(text);
}

/*
 * A .tar.gz of 64 GiB of zeros gzipped once more: 155 KB that libarchive
 * took minutes to walk, one layer inflating the next.  One layer of gzip
 * is read; a gzip inside it is refused at once (the timeout is a hang
 * bound, far above the milliseconds this takes).
 */
Test(devkit, gzip_inside_gzip, .timeout = 30)
{
	char path[4096];
	struct capture c;
	struct devkit dk;
	char *text;
	int rc;

	fixture_path("hostile/devkit-gzgz.tgz", path, sizeof(path));
	capture_start(&c);
	rc = load_path(path, &dk);
	text = capture_end(&c);
	cr_expect_eq(rc, -EBADMSG, "rc %d; stderr: %s", rc, text);
	cr_expect(strstr(text, "devkit-gzgz.tgz: inflated offset 0: a gzip inside the gzip"),
		  "message: %s", text);
	free(text);
}
