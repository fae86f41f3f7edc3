/*
 * devkit.c - ILSVRC2012 labels from the devkit tarball (see devkit.h).
 *
 * The tarball is small (2.5 MB), so both members are read whole into memory
 * with libarchive and parsed there; libarchive reads the source through
 * callbacks over source_pread (a local file or a URL alike).  The gzip layer
 * is inflated here, not by libarchive, so that every byte libarchive walks
 * (members skipped, headers, sparse maps) counts against one bound.  Not
 * used while mounted: the layout copies what it needs into its index.
 */
#include "formats/devkit.h"
#include "formats/mat5.h"
#include "io/source.h"
#include "log.h"
#include "search.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define META_SUFFIX "data/meta.mat"
#define TRUTH_SUFFIX "data/ILSVRC2012_validation_ground_truth.txt"
/* Both members are read whole; the real meta.mat is 2.5 MB and the ground
 * truth 0.3 MB.  The cap also bounds what parsing meta.mat may take
 * (MAT5_BUDGET_RATIO x its size): a .tar.gz inflates ~1000:1, so without it
 * a 64 KiB tarball could hand mat5 a 64 MiB member. */
#define MEMBER_MAX (16u << 20)
/* What the whole tarball may inflate to, members skipped included: skipping
 * costs inflating too, at up to 1032:1 (a 2 MB .tar.gz holding 2 GiB of
 * zeros took 5 s to walk; gzipped once more it is 5 KB).  The real one
 * inflates to a few MB; both members at MEMBER_MAX fit twice over. */
#define INFLATED_MAX (4 * MEMBER_MAX)

struct leaf {
	uint32_t id;
	const char *wnid;
	const char *words;
};

static int cmp_leaf(const void *a, const void *b)
{
	return strcmp(((const struct leaf *)a)->wnid, ((const struct leaf *)b)->wnid);
}

/* A leaf's WNID names a directory (train/<wnid>/, val/<wnid>/) and a line
 * of classes.txt: letters, digits, '_' and '-' only, so that '/', "." and
 * "..", tabs or newlines cannot reach the tree.  Real ones are n01440764. */
static int wnid_ok(const char *w)
{
	size_t n = strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789_-");

	return !w[n] && n >= 2 && n < DEVKIT_WNID_MAX;
}

/* A synset's ID, WNID and num_children; 1 if it is a leaf, 0 if not. */
static int read_synset(const struct mat5_array *s, uint64_t i, const char *what,
		       struct leaf *out)
{
	double id, nch;

	if (mat5_scalar(mat5_field(s, i, "ILSVRC2012_ID"), &id) ||
	    mat5_scalar(mat5_field(s, i, "num_children"), &nch) ||
	    !(out->wnid = mat5_string(mat5_field(s, i, "WNID")))) {
		sfs_err("%s: synsets(%llu): expected numeric ILSVRC2012_ID and num_children and a char WNID",
			what, (unsigned long long)i + 1);
		return -EBADMSG;
	}
	if (nch != 0)
		return 0;
	if (!(id >= 1 && id <= DEVKIT_MAX_CLASSES && id == floor(id))) {
		sfs_err("%s: synsets(%llu): expected an ILSVRC2012_ID in 1..%u",
			what, (unsigned long long)i + 1, DEVKIT_MAX_CLASSES);
		return -EBADMSG;
	}
	out->id = (uint32_t)id;
	if (!wnid_ok(out->wnid)) {
		sfs_err("%s: synsets(%llu), ILSVRC2012_ID %u: expected a WNID like n01440764 "
			"(2 to %d letters, digits, '_' or '-'), not '%.32s'", what,
			(unsigned long long)i + 1, out->id, DEVKIT_WNID_MAX - 1, out->wnid);
		return -EBADMSG;
	}
	out->words = mat5_string(mat5_field(s, i, "words"));
	if (!out->words)
		out->words = "";
	return 1;
}

/* leaves sorted by WNID -> dk; duplicates of either key are an error */
static int fill_classes(struct leaf *lv, uint32_t n, const char *what,
			struct devkit *dk)
{
	uint32_t i;

