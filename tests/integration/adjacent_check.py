#!/usr/bin/python3
"""Reads of members that lie next to each other in a remote source, checked
from outside (test_http_adjacent.sh): the bytes against the oracle
(imagenet_oracle.py's model: tarfile and numpy), the GETs nginx logged
against tarfile's data offsets of the members read.

    adjacent_check.py order SOURCE WNID
        the member names of class WNID in tar order, one a line
    adjacent_check.py class SOURCE WNID FILE
        FILE is class WNID's members concatenated in tar order
    adjacent_check.py shard SOURCE FILE K --shard-size S [--shard-seed N]
                      [--log LINES] [--most N] [--exact]
        FILE is shard K's virtual tar (names, labels, bytes, headers); with
        --log (nginx's access log lines of the stream, http_lib.sh's
        format): at most N GETs (--most), each a range of the source;
        with --exact each GET lies within the 32 KiB blocks around the
        data of members that follow each other in the shard (one_run): a
        shuffled shard's members are not fetched together with the bytes
        between them, which nobody reads

Prints one line per failure and a summary; exits 1 on any failure.
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imagenet_oracle as oracle  # noqa: E402
from shard_ahead import extents  # noqa: E402

BLOCK = 32 << 10


def class_members(src, wnid):
    return [(name, data) for w, name, data in oracle.read_train(src) if w == wnid]


def gets_in(log):
    """[(first, end)] of the data GETs in nginx's log lines"""
    out = []
    with open(log) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > 3 and cols[0] == "GET" and cols[2].startswith("bytes="):
                a, b = cols[2][6:].split("-")
                out.append((int(a), int(b) + 1))
            elif len(cols) > 3 and cols[0] == "GET":
                out.append((0, None))       # a GET of a whole file
    return out


def one_run(spans, first, end):
    """Whether [first, end) lies within the blocks around the data of shard
    members (a prefetch of them, or a read of part of one; the blocks a
    member shares with its neighbours may come with either), and the
    members whose data it holds whole are a run of the shard's order (a
    shuffled shard's members that happen to lie next to each other in the
    source are asked for together, as an ordered shard's are)."""
    around = [(o // BLOCK, (o + s - 1) // BLOCK) for o, s in spans]
    for b in range(first // BLOCK, (end - 1) // BLOCK + 1):
        if not any(lo <= b <= hi for lo, hi in around):
            return False
    whole = [i for i, (o, s) in enumerate(spans) if first <= o and o + s <= end]
    return whole == list(range(whole[0], whole[-1] + 1)) if whole else True


def check_shard(a):
    tree, _, _ = oracle.model(a.source, a.shard_size, a.shard_seed, 0)
    members = tree["shards/train-%06d.tar" % a.k][1]
    mtime = int(os.stat(os.path.join(a.source, oracle.TRAIN_TAR)).st_mtime)
    oracle.check_vtar(a.file, members, mtime, 20, random.Random(1))
    if not a.log:
        return len(members)
    gets = gets_in(a.log)
    ext = extents(a.source)
    spans = [ext[stem + ".JPEG"] for stem, _, _ in members]
    if a.most is not None and len(gets) > a.most:
        oracle.fail("%d GETs for the %d members of shard %d, want at most %d"
                    % (len(gets), len(members), a.k, a.most))
    for first, end in gets:
        if end is None:
            oracle.fail("a GET without a range: the whole source")
            continue
        if not a.exact:
            continue
        if not one_run(spans, first, end):
            oracle.fail("GET of bytes %d-%d: more than the blocks of members "
                        "next to each other in the shard" % (first, end - 1))
    print("    %d GETs for the %d members of shard %d" % (len(gets), len(members), a.k))
    return len(members)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("order", "class", "shard"))
    ap.add_argument("source")
    ap.add_argument("rest", nargs="*")
    ap.add_argument("--shard-size", type=int)
    ap.add_argument("--shard-seed", type=int)
    ap.add_argument("--log")
    ap.add_argument("--most", type=int)
    ap.add_argument("--exact", action="store_true")
    a = ap.parse_args()
    if a.what == "order":
        for name, _ in class_members(a.source, a.rest[0]):
            print(name)
        return
    if a.what == "class":
        want = b"".join(d for _, d in class_members(a.source, a.rest[0]))
        with open(a.rest[1], "rb") as f:
            got = f.read()
        if not want or got != want:
            oracle.fail("class %s read in order: %d bytes, not the %d bytes of its "
                        "members by tarfile" % (a.rest[0], len(got), len(want)))
        return
    a.file, a.k = a.rest[0], int(a.rest[1])
    check_shard(a)


if __name__ == "__main__":
    main()
    sys.exit(1 if oracle.FAILURES else 0)
