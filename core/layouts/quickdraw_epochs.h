/*
 * quickdraw_epochs.h - /epochs/<e> of the Quick, Draw! tree (issue 28):
 * each split's samples as WebDataset shards, in a fresh global shuffle
 * per epoch, kept by epochs.h's cache:
 *   /epochs/<e>/shards/<split>-<k:06d>.tar   split train, val or test
 * Sample g (its gidx) is the members <g:06d>.cls (its label),
 * <g:06d>.npy (/images/<class>/<g>.npy) and <g:06d>.strokes.npy
 * (/strokes/<class>/<g>.npy), the same bytes; shard k holds positions
 * [k*S, (k+1)*S) of epoch e's order of the split, which is line
 * perm[p] of splits/<split>.txt for np.random.seed([seed, e]);
 * perm = np.random.shuffle(np.arange(n)) (seed: -o shard_seed=, or 0).
 * Every sample's record has the same size, so nothing but the
 * permutations (4 bytes a sample) is kept per epoch.
 *
 * Inodes: QD_INO_EPOCHS, and kinds QD_K_EPOCH and up, their index the
 * epoch (a shard's: e << 25 | k): nothing is allocated per epoch.
 *
 * Threads: epochs.h's; the rest is read-only after open.
 *
 * Not for: the rest of the tree (layout_quickdraw.c), the sample files'
 * bytes (quickdraw_read.c).
 */
#ifndef SFS_QUICKDRAW_EPOCHS_H
#define SFS_QUICKDRAW_EPOCHS_H

#include <stdint.h>
#include <sys/types.h>

#include "layouts/layout.h"
#include "layouts/quickdraw_tree.h"
#include "options.h"

#define QD_INO_EPOCHS 9		/* after layout_quickdraw.c's fixed inodes */
#define QD_K_EPOCH 5		/* after its kinds */

/* q->epochs, or NULL with a warning when a split has too many shards.
 * 0 or -ENOMEM. */
int qd_epochs_open(struct qd *q, const struct sfs_opts *o);
void qd_epochs_close(struct qd *q);

/* whether ino is /epochs or under it (the calls below answer for it) */
int qd_epochs_owns(uint64_t ino);
int qd_epochs_getattr(const struct qd *q, uint64_t ino, struct sfs_attr *a);
int qd_epochs_lookup(const struct qd *q, uint64_t parent, const char *name,
		     struct sfs_attr *a);
int qd_epochs_readdir(const struct qd *q, uint64_t dir, uint64_t off, sfs_fill_fn fill,
		      void *arg);
ssize_t qd_epochs_read(const struct qd *q, uint64_t ino, char *buf, size_t size,
		       uint64_t off);

#endif
