/*
 * rdplus.h - whether the entries of a listing carry their attributes
 * (readdirplus=adaptive, the default for the tar and ImageNet layouts).
 *
 * An entry listed with its attributes leaves an inode and a dentry in the
 * kernel: `du`, `ls -l` and `find -size`, which stat every name they list,
 * then need no LOOKUP per file (one round trip each: 66 s for `du` over a
 * 1.28 M-member ImageNet).  An entry listed without (FUSE node id 0)
 * costs the kernel nothing: `find` and a loader's listing, which only need
 * names, stay fast and light.  The kernel's own `auto` cannot tell the two
 * apart: it gives attributes to a listing's first reply and to replies
 * after a lookup in the directory, but these tools list a whole directory
 * first and stat afterwards.
 *
 * So the daemon guesses from what the previous directory's listing was
 * followed by: when most of the files listed without attributes were then
 * looked up, the next listings give attributes to every file but a few
 * probes (the first PROBES files of each listing), whose lookups keep
 * telling whether the tool still stats what it lists.  Directories are
 * never probes: every walk looks them up to descend.
 *
 * Threads: one struct per mount, shared by every request thread; a mutex
 * guards it, and lookups take it only when their parent is the directory
 * being watched (an atomic read first), so reads and lookups elsewhere do
 * not contend.  A wrong guess costs speed or kernel memory, never bytes.
 */
#ifndef SFS_FS_RDPLUS_H
#define SFS_FS_RDPLUS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct rdplus {
	pthread_mutex_t lock;
	_Atomic uint64_t dir;	/* the directory whose listing is watched */
	uint32_t probes;	/* its files listed without attributes */
	uint32_t looked;	/* lookups of its files since */
	int with_attrs;		/* the guess for listings now */
};

void rdplus_init(struct rdplus *r);
void rdplus_destroy(struct rdplus *r);

/* A listing of `dir` is being answered from directory offset `off`; at
 * off 0 of another directory the previous one's evidence is weighed. */
void rdplus_listing(struct rdplus *r, uint64_t dir, uint64_t off);

/* Whether the next file entry listed in `dir` carries its attributes. */
int rdplus_file_entry(struct rdplus *r, uint64_t dir);

/* A LOOKUP of a file (not a directory) in `parent` succeeded. */
void rdplus_lookup(struct rdplus *r, uint64_t parent);

#endif
