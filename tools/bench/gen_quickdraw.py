#!/usr/bin/python3
"""gen_quickdraw - a Quick, Draw!-shaped source for the benchmark, fast.

Writes into OUTDIR:
  classes.txt                 the label order (one class per line)
  numpy_bitmap/<class>.npy    uint8 (per_class, 784), what np.save writes
  sketchrnn/<class>.npz       deflated .npz (as np.savez_compressed) with keys train / valid /
                              test (1-D object arrays of int16 (n, 3) drawings,
                              pickled by numpy's standard pickler), together
                              per_class drawings
  manifest.json               what was written (classes, per_class, sizes)

Not the test fixture generator (tests/fixtures/make_quickdraw.py checks every
pickle flavour and writes small data slowly and carefully); this one only has
to be realistic in size and shape and quick: drawings are random walks made
for a whole class at once with numpy, images are random bytes.

Usage: gen_quickdraw.py OUTDIR CLASSES_FILE NCLASSES PER_CLASS [SEED]
Drawing lengths are 10..130 points (mean ~70, like sketchrnn's simplified
drawings); dx, dy in [-40, 40]; the pen lifts at ~8% of points and always
at the last one.
"""
import json
import multiprocessing
import os
import sys
import time
import zipfile

import numpy as np


def class_drawings(rng, count):
    """`count` int16 (n, 3) random-walk drawings, as views of one array."""
    lens = rng.integers(10, 131, size=count)
    total = int(lens.sum())
    pts = np.empty((total, 3), dtype=np.int16)
    pts[:, 0:2] = rng.integers(-40, 41, size=(total, 2), dtype=np.int16)
    pts[:, 2] = rng.random(total) < 0.08
    ends = np.cumsum(lens)
    pts[ends - 1, 2] = 1
    out = np.empty(count, dtype=object)
    starts = ends - lens
    for i in range(count):
        # a copy, so each pickles as its own small array (as in the real files)
        out[i] = pts[starts[i]:ends[i]].copy()
    return out


def split_counts(n):
    """train / valid / test sizes in the real files' 70000:2500:2500 ratio."""
    valid = test = n * 2500 // 75000
    return n - valid - test, valid, test


def write_class(out, name, seed, per_class):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(per_class, 784), dtype=np.uint8)
    np.save(os.path.join(out, "numpy_bitmap", name + ".npy"), images)
    d = class_drawings(rng, per_class)
    tr, va, _ = split_counts(per_class)
    write_npz(os.path.join(out, "sketchrnn", name + ".npz"),
              dict(train=d[:tr], valid=d[tr:tr + va], test=d[tr + va:]))


def write_npz(path, arrays):
    """np.savez_compressed, but deflate level 1: random walks compress
    slowly at level 6 and the reader does not care which level was used."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=1) as zf:
        for key, arr in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=True)


def main(out, classes_file, nclasses, per_class, seed=0):
    with open(classes_file) as f:
        classes = [l.rstrip("\n") for l in f if l.strip()][:nclasses]
    os.makedirs(os.path.join(out, "numpy_bitmap"), exist_ok=True)
    os.makedirs(os.path.join(out, "sketchrnn"), exist_ok=True)
    t0 = time.time()
    jobs = [(out, name, seed * 100003 + i, per_class)
            for i, name in enumerate(classes)]
    with multiprocessing.Pool(2) as pool:
        pool.starmap(write_class, jobs, chunksize=4)
    with open(os.path.join(out, "classes.txt"), "w") as f:
        f.writelines(c + "\n" for c in classes)
    npz = sum(os.path.getsize(os.path.join(out, "sketchrnn", c + ".npz"))
              for c in classes)
    npy = sum(os.path.getsize(os.path.join(out, "numpy_bitmap", c + ".npy"))
              for c in classes)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(dict(classes=classes, per_class=per_class, seed=seed,
                       npz_bytes=npz, npy_bytes=npy), f)
    print("gen_quickdraw: %d classes x %d in %.1f s (npy %.0f MB, npz %.0f MB)"
          % (len(classes), per_class, time.time() - t0, npy / 1e6, npz / 1e6))


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
         int(sys.argv[5]) if len(sys.argv) == 6 else 0)
