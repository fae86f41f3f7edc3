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
        self.lock = threading.Lock()

    def fail(self, msg):
        with self.lock:
            self.errors.append(msg)

    def check_file(self, rel, kind, c, i):
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
            arr = np.frombuffer(got[hl:], '<f4').reshape(want.shape)
            d = np.abs(arr.astype(np.float64) - want).max() if arr.size else 0
            if not d <= 1e-4:
                self.fail('%s: stroke values differ by %g' % (rel, d))
        with self.lock:
            self.count += 1

    def check_tree(self):
        ds, m = self.ds, self.mnt
        want_root = ['classes.txt', 'splits'] + (['images'] if ds.has_images else []) + \
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
        ck.check_tree()
    for e in ck.errors[:10]:
        print('MISMATCH', e)
    print('%d files checked, %d mismatches' % (ck.count, len(ck.errors)))
    return 1 if ck.errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
