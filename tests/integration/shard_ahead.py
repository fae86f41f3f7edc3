#!/usr/bin/python3
"""Prefetch in a shard's order, seen from outside: reads the first bytes of
a virtual shard through the mount and checks which members of the source
tar were fetched meanwhile.

    shard_ahead.py SOURCE MOUNT --shard-size S --shard-seed N --shard K
                   --read R --budget B [--depth D] [--expect ahead|none]
                   [--access-log FILE]

The shard's members and their places in the source come from the oracle's
model (imagenet_oracle.py: tarfile + numpy) and tarfile's data offsets,
never from samplefs.  Before reading, the source tar is evicted from the
page cache (POSIX_FADV_DONTNEED, checked with mincore).  The shard is read
with POSIX_FADV_RANDOM (no readahead of the FUSE file: the daemon sees
exactly the reads made here, in order, R bytes from offset 0).  Then:

  ahead   the members whose records start within B bytes past R (at most D
          of them) all become resident (mincore of the source tar; with
          --access-log, nginx's log shows ranges covering their bytes),
          waiting up to --wait seconds; and the members past R + B stay
          untouched, also a second later (a reader that stopped leaves
          nothing running): those within 2 MiB of a member read (the
          kernel's or the HTTP cache's readahead of the reader's own
          reads) or 64 KiB of one ahead (HTTP blocks) are left out;
  none    a second after the read, some of the members ahead (far from
          those read) are not resident: what makes `ahead` pass is the
          prefetch, not the readahead of the source.

Prints one line per failure; exits 1 if any.
"""
import argparse
import ctypes
import os
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from imagenet_oracle import TRAIN_TAR, model  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
NEAR_READ = 2 << 20
NEAR_AHEAD = 64 << 10
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def resident_pages(path):
    """mincore(2) of the whole file: a bytes object, 1 per resident page."""
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap " + path)
        n = (size + PAGE - 1) // PAGE
        vec = (ctypes.c_ubyte * n)()
        rc = libc.mincore(addr, size, vec)
        libc.munmap(addr, size)
        if rc:
            raise OSError(ctypes.get_errno(), "mincore " + path)
        return bytes(b & 1 for b in vec)
    finally:
        os.close(fd)


def pages(off, size):
    return range(off // PAGE, (off + size + PAGE - 1) // PAGE)


def evict(path):
    for _ in range(5):
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        if not any(resident_pages(path)):
            return True
        time.sleep(0.2)
    return False


def extents(src):
    """{member name: (offset of its data in the train tar, size)}"""
    out = {}
    with tarfile.open(os.path.join(src, TRAIN_TAR)) as outer:
        for m in outer:
            if not m.name.endswith(".tar"):
                continue
            with tarfile.open(fileobj=outer.extractfile(m)) as inner:
                for x in inner:
                    out[x.name] = (m.offset_data + x.offset_data, x.size)
    return out


def record_size(stem, size):
    """vtar.h: .cls header, label block, .jpg header, data padded (short names)"""
    assert len(stem) + 4 <= 100
    return 3 * 512 + (size + 511) // 512 * 512


def covered(rngs, off, size):
    """whether the ranges cover [off, off + size)"""
    at = off
    for a, b in sorted(rngs):
        if a <= at < b:
            at = b
        if at >= off + size:
            return True
    return False


def touched(rngs, off, size):
    return any(a < off + size and off < b for a, b in rngs)


def near(ext, group, dist):
    off, size = ext
    return any(off - dist < o + s and o < off + size + dist for o, s in group)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("mount")
    ap.add_argument("--shard-size", type=int, required=True)
    ap.add_argument("--shard-seed", type=int, required=True)
    ap.add_argument("--shard", type=int, default=0)
    ap.add_argument("--read", type=int, required=True)
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--depth", type=int, default=1 << 30)
    ap.add_argument("--expect", choices=("ahead", "none"), default="ahead")
    ap.add_argument("--access-log")
    ap.add_argument("--wait", type=float, default=20)
    a = ap.parse_args()
    tar = os.path.join(a.source, TRAIN_TAR)
    tree, _, _ = model(a.source, a.shard_size, a.shard_seed, 0)
    members = tree["shards/train-%06d.tar" % a.shard][1]
    ext = extents(a.source)
    recs, at = [], 0
    for stem, _, data in members:
        e = ext[stem + ".JPEG"]
        assert e[1] == len(data)
        recs.append((at, e))
        at += record_size(stem, e[1])
    end = a.read
    cur = max(i for i, (o, _) in enumerate(recs) if o <= end)
    read = [e for o, e in recs[:cur + 1]]
    ahead = [e for o, e in recs[cur + 1:] if o < end + a.budget][:a.depth]
    past = [e for o, e in recs if o >= end + a.budget + 512]
    far_ahead = [e for e in ahead if not near(e, read, NEAR_READ)]
    far = [e for e in past if not near(e, read, NEAR_READ) and not near(e, ahead, NEAR_AHEAD)]
    if len(ahead) < 3 or len(far) < 10 or len(far_ahead) < 3:
        fail("fixture too small: %d members ahead (%d far from those read), %d far past"
             % (len(ahead), len(far_ahead), len(far)))
        return
    if not a.access_log and not evict(tar):
        fail("%s: still in the page cache after POSIX_FADV_DONTNEED" % tar)
        return
    mark = os.path.getsize(a.access_log) if a.access_log else 0
    fd = os.open(os.path.join(a.mount, "shards/train-%06d.tar" % a.shard), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    for off in range(0, end, 32768):
        if len(os.pread(fd, min(32768, end - off), off)) != min(32768, end - off):
            fail("short read at %d" % off)
    os.close(fd)

    def seen():
        """(fetched(ext), touched(ext)) now"""
        if a.access_log:
            with open(a.access_log) as f:
                f.seek(mark)
                tmp = f.read()
            rngs = ranges_in_text(tmp)
            return (lambda e: covered(rngs, *e)), (lambda e: touched(rngs, *e))
        res = resident_pages(tar)
        return (lambda e: all(res[p] for p in pages(*e))), \
               (lambda e: any(res[p] for p in pages(*e)))

    if a.expect == "none":
        time.sleep(1)
        fetched, _ = seen()
        if all(fetched(e) for e in far_ahead):
            fail("without prefetch, all %d members ahead were fetched anyway" % len(far_ahead))
        return
    deadline = time.time() + a.wait
    while True:
        fetched, _ = seen()
        missing = [e for e in ahead if not fetched(e)]
        if not missing or time.time() > deadline:
            break
        time.sleep(0.1)
    if missing:
        fail("%d of the %d members ahead not fetched within %g s, e.g. bytes %d-%d"
             % (len(missing), len(ahead), a.wait, missing[0][0], sum(missing[0]) - 1))
    for when in ("at once", "a second later"):
        if when != "at once":
            time.sleep(1)
        _, hit = seen()
        bad = [e for e in far if hit(e)]
        if bad:
            fail("%s: %d of %d members past the budget fetched, e.g. bytes %d-%d"
                 % (when, len(bad), len(far), bad[0][0], sum(bad[0]) - 1))
    if not FAILURES:
            print("ok: %d members ahead fetched, %d past the budget untouched"
              % (len(ahead), len(far)))


def ranges_in_text(text):
    out = []
    for line in text.splitlines():
        cols = line.split("\t")
        if len(cols) > 2 and cols[2].startswith("bytes="):
            for part in cols[2][6:].split(","):
                x, y = part.split("-")
                out.append((int(x), int(y) + 1))
    return out


if __name__ == "__main__":
    main()
    sys.exit(1 if FAILURES else 0)
