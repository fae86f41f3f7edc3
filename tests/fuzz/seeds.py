#!/usr/bin/python3
"""Seed corpora for the libFuzzer targets in tests/fuzz.

Usage: seeds.py FIXTURES OUT
FIXTURES is a directory the fixture generators (tests/fixtures/make_*.py)
have written into; OUT gets one directory per target holding the fixture
files that target reads (by format), plus inputs made here where the
target's input is not a file format (devkit's split form, the stroke and
block store modes, index edit lists) and scipy-written MAT-files with the
shapes the MAT v5 reader must bound (compressed variables, struct and cell
arrays).  Generated, never committed: `make fuzz` writes them into
build-fuzz/corpus/.
"""
import glob
import io
import os
import shutil
import struct
import sys
import tarfile
import zlib

import numpy as np
import scipy.io

MAX_SEED = 1 << 20      # larger fixtures would only be cut to -max_len


def put(out, target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def copy(out, target, paths, limit=200):
    n = 0
    for p in sorted(paths):
        if n >= limit or not os.path.isfile(p) or os.path.getsize(p) > MAX_SEED:
            continue
        rel = os.path.relpath(p, FIX).replace("/", "_")
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(p, os.path.join(d, rel))
        n += 1


def mats():
    """Variables of the shapes MATLAB and scipy write, each compressed and not."""
    rec = np.zeros((3, 1), dtype=[("WNID", object), ("words", object),
                                  ("ILSVRC2012_ID", object), ("num_children", object),
                                  ("children", object)])
    for i in range(3):
        rec[i, 0]["WNID"] = "n0%07d" % (i + 1)
        rec[i, 0]["words"] = "thing %d" % i
        rec[i, 0]["ILSVRC2012_ID"] = np.array([[i + 1]], dtype=[np.float64, np.uint8, np.int16][i])
        rec[i, 0]["num_children"] = np.array([[0.0]])
        rec[i, 0]["children"] = np.zeros((1, 0))
    cell = np.empty((2, 2), dtype=object)
    cell[0, 0] = "text"
    cell[0, 1] = np.arange(6, dtype=np.int32).reshape(2, 3)
    inner = np.empty((1, 1), dtype=object)
    inner[0, 0] = np.array([[1.5, -2.0]])
    cell[1, 0] = inner
    cell[1, 1] = np.array(["ab", "cd"])
    variables = {
        "struct": {"synsets": rec},
        "cell": {"synsets": cell},
        "numeric": {"synsets": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
                    "other": np.arange(5, dtype=np.uint64)},
        "chars": {"synsets": np.array(["row one", "row two"])},
        "sparse": {"synsets": scipy.sparse.csc_matrix(np.eye(3))},
        "empty": {"synsets": np.zeros((0, 0))},
    }
    for name, v in variables.items():
        for comp in (False, True):
            b = io.BytesIO()
            scipy.io.savemat(b, v, do_compression=comp)
            yield "%s%s.mat" % (name, "_z" if comp else ""), b.getvalue()


def devkits(out):
    for p in sorted(glob.glob(os.path.join(FIX, "**", "*devkit*.tar.gz"), recursive=True)):
        raw = open(p, "rb").read()
        meta = truth = b""
        with tarfile.open(p) as tf:
            for m in tf.getmembers():
                if m.name.endswith("data/meta.mat"):
                    meta = tf.extractfile(m).read()
                elif m.name.endswith("ground_truth.txt"):
                    truth = tf.extractfile(m).read()
        tag = os.path.relpath(p, FIX).replace("/", "_")
        put(out, "devkit", tag + ".split", b"\0" + struct.pack("<I", len(meta)) + meta + truth)
        put(out, "devkit", tag + ".tgz", b"\1" + raw)
        put(out, "devkit", tag + ".tar", b"\1" + zlib.decompress(raw, 31))


def zigzag(v):
    return (v << 1) ^ (v >> 31) if v >= 0 else ((-v) << 1) - 1


def varint(u):
    b = bytearray()
    while True:
        if u < 0x80:
            b.append(u)
            return bytes(b)
        b.append(0x80 | (u & 0x7f))
        u >>= 7


def pack(points):
    return b"".join(varint(zigzag(dx) * 2 + pen) + varint(zigzag(dy)) for dx, dy, pen in points)


def blockstore(records, deflate):
    """The three sections blockstore.c reads (its struct bs_blk, u16 offsets)."""
    data, blk, rec = b"", b"", b""
    first = 0
    for group in (records[:2], records[2:]):
        raw = b"".join(group)
        z = raw
        if deflate:
            c = zlib.compressobj(1, zlib.DEFLATED, -15)
            z = c.compress(raw) + c.flush()
            if len(z) >= len(raw):
                z = raw
        blk += struct.pack("<QIIII", len(data), first, zlib.adler32(raw), len(z), len(raw))
        off = 0
        for r in group:
            rec += struct.pack("<H", off)
            off += len(r)
        data += z
        first += len(group)
    blk += struct.pack("<QIIII", len(data), first, 0, 0, 0)
    return struct.pack("<II", len(data), len(blk)) + data + blk + rec


def strokes(out):
    pts = [(i % 7 - 3, (i * 5) % 11 - 5, int(i % 4 == 3)) for i in range(40)]
    big = [(300 * (i % 3) - 300, -200 * (i % 2), int(i % 2)) for i in range(20)]
    for k, p in enumerate((pts, big, pts[:1])):
        put(out, "strokes", "packed%d" % k, bytes([0, 129]) + pack(p))
        put(out, "strokes", "points%d" % k,
            bytes([1, 129]) + b"".join(struct.pack("<hhh", *q) for q in p))
    put(out, "strokes", "points_pen2", bytes([1, 7]) + struct.pack("<hhh", 1, 2, 2))
    recs = [b"P" + pack(pts[:n]) for n in (3, 10, 1, 40)] + [b"R" + struct.pack("<hhh", 1, 1, 5)]
    put(out, "strokes", "blocks_raw", bytes([2, 1]) + blockstore(recs, False))
    put(out, "strokes", "blocks_deflated", bytes([2, 0]) + blockstore(recs, True))


def index(out):
    for mode in (0, 2, 4, 6):     # the valid index, no edits
        put(out, "index", "valid%d" % mode, bytes([mode]))
    # one edit of each kind, with the header fixed after it
    for kind in range(7):
        put(out, "index", "edit%d" % kind, bytes([2, kind, 0x40, 0x01, 0, 3, 1, 0x41, 0x10]))
    put(out, "index", "raw", b"\1SFSIDX\0\1" + bytes(56))
    # 0x88: 'ZKEY' sections (core/index/zstore.h) against fuzz_index.c's
    # key: that key, then one differing in every field
    def zkey(name, size, mtime, gen, span, etag):
        return (struct.pack("<IIQqQQ128s", 1, len(name), size, mtime, gen, span, etag)
                + name + b"\0")
    put(out, "index", "zkey_same", b"\x88" + zkey(b"/d/x.tar.gz", 1000, 5000000000, 0, 1 << 20, b'"e"'))
    put(out, "index", "zkey_other", b"\x88" + zkey(b"s3://b/y.tar.gz", 7, -1, 9, 65536, b""))


def autoindex(out):
    """Listings as nginx's autoindex_format json writes them."""
    put(out, "autoindex", "empty", b"[\n]\n")
    put(out, "autoindex", "two", b'[\n{ "name":"cat.npy", "type":"file", "mtime":"Mon, 01 Jan 2024 '
        b'00:00:00 GMT", "size":123 },\n{ "name":"sub", "type":"directory", "mtime":"x" }\n]\n')
    put(out, "autoindex", "escapes", '[{"name":"a \\"q\\" \\\\ \\/ \\u00e9 \\ud83d\\ude00",'
        '"type":"file","size":0}]'.encode())
    put(out, "autoindex", "other", b'[{"name":"l","type":"other"},{"name":"..","type":"directory"}]')


def bucketlist(out):
    """Listing pages and errors as Swift's s3api, AWS and GCS write them."""
    ns = b' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    put(out, "bucketlist", "s3-page",
        b"<?xml version='1.0' encoding='UTF-8'?>\n<ListBucketResult" + ns +
        b"><Name>sfs-data</Name><Prefix>qd/</Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>"
        b"<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated><NextContinuationToken>"
        b"cWQvbnVtcHlfYml0bWFwLw==</NextContinuationToken><Contents><Key>qd/classes.txt</Key>"
        b"<LastModified>2026-12-02T09:01:47.000Z</LastModified><ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;"
        b"</ETag><Size>26</Size><StorageClass>STANDARD</StorageClass></Contents>"
        b"<CommonPrefixes><Prefix>qd/numpy_bitmap/</Prefix></CommonPrefixes></ListBucketResult>")
    put(out, "bucketlist", "s3-unicode",
        ("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>d/cr\u00e8me br\u00fbl\u00e9e "
         "x+y=z &amp; &#x1F600;.npy</Key><Size>0</Size><ETag>\"x-2\"</ETag>"
         "<LastModified>1999-12-31T23:59:60.5Z</LastModified><Owner><ID>Key</ID></Owner>"
         "</Contents></ListBucketResult>").encode())
    put(out, "bucketlist", "gcs-page",
        b"<?xml version='1.0' encoding='UTF-8'?><ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'>"
        b"<Name>quickdraw_dataset</Name><Prefix>sketchrnn/</Prefix><Marker></Marker>"
        b"<NextMarker>sketchrnn/axe.npz</NextMarker><IsTruncated>true</IsTruncated><Contents>"
        b"<Key>sketchrnn/aircraft carrier.npz</Key><Generation>1522197893416108</Generation>"
        b"<MetaGeneration>1</MetaGeneration><LastModified>2018-03-28T00:44:53.414Z</LastModified>"
        b"<ETag>\"5cc4bc1b1d1d4bb1b2d5bb0e8d5c4a0b\"</ETag><Size>71238011</Size></Contents></ListBucketResult>")
    put(out, "bucketlist", "error",
        b"<?xml version='1.0' encoding='UTF-8'?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>"
        b"The request signature we calculated does not match the signature you provided.</Message>"
        b"<StringToSign>AWS4-HMAC-SHA256\n20261202T090146Z</Str")
    put(out, "bucketlist", "doctype",
        b'<!DOCTYPE l [<!ENTITY a "aaaa">]><ListBucketResult><Contents><Key>&a;</Key>'
        b"<Size>1</Size></Contents></ListBucketResult>")


