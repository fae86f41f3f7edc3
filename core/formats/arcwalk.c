/*
 * arcwalk.c - cpio, ar and ISO 9660 members in place, through libarchive
 * (see arcwalk.h): its reader over source_pread (io/codecs/arxread.h), the
 * members turned into tar members, and each file's data offset found and
 * checked against the bytes libarchive reads.
 *
 * Not for: archives whose data is compressed (io/codecs/arxsource.c),
 * tars (tar.c), zips (zipwalk.c).
 */
#include "formats/arcwalk.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "io/source.h"
#include "io/codecs/arxread.h"

#define ISO_MAGIC_AT 32769      /* "CD001" of the primary volume descriptor */

struct walk {
	struct archive *a;
	struct arxread rd;
	struct source *src;
	const char *what;
	tar_member_fn fn;
	void *arg;
	uint64_t n;             /* members reported */
	/* hard links without data, as "path\0target" (newc: the data comes
	 * with the last name, and the earlier names must follow it there) */
	struct arxlinks links;
	int links_full;         /* ARXLINKS_MAX reached (said) */
	unsigned char chk[ARC_CHECK];
	char path[TAR_PATH_MAX + 1], link[TAR_PATH_MAX + 1];
};

/* Whether to read an ISO 9660 image's magic, 32 KiB in: always for a
 * local file that has 32 KiB; a URL's name must say it (each look is a
 * request, and an empty tar's first block is zeros too). */
static int iso_worth_a_look(struct source *src, ssize_t head)
{
	const char *name = source_name(src);
	size_t n = strlen(name);

	if (head < TAR_BLOCK)
		return 0;
	if (source_is_remote(src))
		return n > 4 && !strcmp(name + n - 4, ".iso");
	return 1;
}

int arc_sniff(struct source *src)
{
	unsigned char h[TAR_BLOCK];
	ssize_t got = source_pread(src, h, sizeof(h), 0);

	if (got < 0)
		return (int)got;
	if (got == TAR_BLOCK && tar_header_ok(h))
		return 0;
	if (got >= 6 && (!memcmp(h, "070701", 6) || !memcmp(h, "070702", 6) ||
			 !memcmp(h, "070707", 6)))
		return 1;
	if (got >= 2 && ((h[0] == 0xc7 && h[1] == 0x71) ||
			 (h[0] == 0x71 && h[1] == 0xc7)))
		return 1;
	if (got >= 8 && !memcmp(h, "!<arch>\n", 8))
		return 1;
	if (!iso_worth_a_look(src, got))
		return 0;
	got = source_pread(src, h, 5, ISO_MAGIC_AT);
	if (got < 0)
		return (int)got;
	return got == 5 && !memcmp(h, "CD001", 5);
}

/* Copies name into buf, normalised by the tar rules: 0, or -1 (warned;
 * not for a directory "." or "/": the root itself). */
static int normal_name(struct walk *w, char *buf, const char *name,
		       const char *whose, int dir)
{
	int rc;

	if (!name || strlen(name) > TAR_PATH_MAX) {
		sfs_warn("%s: a member%s has no name or one over %d bytes: skipped",
			 w->what, whose, TAR_PATH_MAX);
		return -1;
	}
	strcpy(buf, name);
	if ((rc = tar_normalise(buf)) == -ENOENT && dir)
		return -1;
	if (rc < 0) {
		sfs_warn("%s: member '%.200s'%s leaves the archive's root or has "
			 "no name: skipped", w->what, name, whose);
		return -1;
	}
	return 0;
}

/*
 * Where the data of the entry just read lies in the source: *off, checked
 * against libarchive's bytes for its first ARC_CHECK bytes.  0; 1 when
 * they differ (not stored as they are); -EBADMSG when libarchive failed
 * on the data (damage: the member keeps its offset, reads past the end
 * give EIO).
 */
static int locate(struct walk *w, uint64_t size, uint64_t *off)
{
	int64_t at = archive_filter_bytes(w->a, 0);
	uint64_t done = 0;
	const void *buf;
	size_t len, n;
	la_int64_t doff;
	int r;

	if (at < 0)
		return 1;
	*off = (uint64_t)at;
	while (done < ARC_CHECK && done < size) {
		r = archive_read_data_block(w->a, &buf, &len, &doff);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return -EBADMSG;
		if (doff < 0 || (uint64_t)doff != done)
			return 1;
		n = len < ARC_CHECK - done ? len : ARC_CHECK - done;
		if (source_pread(w->src, w->chk, n, *off + done) != (ssize_t)n ||
		    memcmp(w->chk, buf, n))
			return 1;
		done += len;
	}
	return 0;
}

/* A file member: its offset, then fn. */
static int file_member(struct walk *w, struct archive_entry *e,
		       struct tar_member *m)
{
	int r;

	if (!archive_entry_size_is_set(e)) {
		sfs_warn("%s: member '%s' has no size: skipped", w->what, m->path);
		return 0;
	}
	m->type = TAR_FILE;
	m->size = m->stored = (uint64_t)archive_entry_size(e);
	r = locate(w, m->size, &m->offset);
	if (r == 1) {
		sfs_warn("%s: member '%s' is not stored as it reads (compressed in "
			 "the image?): skipped", w->what, m->path);
		return 0;
	}
	if (r < 0)
		sfs_warn("%s: member '%s' is damaged (%s): listed, its reads give "
			 "EIO where its bytes are missing", w->what, m->path,
			 arxread_why(w->a));
	w->n++;
	return w->fn(w->arg, m);
}

