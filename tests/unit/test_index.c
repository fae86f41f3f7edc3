/*
 * test_index.c - core/index/index.c: writer/map round trip, and every way an index
 * can be unusable (missing, stale, corrupt, truncated) giving its errno;
 * index_path naming; two processes committing the same index at once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "index/index.h"
#include "io/source.h"

#define TAG_A INDEX_TAG('A', 'A', 'A', 'A')
#define TAG_B INDEX_TAG('B', 'B', 'B', 'B')
#define TAG_E INDEX_TAG('E', 'M', 'P', 'T')

static char dir[64];

static void mkdir_tmp(void)
{
	strcpy(dir, "/tmp/sfs-test-index.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(index, .init = mkdir_tmp, .fini = rm_tmp);

static void fp_of(struct index_fp *fp, uint64_t v)
{
	index_fp_init(fp, "test");
	index_fp_add_u64(fp, v);
}

/* Section A: 1000 bytes at once; B: 100003 bytes in odd pieces; E: empty. */
static void write_index(const char *path, uint64_t fpv)
{
	struct index_writer *w;
	struct index_fp fp;
	uint8_t a[1000], *b = malloc(100003);

	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7);
	for (size_t i = 0; i < 100003; i++)
		b[i] = (uint8_t)(i * 13 + 1);
	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(index_writer_add(w, TAG_A, a, sizeof(a)), 0);
	cr_assert_eq(index_writer_begin(w, TAG_B), 0);
	for (size_t off = 0, k = 1; off < 100003; off += k, k = k * 3 + 1) {
		if (off + k > 100003)
			k = 100003 - off;
		cr_assert_eq(index_writer_append(w, b + off, k), 0);
	}
	cr_assert_eq(index_writer_end(w), 0);
	cr_assert_eq(index_writer_add(w, TAG_E, NULL, 0), 0);
	fp_of(&fp, fpv);
	cr_assert_eq(index_writer_commit(w, &fp), 0);
	free(b);
}

static int open_with(const char *path, uint64_t fpv, struct index_map *m)
{
	struct index_fp fp;
	char why[256];

	fp_of(&fp, fpv);
	return index_map_open(m, path, &fp, why, sizeof(why));
}

