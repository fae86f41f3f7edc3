#!/usr/bin/python3
"""Training input pipelines pointed at a samplefs ImageNet mount, unchanged but
for the root.  Nothing here knows about samplefs: it reads files and tars.

    samplefs /data/imagenet /mnt/imagenet
    python3 loader.py /mnt/imagenet              # ImageFolder + DataLoader over train/ and val/
    python3 loader.py /mnt/imagenet --shards     # WebDataset-style reading of shards/train-*.tar
    python3 loader.py /mnt/imagenet --shuffled   # one epoch in the order of shuffled/train.txt
"""
import glob
import os
import sys
import tarfile


def imagefolder_loaders(root, batch_size=64, num_workers=4, size=224):
    """{split: DataLoader} of torchvision's ImageFolder over train/ and val/."""
    import torch
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size),
                             transforms.ToTensor()])
    return {split: torch.utils.data.DataLoader(
                datasets.ImageFolder(os.path.join(root, split), transform=tf),
                batch_size=batch_size, shuffle=(split == "train"), num_workers=num_workers)
            for split in ("train", "val")}


def shard_samples(root, split="train"):
    """Streams the virtual shard tars in order, as WebDataset does: members
    sharing a key (<key>.cls, <key>.jpg) make one sample {"__key__", ext: bytes}."""
    for path in sorted(glob.glob(os.path.join(root, "shards", split + "-*.tar"))):
        sample = {}
        with tarfile.open(path, mode="r|") as tf:   # a stream: sequential reads only
            for m in tf:
                key, ext = m.name.split(".", 1)
                if sample and sample["__key__"] != key:
                    yield sample
                    sample = {}
                sample["__key__"] = key
                sample[ext] = tf.extractfile(m).read()
        if sample:
            yield sample


def shuffled_epoch(root, split="train"):
    """One epoch in the mount's global shuffle: yields (path, label, bytes)
    for each line <shard>/<label>.<name> of shuffled/<split>.txt."""
    with open(os.path.join(root, "shuffled", split + ".txt")) as f:
        for line in f:
            rel = line.rstrip("\n")
            path = os.path.join(root, "shards", split, rel)
            with open(path, "rb") as img:
                yield path, int(os.path.basename(rel).split(".", 1)[0]), img.read()


def main(root, mode):
    if mode == "--shards":
        n = sum(1 for s in shard_samples(root) if int(s["cls"]) >= 0 and s["jpg"])
        print(f"shards: train {n} samples")
    elif mode == "--shuffled":
        n = sum(len(data) for _, _, data in shuffled_epoch(root))
        print(f"shuffled: train epoch of {n} bytes")
    else:
        for split, dl in imagefolder_loaders(root).items():
            seen = sum(len(y) for _, y in dl)
            # flushed before the next split's DataLoader forks workers, who would print it again
            print(f"{split}: {seen} images, {len(dl.dataset.classes)} classes", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
