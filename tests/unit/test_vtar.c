/*
 * test_vtar.c - virtual WebDataset shards, checked by independent readers:
 * a shard is written to a file through vtar_read and read back by Python's
 * tarfile (names, order, sizes, mode/uid/mtime, contents compared with the
 * expected member files written directly by this test) and by `tar -tvf`;
 * then every chunking and random pread into the middle must give the same
 * bytes as one sequential pass.  Samples of two data members (Quick,
 * Draw!'s <key>.npy and <key>.strokes.npy) are compared byte for byte with
 * the tar Python's tarfile writes of the same members.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/vtar.h"

#define MTIME 1331856000

struct sample {
	char stem[300];
	uint64_t size;
	uint32_t label;
	uint64_t size2;
};

struct shard {
	struct sample *s;
	uint64_t n;
	int two;	/* <stem>.npy of size, then <stem>.strokes.npy of size2 */
	int fail_at;	/* pread of this sample fails (or -1) */
	int short_at;	/* pread of this sample returns 0 (or -1) */
};

static uint8_t byte_of(uint64_t i, unsigned part, uint64_t j)
{
	return (uint8_t)(i * 31 + j * 7 + (j >> 8) + part * 101);
}

static int cb_entry(void *arg, uint64_t i, struct vtar_entry *e)
{
	struct shard *sh = arg;

	e->stem = sh->s[i].stem;
	e->stem_len = strlen(sh->s[i].stem);
	e->size = sh->s[i].size;
	e->label = sh->s[i].label;
	if (sh->two) {
		e->ext = ".npy";
		e->ext2 = ".strokes.npy";
		e->size2 = sh->s[i].size2;
	}
	return 0;
}

/* prefix sums recomputed each time: the test favours obviousness */
static int cb_offset(void *arg, uint64_t i, uint64_t *off)
{
	uint64_t k;

	*off = 0;
	for (k = 0; k < i; k++) {
		struct vtar_entry e = { 0 };

		cb_entry(arg, k, &e);
		*off += vtar_entry_size(&e);
	}
	return 0;
}

static int preads_only_refused;	/* cb_pread: only members not in place */

static ssize_t cb_pread(void *arg, uint64_t i, unsigned part, void *buf, size_t len,
			uint64_t off)
{
	struct shard *sh = arg;
	uint8_t *b = buf;
	size_t k;

	/* members in place are spans or read at once, never one by one */
	cr_assert(!preads_only_refused || i % 7 == 3, "sample %llu read through pread",
		  (unsigned long long)i);

	if ((int)i == sh->fail_at)
		return -EIO;
	if ((int)i == sh->short_at)
		return 0;
	cr_assert(part == 0 || sh->two);
	for (k = 0; k < len; k++)
		b[k] = byte_of(i, part, off + k);
	return (ssize_t)len;
}

static const uint64_t sizes[] = { 0, 1, 511, 512, 513, 1024, 3000, 70000, 5, 100000 };

static void make_shard(struct shard *sh, struct vtar_shard *v, uint64_t n)
{
	uint64_t i;

	sh->s = calloc(n, sizeof(*sh->s));
	sh->n = n;
	sh->two = 0;
	sh->fail_at = sh->short_at = -1;
	for (i = 0; i < n; i++) {
		if (i == 3)	/* 96 + ".jpg" = exactly 100 bytes */
			memset(sh->s[i].stem, 'a', 96);
		else if (i == 4)	/* long: needs a pax header */
			snprintf(sh->s[i].stem, 300, "n01440764_%0200d", 7);
		else if (i == 6)	/* a pax record that spans two blocks */
			memset(sh->s[i].stem, 'z', 290);
		else
			snprintf(sh->s[i].stem, 300, "n%08llu_%llu", (unsigned long long)(1440764 + i), (unsigned long long)(i * 37));
		sh->s[i].size = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		sh->s[i].label = (uint32_t)(i * 997 % 1000);
		sh->s[i].size2 = sizes[(i + 3) % (sizeof(sizes) / sizeof(sizes[0]))];
	}
	sh->s[n - 1].label = 4294967295u;
	*v = (struct vtar_shard){ n, MTIME, sh, cb_entry, cb_offset, cb_pread, NULL, NULL, NULL };
}

