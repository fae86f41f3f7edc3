/*
 * gzspans - the inflate-bound rate of random member reads from a gzip
 * file, the floor gzbench.sh puts beside samplefs' random-read rate: for
 * each (offset, size) of a list, ISA-L inflates from the access point
 * before the offset to the member's end, and nothing else happens (no
 * FUSE, no cache, no CRC check).
 *
 * Usage: gzspans [-t THREADS] [-s SPAN] FILE.gz OFFSETS
 *   OFFSETS: one "uncompressed-offset size" per line.
 *   SPAN: bytes of output between access points (samplefs' span=, 1 MiB).
 * Prints: files=N secs=S files_per_s=R MB_per_s=M
 *
 * The access points are found as zlib's zran.c does (a pass with
 * inflate(Z_BLOCK), a point at the first block boundary after each SPAN
 * bytes, with its bit offset and 32 KiB window); their windows are kept in
 * memory, so it is for the quick data set (about 1 GiB of windows per
 * 32 GiB of output at 1 MiB spans).  Single-member gzip files only (what
 * `gzip -6` writes).  Not part of samplefs and does not use core/: a
 * benchmark tool, built ad hoc by gzbench.sh.
 *
 * Threads share the mapped file and the point table (read-only after the
 * pass) and one atomic counter of the next member.
 */
#include <errno.h>
#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define WIN (32u << 10)

struct point {
	uint64_t in, out;
	int bits;
	unsigned char win[WIN];
};

struct member {
	uint64_t off, size;
};

static const unsigned char *gz;
static size_t gzlen;
static struct point *pts;
static size_t npts;
static struct member *mem;
static size_t nmem;
static atomic_size_t next_member;
static uint64_t span = 1u << 20, maxlen;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Length of the gzip header at gz[0], or 0 when it is not one. */
static size_t header_len(void)
{
	size_t p = 10;

	if (gzlen < 10 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8)
		return 0;
	if (gz[3] & 4)
		p += 2 + (gz[10] | gz[11] << 8);
	if (gz[3] & 8)
		p += strnlen((const char *)gz + p, gzlen - p) + 1;
	if (gz[3] & 16)
		p += strnlen((const char *)gz + p, gzlen - p) + 1;
	if (gz[3] & 2)
		p += 2;
	return p < gzlen ? p : 0;
}

static int add_point(z_stream *zs, const unsigned char *win, uint64_t out)
{
	struct point *p;
	size_t have = WIN - zs->avail_out;

	if (!(npts & (npts + 1))) {
		p = realloc(pts, (2 * npts + 1) * sizeof(*pts));
		if (!p)
			return -ENOMEM;
		pts = p;
	}
	p = &pts[npts++];
	p->in = (uint64_t)(zs->next_in - gz);
	p->out = out;
	p->bits = zs->data_type & 7;
	/* the window is circular: the oldest bytes follow the newest */
	memcpy(p->win, win + have, WIN - have);
	memcpy(p->win + WIN - have, win, have);
	return 0;
}

/* zran.c's pass: a point at the start and after every span of output. */
static int find_points(void)
{
	static unsigned char win[WIN];
	size_t h = header_len();
	z_stream zs = { 0 };
	uint64_t out = 0, last = 0;
	int ret = Z_OK;

	if (!h || inflateInit2(&zs, -15) != Z_OK)
		return -EINVAL;
	zs.next_in = (unsigned char *)gz + h;
	zs.avail_in = (uInt)(gzlen - h);	/* quick data: under 4 GiB */
	memset(win, 0, sizeof(win));
	zs.avail_out = 0;
	if (add_point(&zs, win, 0) < 0)
		return -ENOMEM;
	pts[0].bits = 0;
	while (ret != Z_STREAM_END) {
		if (!zs.avail_out) {
			zs.next_out = win;
			zs.avail_out = WIN;
		}
		uInt before = zs.avail_out;

		ret = inflate(&zs, Z_BLOCK);
		out += before - zs.avail_out;
		if (ret != Z_OK && ret != Z_STREAM_END)
			return -EIO;
		if ((zs.data_type & 128) && !(zs.data_type & 64) &&
		    out - last >= span) {
			if (add_point(&zs, win, out) < 0)
				return -ENOMEM;
			last = out;
		}
	}
	inflateEnd(&zs);
	return 0;
}

