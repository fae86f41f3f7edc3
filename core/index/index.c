/*
 * index.c - the persistent index file (see index.h for the contract, and
 * index_int.h for its format on disk): the fingerprint, where indexes
 * live, and the writer.
 *
 * Not for: mapping and checking an index (index_map.c), what sections
 * mean, or deciding when to rebuild (load.c does, from index_map_open's
 * -ESTALE / -EBADMSG / -ENOENT).
 */
#include "index/index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/crc.h"
#include "io/source.h"
#include "index/index_int.h"
#include "log.h"
#include "hash.h"

#define WBUF_SIZE (256u << 10)

/* ---- fingerprint ---- */

void index_fp_init(struct index_fp *fp, const char *layout_name)
{
	fp->h = SFS_FNV_OFFSET;
	index_fp_add_str(fp, layout_name);
}

void index_fp_add_bytes(struct index_fp *fp, const void *p, size_t n)
{
	fp->h = sfs_fnv1a(fp->h, p, n);
}

/* The NUL is hashed too, so ("ab", "c") and ("a", "bc") differ. */
void index_fp_add_str(struct index_fp *fp, const char *s)
{
	index_fp_add_bytes(fp, s ? s : "", strlen(s ? s : "") + 1);
}

void index_fp_add_u64(struct index_fp *fp, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	index_fp_add_bytes(fp, b, sizeof(b));
}

/* A local stamp has no ETag and hashes as path, size, mtime alone, so
 * indexes saved before remote sources existed stay valid; a GCS object's
 * generation joins its stamp when a listing gave one. */
void index_fp_add_source(struct index_fp *fp, const char *name,
			 const struct source_stamp *st)
{
	index_fp_add_str(fp, name);
	index_fp_add_u64(fp, st->size);
	index_fp_add_u64(fp, (uint64_t)st->mtime_ns);
	if (st->etag[0])
		index_fp_add_str(fp, st->etag);
	if (st->generation)	/* as the ETag: other stamps hash as before */
		index_fp_add_u64(fp, st->generation);
}

/* ---- index_path ---- */

