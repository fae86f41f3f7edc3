#!/usr/bin/python3
"""gen_imagenet - an ILSVRC2012-shaped release for the benchmark, fast.

Usage: gen_imagenet.py OUTDIR NCLASSES PER_CLASS NVAL FLAT_CLASSES [SEED]

With GEN_IMAGENET_MEMBER_KB=LO-HI in the environment (e.g. 60-160, as the
real release's JPEGs, which average 110 KB) every member is padded with
more COM segments to a size drawn uniformly from LO to HI KB; without it
members are a few KB.

Writes into OUTDIR:
  ILSVRC2012_img_train.tar   NCLASSES members <wnid>.tar (in shuffled order),
                             each a tar of PER_CLASS <wnid>_<n>.JPEG
  ILSVRC2012_img_val.tar     NVAL flat ILSVRC2012_val_%08d.JPEG, shuffled
  ILSVRC2012_devkit_t12.tar.gz  (meta.mat + ground truth, written by
                             tests/fixtures/make_imagenet.py's own helpers)
  flat.tar                   train/<wnid>/<member> of the first FLAT_CLASSES
                             classes in one flat tar (for archivemount, which
                             does not look inside nested tars)
  train.txt                  every train member as train/<wnid>/<member>\t<size>
  manifest.json              counts and sizes

Not the test fixture generator (tests/fixtures/make_imagenet.py encodes each
image with PIL and writes through tarfile, far too slow for 1.28 M members).
Here a few hundred real tiny JPEGs are encoded once and every member is one
of them with a JPEG comment segment (COM) of random bytes spliced in after
SOI, so every member differs and is still a valid JPEG of a few KB; the tars
are written by a minimal ustar writer (GNU tar-style 10240-byte records).
"""
import io
import json
import os
import random
import struct
import sys
import tarfile
import time

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "fixtures"))

MTIME = 1331856000
RECORD = 10240
NBASES = 300


def base_jpegs(rng):
    """NBASES small real JPEGs of roughly 1.5 - 9 KB."""
    out = []
    nprng = np.random.default_rng(rng.randint(0, 1 << 30))
    for _ in range(NBASES):
        w, h = rng.randint(40, 84), rng.randint(40, 84)
        px = nprng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(px, "RGB").save(buf, format="JPEG",
                                        quality=rng.randint(40, 90))
        out.append(buf.getvalue())
    return out


class Members:
    """Makes member bytes: a base JPEG with a random COM segment."""

    def __init__(self, rng):
        self.bases = base_jpegs(rng)
        self.noise = os.urandom(1 << 20)
        self.rng = rng
        kb = os.environ.get("GEN_IMAGENET_MEMBER_KB")
        self.size = tuple(int(x) * 1000 for x in kb.split("-")) if kb else None

    def com(self, k):
        """a COM segment of k random bytes (k <= 65533)"""
        at = self.rng.randrange(len(self.noise) - k)
        return b"\xff\xfe" + struct.pack(">H", k + 2) + self.noise[at:at + k]

    def make(self):
        b = self.bases[self.rng.randrange(NBASES)]
        segs = [self.com(self.rng.randint(8, 512))]
        if self.size:
            left = self.rng.randint(*self.size) - len(b) - len(segs[0])
            while left > 4:
                k = min(left - 4, 65533)
                segs.append(self.com(k))
                left -= k + 4
        return b[:2] + b"".join(segs) + b[2:]


def ustar_header(name, size, mtime=MTIME):
    """A ustar header block (names < 100 bytes, as all of ours are)."""
    n = name.encode()
    assert len(n) < 100
    h = bytearray(512)
    h[0:len(n)] = n
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % size
    h[136:148] = b"%011o\0" % mtime
    h[148:156] = b"        "
    h[156:157] = b"0"
    h[257:265] = b"ustar\x0000"
    h[265:269] = b"root"
    h[297:301] = b"root"
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def tar_bytes(members):
    """A whole tar (list of (name, bytes)) as bytes, padded to a record."""
    parts = []
    for name, data in members:
        parts.append(ustar_header(name, len(data)))
        parts.append(data)
        parts.append(b"\0" * (-len(data) % 512))
    parts.append(b"\0" * 1024)
    out = b"".join(parts)
    return out + b"\0" * (-len(out) % RECORD)


