#!/usr/bin/python3
"""Zip archives for test_zip.sh, made by Info-ZIP zip (deflated, stored,
zip64 forced with -fz: zip64 extra fields in the central directory and the
zip64 end record) and Python's zipfile (zip64 local headers, data
descriptors),
each in DIR/CASE/archive.zip, and the few hostile ones it mounts to see
them fail.  Prints the names of the cases that unzip extracts and the
mount must equal (test_zip.sh compares the trees).

Usage: zip_cases.py DIR
"""
import io
import os
import random
import subprocess
import sys
import zipfile

rng = random.Random(18)
top = sys.argv[1]


def tree(d):
    """A small tree: text, random bytes (incompressible), a large
    compressible member (> 4 MiB: read through access points), unicode names."""
    os.makedirs(os.path.join(d, "a/b"), exist_ok=True)
    os.makedirs(os.path.join(d, "empty"), exist_ok=True)
    with open(os.path.join(d, "a/hello.txt"), "w") as f:
        f.write("hello\n")
    with open(os.path.join(d, "a/b/rand.bin"), "wb") as f:
        f.write(rng.randbytes(300000))
    with open(os.path.join(d, "big.txt"), "w") as f:
        for i in range(900000):
            f.write("%d\n" % i)
    with open(os.path.join(d, "ünïcødé ß.txt"), "w") as f:
        f.write("utf-8 name\n")
    with open(os.path.join(d, "zero"), "w"):
        pass
    os.symlink("a/hello.txt", os.path.join(d, "link"))


def infozip(name, *opts):
    d = os.path.join(top, name)
    src = os.path.join(d, "src")
    os.makedirs(src)
    tree(src)
    subprocess.run(["zip", "-qry", *opts, "../archive.zip", "."], cwd=src, check=True)
    return name


def pyzip(name, force64=False, stream=False):
    """zipfile: zip64 records forced, or written to a pipe (data
    descriptors: flag bit 3, sizes after the data)."""
    d = os.path.join(top, name)
    os.makedirs(d)
    buf = io.BytesIO()

    class Pipe(io.RawIOBase):   # not seekable: zipfile writes descriptors
        def writable(self):
            return True

        def write(self, b):
            return buf.write(b)

    out = Pipe() if stream else buf
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(40):
            data = ("member %d\n" % i).encode() * rng.randint(1, 3000)
            method = zipfile.ZIP_STORED if i % 3 == 0 else zipfile.ZIP_DEFLATED
            zi = zipfile.ZipInfo("dir%d/m%03d.txt" % (i % 4, i), (2020, 1, 2, 3, 4, 6))
            zi.compress_type = method
            with z.open(zi, "w", force_zip64=force64) as f:
                f.write(data)
        z.writestr("big/large.txt", b"".join(b"%08d\n" % k for k in range(700000)))
    with open(os.path.join(d, "archive.zip"), "wb") as f:
        f.write(buf.getvalue())
    return name


cases = [infozip("infozip"), infozip("stored", "-0"), infozip("zip64-infozip", "-fz"),
         pyzip("zip64", force64=True), pyzip("descriptors", stream=True)]



def mixed(n):
    """n bytes, 64 KiB at a time text (compressible) or random bytes, so
    that deflate's blocks and the access points fall unevenly."""
    out, k = bytearray(), 0
    while len(out) < n:
        if rng.random() < 0.35:
            out += rng.randbytes(65536)
        else:
            out += b"".join(b"%09d %s\n" % (k + j, b"x" * (j % 23)) for j in range(2000))[:65536]
        k += 2000
    return bytes(out[:n])