static void path_in_dir(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* Nothing but the index itself may be left in the directory. */
static int count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

Test(index, round_trip)
{
	char path[128];
	struct index_map m;
	const uint8_t *a, *b;
	uint64_t len;

	path_in_dir(path, sizeof(path), "x.sfsidx");
	write_index(path, 99);
	cr_assert_eq(count_files(), 1, "temporary file left behind");
	cr_assert_eq(open_with(path, 99, &m), 0);
	cr_assert_eq(m.nsect, 3);
	a = index_map_section(&m, TAG_A, &len);
	cr_assert(a);
	cr_assert_eq(len, 1000);
	cr_assert_eq((uintptr_t)a % 64, 0);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(a[i], (uint8_t)(i * 7));
	b = index_map_section(&m, TAG_B, &len);
	cr_assert(b);
	cr_assert_eq(len, 100003);
	cr_assert_eq((uintptr_t)b % 64, 0);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(b[i], (uint8_t)(i * 13 + 1), "at %zu", i);
	cr_assert(index_map_section(&m, TAG_E, &len));
	cr_assert_eq(len, 0);
	len = 7;
	cr_assert_null(index_map_section(&m, INDEX_TAG('N', 'O', 'P', 'E'), &len));
	cr_assert_eq(len, 0);
	index_map_close(&m);
}

Test(index, missing_is_enoent)
{
	char path[128];
	struct index_map m;

	path_in_dir(path, sizeof(path), "none.sfsidx");
	cr_assert_eq(open_with(path, 1, &m), -ENOENT);
}

Test(index, stale_fingerprint_is_estale)
{
	char path[128];
	struct index_map m;

	path_in_dir(path, sizeof(path), "x.sfsidx");
	write_index(path, 1);
	cr_assert_eq(open_with(path, 2, &m), -ESTALE);
}

static void flip_byte(const char *path, long off)
{
	int fd = open(path, O_RDWR);
	uint8_t c;

	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x20;
	cr_assert_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/* A flip in the header or the table: the map fails, to be rebuilt. */
Test(index, flipped_table_is_ebadmsg)
{
	char path[128];
	struct index_map m;
	struct stat st;
	/* the block checksums (last bytes), the table, the magic */
	long offs[] = { -1, -40, 0, 3 };

	path_in_dir(path, sizeof(path), "x.sfsidx");
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		write_index(path, 5);
		cr_assert_eq(stat(path, &st), 0);
		flip_byte(path, offs[i] < 0 ? st.st_size + offs[i] : offs[i]);
		cr_assert_eq(open_with(path, 5, &m), -EBADMSG, "flip at %ld", offs[i]);
	}
}

/*
 * A flip in a section's bytes: the map opens (nothing of the sections is
 * read then), the damaged block fails its check when first used (EIO, or
 * no section from index_map_section), the others pass; found once the
 * index is in use, the file is removed so the next mount rebuilds it.  Before (INDEX_VERSION 1) the
 * whole file's crc failed the map itself.
 */
Test(index, flipped_section_fails_on_first_use)
{
	char path[128];
	struct index_map m;
	const uint8_t *b;
	uint64_t len;
	/* section B starts at 64 + 1024 (A's 1000 bytes, padded); its byte
	 * 70000 is in its block of 4 KiB from 69632 (index.c's blocks) */
	long at = 64 + 1024 + 70000;

	path_in_dir(path, sizeof(path), "x.sfsidx");
	write_index(path, 5);
	flip_byte(path, at);
	cr_assert_eq(open_with(path, 5, &m), 0);
	cr_assert_not_null(index_map_section(&m, TAG_A, &len));
	b = index_map_section_unchecked(&m, TAG_B, &len);
	cr_assert_not_null(b);
	cr_assert_eq(len, 100003);
	cr_assert_eq(index_map_check(&m, b, 69632), 0, "the blocks before are whole");
	cr_assert_eq(index_map_check(&m, b + 73728, len - 73728), 0, "and after");
	cr_assert_eq(index_map_check(&m, b + 70000, 1), -EIO);
	cr_assert_eq(index_map_check(&m, b + 69632, 10), -EIO, "the same block");
	cr_assert_eq(index_map_check(&m, b + 10, 69632), -EIO, "spanning it");
	cr_assert_eq(index_map_check(&m, b, 100), 0);
	cr_assert_null(index_map_section(&m, TAG_B, &len));
	cr_assert_eq(len, 0);
	cr_assert_eq(index_map_damaged(&m), 1);
	/* found while loading: index_load rebuilds it, nothing is removed */
	cr_assert_eq(access(path, F_OK), 0, "the file is index_load's to rebuild");
	index_map_close(&m);
	/* found once in use (index_load sets the flag after the attach) */
	cr_assert_eq(open_with(path, 5, &m), 0);
	cr_assert_eq(index_map_damaged(&m), 0);
	m.unlink_damaged = 1;
	b = index_map_section_unchecked(&m, TAG_B, &len);
	cr_assert_eq(index_map_check(&m, b + 70000, 1), -EIO);
	cr_assert_eq(access(path, F_OK), -1, "the damaged index is removed");
	index_map_close(&m);

	/* out of the section: refused */
	write_index(path, 5);
	cr_assert_eq(open_with(path, 5, &m), 0);
	b = index_map_section_unchecked(&m, TAG_B, &len);
	cr_assert_eq(index_map_check(&m, b, len + 1), -EIO);
	cr_assert_eq(index_map_check(&m, b, len), 0);
	index_map_close(&m);
}

Test(index, truncated_is_ebadmsg)
{
	char path[128];
	struct index_map m;
	struct stat st;

	path_in_dir(path, sizeof(path), "x.sfsidx");
	write_index(path, 5);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(truncate(path, st.st_size - 1), 0);
	cr_assert_eq(open_with(path, 5, &m), -EBADMSG);
	cr_assert_eq(truncate(path, 10), 0);
	cr_assert_eq(open_with(path, 5, &m), -EBADMSG);
	cr_assert_eq(truncate(path, 0), 0);
	cr_assert_eq(open_with(path, 5, &m), -EBADMSG);
}

Test(index, abort_and_misuse)
{
	char path[128];
	struct index_writer *w;
	struct index_fp fp;
	struct index_map m;

	path_in_dir(path, sizeof(path), "x.sfsidx");
	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(index_writer_add(w, TAG_A, "abc", 3), 0);
	index_writer_abort(w);
	cr_assert_eq(count_files(), 0, "abort left a file");

	/* a duplicate tag fails, and so does the commit after it */
	cr_assert_eq(index_writer_open(&w, path), 0);
	cr_assert_eq(index_writer_add(w, TAG_A, "abc", 3), 0);
	cr_assert_neq(index_writer_add(w, TAG_A, "abc", 3), 0);
	fp_of(&fp, 1);
	cr_assert_neq(index_writer_commit(w, &fp), 0);
	cr_assert_eq(count_files(), 0);
	cr_assert_eq(open_with(path, 1, &m), -ENOENT);
}

Test(index, path_naming)
{
	struct sfs_opts o;
	char p1[4096], p2[4096], p3[4096], p4[4096], src[128], alias[160], sub[128];

	memset(&o, 0, sizeof(o));
	path_in_dir(src, sizeof(src), "data.npy");
	fclose(fopen(src, "w"));
	snprintf(alias, sizeof(alias), "%s/./../%s/data.npy", dir, strrchr(dir, '/') + 1);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	o.index_dir = sub;
	o.source = src;
	cr_assert_eq(index_path(&o, "npy", "", p1, sizeof(p1)), 0);
	cr_assert_eq(strncmp(p1, sub, strlen(sub)), 0);
	cr_assert(strstr(p1, "/npy-"));
	cr_assert_eq(strlen(strstr(p1, "/npy-")), strlen("/npy-") + 16 + strlen(".sfsidx"));
	cr_assert_eq(access(sub, W_OK), 0, "index_dir not created");
	o.source = alias;
	cr_assert_eq(index_path(&o, "npy", "", p2, sizeof(p2)), 0);
	cr_assert_str_eq(p1, p2, "same file, different spelling");
	cr_assert_eq(index_path(&o, "npy", "k=1", p3, sizeof(p3)), 0);
	cr_assert_str_neq(p1, p3);
	/* a URL is hashed as given, never resolved as a local path: with a
	 * local file "http:/h/x.npy" there, two spellings of it as paths are
	 * one index, as URLs two */
	cr_assert_eq(chdir(dir), 0);
	cr_assert_eq(mkdir("http:", 0755), 0);
	cr_assert_eq(mkdir("http:/h", 0755), 0);
	fclose(fopen("http:/h/x.npy", "w"));
	o.source = "./http:/h/x.npy";
	cr_assert_eq(index_path(&o, "npy", "", p3, sizeof(p3)), 0);
	o.source = "http:/h//x.npy";
	cr_assert_eq(index_path(&o, "npy", "", p4, sizeof(p4)), 0);
	cr_assert_str_eq(p3, p4);
	o.source = "http://h/x.npy";
	cr_assert_eq(index_path(&o, "npy", "", p3, sizeof(p3)), 0);
	o.source = "http://h//x.npy";
	cr_assert_eq(index_path(&o, "npy", "", p4, sizeof(p4)), 0);
	cr_assert_str_neq(p3, p4);
	cr_assert_eq(strncmp(p3, sub, strlen(sub)), 0);
	unlink("http:/h/x.npy");
	rmdir("http:/h");
	rmdir("http:");

	/* default directory: $XDG_CACHE_HOME/samplefs */
	o.index_dir = NULL;
	setenv("XDG_CACHE_HOME", sub, 1);
	cr_assert_eq(index_path(&o, "npy", "", p4, sizeof(p4)), 0);
	cr_assert_eq(strncmp(p4, sub, strlen(sub)), 0);
	cr_assert(strstr(p4, "/samplefs/npy-"));
	cr_assert_eq(index_path(&o, "npy", "", p4, sizeof(p4) > 20 ? 20 : 1), -ENAMETOOLONG);
}

Test(index, fingerprint_sees_file_changes)
{
	char src[128];
	struct index_fp a, b;
	struct source_info info;
	struct source_stamp st;
	FILE *f;

	path_in_dir(src, sizeof(src), "f");
	f = fopen(src, "w");
	fputs("x", f);
	fclose(f);
	cr_assert_eq(source_stat(NULL, src, &info), 0);
	index_fp_init(&a, "l");
	index_fp_add_source(&a, src, &info.stamp);
	f = fopen(src, "a");
	fputs("y", f);
	fclose(f);
	cr_assert_eq(source_stat(NULL, src, &info), 0);
	index_fp_init(&b, "l");
	index_fp_add_source(&b, src, &info.stamp);
	cr_assert_neq(a.h, b.h);
	/* a local stamp hashes as name, size and mtime (indexes saved before
	 * sources had ETags stay valid); an ETag counts when there is one */
	index_fp_init(&a, "l");
	index_fp_add_str(&a, src);
	index_fp_add_u64(&a, info.stamp.size);
	index_fp_add_u64(&a, (uint64_t)info.stamp.mtime_ns);
	cr_assert_eq(a.h, b.h);
	st = info.stamp;
	strcpy(st.etag, "\"abc\"");
	index_fp_init(&a, "l");
	index_fp_add_source(&a, src, &st);
	cr_assert_neq(a.h, b.h);
	strcpy(st.etag, "\"abd\"");
	index_fp_init(&b, "l");
	index_fp_add_source(&b, src, &st);
	cr_assert_neq(a.h, b.h);
	/* field boundaries matter */
	index_fp_init(&a, "l");
	index_fp_add_str(&a, "ab");
	index_fp_add_str(&a, "c");
	index_fp_init(&b, "l");
	index_fp_add_str(&b, "a");
	index_fp_add_str(&b, "bc");
	cr_assert_neq(a.h, b.h);
}

/* Two processes building the same index: both commit, the result is whole. */
Test(index, concurrent_commits)
{
	char path[128];
	struct index_map m;
	pid_t pid;
	int st;

	path_in_dir(path, sizeof(path), "x.sfsidx");
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 20; i++)
			write_index(path, 7);
		_exit(0);
	}
	for (int i = 0; i < 20; i++) {
		write_index(path, 7);
		cr_assert_eq(open_with(path, 7, &m), 0);
		index_map_close(&m);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(open_with(path, 7, &m), 0);
	index_map_close(&m);
	cr_assert_eq(count_files(), 1);
}