class TarWriter:
    """Streams members into a tar file."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.pos = 0

    def add(self, name, data):
        pad = b"\0" * (-len(data) % 512)
        self.f.write(ustar_header(name, len(data)))
        self.f.write(data)
        self.f.write(pad)
        self.pos += 512 + len(data) + len(pad)

    def close(self):
        end = b"\0" * 1024
        end += b"\0" * (-(self.pos + len(end)) % RECORD)
        self.f.write(end)
        self.f.close()


def member_numbers(rng, count):
    """ImageNet-like member numbers: unique, not consecutive, not sorted."""
    nums = rng.sample(range(1, max(20000, 4 * count)), count)
    return nums


def write_train(out, wnids, per_class, flat_classes, gen, rng):
    order = list(wnids)
    rng.shuffle(order)                      # the outer tar is not in WNID order
    flat_set = set(wnids[:flat_classes])
    outer = TarWriter(os.path.join(out, "ILSVRC2012_img_train.tar"))
    flat = TarWriter(os.path.join(out, "flat.tar"))
    listing = open(os.path.join(out, "train.txt"), "w")
    total = 0
    for w in order:
        members = [("%s_%d.JPEG" % (w, n), gen.make())
                   for n in member_numbers(rng, per_class)]
        outer.add(w + ".tar", tar_bytes(members))
        for name, data in members:
            listing.write("train/%s/%s\t%d\n" % (w, name, len(data)))
            total += len(data)
            if w in flat_set:
                flat.add("train/%s/%s" % (w, name), data)
    outer.close()
    flat.close()
    listing.close()
    return total


def write_val(out, nval, gen, rng):
    names = ["ILSVRC2012_val_%08d.JPEG" % i for i in range(1, nval + 1)]
    rng.shuffle(names)                      # not in sorted order in the tar
    val = TarWriter(os.path.join(out, "ILSVRC2012_img_val.tar"))
    for name in names:
        val.add(name, gen.make())
    val.close()


def write_devkit(out, wnids, nval, rng):
    """meta.mat and ground truth via the fixture generator's own helpers."""
    try:
        import make_imagenet as mi
    except ImportError:
        print("gen_imagenet: tests/fixtures/make_imagenet.py missing, no devkit")
        return
    words = dict(mi.load_wnids())
    recs = mi.synsets_records(wnids, {w: words.get(w, "") for w in wnids}, rng)
    ids = [r["ILSVRC2012_ID"] for r in recs if r["num_children"] == 0]
    gt = [rng.choice(ids) for _ in range(nval)]
    mi.make_devkit(os.path.join(out, "ILSVRC2012_devkit_t12.tar.gz"), recs, gt,
                   True)


def main(out, nclasses, per_class, nval, flat_classes, seed=0):
    rng = random.Random(seed)
    with open("/work/shared/data/imagenet-wnids.txt") as f:
        allw = sorted(l.split()[0] for l in f if l.strip())
    wnids = allw if nclasses >= len(allw) else sorted(rng.sample(allw, nclasses))
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    gen = Members(rng)
    total = write_train(out, wnids, per_class, flat_classes, gen, rng)
    write_val(out, nval, gen, rng)
    write_devkit(out, wnids, nval, rng)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(dict(classes=len(wnids), per_class=per_class, nval=nval,
                       members=len(wnids) * per_class, member_bytes=total,
                       flat_wnids=wnids[:flat_classes], seed=seed), f)
    print("gen_imagenet: %d x %d members (mean %.0f bytes) in %.1f s"
          % (len(wnids), per_class, total / (len(wnids) * per_class),
             time.time() - t0))


def self_check(out):
    """tarfile must read what we wrote (cheap spot check of one class)."""
    with tarfile.open(os.path.join(out, "ILSVRC2012_img_train.tar")) as tf:
        ti = tf.next()
        inner = tarfile.open(fileobj=tf.extractfile(ti))
        m = inner.next()
        data = inner.extractfile(m).read()
        assert data[:2] == b"\xff\xd8" and m.size == len(data), m.name
        Image.open(io.BytesIO(data)).load()


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    a = [int(x) for x in sys.argv[2:]]
    main(sys.argv[1], *a)
    self_check(sys.argv[1])
