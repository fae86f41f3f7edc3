/*
 * test_zstore.c - the access points of compressed sources in index files
 * (core/index/zstore.c): saved at the first open, carried by a prebuilt
 * index (prebuilt.c) and taken from it before any pass by a mount given
 * -o index=, refused with a message saying what differs, and no pass at
 * all under -o index_only.
 *
 * The oracles: the bytes written to the gzip file (zlib's gzwrite), and
 * that with index_only an open can only succeed on a table it was given
 * (the pass is forbidden there: an open that needed it fails, -EPERM).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "index/index.h"
#include "index/prebuilt.h"
#include "index/zstore.h"
#include "io/source.h"
#include "io/codecs/zsource.h"
#include "options.h"

#define N (700u << 10)

static char dir[64], gz[128], pre[128];
static unsigned char data[N];

static void sub(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* dir with data.gz (several 64 KiB spans of it) and the prebuilt index
 * of index directory "a", where a first open saved its table. */
static void setup(void)
{
	gzFile f;
	uint64_t x = 7;

	strcpy(dir, "/tmp/sfs-test-zstore.XXXXXX");
	cr_assert(mkdtemp(dir));
	for (size_t i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1;
		data[i] = (unsigned char)(i % 251 < 200 ? i / 4096 : x >> 56);
	}
	sub(gz, sizeof(gz), "data.gz");
	cr_assert((f = gzopen(gz, "wb6")));
	cr_assert_eq(gzwrite(f, data, N), (int)N);
	cr_assert_eq(gzclose(f), Z_OK);
	sub(pre, sizeof(pre), "pre.sfsidx");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(zstore, .init = setup, .fini = teardown);

/* Opens data.gz as a mount with these options would: 0 or -errno. */
static int open_gz(const char *index_dir, const char *index, int only,
		   uint64_t span)
{
	struct sfs_opts o;
	struct source_env *env;
	struct source *s;
	char d[128];
	int rc;

	sfs_opts_default(&o);
	sub(d, sizeof(d), index_dir);
	o.source = gz;
	o.index_dir = d;
	o.index = index;
	o.index_only = only;
	o.remote.span_bytes = span;
	cr_assert_eq(source_env_new(&o.remote, &env), 0);
	index_zstore_attach(env, &o);
	rc = source_open(env, gz, &s);
	if (rc == 0) {
		unsigned char *buf = malloc(N);

		cr_assert(source_is_decompressed(s));
		cr_assert_eq(source_stamp(s)->size, N);
		cr_assert_eq(source_pread(s, buf, N, 0), (ssize_t)N);
		cr_assert(!memcmp(buf, data, N), "the bytes differ");
		free(buf);
		source_close(s);
	}
	source_env_free(env);
	return rc;
}

static void make_prebuilt(void)
{
	char a[128];

	cr_assert_eq(open_gz("a", NULL, 0, 64 << 10), 0);	/* the pass, saved */
	sub(a, sizeof(a), "a");
	cr_assert_eq(index_prebuilt_save(a, pre), 0);
}

Test(zstore, saved_table_serves_index_only)
{
	cr_assert_eq(open_gz("a", NULL, 1, 64 << 10), -EPERM, "no table: no pass");
	cr_assert_eq(open_gz("a", NULL, 0, 64 << 10), 0);
	cr_assert_eq(open_gz("a", NULL, 1, 64 << 10), 0, "the saved table");
}

Test(zstore, prebuilt_index_carries_the_table)
{
	make_prebuilt();
	cr_assert_eq(open_gz("b", pre, 1, 64 << 10), 0, "from the prebuilt index");
	cr_assert_eq(open_gz("b", NULL, 1, 64 << 10), 0, "then saved in b");
}

Test(zstore, other_span_is_refused_or_rebuilt)
{
	make_prebuilt();
	cr_assert_eq(open_gz("c", pre, 1, 128 << 10), -EPERM);
	cr_assert_eq(open_gz("c", pre, 0, 128 << 10), 0, "the pass instead");
	cr_assert_eq(open_gz("c", NULL, 1, 128 << 10), 0, "its table saved");
}

/* A 'ZKEY' section as zstore.c writes it. */
static size_t key(unsigned char *out, const char *name, uint64_t size,
		  int64_t mtime, uint64_t span, const char *etag)
{
	struct zkey k;

	memset(&k, 0, sizeof(k));
	k.version = ZKEY_VERSION;
	k.name_len = (uint32_t)strlen(name);
	k.size = size;
	k.mtime_ns = mtime;
	k.span = span;
	snprintf(k.etag, sizeof(k.etag), "%s", etag);
	memcpy(out, &k, sizeof(k));
	memcpy(out + sizeof(k), name, k.name_len + 1);
	return sizeof(k) + k.name_len + 1;
}

Test(zstore, explain_says_what_differs)
{
	unsigned char k[512];
	struct source_stamp st = { .size = 100, .mtime_ns = 1500000000ll };
	char why[256];
	size_t n;

	strcpy(st.etag, "\"b\"");
	n = key(k, "u", 100, 1500000000ll, 65536, "\"b\"");
	cr_assert_eq(index_zstore_explain(k, n, "u", &st, 65536, why, sizeof(why)), 0);
	cr_assert_str_empty(why);
	n = key(k, "u", 90, 1000000000ll, 1 << 20, "\"a\"");
	cr_assert_eq(index_zstore_explain(k, n, "u", &st, 65536, why, sizeof(why)), 0);
	cr_assert_str_eq(why, "made with span 1048576, the mount's is 65536; "
			 "made for 90 compressed bytes, the source has 100; "
			 "made for mtime 1.000000000, the source's is 1.500000000; "
			 "made for ETag \"a\", the source's is \"b\"");
	cr_assert_eq(index_zstore_explain(k, n - 1, "u", &st, 65536, why, sizeof(why)),
		     -EBADMSG, "cut short");
	cr_assert_str_empty(why);
	k[0] = 2;
	cr_assert_eq(index_zstore_explain(k, n, "u", &st, 65536, why, sizeof(why)),
		     -EBADMSG, "another version");
}
