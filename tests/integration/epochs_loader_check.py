#!/usr/bin/python3
"""mount-examples/imagenet/epochs.py against the oracle: its DataLoader over
epoch e of a mount (ImageNet, or Quick, Draw! with --quickdraw), with W
workers splitting the shards, yields every sample of the train split once,
each shard's samples in the order a physical sharder writes them
(epochs_oracle.py's permutation), each shard read by one worker and every
worker given shards; its main() prints the counts.

    epochs_loader_check.py SOURCE MOUNT SHARD_SIZE SEED EPOCH WORKERS [--quickdraw]
"""
import collections
import contextlib
import importlib.util
import io
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from epochs_oracle import members, permutation, qd_splits, splits  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def main(src, mnt, S, seed, e, workers, qd=False):
    warnings.filterwarnings("ignore", "This DataLoader will create")   # more workers than CPUs
    spec = importlib.util.spec_from_file_location(
        "epochs_example", os.path.join(ROOT, "mount-examples", "imagenet", "epochs.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    samples = (qd_splits(src) if qd else splits(src))["train"]
    perm = permutation(seed, e, len(samples))
    want = collections.defaultdict(list)
    for p, c in enumerate(perm):    # (key, {ext: bytes}) as the sharder writes them
        m = members(samples[c])
        key = m[0][0][:-len(".cls")]
        want["train-%06d.tar" % (p // S)].append(
            (key, {name[len(key) + 1:]: b for name, b in m}))
    got, by = collections.defaultdict(list), collections.defaultdict(set)
    for s in ex.loader(mnt, e, workers):
        data = {k: (str(v).encode() if k == "cls" else v) for k, v in s.items()
                if not k.startswith("__")}
        got[s["__shard__"]].append((s["__key__"], data))
        by[s["__shard__"]].add(s["__worker__"])
    bad = []
    if dict(got) != dict(want):
        bad.append("epoch %d: the loader's shards differ from the oracle's (%d shards, %d samples; want %d, %d)"
                   % (e, len(got), sum(map(len, got.values())), len(want), sum(map(len, want.values()))))
    if any(len(w) != 1 for w in by.values()):
        bad.append("a shard read by more than one worker: %s" % {k: v for k, v in by.items() if len(v) != 1})
    if set().union(*by.values()) != set(range(min(workers, len(want)))):
        bad.append("workers used %s, want %d of them" % (sorted(set().union(*by.values())), workers))
    out = io.StringIO()
    sys.argv = ["epochs.py", mnt, "--first", str(e), "--epochs", "2", "--workers", str(workers)]
    with contextlib.redirect_stdout(out):
        ex.main()
    lines = out.getvalue().splitlines()
    n = len(samples)
    if [l.split(",")[0] for l in lines] != ["epoch %d: %d samples" % (e + i, n) for i in range(2)]:
        bad.append("main() printed %s" % lines)
    for b in bad:
        print("FAIL:", b)
    print("epochs_loader_check: %d samples in %d shards, %d workers, %s"
          % (n, len(want), workers, "FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5]), "--quickdraw" in a[6:]))
