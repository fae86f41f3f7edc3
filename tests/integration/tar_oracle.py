#!/usr/bin/python3
"""Checks a layout=tar mount against the tarfile oracle's manifest.

Usage:
  tar_oracle.py tree MANIFEST FIXTURE RECURSIVE MOUNT
      walks MOUNT: the set of paths, every entry's type, size (lstat), mtime,
      symlink target, and the sha256 of EVERY file's bytes must equal the
      manifest written by tests/fixtures/make_tars.py (Python's tarfile).
  tar_oracle.py find MANIFEST FIXTURE RECURSIVE FINDOUT
      the same for the output of `find MOUNT -mindepth 1 -printf '%y\\t%s\\t%P\\t%l\\0'`
      (types, sizes and link targets as find(1) sees them).
Exits 0 when everything matches, else prints the differences and exits 1.
"""
import hashlib
import json
import os
import stat
import sys


def expected(manifest, fixture, recursive):
    with open(manifest) as f:
        m = json.load(f)
    return m[fixture]["recursive"][str(recursive)]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 16)
            if not b:
                return h.hexdigest()
            h.update(b)


def walk(mount):
    """{relative path: (type, size, mtime, sha256 or None, target)}"""
    got = {}
    for root, dirs, files in os.walk(mount):
        for name in dirs + files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, mount)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                got[rel] = ("dir", 0, st.st_mtime, None, "")
            elif stat.S_ISLNK(st.st_mode):
                got[rel] = ("symlink", st.st_size, st.st_mtime, None, os.readlink(p))
            else:
                got[rel] = ("file", st.st_size, st.st_mtime, sha256(p), "")
    return got


def compare_tree(want, got):
    errors = []
    for p in sorted(set(want) | set(got)):
        if p not in got:
            errors.append("missing: %r" % p)
            continue
        if p not in want:
            errors.append("unexpected: %r" % p)
            continue
        w, (t, size, mtime, digest, target) = want[p], got[p]
        if t != w["type"]:
            errors.append("%r: type %s, want %s" % (p, t, w["type"]))
            continue
        if t == "file" and (size != w["size"] or digest != w["sha256"]):
            errors.append("%r: size %d sha256 %s, want %d %s" %
                          (p, size, digest, w["size"], w["sha256"]))
        if t == "symlink" and (target != w["target"] or size != len(w["target"].encode())):
            errors.append("%r: target %r, want %r" % (p, target, w["target"]))
        if w["mtime"] is not None and int(mtime) != min(max(w["mtime"], 0), 2**32 - 1):
            errors.append("%r: mtime %d, want %d" % (p, mtime, w["mtime"]))
    return errors


def compare_find(want, findout):
    errors, seen = [], set()
    with open(findout, "rb") as f:
        recs = [r for r in f.read().split(b"\0") if r]
    kinds = {"d": "dir", "f": "file", "l": "symlink"}
    for r in recs:
        y, size, path, link = r.decode("utf-8", "surrogateescape").split("\t")
        seen.add(path)
        w = want.get(path)
        if w is None:
            errors.append("find shows unexpected %r" % path)
        elif kinds.get(y) != w["type"]:
            errors.append("find: %r is %s, want %s" % (path, y, w["type"]))
        elif w["type"] == "file" and int(size) != w["size"]:
            errors.append("find: %r size %s, want %d" % (path, size, w["size"]))
        elif w["type"] == "symlink" and link != w["target"]:
            errors.append("find: %r -> %r, want %r" % (path, link, w["target"]))
    errors += ["find misses %r" % p for p in sorted(set(want) - seen)]
    return errors


def main():
    mode, manifest, fixture, recursive, where = sys.argv[1:6]
    want = expected(manifest, fixture, recursive)
    if mode == "tree":
        errors = compare_tree(want, walk(where))
    else:
        errors = compare_find(want, where)
    for e in errors[:30]:
        print("  " + e)
    if not want and fixture != "empty.tar":
        print("  manifest has no entries for %s r%s" % (fixture, recursive))
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
