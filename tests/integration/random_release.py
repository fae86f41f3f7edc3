#!/usr/bin/python3
"""An ImageNet-shaped train tar of random bytes, for the layout's tests.

    random_release.py DIR SEED CLASSES PER MIN_BYTES MAX_BYTES

Writes DIR/ILSVRC2012_img_train.tar: CLASSES class tars <wnid>.tar in
shuffled order, each PER members <wnid>_<n>.JPEG of MIN_BYTES to
MAX_BYTES random bytes (the layout does not decode images); no devkit and
no val tar, so the labels are the sorted class WNIDs.  Written by tarfile
(ustar), so the members lie in place in the tar.  Not an oracle: the
tests read the tar back with imagenet_oracle.py.
"""
import io
import os
import random
import sys
import tarfile


def main(out, seed, classes, per, lo, hi):
    rng = random.Random(seed)
    wnids = ["n%08d" % (1440764 + 17 * i) for i in range(classes)]
    rng.shuffle(wnids)
    with tarfile.open(os.path.join(out, "ILSVRC2012_img_train.tar"), "w",
                      format=tarfile.USTAR_FORMAT) as outer:
        for w in wnids:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as inner:
                for n in rng.sample(range(1, 20000), per):
                    data = rng.randbytes(rng.randint(lo, hi))
                    ti = tarfile.TarInfo("%s_%d.JPEG" % (w, n))
                    ti.size, ti.mtime = len(data), 1331856000
                    inner.addfile(ti, io.BytesIO(data))
            ti = tarfile.TarInfo(w + ".tar")
            ti.size, ti.mtime = len(buf.getvalue()), 1331856000
            outer.addfile(ti, io.BytesIO(buf.getvalue()))


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    main(sys.argv[1], *(int(x) for x in sys.argv[2:]))
