/*
 * index_map.c - mapping an index file and checking it (see index.h for the
 * contract, index_int.h for the format): the header and section table at
 * every map, each block of a section the first time it is used.
 *
 * Not for: writing indexes (index.c), what sections mean.
 */
#include "index/index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/crc.h"
#include "index/index_int.h"
#include "log.h"

/* `why` leaves the path out: every caller's message names it already. */
static int bad(char *why, size_t whylen, const char *fmt,
	       unsigned long long a, unsigned long long b)
{
	if (why && whylen)
		snprintf(why, whylen, fmt, a, b);
	return -EBADMSG;
}

/* Every section inside [hdr_size, table_off), aligned, tags unique, its
 * blocks among the checksums. */
static int check_table(const struct index_hdr *h, const struct index_sect *t,
		       char *why, size_t whylen)
{
	for (uint32_t i = 0; i < h->nsect; i++) {
		uint64_t nb = (t[i].len + (1ull << h->block_shift) - 1) >> h->block_shift;

		if (t[i].off < h->hdr_size || t[i].off % INDEX_ALIGN ||
		    t[i].off > h->table_off || t[i].len > h->table_off - t[i].off)
			return bad(why, whylen, "section %llu out of bounds (offset %llu)",
				   i, (unsigned long long)t[i].off);
		if (t[i].block > h->nblocks || nb > h->nblocks - t[i].block)
			return bad(why, whylen, "section %llu has checksums past the %llu "
				   "listed", i, h->nblocks);
		for (uint32_t j = 0; j < i; j++)
			if (t[j].tag == t[i].tag)
				return bad(why, whylen, "sections %llu and %llu share a tag",
					   j, i);
	}
	return 0;
}

/*
 * The header, and the table and block checksums against the header's crc:
 * what every map checks.  The sections' bytes are checked as they are used.
 */
static int check_map(const struct index_map *m, const struct index_fp *fp,
		     char *why, size_t whylen)
{
	const struct index_hdr *h = (const void *)m->base;
	uint64_t tlen;
	uint32_t crc;

	if (m->len < sizeof(*h))
		return bad(why, whylen, "%llu bytes, shorter than the %llu-byte header",
			   m->len, sizeof(*h));
	if (memcmp(h->magic, INDEX_MAGIC, 8))
		return bad(why, whylen, "bad magic at offset %llu (%llu bytes)", 0, 8);
	if (h->version != INDEX_VERSION || h->hdr_size != sizeof(*h))
		return bad(why, whylen, "index version %llu, expected %llu",
			   h->version, INDEX_VERSION);
	if (h->total_len != m->len)
		return bad(why, whylen, "length %llu, header says %llu",
			   m->len, h->total_len);
	if (h->block_shift < 12 || h->block_shift > 30)
		return bad(why, whylen, "checksum blocks of 2^%llu bytes (expected 2^%llu)",
			   h->block_shift, INDEX_BLOCK_SHIFT);
	tlen = (uint64_t)h->nsect * sizeof(struct index_sect) + (uint64_t)h->nblocks * 4;
	if (h->nsect > INDEX_MAX_SECT || h->table_off % 8 || h->table_off < h->hdr_size ||
	    h->table_off > m->len || m->len - h->table_off != tlen)
		return bad(why, whylen, "section table at %llu does not fit %llu sections",
			   h->table_off, h->nsect);
	if (fp && h->fp != fp->h) {
		if (why && whylen)
			snprintf(why, whylen, "sources or options changed");
		return -ESTALE;
	}
	crc = zcrc32(0, m->base + h->table_off, (size_t)tlen);
	if (crc != h->crc)
		return bad(why, whylen, "checksum of the section table %08llx, header "
			   "says %08llx", crc, h->crc);
	return check_table(h, (const void *)(m->base + h->table_off), why, whylen);
}

