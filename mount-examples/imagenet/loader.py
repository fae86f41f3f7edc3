#!/usr/bin/env python3
"""Training input pipelines pointed at a samplefs ImageNet mount, unchanged but for the root.

    python3 loader.py /mnt/imagenet            # ImageFolder + DataLoader over train/ and val/
    python3 loader.py /mnt/imagenet --shards   # WebDataset-style reading of shards/train-*.tar
"""
import glob
import sys
import tarfile


def imagefolder(root, batches=3):
    import torch
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
    for split in ("train", "val"):
        ds = datasets.ImageFolder(f"{root}/{split}", transform=tf)
        dl = torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
        print(f"{split}: {len(ds)} images, {len(ds.classes)} classes")
        for i, (x, y) in enumerate(dl):
            print(f"  batch {i}: {tuple(x.shape)} labels {y[:8].tolist()}")
            if i + 1 == batches:
                break


def shards(root, samples=10):
    """Sequential reads of the virtual tars, as WebDataset does: one sample = members sharing a key."""
    seen = 0
    for path in sorted(glob.glob(f"{root}/shards/train-*.tar")):
        with tarfile.open(path) as tf:
            sample = {}
            for m in tf:
                key, ext = m.name.split(".", 1)
                sample[ext] = tf.extractfile(m).read()
                if "jpg" in sample and "cls" in sample:
                    print(f"{path.rsplit('/', 1)[1]} {key}: {len(sample['jpg'])} bytes, label {int(sample['cls'])}")
                    sample, seen = {}, seen + 1
                    if seen == samples:
                        return


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "/mnt/imagenet"
    shards(root) if "--shards" in sys.argv else imagefolder(root)
