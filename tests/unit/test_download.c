/*
 * test_download.c - the pure parts of samplefs-download: MD5s in S3 / GCS
 * ETags and GCS's x-goog-hash header, the relative paths it writes, a
 * file of URLs (core/io/dlnames.c), and which names --classes and
 * --include keep (tools/download/select.c).  Oracles: RFC 1321's MD5 of
 * "" and "abc" in hex and base64 (as Python's hashlib and base64 print
 * them), GCS's documented header form, fnmatch(3)'s rules as the shell
 * applies them, and the Quick, Draw! bucket's file names.  The transfers
 * are tested against Swift and nginx (tests/integration/test_download.sh).
 */
#include <criterion/criterion.h>

#include "io/dlnames.h"
#include "select.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char MD5_EMPTY[16] = {
	0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04,
	0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8, 0x42, 0x7e };
static const unsigned char MD5_ABC[16] = {
	0x90, 0x01, 0x50, 0x98, 0x3c, 0xd2, 0x4f, 0xb0,
	0xd6, 0x96, 0x3f, 0x7d, 0x28, 0xe1, 0x7f, 0x72 };

Test(etag, md5_quoted_or_bare_any_case)
{
	unsigned char m[16];

	cr_assert(dlnames_md5_of_etag("\"d41d8cd98f00b204e9800998ecf8427e\"", m));
	cr_assert_arr_eq(m, MD5_EMPTY, 16);
	cr_assert(dlnames_md5_of_etag("900150983CD24FB0D6963F7D28E17F72", m));
	cr_assert_arr_eq(m, MD5_ABC, 16);
}

Test(etag, not_an_md5)
{
	unsigned char m[16];

	/* multipart, nginx's, weak, short, long, not hex, one quote */
	cr_assert_not(dlnames_md5_of_etag("\"d41d8cd98f00b204e9800998ecf8427e-3\"", m));
	cr_assert_not(dlnames_md5_of_etag("\"5f1e2a3b-1f40\"", m));
	cr_assert_not(dlnames_md5_of_etag("W/\"d41d8cd98f00b204e9800998ecf8427e\"", m));
	cr_assert_not(dlnames_md5_of_etag("d41d8cd98f00b204e9800998ecf8427", m));
	cr_assert_not(dlnames_md5_of_etag("d41d8cd98f00b204e9800998ecf8427e0", m));
	cr_assert_not(dlnames_md5_of_etag("g41d8cd98f00b204e9800998ecf8427e", m));
	cr_assert_not(dlnames_md5_of_etag("\"d41d8cd98f00b204e9800998ecf8427e", m));
	cr_assert_not(dlnames_md5_of_etag("", m));
}

static int goog(const char *v, unsigned char m[16])
{
	return dlnames_md5_of_goog_hash(v, strlen(v), m);
}

Test(goog_hash, md5_alone_or_with_crc32c)
{
	unsigned char m[16];

	cr_assert(goog(" md5=1B2M2Y8AsgTpgAmY7PhCfg==\r\n", m));
	cr_assert_arr_eq(m, MD5_EMPTY, 16);
	cr_assert(goog(" crc32c=n03x6A==,md5=kAFQmDzST7DWlj99KOF/cg==", m));
	cr_assert_arr_eq(m, MD5_ABC, 16);
	cr_assert(goog("crc32c=n03x6A==, MD5=kAFQmDzST7DWlj99KOF/cg==  ", m));
	cr_assert_arr_eq(m, MD5_ABC, 16);
}

Test(goog_hash, no_md5)
{
	unsigned char m[16];

	cr_assert_not(goog(" crc32c=n03x6A==", m));
	cr_assert_not(goog("md5=kAFQmDzST7DWlj99KOF/cg=", m));	/* short */
	cr_assert_not(goog("md5=kAFQmDzST7DWlj99KOF/cg===", m));	/* long */
	cr_assert_not(goog("md5=kAFQmDzST7DWlj99KOF/c!==", m));	/* not base64 */
	cr_assert_not(goog("xmd5=kAFQmDzST7DWlj99KOF/cg==", m));
	cr_assert_not(goog("", m));
	/* the length is the value's: bytes past it are not read */
	cr_assert_not(dlnames_md5_of_goog_hash("md5=kAFQmDzST7DWlj99KOF/cg==", 27, m));
}

Test(rel, paths)
{
	cr_assert(dlnames_rel_ok("a"));
	cr_assert(dlnames_rel_ok("a b/c d.npy"));
	cr_assert(dlnames_rel_ok(".hidden/x..y"));
	cr_assert_not(dlnames_rel_ok(""));
	cr_assert_not(dlnames_rel_ok("/etc/passwd"));
	cr_assert_not(dlnames_rel_ok("a/../b"));
	cr_assert_not(dlnames_rel_ok(".."));
	cr_assert_not(dlnames_rel_ok("a/./b"));
	cr_assert_not(dlnames_rel_ok("a//b"));
	cr_assert_not(dlnames_rel_ok("a/"));
	cr_assert_not(dlnames_rel_ok("a\nb"));
	cr_assert_not(dlnames_rel_ok("a\x7f"));
}

