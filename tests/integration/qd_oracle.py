#!/usr/bin/python3
"""qd_oracle - what a samplefs Quick, Draw! mount must contain, computed with
numpy from the source files (the original pipeline's preprocessing), and a
checker that compares a mount with it file by file.

Usage:
  qd_oracle.py check SOURCE MOUNT [--classes FILE] [--per-class N]
               [--image float32|uint8] [--stroke-len N] [--seed N]
               [--split A/B/C] [--sample K] [--threads T]
    Compares every file (or K random ones per kind; with T threads reading
    in random order) and the directory listings; prints the first mismatches;
    exit status 1 if any.
  qd_oracle.py splits SOURCE [same options]   prints train.txt as expected
  qd_oracle.py make-bad DIR   writes DIR/<case>/ datasets, each with a good
    class and one broken file (see make_bad); prints "<case> <expect>" lines,
    expect = refuse (mount must fail naming the file) or N (the broken
    class serves N samples, with a warning)
"""
import argparse
import io
import os
import random
import sys
import threading

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'fixtures'))
from make_strokes import transform  # noqa: E402  the pipeline's numpy code
from qd_pickles import load_member  # noqa: E402


def source_dirs(src):
    a, b = os.path.join(src, 'numpy_bitmap'), os.path.join(src, 'sketchrnn')
    if os.path.isdir(a) or os.path.isdir(b):
        return a, b
    return src, src


def class_names(src, classes_file=None):
    if classes_file is None and os.path.exists(os.path.join(src, 'classes.txt')):
        classes_file = os.path.join(src, 'classes.txt')
    if classes_file:
        with open(classes_file, encoding='utf-8') as f:
            return [l.rstrip('\r\n') for l in f if l.rstrip('\r\n')]
    img, stk = source_dirs(src)
    names = set()
    for d, ext in ((img, '.npy'), (stk, '.npz')):
        if os.path.isdir(d):
            for f in os.listdir(d):
                if f.endswith(ext) and not f.endswith('.full.npz'):
                    names.add(f[:-4])
    return sorted(names, key=os.fsencode)


def load_strokes(path):
    with np.load(path, allow_pickle=True, encoding='latin1') as z:
        keys = set(k for k in z.files)
    order = [k for k in ('train', 'valid' if 'valid' in keys else 'val', 'test') if k in keys]
    if not order:
        order = ['strokes']
    out = []
    for k in order:
        out.extend(load_member(path, k))
    return out


class Dataset:
    def __init__(self, src, classes=None, per_class=0, image='float32',
                 stroke_len=130, seed=42, split=(80, 10, 10)):
        self.names = class_names(src, classes)
        img, stk = source_dirs(src)
        self.has_images = os.path.isdir(img) and any(
            f.endswith('.npy') for f in os.listdir(img))
        self.has_strokes = os.path.isdir(stk) and any(
            f.endswith('.npz') for f in os.listdir(stk))
        self.image, self.stroke_len = image, stroke_len
        self.images, self.strokes, self.base, self.n = [], [], [], []
        total = 0
        for c in self.names:
            ims = np.load(os.path.join(img, c + '.npy'), mmap_mode='r') if self.has_images else None
            sts = load_strokes(os.path.join(stk, c + '.npz')) if self.has_strokes else None
            n = min(len(x) for x in (ims, sts) if x is not None)
            if per_class:
                n = min(n, per_class)
            self.images.append(ims)
            self.strokes.append(sts)
            self.base.append(total)
            self.n.append(n)
            total += n
        self.total = total
        idx = np.arange(total)
        np.random.seed(seed)
        np.random.shuffle(idx)
        a = int(split[0] / 100 * total)
        b = int(split[1] / 100 * total)
        self.splits = {'train.txt': idx[:a], 'val.txt': idx[a:a + b], 'test.txt': idx[a + b:]}

    def label_of(self, g):
        return int(np.searchsorted(self.base, g, side='right')) - 1

    def image_bytes(self, c, i):
        img = np.asarray(self.images[c][i]).reshape(28, 28, 1)
        arr = img if self.image == 'uint8' else img.astype(np.float32) / 255.0
        return npy_bytes(arr)

    def stroke_array(self, c, i):
        s = self.strokes[c][i]
        if len(s) == 0:
            return np.zeros((self.stroke_len, 3), np.float32)
        return transform(s, self.stroke_len)

    def line(self, g):
        c = self.label_of(g)
        parts = []
        if self.has_images:
            parts.append('images/%s/%06d.npy' % (self.names[c], g))
        if self.has_strokes:
            parts.append('strokes/%s/%06d.npy' % (self.names[c], g))
        return '\t'.join(parts + [str(c)]) + '\n'

    def split_text(self, name):
        return ''.join(self.line(int(g)) for g in self.splits[name]).encode()

    def files(self):
        """(relative path, kind, class, index in class) of every sample file."""
        for c, name in enumerate(self.names):
            for i in range(self.n[c]):
                g = self.base[c] + i
                if self.has_images:
                    yield ('images/%s/%06d.npy' % (name, g), 'img', c, i)
                if self.has_strokes:
                    yield ('strokes/%s/%06d.npy' % (name, g), 'stk', c, i)