def awscred(out):
    """Credentials files as the AWS CLI writes them and users edit them."""
    put(out, "awscred", "default", b"\x00[default]\naws_access_key_id = AKIAEXAMPLE\n"
        b"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\naws_session_token=IQoJb3JpZ2luX2Vj\n")
    put(out, "awscred", "profiles", b"\x01# comment\n[default]\naws_access_key_id=a\n"
        b"aws_secret_access_key=b\n\n[ swift ]\r\n; another\r\naws_access_key_id = test:tester\r\n"
        b"aws_secret_access_key = testing\r\n[swift]\nregion = x\n")
    put(out, "awscred", "half", b"\x02[a b]\naws_access_key_id = only\n[other]\n"
        b"aws_secret_access_key = s\n")
    put(out, "awscred", "named", b"\x03\nprod\n[prod]\naws_access_key_id=k=v\naws_secret_access_key=\t\n")


def httphdr(out):
    """Header values as servers send them (nginx, S3, GCS, proxies) and as
    they should not: the first byte picks Content-Range (0), ETag (1),
    Retry-After (2), GCS's x-goog-hash (3) or S3's x-amz-checksum-crc32c
    (4), modulo 5."""
    seeds = {
        "cr-range": b"\x00bytes 0-1023/146515",
        "cr-unknown-total": b"\x00bytes 42-42/*",
        "cr-unsatisfied": b"\x00bytes */146515",
        "cr-huge": b"\x00bytes 9223372036854775806-9223372036854775806/9223372036854775807",
        "cr-overflow": b"\x00bytes 0-18446744073709551616/18446744073709551617",
        "cr-negative": b"\x00bytes -5-10/100",
        "cr-reversed": b"\x00bytes 10-5/100",
        "cr-past-end": b"\x00bytes 0-100/100",
        "cr-blanks": b"\x00  bytes  0-1/2 \t",
        "cr-other-unit": b"\x00items 0-1/2",
        "cr-star-star": b"\x00bytes */*",
        "cr-trailing": b"\x00bytes 0-1/2x",
        "etag-strong": b'\x01"9a0364b9e99bb480dd25e1f0284c8555"',
        "etag-weak": b'\x01W/"5f7a-1b2c"',
        "etag-multipart": b'\x01"d41d8cd98f00b204e9800998ecf8427e-12"',
        "etag-unquoted": b"\x01abc123",
        "etag-half-quoted": b'\x01"abc',
        "etag-inner-quote": b'\x01"a"b"',
        "etag-empty": b'\x01""',
        "etag-long": b'\x01"' + b"f" * 300 + b'"',
        "etag-blanks": b'\x01 \t"x" ',
        "ra-seconds": b"\x02120",
        "ra-zero": b"\x020",
        "ra-huge": b"\x02" + b"9" * 40,
        "ra-leading-zeros": b"\x02" + b"0" * 30 + b"7",
        "ra-negative": b"\x02-5",
        "ra-imf-date": b"\x02Wed, 21 Oct 2015 07:28:00 GMT",
        "ra-future-date": b"\x02Fri, 31 Dec 2049 23:59:59 GMT",
        "ra-rfc850": b"\x02Sunday, 06-Nov-94 08:49:37 GMT",
        "ra-asctime": b"\x02Sun Nov  6 08:49:37 1994",
        "ra-garbage": b"\x02soon",
        "ra-seconds-text": b"\x0230 seconds",
        "goog-both": b"\x03crc32c=4waSgw==,md5=XrY7u+Ae7tCTyyK7j1rNww==",
        "goog-md5-first": b"\x03md5=XrY7u+Ae7tCTyyK7j1rNww==, crc32c=AAAAAQ==",
        "goog-unpadded": b"\x03crc32c=AAAAAQ",
        "s3-crc32c": b"\x044waSgw==",
        "s3-trailing": b"\x044waSgw==x",
    }
    for name, data in seeds.items():
        put(out, "httphdr", name, data)


