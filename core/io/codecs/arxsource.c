/*
 * arxsource.c - archives samplefs does not read itself but libarchive
 * does, when their members' bytes lie at no offset of the file: 7-Zip and
 * RAR archives (solid, compressed), and archives compressed with compress
 * (.Z), lz4, lzip, lzma-alone or lzop.  Such a source opens as a plain tar
 * (pax) rendition of its members, made once by a pass in a thread that
 * reads the archive through source_pread (so a URL's or a bucket's
 * archive works as a local one) and writes the tar to a spill file; the
 * tar index builds from that tar as it grows (source_extent), so the tree
 * is there when the pass ends, and reads are preads of the spill file
 * (a read past what the pass has written waits for it).
 *
 * The spill file: with cache_dir=, DIR/archives/<hash of the name and
 * stamp>.tar, kept for the next mount (renamed into place when the pass
 * ended well), whole archives evicted oldest first so that the
 * directory stays within cache_dir_size=; without it, an unlinked file in
 * $TMPDIR (or /tmp), gone at unmount.  Either way a rendition larger than
 * cache_dir_size= (1 GiB by default) is refused, naming the option.
 *
 * Damage: the pass stops at the first error libarchive reports (a
 * truncated or corrupt archive), says so once naming the archive, the
 * member and libarchive's words, and the rendition ends there: the tar
 * walk keeps the members before the damage.  A damaged archive is never
 * kept in the cache.  Encrypted members are skipped with a warning.
 * Hard links that carry the data (cpio's) are written as the file, their
 * other names as links to it after (follow_data), as bsdtar -x makes them.
 * An archive libarchive cannot open at all is refused at open.
 *
 * Threads: the pass's thread writes; any thread reads (pread of the
 * spill file, waiting under the mutex for bytes not yet written).
 *
 * Not for: archives with stored members at known offsets (cpio, ar,
 * ISO 9660: formats/arcwalk.c walks them in place), tars and zips, or the
 * codecs samplefs decompresses itself with random access (zsource.c).
 */
#include "io/backend.h"
#include "io/codecs/arxread.h"
#include "io/codecs/arxsource.h"
#include "io/codecs/zsource.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "hash.h"

#define ARX_SNIFF  16

struct arx {
	struct source *in;
	int fd;                 /* the spill file */
	char *part, *final;     /* cache_dir's names, or NULL (unlinked file) */
	uint64_t limit;         /* cache_dir_size= */
	struct arxread rd;      /* the reader's callbacks over `in` */
	struct archive *a;      /* the reader, the pass's once it runs */
	struct archive_entry *first;    /* read at open, for the pass */
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t filled;        /* bytes in fd (the pass's own) */
	uint64_t written;       /* bytes of the rendition readers see: whole
				 * members only (mu) */
	int done;               /* the pass ended (mu) */
	int rc;                 /* its outcome: 0, or -errno (said) */
	atomic_int stop;        /* close asked the pass to end */
	const char *kind;       /* what the archive is, for messages */
	/* hard links written without data, "path\0target" (the pass's):
	 * cpio's data comes with a later name, which they must follow */
	struct arxlinks links;
};

/* ---- what is ours to read -------------------------------------------- */

static const struct {
	const char *kind;
	size_t off, len;
	const char *magic;
} arx_magic[] = {
	{ "a 7-Zip archive", 0, 6, "7z\xbc\xaf\x27\x1c" },
	{ "a RAR archive", 0, 6, "Rar!\x1a\x07" },
	{ "compressed with compress (.Z)", 0, 2, "\x1f\x9d" },
	{ "compressed with lz4", 0, 4, "\x04\x22\x4d\x18" },
	{ "compressed with lz4 (legacy)", 0, 4, "\x02\x21\x4c\x18" },
	{ "compressed with lzip", 0, 4, "LZIP" },
	{ "compressed with lzop", 0, 9, "\x89LZO\0\r\n\x1a\n" },
};

static const char *const arx_suffix[] = {
	".7z", ".rar", ".Z", ".lz4", ".lz", ".lzma", ".tlz", ".lzo", ".tzo",
	".taz", ".tz4",
};

