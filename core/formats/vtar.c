/*
 * vtar.c - WebDataset tar shards generated on demand (see vtar.h).
 *
 * A sample's record is laid out as
 *   [.cls header block(s)] [label, one block] [.jpg header block(s)]
 *   [data] [zero padding to 512]
 * and a read walks records from the one holding `off`, making header
 * blocks in the reply (in a 512-byte stack buffer when the read takes
 * part of one), the members that lie in place in their source as spans
 * of it, read at once (source_fill_spans) or, for a reply that splices
 * (vtar_read_spans), left as spans; other members through the caller's
 * pread.  Not for: reading real tars (tar.c).
 */
#include "formats/vtar.h"
#include "decimal.h"
#include "search.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PAD(x) (((x) + VTAR_BLOCK - 1) & ~(uint64_t)(VTAR_BLOCK - 1))
#define USTAR_NAME 100
#define OCTAL11_MAX 077777777777ull

/* length of the pax record "%d path=%s\n" (the length counts itself) */
static uint64_t pax_len(size_t name_len)
{
	uint64_t body = name_len + 7, len = body + decimal_digits(body);

	if (decimal_digits(len) > decimal_digits(body))
		len++;
	return len;
}

/* header blocks of a member named name_len bytes: ustar, or pax + ustar */
static uint64_t header_size(size_t name_len)
{
	if (name_len <= USTAR_NAME)
		return VTAR_BLOCK;
	return 2 * VTAR_BLOCK + PAD(pax_len(name_len));
}

static const char *ext_of(const struct vtar_entry *e)
{
	return e->ext ? e->ext : ".jpg";
}

uint64_t vtar_entry_size(const struct vtar_entry *e)
{
	/* the label has at most 10 digits: always one data block */
	uint64_t n = header_size(e->stem_len + 4) + VTAR_BLOCK +
		     header_size(e->stem_len + strlen(ext_of(e))) + PAD(e->size);

	if (e->ext2)
		n += header_size(e->stem_len + strlen(e->ext2)) + PAD(e->size2);
	return n;
}

uint64_t vtar_sample_size(size_t stem_len, uint64_t size, uint32_t label)
{
	struct vtar_entry e = { .stem_len = stem_len, .size = size, .label = label };

	return vtar_entry_size(&e);
}

uint64_t vtar_archive_size(uint64_t body)
{
	uint64_t n = body + 2 * VTAR_BLOCK;

	return (n + VTAR_RECORD - 1) / VTAR_RECORD * VTAR_RECORD;
}

int vtar_size(const struct vtar_shard *s, uint64_t *size)
{
	uint64_t body;
	int rc = s->offset(s->arg, s->n, &body);

	if (rc)
		return rc;
	*size = vtar_archive_size(body);
	return 0;
}

/* v in width - 1 octal digits, zero-padded, then NUL (v fits: callers
 * clamp); returns the sum of the digits, for the header checksum.  By
 * hand: a streamed shard makes two headers per sample, and snprintf was
 * about a tenth of the daemon's CPU samples (perf) for small members. */
static unsigned put_octal(char *field, size_t width, uint64_t v)
{
	unsigned sum = 0;
	size_t i;

	field[width - 1] = '\0';
	for (i = width - 1; i-- > 0; v >>= 3) {
		field[i] = (char)('0' + (v & 7));
		sum += (unsigned char)field[i];
	}
	return sum;
}

/* n bytes of p to field; returns their sum, for the header checksum */
static unsigned put_summed(char *field, const char *p, size_t n)
{
	unsigned sum = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		field[i] = p[i];
		sum += (unsigned char)p[i];
	}
	return sum;
}

/* size field: octal, or GNU/POSIX base-256 beyond 8 GiB; returns the sum
 * of its bytes */