	qsort(lv, n, sizeof(*lv), cmp_leaf);
	dk->max_id = 0;
	for (i = 0; i < n; i++)
		if (lv[i].id > dk->max_id)
			dk->max_id = lv[i].id;
	dk->wnid = calloc(n, sizeof(*dk->wnid));
	dk->words = calloc(n, sizeof(char *));
	dk->id_label = malloc(((size_t)dk->max_id + 1) * sizeof(uint32_t));
	if (!dk->wnid || !dk->words || !dk->id_label)
		return -ENOMEM;
	memset(dk->id_label, 0xff, ((size_t)dk->max_id + 1) * sizeof(uint32_t));
	for (i = 0; i < n; i++) {
		if ((i && !strcmp(lv[i].wnid, lv[i - 1].wnid)) ||
		    dk->id_label[lv[i].id] != UINT32_MAX) {
			sfs_err("%s: synsets: duplicate leaf WNID %s or ILSVRC2012_ID %u",
				what, lv[i].wnid, lv[i].id);
			return -EBADMSG;
		}
		strcpy(dk->wnid[i], lv[i].wnid);
		dk->words[i] = strdup(lv[i].words);
		if (!dk->words[i])
			return -ENOMEM;
		dk->id_label[lv[i].id] = i;
		dk->nclasses = i + 1;
	}
	return 0;
}

int devkit_parse_meta(const uint8_t *buf, size_t len, const char *what,
		      struct devkit *dk)
{
	struct mat5_array *s = NULL;
	struct leaf *lv = NULL;
	uint32_t n = 0;
	uint64_t i;
	int rc;

	memset(dk, 0, sizeof(*dk));
	rc = mat5_read_var(buf, len, what, "synsets", &s);
	if (rc == -ENOENT)
		sfs_err("%s: no variable `synsets'", what);
	if (rc)
		goto out;
	rc = -EBADMSG;
	if (s->cls != MAT5_STRUCT || !s->numel || s->numel > DEVKIT_MAX_CLASSES * 4) {
		sfs_err("%s: `synsets' is not a non-empty struct array", what);
		goto out;
	}
	rc = -ENOMEM;
	lv = calloc(s->numel, sizeof(*lv));
	if (!lv)
		goto out;
	for (i = 0; i < s->numel; i++) {
		rc = read_synset(s, i, what, &lv[n]);
		if (rc < 0)
			goto out;
		n += rc;
	}
	rc = -EBADMSG;
	if (!n) {
		sfs_err("%s: synsets: no leaf classes (num_children == 0)", what);
		goto out;
	}
	rc = fill_classes(lv, n, what, dk);
out:
	free(lv);
	mat5_free(s);
	if (rc)
		devkit_free(dk);
	return rc;
}

int devkit_parse_truth(const char *text, size_t len, const char *what,
		       struct devkit *dk)
{
	size_t pos = 0, cap = 0;
	uint32_t *v = NULL;
	int rc = -EBADMSG;

	dk->nval = 0;
	while (pos < len) {
		size_t start = pos;
		unsigned long id = 0;

		while (pos < len && text[pos] >= '0' && text[pos] <= '9' && id <= DEVKIT_MAX_CLASSES)
			id = id * 10 + (unsigned long)(text[pos++] - '0');
		if (pos < len && text[pos] == '\r')
			pos++;
		if (pos == start && pos < len && text[pos] == '\n' && pos + 1 == len)
			break;	/* a trailing empty line */
		if (pos == start || (pos < len && text[pos] != '\n') ||
		    id > dk->max_id || dk->id_label[id] == UINT32_MAX) {
			sfs_err("%s: line %u (offset %zu): expected the ILSVRC2012_ID of a leaf class",
				what, dk->nval + 1, start);
			goto out;
		}
		pos++;
		if (dk->nval == cap) {
			uint32_t *nv;

			rc = -EFBIG;
			if (cap >= DEVKIT_MAX_VAL)
				goto out;
			cap = cap ? cap * 2 : 65536;
			rc = -ENOMEM;
			if (!(nv = realloc(v, cap * sizeof(*v))))
				goto out;
			v = nv;
			rc = -EBADMSG;
		}
		v[dk->nval++] = dk->id_label[id];
	}
	free(dk->val_label);
	dk->val_label = v;
	v = NULL;
	rc = 0;
out:
	free(v);
	if (rc)
		dk->nval = 0;
	return rc;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf) && (n == m || s[n - m - 1] == '/');
}

/*
 * What libarchive reads the tarball through: the source and a position, and
 * for a .tar.gz the inflater, whose output is counted (INFLATED_MAX).
 * Concatenated gzip members are one stream, as gzip -d reads them; bytes
 * after the last member that start no other (tape padding) are ignored.
 */
struct feed {
	struct source *src;
	uint64_t pos;		/* of the next source byte to read */
	int started;		/* the first block is read: gz is known */
	int gz;			/* the source is gzip: inflated here */
	int gz_end;		/* at the end of a gzip member */
	z_stream zs;
	uint64_t out;		/* inflated bytes handed to libarchive */
	int err;		/* why reading failed (an errno), or 0 */
	char msg[256];
	uint8_t in[1 << 16];
	uint8_t buf[1 << 16];
};

static la_ssize_t feed_fail(struct archive *a, struct feed *f, int err,
			    const char *fmt, ...) SFS_PRINTF(4, 5);

