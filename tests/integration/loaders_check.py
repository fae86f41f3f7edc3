#!/usr/bin/python3
"""Runs every loader of mount-examples/ on samplefs mounts and compares what
each yields with an independent oracle, in one process (torch imports once).

    loaders_check.py QD_SOURCE QD_MOUNT IN_SOURCE IN_MOUNT IN_TRUTH.json SHARD_SIZE

Quick, Draw! (qd_oracle.Dataset: numpy from the class files): the generator's
and the torch Dataset's labels in splits/train.txt order, images exactly,
strokes within 1e-4.  ImageNet (imagenet_oracle.model: tarfile + numpy from
the release, and the fixture's truth): ImageFolder targets and a DataLoader
epoch with num_workers=4 (val tensors against PIL decoding the source bytes),
the WebDataset-style stream of shards/train-*.tar sample by sample, and the
shuffled/train.txt epoch in order.  Each script's main() runs as well
(ImageNet's --shards and --shuffled).
Prints the first failures; exit status 1 if any.
"""
import collections
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, '..', '..', 'mount-examples')
sys.path.insert(0, HERE)
import imagenet_oracle  # noqa: E402
import qd_oracle  # noqa: E402

errors = []
# num_workers=4 on 2 cores is what the example asks for; torch's advice is noise here
warnings.filterwarnings('ignore', message='This DataLoader will create')


def expect(ok, msg):
    if not ok:
        errors.append(msg)
    return ok


def load(name):
    spec = importlib.util.spec_from_file_location(
        name.replace('/', '_'), os.path.join(EXAMPLES, name, 'loader.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_main(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    print(out.getvalue(), end='')
    return out.getvalue()


def quickdraw(src, mnt):
    ds = qd_oracle.Dataset(src)
    want = [int(g) for g in ds.splits['train.txt']]

    def row(g):
        c = ds.label_of(g)
        return c, np.asarray(ds.images[c][g - ds.base[c]]).reshape(28, 28, 1), \
            ds.stroke_array(c, g - ds.base[c])

    def compare(what, k, image, strokes, label):
        c, img, stk = row(want[k])
        return (expect(label == c, '%s #%d: label %d, want %d' % (what, k, label, c)) and
                expect(np.array_equal(image, img.astype(np.float32) / 255.0),
                       '%s #%d: image differs' % (what, k)) and
                expect(np.abs(np.asarray(strokes, np.float64) - stk).max() <= 1e-4,
                       '%s #%d: strokes differ' % (what, k)))

    qd = load('quickdraw')
    k = 0
    for images, strokes, labels in qd.data_generator(mnt, 'train', 16):
        for i in range(len(labels)):
            if not compare('generator', k, images[i], strokes[i], int(labels[i])):
                return
            k += 1
    expect(k == len(want), 'generator: %d samples, want %d' % (k, len(want)))

    import torch
    k = 0
    dl = torch.utils.data.DataLoader(qd.torch_dataset(mnt, 'train'), batch_size=16, num_workers=2)
    for images, strokes, labels in dl:
        for i in range(len(labels)):
            if not compare('torch Dataset', k, images[i].permute(1, 2, 0).numpy(),
                           strokes[i].numpy(), int(labels[i])):
                return
            k += 1
    expect(k == len(want), 'torch Dataset: %d samples, want %d' % (k, len(want)))
    out = run_main(qd.main, mnt, 16)
    expect('train: %d samples (generator)' % len(want) in out and
           'torch DataLoader: train %d samples' % len(want) in out, 'quickdraw main(): %r' % out)


def imagenet(src, mnt, truth_path, shard_size):
    import torch
    from PIL import Image
    from torchvision import transforms
    with open(truth_path) as f:
        truth = json.load(f)
    tree, wnids, _ = imagenet_oracle.model(src, shard_size, None, 0)
    inet = load('imagenet')

    # ImageFolder: targets by name, an epoch of each split with 4 workers
    label = {s: {p.rsplit('/', 1)[1]: wnids.index(p.split('/')[1]) for p, v in tree.items()
                 if p.startswith(s + '/') and isinstance(v, bytes)} for s in ('train', 'val')}
    loaders = inet.imagefolder_loaders(mnt, batch_size=8, num_workers=4, size=8)
    for split, dl in loaders.items():
        ds = dl.dataset
        expect(dl.num_workers == 4, '%s: num_workers %d' % (split, dl.num_workers))
        got = {os.path.basename(p): t for p, t in ds.samples}
        expect(got == label[split], '%s: ImageFolder targets differ from the oracle' % split)
        seen, tensors = collections.Counter(), []
        for x, y in dl:
            seen.update(y.tolist())
            tensors.extend(zip(x, y.tolist()))
        expect(seen == collections.Counter(label[split].values()),
               '%s: DataLoader epoch labels %s' % (split, sorted(seen.items())))
    tf = loaders['val'].dataset.transform
    for (x, y), (path, t) in zip(tensors, loaders['val'].dataset.samples):  # val: not shuffled
        rel = 'val/%s/%s' % (wnids[t], os.path.basename(path))
        want = tf(Image.open(io.BytesIO(tree[rel])).convert('RGB'))
        if not expect(y == t and torch.equal(x, want), '%s: tensor or label differs' % rel):
            break
    expect(len(truth['val']) == len(label['val']), 'truth and oracle disagree on val')

    # WebDataset-style stream: every sample, in shard order, bytes and label
    want = [m for k in range(10 ** 6) if 'shards/train-%06d.tar' % k in tree
            for m in tree['shards/train-%06d.tar' % k][1]]
    got = [(s['__key__'], int(s['cls']), s['jpg']) for s in inet.shard_samples(mnt, 'train')]
    expect(len(got) == len(want) == sum(len(v) for v in truth['train'].values()),
           'shards: %d samples, want %d' % (len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        if not expect(g == w, 'shards sample %d: %s/%d, want %s/%d' % (i, g[0], g[1], w[0], w[1])):
            break

    # the shuffled epoch: the oracle's order, labels and bytes
    lines = tree['shuffled/train.txt'].decode().splitlines()
    got = list(inet.shuffled_epoch(mnt, 'train'))
    expect(len(got) == len(lines), 'shuffled: %d samples, want %d' % (len(got), len(lines)))
    for (path, lab, data), rel in zip(got, lines):
        w = tree['shards/train/' + rel]
        if not expect(path.endswith(rel) and lab == int(rel.split('/')[1].split('.')[0]) and
                      hashlib.sha256(data).digest() == hashlib.sha256(w).digest(),
                      'shuffled: %s differs from the oracle' % rel):
            break

    n = len(label['train'])
    # main() without a mode is imagefolder_loaders at 224 px: checked above
    for mode, line in (('--shards', 'shards: train %d samples' % n), ('--shuffled', 'shuffled: train')):
        out = run_main(inet.main, mnt, mode)
        expect(line in out, 'imagenet main(%r): %r' % (mode, out))


def main(qd_src, qd_mnt, in_src, in_mnt, in_truth, shard_size):
    quickdraw(qd_src, qd_mnt)
    imagenet(in_src, in_mnt, in_truth, int(shard_size))
    for e in errors[:20]:
        print('FAIL:', e)
    print('loaders: %d failures' % len(errors))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