def classes(out):
    """Classes files as the dataset ships them and users write them."""
    shipped = glob.glob(os.path.join(FIX, "**", "classes.txt"), recursive=True)
    copy(out, "classes", shipped, limit=20)
    put(out, "classes", "crlf", b"cat\r\nThe Eiffel Tower\r\n\r\nt-shirt\r\n")
    put(out, "classes", "repeat", b"cat\ndog\ncat\n")
    put(out, "classes", "bad", b"cat\nca\tt\n..\n")
    put(out, "classes", "noeol", "caf\u00e9\nzebra".encode())


def download(out):
    """samplefs-download's inputs: a file of URLs (mode 0), x-goog-hash
    values (1), ETags (2), the first byte choosing."""
    put(out, "download", "urls", b"\x00# a list\r\nhttps://h/d/a%20b.npy?x=1\n\n"
        b"  s3://bkt/qd/cat.npy  \ngs://quickdraw_dataset/full/numpy_bitmap/The%20Eiffel%20Tower.npy\n")
    put(out, "download", "urls-bad", b"\x00https://h/a\nftp://h/b\nhttps://h/..\n")
    put(out, "download", "goog", b"\x01crc32c=n03x6A==, md5=1B2M2Y8AsgTpgAmY7PhCfg==\r\n")
    put(out, "download", "goog-md5", b"\x01 md5=kAFQmDzST7DWlj99KOF/cg==")
    put(out, "download", "etag", b'\x02"d41d8cd98f00b204e9800998ecf8427e"')
    put(out, "download", "etag-multipart", b'\x02"d41d8cd98f00b204e9800998ecf8427e-12"')
