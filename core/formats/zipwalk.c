/*
 * zipwalk.c - walks a zip's central directory for layout=tar (see
 * zipwalk.h).
 *
 * The directory is read through a window (WINDOW bytes, one pread per
 * window), never whole, so a zip of millions of members (Kaggle's ImageNet:
 * 1.3 M) costs the window, not the directory's size.  Each member costs
 * one more small pread: its local header, whose name must be the central
 * one's and whose extra field says where the data starts.  Everything read
 * is untrusted: each offset and size is checked against the directory's
 * offset before it is used.
 *
 * Not for: member data (zipread.c), the .npz reader (zip.c).
 */
#include "formats/zipwalk.h"
#include "formats/zip_int.h"
#include "io/crc.h"
#include "io/source.h"
#include "io/codecs/zsource.h"
#include "log.h"

#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WINDOW     (256u << 10)   /* > the largest entry: 46 + 3 x 65535 */
#define AHEAD      (32u << 20)    /* read-ahead while local headers are dense */
#define DENSE      (128u << 10)   /* ... that is, this close to the last one */
#define EXTRA_UT   0x5455         /* extended timestamp: mtime */
#define HOST_FAT   0
#define HOST_UNIX  3
#define HOST_HPFS  6
#define HOST_NTFS  11
#define FLAG_UTF8  (1u << 11)

struct zwalk {
	struct zip_file zf;
	uint64_t cd_off, cd_end;
	uint64_t boff;            /* the window: [boff, boff + blen) */
	uint64_t last_lh, ra_end; /* the last local header read; read ahead to */
	uint64_t checked;         /* bytes read by stored_sizes so far */
	uint64_t shift;           /* bytes before the zip (zip_int.h) */
	size_t blen;
	uint8_t *buf;
	uint8_t *check;           /* stored_sizes' buffer (WINDOW bytes) */
	iconv_t cp437;            /* (iconv_t)-1 until a CP437 name needs it */
	char raw[TAR_PATH_MAX + 1], path[4 * TAR_PATH_MAX + 1];
	char link[TAR_PATH_MAX + 1];
};

int zip_sniff(struct source *src)
{
	struct zip_file zf = { src, source_name(src), 0, 1 };
	uint8_t head[TAR_BLOCK];
	struct zip_cd_loc loc;
	ssize_t r = source_pread(src, head, sizeof(head), 0);

	if (r < 0)
		return (int)r;
	if (r >= 4 && (le32(head) == SIG_LOCAL || le32(head) == SIG_EOCD))
		return 1;
	/* a tar is never taken for a zip with bytes before it (one holding a
	 * zip as its last member has a zip's end record near its end); nor is
	 * a decompressed stream's end read just to ask */
	if ((r == sizeof(head) && tar_header_ok(head)) || source_is_decompressed(src))
		return 0;
	zf.size = source_stamp(src)->size;	/* (a growing source's waits) */
	if (zip_locate_cd(&zf, &loc) < 0)
		return 0;
	if (loc.count == 0)
		return 1;
	/* a self-extracting zip whose offsets count the stub (zip -A), or one
	 * shifted (loc.off has the shift): a central entry where it says */
	r = source_pread(src, head, 4, loc.off);
	return r == 4 && le32(head) == SIG_CENTRAL;
}

/* Points *p at n bytes of the directory at off; -EINVAL past its end. */
static int cd_get(struct zwalk *w, uint64_t off, size_t n, const uint8_t **p)
{
	size_t want;
	int rc;

	if (off < w->cd_off || off > w->cd_end || w->cd_end - off < n)
		return -EINVAL;
	if (off < w->boff || off + n > w->boff + w->blen) {
		want = w->cd_end - off < WINDOW ? (size_t)(w->cd_end - off) : WINDOW;
		rc = zip_pread_full(w->zf.src, w->buf, want, off);
		if (rc < 0)
			return rc;
		w->boff = off;
		w->blen = want;
	}
	*p = w->buf + (off - w->boff);
	return 0;
}

/* The DOS date and time (local time, as unzip takes them). */
static int64_t dos_time(uint16_t t, uint16_t d)
{
	struct tm tm = {
		.tm_year = (d >> 9) + 80, .tm_mon = ((d >> 5) & 15) - 1,
		.tm_mday = d & 31, .tm_hour = t >> 11, .tm_min = (t >> 5) & 63,
		.tm_sec = (t & 31) * 2, .tm_isdst = -1,
	};

	return (int64_t)mktime(&tm);
}

/* The UT extra field's mtime, if it has one (unzip prefers it). */
static int ut_mtime(const uint8_t *ex, size_t len, int64_t *mtime)
{
	while (len >= 4) {
		uint16_t id = le16(ex), n = le16(ex + 2);

		if ((size_t)n + 4 > len)
			return 0;
		if (id == EXTRA_UT && n >= 5 && (ex[4] & 1)) {
			*mtime = (int32_t)le32(ex + 5);
			return 1;
		}
		ex += n + 4;
		len -= (size_t)n + 4;
	}
	return 0;
}