struct urls {
	char url[4][128], rel[4][64];
	int n;
};

static int on_url(void *arg, const char *url, const char *rel)
{
	struct urls *u = arg;

	cr_assert_lt(u->n, 4);
	snprintf(u->url[u->n], sizeof(u->url[0]), "%s", url);
	snprintf(u->rel[u->n], sizeof(u->rel[0]), "%s", rel);
	u->n++;
	return 0;
}

static int parse(const char *text, struct urls *u)
{
	memset(u, 0, sizeof(*u));
	return dlnames_urls_parse("t.txt", text, strlen(text), on_url, u);
}

Test(urls, lines_comments_blanks_and_names)
{
	struct urls u;

	cr_assert_eq(parse("# a list\r\n\n  https://h/d/a%20b.npy?x=1#f \r\n"
			   "\ts3://bkt/k/c.npz\ngs://b/x/y", &u), 0);
	cr_assert_eq(u.n, 3);
	cr_assert_str_eq(u.url[0], "https://h/d/a%20b.npy?x=1#f");
	cr_assert_str_eq(u.rel[0], "a b.npy");
	cr_assert_str_eq(u.url[1], "s3://bkt/k/c.npz");
	cr_assert_str_eq(u.rel[1], "c.npz");
	cr_assert_str_eq(u.rel[2], "y");
}

Test(urls, a_bad_line_refuses_the_file)
{
	struct urls u;

	cr_assert_eq(parse("https://h/a\nftp://h/b\n", &u), -EINVAL);
	cr_assert_eq(u.n, 0, "nothing handed out before the whole file passed");
	cr_assert_eq(parse("https://h/dir/\n", &u), -EINVAL);	/* no name */
	cr_assert_eq(parse("https://h/a%2Fb\n", &u), -EINVAL);	/* '/' in it */
	cr_assert_eq(parse("https://h/..\n", &u), -EINVAL);
	cr_assert_eq(parse("https://h/%0a\n", &u), -EINVAL);
	cr_assert_eq(dlnames_urls_parse("t", "https://h/a\0b\n", 13, on_url, &u), -EINVAL);
	cr_assert_eq(parse("", &u), 0);
	cr_assert_eq(u.n, 0);
}

Test(select, class_of_a_file_name)
{
	cr_assert_eq(select_class_len("cat.npy"), 3);
	cr_assert_eq(select_class_len("The Eiffel Tower.ndjson"), 16);
	cr_assert_eq(select_class_len("cat.full.npz"), 3);
	cr_assert_eq(select_class_len("cat.npz"), 3);
	cr_assert_eq(select_class_len("cat.bin"), 3);
	cr_assert_eq(select_class_len(".npy"), 0);
	cr_assert_eq(select_class_len("cat.txt"), 0);
	cr_assert_eq(select_class_len("classes.txt"), 0);
}

Test(select, classes_and_globs)
{
	char *cls[] = { "The Eiffel Tower", "cat" };	/* sorted */
	const char *globs[] = { "numpy_bitmap/*", "*.ndjson" };
	struct select s = { .classes = { .v = cls, .n = 2 } };

	cr_assert(select_keep(&s, "numpy_bitmap/cat.npy"));
	cr_assert(select_keep(&s, "sketchrnn/cat.full.npz"));
	cr_assert(select_keep(&s, "raw/The Eiffel Tower.ndjson"));
	cr_assert_not(select_keep(&s, "numpy_bitmap/ca.npy"));
	cr_assert_not(select_keep(&s, "numpy_bitmap/cats.npy"));
	cr_assert_not(select_keep(&s, "numpy_bitmap/dog.npy"));
	cr_assert_not(select_keep(&s, "README.txt"), "no class: not kept with --classes");
	s.globs = globs;
	s.nglobs = 2;
	cr_assert(select_keep(&s, "numpy_bitmap/cat.npy"));
	cr_assert(select_keep(&s, "simplified/cat.ndjson"));
	cr_assert_not(select_keep(&s, "sketchrnn/cat.npz"));
	s.classes.n = 0;
	cr_assert(select_keep(&s, "numpy_bitmap/dog.npy"));
	cr_assert(select_keep(&s, "numpy_bitmap/sub/x.y"), "'*' matches '/' (no FNM_PATHNAME)");
	cr_assert_not(select_keep(&s, "README.txt"));
	s.nglobs = 0;
	cr_assert(select_keep(&s, "README.txt"));
}