static unsigned put_size(char *field, uint64_t v)
{
	char b[12] = { (char)0x80 };
	int i;

	if (v <= OCTAL11_MAX)
		return put_octal(field, 12, v);
	for (i = 11; i >= 4; i--, v >>= 8)
		b[i] = (char)(v & 0xff);
	return put_summed(field, b, sizeof(b));
}

/*
 * The checksum sums every byte of the header.  Most are the same in every
 * header samplefs writes (zeros, mode, uid, gid, the magic, the checksum
 * field's own spaces): their sum is a constant, and only the name, size,
 * mtime and type are summed per header (the whole block's sum was most of
 * this function's cost, itself 7 % of a streamed shard's CPU at 3 KB
 * members).
 */
#define SUM_FIXED (21 * '0' + 3 * ('4' - '0') + /* "0000444" "0000000" "0000000" */ \
		   8 * ' ' +			/* the checksum field, as summed */ \
		   'u' + 's' + 't' + 'a' + 'r' + 2 * '0')	/* "ustar\0" "00" */

/* What every header samplefs writes has in common: the fields of SUM_FIXED
 * (mode, uid, gid: put_octal's; the magic), zeros elsewhere, copied in
 * whole rather than zeroed and filled field by field */
static const char ustar_fixed[VTAR_BLOCK] = {
	[100] = '0', '0', '0', '0', '4', '4', '4', '\0',	/* mode 0444 */
	[108] = '0', '0', '0', '0', '0', '0', '0', '\0',	/* uid */
	[116] = '0', '0', '0', '0', '0', '0', '0', '\0',	/* gid */
	[257] = 'u', 's', 't', 'a', 'r', '\0', '0', '0',	/* magic, version */
};

/* The ustar header of member <a><b> (the name cut to 100 bytes), each
 * byte written once and summed as it is (the header was 8 % of a streamed
 * shard's CPU at 3 KB members) */
static void ustar_header(char *h, const char *a, size_t al, const char *b, size_t bl,
			 uint64_t size, int64_t mtime, char type)
{
	unsigned sum = SUM_FIXED + (unsigned char)type;

	if (al > USTAR_NAME)
		al = USTAR_NAME;
	if (bl > USTAR_NAME - al)
		bl = USTAR_NAME - al;
	memcpy(h, ustar_fixed, VTAR_BLOCK);
	sum += put_summed(h, a, al) + put_summed(h + al, b, bl);
	sum += put_size(h + 124, size);
	sum += put_octal(h + 136, 12, mtime < 0 ? 0 : (uint64_t)mtime > OCTAL11_MAX ?
			 OCTAL11_MAX : (uint64_t)mtime);
	h[156] = type;
	put_octal(h + 148, 7, sum);	/* "%06o\0 ": at most 512 * 255 */
	h[155] = ' ';
}

/*
 * Block `blk` of the header of member <stem>.<ext> (`size` data bytes):
 * for long names, block 0 is the pax header, then the pax data, then the
 * ustar header with the name cut to 100 bytes.
 */
static void header_block(const struct vtar_entry *e, const char *ext,
			 uint64_t size, int64_t mtime, uint64_t blk, char *out)
{
	size_t xl = strlen(ext), nl = e->stem_len + xl;
	uint64_t plen, pblocks, k;
	char rec[VTAR_STEM_MAX + VTAR_EXT_MAX + 32];

	if (nl <= USTAR_NAME) {
		ustar_header(out, e->stem, e->stem_len, ext, xl, size, mtime, '0');
		return;
	}
	plen = pax_len(nl);
	pblocks = PAD(plen) / VTAR_BLOCK;
	if (blk == 0) {
		ustar_header(out, "././@PaxHeader", 14, "", 0, plen, mtime, 'x');
	} else if (blk <= pblocks) {
		snprintf(rec, sizeof(rec), "%llu path=%.*s%s\n", (unsigned long long)plen,
			 (int)e->stem_len, e->stem, ext);
		memset(out, 0, VTAR_BLOCK);
		k = (blk - 1) * VTAR_BLOCK;
		if (k < plen)
			memcpy(out, rec + k, plen - k < VTAR_BLOCK ? plen - k : VTAR_BLOCK);
	} else {
		ustar_header(out, e->stem, e->stem_len, ext, xl, size, mtime, '0');
	}
}

