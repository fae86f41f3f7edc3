#!/usr/bin/python3
"""The blocks or frames the compression tools made in FILE, as the tools and
formats say, independently of samplefs: one line "UOFF USIZE" each (their
uncompressed offset and size), in file order.  The oracle of test_zcodecs.c's
one-block-per-read tests and of tools/bench/zbench.sh's block sizes.

  zblocks.py FILE

xz: `xz --robot --list -vv` (the stream's index).  zstd: the frame headers and
block headers walked here (RFC 8878), skippable frames stepped over, each
frame's size from its header or, when it has none (pzstd), from `zstd -dc` of
its bytes.  bzip2: `bzip2recover` cuts the file into one stream per block,
each decompressed by Python's bz2; the number of blocks is checked against a
scan of every bit for the block magic.

  zblocks.py -c FILE

also gives where each one lies in FILE: "UOFF USIZE COFF CEND" (the byte
holding its first bit, and the byte after its last; test_zdamage.sh damages
one block with them).
"""
import bz2
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np


def xz_blocks(path):
    out = subprocess.run(["xz", "--robot", "--list", "-vv", path], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "block":        # stream, number, file number, cofs, uofs, csize, usize
            yield int(f[5]), int(f[7]), int(f[4]), int(f[4]) + int(f[6])


def zstd_frame_end(d, p):
    """End of the zstd frame at p (its header and blocks walked)."""
    fhd = d[p + 4]
    single, did, ck = fhd >> 5 & 1, fhd & 3, fhd >> 2 & 1
    q = p + 5 + (0 if single else 1) + (0, 1, 2, 4)[did]
    q += ((1 if single else 0), 2, 4, 8)[fhd >> 6]
    while True:
        bh = int.from_bytes(d[q:q + 3], "little")
        q += 3 + (1 if (bh >> 1 & 3) == 1 else bh >> 3)
        if bh & 1:
            return q + 4 * ck


def zstd_blocks(path):
    d = open(path, "rb").read()
    p = uoff = 0
    while p < len(d):
        magic = struct.unpack_from("<I", d, p)[0]
        if magic & ~15 & 0xffffffff == 0x184D2A50:
            p += 8 + struct.unpack_from("<I", d, p + 4)[0]
            continue
        assert magic == 0xFD2FB528, f"{path}: no zstd frame at {p}"
        e = zstd_frame_end(d, p)
        size = len(subprocess.run(["zstd", "-dcq"], input=d[p:e], check=True,
                                  capture_output=True).stdout)
        yield uoff, size, p, e
        uoff += size
        p = e


def bz2_magics(path):
    """Bit offsets of the block magics (a scan of every bit)."""
    bits = np.unpackbits(np.frombuffer(open(path, "rb").read(), np.uint8)).tobytes()
    pat = bytes(int(b) for b in format(0x314159265359, "048b"))
    at, found = bits.find(pat), []
    while at >= 0:
        found.append(at)
        at = bits.find(pat, at + 1)
    return found


def bz2_blocks(path):
    tmp = tempfile.mkdtemp()
    try:
        shutil.copy(path, os.path.join(tmp, "f.bz2"))
        subprocess.run(["bzip2recover", "f.bz2"], cwd=tmp, check=True,
                       capture_output=True)
        recs = sorted(n for n in os.listdir(tmp) if n.startswith("rec"))
        sizes = [len(bz2.decompress(open(os.path.join(tmp, n), "rb").read()))
                 for n in recs]
    finally:
        shutil.rmtree(tmp)
    magics = bz2_magics(path)
    assert len(magics) == len(sizes), \
        f"{path}: {len(magics)} block magics, bzip2recover found {len(sizes)}"
    uoff = 0
    ends = magics[1:] + [8 * os.path.getsize(path)]
    for s, m, e in zip(sizes, magics, ends):
        yield uoff, s, m // 8, (e + 7) // 8
        uoff += s


def main():
    where = sys.argv[1] == "-c"
    path = sys.argv[-1]
    head = open(path, "rb").read(6)
    if head == b"\xfd7zXZ\0":
        blocks = xz_blocks(path)
    elif head[:3] == b"BZh":
        blocks = bz2_blocks(path)
    else:
        blocks = zstd_blocks(path)
    for b in blocks:
        print(*(b if where else b[:2]))


if __name__ == "__main__":
    main()
