/*
 * test_zsource.c - core/io/codecs/zsource.c and zgzip.c: gzip files made here with
 * zlib's deflate (one member, many members, BGZF-sized members, stored
 * blocks) open as their uncompressed bytes, compared with the bytes they
 * were made from (the oracle) at random offsets and lengths, with ISA-L
 * and with zlib (SAMPLEFS_INFLATE=zlib) alike; a saved access-point table
 * is used again and a damaged one refused; damaged streams (a flipped
 * byte, a truncation, a bad CRC) give EIO or the original bytes, never
 * others.  The first open's pass runs in a thread: readers racing it, at
 * offsets ahead of it, from several threads, get the original bytes; a
 * pass that meets damage while a read waits wakes it, and bytes read
 * before the damage was known make source_extent fail (ERESTART: read it
 * again, up to the damage), and reads of the damage then give EIO.  Span
 * buffers are recycled (zpool.c): with a cache of a few spans, spans
 * evicted while the pass fills others, a file read through three times
 * against zlib's own inflate of it (gzread) makes no more buffers than the
 * cache, the readers and the pool's spares hold at once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/source.h"
#include "io/codecs/zsource.h"

#define SPAN (64u << 10)

static char dir[] = "/tmp/sfs_ztest.XXXXXX";

static void setup(void)
{
	strcpy(dir, "/tmp/sfs_ztest.XXXXXX");
	cr_assert(mkdtemp(dir));
	unsetenv("SAMPLEFS_INFLATE");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Text-like bytes: words from a small vocabulary (deflate finds matches),
 * with runs of random bytes (literals, stored blocks). */
static unsigned char *make_data(size_t n, unsigned seed)
{
	static const char *words[] = { "tar ", "gzip ", "member ", "span ",
				       "window ", "\n", "access point ", "0000" };
	unsigned char *d = malloc(n);
	uint64_t x = seed * 2654435761u + 1;
	size_t i = 0, k;

	cr_assert(d);
	while (i < n) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		if ((x >> 60) == 0) {
			for (k = 0; k < 3000 && i < n; k++) {
				x = x * 6364136223846793005ull + 1;
				d[i++] = (unsigned char)(x >> 56);
			}
			continue;
		}
		const char *w = words[(x >> 33) % 8];
		for (k = 0; w[k] && i < n; k++)
			d[i++] = (unsigned char)w[k];
	}
	return d;
}

/* Writes data as gzip members of `member` bytes each (0: one member). */
static void write_gz(const char *path, const unsigned char *d, size_t n,
		     size_t member, int level)
{
	FILE *f = fopen(path, "wb");
	size_t off = 0, len, cap = compressBound(member ? member : n) + 64;
	unsigned char *out = malloc(cap);

	cr_assert(f && out);
	do {
		z_stream zs;

		len = member && n - off > member ? member : n - off;
		memset(&zs, 0, sizeof(zs));
		cr_assert_eq(deflateInit2(&zs, level, Z_DEFLATED, 31, 8,
					  Z_DEFAULT_STRATEGY), Z_OK);
		zs.next_in = (unsigned char *)d + off;
		zs.avail_in = (uInt)len;
		zs.next_out = out;
		zs.avail_out = (uInt)cap;
		cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
		cr_assert_eq(fwrite(out, 1, cap - zs.avail_out, f), cap - zs.avail_out);
		deflateEnd(&zs);
		off += len;
	} while (off < n);
	free(out);
	cr_assert_eq(fclose(f), 0);
}

/* A store in memory: what the pass saved, handed back at the next open. */
struct memstore {
	void *blob;
	size_t len;
	int saves, loads;
};

static int ms_load(void *arg, const char *name, const struct source_stamp *st,
		   uint64_t span, const void **blob, size_t *len, void **hold)
{
	struct memstore *m = arg;

	if (!m->blob)
		return -ENOENT;
	m->loads++;
	*blob = m->blob;
	*len = m->len;
	*hold = NULL;
	return 0;
}

static void ms_release(void *arg, void *hold)
{
}

static void ms_save(void *arg, const char *name, const struct source_stamp *st,
		    uint64_t span, const void *blob, size_t len)
{
	struct memstore *m = arg;

	free(m->blob);
	m->blob = malloc(len);
	cr_assert(m->blob);
	memcpy(m->blob, blob, len);
	m->len = len;
	m->saves++;
}

static const struct zsource_store mem_ops = { ms_load, ms_release, ms_save };

