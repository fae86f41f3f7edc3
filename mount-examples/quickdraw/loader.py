#!/usr/bin/python3
"""The Quick, Draw! article's data generator, unchanged except for its root:
it reads the per-sample files a samplefs mount serves, exactly as it read the
exploded tree the preprocessing step used to write.

    samplefs /data/quickdraw /mnt/qd
    python3 loader.py /mnt/qd [batch_size]

The tree (see README.md):  /classes.txt, /images/<class>/<gidx:06d>.npy
(float32 (28, 28, 1)), /strokes/<class>/<gidx:06d>.npy (float32 (130, 3)),
/splits/{train,val,test}.txt lines "image<TAB>strokes<TAB>label".
"""
import os
import sys
import time
from glob import glob

import numpy as np


def read_split(root, split):
    """[(image path, stroke path, label)] in the split file's (shuffled) order."""
    out = []
    with open(os.path.join(root, 'splits', split + '.txt')) as f:
        for line in f:
            *paths, label = line.rstrip('\n').split('\t')
            img = os.path.join(root, paths[0]) if paths[0].startswith('images/') else None
            stk = os.path.join(root, paths[-1]) if paths[-1].startswith('strokes/') else None
            out.append((img, stk, int(label)))
    return out


def data_generator(root, split='train', batch_size=64):
    """Yields (images, strokes, labels) batches for one epoch, as the
    article's generator did: np.load each sample file, stack."""
    items = read_split(root, split)
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        images = np.stack([np.load(p) for p, _, _ in chunk]) if chunk[0][0] else None
        strokes = np.stack([np.load(p) for _, p, _ in chunk]) if chunk[0][1] else None
        labels = np.array([l for _, _, l in chunk], dtype=np.int64)
        yield images, strokes, labels


def main(root, batch_size=64):
    with open(os.path.join(root, 'classes.txt')) as f:
        classes = f.read().splitlines()
    first = classes[0]
    cat_files = sorted(glob(os.path.join(root, 'images', first, '*.npy')))
    print('%d classes; %d images of %r; first: %s' % (
        len(classes), len(cat_files), first,
        np.load(cat_files[0]).shape if cat_files else None))
    n, t0 = 0, time.time()
    for images, strokes, labels in data_generator(root, 'train', batch_size):
        n += len(labels)
        if n == len(labels):
            print('batch: images %s strokes %s labels %s' % (
                None if images is None else (images.shape, images.dtype),
                None if strokes is None else (strokes.shape, strokes.dtype),
                labels[:8]))
    dt = time.time() - t0
    print('train: %d samples in %.1f s (%.0f samples/s)' % (n, dt, n / dt if dt else 0))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64)
