#!/usr/bin/python3
"""The ImageNet layout, computed independently with tarfile, scipy and numpy,
and compared with a mounted samplefs.

    imagenet_oracle.py SOURCE MOUNT [--shard-size S] [--shard-seed N]
                       [--shuffle-seed N] [--truth truth.json] [--preads N]

Checks: the exact set of paths under MOUNT, the sha256 of every file
(train/val members, shard files, classes.txt, shuffled/*.txt), every
virtual tar read by tarfile (names, order, .cls labels, .jpg contents,
mode/uid/mtime) plus random preads into its middle against a sequential
read, and (with --truth) the labels against the fixture generator's truth.
Prints one line per failure; exits 1 if any.
"""
import argparse
import hashlib
import io
import json
import os
import random
import re
import sys
import tarfile

import numpy as np
import scipy.io

TRAIN_TAR = "ILSVRC2012_img_train.tar"
VAL_TAR = "ILSVRC2012_img_val.tar"
DEVKIT = "ILSVRC2012_devkit_t12.tar.gz"
FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def safe_members(tf):
    """Members of a possibly damaged tar, stopping at the damage like samplefs."""
    out = []
    try:
        for m in tf:
            out.append(m)
    except (tarfile.ReadError, EOFError, OSError):
        pass
    return out


def read_devkit(path):
    """(sorted leaf wnids, words, id->wnid, val ids) or None if unusable."""
    try:
        with tarfile.open(path) as tf:
            names = tf.getnames()
            meta = next(n for n in names if n.endswith("data/meta.mat"))
            s = scipy.io.loadmat(io.BytesIO(tf.extractfile(meta).read()),
                                 squeeze_me=True)["synsets"]
            gt = [n for n in names if n.endswith("data/ILSVRC2012_validation_ground_truth.txt")]
            val = [int(l) for l in tf.extractfile(gt[0]).read().split()] if gt else []
        leaves = {}
        for x in np.atleast_1d(s):
            if int(x["num_children"]) == 0:
                leaves[str(x["WNID"])] = (int(x["ILSVRC2012_ID"]), str(x["words"]))
    except Exception as e:  # a meta.mat that is not what it claims
        print("oracle: devkit unusable:", e)
        return None
    wnids = sorted(leaves)
    return wnids, {w: leaves[w][1] for w in wnids}, {leaves[w][0]: w for w in wnids}, val


def read_train(src):
    """[(wnid, member, bytes)] in tar order."""
    out = []
    outer = os.path.join(src, TRAIN_TAR)
    if os.path.exists(outer):
        with tarfile.open(outer) as tf:
            for m in safe_members(tf):
                if not (m.isfile() and m.name.endswith(".tar")):
                    continue
                try:
                    data = tf.extractfile(m).read()
                except (tarfile.ReadError, OSError):
                    continue
                if len(data) != m.size:
                    continue
                out += read_class_tar(m.name[:-4], data)
        return out
    d = os.path.join(src, "train")
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            if re.fullmatch(r"n\d{8}\.tar", name):
                with open(os.path.join(d, name), "rb") as f:
                    out += read_class_tar(name[:-4], f.read())
    return out


def last_wins(items, key):
    """Duplicate names: the last member wins, at its own place (tar -x)."""
    d = {}
    for it in items:
        d.pop(key(it), None)
        d[key(it)] = it
    return list(d.values())


def read_class_tar(wnid, data):
    out = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for m in safe_members(tf):
                if m.isfile():
                    out.append((wnid, m.name, tf.extractfile(m).read()))
    except tarfile.ReadError:
        pass
    return last_wins(out, lambda x: x[1])


def read_val(src):
    p = os.path.join(src, VAL_TAR)
    if not os.path.exists(p):
        return None
    with tarfile.open(p) as tf:
        return last_wins([(m.name, tf.extractfile(m).read())
                          for m in safe_members(tf) if m.isfile()], lambda x: x[0])