static struct source_env *env_with(struct memstore *m)
{
	struct source_config cfg = { .span_bytes = SPAN, .cache_bytes = 1 << 20 };
	struct source_env *env;

	cr_assert_eq(source_env_new(&cfg, &env), 0);
	if (m)
		source_env_zstore(env, &mem_ops, m);
	return env;
}

/* Reads at random offsets and lengths: each equals the oracle. */
static void check_reads(struct source *s, const unsigned char *d, size_t n,
			unsigned seed)
{
	unsigned char *buf = malloc(3 * SPAN);
	uint64_t x = seed;
	int i;

	cr_assert(buf);
	cr_assert_eq(source_stamp(s)->size, n);
	for (i = 0; i < 300; i++) {
		x = x * 6364136223846793005ull + 1;
		size_t off = (size_t)((x >> 20) % (n + 10));
		size_t len = (size_t)((x >> 8) % (3 * SPAN));
		size_t want = off >= n ? 0 : (n - off < len ? n - off : len);
		ssize_t got = source_pread(s, buf, len, off);

		cr_assert_eq(got, (ssize_t)want, "read %zu at %zu: %zd", len, off, got);
		cr_assert(!memcmp(buf, d + (off < n ? off : 0), want),
			  "bytes differ at %zu+%zu", off, len);
	}
	free(buf);
}

static void roundtrip(size_t n, size_t member, int level, const char *engine)
{
	unsigned char *d = make_data(n, (unsigned)(n + member));
	char path[128];
	struct source_env *env;
	struct source *s;

	if (engine)
		setenv("SAMPLEFS_INFLATE", engine, 1);
	snprintf(path, sizeof(path), "%s/x.gz", dir);
	write_gz(path, d, n, member, level);
	env = env_with(NULL);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert(source_is_decompressed(s));
	check_reads(s, d, n, 7);
	source_close(s);
	source_env_free(env);
	free(d);
}

TestSuite(zsource, .init = setup, .fini = teardown);

Test(zsource, one_member)        { roundtrip(5u << 20, 0, 6, NULL); }
Test(zsource, one_member_zlib)   { roundtrip(5u << 20, 0, 6, "zlib"); }
Test(zsource, members)           { roundtrip(3u << 20, 300000, 6, NULL); }
Test(zsource, members_zlib)      { roundtrip(3u << 20, 300000, 6, "zlib"); }
Test(zsource, bgzf_sized)        { roundtrip(2u << 20, 65280, 6, NULL); }
Test(zsource, stored_blocks)     { roundtrip(1u << 20, 0, 0, NULL); }
Test(zsource, best)              { roundtrip(2u << 20, 0, 9, NULL); }
Test(zsource, empty)             { roundtrip(0, 0, 6, NULL); }

/* The whole file read through ISA-L's inflater and through zlib's: the
 * same bytes (and the oracle's).  Both open the table a first open saved,
 * so no span comes from the pass's own output (which it leaves in the
 * cache: the other tests read those). */
Test(zsource, engines_agree)
{
	size_t n = 3u << 20;
	unsigned char *d = make_data(n, 9), *a = malloc(n), *b = malloc(n);
	const char *eng[2] = { "fast", "zlib" };
	unsigned char *out[2] = { a, b };
	struct memstore m = { 0 };
	struct source_env *env;
	struct source *s;
	char path[128];
	int k, loads;

	snprintf(path, sizeof(path), "%s/e.gz", dir);
	write_gz(path, d, n, 700000, 6);
	env = env_with(&m);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_stamp(s)->size, n, "the stamp waits for the pass");
	source_close(s);
	source_env_free(env);
	loads = m.loads;
	for (k = 0; k < 2; k++) {
		setenv("SAMPLEFS_INFLATE", eng[k], 1);
		env = env_with(&m);
		cr_assert_eq(source_open(env, path, &s), 0);
		for (size_t off = 0; off < n; off += 100000)
			cr_assert_eq(source_pread(s, out[k] + off, n - off < 100000 ?
						 n - off : 100000, off),
				     (ssize_t)(n - off < 100000 ? n - off : 100000));
		source_close(s);
		source_env_free(env);
	}
	cr_assert_eq(m.loads, loads + 2, "both read through the saved table");
	cr_assert(!memcmp(a, b, n), "ISA-L and zlib differ");
	cr_assert(!memcmp(a, d, n), "both differ from the oracle");
	free(m.blob);
	free(a);
	free(b);
	free(d);
}