/* 1 if a URL's name says it may be one of ours (remote sources are not
 * sniffed for nothing: each sniff is a request). */
static int named_ours(const char *name)
{
	size_t n = strlen(name), i, l;

	for (i = 0; i < sizeof(arx_suffix) / sizeof(arx_suffix[0]); i++) {
		l = strlen(arx_suffix[i]);
		if (n > l && !strcmp(name + n - l, arx_suffix[i]))
			return 1;
	}
	return 0;
}

const char *arxsource_kind(const unsigned char *h, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(arx_magic) / sizeof(arx_magic[0]); i++)
		if (n >= arx_magic[i].off + arx_magic[i].len &&
		    !memcmp(h + arx_magic[i].off, arx_magic[i].magic,
			    arx_magic[i].len))
			return arx_magic[i].kind;
	if (zsource_lzma_alone(h, n))
		return "compressed with lzma (lzma-alone)";
	return NULL;
}

/* ---- the writer's callback ------------------------------------------ */

/* The writer's callback: straight to the spill file (the writer does not
 * block its output, so what is written is in the file at once). */
static la_ssize_t arx_write(struct archive *w, void *arg, const void *buf,
			    size_t n)
{
	struct arx *x = arg;
	const char *p = buf;
	size_t left = n;
	ssize_t put;

	if (x->filled + n > x->limit) {
		archive_set_error(w, EFBIG, "over the cache bound");
		return -1;
	}
	while (left) {
		put = pwrite(x->fd, p, left, (off_t)(x->filled + (n - left)));
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			archive_set_error(w, put < 0 ? errno : ENOSPC,
					  "writing the spill file");
			return -1;
		}
		p += put;
		left -= (size_t)put;
	}
	x->filled += n;
	return (la_ssize_t)n;
}

/* What the pass wrote is whole members (or the end): readers may see it.
 * A member is never seen before its last byte was checked (7-Zip's CRC is
 * checked at the end of its data), so damage never shows wrong bytes. */
