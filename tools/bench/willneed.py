#!/usr/bin/python3
"""willneed - is posix_fadvise(WILLNEED) enough for deep parallel I/O on a
cold local disk?  (issue 26: the prefetch of a shard's members asks for
each with it.)  Not part of `make bench`; needs root (drop_caches).

Usage: willneed.py TAR N MODE [MODE...]
  TAR   a tar of class tars (gen_imagenet.py's ILSVRC2012_img_train.tar)
  N     members, picked at random (seed 1), in that order
  MODE  fadvise: one POSIX_FADV_WILLNEED per member from one thread, then
        wait (mincore, every 10 ms) until every member is resident, as
        samplefs' advisor asks; T (a number): T threads pread'ing them
For each MODE in turn, caches dropped before it: the seconds the advice
calls took, until all was resident, and members/s.
"""
import os
import random
import sys
import tarfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "integration"))
from shard_ahead import pages, resident_pages  # noqa: E402


def members(tar, n):
    ext = []
    with tarfile.open(tar) as outer:
        for m in outer:
            with tarfile.open(fileobj=outer.extractfile(m)) as inner:
                ext += [(m.offset_data + x.offset_data, x.size) for x in inner]
    random.Random(1).shuffle(ext)
    return ext[:n]


def advise(tar, fd, ext):
    for o, s in ext:
        os.posix_fadvise(fd, o, s, os.POSIX_FADV_WILLNEED)
    t = time.time()
    while True:
        res = resident_pages(tar)
        if all(all(res[p] for p in pages(o, s)) for o, s in ext):
            return t
        time.sleep(0.01)


def preads(fd, ext, nthreads):
    it, lock = iter(ext), threading.Lock()

    def work():
        while True:
            with lock:
                e = next(it, None)
            if e is None:
                return
            os.pread(fd, e[1], e[0])
    ts = [threading.Thread(target=work) for _ in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    tar, n = sys.argv[1], int(sys.argv[2])
    ext = members(tar, n)
    for mode in sys.argv[3:]:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
        fd = os.open(tar, os.O_RDONLY)
        t0 = time.time()
        t1 = advise(tar, fd, ext) if mode == "fadvise" else preads(fd, ext, int(mode)) or t0
        t2 = time.time()
        os.close(fd)
        print("%-8s %d members: advice %.3f s, all resident %.3f s: %.0f members/s"
              % (mode, n, t1 - t0, t2 - t0, n / (t2 - t0)))


if __name__ == "__main__":
    main()