Test(zsource, plain_file_is_not_wrapped)
{
	char path[128];
	struct source_env *env = env_with(NULL);
	struct source *s;
	FILE *f;

	snprintf(path, sizeof(path), "%s/plain.tar", dir);
	cr_assert((f = fopen(path, "wb")));
	fputs("\x1f\x8b but not at the start", f) ;
	fclose(f);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert(!source_is_decompressed(s));
	source_close(s);
	source_env_free(env);
}

Test(zsource, saved_table_is_used_and_checked)
{
	size_t n = 2u << 20;
	unsigned char *d = make_data(n, 3);
	struct memstore m = { 0 };
	struct source_env *env = env_with(&m);
	struct source *s;
	char path[128], why[128];

	snprintf(path, sizeof(path), "%s/t.gz", dir);
	write_gz(path, d, n, 0, 6);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(m.saves, 0, "the pass starts at the first demand");
	cr_assert_eq(source_stamp(s)->size, n);
	source_close(s);
	cr_assert_eq(m.saves, 1);
	cr_assert_eq(zsource_blob_check(m.blob, m.len, 0, why, sizeof(why)), -EBADMSG);
	/* the next open uses it: no second pass */
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(m.saves, 1);
	check_reads(s, d, n, 11);
	source_close(s);
	/* a damaged table is refused, and the pass runs again */
	memset((char *)m.blob + m.len - 40, 0xff, 8);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_stamp(s)->size, n);
	cr_assert_eq(m.saves, 2);
	check_reads(s, d, n, 12);
	source_close(s);
	source_env_free(env);
	free(m.blob);
	free(d);
}

/* Every read gives the oracle's bytes or EIO; returns how many gave EIO. */
static int reads_right_or_eio(struct source *s, const unsigned char *d, size_t n)
{
	unsigned char *buf = malloc(SPAN);
	size_t off;
	int eio = 0;

	for (off = 0; off < n; off += SPAN / 2) {
		size_t want = n - off < SPAN ? n - off : SPAN;
		ssize_t got = source_pread(s, buf, SPAN, off);

		if (got == -EIO) {
			eio++;
			continue;
		}
		cr_assert_eq(got, (ssize_t)want, "at %zu: %zd", off, got);
		cr_assert(!memcmp(buf, d + off, want), "wrong bytes at %zu", off);
	}
	free(buf);
	return eio;
}

static void damaged(long where, int cut, int expect_open)
{
	size_t n = 3u << 20;
	unsigned char *d = make_data(n, 5);
	char path[128];
	struct source_env *env = env_with(NULL);
	struct source *s;
	FILE *f;
	long size;
	int c;

	snprintf(path, sizeof(path), "%s/bad.gz", dir);
	write_gz(path, d, n, 200000, 6);
	cr_assert((f = fopen(path, "r+b")));
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	if (cut) {
		cr_assert_eq(truncate(path, size / 2), 0);
	} else {
		where = where < 0 ? size + where : where;
		fseek(f, where, SEEK_SET);
		c = fgetc(f);
		fseek(f, where, SEEK_SET);
		fputc(c ^ 0x10, f);
	}
	fclose(f);
	cr_assert_eq(source_open(env, path, &s) == 0, expect_open);
	if (expect_open) {
		cr_assert_gt(reads_right_or_eio(s, d, source_stamp(s)->size < n ?
						source_stamp(s)->size : n), 0);
		source_close(s);
	}
	source_env_free(env);
	free(d);
}

Test(zsource, flipped_bit_in_the_middle) { damaged(200000, 0, 1); }
Test(zsource, flipped_crc_of_last)       { damaged(-6, 0, 1); }
Test(zsource, truncated)                 { damaged(0, 1, 1); }

/*
 * Damage after the pass, the stamp kept: a byte of the stored blocks of a
 * one-member gzip (it still inflates, to other bytes) is flipped once the
 * access-point table is saved, and the file's size and mtime put back.  The
 * next open uses the saved table (no pass, so no member CRC): only the
 * span's chunk CRC-32s can tell, and a read of the damaged bytes must give
 * EIO, never them.  `at` is in the last 64 KiB chunk of the file's one
 * span (n <= span): the chunk a check that stops one short would skip, and
 * in a one-chunk span (n <= 64 KiB) the only one.
 */