static size_t point_before(uint64_t off)
{
	size_t lo = 0, hi = npts;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (pts[mid].out <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Inflates from the point before m to m's end into out: 0 or -EIO. */
static int inflate_member(struct inflate_state *st, const struct member *m,
			  unsigned char *out)
{
	const struct point *p = &pts[point_before(m->off)];
	uint64_t len = m->off + m->size - p->out;

	isal_inflate_init(st);
	st->crc_flag = ISAL_DEFLATE;
	st->next_in = (uint8_t *)gz + p->in;
	st->avail_in = (uint32_t)(gzlen - p->in);
	if (p->bits) {
		st->read_in = gz[p->in - 1] >> (8 - p->bits);
		st->read_in_length = p->bits;
	}
	if (p->out && isal_inflate_set_dict(st, (uint8_t *)p->win, WIN) != COMP_OK)
		return -EIO;
	st->next_out = out;
	st->avail_out = (uint32_t)len;
	if (isal_inflate(st) < 0 || st->avail_out)
		return -EIO;
	return 0;
}

static void *worker(void *arg)
{
	struct inflate_state *st = malloc(sizeof(*st));
	unsigned char *out = malloc(maxlen);
	size_t i;

	(void)arg;
	if (!st || !out)
		exit(1);
	while ((i = atomic_fetch_add(&next_member, 1)) < nmem)
		if (inflate_member(st, &mem[i], out) < 0) {
			fprintf(stderr, "gzspans: member at %llu does not inflate\n",
				(unsigned long long)mem[i].off);
			exit(1);
		}
	free(out);
	free(st);
	return NULL;
}

static int load_members(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long off, size;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (fscanf(f, "%llu %llu", &off, &size) == 2) {
		if (nmem == cap) {
			cap = cap ? 2 * cap : 1024;
			if (!(mem = realloc(mem, cap * sizeof(*mem))))
				return -ENOMEM;
		}
		mem[nmem].off = off;
		mem[nmem++].size = size;
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	int threads = 1, opt, fd, i;
	pthread_t tid[64];
	uint64_t bytes = 0;
	struct stat sb;
	double t0, dt;
	size_t k;

	while ((opt = getopt(argc, argv, "t:s:")) != -1) {
		if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 's')
			span = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	if (argc - optind != 2 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: gzspans [-t THREADS] [-s SPAN] FILE.gz OFFSETS\n");
		return 2;
	}
	if ((fd = open(argv[optind], O_RDONLY)) < 0 || fstat(fd, &sb) < 0 ||
	    (gz = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0)) ==
		    MAP_FAILED) {
		perror(argv[optind]);
		return 1;
	}
	gzlen = (size_t)sb.st_size;
	if (find_points() < 0 || load_members(argv[optind + 1]) < 0 || !nmem) {
		fprintf(stderr, "gzspans: %s: not a single-member gzip file, or no list\n",
			argv[optind]);
		return 1;
	}
	for (k = 0; k < nmem; k++) {
		uint64_t len = mem[k].off + mem[k].size - pts[point_before(mem[k].off)].out;

		maxlen = len > maxlen ? len : maxlen;
		bytes += mem[k].size;
	}
	t0 = now();
	for (i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, NULL);
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	dt = now() - t0;
	printf("files=%zu secs=%.3f files_per_s=%.1f MB_per_s=%.1f\n", nmem, dt,
	       nmem / dt, bytes / dt / 1e6);
	return 0;
}
