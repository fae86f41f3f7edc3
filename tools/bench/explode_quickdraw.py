#!/usr/bin/python3
"""explode_quickdraw - the step samplefs replaces: write every Quick, Draw!
sample as its own .npy file, the way a training pipeline's preprocessing does.

Usage: explode_quickdraw.py SOURCE OUTDIR [PROCESSES]

SOURCE is what tools/bench/gen_quickdraw.py writes (classes.txt,
numpy_bitmap/<class>.npy, sketchrnn/<class>.npz).  OUTDIR gets the same tree
samplefs serves:
  images/<class>/<gidx:06d>.npy    float32 (28, 28, 1) = uint8 / 255.0
  strokes/<class>/<gidx:06d>.npy   float32 (130, 3), the reference stroke
                                   preprocessing (tests/fixtures/make_strokes.py)
gidx runs over all classes in label order; a class has min(images, strokes)
samples.  Work is split by class over PROCESSES (default 2) processes.  A
first pass reads the class files to count samples (gidx needs the counts of
the classes before), the second pass writes.

For the benchmark only: its time is what samplefs' first mount is compared to.
"""
import multiprocessing
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "fixtures"))
from make_strokes import transform  # noqa: E402  the reference preprocessing

STROKE_LEN = 130


def load_strokes(src, name):
    with np.load(os.path.join(src, "sketchrnn", name + ".npz"),
                 encoding="latin1", allow_pickle=True) as z:
        keys = [k for k in ("train", "valid", "val", "test", "strokes")
                if k in z.files]
        return np.concatenate([z[k] for k in keys])


def count_class(src, name):
    images = np.load(os.path.join(src, "numpy_bitmap", name + ".npy"),
                     mmap_mode="r")
    return min(len(images), len(load_strokes(src, name)))


def explode_class(src, out, name, base, n):
    images = np.load(os.path.join(src, "numpy_bitmap", name + ".npy"),
                     mmap_mode="r")[:n]
    images = (images / 255.0).astype(np.float32).reshape(n, 28, 28, 1)
    strokes = load_strokes(src, name)
    idir = os.path.join(out, "images", name)
    sdir = os.path.join(out, "strokes", name)
    os.makedirs(idir, exist_ok=True)
    os.makedirs(sdir, exist_ok=True)
    for i in range(n):
        fname = "%06d.npy" % (base + i)
        np.save(os.path.join(idir, fname), images[i])
        np.save(os.path.join(sdir, fname), transform(strokes[i], STROKE_LEN))
    return n


def main(src, out, procs=2):
    with open(os.path.join(src, "classes.txt")) as f:
        classes = [l.rstrip("\n") for l in f if l.strip()]
    t0 = time.time()
    with multiprocessing.Pool(procs) as pool:
        counts = pool.starmap(count_class, [(src, c) for c in classes])
        bases = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
        jobs = [(src, out, c, b, n) for c, b, n in zip(classes, bases, counts)]
        done = sum(pool.starmap(explode_class, jobs, chunksize=1))
    print("explode_quickdraw: %d samples (%d files) in %.1f s"
          % (done, 2 * done, time.time() - t0))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 2)
