#!/usr/bin/python3
"""One array task's share of a training run on a samplefs Quick, Draw! mount:
a tiny torch model trained for a few steps on every TASKS-th sample of
splits/train.txt, read through ../quickdraw/loader.py's Dataset.

    train.py MOUNT --task I --tasks N [--steps S] [--batch B] [--labels FILE]

--labels writes "image path<TAB>label" for every sample trained on, in order.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'quickdraw'))
from loader import torch_dataset  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('root')
    ap.add_argument('--task', type=int, default=0)
    ap.add_argument('--tasks', type=int, default=1)
    ap.add_argument('--steps', type=int, default=5)
    ap.add_argument('--batch', type=int, default=4)
    ap.add_argument('--labels')
    a = ap.parse_args()
    with open(os.path.join(a.root, 'classes.txt')) as f:
        n_classes = len(f.read().splitlines())
    ds = torch_dataset(a.root, 'train')
    mine = list(range(a.task, len(ds), a.tasks))
    dl = torch.utils.data.DataLoader(torch.utils.data.Subset(ds, mine), batch_size=a.batch)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, n_classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen = []
    for step, (images, _strokes, labels) in zip(range(a.steps), dl):
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print('task %d step %d: loss %.3f' % (a.task, step, loss.item()))
        for k, label in enumerate(labels.tolist()):
            img = ds.items[mine[step * a.batch + k]][0]
            seen.append('%s\t%d\n' % (os.path.relpath(img, a.root), label))
    if a.labels:
        with open(a.labels, 'w') as f:
            f.writelines(seen)


if __name__ == '__main__':
    main()
