/*
 * kaggle.h - the two label files of Kaggle's ImageNet zip
 * (imagenet-object-localization-challenge.zip), into the devkit's struct
 * (formats/devkit.h), so layout=imagenet labels it as the release:
 *   LOC_synset_mapping.txt   "n01440764 tench, Tinca tinca\n" per class,
 *                            in WNID order (label = line number)
 *   LOC_val_solution.csv     "ImageId,PredictionString\n" then
 *                            "ILSVRC2012_val_00000001,n01751748 x y x y ...\n":
 *                            the first WNID of the boxes is the label
 *
 * Not for: finding them in the zip (layouts), the bounding boxes.
 */
#ifndef SFS_KAGGLE_H
#define SFS_KAGGLE_H

#include <stddef.h>

#include "formats/devkit.h"

/*
 * Parses the synset mapping buf[0..len) into dk's classes (nclasses, wnid,
 * words).  0; -EINVAL with a message naming `what` and the line when a
 * line is malformed, a WNID repeats or the WNIDs are not in order; -ENOMEM.
 */
int kaggle_synsets_parse(const char *buf, size_t len, const char *what,
			 struct devkit *dk);

/*
 * Parses the val solution buf[0..len) into dk's val labels (nval,
 * val_label[i] for ILSVRC2012_val_<i+1>; UINT32_MAX where no row says);
 * dk's classes must be parsed.  0; -EINVAL (message: `what`, the line)
 * on a malformed row or an unknown WNID; -ENOMEM.
 */
int kaggle_val_parse(const char *buf, size_t len, const char *what,
		     struct devkit *dk);

#endif