/* w->raw (nlen bytes) into w->path as UTF-8 (see zipwalk.h). */
static int decode_name(struct zwalk *w, size_t nlen, int host, uint16_t flags)
{
	char *in = w->raw, *out = w->path;
	size_t inl = nlen, outl = sizeof(w->path) - 1, i;

	for (i = 0; i < nlen && !((unsigned char)w->raw[i] & 0x80); i++)
		;
	if (i == nlen || (flags & FLAG_UTF8) ||
	    (host != HOST_FAT && host != HOST_HPFS && host != HOST_NTFS)) {
		memcpy(w->path, w->raw, nlen + 1);
		return 0;
	}
	if (w->cp437 == (iconv_t)-1 &&
	    (w->cp437 = iconv_open("UTF-8", "CP437")) == (iconv_t)-1)
		return -ENOTSUP;
	iconv(w->cp437, NULL, NULL, NULL, NULL);
	if (iconv(w->cp437, &in, &inl, &out, &outl) == (size_t)-1)
		return -EILSEQ;
	*out = '\0';
	return 0;
}

/*
 * While local headers come close together (small members, in file order,
 * as zips are written), asks the kernel to read the next AHEAD bytes in
 * the background, AHEAD / 2 at a time: the build sets the source
 * SOURCE_ADV_RANDOM (so that large members' data is not read), and then
 * each header is one synchronous read (50,000 small stored members cold:
 * 5.3 s).  As tar.c's rd_ahead does for tar headers.
 */
static void lh_ahead(struct zwalk *w, uint64_t off)
{
	int dense = off > w->last_lh && off - w->last_lh < DENSE;

	w->last_lh = off;
	if (!dense || off + AHEAD / 2 < w->ra_end)
		return;
	source_advise(w->zf.src, off, AHEAD, SOURCE_ADV_WILLNEED);
	w->ra_end = off + AHEAD;
}

/*
 * The CRC-32s of the first sizes[0..n) bytes of the data at off (sizes
 * ascending), in one read of the largest: crcs[i] for sizes[i].  0 or
 * -errno.
 */
static int prefix_crcs(struct zwalk *w, uint64_t off, const uint64_t *sizes,
		       size_t n, uint32_t *crcs)
{
	uint64_t done = 0;
	uint32_t crc = 0;
	size_t i = 0;
	int rc = 0;

	while (i < n) {
		uint64_t want = sizes[i] - done;
		size_t k = want < WINDOW ? (size_t)want : WINDOW;

		if (k && (rc = zip_pread_full(w->zf.src, w->check, k, off + done)) < 0)
			return rc;
		crc = zcrc32(crc, w->check, k);
		done += k;
		while (i < n && sizes[i] == done)
			crcs[i++] = crc;
	}
	return 0;
}

/* Inserts v into the ascending set s[0..*n) unless it is there. */
static void size_add(uint64_t *s, size_t *n, uint64_t v)
{
	size_t i = *n;

	while (i > 0 && s[i - 1] > v)
		i--;
	if (i > 0 && s[i - 1] == v)
		return;
	memmove(s + i + 1, s + i, (*n - i) * sizeof(*s));
	s[i] = v;
	(*n)++;
}

/*
 * A stored member whose sizes disagree: the central directory's two and,
 * without a data descriptor, the local header's two (lh).  unzip goes by
 * the local header, zipfile by the central directory; the bytes tell:
 * the size kept is the one whose bytes match the CRC-32 (the central
 * usize first), said in a warning naming both headers' sizes.  When none
 * does (or checking would read more than the zip's size over all such
 * members), the member is kept with the smallest size that fits and
 * ZIP_METHOD_BAD_SIZES: listed, its reads EIO.  0 or -errno.
 */
