/*
 * index.h - the persistent index file shared by all layouts.
 *
 * An index is one file: a fixed header, a table of tagged sections, then the
 * sections themselves (each 64-byte aligned), so a layout can mmap it and use
 * its arrays in place: no per-entry heap objects when mounted.  The header
 * records a fingerprint of the sources (path, size, mtime of each file, plus
 * the options that shape the index), so a stale index is rebuilt.  Each
 * section is checksummed in 4 KiB blocks (crc32), and a block is checked
 * the first time it is used, so a mount costs what it touches: a damaged
 * header or table is rebuilt at once, a damaged block is said (naming the
 * file and section) when first used, what needs it gets EIO, and the file
 * is removed so the next mount rebuilds it.
 *
 * Writing goes to "<path>.tmp.<random>", locked (flock) while it is
 * written, and is renamed into place, so readers never see a half-written
 * index; a temporary file nobody holds locked (its writer died) is removed
 * by the next writer, and a daemon stopped by a signal during a build
 * removes its own (index_remove_unfinished).  Daemons that share an index
 * directory build each index once: the first takes its lock (lock.h), the
 * others wait and map what it renamed into place.  A prebuilt index
 * (prebuilt.h, -o index=) is fetched instead of building when given.
 *
 * index_load is the one "load it, or build it when missing or stale" of
 * every layout.
 *
 * Not for: deciding what goes in a section (that is each layout's business).
 */
#ifndef SFS_INDEX_H
#define SFS_INDEX_H

#include <stdint.h>
#include <stddef.h>

#include "options.h"

/* A running 64-bit hash (FNV-1a) over the things an index depends on. */
struct index_fp {
	uint64_t h;
};
void index_fp_init(struct index_fp *fp, const char *layout_name);
void index_fp_add_bytes(struct index_fp *fp, const void *p, size_t n);
void index_fp_add_str(struct index_fp *fp, const char *s);
void index_fp_add_u64(struct index_fp *fp, uint64_t v);
struct source_stamp;
/* adds a source: its name and stamp (size, mtime in ns, ETag if any) */
void index_fp_add_source(struct index_fp *fp, const char *name,
			 const struct source_stamp *st);

/*
 * The directory indexes go to: o->index_dir, else $XDG_CACHE_HOME/samplefs
 * or ~/.cache/samplefs, created if missing.  0 or -errno (-ENOENT: neither
 * HOME nor XDG_CACHE_HOME to find the default); prints nothing.
 */
int index_dir(const struct sfs_opts *o, char *out, size_t outlen);

/* 0 if a new index can be written in dir, else -errno.  Tried by creating
 * a file, since modes do not say (a read-only mount, root). */
int index_dir_writable(const char *dir);

/*
 * Before the build, at mount: sets o->index_dir to a private temporary
 * directory when the default one cannot be written (said with a warning),
 * and *private to 1 then; 0, or -1 with a message when neither can be.
 * index_dir_remove_private empties and removes that directory (unmount).
 */
int index_dir_prepare(struct sfs_opts *o, int *private);
void index_dir_remove_private(const char *dir);

/*
 * Where the index of `source` under layout `layout_name` lives:
 * <index_dir>/<layout>-<hash of realpath(source) and key>.sfsidx (a URL
 * is hashed as given).
 * `key` distinguishes variants built from the same source (may be "").
 * Creates index_dir if needed.  0 or -errno.
 */
int index_path(const struct sfs_opts *o, const char *layout_name,
	       const char *key, char *out, size_t outlen);

struct index_writer;
/* -errno on failure (message printed). */
int index_writer_open(struct index_writer **w, const char *path);
/* Appends a section; returns 0 or -errno.  Tags are four chars, e.g.
 * INDEX_TAG('C','L','S','S').  A tag may be added once. */
int index_writer_add(struct index_writer *w, uint32_t tag, const void *data,
		     uint64_t len);