def model(src, shard_size, shard_seed, shuffle_seed):
    """{path: bytes or ('vtar', [(stem, label, bytes)])} for the whole mount,
    the class WNIDs, and {shard file: the split's path it is a hard link to}."""
    dk = read_devkit(os.path.join(src, DEVKIT)) if os.path.exists(os.path.join(src, DEVKIT)) else None
    train = read_train(src)
    val = read_val(src)
    if dk:
        wnids, words, id2w, val_ids = dk
    else:
        wnids = sorted({w for w, _, _ in train})
        words, val_ids = {w: "" for w in wnids}, []
    label = {w: i for i, w in enumerate(wnids)}
    tree = {"classes.txt": "".join("%d\t%s\t%s\n" % (i, w, words[w])
                                   for i, w in enumerate(wnids)).encode()}
    splits = {}
    if train or os.path.exists(os.path.join(src, TRAIN_TAR)) or os.path.isdir(os.path.join(src, "train")):
        samples = [(label[w], name, data) for w, name, data in train if w in label]
        splits["train"] = (samples, bool(wnids))
        tree["train/"] = None
        for w in wnids:
            tree["train/%s/" % w] = None
        for l, name, data in samples:
            tree["train/%s/%s" % (wnids[l], name)] = data
    if val is not None:
        tree["val/"] = None
        if val_ids and wnids:
            samples = []
            for name, data in val:
                m = re.fullmatch(r"ILSVRC2012_val_(\d{8})\..*", name)
                if m and 1 <= int(m.group(1)) <= len(val_ids):
                    samples.append((label[id2w[val_ids[int(m.group(1)) - 1]]], name, data))
            for w in wnids:
                tree["val/%s/" % w] = None
            for l, name, data in samples:
                tree["val/%s/%s" % (wnids[l], name)] = data
            splits["val"] = (samples, True)
        else:
            for name, data in val:
                tree["val/" + name] = data
    links = {}
    add_shards(tree, links, wnids, splits, shard_size, shard_seed, shuffle_seed)
    return tree, wnids, links