int index_map_open(struct index_map *m, const char *path,
		   const struct index_fp *fp, char *why, size_t whylen)
{
	struct stat st;
	void *p = MAP_FAILED;
	int fd, ret;

	memset(m, 0, sizeof(*m));
	if (why && whylen)
		why[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (why && whylen)
			snprintf(why, whylen, "%s", strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if ((uint64_t)st.st_size < sizeof(struct index_hdr) || (uint64_t)st.st_size > SIZE_MAX) {
		ret = bad(why, whylen, "%llu bytes, not an index (header is %llu)",
			  (unsigned long long)st.st_size, sizeof(struct index_hdr));
		goto out;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		sfs_err("%s: mmap of %lld bytes: %s", path, (long long)st.st_size,
			strerror(errno));
		goto out;
	}
	/* used at random, a lookup at a time: no readahead around a fault
	 * (index_map_check asks for each block it checks) */
	madvise(p, (size_t)st.st_size, MADV_RANDOM);
	m->base = p;
	m->len = (size_t)st.st_size;
	ret = check_map(m, fp, why, whylen);
	if (ret == 0) {
		const struct index_hdr *h = p;

		m->nsect = h->nsect;
		m->table = m->base + h->table_off;
		m->crcs = (const uint32_t *)(m->base + h->table_off +
					     (uint64_t)h->nsect * sizeof(struct index_sect));
		m->block_shift = h->block_shift;
		m->nblocks = h->nblocks;
		/* calloc: pages of zeros the kernel hands out as they are used */
		m->state = calloc((size_t)h->nblocks + 1, 1);
		m->path = strdup(path);
		if (!m->state || !m->path)
			ret = -ENOMEM;
	}
out:
	close(fd);   /* the mapping stays valid without the descriptor */
	if (ret < 0 && p != MAP_FAILED) {
		free(m->state);
		free(m->path);
		munmap(p, (size_t)st.st_size);
	}
	if (ret < 0)
		memset(m, 0, sizeof(*m));
	return ret;
}

/* A tag as its four characters, or in hex when they are not printable. */
static void tag_str(uint32_t tag, char *out, size_t len)
{
	char c[4];

	for (int i = 0; i < 4; i++) {
		c[i] = (char)(tag >> (8 * i));
		if (c[i] < 0x20 || c[i] > 0x7e) {
			snprintf(out, len, "0x%08x", tag);
			return;
		}
	}
	snprintf(out, len, "%.4s", c);
}

/*
 * Checks block k (the section t's k-th) once: 0, or -EIO when its bytes
 * fail their checksum, said once, naming the file, the section and the
 * offset (the caller says what that costs: a rebuild at load, EIO
 * later).  A damaged saved index is removed, so the next mount rebuilds
 * it; this one keeps its mapping, and every use of the block fails.
 */
static int check_block(const struct index_map *m, const struct index_sect *t,
		       uint64_t k)
{
	uint64_t bs = 1ull << m->block_shift, from = t->off + k * bs;
	uint64_t n = t->len - k * bs < bs ? t->len - k * bs : bs;
	uint8_t *st = &m->state[t->block + k];
	uint8_t was = __atomic_load_n(st, __ATOMIC_ACQUIRE);
	uint32_t crc, want = m->crcs[t->block + k];
	char tag[16];

	if (was == BLOCK_GOOD)
		return 0;
	if (was == BLOCK_BAD)
		return -EIO;
	crc = zcrc32(0, m->base + from, (size_t)n);
	if (crc == want) {
		__atomic_store_n(st, BLOCK_GOOD, __ATOMIC_RELEASE);
		return 0;
	}
	/* threads racing here say it once: the first to mark it */
	if (__atomic_exchange_n(st, BLOCK_BAD, __ATOMIC_ACQ_REL) == BLOCK_BAD)
		return -EIO;
	tag_str(t->tag, tag, sizeof(tag));
	sfs_err("%s: the index is damaged: section %s fails its checksum in bytes "
		"%llu-%llu (crc32 %08x, expected %08x)%s",
		m->path, tag, (unsigned long long)from,
		(unsigned long long)(from + n - 1), crc, want,
		m->unlink_damaged && unlink(m->path) == 0 ?
		"; removed: the next mount rebuilds it" : "");
	return -EIO;
}

/* Asks for bytes [off, off + n) of the map's file, in the background. */
static void advise_need(const struct index_map *m, uint64_t off, uint64_t n)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)(m->base + off) & ~(pg - 1);

	if (off >= m->len)
		return;
	if (n > m->len - off)
		n = m->len - off;
	madvise((void *)a, (size_t)((uintptr_t)(m->base + off + n) - a), MADV_WILLNEED);
}

/* The section holding byte `off` of the file, or NULL. */
static const struct index_sect *section_at(const struct index_map *m, uint64_t off)
{
	const struct index_sect *t = m->table;

	for (uint32_t i = 0; i < m->nsect; i++)
		if (off >= t[i].off && off - t[i].off < t[i].len)
			return &t[i];
	return NULL;
}

int index_map_check(const struct index_map *m, const void *p, uint64_t len)
{
	const uint8_t *b = p;
	const struct index_sect *t;
	uint64_t off, k, first, last;
	int rc;

	if (!len)
		return 0;
	if (b < m->base || b >= m->base + m->len)
		return -EIO;
	off = (uint64_t)(b - m->base);
	/* callers ask for bytes of one section: anything else is theirs */
	if (!(t = section_at(m, off)) || len > t->off + t->len - off)
		return -EIO;
	first = (off - t->off) >> m->block_shift;
	last = (off - t->off + len - 1) >> m->block_shift;
	/* blocks not checked yet: one read for them all, not a fault per
	 * page (the map is MADV_RANDOM) */
	for (k = first; k <= last; k++)
		if (__atomic_load_n(&m->state[t->block + k], __ATOMIC_ACQUIRE) != BLOCK_GOOD)
			break;
	if (k > last)
		return 0;
	if (last > k)
		advise_need(m, t->off + (k << m->block_shift),
			    ((last - k + 1) << m->block_shift));
	for (; k <= last; k++)
		if ((rc = check_block(m, t, k)) < 0)
			return rc;
	return 0;
}

int index_map_damaged(const struct index_map *m)
{
	for (uint32_t k = 0; m->state && k < m->nblocks; k++)
		if (__atomic_load_n(&m->state[k], __ATOMIC_ACQUIRE) == BLOCK_BAD)
			return 1;
	return 0;
}

const void *index_map_section_unchecked(const struct index_map *m, uint32_t tag,
					uint64_t *len)
{
	const struct index_sect *t = m->table;

	for (uint32_t i = 0; i < m->nsect; i++) {
		if (t[i].tag == tag) {
			*len = t[i].len;
			return m->base + t[i].off;
		}
	}
	*len = 0;
	return NULL;
}

const void *index_map_section(const struct index_map *m, uint32_t tag,
			      uint64_t *len)
{
	const void *p = index_map_section_unchecked(m, tag, len);

	if (p && index_map_check(m, p, *len) < 0) {
		*len = 0;
		return NULL;
	}
	return p;
}

void index_map_close(struct index_map *m)
{
	if (m->base)
		munmap((void *)m->base, m->len);
	free(m->state);
	free(m->path);
	memset(m, 0, sizeof(*m));
}