/* mkdir -p, mode 0755; existing directories are fine. */
static int mkdir_p(const char *dir)
{
	char tmp[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, dir, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int default_index_dir(char *out, size_t outlen)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (xdg && xdg[0] == '/')
		n = snprintf(out, outlen, "%s/samplefs", xdg);
	else if (home && home[0])
		n = snprintf(out, outlen, "%s/.cache/samplefs", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int index_dir(const struct sfs_opts *o, char *out, size_t outlen)
{
	int n, ret;

	if (o->index_dir) {
		n = snprintf(out, outlen, "%s", o->index_dir);
		if (n < 0 || (size_t)n >= outlen)
			return -ENAMETOOLONG;
	} else if ((ret = default_index_dir(out, outlen)) < 0) {
		return ret;
	}
	return mkdir_p(out);
}

int index_dir_writable(const char *dir)
{
	char *probe;
	int fd, ret = 0;

	if (asprintf(&probe, "%s/.samplefs-probe.XXXXXX", dir) < 0)
		return -ENOMEM;
	fd = mkostemp(probe, O_CLOEXEC);
	if (fd < 0)
		ret = -errno;
	else {
		close(fd);
		unlink(probe);
	}
	free(probe);
	return ret;
}

/*
 * Indexes need a writable directory.  When the default one cannot be
 * written (a read-only $HOME) they go to a private temporary directory,
 * removed at unmount, with a warning: the mount works, only slower next
 * time.  One given with -o index_dir= is used as given: it may hold ready
 * indexes, and a build there says why it fails.  *private set to 1 when
 * o->index_dir is such a temporary directory.
 */
int index_dir_prepare(struct sfs_opts *o, int *private)
{
	const char *tmpdir = getenv("TMPDIR");
	char dir[PATH_MAX] = "", *tmp;
	int rc;

	*private = 0;
	if (o->index_dir)
		return 0;
	rc = index_dir(o, dir, sizeof(dir));
	if (rc == 0 && (rc = index_dir_writable(dir)) == 0)
		return 0;
	if (asprintf(&tmp, "%s/samplefs-index.XXXXXX",
		     tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp") < 0)
		return -1;
	if (!mkdtemp(tmp)) {
		sfs_err("%s: cannot create a private index directory either: %s",
			tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	sfs_warn("%s: cannot write indexes there (%s): using a private temporary "
		 "index in %s, removed at unmount (-o index_dir=DIR keeps indexes)",
		 dir[0] ? dir : "$HOME/.cache/samplefs", strerror(-rc), tmp);
	o->index_dir = tmp;
	*private = 1;
	return 0;
}

/* Empties and removes the private index directory (flat: index files). */
void index_dir_remove_private(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	if (rmdir(dir) < 0)
		sfs_warn("%s: cannot remove the private index directory: %s", dir,
			 strerror(errno));
}

int index_path(const struct sfs_opts *o, const char *layout_name,
	       const char *key, char *out, size_t outlen)
{
	char dir[PATH_MAX], *real;
	struct index_fp h = { SFS_FNV_OFFSET };
	const char *src = o->source ? o->source : "";
	int n, ret;

	ret = index_dir(o, dir, sizeof(dir));
	if (ret == -ENOENT && !o->index_dir) {
		sfs_err("no index directory: set HOME or XDG_CACHE_HOME, or -o index_dir=DIR");
		return ret;
	}
	if (ret < 0) {
		sfs_err("%s: cannot create index directory: %s (-o index_dir=DIR "
			"chooses another)", dir, strerror(-ret));
		return ret;
	}
	/* a URL is hashed as given; a path as what it resolves to */
	real = source_resolve(src);
	index_fp_add_str(&h, real ? real : src);
	free(real);
	index_fp_add_str(&h, key ? key : "");
	n = snprintf(out, outlen, "%s/%s-%016llx.sfsidx", dir, layout_name,
		     (unsigned long long)h.h);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* ---- writer ---- */

/*
 * The temporary files this process is writing, for index_remove_unfinished
 * to find from a signal handler: the one piece of global state here, since
 * a handler has no argument to reach them through.  A slot is claimed
 * (BUSY), filled, then published (LIVE) for the handler, which reads LIVE
 * slots only.  An unlink by the handler racing a rename or an abort finds
 * the name already gone, which is harmless.  With every slot taken a file
 * goes unlisted: the next build's sweep removes it once we are gone.
 */
#define PENDING_MAX 8
enum { SLOT_FREE, SLOT_BUSY, SLOT_LIVE };
static struct {
	int state;
	char name[PATH_MAX];
} pending[PENDING_MAX];

static int pending_add(const char *name)
{
	size_t len = strlen(name);

	if (len >= PATH_MAX)
		return -1;
	for (int i = 0; i < PENDING_MAX; i++) {
		int want = SLOT_FREE;

		if (!__atomic_compare_exchange_n(&pending[i].state, &want, SLOT_BUSY, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		memcpy(pending[i].name, name, len + 1);
		__atomic_store_n(&pending[i].state, SLOT_LIVE, __ATOMIC_RELEASE);
		return i;
	}
	return -1;
}

static void pending_drop(int slot)
{
	if (slot >= 0)
		__atomic_store_n(&pending[slot].state, SLOT_FREE, __ATOMIC_RELEASE);
}

int index_unfinished_add(const char *name)
{
	return pending_add(name);
}

void index_unfinished_drop(int slot)
{
	pending_drop(slot);
}

void index_remove_unfinished(void)
{
	for (int i = 0; i < PENDING_MAX; i++)
		if (__atomic_load_n(&pending[i].state, __ATOMIC_ACQUIRE) == SLOT_LIVE)
			unlink(pending[i].name);
}

struct index_writer {
	int fd;
	int slot;              /* in pending[], or -1 */
	char *path, *tmp;
	uint64_t pos;          /* file offset of the next byte written */
	uint32_t bcrc;         /* crc of the open section's current block */
	uint64_t bfill;        /* bytes in it */
	uint32_t *blocks;      /* the block checksums so far */
	uint32_t nblocks, bcap;
	uint8_t *buf;          /* write buffer, WBUF_SIZE */
	size_t buffered;
	size_t cfrom;          /* buf[cfrom, buffered): section bytes not yet
				* in the block checksums */
	int open_sect;         /* a begin without its end */
	uint32_t nsect, cap;
	struct index_sect *sect;
	int err;               /* first error; every later call fails with it */
	int copy;              /* index_writer_open_copy: bytes as given, no header */
	char **drop;           /* unlinked once the index is in place */
	unsigned ndrop;
	char *unsaved;         /* index_writer_set_unsaved's why, or NULL */
};

int index_write_all(int fd, const void *p, size_t n, const char *path)
{
	const uint8_t *b = p;
	ssize_t k;

	while (n) {
		k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			sfs_err("%s: write: %s", path, strerror(errno));
			return -errno;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Ends the open section's current block: its checksum joins the list. */
static int block_end(struct index_writer *w)
{
	uint32_t *b;

	if (!w->bfill)
		return 0;
	if (w->nblocks == UINT32_MAX)
		return w->err = -E2BIG;
	if (w->nblocks == w->bcap) {
		uint32_t cap = w->bcap ? 2 * w->bcap : 256;

		if (!(b = realloc(w->blocks, (size_t)cap * sizeof(*b))))
			return w->err = -ENOMEM;
		w->blocks = b;
		w->bcap = cap;
	}
	w->blocks[w->nblocks++] = w->bcrc;
	w->bcrc = 0;
	w->bfill = 0;
	return 0;
}

/* Section bytes into the checksums of their blocks. */
static int block_feed(struct index_writer *w, const uint8_t *b, uint64_t n)
{
	const uint64_t bs = 1ull << INDEX_BLOCK_SHIFT;
	uint64_t k;
	int ret;

	while (n) {
		k = bs - w->bfill < n ? bs - w->bfill : n;
		w->bcrc = zcrc32(w->bcrc, b, (size_t)k);
		w->bfill += k;
		b += k;
		n -= k;
		if (w->bfill == bs && (ret = block_end(w)) < 0)
			return ret;
	}
	return 0;
}

/* Feeds the open section's bytes buffered since the last call to the
 * block checksums: in the buffer's large pieces, not the callers' many
 * small appends (a crc call has a cost of its own). */
static int crc_catch_up(struct index_writer *w)
{
	int ret = 0;

	if (w->open_sect && w->buffered > w->cfrom)
		ret = block_feed(w, w->buf + w->cfrom, w->buffered - w->cfrom);
	w->cfrom = w->buffered;
	return ret;
}

static int wflush(struct index_writer *w)
{
	int ret;

	if (!w->buffered)
		return 0;
	ret = crc_catch_up(w);
	if (ret == 0)
		ret = index_write_all(w->fd, w->buf, w->buffered, w->tmp);
	w->buffered = 0;
	w->cfrom = 0;
	return ret;
}

/* Appends bytes after the header, through the buffer (and the block
 * checksums, inside a section). */
static int wput(struct index_writer *w, const void *p, uint64_t n)
{
	const uint8_t *b = p;
	size_t k;
	int ret;

	if (w->err)
		return w->err;
	while (n) {
		if (w->buffered == WBUF_SIZE && (ret = wflush(w)) < 0)
			return w->err = ret;
		k = WBUF_SIZE - w->buffered;
		if (k > n)
			k = (size_t)n;
		memcpy(w->buf + w->buffered, b, k);
		w->buffered += k;
		w->pos += k;
		b += k;
		n -= k;
	}
	return 0;
}

static int wpad(struct index_writer *w)
{
	static const uint8_t zero[INDEX_ALIGN];

	return wput(w, zero, (INDEX_ALIGN - w->pos % INDEX_ALIGN) % INDEX_ALIGN);
}

/*
 * Removes "<path>.tmp.*" files whose writer is gone.  A writer holds an
 * exclusive flock on its temporary file until it renames or removes it, and
 * the kernel drops the lock when the process dies (kill -9 included), so a
 * file we can lock is a leftover.  flock works across the nodes of an NFS
 * mount too (emulated with fcntl locks, hence O_RDWR).
 */
static void sweep_leftovers(const char *path)
{
	char *dir = strdup(path), *slash, *base;
	size_t blen;
	struct dirent *de;
	struct stat a, b;
	DIR *d;
	int fd;

	if (!dir)
		return;
	slash = strrchr(dir, '/');
	base = slash ? slash + 1 : dir;
	if (slash == dir)
		d = opendir("/");
	else {
		if (slash)
			*slash = '\0';
		d = opendir(slash ? dir : ".");
	}
	blen = strlen(base);
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, base, blen) || strncmp(de->d_name + blen, ".tmp.", 5))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* the name must still be the file we locked: unlink that only */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
		    fstatat(dirfd(d), de->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			sfs_info("%s/%s: removed: an unfinished index no process is writing",
				 slash ? dir : ".", de->d_name);
		close(fd);
	}
	if (d)
		closedir(d);
	free(dir);
}

/*
 * Creates and locks w->tmp, a name no other writer has: "<path>.tmp."
 * and mkstemp's random suffix, not our pid (daemons in containers on
 * shared storage share pids).  Locked before a sweep could see it
 * unlocked: a sweep that removed it before we locked it makes us retry.
 */
static int create_tmp(struct index_writer *w)
{
	struct stat a, b;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		free(w->tmp);
		if (asprintf(&w->tmp, "%s.tmp.XXXXXX", w->path) < 0) {
			w->tmp = NULL;
			return -ENOMEM;
		}
		w->fd = mkostemp(w->tmp, O_CLOEXEC);
		if (w->fd < 0) {
			int err = errno;

			sfs_err("%s: cannot create index: %s%s", w->tmp, strerror(err),
				err == EROFS || err == EACCES || err == EPERM ?
				" (-o index_dir=DIR: a writable directory)" : "");
			free(w->tmp);
			w->tmp = NULL;
			return -err;
		}
		if (flock(w->fd, LOCK_EX) == 0 && fstat(w->fd, &a) == 0 &&
		    stat(w->tmp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			fchmod(w->fd, 0644);	/* as the index itself: others read it */
			w->slot = pending_add(w->tmp);
			return 0;
		}
		close(w->fd);
		w->fd = -1;
	}
	sfs_err("%s: cannot create a temporary index file next to it", w->path);
	free(w->tmp);
	w->tmp = NULL;
	return -EAGAIN;
}

int index_writer_open(struct index_writer **wp, const char *path)
{
	struct index_writer *w = calloc(1, sizeof(*w));
	struct index_hdr zero;
	sigset_t all, old;
	int ret = -ENOMEM;

	*wp = NULL;
	if (!w)
		return -ENOMEM;
	memset(&zero, 0, sizeof(zero));   /* placeholder until commit */
	w->fd = -1;
	w->slot = -1;
	w->path = strdup(path);
	w->buf = malloc(WBUF_SIZE);
	if (!w->path || !w->buf)
		goto out;
	sweep_leftovers(path);
	/* signals held until the new file is in pending[]: a handler running
	 * between its creation and its listing would leave it behind */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = create_tmp(w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		goto out;
	ret = index_write_all(w->fd, &zero, sizeof(zero), w->tmp);
	if (ret < 0)
		goto out;
	w->pos = sizeof(zero);
	*wp = w;
	return 0;
out:
	index_writer_abort(w);
	return ret;
}

int index_writer_open_copy(struct index_writer **wp, const char *path)
{
	int ret = index_writer_open(wp, path);

	if (ret < 0)
		return ret;
	/* no header of our own: the copy brings its own from byte 0 */
	if (lseek((*wp)->fd, 0, SEEK_SET) < 0 || ftruncate((*wp)->fd, 0) < 0) {
		ret = -errno;
		sfs_err("%s: truncate: %s", (*wp)->tmp, strerror(errno));
		index_writer_abort(*wp);
		*wp = NULL;
		return ret;
	}
	(*wp)->pos = 0;
	(*wp)->copy = 1;
	return 0;
}

int index_writer_copy(struct index_writer *w, const void *data, uint64_t len)
{
	if (!w->err && !w->copy)
		w->err = -EINVAL;
	return wput(w, data, len);
}

int index_writer_begin(struct index_writer *w, uint32_t tag)
{
	struct index_sect *s;
	int ret;

	if (w->err)
		return w->err;
	if (w->open_sect || w->copy)
		return w->err = -EINVAL;
	for (uint32_t i = 0; i < w->nsect; i++)
		if (w->sect[i].tag == tag)
			return w->err = -EEXIST;
	if (w->nsect == INDEX_MAX_SECT)
		return w->err = -E2BIG;
	if (w->nsect == w->cap) {
		uint32_t cap = w->cap ? 2 * w->cap : 16;

		s = realloc(w->sect, cap * sizeof(*s));
		if (!s)
			return w->err = -ENOMEM;
		w->sect = s;
		w->cap = cap;
	}
	ret = wpad(w);
	if (ret < 0)
		return ret;
	w->cfrom = w->buffered;	/* the section's bytes start here */
	s = &w->sect[w->nsect++];
	memset(s, 0, sizeof(*s));
	s->tag = tag;
	s->block = w->nblocks;
	s->off = w->pos;
	w->open_sect = 1;
	w->bcrc = 0;
	w->bfill = 0;
	return 0;
}

int index_writer_append(struct index_writer *w, const void *data, uint64_t len)
{
	if (!w->err && !w->open_sect)
		w->err = -EINVAL;
	return wput(w, data, len);
}

int index_writer_end(struct index_writer *w)
{
	if (w->err)
		return w->err;
	if (!w->open_sect)
		return w->err = -EINVAL;
	w->sect[w->nsect - 1].len = w->pos - w->sect[w->nsect - 1].off;
	if (crc_catch_up(w) < 0)
		return w->err;
	w->open_sect = 0;
	return block_end(w);
}

int index_writer_add(struct index_writer *w, uint32_t tag, const void *data,
		     uint64_t len)
{
	int ret = index_writer_begin(w, tag);

	if (ret == 0)
		ret = index_writer_append(w, data, len);
	if (ret == 0)
		ret = index_writer_end(w);
	return ret;
}

/* Makes the rename itself durable; a failure here only costs a rebuild. */
static void fsync_dir_of(const char *path)
{
	char *dir = strdup(path), *slash;
	int fd;

	if (!dir)
		return;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/* fsyncs w's temporary file and renames it into place; 0 or -errno, said. */
static int install(struct index_writer *w)
{
	if (fsync(w->fd) < 0) {
		int ret = -errno;

		sfs_err("%s: fsync: %s", w->tmp, strerror(errno));
		return ret;
	}
	if (rename(w->tmp, w->path) < 0) {
		int ret = -errno;

		sfs_err("%s: rename to %s: %s", w->tmp, w->path, strerror(errno));
		return ret;
	}
	pending_drop(w->slot);
	w->slot = -1;
	fsync_dir_of(w->path);
	free(w->tmp);
	w->tmp = NULL;   /* renamed: nothing left for abort to unlink */
	for (unsigned i = 0; i < w->ndrop; i++)
		unlink(w->drop[i]);     /* freed by index_writer_abort */
	return 0;
}

int index_writer_drop_at_commit(struct index_writer *w, const char *path)
{
	char **d = realloc(w->drop, (w->ndrop + 1) * sizeof(*d));

	if (!d)
		return -ENOMEM;
	w->drop = d;
	if (!(d[w->ndrop] = strdup(path)))
		return -ENOMEM;
	w->ndrop++;
	return 0;
}

int index_writer_commit_copy(struct index_writer *w)
{
	int ret = w->err ? w->err : w->copy ? 0 : -EINVAL;

	if (ret == 0)
		ret = wflush(w);
	if (ret == 0)
		ret = install(w);
	index_writer_abort(w);
	return ret;
}

void index_writer_set_unsaved(struct index_writer *w, const char *why)
{
	if (!w->unsaved)
		w->unsaved = strdup(why);
	if (!w->unsaved && !w->err)
		w->err = -ENOMEM;	/* never saved as complete, whatever */
}

const char *index_writer_unsaved(const struct index_writer *w)
{
	return w->unsaved;
}

/* The header, table and checksum of w's index, written at the end of
 * its temporary file and at its start.  0 or -errno, said. */
static int finish(struct index_writer *w, const struct index_fp *fp)
{
	struct index_hdr h;
	int ret;

	if ((w->open_sect || w->copy) && !w->err)
		w->err = -EINVAL;
	ret = wpad(w);
	if (ret < 0)
		goto out;
	memset(&h, 0, sizeof(h));
	h.table_off = w->pos;
	ret = wput(w, w->sect, (uint64_t)w->nsect * sizeof(*w->sect));
	if (ret == 0)
		ret = wput(w, w->blocks, (uint64_t)w->nblocks * sizeof(*w->blocks));
	if (ret == 0)
		ret = wflush(w);
	if (ret < 0)
		goto out;
	memcpy(h.magic, INDEX_MAGIC, 8);
	h.version = INDEX_VERSION;
	h.hdr_size = sizeof(h);
	h.fp = fp->h;
	h.nsect = w->nsect;
	h.crc = zcrc32(zcrc32(0, w->sect, (size_t)w->nsect * sizeof(*w->sect)),
		       w->blocks, (size_t)w->nblocks * sizeof(*w->blocks));
	h.total_len = w->pos;
	h.nblocks = w->nblocks;
	h.block_shift = INDEX_BLOCK_SHIFT;
	if (pwrite(w->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		ret = errno ? -errno : -EIO;
		sfs_err("%s: writing index header: %s", w->tmp, strerror(-ret));
	}
out:
	return ret;
}

int index_writer_commit(struct index_writer *w, const struct index_fp *fp)
{
	int ret = w->unsaved ? -EINVAL : finish(w, fp);

	if (ret == 0)
		ret = install(w);
	index_writer_abort(w);
	return ret;
}

int index_writer_commit_unsaved(struct index_writer *w, const struct index_fp *fp,
				char *tmp, size_t tmplen)
{
	int ret = finish(w, fp);

	if (ret == 0 && (size_t)snprintf(tmp, tmplen, "%s", w->tmp) >= tmplen)
		ret = -ENAMETOOLONG;
	if (ret == 0) {
		/* the caller maps it and unlinks it, holding the build lock
		 * (no sweep runs meanwhile); the checkpoint says the walk
		 * ended, which it did not: dropped */
		for (unsigned i = 0; i < w->ndrop; i++)
			unlink(w->drop[i]);
		free(w->tmp);
		w->tmp = NULL;
	}
	index_writer_abort(w);
	return ret;
}

void index_writer_abort(struct index_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp)
		unlink(w->tmp);
	pending_drop(w->slot);
	while (w->ndrop)
		free(w->drop[--w->ndrop]);
	free(w->drop);
	free(w->unsaved);
	free(w->tmp);
	free(w->path);
	free(w->buf);
	free(w->sect);
	free(w->blocks);
	free(w);
}

const char *index_writer_path(const struct index_writer *w)
{
	return w->path;
}