/* Keeps hard link path -> target (both normalised) for data_link. */
static int keep_link(struct walk *w, const char *path, const char *target)
{
	int rc = arxlinks_keep(&w->links, path, target);

	if (rc == 1 && !w->links_full++)
		sfs_warn("%s: over %u hard links without data: those after keep "
			 "the data their target had", w->what, ARXLINKS_MAX);
	return rc < 0 ? rc : 0;
}

/* The kept links to target, now to `to`: reported again (and dropped). */
static int relink(struct walk *w, const char *target, struct tar_member *l,
		  const char *to)
{
	char *r;
	int rc = 0;

	while (rc == 0 && (r = arxlinks_take(&w->links, target))) {
		l->path = r;
		l->link = to;
		rc = w->fn(w->arg, l);
		free(r);
	}
	return rc;
}

/*
 * A hard link that carries the data (cpio: newc stores it with the last
 * name, odc with every name): the file at its own path, then its target
 * path and the earlier names linked to it as hard links to it, so that
 * all names are one file with the data, as bsdtar -x makes them (the
 * later entry of a path wins).
 */
static int data_link(struct walk *w, struct archive_entry *e,
		     struct tar_member *m, const char *hl)
{
	uint64_t before = w->n;
	struct tar_member l = *m;
	int rc;

	if (normal_name(w, w->link, hl, " (a hard link's target)", 0) < 0)
		return 0;
	rc = file_member(w, e, m);
	if (rc || w->n == before || !strcmp(w->link, w->path))
		return rc;
	l.type = TAR_HARDLINK;
	l.path = w->link;
	l.link = w->path;
	w->n++;
	rc = w->fn(w->arg, &l);
	if (rc == 0)
		rc = relink(w, w->link, &l, w->path);
	/* odc repeats the data with every name: a later one moves this too */
	return rc ? rc : keep_link(w, w->path, w->link);
}

/* One entry as a tar member (or skipped, warned): 0 or fn's return. */
static int member(struct walk *w, struct archive_entry *e)
{
	const char *hl = archive_entry_hardlink(e), *sl;
	mode_t t = archive_entry_filetype(e);
	int rc;
	struct tar_member m = { .link = "", .mode = archive_entry_perm(e),
				.mtime = archive_entry_mtime(e) };

	if (normal_name(w, w->path, archive_entry_pathname(e), "", t == AE_IFDIR) < 0)
		return 0;
	m.path = w->path;
	m.header = m.resume = (uint64_t)archive_read_header_position(w->a);
	if (hl && archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
		return data_link(w, e, &m, hl);
	} else if (hl) {
		if (normal_name(w, w->link, hl, " (a hard link's target)", 0) < 0)
			return 0;
		m.type = TAR_HARDLINK;
		m.link = w->link;
		if ((rc = keep_link(w, w->path, w->link)) < 0)
			return rc;
	} else if (t == AE_IFREG) {
		return file_member(w, e, &m);
	} else if (t == AE_IFDIR) {
		m.type = TAR_DIR;
	} else if (t == AE_IFLNK && (sl = archive_entry_symlink(e))) {
		if (strlen(sl) > TAR_PATH_MAX)
			return 0;
		m.type = TAR_SYMLINK;
		m.link = strcpy(w->link, sl);
	} else {
		return 0;	/* devices, FIFOs, sockets: as the tar walk */
	}
	w->n++;
	return w->fn(w->arg, &m);
}

/* The walk's end at entry status r: 0, -EBADMSG or -EINVAL (said). */
static int walk_end(struct walk *w, int r)
{
	if (r == ARCHIVE_EOF)
		return 0;
	if (!w->n) {
		sfs_err("%s: not an archive samplefs reads: libarchive stops at "
			"byte %llu: %s", w->what, (unsigned long long)w->rd.pos,
			arxread_why(w->a));
		return -EINVAL;
	}
	sfs_warn("%s: damaged near byte %llu (%s): keeping the %llu members "
		 "before", w->what, (unsigned long long)w->rd.pos,
		 arxread_why(w->a), (unsigned long long)w->n);
	return -EBADMSG;
}

int arc_walk(struct source *src, const char *what, tar_member_fn fn, void *arg)
{
	struct archive_entry *e;
	struct walk *w = calloc(1, sizeof(*w));
	int rc = -ENOMEM, r;

	if (!w || !(w->a = archive_read_new()))
		goto out;
	w->src = src;
	w->what = what;
	w->fn = fn;
	w->arg = arg;
	archive_read_support_format_cpio(w->a);
	archive_read_support_format_ar(w->a);
	archive_read_support_format_iso9660(w->a);
	if (arxread_open(&w->rd, w->a, src, NULL) != ARCHIVE_OK) {
		rc = walk_end(w, ARCHIVE_FATAL);
		goto out;
	}
	rc = 0;
	while (rc == 0) {
		r = archive_read_next_header(w->a, &e);
		if (r < ARCHIVE_WARN || r == ARCHIVE_EOF) {
			rc = walk_end(w, r);
			break;
		}
		if (r == ARCHIVE_WARN)	/* libarchive skipped bytes to a header */
			sfs_warn("%s: damaged at byte %llu (%s): what was there "
				 "is skipped", w->what, (unsigned long long)
				 archive_read_header_position(w->a), arxread_why(w->a));
		rc = member(w, e);
	}
out:
	if (w && w->a)
		archive_read_free(w->a);
	if (w) {
		arxread_fini(&w->rd);
		arxlinks_free(&w->links);
	}
	free(w);
	return rc;
}