def add_shards(tree, links, wnids, splits, S, shard_seed, shuffle_seed):
    labelled = {s: v for s, (v, lab) in splits.items() if lab}
    if not labelled:
        return
    tree["shards/"] = None
    tree["shuffled/"] = None
    tree["epochs/"] = None      # lists no epoch (epochs_oracle.py reads them)
    for s, tar_order in labelled.items():
        canon = sorted(range(len(tar_order)), key=lambda i: (tar_order[i][0], tar_order[i][1]))
        samples = [tar_order[i] for i in canon]   # ImageFolder order
        n = len(samples)
        if shard_seed is None:
            # tar order, expressed as canonical indices
            where = {i: c for c, i in enumerate(canon)}
            order = [where[i] for i in range(n)]
        else:
            np.random.seed(shard_seed)
            order = np.arange(n)
            np.random.shuffle(order)
            order = [int(x) for x in order]
        pos = {c: p for p, c in enumerate(order)}
        tree["shards/%s/" % s] = None
        nshards = (n + S - 1) // S
        for k in range(nshards):
            tree["shards/%s/%d/" % (s, k)] = None
            members = []
            for p in range(k * S, min(n, (k + 1) * S)):
                l, name, data = samples[order[p]]
                tree["shards/%s/%d/%d.%s" % (s, k, l, name)] = data
                links["shards/%s/%d/%d.%s" % (s, k, l, name)] = "%s/%s/%s" % (s, wnids[l], name)
                members.append((name.rsplit(".", 1)[0], l, data))
            tree["shards/%s-%06d.tar" % (s, k)] = ("vtar", members)
        np.random.seed(shuffle_seed)
        perm = np.arange(n)
        np.random.shuffle(perm)
        tree["shuffled/%s.txt" % s] = "".join(
            "%d/%d.%s\n" % (pos[int(c)] // S, samples[int(c)][0], samples[int(c)][1])
            for c in perm).encode()


def check_vtar(path, members, mtime, preads, rng):
    with open(path, "rb") as f:
        whole = f.read()
    if len(whole) % 10240:
        fail("%s: size %d is not a multiple of 10240" % (path, len(whole)))
    want = []
    for stem, label, data in members:
        want += [(stem + ".cls", str(label).encode()), (stem + ".jpg", data)]
    got = []
    with tarfile.open(fileobj=io.BytesIO(whole)) as tf:
        for m in tf:
            if m.mode != 0o444 or m.uid != 0 or m.gid != 0 or m.mtime != mtime:
                fail("%s: %s: mode %o uid %d mtime %d" % (path, m.name, m.mode, m.uid, m.mtime))
            got.append((m.name, tf.extractfile(m).read()))
    if [(n, sha(d)) for n, d in got] != [(n, sha(d)) for n, d in want]:
        fail("%s: members differ: %s vs %s" % (path, [n for n, _ in got][:4], [n for n, _ in want][:4]))
    with open(path, "rb") as f:
        for _ in range(preads):
            off = rng.randrange(0, len(whole))
            n = rng.randrange(1, 70000)
            f.seek(off)
            if f.read(n) != whole[off:off + n]:
                fail("%s: pread(%d at %d) differs from the sequential read" % (path, n, off))
                break


def walk(mnt):
    seen = set()
    for root, dirs, files in os.walk(mnt):
        rel = os.path.relpath(root, mnt)
        if rel != ".":
            seen.add(rel + "/")
        for f in files:
            seen.add(os.path.normpath(os.path.join(rel, f)))
    return seen


def check_links(mnt, tree, links):
    """Each sample is one inode: its split path and its shard file (links)
    share it, with st_nlink 2; every other file has its own, nlink 1."""
    files = [p for p, want in tree.items() if isinstance(want, bytes)]
    key = {p: links.get(p, p) for p in files}
    names = {}
    for p in files:
        names.setdefault(key[p], []).append(p)
    owner = {}
    for p in files:
        st = os.lstat(os.path.join(mnt, p))
        if st.st_nlink != len(names[key[p]]):
            fail("%s: st_nlink %d, want %d" % (p, st.st_nlink, len(names[key[p]])))
        if owner.setdefault(st.st_ino, key[p]) != key[p]:
            fail("%s: inode %d is also %s's" % (p, st.st_ino, owner[st.st_ino]))
    if len(owner) != len(names):
        fail("%d inodes for %d distinct files" % (len(owner), len(names)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("mount")
    ap.add_argument("--shard-size", type=int, default=10000)
    ap.add_argument("--shard-seed", type=int)
    ap.add_argument("--shuffle-seed", type=int, default=0)
    ap.add_argument("--truth")
    ap.add_argument("--preads", type=int, default=200)
    a = ap.parse_args()
    tree, wnids, links = model(a.source, a.shard_size, a.shard_seed, a.shuffle_seed)
    seen = walk(a.mount)
    if seen != set(tree):
        fail("paths differ: extra %s, missing %s" % (sorted(seen - set(tree))[:5],
                                                      sorted(set(tree) - seen)[:5]))
    rng = random.Random(1)
    nfiles = nvtar = 0
    for path, want in sorted(tree.items()):
        if want is None or path not in seen:
            continue
        full = os.path.join(a.mount, path)
        if isinstance(want, tuple):
            mtime = int(max(os.stat(os.path.join(a.source, p)).st_mtime
                            for p in (TRAIN_TAR, VAL_TAR) if os.path.exists(os.path.join(a.source, p)))
                        if any(os.path.exists(os.path.join(a.source, p)) for p in (TRAIN_TAR, VAL_TAR))
                        else 0)
            if os.path.isdir(os.path.join(a.source, "train")):
                mtime = max([mtime] + [int(os.stat(os.path.join(a.source, "train", f)).st_mtime)
                                       for f in os.listdir(os.path.join(a.source, "train"))])
            check_vtar(full, want[1], mtime, a.preads // 4 + 1, rng)
            nvtar += 1
            continue
        with open(full, "rb") as f:
            got = f.read()
        if sha(got) != sha(want):
            fail("%s: sha256 differs (%d bytes, want %d)" % (path, len(got), len(want)))
        if os.stat(full).st_size != len(want):
            fail("%s: st_size %d, want %d" % (path, os.stat(full).st_size, len(want)))
        nfiles += 1
    check_links(a.mount, tree, links)
    if a.truth:
        check_truth(a.truth, wnids, a.mount)
    print("oracle: %d paths, %d files, %d virtual tars checked, %d failures"
          % (len(tree), nfiles, nvtar, len(FAILURES)))
    sys.exit(1 if FAILURES else 0)


def check_truth(path, wnids, mnt):
    """Labels against the generator's own record, not the oracle's reading."""
    with open(path) as f:
        t = json.load(f)
    if t["devkit"] and wnids != t["wnids"]:
        fail("classes %s, truth %s" % (wnids, t["wnids"]))
    if t["devkit"] and t["val"] and os.path.isdir(os.path.join(mnt, "val")):
        for (name, w, digest, _), l in zip(t["val"], t["val_label"]):
            p = os.path.join(mnt, "val", t["wnids"][l], name)
            if not os.path.exists(p):
                fail("val %s: not under its class %s" % (name, w))
            else:
                with open(p, "rb") as f:
                    if sha(f.read()) != digest:
                        fail("val %s: sha256 differs from the truth" % name)
    for w, members in t["train"].items():
        for name, digest, _ in members:
            p = os.path.join(mnt, "train", w, name)
            if os.path.exists(p):
                with open(p, "rb") as f:
                    if sha(f.read()) != digest:
                        fail("train %s: sha256 differs from the truth" % name)


if __name__ == "__main__":
    main()