static void publish(struct arx *x)
{
	pthread_mutex_lock(&x->mu);
	x->written = x->filled;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* ---- the pass -------------------------------------------------------- */

/* The writer failed (the bound, the disk): said, -errno. */
static int write_failed(struct arx *x, struct archive *w, const char *what)
{
	int e = archive_errno(w);

	if (e == EFBIG)
		sfs_err("%s: %s whose members take more than %llu %s, the bound of "
			"the disk cache for archives decompressed once: raise "
			"cache_dir_size= (and give cache_dir= a disk with room)",
			what, x->kind, (unsigned long long)(x->limit >= 1u << 20 ?
			x->limit >> 20 : x->limit), x->limit >= 1u << 20 ? "MiB" :
			"bytes");
	else
		sfs_err("%s: cannot write its decompressed members to the disk "
			"cache: %s", what, arxread_why(w));
	return e > 0 && e != EIO ? -e : -ENOSPC;	/* -EIO is damage */
}

/* n zero bytes (a hole of a sparse member): 0 or -1 (the writer's error). */
static int write_zeros(struct archive *w, uint64_t n)
{
	static const char zeros[4096];
	size_t k;

	for (; n; n -= k) {
		k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
		if (archive_write_data(w, zeros, k) < 0)
			return -1;
	}
	return 0;
}

/* Copies the current entry's data, holes as zeros. */
static int copy_data(struct arx *x, struct archive *w, const char *what,
		     const char *path)
{
	const void *buf;
	size_t len;
	la_int64_t off, at = 0;
	int r;

	for (;;) {
		r = archive_read_data_block(x->a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK && atomic_load(&x->stop))
			return -EINTR;		/* unmounting: nothing to say */
		/* a warning on data is a bad checksum (7-Zip, RAR): damage */
		if (r != ARCHIVE_OK) {
			sfs_warn("%s: %s, damaged in member '%s' (%s): the members "
				 "from there on are lost", what, x->kind, path,
				 arxread_why(x->a));
			return -EIO;
		}
		if ((off > at && write_zeros(w, (uint64_t)(off - at)) < 0) ||
		    (len && archive_write_data(w, buf, len) < 0))
			return write_failed(x, w, what);
		at = off + (la_int64_t)len;
	}
}

/* Writes hard link `path` -> `to` (a later entry of a path wins). */
static int write_link(struct arx *x, struct archive *w, const char *path,
		      const char *to, const struct archive_entry *like)
{
	struct archive_entry *e = archive_entry_clone((struct archive_entry *)like);
	int r;

	if (!e)
		return -ENOMEM;
	archive_entry_copy_pathname(e, path);
	archive_entry_copy_hardlink(e, to);
	archive_entry_set_size(e, 0);
	r = archive_write_header(w, e) < ARCHIVE_WARN ||
	    archive_write_finish_entry(w) < ARCHIVE_WARN;
	archive_entry_free(e);
	return r ? write_failed(x, w, source_name(x->in)) : 0;
}

/*
 * After a hard link that carried the data was written as the file `path`:
 * its target, and the links kept to that target, written again as links
 * to it, so that every name is the one file bsdtar -x makes (cpio: newc
 * stores the data with the last name, odc with every name).
 */
static int follow_data(struct arx *x, struct archive *w, const char *path,
		       const char *target, const struct archive_entry *like)
{
	char *r;
	int rc = write_link(x, w, target, path, like);

	while (rc == 0 && (r = arxlinks_take(&x->links, target))) {
		rc = write_link(x, w, r, path, like);
		free(r);
	}
	/* past ARXLINKS_MAX a name keeps the data its target had */
	return rc ? rc : arxlinks_keep(&x->links, path, target) < 0 ? -ENOMEM : 0;
}

/* One entry's header, data and end: 0 or -errno (said). */
static int write_entry(struct arx *x, struct archive *w, struct archive_entry *e,
		       const char *what, const char *path)
{
	int r;

	if (archive_write_header(w, e) < ARCHIVE_WARN)
		return write_failed(x, w, what);
	r = copy_data(x, w, what, path);
	if (r < 0)
		return r;
	if (archive_write_finish_entry(w) < ARCHIVE_WARN)
		return write_failed(x, w, what);
	return 0;
}

/* A hard link entry: kept when it has no data; else written as the file
 * it carries, and its names follow it. */
static int hard_link(struct arx *x, struct archive *w, struct archive_entry *e,
		     const char *what, const char *path, const char *hl)
{
	char *target;
	int rc;

	if (!archive_entry_size_is_set(e) || archive_entry_size(e) <= 0) {
		rc = write_entry(x, w, e, what, path);
		return rc ? rc : arxlinks_keep(&x->links, path, hl) < 0 ? -ENOMEM : 0;
	}
	if (!(target = strdup(hl)))
		return -ENOMEM;
	archive_entry_set_hardlink(e, NULL);
	rc = write_entry(x, w, e, what, path);
	if (rc == 0 && strcmp(target, path))
		rc = follow_data(x, w, path, target, e);
	free(target);
	return rc;
}

/* One entry of the archive into the tar: 0, 1 at its end, or -errno. */
static int copy_entry(struct arx *x, struct archive *w, const char *what)
{
	struct archive_entry *e = x->first;
	const char *path, *hl;
	int r = ARCHIVE_OK;

	if (e)
		x->first = NULL;	/* read by reader_open */
	else
		r = archive_read_next_header(x->a, &e);
	if (r == ARCHIVE_EOF)
		return 1;
	if (r < ARCHIVE_WARN && atomic_load(&x->stop))
		return -EINTR;
	if (r < ARCHIVE_WARN) {
		sfs_warn("%s: %s, damaged after byte %llu of it (%s): the "
			 "members from there on are lost", what, x->kind,
			 (unsigned long long)x->rd.pos, arxread_why(x->a));
		return -EIO;
	}
	if (r == ARCHIVE_WARN)	/* libarchive skipped bytes to a header */
		sfs_warn("%s: %s, damaged (%s): what was there is skipped", what,
			 x->kind, arxread_why(x->a));
	path = archive_entry_pathname(e) ? archive_entry_pathname(e) : "?";
	if (archive_entry_is_encrypted(e)) {
		sfs_warn("%s: member '%s' is encrypted: skipped", what, path);
		return 0;
	}
	hl = archive_entry_hardlink(e);
	r = hl ? hard_link(x, w, e, what, path, hl) : write_entry(x, w, e, what, path);
	if (r == 0)
		publish(x);
	return r;
}

static void pass_end(struct arx *x, int rc)
{
	pthread_mutex_lock(&x->mu);
	x->rc = rc;
	x->done = 1;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

/* The cache file is complete: its name for the next mount. */
static void evict(const char *dir, uint64_t limit, uint64_t need);

/* The finished rendition kept under its name; then the cache's bound
 * again, now that its size is known (the room made before the pass was
 * a guess: the compressed size), the oldest archives going first. */
static void keep_cached(struct arx *x)
{
	const char *slash;
	char *dir;

	if (!x->part)
		return;
	if (rename(x->part, x->final) < 0) {
		sfs_warn("%s: cannot keep it in the disk cache as %s: %s",
			 source_name(x->in), x->final, strerror(errno));
	} else if ((slash = strrchr(x->final, '/')) &&
		   (dir = strndup(x->final, (size_t)(slash - x->final)))) {
		evict(dir, x->limit, 0);
		free(dir);
	}
	free(x->part);
	x->part = NULL;
}

static void *pass(void *arg)
{
	struct arx *x = arg;
	struct archive *w = archive_write_new();
	const char *what = source_name(x->in);
	int rc = -ENOMEM;

	if (!w)
		goto out;
	archive_write_set_format_pax_restricted(w);
	archive_write_set_bytes_per_block(w, 0);	/* no buffer: see arx_write */
	if (archive_write_open2(w, x, NULL, arx_write, NULL, NULL) != ARCHIVE_OK) {
		rc = write_failed(x, w, what);
		goto out;
	}
	while ((rc = copy_entry(x, w, what)) == 0)
		;
	if (rc == 1 && archive_write_close(w) != ARCHIVE_OK)
		rc = write_failed(x, w, what);
	else if (rc == 1)
		rc = 0;
	if (rc == 0)
		publish(x);	/* the end blocks */
out:
	if (w)
		archive_write_free(w);
	if (rc == 0)
		keep_cached(x);
	pass_end(x, rc);
	return NULL;
}

/* ---- the spill file -------------------------------------------------- */

/* 1 if name is the part file of a mount that is gone ("X.tar.part<pid>",
 * no such process: killed before its pass ended), which nothing removes
 * but this. */
static int dead_part(const char *name)
{
	const char *p = strstr(name, ".tar.part");
	char *end;
	long pid;

	if (!p)
		return 0;
	pid = strtol(p + 9, &end, 10);
	return pid > 0 && *end == '\0' && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* Removes whole archives of dir, oldest first, until what is left and
 * `need` fit in `limit`; and the part files of dead mounts. */
static void evict(const char *dir, uint64_t limit, uint64_t need)
{
	struct ent { char name[64]; time_t t; uint64_t size; } *v = NULL, *q;
	size_t n = 0, cap = 0, i, old;
	uint64_t total = 0;
	struct dirent *d;
	struct stat st;
	char p[4096 + 80];
	DIR *dh = opendir(dir);

	if (!dh)
		return;
	while ((d = readdir(dh))) {
		if (dead_part(d->d_name)) {
			snprintf(p, sizeof(p), "%s/%s", dir, d->d_name);
			(void)unlink(p);
			continue;
		}
		/* whole renditions only: another mount's .part is in use */
		if (strlen(d->d_name) >= sizeof(v->name) || d->d_name[0] == '.' ||
		    strlen(d->d_name) < 4 ||
		    strcmp(d->d_name + strlen(d->d_name) - 4, ".tar"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, d->d_name);
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			if (!(q = realloc(v, cap * sizeof(*v))))
				break;
			v = q;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", d->d_name);
		v[n].t = st.st_mtime;
		v[n].size = (uint64_t)st.st_size;
		total += v[n++].size;
	}
	closedir(dh);
	while (n && total + need > limit) {
		for (old = 0, i = 1; i < n; i++)
			if (v[i].t < v[old].t)
				old = i;
		snprintf(p, sizeof(p), "%s/%s", dir, v[old].name);
		if (unlink(p) == 0)
			total -= v[old].size;
		v[old] = v[--n];
	}
	free(v);
}

/* An unlinked spill file in dir: O_TMPFILE, else made and unlinked (a
 * file system without O_TMPFILE).  0 or -errno. */
static int spill_tmp(struct arx *x, const char *dir)
{
	char *p;

	x->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (x->fd >= 0)
		return 0;
	if (asprintf(&p, "%s/samplefs-archive.XXXXXX", dir) < 0)
		return -ENOMEM;
	x->fd = mkostemp(p, O_CLOEXEC);
	if (x->fd >= 0)
		unlink(p);
	free(p);
	return x->fd < 0 ? -errno : 0;
}

/* Opens the spill file: the cached rendition (1: the pass is not needed),
 * a new one in the cache (0), or an unlinked one in $TMPDIR (0). */
static int spill_open(struct arx *x, const struct source_config *cfg)
{
	const struct source_stamp *st = source_stamp(x->in);
	const char *tmp = getenv("TMPDIR");
	char dir[4096], name[64];
	uint64_t h = SFS_FNV_OFFSET;
	struct stat sb;

	if (!cfg || !cfg->cache_dir)
		return spill_tmp(x, tmp && *tmp ? tmp : "/tmp");
	snprintf(dir, sizeof(dir), "%s/archives", cfg->cache_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	h = sfs_fnv1a(h, x->in->name, strlen(x->in->name) + 1);
	h = sfs_fnv1a(h, &st->size, sizeof(st->size));
	h = sfs_fnv1a(h, &st->mtime_ns, sizeof(st->mtime_ns));
	h = sfs_fnv1a(h, st->etag, strlen(st->etag));
	snprintf(name, sizeof(name), "%016llx.tar", (unsigned long long)h);
	if (asprintf(&x->final, "%s/%s", dir, name) < 0) {
		x->final = NULL;
		return -ENOMEM;
	}
	x->fd = open(x->final, O_RDONLY | O_CLOEXEC);
	if (x->fd >= 0 && fstat(x->fd, &sb) == 0 && sb.st_size > 0 &&
	    sb.st_size % 512 == 0) {
		(void)utimensat(AT_FDCWD, x->final, NULL, 0);	/* recently used */
		x->written = x->filled = (uint64_t)sb.st_size;
		return 1;
	}
	if (x->fd >= 0)
		close(x->fd);
	evict(dir, x->limit, st->size);
	if (asprintf(&x->part, "%s.part%d", x->final, (int)getpid()) < 0) {
		x->part = NULL;
		return -ENOMEM;
	}
	x->fd = open(x->part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return x->fd < 0 ? -errno : 0;
}

/* ---- the backend ----------------------------------------------------- */

static void arx_free(struct arx *x)
{
	if (!x)
		return;
	if (x->started) {
		atomic_store(&x->stop, 1);
		pthread_join(x->th, NULL);
	}
	if (x->a)
		archive_read_free(x->a);
	if (x->fd >= 0)
		close(x->fd);
	if (x->part)
		unlink(x->part);
	free(x->part);
	free(x->final);
	arxread_fini(&x->rd);
	arxlinks_free(&x->links);
	source_close(x->in);
	pthread_mutex_destroy(&x->mu);
	pthread_cond_destroy(&x->cv);
	free(x);
}

/* Waits until the rendition has `want` bytes or is complete. */
static uint64_t wait_for(struct arx *x, uint64_t want, int *done)
{
	uint64_t have;

	pthread_mutex_lock(&x->mu);
	while (!x->done && x->written < want)
		pthread_cond_wait(&x->cv, &x->mu);
	have = x->written;
	*done = x->done;
	pthread_mutex_unlock(&x->mu);
	return have;
}

static ssize_t arx_pread(struct source *s, void *buf, size_t n, uint64_t off)
{
	struct arx *x = s->priv;
	int done;
	uint64_t have = wait_for(x, off + n, &done);
	ssize_t got;

	/* a pass that met damage ended the rendition at the last whole
	 * member (said): the tar walk keeps what is before */
	if (off >= have)
		return done && x->rc && x->rc != -EIO ? x->rc : 0;
	if (n > have - off)
		n = (size_t)(have - off);
	got = pread(x->fd, buf, n, (off_t)off);
	return got < 0 ? -errno : got;
}

static int arx_extent(struct source *s, uint64_t want, uint64_t *have)
{
	struct arx *x = s->priv;
	int done;

	*have = wait_for(x, want, &done);
	/* over the bound, or the disk failed (said): the build fails; damage
	 * (-EIO, said) ends the rendition */
	if (done && x->rc && x->rc != -EIO)
		return want ? x->rc : 0;	/* 0: the walk asks again, and fails */
	if (done)
		s->stamp.size = *have;
	return done;
}

static int arx_changed(struct source *s)
{
	struct arx *x = s->priv;

	return source_check(x->in) < 0;
}

static void arx_identity(const struct source *s, struct source_stamp *out)
{
	const struct arx *x = s->priv;

	source_identity(x->in, out);
	snprintf(out->etag, sizeof(out->etag), "arx:%.120s", x->in->stamp.etag);
}

static void arx_close(struct source *s)
{
	arx_free(s->priv);
}

static int arx_claims(const char *uri)
{
	return 0;	/* chosen by content, in arxsource_wrap */
}

const struct source_backend source_arx_backend = {
	.name = "archive",
	.claims = arx_claims,
	.pread = arx_pread,
	.changed = arx_changed,
	.close = arx_close,
	.extent = arx_extent,
	.identity = arx_identity,
};

/* The reader over x->in, its first header read (so that an archive
 * libarchive cannot read is refused at open): 0 or -errno (said). */
static int reader_open(struct arx *x)
{
	const char *what = source_name(x->in);

	if (!(x->a = archive_read_new()))
		return -ENOMEM;
	archive_read_support_filter_all(x->a);
	archive_read_support_format_all(x->a);
	if (arxread_open(&x->rd, x->a, x->in, &x->stop) != ARCHIVE_OK ||
	    archive_read_next_header(x->a, &x->first) < ARCHIVE_WARN) {
		sfs_err("%s: %s, which samplefs reads through libarchive, but "
			"libarchive cannot open it (truncated or damaged?): %s",
			what, x->kind, arxread_why(x->a));
		return -EINVAL;
	}
	return 0;
}

/* The first bytes of in: ours when one of the magics above. */
static const char *sniff(struct source *in)
{
	unsigned char h[ARX_SNIFF];
	ssize_t got;

	if (source_is_remote(in) && !named_ours(source_name(in)))
		return NULL;
	got = source_pread(in, h, sizeof(h), 0);
	return got > 0 ? arxsource_kind(h, (size_t)got) : NULL;
}

int arxsource_wrap(struct source *in, struct source **out)
{
	const struct source_config *cfg = in->env ? &in->env->cfg : NULL;
	const char *kind = sniff(in);
	struct source *s = NULL;
	struct arx *x;
	int rc = -ENOMEM, cached;

	*out = in;
	if (!kind)
		return 0;
	if (!(x = calloc(1, sizeof(*x)))) {
		source_close(in);
		return -ENOMEM;
	}
	x->in = in;
	x->fd = -1;
	x->kind = kind;
	x->limit = cfg && cfg->cache_dir_bytes ? cfg->cache_dir_bytes : 1ull << 30;
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
	if ((cached = rc = spill_open(x, cfg)) < 0) {
		sfs_err("%s: %s, decompressed once into a spill file, which cannot "
			"be made: %s", source_name(in), kind, strerror(-rc));
		goto fail;
	}
	if (!cached && (rc = reader_open(x)) < 0)
		goto fail;
	rc = -ENOMEM;
	if (!(s = calloc(1, sizeof(*s))) || !(s->name = strdup(in->name)))
		goto fail;
	if (cached)
		x->done = 1;
	else if ((rc = -pthread_create(&x->th, NULL, pass, x)) < 0)
		goto fail;
	x->started = !cached;
	s->be = &source_arx_backend;
	s->env = in->env;
	s->priv = x;
	s->stamp = in->stamp;
	s->stamp.size = cached ? x->written : 0;  /* 0 while growing */
	*out = s;
	return 0;
fail:
	*out = NULL;
	arx_free(x);
	if (s)
		free(s->name);
	free(s);
	return rc;
}