/* Streams a section in pieces: begin, append any number of times, end. */
int index_writer_begin(struct index_writer *w, uint32_t tag);
int index_writer_append(struct index_writer *w, const void *data, uint64_t len);
int index_writer_end(struct index_writer *w);
/* Writes header, table and checksum, fsyncs and renames into place. Frees w. */
int index_writer_commit(struct index_writer *w, const struct index_fp *fp);
/*
 * A copy of a whole index file made elsewhere (a prebuilt one, see
 * prebuilt.h): opened as a writer with no header of its own, given its
 * bytes in order from byte 0 with index_writer_copy, and put in place by
 * index_writer_commit_copy through the same temporary file, fsync and
 * rename as a build.  Nothing is checked here: the copy is checked when it
 * is mapped.  Sections cannot be added to a copy.  0 or -errno (said);
 * commit frees w.
 */
int index_writer_open_copy(struct index_writer **w, const char *path);
int index_writer_copy(struct index_writer *w, const void *data, uint64_t len);
int index_writer_commit_copy(struct index_writer *w);
/* Has `path` (a build's checkpoint, checkpoint.h) unlinked once w's index
 * is in place; left where it is when the index is not.  0 or -ENOMEM. */
int index_writer_drop_at_commit(struct index_writer *w, const char *path);
/* Writes n bytes at fd's offset, EINTR and short writes retried: 0, or
 * -errno said naming path.  For the files of core/index (checkpoint.c). */
int index_write_all(int fd, const void *p, size_t n, const char *path);
/*
 * Marks w's index as incomplete for a reason the next build may not meet
 * (a tar walk cut by damage read over a network, where a byte may change
 * on its way: tarindex_build): this mount may use it, no later one may.
 * index_load then commits it with index_writer_commit_unsaved, maps it
 * and removes it, saying `why`; index_writer_commit refuses it (-EINVAL).
 */
void index_writer_set_unsaved(struct index_writer *w, const char *why);
/* index_writer_set_unsaved's why, or NULL. */
const char *index_writer_unsaved(const struct index_writer *w);
/* As index_writer_commit, but the file stays at its temporary name, put
 * in tmp (tmplen bytes), never at w's path, for the caller to map and
 * unlink while it holds the index's build lock; w's checkpoints to drop
 * are dropped.  Frees w.  0 or -errno (said). */
int index_writer_commit_unsaved(struct index_writer *w, const struct index_fp *fp,
				char *tmp, size_t tmplen);
/* Drops the temporary file.  Frees w. */
void index_writer_abort(struct index_writer *w);
/* The index w will become: where a build puts its scratch files (spill.h). */
const char *index_writer_path(const struct index_writer *w);
/* Unlinks the temporary file of every writer of this process not yet
 * committed or aborted.  Async-signal-safe: for a handler of the signals
 * that end a build, which then ends the process. */
void index_remove_unfinished(void);
/* Lists another file of this process for index_remove_unfinished (an
 * index's build lock, lock.h): its slot, or -1 when none is free (the
 * file is then left behind by a signal); index_unfinished_drop(slot)
 * before the file goes.  Signals are to be blocked from the file's
 * creation to its listing. */
int index_unfinished_add(const char *name);
void index_unfinished_drop(int slot);