static int stored_sizes(struct zwalk *w, struct zip_entry *e, const uint8_t *lh)
{
	uint64_t cu = e->data.usize, cc = e->data.csize, lu = cu, lc = cc;
	uint64_t fit[4], keep = UINT64_MAX;
	uint32_t crcs[4];
	size_t n = 0, i;
	int rc;

	if (!(le16(lh + 6) & 8) && le32(lh + 18) != 0xffffffff &&
	    le32(lh + 22) != 0xffffffff) {
		lc = le32(lh + 18);
		lu = le32(lh + 22);
	}
	if (cu == cc && lu == cu && lc == cu)
		return 0;
	/* the sizes whose bytes lie before the directory */
	for (i = 0; i < 4; i++) {
		uint64_t v = i == 0 ? cu : i == 1 ? cc : i == 2 ? lc : lu;

		if (v <= w->cd_off - e->data.off)
			size_add(fit, &n, v);
	}
	if (n && fit[n - 1] <= w->zf.size - w->checked) {
		w->checked += fit[n - 1];
		if ((rc = prefix_crcs(w, e->data.off, fit, n, crcs)) < 0)
			return rc == -EIO ? 0 : rc;
		for (i = 0; i < n; i++)
			if (crcs[i] == e->data.crc32 &&
			    (keep == UINT64_MAX || fit[i] == cu))
				keep = fit[i];
	}
	if (keep != UINT64_MAX) {
		sfs_warn("%s: member '%s' is stored and its sizes disagree (central "
			 "directory: %llu bytes, %llu compressed; local header: %llu, "
			 "%llu compressed): serving the %llu bytes whose CRC-32 matches",
			 w->zf.path, e->path, (unsigned long long)cu,
			 (unsigned long long)cc, (unsigned long long)lu,
			 (unsigned long long)lc, (unsigned long long)keep);
	} else {
		keep = n ? fit[0] : 0;
		e->data.method = ZIP_METHOD_BAD_SIZES;
		sfs_warn("%s: member '%s' is stored and its sizes disagree (central "
			 "directory: %llu bytes, %llu compressed; local header: %llu, "
			 "%llu compressed), and the bytes of none match its CRC-32 "
			 "%08x: it is listed with %llu bytes, and its reads give EIO",
			 w->zf.path, e->path, (unsigned long long)cu,
			 (unsigned long long)cc, (unsigned long long)lu,
			 (unsigned long long)lc, e->data.crc32, (unsigned long long)keep);
	}
	e->data.usize = e->data.csize = keep;
	return 0;
}

/* The local header: its name must be the central one; sets the data
 * offset (and a stored member's size: stored_sizes).  One pread for the
 * header and the name. */
static int local_header(struct zwalk *w, struct zip_entry *e, size_t nlen)
{
	uint8_t lh[LOCAL_LEN + TAR_PATH_MAX];
	uint64_t off;
	int rc;

	if (e->header > w->cd_off || w->cd_off - e->header < LOCAL_LEN + nlen)
		return 1;
	lh_ahead(w, e->header);
	rc = zip_pread_full(w->zf.src, lh, LOCAL_LEN + nlen, e->header);
	if (rc < 0)
		return rc == -EIO ? 1 : rc;
	if (le32(lh) != SIG_LOCAL || le16(lh + 26) != nlen ||
	    memcmp(lh + LOCAL_LEN, w->raw, nlen))
		return 1;
	off = e->header + LOCAL_LEN + nlen + le16(lh + 28);
	if (off > w->cd_off)
		return 1;
	e->data.off = off;
	if (e->data.method == 0 && !(e->data.flags & 1) &&
	    (rc = stored_sizes(w, e, lh)) < 0)
		return rc;
	if (e->data.csize > w->cd_off - off)
		return 1;
	return 0;
}

/* A symlink's target is its data (small: read whole, CRC-checked). */
static int link_target(struct zwalk *w, struct zip_entry *e)
{
	uint8_t *t;

	if (e->data.usize > TAR_PATH_MAX || zip_data_read(&e->data, &t) < 0)
		return 1;
	memcpy(w->link, t, (size_t)e->data.usize);
	w->link[e->data.usize] = '\0';
	free(t);
	e->link = w->link;
	return strlen(w->link) != e->data.usize || !w->link[0];
}

/* Type and mode from the host's attributes and the name. */
static void entry_type(struct zip_entry *e, const struct zip_cd_entry *c,
		       const char *raw)
{
	uint32_t unix_mode = c->ext_attr >> 16;

	e->type = c->nlen && raw[c->nlen - 1] == '/' ? TAR_DIR : TAR_FILE;
	e->mode = e->type == TAR_DIR ? 0755 : 0644;
	if (c->host == HOST_UNIX && unix_mode) {
		e->mode = unix_mode & 07777;
		if (S_ISDIR(unix_mode))
			e->type = TAR_DIR;
		else if (S_ISLNK(unix_mode))
			e->type = TAR_SYMLINK;
	}
}