def npy_bytes(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


class Checker:
    def __init__(self, ds, mnt):
        self.ds, self.mnt = ds, mnt
        self.errors, self.count = [], 0
        self.done = 0   # files looked at, matching or not
        self.lock = threading.Lock()

    def fail(self, msg):
        with self.lock:
            self.errors.append(msg)

    def check_file(self, rel, kind, c, i):
        # an exception in a reader thread would otherwise vanish with it
        try:
            self._check_file(rel, kind, c, i)
        except Exception as e:
            self.fail('%s: %r' % (rel, e))
        finally:
            with self.lock:
                self.done += 1

    def _check_file(self, rel, kind, c, i):
        path = os.path.join(self.mnt, rel)
        try:
            with open(path, 'rb') as f:
                got = f.read()
            size = os.stat(path).st_size
        except OSError as e:
            return self.fail('%s: %s' % (rel, e))
        if size != len(got):
            self.fail('%s: st_size %d, read %d bytes' % (rel, size, len(got)))
        if kind == 'img':
            want = self.ds.image_bytes(c, i)
            if got != want:
                self.fail('%s: image bytes differ' % rel)
        else:
            want = self.ds.stroke_array(c, i)
            head = npy_bytes(want)
            hl = len(head) - want.nbytes
            if got[:hl] != head[:hl] or len(got) != len(head):
                return self.fail('%s: stroke header or size differs' % rel)
            if got != head:   # byte for byte: -0.0 and NaN bits too
                arr = np.frombuffer(got[hl:], '<f4').reshape(want.shape)
                d = np.abs(arr.astype(np.float64) - want)
                self.fail('%s: stroke bytes differ (%d values, by up to %g)'
                          % (rel, int((arr.view('<u4') != want.view('<u4')).sum()),
                             np.nanmax(d) if d.size else 0))
        with self.lock:
            self.count += 1

    def check_tree(self):
        ds, m = self.ds, self.mnt
        want_root = ['classes.txt', 'splits', 'epochs'] + (['images'] if ds.has_images else []) + \
            (['strokes'] if ds.has_strokes else [])
        if sorted(os.listdir(m)) != sorted(want_root):
            self.fail('root lists %s, expected %s' % (sorted(os.listdir(m)), sorted(want_root)))
        with open(os.path.join(m, 'classes.txt'), encoding='utf-8') as f:
            if f.read() != ''.join(n + '\n' for n in ds.names):
                self.fail('classes.txt differs')
        for kind in ('images', 'strokes'):
            if kind not in want_root:
                continue
            if sorted(os.listdir(os.path.join(m, kind))) != sorted(ds.names):
                self.fail('%s/ lists other classes' % kind)
            for c, name in enumerate(ds.names):
                got = os.listdir(os.path.join(m, kind, name))
                want = sorted(('%06d.npy' % (ds.base[c] + i) for i in range(ds.n[c])),
                              key=os.fsencode)
                if got != want:
                    self.fail('%s/%s: readdir gives %d names (not the sorted expected %d)'
                              % (kind, name, len(got), len(want)))
        for s in ('train.txt', 'val.txt', 'test.txt'):
            path = os.path.join(m, 'splits', s)
            with open(path, 'rb') as f:
                got = f.read()
            want = ds.split_text(s)
            if got != want or os.stat(path).st_size != len(want):
                self.fail('splits/%s differs (%d bytes, expected %d)' % (s, len(got), len(want)))


def _zip_patch_usize(path, usize):
    """Rewrites the declared uncompressed size of the (single) member in
    both the local header and the central directory."""
    import struct
    b = bytearray(open(path, 'rb').read())
    lh = b.find(b'PK\x03\x04')
    cd = b.find(b'PK\x01\x02')
    struct.pack_into('<I', b, lh + 22, usize)
    struct.pack_into('<I', b, cd + 24, usize)
    open(path, 'wb').write(bytes(b))


def make_bad(root):
    """One dataset per hostile input; class 'good' is fine in each."""
    import zipfile
    from make_quickdraw import make_quickdraw
    from qd_pickles import random_strokes
    cases = []
    rng = np.random.default_rng(7)

    def base(case, n_img=20, n_stk=20, **kw):
        d = os.path.join(root, case)
        make_quickdraw(d, ['good', 'broken'], n_img, n_stk, seed=3, **kw)
        return d

    d = base('trunc')  # cut in the middle of row 12
    with open(os.path.join(d, 'broken.npy'), 'r+b') as f:
        f.truncate(128 + 784 * 12 + 300)
    cases.append(('trunc', 12))
    d = base('lies')  # header claims 1000 rows, 20 present
    path = os.path.join(d, 'broken.npy')
    raw = open(path, 'rb').read()
    open(path, 'wb').write(raw.replace(b"(20, 784), }  ", b"(1000, 784), }", 1))
    cases.append(('lies', 20))
    d = base('badheader')
    open(os.path.join(d, 'broken.npy'), 'wb').write(b'\x93NUMPY\x01\x00\x10\x00{garbage: 1}   \n' + bytes(784))
    cases.append(('badheader', 'refuse'))
    d = base('float')
    np.save(os.path.join(d, 'broken.npy'), np.zeros((20, 784), np.float32))
    cases.append(('float', 'refuse'))
    d = base('corruptzip')
    open(os.path.join(d, 'broken.npz'), 'wb').write(b'PK\x03\x04' + bytes(rng.integers(0, 256, 5000, dtype=np.uint8)))
    cases.append(('corruptzip', 'refuse'))
    d = base('crc', compress_per_class=[True, False])
    path = os.path.join(d, 'broken.npz')
    b = bytearray(open(path, 'rb').read())
    b[len(b) // 2] ^= 0x55  # inside the stored train member's pickle
    open(path, 'wb').write(bytes(b))
    cases.append(('crc', 'refuse'))
    d = base('global')
    import datetime
    arr = np.empty(2, dtype=object)
    arr[0], arr[1] = datetime.date(2020, 1, 1), np.zeros((3, 3), np.int16)
    np.savez(os.path.join(d, 'broken.npz'), train=arr)
    cases.append(('global', 'refuse'))
    d = base('billion')  # the pickle claims 10**9 drawings; CRC is right
    from qd_pickles import npy_bytes
    b = npy_bytes(random_strokes(rng, 5), 'py3p2')
    i = b.find(b'K\x05\x85')  # the outer shape (5,)
    assert i > 0
    b = b[:i] + b'J' + (10 ** 9).to_bytes(4, 'little') + b'\x85' + b[i + 3:]
    with zipfile.ZipFile(os.path.join(d, 'broken.npz'), 'w') as zf:
        zf.writestr('train.npy', b)
    cases.append(('billion', 'refuse'))
    d = base('bomb')  # 64 MiB of zeros declared as 1000 bytes
    path = os.path.join(d, 'broken.npz')
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as zf:
        zf.writestr('train.npy', bytes(64 << 20))
    _zip_patch_usize(path, 1000)
    cases.append(('bomb', 'refuse'))
    d = base('bomb2')  # declared 4 GiB for a few KiB
    path = os.path.join(d, 'broken.npz')
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as zf:
        zf.writestr('train.npy', bytes(1 << 20))
    _zip_patch_usize(path, 0xfffffff0)
    cases.append(('bomb2', 'refuse'))
    d = base('uint16')  # not a stroke dtype
    from qd_pickles import object_array
    np.savez(os.path.join(d, 'broken.npz'), train=object_array([np.zeros((3, 3), np.uint16)] * 2))
    cases.append(('uint16', 'refuse'))
    d = base('nokeys')
    np.savez(os.path.join(d, 'broken.npz'), other=np.zeros(3))
    cases.append(('nokeys', 'refuse'))
    d = base('missing')
    os.remove(os.path.join(d, 'broken.npz'))
    cases.append(('missing', 'refuse'))
    for c, e in cases:
        print(c, e)


def parse_args(argv):
    p = argparse.ArgumentParser()
    p.add_argument('cmd')
    p.add_argument('source')
    p.add_argument('mount', nargs='?')
    p.add_argument('--classes')
    p.add_argument('--per-class', type=int, default=0)
    p.add_argument('--image', default='float32')
    p.add_argument('--stroke-len', type=int, default=130)
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--split', default='80/10/10')
    p.add_argument('--sample', type=int, default=0)
    p.add_argument('--threads', type=int, default=1)
    return p.parse_args(argv)


def main(argv):
    if argv and argv[0] == 'make-bad':
        make_bad(argv[1])
        return 0
    a = parse_args(argv)
    ds = Dataset(a.source, a.classes, a.per_class, a.image, a.stroke_len, a.seed,
                 tuple(int(x) for x in a.split.split('/')))
    if a.cmd == 'splits':
        sys.stdout.write(ds.split_text('train.txt').decode())
        return 0
    ck = Checker(ds, a.mount)
    files = list(ds.files())
    if a.sample:
        files = random.Random(1).sample(files, min(a.sample, len(files)))
    if a.threads > 1:
        random.Random(2).shuffle(files)
        parts = [files[t::a.threads] for t in range(a.threads)]
        ts = [threading.Thread(target=lambda p=p: [ck.check_file(*f) for f in p])
              for p in parts]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        for f in files:
            ck.check_file(*f)
        if not a.sample:
            ck.check_tree()
    if ck.done != len(files):
        ck.fail('%d of %d files looked at' % (ck.done, len(files)))
    for e in ck.errors[:10]:
        print('MISMATCH', e)
    print('%d files checked, %d mismatches' % (ck.count, len(ck.errors)))
    return 1 if ck.errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
