#!/usr/bin/python3
"""Archives made by GNU tar itself, and their extraction by `tar -x`: the
oracle of test_gnutar.sh.

Usage: gnutar_cases.py OUTDIR

For every case writes OUTDIR/<case>/archive.tar (made by GNU tar from files
built here, in every format: v7, oldgnu, gnu, ustar, posix; sparse files of
several shapes in each sparse format; hard links before and after rewrites;
appended duplicates with `tar -r`; long names and link names; unicode
names; a dumpdir; a volume label; and one Python's tarfile writes, whose
hard links carry mtimes of their own) and OUTDIR/<case>/x/, what
`tar -xf archive.tar` makes of it in an empty directory.  Prints the case
names, one a line.  tree_compare.py then compares x/ with the mount.

GNU tar's own warnings (names too long for a format, devices in v7) are
expected: whatever tar wrote is the archive under test.
"""
import io
import os
import subprocess
import sys
import tarfile

GIB = 1 << 30
FORMATS = ("v7", "oldgnu", "gnu", "ustar", "posix")


def blob(n, seed):
    out, i = bytearray(), 0
    while len(out) < n:
        out += ("%s:%d|" % (seed, i)).encode()
        i += 1
    return bytes(out[:n])


def write(path, data, mode="wb"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def sparse(path, size, chunks):
    """A file of `size` bytes that holds data only at [(offset, n)...]."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
        for off, n in chunks:
            f.seek(off)
            f.write(blob(n, "%s@%d" % (os.path.basename(path), off)))


def tar(cwd, *args):
    # GNU tar warns (and exits 2) for what a format cannot hold; the archive
    # it wrote is still the case under test
    r = subprocess.run(["tar", *args], cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if r.returncode not in (0, 2):
        sys.exit("tar %s failed: %s" % (" ".join(args), r.stderr.decode()))


def rich_tree(src):
    """Files, directories, links and names every format gets."""
    for n in (0, 1, 511, 512, 513, 10000, 70000):
        write(os.path.join(src, "sizes", "f%d" % n), blob(n, n))
    os.makedirs(os.path.join(src, "empty dir"))
    write(os.path.join(src, "a/b/c/deep.txt"), blob(77, "deep"))
    write(os.path.join(src, "ünïcødé/файл-日本語.txt"), blob(300, "unicode"))
    write(os.path.join(src, "name with spaces.txt"), blob(33, "spaces"))
    long_dir = "d" * 120
    write(os.path.join(src, long_dir, "f" * 150 + ".txt"), blob(99, "long"))
    write(os.path.join(src, "x" * 99), blob(5, "99"))
    write(os.path.join(src, "p" * 150 + "/" + "q" * 90), blob(6, "prefix"))
    os.link(os.path.join(src, "sizes/f513"), os.path.join(src, "hard513"))
    os.symlink("sizes/f1", os.path.join(src, "sym-inside"))
    os.symlink("../sizes/f0", os.path.join(src, "a/sym-up"))
    os.symlink("../outside", os.path.join(src, "sym-out"))
    os.symlink("/etc/passwd", os.path.join(src, "sym-abs"))
    os.symlink("a/b/c/" + "L" * 140, os.path.join(src, "sym-longtarget"))
    os.symlink(long_dir + "/" + "f" * 150 + ".txt", os.path.join(src, "sym-long-ok"))
    os.mkfifo(os.path.join(src, "fifo"))


def case_format(out, fmt):
    d = os.path.join(out, "fmt-" + fmt)
    src = os.path.join(d, "src")
    rich_tree(src)
    tar(src, "--format=" + fmt, "-cf", "../archive.tar", ".")
    return d


SHAPES = {
    "leading-hole": (2 << 20, [(1 << 20, 5000)]),
    "trailing-hole": (3 << 20, [(0, 7000)]),
    "only-holes": (1 << 20, []),
    "many": (4 << 20, [(i * 100000, 3000 + i) for i in range(40)]),
    "dense": (40000, [(0, 40000)]),
    "tiny": (10, [(0, 10)]),
    "empty": (0, []),
}


def sparse_tree(src, big):
    for name, (size, chunks) in SHAPES.items():
        sparse(os.path.join(src, name), size, chunks)
    # > 8 GiB apparent size: base-256 sizes in the old formats
    if big:
        sparse(os.path.join(src, "big"), 9 * GIB + 12345,
               [(0, 4096), (5 * GIB, 70000), (9 * GIB + 12000, 345)])
    os.link(os.path.join(src, "many"), os.path.join(src, "many-link"))


def case_sparse(out, name, *opts, big=True):
    d = os.path.join(out, "sparse-" + name)
    src = os.path.join(d, "src")
    sparse_tree(src, big)
    tar(src, *opts, "-cf", "../archive.tar", ".")
    return d


def case_rewrites(out, fmt):
    """f, a link to it, f rewritten and appended (tar -r); a self link;
    a file replaced by a symlink, a symlink by a file, an empty directory
    by a file, a file by a directory."""
    d = os.path.join(out, "rewrites-" + fmt)
    src = os.path.join(d, "src")
    a = os.path.join(d, "archive.tar")
    write(os.path.join(src, "f"), b"version-1")
    os.link(os.path.join(src, "f"), os.path.join(src, "l"))
    write(os.path.join(src, "g"), b"g-1")
    os.symlink("f", os.path.join(src, "s"))
    os.makedirs(os.path.join(src, "e"))
    write(os.path.join(src, "t"), b"t is a file")
    tar(src, "--format=" + fmt, "-cf", a, "f", "l", "g", "s", "e", "t")
    os.unlink(os.path.join(src, "f"))
    write(os.path.join(src, "f"), b"version-2-longer")
    os.unlink(os.path.join(src, "g"))
    os.symlink("f", os.path.join(src, "g"))
    os.unlink(os.path.join(src, "s"))
    write(os.path.join(src, "s"), b"s is a file now")
    os.rmdir(os.path.join(src, "e"))
    write(os.path.join(src, "e"), b"e is a file now")
    os.unlink(os.path.join(src, "t"))
    write(os.path.join(src, "t/inside"), b"t is a directory now")
    tar(src, "--format=" + fmt, "-rf", a, "f", "g", "s", "e", "t")
    # the same file twice in one run: its second copy is a hard link to
    # its own path, which tar -x leaves as it is
    write(os.path.join(src, "self"), b"self")
    tar(src, "--format=" + fmt, "-rf", a, "self", "self")
    # a link made after its target was rewritten: the new bytes
    os.link(os.path.join(src, "f"), os.path.join(src, "l2"))
    tar(src, "--format=" + fmt, "-rf", a, "f", "l2")
    return d


def case_link_mtimes(out):
    """Hard links whose headers say other mtimes than their target's (GNU
    tar writes the inode's): tar -x makes one inode, the target's mtime; a
    link to a link; the target rewritten after them, a link after that."""
    d = os.path.join(out, "link-mtimes")
    os.makedirs(d)

    def add(t, name, mtime, data=None, link=None):
        ti = tarfile.TarInfo(name)
        ti.mtime = mtime
        if link:
            ti.type, ti.linkname = tarfile.LNKTYPE, link
        else:
            ti.size = len(data)
        t.addfile(ti, io.BytesIO(data) if data is not None else None)

    with tarfile.open(os.path.join(d, "archive.tar"), "w", format=tarfile.GNU_FORMAT) as t:
        add(t, "f", 1000000, blob(700, "f1"))
        add(t, "l", 2000000, link="f")
        add(t, "sub/l2", 3000000, link="l")
        add(t, "f", 4000000, blob(900, "f2"))
        add(t, "l3", 5000000, link="f")
    return d


def case_dumpdir(out):
    d = os.path.join(out, "dumpdir")
    src = os.path.join(d, "src")
    write(os.path.join(src, "top/one.txt"), blob(10, "one"))
    write(os.path.join(src, "top/sub/two.txt"), blob(20, "two"))
    tar(src, "--format=gnu", "--listed-incremental=../snap", "-cf", "../archive.tar", "top")
    return d


def case_label(out):
    d = os.path.join(out, "label")
    src = os.path.join(d, "src")
    write(os.path.join(src, "after-label.txt"), blob(10, "label"))
    tar(src, "--format=gnu", "-V", "a volume label", "-cf", "../archive.tar", ".")
    return d


def extract(d):
    x = os.path.join(d, "x")
    os.makedirs(x)
    # exit 2 for what tar -x itself refuses ('..' members, hard links to
    # nothing); x/ is what it made
    r = subprocess.run(["tar", "-xf", "../archive.tar"], cwd=x,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode not in (0, 2):
        sys.exit("tar -x in %s failed: %s" % (d, r.stderr.decode()))


def main():
    out = sys.argv[1]
    os.makedirs(out)
    cases = [case_format(out, f) for f in FORMATS]
    cases += [case_sparse(out, "oldgnu", "--sparse", "--format=oldgnu"),
              case_sparse(out, "gnu", "--sparse", "--format=gnu"),
              case_sparse(out, "pax0.0", "--sparse", "--format=posix",
                          "--sparse-version=0.0"),
              case_sparse(out, "pax0.1", "--sparse", "--format=posix",
                          "--sparse-version=0.1"),
              case_sparse(out, "pax1.0", "--sparse", "--format=posix",
                          "--sparse-version=1.0"),
              # without --sparse a sparse source is stored whole; ustar
              # cannot hold the 9 GiB one
              case_sparse(out, "ustar-whole", "--format=ustar", big=False)]
    cases += [case_rewrites(out, f) for f in ("gnu", "posix", "ustar")]
    cases += [case_dumpdir(out), case_label(out), case_link_mtimes(out)]
    for d in cases:
        extract(d)
        print(os.path.basename(d))


if __name__ == "__main__":
    main()
