#!/usr/bin/python3
"""A fresh global shuffle every epoch, read as WebDataset shards: epoch e's
shards are MOUNT/epochs/<e>/shards/train-*.tar (docs/layouts.md), and the
DataLoader's workers split them, worker w reading shards w, w + W, ...
Nothing is written to disk and nothing is remounted between epochs.

    samplefs /data/imagenet /mnt/imagenet -o layout=imagenet,shard_seed=1
    python3 epochs.py /mnt/imagenet [--epochs 3] [--workers 4] [--split train]

Each sample is {"__key__", "cls": label, "jpg": bytes, "__shard__", "__worker__"};
decode and augment the jpg where it says so below.  A Quick, Draw! mount's
epochs read the same way, its samples {"cls", "npy", "strokes.npy"} (np.load
of io.BytesIO of each).
"""
import argparse
import glob
import os
import tarfile

from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class EpochShards(IterableDataset):
    """The samples of epoch `epoch`'s shards of `split`, in shard order;
    under a DataLoader each worker streams its share of the shards."""

    def __init__(self, root, epoch, split="train"):
        self.shards = sorted(glob.glob(os.path.join(root, "epochs", str(epoch), "shards",
                                                    split + "-*.tar")))

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        for path in self.shards[wid::nw]:
            sample = {}
            with tarfile.open(path, mode="r|") as tf:   # a stream: sequential reads
                for m in tf:
                    key, ext = m.name.split(".", 1)
                    if sample and sample["__key__"] != key:
                        yield sample
                        sample = {}
                    sample.update(__key__=key, __shard__=os.path.basename(path), __worker__=wid)
                    data = tf.extractfile(m).read()
                    sample[ext] = int(data) if ext == "cls" else data   # decode the jpg here
            if sample:
                yield sample


def loader(root, epoch, workers=4, split="train", batch_size=None):
    """A DataLoader over epoch `epoch`; batch_size=None yields samples one by one."""
    return DataLoader(EpochShards(root, epoch, split), batch_size=batch_size,
                      num_workers=workers, collate_fn=None if batch_size else lambda s: s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--split", default="train")
    a = ap.parse_args()
    for e in range(a.first, a.first + a.epochs):
        n = nbytes = 0
        for s in loader(a.root, e, a.workers, a.split):
            n += 1
            nbytes += sum(len(v) for k, v in s.items() if isinstance(v, bytes))
        print(f"epoch {e}: {n} samples, {nbytes} bytes", flush=True)


if __name__ == "__main__":
    main()