static void damaged_after_table(size_t n, size_t at)
{
	struct source_config cfg = { .span_bytes = 1u << 20, .cache_bytes = 4u << 20 };
	unsigned char *d = malloc(n), *buf = malloc(n), *file, *hit;
	struct memstore m = { 0 };
	struct source_env *env;
	struct source *s;
	struct timespec times[2];
	struct stat st;
	uint64_t x = 12345;
	char path[128];
	size_t len, i;
	FILE *f;

	cr_assert(d && buf && n <= cfg.span_bytes && at + 16 <= n);
	for (i = 0; i < n; i++) {	/* random: any 16 bytes are unique */
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		d[i] = (unsigned char)(x >> 56);
	}
	snprintf(path, sizeof(path), "%s/stored.gz", dir);
	write_gz(path, d, n, 0, 0);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	source_env_zstore(env, &mem_ops, &m);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_pread(s, buf, n, 0), (ssize_t)n);
	cr_assert(!memcmp(buf, d, n));
	source_close(s);
	source_env_free(env);
	cr_assert_eq(m.saves, 1, "the pass saved no table");

	/* stored blocks hold the bytes as they are: find and flip one */
	cr_assert_eq(stat(path, &st), 0);
	cr_assert((f = fopen(path, "r+b")));
	file = malloc((size_t)st.st_size);
	cr_assert(file && fread(file, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
	hit = memmem(file, (size_t)st.st_size, d + at, 16);
	cr_assert(hit, "byte %zu not found stored", at);
	fseek(f, hit - file, SEEK_SET);
	fputc(*hit ^ 0x20, f);
	cr_assert_eq(fclose(f), 0);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);

	cr_assert_eq(source_env_new(&cfg, &env), 0);
	source_env_zstore(env, &mem_ops, &m);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_stamp(s)->size, n);
	cr_assert_eq(source_pread(s, buf, 1, at), -EIO,
		     "the damaged byte %zu of a %zu-byte span was served", at, n);
	len = n - at < 5000 ? n - at : 5000;
	cr_assert_eq(source_pread(s, buf, len, at - (at > 100 ? 100 : 0)), -EIO);
	cr_assert_eq(m.saves, 1, "a pass ran again: the saved table was not used");
	source_close(s);
	source_env_free(env);
	free(m.blob);
	free(file);
	free(buf);
	free(d);
}

Test(zsource, damage_in_a_spans_last_chunk_with_stamp_kept)
{
	damaged_after_table(300000, 300000 - 1000);	/* chunk 4 of 0-4 */
}

Test(zsource, damage_in_a_one_chunk_span_with_stamp_kept)
{
	damaged_after_table(40000, 20000);
}

/* ---- readers racing the first pass ---- */

struct racer {
	struct source *s;
	const unsigned char *d;
	size_t n;
	unsigned seed;
	int sequential;     /* 1: from 0 in order, as a tar build reads */
};

/* Reads ahead of the pass (it starts at the first demand, so every first
 * read of a thread is ahead of it or at it): each read the oracle's. */
static void *race(void *arg)
{
	struct racer *r = arg;
	unsigned char *buf = malloc(3 * SPAN);
	uint64_t x = r->seed;
	size_t off = 0, len, want;
	ssize_t got;
	int i;

	cr_assert(buf);
	for (i = 0; i < 200; i++) {
		x = x * 6364136223846793005ull + 1;
		len = (size_t)((x >> 8) % (3 * SPAN)) + 1;
		if (!r->sequential)
			off = (size_t)((x >> 20) % (r->n + 10));
		want = off >= r->n ? 0 : (r->n - off < len ? r->n - off : len);
		got = source_pread(r->s, buf, len, off);
		cr_assert_eq(got, (ssize_t)want, "read %zu at %zu: %zd", len, off, got);
		cr_assert(!memcmp(buf, r->d + (off < r->n ? off : 0), want),
			  "bytes differ at %zu+%zu", off, len);
		if (r->sequential && (off += len) >= r->n)
			break;
	}
	free(buf);
	return NULL;
}

/* Four threads (one reading in order) race the pass of an n-byte file in
 * members of `member` bytes; then the stamp, the table saved, and reads. */
