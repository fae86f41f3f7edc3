#!/usr/bin/python3
"""Quick, Draw! training input read from a samplefs mount: the article's
generator (what it fed to tf.data) and a PyTorch Dataset, both unchanged but
for their root.  Nothing here knows about samplefs: it reads files.

    samplefs /data/quickdraw /mnt/qd
    python3 loader.py /mnt/qd [batch_size]

The tree (see docs/layouts.md):  /classes.txt, /images/<class>/<gidx:06d>.npy
(float32 (28, 28, 1)), /strokes/<class>/<gidx:06d>.npy (float32 (130, 3)),
/splits/{train,val,test}.txt lines "image<TAB>strokes<TAB>label" (either path
missing when the source has no such files).
"""
import os
import sys
from glob import escape, glob

import numpy as np


def read_split(root, split):
    """[(image path or None, strokes path or None, label)] in the split file's
    (already shuffled) order."""
    out = []
    with open(os.path.join(root, 'splits', split + '.txt')) as f:
        for line in f:
            *paths, label = line.rstrip('\n').split('\t')
            img = next((os.path.join(root, p) for p in paths if p.startswith('images/')), None)
            stk = next((os.path.join(root, p) for p in paths if p.startswith('strokes/')), None)
            out.append((img, stk, int(label)))
    return out


def data_generator(root, split='train', batch_size=64):
    """The article's generator: yields (images, strokes, labels) batches for
    one epoch, np.load of each sample file, stacked.  For tf.data:
    tf.data.Dataset.from_generator(lambda: data_generator(root), ...)."""
    items = read_split(root, split)
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        images = np.stack([np.load(p) for p, _, _ in chunk]) if chunk[0][0] else None
        strokes = np.stack([np.load(p) for _, p, _ in chunk]) if chunk[0][1] else None
        yield images, strokes, np.array([l for _, _, l in chunk], dtype=np.int64)


def torch_dataset(root, split='train'):
    """A map-style torch Dataset of (image, strokes, label) tensors."""
    import torch

    class QuickDraw(torch.utils.data.Dataset):
        def __init__(self):
            self.items = read_split(root, split)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            img, stk, label = self.items[i]
            return (torch.from_numpy(np.load(img)).permute(2, 0, 1),  # (1, 28, 28)
                    torch.from_numpy(np.load(stk)), label)

    return QuickDraw()


def main(root, batch_size=64):
    import torch
    with open(os.path.join(root, 'classes.txt')) as f:
        classes = f.read().splitlines()
    first = sorted(glob(os.path.join(root, 'images', escape(classes[0]), '*.npy')))
    # flush=True: DataLoader workers are forked, and must not inherit (and print again) our buffer
    print('%d classes; %d images of %r' % (len(classes), len(first), classes[0]), flush=True)
    dl = torch.utils.data.DataLoader(torch_dataset(root, 'train'), batch_size=batch_size,
                                     shuffle=True, num_workers=2)
    n = 0
    for images, strokes, labels in dl:
        n += len(labels)
    print('torch DataLoader: train %d samples, last batch images %s strokes %s' % (
        n, tuple(images.shape), tuple(strokes.shape)), flush=True)
    n = 0
    for images, strokes, labels in data_generator(root, 'train', batch_size):
        n += len(labels)
    print('train: %d samples (generator)' % n)


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64)