#define INDEX_TAG(a, b, c, d) \
	((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* A mapped index, its header and table checked.  Shared by all threads:
 * only the blocks' checked states change, atomically. */
struct index_map {
	const uint8_t *base;
	size_t len;
	uint32_t nsect;
	/* private */
	const void *table;
	const uint32_t *crcs;   /* the blocks' checksums */
	uint32_t block_shift, nblocks;
	/* set by index_load once the index is bound: a block found damaged
	 * after that removes the file (before, index_load rebuilds it) */
	int unlink_damaged;
	uint8_t *state;         /* by block: unseen, good, bad */
	char *path;             /* for the messages */
};
/*
 * Maps and validates `path` against `fp`.  Returns 0, -ENOENT when there is
 * no index, -ESTALE when the fingerprint differs, -EBADMSG when it is corrupt
 * (bad magic, version, table checksum or section bounds); `why` then says
 * which, for the "rebuilding index" message (without the path: callers
 * name it).  The sections' bytes are not read here: see index_map_check.
 * fp NULL: a peek at a saved index before its sources are known (the
 * fingerprint needs them): the fingerprint is not checked, and a full load
 * follows.
 */
int index_map_open(struct index_map *m, const char *path,
		   const struct index_fp *fp, char *why, size_t whylen);
/* The section `tag`, its every block checked (once per map), or NULL (and
 * *len = 0) if absent or damaged (said: index_map_check).  64-byte
 * aligned. */
const void *index_map_section(const struct index_map *m, uint32_t tag,
			      uint64_t *len);
/* The same, nothing checked: for a large section whose user checks the
 * bytes it uses with index_map_check before it trusts them. */
const void *index_map_section_unchecked(const struct index_map *m, uint32_t tag,
					uint64_t *len);
/*
 * Checks bytes [p, p + len) of one section of m against their blocks'
 * checksums, each block once per map (later calls cost a byte's load):
 * 0, or -EIO when a block is damaged, said once ("<index>: the index is
 * damaged: section <tag> fails its checksum in bytes A-B ..."); a damaged
 * index in use is removed then, so the next mount rebuilds it.
 */
int index_map_check(const struct index_map *m, const void *p, uint64_t len);
/* 1 if a block of m has failed its check, else 0. */
int index_map_damaged(const struct index_map *m);
void index_map_close(struct index_map *m);

/* One index file of a layout, for index_load. */
struct index_job {
	const char *layout, *key;     /* index_path's: where the file lives */
	const struct index_fp *fp;    /* what it must have been built from */
	/* writes the sections into w, which index_load opens and commits
	 * (or aborts on failure); 0 or -errno, said.  NULL: the caller
	 * makes the index itself when index_load finds none (zstore.c: a
	 * compressed source's pass runs in core/io, which saves it) */
	int (*build)(void *arg, struct index_writer *w);
	/* checks and binds the sections of the mapped index m (at path):
	 * 0; -EBADMSG when they do not fit the sources (the index is then
	 * rebuilt, once), leaving nothing bound; another -errno fails the
	 * load */
	int (*attach)(void *arg, const struct index_map *m, const char *path);
	void *arg;
	/* what the index holds, for its messages when a layout has more
	 * than one ("the members of the tars"); NULL: the layout's index */
	const char *what;
	/* optional: when the fingerprint differs, says what (why: "made
	 * for span 1048576, the mount's is 65536"), from a peek at the
	 * file (index_map_open with no fingerprint: check what you read);
	 * NULL, or why left empty: "sources or options changed" */
	void (*stale)(void *arg, const struct index_map *peek, char *why,
		      size_t whylen);
};

/*
 * Loads the index of o->source for `job`, or builds it when missing or
 * stale: maps index_path(o, job->layout, job->key) against job->fp and
 * attaches it; when it is missing, stale, corrupt or does not attach,
 * takes its build lock (lock.h: while another process builds it, waits
 * and maps what it built), then fetches it from the prebuilt index
 * o->index if there is one (prebuilt.h; a warning when that has none that
 * fits), else builds it (saying why, unless it was missing), saves it and
 * loads it again; with o->index_only it fails instead of building.  With
 * no job->build it returns -ENOENT where it would build (the lock let
 * go: the caller builds and saves).  Says,
 * in one format for every layout:
 *   "<index>: using the saved index[ of <what>]"
 *   "<index>: using the just built index[ of <what>]"  (another built it)
 *   "<index>: using the prebuilt index[ of <what>] from <o->index>"
 *   "<index>: rebuilding index[ of <what>] (<why>)"
 *   "<source>: indexed[ <what>] in <s> s, <size> MB[, into <index>]"
 *   "<index>: the index just built does not load (<why>)"   (an error)
 *   "<index>: no usable index[ of <what>] (<why>), and -o index_only
 *    forbids building one"                                (an error)
 * 0 with m mapped and attached (the caller closes it), or -errno.
 */
int index_load(const struct sfs_opts *o, const struct index_job *job,
	       struct index_map *m);

#endif