static void racing(size_t n, size_t member, size_t cache)
{
	unsigned char *d = make_data(n, 21);
	struct source_config cfg = { .span_bytes = SPAN, .cache_bytes = cache };
	struct memstore m = { 0 };
	struct racer r[4];
	pthread_t t[4];
	struct source_env *env;
	struct source *s;
	char path[128];
	uint64_t have;
	int i;

	snprintf(path, sizeof(path), "%s/race.gz", dir);
	write_gz(path, d, n, member, 6);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	source_env_zstore(env, &mem_ops, &m);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_extent(s, 0, &have), 0, "growing until read through");
	for (i = 0; i < 4; i++) {
		r[i] = (struct racer){ s, d, n, 100u + (unsigned)i, i == 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(source_extent(s, UINT64_MAX, &have), 1);
	cr_assert_eq(have, n);
	cr_assert_eq(source_stamp(s)->size, n);
	cr_assert_eq(m.saves, 1, "the table is saved once, after the pass");
	check_reads(s, d, n, 23);
	source_close(s);
	source_env_free(env);
	free(m.blob);
	free(d);
}

/* The cache holds the whole file: every read takes the pass's spans. */
Test(zsource, readers_race_the_pass)          { racing(6u << 20, 0, 16u << 20); }
/* A cache of 4 spans: random readers far apart evict each other's spans
 * before they are read, and wait for the end to inflate them. */
Test(zsource, readers_race_the_pass_evicted)  { racing(6u << 20, 500000, 4 * SPAN); }

/* Closed while the pass waits for its streaming reader (or before it
 * ever started): it is cancelled and joined, nothing saved. */
Test(zsource, close_cancels_the_pass)
{
	size_t n = 4u << 20;
	unsigned char *d = make_data(n, 4), buf[100];
	struct memstore m = { 0 };
	struct source_env *env = env_with(&m);
	struct source *s;
	char path[128];
	uint64_t have;

	snprintf(path, sizeof(path), "%s/c.gz", dir);
	write_gz(path, d, n, 0, 6);
	cr_assert_eq(source_open(env, path, &s), 0);
	source_close(s);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_extent(s, 0, &have), 0);
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert(!memcmp(buf, d, sizeof(buf)));
	source_close(s);
	cr_assert_eq(m.saves, 0);
	/* a reader that does not stream gets checked bytes: after the pass */
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert(!memcmp(buf, d, sizeof(buf)));
	cr_assert_eq(m.saves, 1);
	source_close(s);
	source_env_free(env);
	free(d);
}

struct waiter {
	struct source *s;
	uint64_t off;
	ssize_t got;
};

static void *wait_read(void *arg)
{
	struct waiter *w = arg;
	unsigned char buf[4096];

	w->got = source_pread(w->s, buf, sizeof(buf), w->off);
	return NULL;
}

/*
 * One member, damaged (cut, or a byte flipped at `where`): a streaming
 * reader in order from the start (the pass waits for it, so it reads
 * bytes of the damaged member before the pass knows it is damaged: a
 * flipped bit may inflate to other bytes) is told at the end:
 * source_extent fails (ERESTART: read it again), and reads after the pass
 * give EIO; a reader waiting past the end meanwhile is woken with the end
 * or EIO.
 */
static void stream_damaged(long where, int cut)
{
	size_t n = 3u << 20, off;
	unsigned char *d = make_data(n, 5), *buf = malloc(SPAN);
	struct source_env *env = env_with(NULL);
	struct waiter w;
	struct source *s;
	pthread_t t;
	char path[128];
	uint64_t have;
	ssize_t got;
	FILE *f;
	int c, some = 0;

	snprintf(path, sizeof(path), "%s/sd.gz", dir);
	write_gz(path, d, n, 0, 6);
	if (cut) {
		cr_assert((f = fopen(path, "rb")));
		fseek(f, 0, SEEK_END);
		cr_assert_eq(truncate(path, ftell(f) / 2), 0);
		fclose(f);
	} else {
		cr_assert((f = fopen(path, "r+b")));
		fseek(f, where, SEEK_SET);
		c = fgetc(f);
		fseek(f, where, SEEK_SET);
		fputc(c ^ 0x10, f);
		fclose(f);
	}
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_extent(s, 0, &have), 0);
	w = (struct waiter){ s, n - 100, 0 };
	cr_assert_eq(pthread_create(&t, NULL, wait_read, &w), 0);
	for (off = 0; off < n; off += SPAN / 4) {
		got = source_pread(s, buf, SPAN / 4, off);
		if (got <= 0) {
			cr_assert(got == 0 || got == -EIO, "at %zu: %zd", off, got);
			break;
		}
		if (cut)	/* what a cut stream gives is a true prefix */
			cr_assert(!memcmp(buf, d + off, (size_t)got),
				  "wrong bytes at %zu", off);
		some = 1;
	}
	pthread_join(t, NULL);
	cr_assert(w.got == -EIO || (w.got >= 0 && w.got <= 100), "waiter: %zd", w.got);
	cr_assert(some, "the bytes before the damage came first");
	cr_assert_eq(source_extent(s, UINT64_MAX, &have), -ERESTART,
		     "bytes of the damaged member were read while the pass ran");
	cr_assert_eq(source_pread(s, buf, 100, 0), -EIO, "and read after it: EIO");
	source_close(s);
	source_env_free(env);
	free(buf);
	free(d);
}

