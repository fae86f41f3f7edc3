/*
 * spill.h - an external sort of byte records in bounded memory, for index
 * builds that must not hold every member at once.
 *
 * Records (up to SPILL_MAX_REC bytes each) are added to a buffer of about
 * `budget` bytes; when it is full it is sorted and written as a run to a
 * scratch file in `dir`, which is unlinked as soon as it is made, so that
 * nothing is left behind on success, on error, on a signal or on kill -9.
 * Reading merges the runs (several passes when there are more than the
 * budget can read at once, each run read through a buffer of
 * SPILL_READ_BUF bytes).  Records that fit in one buffer are never
 * written.  A NULL comparator keeps the records in the order they were
 * added (a spool).  Records come back 8-byte aligned and padded to a
 * multiple of 8 (the padding is zero), so they may be read as structs.
 *
 * Memory: the budget, plus SPILL_READ_BUF per run merged at once (at
 * most budget / SPILL_READ_BUF of them, and at least 2).
 *
 * Not thread-safe; one reader at a time.
 */
#ifndef SFS_INDEX_SPILL_H
#define SFS_INDEX_SPILL_H

#include <stddef.h>
#include <stdint.h>

#define SPILL_MAX_REC  (32u << 10)
#define SPILL_READ_BUF (64u << 10)

/* <0, 0, >0 as a sorts before, with, after b; ties keep no order. */
typedef int (*spill_cmp_fn)(const void *a, const void *b, void *arg);

struct spill;

/*
 * A sorter holding about `budget` bytes in memory (at least 4 KiB is
 * used), writing its runs in directory `dir` (named in messages; the
 * scratch files are "<prefix>.spill.XXXXXX" there, gone at once).
 * 0 or -ENOMEM.
 */
int spill_open(struct spill **s, const char *dir_prefix, size_t budget,
	       spill_cmp_fn cmp, void *arg);
/* Adds a record of len bytes (1 .. SPILL_MAX_REC).  0 or -errno, said. */
int spill_add(struct spill *s, const void *rec, size_t len);
/*
 * Ends the adding and starts (or restarts) reading from the first record
 * in order; may be called again to read everything once more.  0 or -errno.
 */
int spill_rewind(struct spill *s);
/* The next record in *rec (valid until the next call), its padded length
 * in *len: 1, or 0 at the end, or -errno (said). */
int spill_next(struct spill *s, const void **rec, size_t *len);
/* Records added; runs written to scratch files (0: all in memory). */
uint64_t spill_count(const struct spill *s);
uint32_t spill_runs(const struct spill *s);
void spill_close(struct spill *s);

#endif
