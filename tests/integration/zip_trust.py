#!/usr/bin/python3
"""Zips for test_zip_trust.sh: what issue 25 found reaching readers
unchecked or refused, each in DIR/NAME.zip, with the bytes each member
must read as (or "EIO") in DIR/NAME.want.json, from the bytes written
here (the oracle: what zipfile wrote; unzip and zipfile are asked again
by the test where they read the member).

- stored.zip: stored members, good and with one data byte flipped (the
  CRC left as it was), small (read whole) and over 4 MiB (checked whole
  at the first read, then read in place);
- sizes.zip: stored members whose sizes disagree: 20 bytes stored and 10
  declared by the central directory (the local header says 20: unzip's
  choice, which matches the CRC); a zip64 uncompressed size 4 GiB off
  its 5 stored bytes; one whose sizes disagree and match no CRC (EIO);
- sfx.zip, pad.zip, appended.zip, sfx64.zip: bytes before the zip (a
  shell stub; zeros; a zip appended to a JPEG-like file; zip64 records),
  offsets not adjusted (zipfile, unzip and bsdtar read them all);
  sfxA.zip: Info-ZIP's `zip -A` (offsets adjusted to count the stub);
- methods.zip: encrypted members (Info-ZIP -P) and methods 12 (bzip2)
  and 14 (LZMA) beside a deflated one.

Usage: zip_trust.py DIR
"""
import io
import json
import os
import random
import struct
import subprocess
import sys
import zipfile
import zlib

rng = random.Random(25)
top = sys.argv[1]
os.makedirs(top, exist_ok=True)


def save(name, data, want):
    with open(os.path.join(top, name + ".zip"), "wb") as f:
        f.write(data)
    with open(os.path.join(top, name + ".want.json"), "w") as f:
        json.dump({k: (v if isinstance(v, str) else v.hex()) for k, v in want.items()}, f)


def stored_zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for n, d in members:
            z.writestr(n, d)
    return bytearray(buf.getvalue())


def data_off(b, name):
    z = zipfile.ZipFile(io.BytesIO(bytes(b)))
    i = z.getinfo(name)
    nlen, xlen = struct.unpack("<HH", b[i.header_offset + 26:i.header_offset + 30])
    return i, i.header_offset + 30 + nlen + xlen


def central(b, name):
    """Offset of name's central directory entry."""
    z = zipfile.ZipFile(io.BytesIO(bytes(b)))
    return b.rfind(b"PK\x01\x02", z.start_dir, b.find(name.encode(), z.start_dir))


# ---- stored members: one byte flipped, CRC as it was
small = rng.randbytes(3000)
big = rng.randbytes(6 << 20)
b = stored_zip([("ok.bin", small), ("flip.bin", small), ("big.bin", big),
                ("bigflip.bin", big), ("after.txt", b"after\n")])
_, off = data_off(b, "flip.bin")
b[off + 1234] ^= 0x01
_, off = data_off(b, "bigflip.bin")
b[off + (5 << 20) + 17] ^= 0x80         # far from the first bytes a read asks for
save("stored", bytes(b), {"ok.bin": small, "flip.bin": "EIO", "big.bin": big,
                          "bigflip.bin": "EIO", "after.txt": b"after\n"})

# ---- sizes that disagree
twenty = b"0123456789abcdefghij"
b = stored_zip([("twenty.bin", twenty), ("none.bin", twenty), ("next.txt", b"next\n")])
for n in ("twenty.bin", "none.bin"):
    c = central(b, n)
    b[c + 20:c + 28] = struct.pack("<II", 10, 10)      # central: 10 and 10
c = central(b, "none.bin")
b[c + 16:c + 20] = struct.pack("<I", zlib.crc32(b"no such bytes"))
# local header of none.bin: the CRC as the central one (unzip checks it there too)
i, _ = data_off(b, "none.bin")
b[i.header_offset + 14:i.header_offset + 18] = b[c + 16:c + 20]
sizes = bytes(b)


def zip64_off():
    """A stored member of 5 bytes whose central zip64 uncompressed size is
    5 + 4 GiB (csize 5): written by hand, zipfile writes no such thing."""
    name, data = b"five.bin", b"five\n"
    crc = zlib.crc32(data)
    lh = struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, 0, 0, 0x21, crc, 5, 5,
                     len(name), 0) + name
    ex = struct.pack("<HHQ", 1, 8, 5 + (1 << 32))
    ce = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 45, 45, 0, 0, 0, 0x21, crc, 5,
                     0xffffffff, len(name), len(ex), 0, 0, 0, 0, 0) + name + ex
    body = lh + data
    end = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 1, 1, len(ce), len(body), 0)
    return body + ce + end


save("sizes", sizes, {"twenty.bin": twenty, "none.bin": "EIO", "next.txt": b"next\n"})
save("zip64size", zip64_off(), {"five.bin": b"five\n"})

# ---- bytes before the zip
members = [("a/one.txt", b"one\n" * 100), ("b/two.bin", rng.randbytes(70000)),
           ("c/three.txt", b"three\n" * 5000)]
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in members:
        z.writestr(n, d)
plain = buf.getvalue()
want = dict(members)
stub = b"#!/bin/sh\necho self-extracting\nexit 0\n" + rng.randbytes(4000)
save("sfx", stub + plain, want)
save("pad", b"\0" * 4096 + plain, want)
save("appended", b"\xff\xd8\xff\xe0" + rng.randbytes(9000) + b"\xff\xd9" + plain, want)
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
    for n, d in members:
        with z.open(n, "w", force_zip64=True) as f:
            f.write(d)
