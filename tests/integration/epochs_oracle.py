#!/usr/bin/python3
"""/epochs/<e> of an ImageNet or Quick, Draw! mount against a physical
sharder: for each epoch asked, numpy's permutation np.random.seed([seed, e]);
np.random.shuffle(np.arange(n)) of the split's base order (ImageNet: its
ImageFolder order, class then name; Quick, Draw!: the lines of
splits/<split>.txt; docs/layouts.md), cut into shards of S samples, each
written by Python's tarfile (ImageNet: <key>.cls then <key>.jpg; Quick,
Draw!: <gidx>.cls, <gidx>.npy, <gidx>.strokes.npy with qd_oracle.py's
bytes; mode 0444, uid/gid 0, no user or group names, the release's mtime),
and compared byte for byte.

    epochs_oracle.py SOURCE MOUNT --shard-size S [--seed N] --epochs E ...
                     [--quickdraw]

Also: shuffled/<split>.txt of each epoch, every sample once per epoch
(read back with tarfile), the epochs differing, random preads, many epochs
read at once by threads (more than the mount keeps), an empty listing of
/epochs and ENOENT for names that are not an epoch or a shard.  Prints one
line per failure; exits 1 if any.
"""
import argparse
import collections
import concurrent.futures
import errno
import io
import os
import random
import sys
import tarfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from imagenet_oracle import (DEVKIT, TRAIN_TAR, VAL_TAR, read_devkit,  # noqa: E402
                             read_train, read_val)

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def splits(src):
    """{split: [(label, name, bytes)] in ImageFolder order} (labelled only)."""
    dk = read_devkit(os.path.join(src, DEVKIT)) if os.path.exists(os.path.join(src, DEVKIT)) else None
    train, val = read_train(src), read_val(src)
    if dk:
        wnids, _, id2w, val_ids = dk
    else:
        wnids, val_ids = sorted({w for w, _, _ in train}), []
    label = {w: i for i, w in enumerate(wnids)}
    out = {}
    if train and wnids:
        out["train"] = sorted((label[w], name, data) for w, name, data in train if w in label)
    if val and val_ids and wnids:
        v = []
        for name, data in val:
            num = name[len("ILSVRC2012_val_"):].split(".")[0]
            if name.startswith("ILSVRC2012_val_") and num.isdigit() and 1 <= int(num) <= len(val_ids):
                v.append((label[id2w[val_ids[int(num) - 1]]], name, data))
        out["val"] = sorted(v)
    return out


def qd_splits(src):
    """{split: [(label, key, [(ext, bytes)...])] in splits/<split>.txt order}"""
    from qd_oracle import Dataset, npy_bytes
    ds = Dataset(src)
    out = {}
    for s in ("train", "val", "test"):
        samples = []
        for g in ds.splits[s + ".txt"]:
            g = int(g)
            c = ds.label_of(g)
            i = g - ds.base[c]
            parts = []
            if ds.has_images:
                parts.append((".npy", ds.image_bytes(c, i)))
            if ds.has_strokes:
                parts.append((".strokes.npy", npy_bytes(ds.stroke_array(c, i))))
            samples.append((c, "%06d" % g, parts))
        if samples:
            out[s] = samples
    return out


def release_mtime(src):
    paths = [os.path.join(src, p) for p in (TRAIN_TAR, VAL_TAR)]
    if os.path.isdir(os.path.join(src, "train")):
        paths += [os.path.join(src, "train", f) for f in os.listdir(os.path.join(src, "train"))]
    return max([int(os.stat(p).st_mtime) for p in paths if os.path.exists(p)] + [0])


def permutation(seed, e, n):
    """The documented permutation of epoch e (docs/layouts.md)."""
    np.random.seed([seed, e])
    perm = np.arange(n)
    np.random.shuffle(perm)
    return [int(c) for c in perm]


def members(sample):
    """[(member, bytes)] of a sample, keys in sorted order as webdataset writes"""
    label, name, data = sample
    if isinstance(data, list):    # Quick, Draw!: the key and its files
        return [(name + ".cls", str(label).encode())] + [(name + x, b) for x, b in data]
    key = name.rsplit(".", 1)[0] if "." in name[1:] else name
    return [(key + ".cls", str(label).encode()), (key + ".jpg", data)]


