#!/usr/bin/python3
"""torchvision's ImageFolder over a mounted ImageNet layout.

    imagefolder_check.py MOUNT TRUTH.json

For /train and (when labelled) /val: the classes and class_to_idx must be the
truth's sorted WNIDs, every sample's target must be its truth label, and a
DataLoader with num_workers=2 must decode every image (RGB, CMYK and the PNG
named .JPEG alike).  Exits 1 on any difference.
"""
import json
import os
import sys

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def check(root, want_classes, want_label, errors):
    ds = datasets.ImageFolder(root, transform=transforms.Compose(
        [transforms.Resize((8, 8)), transforms.ToTensor()]))
    if ds.classes != want_classes:
        errors.append("%s: classes %s, want %s" % (root, ds.classes, want_classes))
    for path, target in ds.samples:
        name = os.path.basename(path)
        if want_label.get(name) != target:
            errors.append("%s: %s has target %d, want %s" % (root, name, target, want_label.get(name)))
    if len(ds.samples) != len(want_label):
        errors.append("%s: %d samples, want %d" % (root, len(ds.samples), len(want_label)))
    seen = 0
    for x, y in DataLoader(ds, batch_size=8, num_workers=2):
        if x.shape[1:] != (3, 8, 8) or not torch.isfinite(x).all():
            errors.append("%s: bad batch %s" % (root, tuple(x.shape)))
        seen += len(y)
    if seen != len(ds):
        errors.append("%s: decoded %d of %d" % (root, seen, len(ds)))
    return seen


def main(mnt, truth_path):
    with open(truth_path) as f:
        t = json.load(f)
    errors = []
    wnids = t["wnids"]
    train_label = {name: wnids.index(w) for w, ms in t["train"].items() for name, _, _ in ms}
    n = check(os.path.join(mnt, "train"), wnids, train_label, errors)
    if t["devkit"] and t["val"]:
        val_label = {name: l for (name, _, _, _), l in zip(t["val"], t["val_label"])}
        n += check(os.path.join(mnt, "val"), wnids, val_label, errors)
    for e in errors[:20]:
        print("FAIL:", e)
    print("imagefolder: %d images decoded, %d failures" % (n, len(errors)))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