/* Keeps why reading failed, for walk_error: libarchive replaces its own
 * error with "Truncated input file" when a skip fails. */
static la_ssize_t feed_fail(struct archive *a, struct feed *f, int err,
			    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	f->err = err;
	archive_set_error(a, err, "%s", f->msg);
	return -1;
}

/* What went wrong after libarchive failed: the feed's reason and -errno
 * if it had one (-EFBIG past INFLATED_MAX), else libarchive's and -EIO. */
static const char *walk_error(struct archive *a, const struct feed *f, int *rc)
{
	*rc = f->err ? -f->err : -EIO;
	return f->err ? f->msg : archive_error_string(a);
}

/* the next source bytes into f->in; 0 at the end of the source */
static la_ssize_t feed_fill(struct archive *a, struct feed *f)
{
	ssize_t n = source_pread(f->src, f->in, sizeof(f->in), f->pos);

	if (n < 0)
		return feed_fail(a, f, (int)-n, "offset %llu: %s", (unsigned long long)f->pos,
				 strerror((int)-n));
	f->pos += (uint64_t)n;
	f->zs.next_in = f->in;
	f->zs.avail_in = (uInt)n;
	return n;
}

/* Some inflated bytes (0 at the end of the gzip stream), never more than
 * INFLATED_MAX in all. */
static la_ssize_t feed_inflate(struct archive *a, struct feed *f)
{
	z_stream *zs = &f->zs;
	la_ssize_t n;
	int zr;

	zs->next_out = f->buf;
	zs->avail_out = sizeof(f->buf);
	while (zs->avail_out == sizeof(f->buf)) {
		if (!zs->avail_in && (n = feed_fill(a, f)) <= 0) {
			if (n < 0 || f->gz_end)
				return n;
			return feed_fail(a, f, EBADMSG, "offset %llu: the gzip stream ends early "
					 "(expected more deflate data)", (unsigned long long)f->pos);
		}
		if (f->gz_end) {
			if (zs->next_in[0] != 0x1f)
				return 0;
			inflateReset(zs);
			f->gz_end = 0;
		}
		zr = inflate(zs, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			f->gz_end = 1;
		else if (zr != Z_OK && zr != Z_BUF_ERROR)
			return feed_fail(a, f, EBADMSG, "offset %llu: gzip: %s",
					 (unsigned long long)(f->pos - zs->avail_in),
					 zs->msg ? zs->msg : "inflate failed");
	}
	n = (la_ssize_t)(sizeof(f->buf) - zs->avail_out);
	if (f->out + (uint64_t)n > INFLATED_MAX)
		return feed_fail(a, f, EFBIG, "inflated offset %llu: expected " META_SUFFIX
				 " and the ground truth within %u MiB (the real devkit "
				 "inflates to a few MB)",
				 (unsigned long long)(f->out + (uint64_t)n), INFLATED_MAX >> 20);
	if (!f->out && n >= 2 && f->buf[0] == 0x1f && f->buf[1] == 0x8b)
		return feed_fail(a, f, EBADMSG, "inflated offset 0: a gzip inside the gzip; "
				 "expected a tar (one layer of gzip)");
	f->out += (uint64_t)n;
	return n;
}

/* The first block: gzip's magic makes the rest inflated, else it is the
 * tar as it is (and so handed on). */
static la_ssize_t feed_start(struct archive *a, struct feed *f, const void **out)
{
	la_ssize_t n = feed_fill(a, f);

	f->started = 1;
	if (n < 2 || f->in[0] != 0x1f || f->in[1] != 0x8b) {
		*out = f->in;
		return n;
	}
	if (inflateInit2(&f->zs, 16 + MAX_WBITS) != Z_OK)
		return feed_fail(a, f, ENOMEM, "offset 0: no memory to inflate");
	f->gz = 1;
	return feed_inflate(a, f);
}

static la_ssize_t feed_read(struct archive *a, void *arg, const void **out)
{
	struct feed *f = arg;
	la_ssize_t n;

	*out = f->buf;
	if (!f->started)
		return feed_start(a, f, out);
	if (f->gz)
		return feed_inflate(a, f);
	n = source_pread(f->src, f->buf, sizeof(f->buf), f->pos);
	if (n < 0)
		return feed_fail(a, f, (int)-n, "offset %llu: %s", (unsigned long long)f->pos,
				 strerror((int)-n));
	f->pos += (uint64_t)n;
	return n;
}

/* Past the end is allowed: the next read then gives 0 bytes.  Inflated
 * bytes cannot be skipped: 0 makes libarchive read (and count) them. */
static la_int64_t feed_skip(struct archive *a, void *arg, la_int64_t n)
{
	struct feed *f = arg;

	if (f->gz || !f->started)
		return 0;
	f->pos += (uint64_t)n;
	return n;
}

static la_int64_t feed_seek(struct archive *a, void *arg, la_int64_t off,
			    int whence)
{
	struct feed *f = arg;
	int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)f->pos :
		       (int64_t)source_stamp(f->src)->size;

	if (f->gz || !f->started || off < -base)
		return ARCHIVE_FATAL;
	f->pos = (uint64_t)(base + off);
	return (la_int64_t)f->pos;
}

