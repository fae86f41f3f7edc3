/*
 * devkit.c - ILSVRC2012 labels from the devkit tarball (see devkit.h).
 *
 * The tarball is small (2.5 MB), so both members are read whole into memory
 * with libarchive and parsed there; libarchive reads the source through
 * callbacks over source_pread (a local file or a URL alike).  Not used
 * while mounted: the layout copies what it needs into its index.
 */
#include "formats/devkit.h"
#include "formats/mat5.h"
#include "io/source.h"
#include "log.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_SUFFIX "data/meta.mat"
#define TRUTH_SUFFIX "data/ILSVRC2012_validation_ground_truth.txt"
/* Both members are read whole; the real meta.mat is 2.5 MB and the ground
 * truth 0.3 MB.  The cap also bounds what parsing meta.mat may take
 * (MAT5_BUDGET_RATIO x its size): a .tar.gz inflates ~1000:1, so without it
 * a 64 KiB tarball could hand mat5 a 64 MiB member. */
#define MEMBER_MAX (16u << 20)

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

/* the current member, whole, at most MEMBER_MAX bytes */
static int read_member(struct archive *a, const char *what, const char *name,
		       char **out, size_t *outlen)
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
			sfs_err("%s: %s: %s", what, name, archive_error_string(a));
			free(buf);
			return -EIO;
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

/* What libarchive reads the tarball through: the source and a position. */
struct feed {
	struct source *src;
	uint64_t pos;
	char buf[1 << 16];
};

static la_ssize_t feed_read(struct archive *a, void *arg, const void **out)
{
	struct feed *f = arg;
	ssize_t n = source_pread(f->src, f->buf, sizeof(f->buf), f->pos);

	if (n < 0) {
		archive_set_error(a, (int)-n, "offset %llu: %s",
				  (unsigned long long)f->pos, strerror((int)-n));
		return -1;
	}
	f->pos += (uint64_t)n;
	*out = f->buf;
	return n;
}

/* past the end is allowed: the next read then gives 0 bytes */
static la_int64_t feed_skip(struct archive *a, void *arg, la_int64_t n)
{
	struct feed *f = arg;

	f->pos += (uint64_t)n;
	return n;
}

static la_int64_t feed_seek(struct archive *a, void *arg, la_int64_t off,
			    int whence)
{
	struct feed *f = arg;
	int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)f->pos :
		       (int64_t)source_stamp(f->src)->size;

	if (off < -base)
		return ARCHIVE_FATAL;
	f->pos = (uint64_t)(base + off);
	return (la_int64_t)f->pos;
}

/* both members of the tarball, by suffix */
static int read_members(struct source *src, char **meta, size_t *mlen,
			char **truth, size_t *tlen)
{
	const char *path = source_name(src);
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	struct feed *f = malloc(sizeof(*f));
	int rc = -ENOMEM, r;

	if (!a || !f)
		goto out;
	f->src = src;
	f->pos = 0;
	/* the devkit ships as .tar.gz; other decoders size their memory from
	 * the header (xz asked for 128 MiB from a 19-byte input) */
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_none(a);
	archive_read_support_format_tar(a);
	archive_read_set_read_callback(a, feed_read);
	archive_read_set_skip_callback(a, feed_skip);
	archive_read_set_seek_callback(a, feed_seek);
	archive_read_set_callback_data(a, f);
	rc = -EIO;
	if (archive_read_open1(a) != ARCHIVE_OK) {
		sfs_err("%s: %s", path, archive_error_string(a));
		goto out;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);

		rc = 0;
		if (name && !*meta && has_suffix(name, META_SUFFIX))
			rc = read_member(a, path, name, meta, mlen);
		else if (name && !*truth && has_suffix(name, TRUTH_SUFFIX))
			rc = read_member(a, path, name, truth, tlen);
		if (rc)
			goto out;
		if (*meta && *truth)
			break;
	}
	rc = 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_EOF) {
		sfs_err("%s: %s", path, archive_error_string(a));
		rc = -EIO;
	} else if (!*meta) {
		sfs_err("%s: no member " META_SUFFIX, path);
		rc = -ENOENT;
	}
out:
	if (a)
		archive_read_free(a);
	free(f);
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
	uint32_t lo = 0, hi = dk->nclasses;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(dk->wnid[mid], wnid);

		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