Test(zsource, pass_meets_truncation_while_read_waits) { stream_damaged(0, 1); }
Test(zsource, pass_meets_bad_crc_while_read_waits)    { stream_damaged(300000, 0); }

/* ---- span buffers recycled (zpool.c) ---- */

/* zlib's own inflate of the whole file, every member (gzread): the
 * oracle, independent of the bytes the file was made from. */
static unsigned char *zlib_inflate_file(const char *path, size_t *n)
{
	gzFile g = gzopen(path, "rb");
	size_t cap = 1 << 20;
	unsigned char *d = malloc(cap);
	int got;

	cr_assert(g && d);
	*n = 0;
	while ((got = gzread(g, d + *n, (unsigned)(cap - *n))) > 0) {
		*n += (size_t)got;
		if (*n == cap)
			cr_assert((d = realloc(d, cap *= 2)));
	}
	cr_assert_eq(got, 0);
	gzclose(g);
	return d;
}

/* Reads the whole source in order, `step` bytes at a time, against d. */
static void read_through(struct source *s, const unsigned char *d, size_t n,
			 size_t step)
{
	unsigned char *buf = malloc(step);
	size_t off, want;

	cr_assert(buf);
	for (off = 0; off < n; off += step) {
		want = n - off < step ? n - off : step;
		cr_assert_eq(source_pread(s, buf, step, off), (ssize_t)want);
		cr_assert(!memcmp(buf, d + off, want), "bytes differ at %zu", off);
	}
	free(buf);
}

static void pool_recycles(size_t member, int level)
{
	size_t n = 8u << 20, zn;
	unsigned char *d = make_data(n, 31), *z;
	struct source_config cfg = { .span_bytes = SPAN, .cache_bytes = 4 * SPAN };
	struct source_env *env;
	struct source *s;
	struct racer r;
	pthread_t t;
	char path[128];
	uint64_t have;
	unsigned long made;
	unsigned spare;

	snprintf(path, sizeof(path), "%s/pool.gz", dir);
	write_gz(path, d, n, member, level);
	z = zlib_inflate_file(path, &zn);
	cr_assert_eq(zn, n);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	cr_assert_eq(source_open(env, path, &s), 0);
	cr_assert_eq(source_extent(s, 0, &have), 0, "streamed while the pass runs");
	/* random reads far ahead of the pass while it runs (it runs ahead
	 * to them, evicting spans the in-order reader has not read yet) */
	r = (struct racer){ s, z, zn, 77, 0 };
	cr_assert_eq(pthread_create(&t, NULL, race, &r), 0);
	read_through(s, z, zn, 100000);
	pthread_join(t, NULL);
	cr_assert_eq(source_extent(s, UINT64_MAX, &have), 1);
	cr_assert_eq(have, zn);
	read_through(s, z, zn, 3 * SPAN / 2);	/* after the pass: misses */
	race(&r);
	source_env_zbuffers(env, &made, &spare);
	/* 128 spans of 64 KiB, each inflated at least twice: recycled, the
	 * buffers alive at once are the cache's (one or two: each is charged
	 * its 192 KiB buffer), the pass's, two readers' and the pool's 4
	 * spares (without the cache's release hook: about 800 made) */
	cr_assert(made <= 12, "%lu span buffers made", made);
	cr_assert(made >= 2, "%lu span buffers made", made);
	cr_assert(spare <= 4, "%u kept unused", spare);
	source_close(s);
	source_env_free(env);
	free(z);
	free(d);
}

Test(zsource, pool_recycles_spans)          { pool_recycles(0, 6); }
Test(zsource, pool_recycles_spans_members)  { pool_recycles(300000, 1); }

/* The table checker on junk: never crashes, refuses. */
Test(zsource, blob_check_junk)
{
	char why[128];
	unsigned char junk[256];

	memset(junk, 0xa5, sizeof(junk));
	cr_assert_eq(zsource_blob_check(junk, sizeof(junk), 10, why, sizeof(why)), -EBADMSG);
	cr_assert_eq(zsource_blob_check(junk, 3, 10, why, sizeof(why)), -EBADMSG);
}
