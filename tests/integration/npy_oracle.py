#!/usr/bin/python3
"""numpy oracle for tests/integration/test_daemon.sh.

  npy_oracle.py make SRC            writes the test arrays SRC/*.npy
  npy_oracle.py bad SRC             writes one good and several broken .npy
  npy_oracle.py big SRC N           writes SRC/big.npy with N one-byte rows
  npy_oracle.py expect SRC OUT [N]  writes OUT/X/%06d.npy = np.save(arr[i]) for
                                    every SRC/X.npy numpy loads and the npy
                                    layout serves (C order, not object); with
                                    N, only rows i < N (-o per_class=N)
"""
import os
import sys

import numpy as np


def make(src):
    os.makedirs(src, exist_ok=True)
    rng = np.random.default_rng(1234)
    arrays = {
        "digits": rng.integers(0, 256, (37, 784), dtype=np.uint8),
        "images": rng.random((9, 28, 28), dtype=np.float32),
        "labels": rng.integers(-2**62, 2**62, 23, dtype=np.int64),
        "bigend": rng.integers(-2**31, 2**31, (11, 3), dtype=np.int64).astype(">i4"),
        "flags": rng.random(13) > 0.5,
        "cplx": (rng.random((6, 2)) + 1j * rng.random((6, 2))).astype(np.complex128),
        "half": rng.random((4, 3, 2)).astype("<f2"),
        "empty": np.zeros((0, 5), np.float32),
        "name with space": np.arange(3, dtype=np.int16),
        "deep": rng.integers(0, 9, (2, 1, 2, 1, 3), dtype=np.uint16),
        # 1-D rows are numpy scalars: native order, bools 0/1, long double
        # padding zeroed; raw random bytes make every byte count
        "scalar_be": np.frombuffer(rng.bytes(4 * 7), ">i4"),
        "scalar_bec16": np.frombuffer(rng.bytes(16 * 3), ">c16"),
        "scalar_bool": np.frombuffer(bytes([0, 1, 2, 255]), "?"),
        "scalar_ld": np.frombuffer(rng.bytes(16 * 3), "<f16"),
    }
    for name, a in arrays.items():
        np.save(os.path.join(src, name + ".npy"), a)
    # version 2.0 and 3.0 sources serve the same rows
    from numpy.lib import format as fmt
    with open(os.path.join(src, "v2.npy"), "wb") as f:
        fmt.write_array(f, np.arange(12, dtype="<f8").reshape(4, 3), version=(2, 0))
    with open(os.path.join(src, "v3.npy"), "wb") as f:
        fmt.write_array(f, np.arange(5, dtype="<u4"), version=(3, 0))
    # not .npy: ignored
    with open(os.path.join(src, "README.txt"), "w") as f:
        f.write("not an array\n")


def bad(src):
    os.makedirs(src, exist_ok=True)
    np.save(os.path.join(src, "good.npy"), np.arange(20, dtype="<i4").reshape(5, 4))
    # truncated: the last row is half missing
    p = os.path.join(src, "trunc.npy")
    np.save(p, np.arange(40, dtype="<i4").reshape(10, 4))
    os.truncate(p, os.path.getsize(p) - 8)
    # header lies: says 10 rows, has 5
    p = os.path.join(src, "lies.npy")
    np.save(p, np.arange(20, dtype="<i4").reshape(5, 4))
    with open(p, "r+b") as f:
        h = f.read(128)
        f.seek(0)
        f.write(h.replace(b"(5, 4)", b"(9, 4)"))
    np.save(os.path.join(src, "fortran.npy"),
            np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4)))
    np.save(os.path.join(src, "objects.npy"), np.array([1, "a", None], dtype=object))
    np.save(os.path.join(src, "scalar.npy"), np.float64(3.5))
    with open(os.path.join(src, "garbage.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'}")
    # 10^18 rows of nothing: a consistent size, an endless directory
    from numpy.lib import format as fmt
    with open(os.path.join(src, "endless.npy"), "wb") as f:
        fmt._write_array_header(f, {"descr": "<f4", "fortran_order": False,
                                    "shape": (10**18, 0)}, (1, 0))
    # a FIFO must not hang the mount
    os.mkfifo(os.path.join(src, "fifo.npy"))


def big(src, n):
    os.makedirs(src, exist_ok=True)
    np.save(os.path.join(src, "big.npy"), (np.arange(n) % 251).astype(np.uint8).reshape(n, 1))


def servable(path):
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            shape = np.lib.format._read_array_header(f, version)[0]
        if shape and shape[0] > 2**31 - 1:     # samplefs refuses these
            return None
        a = np.load(path, allow_pickle=False, mmap_mode="r")
    except Exception:
        return None
    if a.ndim == 0 or a.dtype.kind not in "biufc" or (a.ndim > 1 and np.isfortran(a)):
        return None
    return np.asarray(a)


def expect(src, out, limit=None):
    paths = [src] if src.endswith(".npy") else \
        [os.path.join(src, n) for n in os.listdir(src) if n.endswith(".npy")]
    for p in paths:
        a = servable(p)
        if a is None:
            continue
        d = os.path.join(out, os.path.basename(p)[:-4])
        os.makedirs(d)
        for i in range(a.shape[0] if limit is None else min(limit, a.shape[0])):
            np.save(os.path.join(d, "%06d.npy" % i), a[i])


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "bad":
        bad(sys.argv[2])
    elif cmd == "big":
        big(sys.argv[2], int(sys.argv[3]))
    elif cmd == "expect":
        expect(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
    else:
        sys.exit("unknown command " + cmd)
