#!/usr/bin/python3
"""whole_tree.py MOUNT EXTRACTED: completes the extracted ImageNet tree
(train/<wnid>/<member>, flat val/<member>) into the tree of the whole
samplefs mount, as `cp -al` of the mount would: shards/<split>/<k>/<l>.<m>
become hard links to the extracted members, the virtual shard tars sparse
files of their size (du and ls -lR time metadata, not bytes), classes.txt
and shuffled/ copies.  For bench.sh's everyday tools: the same tree on disk
and mounted.  Not for anything but the bench's generated data."""
import os
import shutil
import sys


def main():
    mnt, x = sys.argv[1], sys.argv[2]
    new = os.path.join(x, "shards.new")
    shutil.rmtree(new, ignore_errors=True)
    n = 0
    for split in sorted(os.listdir(os.path.join(mnt, "shards"))):
        src = os.path.join(mnt, "shards", split)
        if not os.path.isdir(src):
            os.close(os.open(os.path.join(new, split), os.O_CREAT | os.O_WRONLY, 0o444))
            os.truncate(os.path.join(new, split), os.stat(src).st_size)
            continue
        for k in os.listdir(src):
            os.makedirs(os.path.join(new, split, k))
            for f in os.listdir(os.path.join(src, k)):
                member = f.split(".", 1)[1]
                target = (os.path.join(x, "train", member.split("_")[0], member)
                          if split == "train" else os.path.join(x, "val", member))
                os.link(target, os.path.join(new, split, k, f))
                n += 1
    shutil.copytree(os.path.join(mnt, "shuffled"), os.path.join(x, "shuffled"), dirs_exist_ok=True)
    shutil.copy(os.path.join(mnt, "classes.txt"), x)
    os.rename(new, os.path.join(x, "shards"))
    print("linked %d shard files" % n)


main()