/* index of the sample holding offset `off` (< body): the caller's find,
 * else a binary search over its offsets */
static int find_sample(const struct vtar_shard *s, uint64_t off, uint64_t *idx,
		       uint64_t *start)
{
	uint64_t o;
	int rc = 0;

	if (s->find)
		return s->find(s->arg, off, idx, start);
	/* the last sample starting at or before off; a failed offset (rc)
	 * stops the search */
	*idx = SFS_PARTITION_POINT(uint64_t, 1, s->n, i, rc == 0 &&
			(rc = s->offset(s->arg, i, &o)) == 0 && o <= off) - 1;
	return rc ? rc : s->offset(s->arg, *idx, start);
}

/*
 * Where a generated block (header, label) holding reply offset rel is
 * made: straight into buf when the read takes all of it, as most do (a
 * streamed shard makes three a sample), else in blk, of which block_done
 * copies the part the read takes.
 */
static char *block_out(char *buf, size_t len, uint64_t rel, char *blk)
{
	return rel % VTAR_BLOCK == 0 && len >= VTAR_BLOCK ? buf : blk;
}

/* The bytes of the block at `out` (block_out's) the read takes, in buf */
static ssize_t block_done(char *buf, size_t len, uint64_t rel, const char *out)
{
	size_t n = VTAR_BLOCK - rel % VTAR_BLOCK;

	if (n > len)
		n = len;
	if (out != buf)
		memcpy(buf, out + rel % VTAR_BLOCK, n);
	return (ssize_t)n;
}

/* Sample i's member bytes [mo, mo + n) as a span of its source when the
 * caller says the member lies in place and o has room: n, -ENOTSUP (read
 * them), or -EIO.  Keeps room for one span after it (the bytes written to
 * buf next). */
static ssize_t member_span(const struct vtar_shard *s, uint64_t i, unsigned part,
			   struct vtar_spans *o, size_t n, uint64_t mo)
{
	struct source *src;
	uint64_t base;
	int rc;

	if (!s->in_place || n < o->min || o->n + 2 > o->max)
		return -ENOTSUP;
	if ((rc = s->in_place(s->arg, i, part, &src, &base)) < 0)
		return rc;
	o->sp[o->n++] = (struct source_span){ src, base + mo, n };
	return (ssize_t)n;
}

/* Copies bytes [rel, rel + len) of data member `part` (ext, data `size`
 * bytes, its header at record offset `at`) of sample i, or leaves its
 * data as a span (member_span); returns bytes done, 0 past the member. */
static ssize_t read_member(const struct vtar_shard *s, uint64_t i, const struct vtar_entry *e,
			   unsigned part, const char *ext, uint64_t size, uint64_t at,
			   char *buf, size_t len, uint64_t rel, struct vtar_spans *o)
{
	uint64_t c = at + header_size(e->stem_len + strlen(ext)), d = c + size;
	uint64_t end = c + PAD(size);
	char blk[VTAR_BLOCK], *out;
	size_t n;

	if (rel >= end)
		return 0;
	if (rel >= c && rel < d) {
		ssize_t r;

		n = len < d - rel ? len : (size_t)(d - rel);
		if ((r = member_span(s, i, part, o, n, rel - c)) != -ENOTSUP)
			return r;
		r = s->pread(s->arg, i, part, buf, n, rel - c);
		return r == 0 ? -EIO : r;	/* the source ended early */
	}
	if (rel >= d) {
		n = len < end - rel ? len : (size_t)(end - rel);
		memset(buf, 0, n);
		return (ssize_t)n;
	}
	out = block_out(buf, len, rel, blk);
	header_block(e, ext, size, s->mtime, (rel - at) / VTAR_BLOCK, out);
	return block_done(buf, len, rel, out);
}