z64 = bytearray(buf.getvalue())
# zipfile writes zip64 end records only when needed: force them (a copy
# of the end record's numbers in a zip64 end record and its locator)
e = z64.rfind(b"PK\x05\x06")
cnt, cdsize, cdoff = struct.unpack("<HII", z64[e + 10:e + 20])
rec64 = struct.pack("<IQHHIIQQQQ", 0x06064b50, 44, 45, 45, 0, 0, cnt, cnt, cdsize, cdoff)
loc64 = struct.pack("<IIQI", 0x07064b50, 0, e, 1)
end = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0)
z64 = bytes(z64[:e]) + rec64 + loc64 + end
assert {i.filename for i in zipfile.ZipFile(io.BytesIO(z64)).infolist()} == set(want)
save("sfx64", stub + z64, want)

# zip -A: a stub and a zip, offsets adjusted to count the stub
d = os.path.join(top, "srcA")
os.makedirs(d, exist_ok=True)
for n, data in members:
    os.makedirs(os.path.join(d, os.path.dirname(n)), exist_ok=True)
    with open(os.path.join(d, n), "wb") as f:
        f.write(data)
subprocess.run(["zip", "-qr", "../inner.zip", "a", "b", "c"], cwd=d, check=True)
with open(os.path.join(top, "inner.zip"), "rb") as f:
    inner = f.read()
with open(os.path.join(top, "sfxA.zip"), "wb") as f:
    f.write(stub + inner)
subprocess.run(["zip", "-qA", os.path.join(top, "sfxA.zip")], check=True)
with open(os.path.join(top, "sfxA.want.json"), "w") as f:
    json.dump({k: v.hex() for k, v in want.items()}, f)

# ---- members no read can give, and other methods
d = os.path.join(top, "srcM")
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "secret1.txt"), "w") as f:
    f.write("secret one\n")
with open(os.path.join(d, "secret2.txt"), "w") as f:
    f.write("secret two\n")
subprocess.run(["zip", "-q", "-P", "pw", "../enc.zip", "secret1.txt", "secret2.txt"],
               cwd=d, check=True)
with open(os.path.join(top, "enc.zip"), "rb") as f:
    enc = f.read()
meth = {"plain.txt": b"plain deflated\n" * 50,
        "bz.txt": b"bzip2 member\n" * 2000,
        "lz.txt": b"lzma member\n" * 2000}
buf = io.BytesIO(enc)
with zipfile.ZipFile(buf, "a") as z:
    z.writestr("plain.txt", meth["plain.txt"], zipfile.ZIP_DEFLATED)
    z.writestr("bz.txt", meth["bz.txt"], zipfile.ZIP_BZIP2)
    z.writestr("lz.txt", meth["lz.txt"], zipfile.ZIP_LZMA)
save("methods", buf.getvalue(), {"plain.txt": meth["plain.txt"], "bz.txt": meth["bz.txt"],
                                 "lz.txt": meth["lz.txt"], "secret1.txt": "EIO",
                                 "secret2.txt": "EIO"})


# ---- zstd (93) and xz (95), which zipfile does not write, and large
# members of the block codecs (over 4 MiB: through their own sources), by
# hand: the data compressed by the real tools, the headers written here
def tool(cmd, data):
    return subprocess.run(cmd, input=data, stdout=subprocess.PIPE, check=True).stdout


def raw_zip(entries):
    """entries: (name, method, compressed, plain[, crc]); a plain zip."""
    out, cd = bytearray(), bytearray()
    for e in entries:
        name, method, comp, plain = (e[0].encode(),) + tuple(e[1:4])
        crc = e[4] if len(e) > 4 else zlib.crc32(plain)
        off = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 63, 0, method, 0, 0x21, crc,
                           len(comp), len(plain), len(name), 0) + name + comp
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 63, 63, 0, method, 0, 0x21,
                          crc, len(comp), len(plain), len(name), 0, 0, 0, 0, 0,
                          off) + name
    n = len(entries)
    return bytes(out + cd + struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, n, n, len(cd),
                                        len(out), 0))


def mixed(n):
    """n bytes, text and random 64 KiB pieces: compressible, not trivially."""
    out, k = bytearray(), 0
    while len(out) < n:
        out += rng.randbytes(65536) if rng.random() < 0.3 else \
            b"".join(b"%09d\n" % (k + j) for j in range(6554))[:65536]
        k += 6554
    return bytes(out[:n])


small_t = b"a small member\n" * 300
big_t = mixed(6 << 20)
ents = [("zst.txt", 93, tool(["zstd", "-q", "-c"], small_t), small_t),
        ("xz.txt", 95, tool(["xz", "-c"], small_t), small_t),
        ("bz.txt", 12, tool(["bzip2", "-c"], small_t), small_t),
        ("big.zst", 93, tool(["zstd", "-q", "-c"], big_t), big_t),
        ("big.xz", 95, tool(["xz", "-c", "--block-size=1MiB"], big_t), big_t),
        ("big.bz2", 12, tool(["bzip2", "-c"], big_t), big_t),
        ("badcrc.zst", 93, tool(["zstd", "-q", "-c"], small_t), small_t, zlib.crc32(b"x")),
        ("badcrc.xz", 95, tool(["xz", "-c"], big_t), big_t, zlib.crc32(b"y"))]
want = {e[0]: ("EIO" if len(e) > 4 else e[3]) for e in ents}
save("codecs", raw_zip(ents), want)