/* Why entry e is skipped, or NULL; fills the rest of it from c. */
static const char *entry_fill(struct zwalk *w, struct zip_entry *e,
			      const struct zip_cd_entry *c, enum zip_cd_bad bad,
			      int *rc)
{
	size_t nlen = c->nlen;

	if (nlen > TAR_PATH_MAX || memchr(w->raw, '\0', nlen))
		return "has a name over 4096 bytes or with a NUL byte";
	if (bad == ZIP_CD_ZIP64)
		return "needs a zip64 extra field it lacks or truncates";
	if (bad == ZIP_CD_SHIFT)
		return "has a local header offset past any file";
	e->data.flags = c->flags;
	e->data.method = c->method;
	e->data.crc32 = c->crc32;
	e->data.csize = c->csize;
	e->data.usize = c->usize;
	e->header = c->header;
	if (!ut_mtime(c->extra, c->xlen, &e->mtime))
		e->mtime = dos_time(c->dos_time, c->dos_date);
	entry_type(e, c, w->raw);
	if ((*rc = decode_name(w, nlen, c->host, e->data.flags)) < 0)
		return *rc == -EILSEQ ? (*rc = 0, "has a name CP437 cannot decode") : "";
	if (strlen(w->path) > TAR_PATH_MAX || tar_normalise(w->path) < 0)
		return "has a name that is empty, escapes the root or has a component over 255 bytes";
	e->path = e->data.name = w->path;
	e->link = "";
	if (e->type == TAR_DIR) {
		e->data.usize = e->data.csize = 0;
		return NULL;
	}
	if ((*rc = local_header(w, e, nlen)) != 0)
		return *rc < 0 ? "" : (*rc = 0, "has no local header matching it, or data running into the central directory");
	if (e->type == TAR_SYMLINK && link_target(w, e))
		return "is a symlink whose target cannot be read";
	return NULL;
}

/* One central entry at *pos: reported, or skipped with a warning. */
static int entry(struct zwalk *w, uint64_t *pos, zip_entry_fn fn, void *arg)
{
	struct zip_entry e = { .data = { .src = w->zf.src, .path = w->zf.path } };
	struct zip_cd_entry c;
	enum zip_cd_bad bad = ZIP_CD_NOT_ENTRY;
	const uint8_t *p;
	const char *why;
	size_t need = CENTRAL_LEN, len;
	int rc;

	/* the fixed part first, then the whole entry its lengths say */
	while ((rc = cd_get(w, *pos, need, &p)) == 0 &&
	       (bad = zip_cd_entry(p, need, w->shift, &c, &len)) == ZIP_CD_NOT_ENTRY &&
	       len > need)
		need = len;
	if (rc == 0 && bad == ZIP_CD_NOT_ENTRY)
		rc = -EINVAL;
	if (rc < 0) {
		if (rc == -EINVAL)
			sfs_err("%s: offset %llu: expected a zip central directory entry "
				"inside the directory [%llu, %llu)", w->zf.path,
				(unsigned long long)*pos, (unsigned long long)w->cd_off,
				(unsigned long long)w->cd_end);
		return rc;
	}
	memcpy(w->raw, c.name, c.nlen < TAR_PATH_MAX ? c.nlen : TAR_PATH_MAX);
	w->raw[c.nlen < TAR_PATH_MAX ? c.nlen : TAR_PATH_MAX] = '\0';
	why = entry_fill(w, &e, &c, bad, &rc);
	*pos += c.len;
	if (rc < 0)
		return rc;
	if (why) {
		sfs_warn("%s: member '%.200s' (central entry at offset %llu) %s: skipped",
			 w->zf.path, w->raw, (unsigned long long)(*pos - c.len), why);
		return 0;
	}
	return fn(arg, &e);
}

int zip_walk(struct source *src, const char *what, zip_entry_fn fn, void *arg)
{
	struct zwalk *w = calloc(1, sizeof(*w));
	struct zip_cd_loc loc;
	uint64_t pos, i;
	int rc = -ENOMEM;

	if (!w || !(w->buf = malloc(WINDOW)) || !(w->check = malloc(WINDOW)))
		goto out;
	w->zf = (struct zip_file){ src, what, source_stamp(src)->size, 0 };
	w->cp437 = (iconv_t)-1;
	rc = zip_locate_cd(&w->zf, &loc);
	if (rc < 0)
		goto out;
	if (loc.off > loc.end || loc.size > loc.end - loc.off ||
	    loc.count > loc.size / CENTRAL_LEN) {
		sfs_err("%s: zip central directory of %llu entries, %llu bytes at offset "
			"%llu does not fit before offset %llu", what,
			(unsigned long long)loc.count, (unsigned long long)loc.size,
			(unsigned long long)loc.off, (unsigned long long)loc.end);
		rc = -EINVAL;
		goto out;
	}
	w->cd_off = loc.off;
	w->cd_end = loc.off + loc.size;
	w->shift = loc.shift;
	for (i = 0, pos = loc.off; rc >= 0 && i < loc.count; i++) {
		rc = entry(w, &pos, fn, arg);
		if (rc > 0)
			break;
	}
out:
	if (w && w->cp437 != (iconv_t)-1)
		iconv_close(w->cp437);
	if (w) {
		free(w->buf);
		free(w->check);
	}
	free(w);
	return rc;
}