/* Copies bytes [rel, rel + len) of sample i's record (entry e), members
 * in place left as spans in o; returns bytes done, 0 past
 * the record. */
static ssize_t read_record(const struct vtar_shard *s, uint64_t i,
			   const struct vtar_entry *ep, char *buf, size_t len,
			   uint64_t rel, struct vtar_spans *o)
{
	struct vtar_entry e = *ep;
	uint64_t hl, a, b, c;
	char blk[VTAR_BLOCK], *out;
	ssize_t r;

	hl = header_size(e.stem_len + 4);
	a = hl;			/* .cls data */
	b = a + VTAR_BLOCK;	/* the data member's header */
	if (rel >= b) {
		r = read_member(s, i, &e, 0, ext_of(&e), e.size, b, buf, len, rel, o);
		if (r || !e.ext2)
			return r;
		c = b + header_size(e.stem_len + strlen(ext_of(&e))) + PAD(e.size);
		return read_member(s, i, &e, 1, e.ext2, e.size2, c, buf, len, rel, o);
	}
	out = block_out(buf, len, rel, blk);
	if (rel < a)
		header_block(&e, ".cls", decimal_digits(e.label), s->mtime, rel / VTAR_BLOCK, out);
	else {
		unsigned k = decimal_digits(e.label);
		uint32_t v = e.label;

		memset(out, 0, VTAR_BLOCK);
		while (k-- > 0) {	/* "%u" */
			out[k] = (char)('0' + v % 10);
			v /= 10;
		}
	}
	return block_done(buf, len, rel, out);
}

/* Bytes [at, at + n) of the reply were written to buf: the last span
 * grows, or a new one says so (member_span kept room for it). */
static int span_mem(struct vtar_spans *o, size_t at, size_t n)
{
	struct source_span *l = o->n ? &o->sp[o->n - 1] : NULL;

	if (l && !l->src && l->off + l->len == at) {
		l->len += n;
		return 0;
	}
	if (o->n >= o->max)
		return -EIO;	/* cannot happen: member_span keeps room */
	o->sp[o->n++] = (struct source_span){ NULL, at, n };
	return 0;
}

/* The bytes of [off, off + len) as spans in o: members in place as
 * ranges of their sources (room permitting), the rest written to buf; no
 * check (vtar_shard.check: the callers') */
static ssize_t read_pieces(const struct vtar_shard *s, char *buf, size_t len, uint64_t off,
			   struct vtar_spans *o)
{
	uint64_t body, total, i = 0, start = 0, have = UINT64_MAX;
	struct vtar_entry e;
	size_t done = 0;
	ssize_t n;
	int rc;

	o->n = 0;
	rc = s->offset(s->arg, s->n, &body);
	if (rc)
		return rc;
	total = vtar_archive_size(body);
	if (off >= total)
		return 0;
	if (len > total - off)
		len = (size_t)(total - off);
	if (off < body && (rc = find_sample(s, off, &i, &start)))
		return rc;
	while (done < len && off < body) {
		if (i >= s->n)
			return -EIO;	/* offsets and entries disagree */
		if (have != i) {	/* each record's entry once */
			memset(&e, 0, sizeof(e));	/* ext, ext2: unless the callback says */
			if ((rc = s->entry(s->arg, i, &e)))
				return rc;
			if (e.stem_len > VTAR_STEM_MAX || strlen(ext_of(&e)) > VTAR_EXT_MAX ||
			    (e.ext2 && strlen(e.ext2) > VTAR_EXT_MAX))
				return -ENAMETOOLONG;
			have = i;
		}
		unsigned had = o->n;

		n = read_record(s, i, &e, buf + done, len - done, off - start, o);
		if (n < 0)
			return n;
		if (n == 0) {	/* past this record: on to the next one, whose
				 * offset is this one's plus its size (the
				 * contract of `offset`), not another lookup */
			start += vtar_entry_size(&e);
			i++;
			continue;
		}
		if (o->n == had && (rc = span_mem(o, done, (size_t)n)))
			return rc;
		done += (size_t)n;
		off += (uint64_t)n;
	}
	if (done < len) {	/* end blocks and record padding */
		memset(buf + done, 0, len - done);
		if ((rc = span_mem(o, done, len - done)))
			return rc;
		done = len;
	}
	return (ssize_t)done;
}