def checkpoint(out):
    # edit lists for the valid checkpoint fuzz_checkpoint.c writes
    put(out, "checkpoint", "valid", b"\x00")
    put(out, "checkpoint", "valid-crcs", b"\x02")
    put(out, "checkpoint", "flip-path", b"\x02\x58\x00\x01")
    put(out, "checkpoint", "cut", b"\x00\x00\x00\x00\x01\xa0\x00")
    put(out, "checkpoint", "raw", b"\x01SFSCKPT1")


def zips():
    """Small zips as layout=tar reads them: deflated and stored members,
    a directory, zip64 records forced, data descriptors (written to a
    stream that cannot seek)."""
    import io
    import zipfile

    class Pipe(io.RawIOBase):
        def __init__(self, buf):
            self.buf = buf

        def writable(self):
            return True

        def write(self, b):
            return self.buf.write(b)

    for name, force64, stream in (("plain", False, False), ("zip64", True, False),
                                  ("descr", False, True)):
        buf = io.BytesIO()
        with zipfile.ZipFile(Pipe(buf) if stream else buf, "w") as z:
            z.writestr("d/", b"")
            for i, method in enumerate((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)):
                zi = zipfile.ZipInfo("d/m%d.txt" % i)
                zi.compress_type = method
                with z.open(zi, "w", force_zip64=force64) as f:
                    f.write(b"member %d\n" % i * 300)
        yield name + ".zip", buf.getvalue()
    # a member over 4 MiB in a few KiB (zeros: deflate's best ratio), read
    # through a raw-deflate source; and the same declaring 1 MiB less (a
    # stream longer than its size, as the pass must stop)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros", bytes(5 << 20))
    yield "large.zip", buf.getvalue()
    b = bytearray(buf.getvalue())
    cd = b.rfind(b"PK\x01\x02")
    b[cd + 24:cd + 28] = (4 << 20 | 1).to_bytes(4, "little")
    b[22:26] = (4 << 20 | 1).to_bytes(4, "little")
    yield "large-long.zip", bytes(b)
    # issue 25: bzip2, LZMA, zstd and xz members (small, and a large zstd
    # one of zeros), bytes before the zip, a stored member whose sizes
    # disagree (central 10, local 20)
    import subprocess
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("b.txt", b"bzip2\n" * 200, zipfile.ZIP_BZIP2)
        z.writestr("l.txt", b"lzma\n" * 200, zipfile.ZIP_LZMA)
        z.writestr("s.txt", b"0123456789abcdefghij", zipfile.ZIP_STORED)
    b = bytearray(buf.getvalue())
    cd = b.rfind(b"PK\x01\x02")
    b[cd + 20:cd + 28] = struct.pack("<II", 10, 10)
    yield "methods.zip", bytes(b)
    yield "prefixed.zip", b"#!/bin/sh\nexit 0\n" + bytes(b)
    for name, cmd, method, plain in (("zstd.zip", ["zstd", "-q", "-c"], 93, bytes(5 << 20)),
                                     ("xz.zip", ["xz", "-c"], 95, b"xz member\n" * 100)):
        r = subprocess.run(cmd, input=plain, capture_output=True)
        if r.returncode:
            continue
        comp, nm = r.stdout, b"m.bin"
        lh = struct.pack("<IHHHHHIIIHH", 0x04034b50, 63, 0, method, 0, 0x21,
                         zlib.crc32(plain), len(comp), len(plain), len(nm), 0) + nm
        ce = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 63, 63, 0, method, 0, 0x21,
                         zlib.crc32(plain), len(comp), len(plain), len(nm), 0, 0, 0, 0,
                         0, 0) + nm
        body = lh + comp
        yield name, body + ce + struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 1, 1, len(ce),
                                            len(body), 0)


