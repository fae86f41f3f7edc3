/*
 * devkit.h - the labels of ILSVRC2012, read from ILSVRC2012_devkit_t12.tar.gz.
 *
 * From data/meta.mat (the `synsets` struct) we keep the leaf classes
 * (num_children == 0): their WNIDs sorted, which is the label order every
 * loader uses (label = index in the sorted WNIDs), their words, and the
 * ILSVRC2012_ID -> label map.  Leaf WNIDs become directory names, so one
 * that is not letters, digits, '_' and '-' refuses the devkit.  From
 * data/ILSVRC2012_validation_ground_truth.txt we keep one label per val
 * image, in ascending file-name order.
 *
 * Built once at index build time (heap-allocated, read-only afterwards).
 * Not for: the images themselves, or the hierarchy of non-leaf synsets.
 */
#ifndef SFS_DEVKIT_H
#define SFS_DEVKIT_H

#include <stdint.h>
#include <stddef.h>

#define DEVKIT_WNID_MAX 16	/* "n01440764" and a NUL, with room */
#define DEVKIT_MAX_CLASSES 100000
#define DEVKIT_MAX_VAL (16u << 20)

struct devkit {
	uint32_t nclasses;
	char (*wnid)[DEVKIT_WNID_MAX];	/* sorted: wnid[label] */
	char **words;			/* words[label], never NULL */
	uint32_t max_id;
	uint32_t *id_label;		/* ILSVRC2012_ID -> label, UINT32_MAX if none */
	uint32_t nval;
	uint32_t *val_label;		/* label of val image i+1 (file-name order) */
};

struct source;

/* Reads both members from the devkit tarball `src` (io/source.h; found by
 * their path suffix, wherever the top directory is).  0 or -errno
 * (printed, naming the source). */
int devkit_load(struct source *src, struct devkit *dk);
/* The meta.mat part alone, from memory; `what` names it in messages. */
int devkit_parse_meta(const uint8_t *buf, size_t len, const char *what,
		      struct devkit *dk);
/* The ground-truth part alone (needs the meta part first). */
int devkit_parse_truth(const char *text, size_t len, const char *what,
		       struct devkit *dk);
void devkit_free(struct devkit *dk);

/* label of a WNID (binary search), or -1 */
int64_t devkit_label(const struct devkit *dk, const char *wnid);

#endif
