/*
 * checkpoint.h - saved progress of a tar index build, so a build stopped
 * by errors, a signal, kill -9 or a lost network goes on where it was at
 * the next mount instead of walking the archive again from byte 0.
 *
 * A checkpoint is a log file next to the index, "<index>.ckpt.<part>" (part:
 * the index's section prefix, one per tarindex_build of the file): a
 * header naming the sources' fingerprint, then one record per member the
 * walk reported (as tar_walk gave it, with its source, nesting depth and
 * whether it was expanded as a nested tar), and now and then a mark: "every
 * member before byte `off` of source `src` is above; the walk goes on
 * there".  Marks are only written between members of a source's top-level
 * walk (never inside a nested tar), at most every CKPT_EVERY_MS and when a
 * build fails, so resuming is replaying the records up to the last mark
 * through the same callback as the walk, then walking from its offset.
 *
 * Safety: every record carries its length and a CRC-32 of its bytes, and
 * a CRC-32 of those two (a damaged length is not a record cut short); the
 * file header is
 * written to a temporary file renamed into place, records are appended.
 * Reading, a record cut short at the end (a write a kill interrupted) ends
 * the log, and what follows the last mark is dropped; any record whose
 * CRC, type or fields are wrong makes the whole checkpoint ignored with a
 * warning, as is one of another fingerprint (the source changed: never
 * resumed), so a resume never replays a byte the walk did not report.
 * Anything after the last mark is truncated when the log is reopened for
 * appending.  Marks are fdatasync'ed.
 *
 * Memory: records are streamed (one at a time), never all held.
 *
 * Not for: the index file (index.h), what the members become
 * (tarindex_build.c).  Single-threaded: one build owns its checkpoint (the
 * index's build lock, lock.h, keeps other daemons out).
 */
#ifndef SFS_INDEX_CHECKPOINT_H
#define SFS_INDEX_CHECKPOINT_H

#include <stdint.h>

#include "formats/tar.h"

#define CKPT_EVERY_MS 1000      /* marks at most this often (and at failure) */

/* One recorded member: tar_walk's report and where the walk was. */
struct ckpt_member {
	struct tar_member m;    /* path, link, chunks point into the record */
	uint32_t src;           /* the source's number in the build */
	uint32_t depth;         /* 0: the source's own walk; n: inside n nested tars */
	int nested;             /* expanded as a nested tar (its members follow) */
};

/* Where a resumed walk goes on. */
struct ckpt_resume {
	uint32_t src;           /* sources before it were walked to their end */
	uint64_t off;           /* its next member's first header */
	uint64_t members;       /* records to replay */
};

struct ckpt;

/*
 * Opens the checkpoint of the build of `index_path`, part `part`, for
 * sources of fingerprint fp.  When a valid one is there, *resume says where
 * it stopped (resume->members records to replay with ckpt_next first) and
 * 1 is returned; else 0, with a new, empty checkpoint (a damaged one is
 * warned about, one of another fingerprint said and dropped).  -errno
 * when no checkpoint can be written (said; the build goes on without).
 */
int ckpt_open(struct ckpt **out, const char *index_path, uint32_t part,
	      uint64_t fp, struct ckpt_resume *resume);

/*
 * While replaying: the next recorded member, malloc'ed (free it), in
 * *out: 1; 0 once resume->members have been given; -errno (a read error,
 * or a record changed since ckpt_open checked it: -ESTALE).  *out is
 * NULL when it returns 0 or an error.
 */
int ckpt_next(struct ckpt *c, struct ckpt_member **out);

/* The next record's source and depth without taking it: 1, 0 at the end. */
int ckpt_peek(struct ckpt *c, uint32_t *src, uint32_t *depth);

/* Records a member the walk reported (buffered).  0 or -errno. */
int ckpt_add(struct ckpt *c, const struct ckpt_member *m);

/*
 * The walk of source src is about to report the top-level member whose
 * first header is at off, everything before it recorded: remembered as the
 * place to resume, and marked when CKPT_EVERY_MS passed since the last
 * mark (or `now` is set: a source's end).  0 or -errno.
 */
int ckpt_boundary(struct ckpt *c, uint32_t src, uint64_t off, int now);

/*
 * Ends the build's use: done (1) removes the checkpoint; else the last
 * boundary is marked (what followed it is cut off) and the file kept for
 * the next mount.  Frees c.
 */
void ckpt_close(struct ckpt *c, int done);

/* Its file's name (for index_writer_drop_at_commit: a walk that ended
 * keeps its checkpoint until the whole index file is in place, since
 * another part of it may still fail: ImageNet's val after train). */
const char *ckpt_path(const struct ckpt *c);

/* For the fuzz target: reads a checkpoint file as ckpt_open would, then
 * replays every record; 0, or -errno.  Writes nothing. */
int ckpt_check_file(const char *path, uint32_t part, uint64_t fp);

#endif