static void feed_close(struct feed *f)
{
	if (f && f->gz)
		inflateEnd(&f->zs);
	free(f);
}

/* the current member, whole, at most MEMBER_MAX bytes */
static int read_member(struct archive *a, const struct feed *f, const char *what,
		       const char *name, char **out, size_t *outlen)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1), *nb;
	la_ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= MEMBER_MAX) {
				sfs_err("%s: %s: offset %zu: expected the end of the member "
					"(at most %u MiB; the real one is a few MB)", what, name,
					len, MEMBER_MAX >> 20);
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			if (!(nb = realloc(buf, cap + 1))) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = archive_read_data(a, buf + len, cap - len);
		if (n < 0) {
			int rc;

			sfs_err("%s: %s: %s", what, name, walk_error(a, f, &rc));
			free(buf);
			return rc;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

/* both members of the tarball, by suffix */
static int read_members(struct source *src, char **meta, size_t *mlen,
			char **truth, size_t *tlen)
{
	const char *path = source_name(src);
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	struct feed *f = calloc(1, sizeof(*f));
	char last[256] = "";
	int rc = -ENOMEM, r;

	if (!a || !f)
		goto out;
	f->src = src;
	/* plain tar only: the gzip layer is the feed's, and other decoders
	 * size their memory from the header (xz asked for 128 MiB from a
	 * 19-byte input) */
	archive_read_support_filter_none(a);
	archive_read_support_format_tar(a);
	archive_read_set_read_callback(a, feed_read);
	archive_read_set_skip_callback(a, feed_skip);
	archive_read_set_seek_callback(a, feed_seek);
	archive_read_set_callback_data(a, f);
	if (archive_read_open1(a) != ARCHIVE_OK) {
		sfs_err("%s: %s", path, walk_error(a, f, &rc));
		goto out;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);

		rc = 0;
		if (name && !*meta && has_suffix(name, META_SUFFIX))
			rc = read_member(a, f, path, name, meta, mlen);
		else if (name && !*truth && has_suffix(name, TRUTH_SUFFIX))
			rc = read_member(a, f, path, name, truth, tlen);
		if (rc)
			goto out;
		if (*meta && *truth)
			break;
		snprintf(last, sizeof(last), "%s", name ? name : "(no name)");
	}
	rc = 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_EOF) {
		const char *why = walk_error(a, f, &rc);

		sfs_err("%s: %s%s%s%s", path, *last ? "past member " : "", last,
			*last ? ": " : "", why);
	} else if (!*meta) {
		sfs_err("%s: no member " META_SUFFIX, path);
		rc = -ENOENT;
	}
out:
	if (a)
		archive_read_free(a);
	feed_close(f);
	return rc;
}

int devkit_load(struct source *src, struct devkit *dk)
{
	const char *path = source_name(src);
	char *meta = NULL, *truth = NULL, what[4096];
	size_t mlen = 0, tlen = 0;
	int rc;

	memset(dk, 0, sizeof(*dk));
	rc = read_members(src, &meta, &mlen, &truth, &tlen);
	if (rc)
		goto out;
	snprintf(what, sizeof(what), "%s: " META_SUFFIX, path);
	rc = devkit_parse_meta((const uint8_t *)meta, mlen, what, dk);
	if (rc || !truth)
		goto out;	/* no ground truth: val stays unlabelled */
	snprintf(what, sizeof(what), "%s: " TRUTH_SUFFIX, path);
	rc = devkit_parse_truth(truth, tlen, what, dk);
	if (rc)
		devkit_free(dk);
out:
	free(meta);
	free(truth);
	return rc;
}

void devkit_free(struct devkit *dk)
{
	uint32_t i;

	for (i = 0; dk->words && i < dk->nclasses; i++)
		free(dk->words[i]);
	free(dk->words);
	free(dk->wnid);
	free(dk->id_label);
	free(dk->val_label);
	memset(dk, 0, sizeof(*dk));
}

int64_t devkit_label(const struct devkit *dk, const char *wnid)
{
	uint32_t i = SFS_PARTITION_POINT(uint32_t, 0, dk->nclasses, m,
					 strcmp(dk->wnid[m], wnid) < 0);

	return i < dk->nclasses && !strcmp(dk->wnid[i], wnid) ? (int64_t)i : -1;
}
