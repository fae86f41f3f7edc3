#!/usr/bin/python3
"""lists - the path lists the benchmark's reader (readfiles.c) works through.

Paths are relative to a mount point or tree root, so one list serves samplefs,
the exploded/extracted tree and squashfuse alike; the floor gets a list of the
same length in its own d<k>/<i>.<ext> tree.  Everything is derived from the
generators' manifests, never from walking a mount (that would warm the very
caches a first pass must find empty).

  lists.py qd MANIFEST OUTDIR NREAD NSTROKES SEED [NCLASSES]
      (NCLASSES: only the first NCLASSES classes, as with -o classes=)
      qd_images.txt       the first NREAD images/<class>/<gidx:06d>.npy, gidx order
      qd_strokes.txt      NSTROKES strokes/<class>/<gidx:06d>.npy, random order
      floor_images.txt    NREAD floor files in order (per_dir = per_class)
      floor_strokes.txt   NSTROKES floor files in random order
      prints "IMAGE_BYTES STROKE_BYTES NSAMPLES": the sizes np.save gives
  lists.py in SRCDIR OUTDIR NREAD NFLAT SEED    (gen_imagenet.py's OUTDIR)
      in_random.txt       NREAD random train/<wnid>/<member>
      floor_in.txt        NREAD floor files in random order (per_dir 1281)
      flat_random.txt     NFLAT random members of the classes in flat.tar
      prints "MEAN_MEMBER_BYTES NMEMBERS"
"""
import io
import os
import random
import sys

import numpy as np

STROKE_LEN = 130
FLOOR_PER_DIR_IN = 1281


def npy_size(shape):
    buf = io.BytesIO()
    np.save(buf, np.zeros(shape, np.float32))
    return len(buf.getvalue())


def floor_path(i, per_dir, ext):
    return "d%d/%06d.%s" % (i // per_dir, i, ext)


def write(path, lines):
    with open(path, "w") as f:
        f.writelines(l + "\n" for l in lines)


def quickdraw(manifest, out, nread, nstrokes, seed, nclasses=None):
    import json
    with open(manifest) as f:
        m = json.load(f)
    classes, per = m["classes"][:nclasses], m["per_class"]
    total = len(classes) * per
    nread, nstrokes = min(nread, total), min(nstrokes, total)

    def path(kind, g):
        return "%s/%s/%06d.npy" % (kind, classes[g // per], g)

    rng = random.Random(seed)
    write(os.path.join(out, "qd_images.txt"),
          [path("images", g) for g in range(nread)])
    write(os.path.join(out, "qd_strokes.txt"),
          [path("strokes", g) for g in rng.sample(range(total), nstrokes)])
    write(os.path.join(out, "floor_images.txt"),
          [floor_path(i, per, "npy") for i in range(nread)])
    order = list(range(nstrokes))
    rng.shuffle(order)
    write(os.path.join(out, "floor_strokes.txt"),
          [floor_path(i, per, "npy") for i in order])
    print(npy_size((28, 28, 1)), npy_size((STROKE_LEN, 3)), total)


def imagenet(src, out, nread, nflat, seed):
    import json
    with open(os.path.join(src, "train.txt")) as f:
        rows = [l.rstrip("\n").split("\t") for l in f]
    with open(os.path.join(src, "manifest.json")) as f:
        flat = set(json.load(f)["flat_wnids"])
    rng = random.Random(seed)
    nread = min(nread, len(rows))
    write(os.path.join(out, "in_random.txt"),
          [r[0] for r in rng.sample(rows, nread)])
    order = list(range(nread))
    rng.shuffle(order)
    write(os.path.join(out, "floor_in.txt"),
          [floor_path(i, FLOOR_PER_DIR_IN, "JPEG") for i in order])
    in_flat = [r[0] for r in rows if r[0].split("/")[1] in flat]
    write(os.path.join(out, "flat_random.txt"),
          rng.sample(in_flat, min(nflat, len(in_flat))))
    mean = sum(int(r[1]) for r in rows) / len(rows)
    print(int(round(mean)), len(rows))


if __name__ == "__main__":
    if len(sys.argv) in (7, 8) and sys.argv[1] == "qd":
        quickdraw(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                  int(sys.argv[6]), int(sys.argv[7]) if len(sys.argv) == 8 else None)
    elif len(sys.argv) == 7 and sys.argv[1] == "in":
        imagenet(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                 int(sys.argv[6]))
    else:
        sys.exit(__doc__)