/* members in place read at once (FILL_SPANS: a 1 MiB read of 3 KB
 * members is ~340 spans of members and as many of headers between) */
#define FILL_SPANS 1024

/* A span of a source worth splicing: o->min bytes or more */
static int splices(const struct source_span *a, const struct vtar_spans *o)
{
	return a->src && a->len >= o->min;
}

/*
 * Which of a read's spans (all: every member in place a span of its
 * source; `len` bytes in all) go out as spans of o, to be spliced: those
 * of at least o->min bytes, in order, while o has room for them and for
 * the bytes of buf around each (2k + 1 spans for k), and only if they are
 * half the reply or more; every other byte is buf's, one span a run.  A
 * splice pays for itself only where its ranges are most of the reply:
 * libfuse writes buf's bytes into its pipe, a page allocated for each,
 * and a READ of 3 KB members with a few of 4 KiB spliced cost twice the
 * CPU of the same READ copied.  The spans chosen become buf's in all (src
 * NULL), so that source_fill_spans reads only the others.
 */
static void choose_spans(struct vtar_spans *all, struct vtar_spans *o, size_t len)
{
	unsigned i, k = 0, room = (o->max - 1) / 2;
	struct source_span *a, *mem = NULL;
	size_t at = 0, spliced = 0;

	for (i = 0; i < all->n && k < room; i++)
		if (splices(&all->sp[i], o)) {
			spliced += all->sp[i].len;
			k++;
		}
	if (spliced < len / 2)
		room = 0;
	o->n = 0;
	for (i = 0, k = 0; i < all->n; at += a->len, i++) {
		a = &all->sp[i];
		if (splices(a, o) && k < room) {
			o->sp[o->n++] = *a;
			a->src = NULL;
			mem = NULL;
			k++;
		} else if (mem) {
			mem->len += a->len;
		} else {
			mem = &o->sp[o->n++];
			*mem = (struct source_span){ NULL, at, a->len };
		}
	}
}

/*
 * The bytes of [off, off + len): with o, members in place of at least
 * o->min bytes left as its spans (vtar_read_spans), every other member in
 * place read into buf at once (source_fill_spans: one preadv for a run of
 * members a tar header apart, where a pread each cost a shard of 3 KB
 * members twice the CPU); then the caller's check, once.
 */
static ssize_t read_filled(const struct vtar_shard *s, char *buf, size_t len, uint64_t off,
			   struct vtar_spans *o)
{
	struct source_span sp[FILL_SPANS];
	struct vtar_spans all = { sp, FILL_SPANS, 0, 1 };
	ssize_t n;
	int rc;

	if (o && !o->max)
		return -EINVAL;	/* vtar.h: room for one span at least */
	if (o)
		o->n = 0;
	n = read_pieces(s, buf, len, off, &all);
	if (n > 0 && o)
		choose_spans(&all, o, (size_t)n);
	if (n > 0 && (rc = source_fill_spans(sp, all.n, buf)) < 0)
		return rc;
	if (n >= 0 && s->check && (rc = s->check(s->arg)))
		return rc;	/* after reading, before any span goes out */
	return n;
}

ssize_t vtar_read(const struct vtar_shard *s, char *buf, size_t len, uint64_t off)
{
	return read_filled(s, buf, len, off, NULL);
}

ssize_t vtar_read_spans(const struct vtar_shard *s, char *buf, size_t len, uint64_t off,
			struct vtar_spans *o)
{
	return read_filled(s, buf, len, off, o);
}
