#!/usr/bin/python3
"""Lists a directory in small pieces, as a reader with a small buffer does
(test_listing.sh): getdents64 with a buffer of one or two entries, so that
for every call the kernel asks the daemon again, from the offset of the
last entry it handed out, and the layout resumes at every offset of the
directory.  Then seeks back to offsets handed out (lseek to an entry's
d_off, as seekdir does): the entry read next must be the one that came
after it.

Usage: readdir_pieces.py DIR [BUFSIZE]     (BUFSIZE 64 bytes by default)

Prints the names read, one a line, in order ("." and ".." left out); exit
status 1, with what went wrong on stderr, when a seek resumed elsewhere, a
d_off came twice or the kernel refused.
"""
import ctypes
import os
import platform
import struct
import sys

# getdents64 is not in Python's os module
SYS_GETDENTS64 = {"x86_64": 217, "aarch64": 61, "riscv64": 61, "ppc64le": 202,
                  "s390x": 220, "i686": 220, "armv7l": 217}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def getdents(fd, size):
    """One getdents64 call: [(d_off, name)]."""
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(SYS_GETDENTS64[platform.machine()], fd, buf, size)
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    out, pos = [], 0
    while pos < n:
        _, off, reclen = struct.unpack_from("=QqH", buf.raw, pos)
        name = buf.raw[pos + 19:pos + reclen].split(b"\0", 1)[0]
        out.append((off, os.fsdecode(name)))
        pos += reclen
    return out


def read_all(fd, size):
    ents = []
    while True:
        got = getdents(fd, size)
        if not got:
            return ents
        ents += got


def main():
    path, size = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    bad = []
    try:
        ents = read_all(fd, size)
        offs = [off for off, _ in ents]
        if len(set(offs)) != len(offs):
            bad.append("a d_off came twice: %d offsets for %d entries"
                       % (len(set(offs)), len(offs)))
        # every offset near the ends, then every 7th: each resumes after
        # its entry (one entry a call, so this is ~1/7 of the listing again)
        picks = sorted(set(range(min(5, len(ents)))) |
                       set(range(max(0, len(ents) - 5), len(ents))) |
                       set(range(0, len(ents), 7)))
        for k in picks:
            os.lseek(fd, ents[k][0], os.SEEK_SET)
            got = getdents(fd, size)
            want = ents[k + 1][1] if k + 1 < len(ents) else None
            if (got[0][1] if got else None) != want:
                bad.append("seek to the d_off of %r (%d): read %r, expected %r"
                           % (ents[k][1], ents[k][0], got[0][1] if got else None, want))
    except OSError as e:
        bad.append("%s: %s" % (path, e))
        ents = []
    finally:
        os.close(fd)
    for _, name in ents:
        if name not in (".", ".."):
            print(name)
    for b in bad[:10]:
        print("    " + b, file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