def zindex(out, tars):
    """fuzz_zindex: even first byte, a gzip file (one member, members,
    BGZF-like, stored); odd, edits of its fixture's access-point table."""
    import gzip
    for i, p in enumerate(sorted(tars)[:20]):
        data = open(p, "rb").read()[:200000]
        put(out, "zindex", f"gz{i}", b"\0" + gzip.compress(data, 6))
        put(out, "zindex", f"members{i}", b"\2" + b"".join(
            gzip.compress(data[k:k + 20000], 1) for k in range(0, len(data), 20000)))
    put(out, "zindex", "stored", b"\4" + gzip.compress(os.urandom(70000), 0))
    put(out, "zindex", "empty", b"\6" + gzip.compress(b""))
    put(out, "zindex", "edit", b"\1" + struct.pack("<I", 100) + b"\x55")
    put(out, "zindex", "raw", b"\3\xff" + b"SFSZIDX\1" + bytes(48))


def zfind(out):
    """xz, zstd and bzip2 files as the tools write them: one block, blocks,
    frames with skippable ones, streams concatenated, a truncation."""
    import bz2
    import lzma
    import subprocess
    text = b"".join(b"line %d of a compressed tar\n" % i for i in range(12000))
    one = lzma.compress(text, preset=1)
    put(out, "zfind", "one.xz", one)
    put(out, "zfind", "two.xz", one + lzma.compress(text[:5000]))
    put(out, "zfind", "cut.xz", one[:len(one) // 2])
    put(out, "zfind", "one.bz2", bz2.compress(text, 1))
    put(out, "zfind", "two.bz2", bz2.compress(text[:150000], 1) + bz2.compress(text[:99], 1))
    tools = [("blocks.xz", ["xz", "-T2", "-1", "--block-size=64KiB"]),
             ("one.zst", ["zstd", "-q"]), ("pz.zst", ["pzstd", "-q", "-p", "1"])]
    for name, cmd in tools:
        r = subprocess.run(cmd + ["-c"], input=text, capture_output=True)
        if r.returncode == 0:
            put(out, "zfind", name, r.stdout)
    r = subprocess.run(["zstd", "-q", "-c"], input=text[:70000], capture_output=True)
    if r.returncode == 0:
        skip = b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd"
        put(out, "zfind", "frames.zst", r.stdout + skip + r.stdout)


def statdoc(out):
    """fuzz_statdoc: stats.json as the daemon writes it, and odd ones."""
    put(out, "statdoc", "doc", b'{\n  "version": "0.1",\n  "uptime_s": 1.5,\n'
        b'  "ops": {"lookup": 5, "read": 3},\n  "files_read": 3,\n'
        b'  "waits": 1, "wait_us_hist": {"100": 1, "+Inf": 0},\n'
        b'  "sources": [{"name": "a\\"b \\"errors\\": 9", "errors": 0}]\n}\n')
    put(out, "statdoc", "unterminated", b'{"read": 1e400, "errors": "x')
    put(out, "statdoc", "spaces", b'{"read"  \t:\n -0.5e+3}')


def archives(out):
    """fuzz_archive: small archives of every kind libarchive reads for
    samplefs, made by bsdtar (skipped when it is not installed)."""
    import shutil
    import subprocess
    import tempfile
    if not shutil.which("bsdtar"):
        return
    kinds = {"newc.cpio": ["--format=newc"], "odc.cpio": ["--format=odc"],
             "bin.cpio": ["--format=bin"], "t.a": ["--format=ar"],
             "t.7z": ["--format=7zip"], "lz4.tar": ["--lz4"],
             "lzip.tar": ["--lzip"], "lzop.tar": ["--lzop"], "Z.tar": ["-Z"],
             "lzma.tar": ["--lzma"], "lz4.cpio": ["--format=newc", "--lz4"]}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        os.makedirs(os.path.join(src, "dir"))
        for name, data in (("a.txt", b"hello\n"), ("dir/b.bin", bytes(range(256)) * 3),
                           ("empty", b"")):
            with open(os.path.join(src, name), "wb") as f:
                f.write(data)
        for name, opts in kinds.items():
            dst = os.path.join(d, name)
            files = ["a.txt", "empty"] if "ar" in opts[0] else ["."]
            if subprocess.run(["bsdtar", "-cf", dst, *opts, *files], cwd=src,
                              stderr=subprocess.DEVNULL).returncode == 0:
                with open(dst, "rb") as f:
                    put(out, "archive", name, f.read())


def main(fix, out):
    global FIX
    FIX = fix
    copy(out, "npy", glob.glob(os.path.join(fix, "npy", "*.npy")) +
         glob.glob(os.path.join(fix, "npy_layout", "src", "*.npy")))
    copy(out, "pickle", glob.glob(os.path.join(fix, "qd", "*.pkl")) +
         glob.glob(os.path.join(fix, "qd", "*.raw")))
    copy(out, "zip", glob.glob(os.path.join(fix, "qd", "*.npz")) +
         glob.glob(os.path.join(fix, "qd", "*.zip")))
    for name, data in zips():
        put(out, "zipdir", name, data)
    put(out, "kaggle", "pair", b"n01440764 tench, Tinca tinca\nn01443537 goldfish\n\0"
        b"ImageId,PredictionString\nILSVRC2012_val_00000002,n01443537 1 2 3 4 \r\n"
        b"ILSVRC2012_val_00000001,n01440764 5 6 7 8 n01443537 1 1 1 1\n")
    tars = glob.glob(os.path.join(fix, "tars", "**", "*.tar"), recursive=True) + \
        glob.glob(os.path.join(fix, "imagenet*", "**", "*.tar"), recursive=True)
    copy(out, "tar", tars)
    copy(out, "tarindex", tars)
    copy(out, "mat5", glob.glob(os.path.join(fix, "*.mat")))
    for name, data in mats():
        put(out, "mat5", name, data)
    devkits(out)
    strokes(out)
    index(out)
    autoindex(out)
    bucketlist(out)
    awscred(out)
    httphdr(out)
    classes(out)
    download(out)
    checkpoint(out)
    zindex(out, tars)
    zfind(out)
    statdoc(out)
    archives(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: seeds.py FIXTURES OUT")
    main(sys.argv[1], sys.argv[2])