def shard_bytes(samples, mtime):
    """A physical shard: tarfile writing each sample as webdataset does."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for sample in samples:
            for member, body in members(sample):
                ti = tarfile.TarInfo(member)
                ti.size, ti.mode, ti.mtime = len(body), 0o444, mtime
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                tf.addfile(ti, io.BytesIO(body))
    return out.getvalue()


def expected(sp, seed, e, S, mtime):
    """({shard name: bytes}, {split: shuffled.txt bytes}, {split: perm})"""
    shards, txt, perms = {}, {}, {}
    for s, samples in sp.items():
        perm = permutation(seed, e, len(samples))
        perms[s] = perm
        for k in range((len(samples) + S - 1) // S):
            shards["%s-%06d.tar" % (s, k)] = shard_bytes([samples[c] for c in perm[k * S:(k + 1) * S]], mtime)
        txt[s] = "".join("%d/%d.%s\n" % (p // S, samples[c][0], samples[c][1])
                         for p, c in enumerate(perm)).encode()
    return shards, txt, perms


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_epoch(mnt, sp, seed, e, S, mtime, rng, qd):
    shards, txt, perms = expected(sp, seed, e, S, mtime)
    d = os.path.join(mnt, "epochs", str(e))
    got = sorted(os.listdir(os.path.join(d, "shards")))
    if got != sorted(shards):
        fail("epoch %d: shards %s, want %s" % (e, got[:4], sorted(shards)[:4]))
    if sorted(os.listdir(d)) != (["shards"] if qd else ["shards", "shuffled"]):
        fail("epoch %d: lists %s" % (e, sorted(os.listdir(d))))
    for name, want in sorted(shards.items()):
        path = os.path.join(d, "shards", name)
        data = read(path)
        if os.stat(path).st_size != len(want) or data != want:
            fail("epoch %d: %s: %d bytes differ from the physical shard's %d" % (e, name, len(data), len(want)))
            continue
        with open(path, "rb") as f:
            for _ in range(8):
                off, n = rng.randrange(len(want)), rng.randrange(1, 3000)
                f.seek(off)
                if f.read(n) != want[off:off + n]:
                    fail("epoch %d: %s: pread(%d at %d) differs" % (e, name, n, off))
    for s, want in txt.items():
        if qd:
            break   # no shuffled/ for Quick, Draw!: splits/ has the names
        if read(os.path.join(d, "shuffled", s + ".txt")) != want:
            fail("epoch %d: shuffled/%s.txt differs" % (e, s))
    # every sample once: the mounted shards read back by tarfile
    for s, samples in sp.items():
        seen = collections.Counter()
        for name in got:
            if name.startswith(s + "-"):
                with tarfile.open(os.path.join(d, "shards", name)) as tf:
                    seen.update(m.name for m in tf if m.name.endswith(".cls"))
        want = collections.Counter(members(x)[0][0] for x in samples)
        if seen != want or max(seen.values(), default=1) != 1:
            fail("epoch %d: %s: samples not each once (%d read, %d distinct, %d in the split)"
                 % (e, s, sum(seen.values()), len(seen), len(samples)))
    return perms, shards


def check_names(mnt, sp, S):
    ep = os.path.join(mnt, "epochs")
    if os.listdir(ep):
        fail("/epochs lists %s, want nothing" % os.listdir(ep)[:4])
    nshards = {s: (len(v) + S - 1) // S for s, v in sp.items()}
    bad = ["-1", "2147483648", "4294967296", "abc", "007", "00", "+1", "1 ", "0x1",
           "99999999999999999999", "0/shards/train-1.tar", "0/shards/train-0000001.tar",
           "0/shards/train-%06d.tar" % nshards["train"] if "train" in sp else "0/x",
           "0/shards/tests-000000.tar", "0/shards/train-000000.tar/x", "0/shards/train",
           "0/shards/train-000000.tar.gz", "0/shards/-000000.tar", "0/shards/train-.tar",
           "0/shuffled/test.txt", "0/other", "1/shards/train-00000a.tar"]
    for b in bad:
        try:
            os.stat(os.path.join(ep, b))
            fail("epochs/%s exists" % b)
        except OSError as ex:
            if ex.errno not in (errno.ENOENT, errno.ENOTDIR):
                fail("epochs/%s: %s, want ENOENT" % (b, ex))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("mount")
    ap.add_argument("--shard-size", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, nargs="+", required=True)
    ap.add_argument("--quickdraw", action="store_true")
    a = ap.parse_args()
    sp = qd_splits(a.source) if a.quickdraw else splits(a.source)
    if not sp:
        fail("the oracle found no labelled split in %s" % a.source)
    mtime = int(os.stat(a.source).st_mtime) if a.quickdraw else release_mtime(a.source)
    rng = random.Random(1)
    perms, bytes_of = {}, {}
    for e in a.epochs:
        perms[e], bytes_of[e] = check_epoch(a.mount, sp, a.seed, e, a.shard_size, mtime, rng,
                                            a.quickdraw)
    for e in a.epochs[1:]:
        if perms[e] == perms[a.epochs[0]]:
            fail("epochs %d and %d have one permutation" % (a.epochs[0], e))
        if read(os.path.join(a.mount, "epochs", str(e), "shards", "train-000000.tar")) == \
                read(os.path.join(a.mount, "epochs", str(a.epochs[0]), "shards", "train-000000.tar")):
            fail("epochs %d and %d: the same train-000000.tar" % (a.epochs[0], e))
    check_names(a.mount, sp, a.shard_size)
    # more epochs than the mount keeps, read at once: each as it should be
    top = max(a.epochs + [9])
    many = [top - i for i in range(10)]
    want = {e: expected(sp, a.seed, e, a.shard_size, mtime)[0] for e in many}
    jobs = [(e, name) for e in many for name in sorted(want[e])] * 2
    random.Random(2).shuffle(jobs)
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda j: read(os.path.join(a.mount, "epochs", str(j[0]), "shards", j[1])), jobs))
    bad = [j for j, g in zip(jobs, got) if g != want[j[0]][j[1]]]
    if bad:
        fail("read at once by 8 threads: %d of %d shards differ, e.g. epoch %d %s" % (len(bad), len(jobs), *bad[0]))
    print("epochs_oracle: %d epochs, %d shards each, %s" % (
        len(a.epochs), len(bytes_of[a.epochs[0]]), "FAILED" if FAILURES else "ok"))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