def large(name):
    """Large deflated members (zipread's access points, > 4 MiB): by
    zipfile, one plain and one with a zip64 local header, and a small one
    beside them; by Info-ZIP zip writing to a pipe, one with a data
    descriptor (flag bit 3: sizes after the data), a zip of its own.  (zip
    -fz to a pipe makes a zip that unzip says is missing 4 GB: not used.)"""
    d = os.path.join(top, name)
    os.makedirs(os.path.join(d, "src"))
    with zipfile.ZipFile(os.path.join(d, "archive.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("large/plain.bin", mixed(24 << 20))
        with z.open("large/zip64.bin", "w", force_zip64=True) as f:
            f.write(mixed(20 << 20))
        z.writestr("small.txt", b"small\n" * 100)
    with open(os.path.join(d, "src", "descriptor.bin"), "wb") as f:
        f.write(mixed(20 << 20))
    z = subprocess.run(["zip", "-q", "-", "descriptor.bin"], cwd=os.path.join(d, "src"),
                       stdout=subprocess.PIPE, check=True)   # a pipe: not seekable
    with open(os.path.join(d, "descriptor.zip"), "wb") as f:
        f.write(z.stdout)
    return name


# hostile ones, by hand
h = os.path.join(top, "hostile")
os.makedirs(h)
good = io.BytesIO()
with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("ok.txt", b"fine\n" * 1000)
    z.writestr("crc.txt", b"the crc of this member is wrong\n" * 100)
    z.writestr("flip.txt", bytes(rng.randbytes(2000)) + b"x" * 20000)
    z.writestr("../escape.txt", b"no\n")
    i = zipfile.ZipInfo("cafXe.txt")
    i.create_system = 0
    z.writestr(i, b"cp437 name\n")
data = bytearray(good.getvalue())
zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
crc = zf.getinfo("crc.txt")
# the central directory's CRC of crc.txt, off by one bit
pos = data.find(b"crc.txt", zf.start_dir) - 46 + 16
data[pos] ^= 1
flip = zf.getinfo("flip.txt")
mid = flip.header_offset + 30 + len("flip.txt") + flip.compress_size // 2
data[mid] ^= 0x10
# the name in the local and central headers: CP437 0x82 (e acute), MS-DOS host
data = data.replace(b"cafXe", b"caf\x82e")
with open(os.path.join(h, "archive.zip"), "wb") as f:
    f.write(bytes(data))
# a bomb: 1 GiB of zeros declared as 2 KiB... and the other way round
bomb = io.BytesIO()
with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("zeros", b"\0" * (64 << 20))
b = bytearray(bomb.getvalue())
zb = zipfile.ZipFile(io.BytesIO(bytes(b)))
pos = zb.start_dir + 24                 # central usize: 4 KiB declared
b[pos:pos + 4] = (4096).to_bytes(4, "little")
with open(os.path.join(h, "bomb.zip"), "wb") as f:
    f.write(bytes(b))
# large members gone wrong: a CRC-32 off by one bit in the directory, a
# deflate stream cut short (its compressed size halved in both headers:
# the zip still parses), and a stream longer than its declared size
hl = io.BytesIO()
with zipfile.ZipFile(hl, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("ok.bin", mixed(6 << 20))
    z.writestr("badcrc.bin", mixed(6 << 20))
    z.writestr("cut.bin", mixed(6 << 20))
    z.writestr("long.bin", b"\0" * (8 << 20))
b = bytearray(hl.getvalue())
zl = zipfile.ZipFile(io.BytesIO(bytes(b)))


def central(name):
    return b.find(b"PK\x01\x02", zl.start_dir + b[zl.start_dir:].find(name.encode()) - 46)


i = zl.getinfo("badcrc.bin")
b[central("badcrc.bin") + 16] ^= 1
i = zl.getinfo("cut.bin")
half = (i.compress_size // 2).to_bytes(4, "little")
b[i.header_offset + 18:i.header_offset + 22] = half
b[central("cut.bin") + 20:central("cut.bin") + 24] = half
b[central("long.bin") + 24:central("long.bin") + 28] = (5 << 20).to_bytes(4, "little")
b[zl.getinfo("long.bin").header_offset + 22:zl.getinfo("long.bin").header_offset + 26] = \
    (5 << 20).to_bytes(4, "little")
with open(os.path.join(h, "large.zip"), "wb") as f:
    f.write(bytes(b))
# truncated: the end of the central directory cut off
with open(os.path.join(h, "truncated.zip"), "wb") as f:
    f.write(bytes(data[:len(data) - 30]))
cases.append(large("large"))
print(" ".join(cases))