/* the whole shard, read in `chunk`-byte pieces */
static char *read_all(const struct vtar_shard *v, uint64_t *size, size_t chunk)
{
	uint64_t off = 0;
	char *buf;

	cr_assert_eq(vtar_size(v, size), 0);
	buf = malloc(*size + 1);
	while (off < *size) {
		ssize_t n = vtar_read(v, buf + off, chunk, off);

		cr_assert_gt(n, 0, "read at %llu returned %zd", (unsigned long long)off, n);
		off += (uint64_t)n;
	}
	cr_assert_eq(vtar_read(v, buf, 10, *size), 0);
	return buf;
}

static const char *checker =
	"import sys, tarfile, os\n"
	"d = sys.argv[1]\n"
	"want = [l.rstrip('\\n') for l in open(d + '/manifest')]\n"
	"got = []\n"
	"with tarfile.open(d + '/shard.tar') as tf:\n"
	"    for m in tf:\n"
	"        assert m.isfile() and m.mode == 0o444 and m.uid == 0 and m.gid == 0, m\n"
	"        assert m.mtime == 1331856000, m.mtime\n"
	"        data = tf.extractfile(m).read()\n"
	"        assert len(data) == m.size\n"
	"        exp = open(os.path.join(d, 'want', str(len(got))), 'rb').read()\n"
	"        assert data == exp, (m.name, len(data), len(exp))\n"
	"        got.append(m.name)\n"
	"assert got == want, (got[:4], want[:4])\n"
	"assert os.path.getsize(d + '/shard.tar') % 10240 == 0\n"
	"if len(sys.argv) > 2:  # the same members written by tarfile: the same bytes\n"
	"    import io\n"
	"    out = io.BytesIO()\n"
	"    with tarfile.open(fileobj=out, mode='w', format=tarfile.PAX_FORMAT) as tw:\n"
	"        for k, name in enumerate(want):\n"
	"            data = open(os.path.join(d, 'want', str(k)), 'rb').read()\n"
	"            ti = tarfile.TarInfo(name)\n"
	"            ti.size, ti.mode, ti.mtime, ti.uname, ti.gname = len(data), 0o444, 1331856000, '', ''\n"
	"            tw.addfile(ti, io.BytesIO(data))\n"
	"    assert out.getvalue() == open(d + '/shard.tar', 'rb').read(), 'differs from tarfile'\n"
	"print('tarfile ok', len(got))\n";

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	cr_assert(f, "%s", path);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* expected members, written without vtar: <dir>/want/<k> and the names */
static void write_expected(const struct shard *sh, const char *dir)
{
	char path[4096], txt[16];
	FILE *man;
	uint64_t i, j, k = 0;

	snprintf(path, sizeof(path), "%s/want", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/manifest", dir);
	man = fopen(path, "w");
	for (i = 0; i < sh->n; i++) {
		uint64_t big = sh->s[i].size > sh->s[i].size2 ? sh->s[i].size : sh->s[i].size2;
		uint8_t *d = malloc(big + 1);

		if (sh->two)
			fprintf(man, "%s.cls\n%s.npy\n%s.strokes.npy\n", sh->s[i].stem,
				sh->s[i].stem, sh->s[i].stem);
		else
			fprintf(man, "%s.cls\n%s.jpg\n", sh->s[i].stem, sh->s[i].stem);
		snprintf(txt, sizeof(txt), "%u", sh->s[i].label);
		snprintf(path, sizeof(path), "%s/want/%llu", dir, (unsigned long long)k++);
		write_file(path, txt, strlen(txt));
		for (j = 0; j < sh->s[i].size; j++)
			d[j] = byte_of(i, 0, j);
		snprintf(path, sizeof(path), "%s/want/%llu", dir, (unsigned long long)k++);
		write_file(path, d, sh->s[i].size);
		for (j = 0; sh->two && j < sh->s[i].size2; j++)
			d[j] = byte_of(i, 1, j);
		snprintf(path, sizeof(path), "%s/want/%llu", dir, (unsigned long long)k);
		if (sh->two)
			write_file(path, d, sh->s[i].size2), k++;
		free(d);
	}
	fclose(man);
}

/* The shard in dir (made by mkdtemp) with the expected members beside it,
 * checked by Python's tarfile (with `bytes`: and written again by it, the
 * same bytes); returns the shard's bytes and size. */
static char *python_checks(const struct shard *sh, const struct vtar_shard *v, char *dir,
			   const char *bytes, uint64_t *size)
{
	char path[4096], cmd[8192];
	char *buf = read_all(v, size, 1 << 20);

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/shard.tar", dir);
	write_file(path, buf, *size);
	write_expected(sh, dir);
	snprintf(path, sizeof(path), "%s/check.py", dir);
	write_file(path, checker, strlen(checker));
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/check.py %s %s", dir, dir, bytes);
	cr_assert_eq(system(cmd), 0, "python tarfile rejected the shard%s",
		     *bytes ? " or wrote other bytes" : "");
	return buf;
}

static void remove_dir(const char *dir)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(vtar, python_tarfile_and_gnu_tar_read_it)
{
	char dir[] = "/tmp/sfs-vtar.XXXXXX", cmd[8192];
	struct shard sh;
	struct vtar_shard v;
	uint64_t size;
	char *buf;
	FILE *p;
	int lines = 0, c;

	make_shard(&sh, &v, 23);
	buf = python_checks(&sh, &v, dir, "", &size);
	snprintf(cmd, sizeof(cmd), "tar -tvf %s/shard.tar", dir);
	p = popen(cmd, "r");
	while ((c = fgetc(p)) != EOF)
		lines += c == '\n';
	cr_assert_eq(pclose(p), 0, "tar -tvf failed");
	cr_assert_eq(lines, 46);
	remove_dir(dir);
	free(buf);
	free(sh.s);
}

/* two data members a sample, short names: byte for byte tarfile's */
Test(vtar, two_members_are_what_tarfile_writes)
{
	char dir[] = "/tmp/sfs-vtar.XXXXXX";
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, i, off = 0;
	char *buf, *piece;

	make_shard(&sh, &v, 23);
	sh.two = 1;
	for (i = 0; i < sh.n; i++)	/* names tarfile writes as plain ustar */
		snprintf(sh.s[i].stem, 300, "%06llu", (unsigned long long)(i * 4099));
	buf = python_checks(&sh, &v, dir, "bytes", &size);
	piece = malloc(size);	/* any piece is the sequential pass's */
	for (i = 1; i < size; i = i * 3 + 7) {
		ssize_t n = vtar_read(&v, piece, (size_t)(size - off < i ? size - off : i), off);

		cr_assert_gt(n, 0);
		cr_assert_eq(memcmp(piece, buf + off, (size_t)n), 0, "at %llu", (unsigned long long)off);
		off = (off + (uint64_t)n * 5 + 1) % size;
	}
	remove_dir(dir);
	free(piece);
	free(buf);
	free(sh.s);
}

Test(vtar, every_chunking_and_random_preads_agree)
{
	static const size_t chunks[] = { 1, 7, 511, 512, 513, 4096, 65536 };
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, size2;
	char *ref, *buf, *piece;
	uint32_t x = 7;
	size_t k;
	int i;

	make_shard(&sh, &v, 23);
	ref = read_all(&v, &size, 1 << 30);
	for (k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
		buf = read_all(&v, &size2, chunks[k]);
		cr_assert_eq(size2, size);
		cr_assert_eq(memcmp(buf, ref, size), 0, "chunk %zu differs", chunks[k]);
		free(buf);
	}
	piece = malloc(200000);
	for (i = 0; i < 3000; i++) {
		uint64_t off;
		size_t len;
		ssize_t n;

		x = x * 1103515245 + 12345;
		off = ((uint64_t)x << 7 ^ x >> 3) % (size + 100);
		x = x * 1103515245 + 12345;
		len = x % 200000;
		n = vtar_read(&v, piece, len, off);
		if (off >= size) {
			cr_assert_eq(n, 0);
			continue;
		}
		cr_assert_eq((uint64_t)n, len < size - off ? len : size - off);
		cr_assert_eq(memcmp(piece, ref + off, (size_t)n), 0,
			     "pread(%zu at %llu) differs", len, (unsigned long long)off);
	}
	free(piece);
	free(ref);
	free(sh.s);
}

Test(vtar, sizes_are_computed_without_data)
{
	/* a shard whose one sample is 10 GiB: header uses base-256 size */
	struct sample s = { "big", 10ull << 30, 3, 0 };
	struct shard sh = { &s, 1, 0, -1, -1 };
	struct vtar_shard v = { 1, MTIME, &sh, cb_entry, cb_offset, cb_pread, NULL, NULL, NULL };
	uint64_t size;
	char hdr[512];

	cr_assert_eq(vtar_size(&v, &size), 0);
	cr_assert_eq(size, vtar_archive_size(512 * 3 + (10ull << 30)));
	cr_assert_eq(size % VTAR_RECORD, 0);
	cr_assert_eq(vtar_read(&v, hdr, 512, 1024), 512);
	cr_assert_str_eq(hdr, "big.jpg");
	cr_assert_eq((unsigned char)hdr[124], 0x80);
	{	/* the size big-endian in its last 8 bytes, and the checksum
		 * the sum of the block's bytes, its own field as spaces */
		uint64_t got = 0;
		unsigned sum = 0;
		int i;

		for (i = 128; i < 136; i++)
			got = got << 8 | (unsigned char)hdr[i];
		cr_assert_eq(got, 10ull << 30);
		for (i = 0; i < 512; i++)
			sum += i >= 148 && i < 156 ? ' ' : (unsigned char)hdr[i];
		cr_assert_eq(strtoul(hdr + 148, NULL, 8), sum);
	}
	cr_assert_eq(vtar_read(&v, hdr, 512, 512), 512);
	cr_assert_str_eq(hdr, "3");
}

Test(vtar, source_errors_are_eio_never_wrong_bytes)
{
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, off = 0;
	char *buf;

	make_shard(&sh, &v, 12);
	cr_assert_eq(vtar_size(&v, &size), 0);
	buf = malloc(size);
	sh.fail_at = 7;
	cr_assert_eq(vtar_read(&v, buf, size, 0), -EIO);
	sh.fail_at = -1;
	sh.short_at = 7;
	cr_assert_eq(vtar_read(&v, buf, size, 0), -EIO);
	cb_offset(&sh, 8, &off);
	cr_assert_gt(vtar_read(&v, buf, size, off), 0);	/* after it: fine */
	free(buf);
	free(sh.s);
}

/* The shard's check (vtar.h): called once per read, after its members were
 * read; its -EIO is the read's, so nothing of a read whose source changed
 * is served, and a read past every member (the end blocks) still asks. */
static int checks, check_rc;

static int cb_check(void *arg)
{
	(void)arg;
	checks++;
	return check_rc;
}

Test(vtar, check_runs_once_a_read_and_its_eio_is_the_reads)
{
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, off = 0;
	char *buf, *want;

	make_shard(&sh, &v, 12);
	want = read_all(&v, &size, (size_t)1 << 20);
	v.check = cb_check;
	buf = malloc(size);
	checks = 0;
	check_rc = 0;
	cr_assert_eq(vtar_read(&v, buf, size, 0), (ssize_t)size);
	cr_assert_eq(checks, 1, "%d checks for one read of 12 samples", checks);
	cr_assert(!memcmp(buf, want, size));
	check_rc = -EIO;
	cr_assert_eq(vtar_read(&v, buf, size, 0), -EIO);
	cb_offset(&sh, 5, &off);
	cr_assert_eq(vtar_read(&v, buf, 700, off), -EIO);
	cr_assert_eq(checks, 3);
	free(buf);
	free(want);
	free(sh.s);
}

/* ---- members in place: a real file holds them -------------------------- */

/* The file is laid out as a tar: each member's data after a 512-byte gap,
 * but every fifth after a gap larger than SOURCE_FILL_GAP (another
 * preadv); part 1 right after part 0's padding.  Every seventh member is
 * not in place (read through pread), and in_place says -EIO for eio_at. */
static struct source *file_src;
static uint64_t file_at[64][2];
static int eio_at = -1;

static int cb_in_file(void *arg, uint64_t i, unsigned part, struct source **src,
		      uint64_t *off)
{
	(void)arg;
	if ((int)i == eio_at)
		return -EIO;
	if (i % 7 == 3)
		return -ENOTSUP;	/* this one through pread */
	*src = file_src;
	*off = file_at[i][part];
	return 0;
}

static void write_members(const struct shard *sh, const char *path)
{
	FILE *f = fopen(path, "wb");
	uint64_t at = 0, i, j;
	unsigned part;

	cr_assert(f);
	for (i = 0; i < sh->n; i++)
		for (part = 0; part < (sh->two ? 2u : 1u); part++) {
			uint64_t size = part ? sh->s[i].size2 : sh->s[i].size;

			at += i % 5 == 0 && part == 0 ? SOURCE_FILL_GAP + 512 : 512;
			file_at[i][part] = at;
			cr_assert_eq(fseeko(f, (off_t)at, SEEK_SET), 0);
			for (j = 0; j < size; j++)
				fputc(byte_of(i, part, j), f);
			at += (size + 511) / 512 * 512;
		}
	fclose(f);
}

/* A shard of n samples whose members in place lie in a file at `path`
 * (made from its XXXXXX); the shard's bytes, every member through pread,
 * in *ref. */
static struct source_env *members_in_file(struct shard *sh, struct vtar_shard *v, uint64_t n,
					  int two, char *path, char **ref, uint64_t *size)
{
	struct source_config cfg = { 0 };
	struct source_env *env;
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	close(fd);
	make_shard(sh, v, n);
	sh->two = two;
	*ref = read_all(v, size, 65536);
	write_members(sh, path);
	cr_assert_eq(source_env_new(&cfg, &env), 0);
	cr_assert_eq(source_open(env, path, &file_src), 0);
	v->in_place = cb_in_file;
	return env;
}

static void members_in_file_done(struct source_env *env, const char *path, struct shard *sh)
{
	source_close(file_src);
	source_env_free(env);
	unlink(path);
	free(sh->s);
}

/* ---- vtar_read_spans: members in place left as source ranges ---------- */

/* The reply the spans describe, as the FUSE layer sends it: bytes of buf,
 * and the file's own bytes (pread, as a splice takes them) for ranges of
 * it.  Checks that the spans are in order, end to end, ranges no shorter
 * than VTAR_SPAN_MIN, and half the reply or more when there are any (a
 * splice of a few ranges among copied bytes costs more than a copy);
 * returns how many ranges of the file there were. */
static unsigned assemble(const struct vtar_spans *o, const char *buf, size_t n, char *out,
			 int fd)
{
	size_t at = 0, src_bytes = 0;
	unsigned i, from_src = 0;

	cr_assert_leq(o->n, o->max);
	for (i = 0; i < o->n; i++) {
		const struct source_span *s = &o->sp[i];

		if (!s->src) {
			cr_assert_eq(s->off, at, "span %u at %llu, want %zu", i,
				     (unsigned long long)s->off, at);
			memcpy(out + at, buf + s->off, s->len);
		} else {
			cr_assert_eq(s->src, file_src);
			cr_assert_geq(s->len, VTAR_SPAN_MIN);
			cr_assert_eq(pread(fd, out + at, s->len, (off_t)s->off), (ssize_t)s->len);
			src_bytes += s->len;
			from_src++;
		}
		at += s->len;
	}
	cr_assert_eq(at, n, "spans cover %zu bytes of %zu", at, n);
	cr_assert(!from_src || src_bytes >= n / 2, "%zu bytes of %zu spliced", src_bytes, n);
	return from_src;
}

static void spans_agree(int two)
{
	static const unsigned maxes[] = { 1, 2, 3, 4, 7, 64 };
	char path[] = "/tmp/sfs-vtar-spans-XXXXXX";
	struct source_span sp[64];
	struct source_env *env;
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, off;
	char *ref, *buf, *out;
	unsigned m, from_src = 0;
	size_t len;
	int fd;

	env = members_in_file(&sh, &v, 40, two, path, &ref, &size);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	buf = malloc(size);
	out = malloc(size);
	preads_only_refused = 1;	/* the others are spans, or read at once */
	for (m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		for (off = 0; off < size; off += 4093 * (m + 1)) {
			struct vtar_spans o = { sp, maxes[m], 99, VTAR_SPAN_MIN };
			ssize_t n;

			len = (size_t)(off % 3 ? 1 << 20 : 140000);
			n = vtar_read_spans(&v, buf, len, off, &o);
			cr_assert_gt(n, 0, "spans at %llu: %zd", (unsigned long long)off, n);
			from_src += assemble(&o, buf, (size_t)n, out, fd);
			cr_assert_eq(memcmp(out, ref + off, (size_t)n), 0,
				     "max %u, off %llu: not vtar_read's bytes", maxes[m],
				     (unsigned long long)off);
		}
	}
	preads_only_refused = 0;
	cr_assert_gt(from_src, 0, "no member was left in place");
	{	/* the end of the shard: 0, and no span; no room for one: EINVAL */
		struct vtar_spans o = { sp, 64, 99, VTAR_SPAN_MIN };

		cr_assert_eq(vtar_read_spans(&v, buf, 10, size, &o), 0);
		cr_assert_eq(o.n, 0);
		o.max = 0;
		cr_assert_eq(vtar_read_spans(&v, buf, 4096, 0, &o), -EINVAL);
	}
	close(fd);
	members_in_file_done(env, path, &sh);
	free(out);
	free(buf);
	free(ref);
}

Test(vtar, spans_give_vtar_reads_bytes)
{
	spans_agree(0);
}

Test(vtar, spans_give_vtar_reads_bytes_two_members)
{
	spans_agree(1);
}

/* a source changed under a member in place: the read fails, whole */
Test(vtar, spans_source_changed_is_eio)
{
	char path[] = "/tmp/sfs-vtar-eio-XXXXXX";
	struct source_span sp[64];
	struct vtar_spans o = { sp, 64, 0, VTAR_SPAN_MIN };
	struct source_env *env;
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, at;
	char *buf, *ref;

	env = members_in_file(&sh, &v, 20, 0, path, &ref, &size);
	buf = malloc(size);
	eio_at = 9;	/* in place, 100000 bytes */
	cr_assert_eq(cb_offset(&sh, 9, &at), 0);
	cr_assert_eq(vtar_read_spans(&v, buf, (size_t)size, 0, &o), -EIO);
	cr_assert_gt(vtar_read_spans(&v, buf, (size_t)at, 0, &o), 0);	/* before it: fine */
	eio_at = -1;
	members_in_file_done(env, path, &sh);
	free(buf);
	free(ref);
}

/* ---- vtar_read: members in place read at once (source_fill_spans) ---- */

static void fill_agrees(int two)
{
	char path[] = "/tmp/sfs-vtar-fill-XXXXXX";
	struct source_env *env;
	struct shard sh;
	struct vtar_shard v;
	uint64_t size, off;
	char *ref, *buf;

	env = members_in_file(&sh, &v, 40, two, path, &ref, &size);
	buf = malloc(size);
	preads_only_refused = 1;
	for (off = 0; off < size; off += 7919) {
		size_t len = off % 2 ? 1 << 20 : 3000;
		ssize_t n = vtar_read(&v, buf, len, off);

		cr_assert_gt(n, 0, "read at %llu: %zd", (unsigned long long)off, n);
		cr_assert(!memcmp(buf, ref + off, (size_t)n), "read at %llu: other bytes",
			  (unsigned long long)off);
	}
	preads_only_refused = 0;
	/* a source shorter than its members: EIO, never other bytes */
	cr_assert_eq(truncate(path, (off_t)file_at[20][0] + 10), 0);
	cr_assert_eq(vtar_read(&v, buf, (size_t)size, 0), -EIO);
	cr_assert_eq(vtar_read_spans(&v, buf, (size_t)size, 0,
				     &(struct vtar_spans){ (struct source_span[64]){ { 0 } }, 64,
							   0, VTAR_SPAN_MIN }), -EIO);
	members_in_file_done(env, path, &sh);
	free(buf);
	free(ref);
}

Test(vtar, members_in_place_read_at_once_are_preads_bytes)
{
	fill_agrees(0);
}

Test(vtar, members_in_place_read_at_once_two_members)
{
	fill_agrees(1);
}
