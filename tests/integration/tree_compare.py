#!/usr/bin/python3
"""Compares a mounted tree with the directory `tar -x` made of the same
archive (test_gnutar.sh): names, types, sizes, symlink targets and bytes;
hard links (one inode for the names that share one there, st_nlink their
number, its mtime) and st_blocks, the 512-byte blocks of a file's data regions
(SEEK_DATA / SEEK_HOLE of the extracted file: a hole takes none).

Usage: tree_compare.py EXTRACTED MOUNT

What samplefs refuses by design, and so must be absent from the mount:
fifos and devices, and symlinks that lead out of the tree (absolute, or
resolving outside it, through other links or not).  Everything else must
be the same.  Files up to 64 MiB are compared whole; a larger (sparse) one
in every data region the extracted file has (SEEK_DATA / SEEK_HOLE) and at
the edges and 16 random places of every hole, which must read as zeros.
Prints each difference and a summary; exit status 1 if any.
"""
import os
import random
import stat
import sys

WHOLE = 64 << 20
BLK = 1 << 20


def entries(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.lstat(p)
    return out


def leaves(root, rel):
    """A symlink samplefs hides: it resolves outside the tree."""
    t = os.readlink(os.path.join(root, rel))
    if t.startswith("/"):
        return True
    r = os.path.realpath(os.path.join(root, rel))
    real_root = os.path.realpath(root)
    return r != real_root and not r.startswith(real_root + "/")


def kind(st):
    m = st.st_mode
    return "dir" if stat.S_ISDIR(m) else "file" if stat.S_ISREG(m) else \
        "symlink" if stat.S_ISLNK(m) else "special"


def data_regions(fd, size):
    out, pos = [], 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, end))
        pos = end
    return out


def data_blocks(path, size):
    """512-byte blocks of the data regions of the extracted file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        n = sum(end - start for start, end in data_regions(fd, size))
    finally:
        os.close(fd)
    return (n + 511) // 512


def same_inodes(xroot, xs, ms, diffs):
    """Files that share an inode in the extraction share one in the mount,
    and no others; st_nlink is the number of their names, st_mtime the
    inode's (the member's whose data it is)."""
    groups = {}
    for rel, st in xs.items():
        if kind(st) == "file" and rel in ms:
            groups.setdefault(st.st_ino, set()).add(rel)
    by_ino = {}
    for rel in sorted(set().union(*groups.values()) if groups else ()):
        by_ino.setdefault(ms[rel].st_ino, set()).add(rel)
    for rel, st in sorted(xs.items()):
        if kind(st) != "file" or rel not in ms:
            continue
        want, got = groups[st.st_ino], by_ino[ms[rel].st_ino]
        if want != got:
            diffs.append("%s: one inode with %s in the mount, with %s extracted"
                         % (rel, sorted(got - {rel}), sorted(want - {rel})))
        if ms[rel].st_nlink != st.st_nlink:
            diffs.append("%s: st_nlink %d, extracted %d" % (rel, ms[rel].st_nlink, st.st_nlink))
        if int(ms[rel].st_mtime) != int(st.st_mtime):
            diffs.append("%s: mtime %d, extracted %d" % (rel, ms[rel].st_mtime, st.st_mtime))
        want = data_blocks(os.path.join(xroot, rel), st.st_size)
        if ms[rel].st_blocks != want:
            diffs.append("%s: st_blocks %d, its data regions extracted take %d"
                         % (rel, ms[rel].st_blocks, want))


def same_range(fa, fb, off, n):
    while n > 0:
        k = min(n, BLK)
        a, b = os.pread(fa, k, off), os.pread(fb, k, off)
        if a != b:
            return "bytes differ in [%d, %d)" % (off, off + k)
        off, n = off + k, n - k
    return None


def compare_file(x, m, size, rnd):
    fa, fb = os.open(x, os.O_RDONLY), os.open(m, os.O_RDONLY)
    try:
        if size <= WHOLE:
            return same_range(fa, fb, 0, size), size
        checked, prev = 0, 0
        spots = []
        for start, end in data_regions(fa, size) + [(size, size)]:
            if start > prev:        # a hole [prev, start)
                spots += [(prev, min(4096, start - prev)),
                          (max(prev, start - 4096), min(4096, start - prev))]
                spots += [(rnd.randrange(prev, start), 1) for _ in range(16)]
            if end > start:
                why = same_range(fa, fb, start, end - start)
                if why:
                    return why, checked
                checked += end - start
            prev = end
        for off, n in spots:
            got = os.pread(fb, n, off)
            if got != bytes(n):
                return "hole at %d does not read as zeros" % off, checked
            checked += n
        if os.pread(fb, 1, size) != b"":
            return "reads past its size", checked
        return None, checked
    finally:
        os.close(fa)
        os.close(fb)


def main():
    xroot, mroot = sys.argv[1], sys.argv[2]
    xs, ms = entries(xroot), entries(mroot)
    rnd = random.Random(1)
    diffs, nbytes, refused = [], 0, 0
    for rel, st in sorted(xs.items()):
        k = kind(st)
        hidden = k == "special" or (k == "symlink" and leaves(xroot, rel))
        if hidden:
            refused += 1
            if rel in ms:
                diffs.append("%s: a %s samplefs must not show is there" % (rel, k))
            continue
        if rel not in ms:
            diffs.append("%s: %s missing from the mount" % (rel, k))
            continue
        mk = kind(ms[rel])
        if mk != k:
            diffs.append("%s: %s in the mount, %s extracted" % (rel, mk, k))
        elif k == "symlink":
            a, b = os.readlink(os.path.join(xroot, rel)), os.readlink(os.path.join(mroot, rel))
            if a != b:
                diffs.append("%s: symlink to %r, extracted %r" % (rel, b, a))
        elif k == "file":
            if ms[rel].st_size != st.st_size:
                diffs.append("%s: %d bytes, extracted %d" % (rel, ms[rel].st_size, st.st_size))
                continue
            why, n = compare_file(os.path.join(xroot, rel), os.path.join(mroot, rel),
                                  st.st_size, rnd)
            nbytes += n
            if why:
                diffs.append("%s: %s" % (rel, why))
    for rel in sorted(set(ms) - set(xs)):
        diffs.append("%s: in the mount, not extracted by tar -x" % rel)
    same_inodes(xroot, xs, ms, diffs)
    for d in diffs:
        print("    " + d)
    print("    %d entries, %d refused by design, %d bytes compared, %d differences"
          % (len(xs), refused, nbytes, len(diffs)))
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
