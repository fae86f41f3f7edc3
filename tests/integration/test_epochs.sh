#!/usr/bin/env bash
# /epochs/<e> of ImageNet and Quick, Draw! mounts (issue 28): each epoch's
# shards byte for byte against a physical sharder (epochs_oracle.py: numpy's
# permutation np.random.seed([seed, e]) of ImageFolder order or of the
# splits/ lines, Python's tarfile writing the shards with the oracles'
# sample bytes), every sample once per epoch, epochs 0, 1 and 2^31 - 1
# differing, names that are no epoch or shard ENOENT, many epochs read at
# once; then mount-examples/imagenet/epochs.py's DataLoader, its workers
# splitting epoch e's shards (epochs_loader_check.py).
. "$(dirname "$0")/lib.sh"
sfs_setup
D=$SFS_TMP/data
M=$SFS_TMP/mnt
ORACLE="$PY $SFS_ROOT/tests/integration/epochs_oracle.py"

export SFS_ROOT	# the fixture generator below finds tests/fixtures by it
$PY - "$D" <<'PY' || { echo "fixture generation failed"; exit 1; }
import os, sys
sys.path.insert(0, os.path.join(os.environ["SFS_ROOT"], "tests/fixtures"))
from make_imagenet import make_imagenet, pick_wnids
d = sys.argv[1]
wnids = pick_wnids(6, seed=5) + ["n01440764"]
make_imagenet(os.path.join(d, "full"), wnids, per_class=7, n_val=21, seed=4)
make_imagenet(os.path.join(d, "nodevkit"), wnids, per_class=5, n_val=9, seed=2,
              devkit=False, class_tars_dir=True)
from make_quickdraw import make_quickdraw
make_quickdraw(os.path.join(d, "qd"), ["cat", "The Eiffel Tower", "ice cream"], [30, 25, 20],
               [28, 26, 20], seed=7)
make_quickdraw(os.path.join(d, "qdimg"), ["apple", "bee"], [12, 9], [12, 9], seed=3,
               layout="official")
PY
rm -r "$D/qdimg/sketchrnn"	# images only

if check "mount" sfs_mount "$D/full" "$M" -o layout=imagenet,shard_size=5,shard_seed=3; then
	check "shard_seed=3: epochs 0, 1, 2^31-1 vs tarfile's shards" \
		$ORACLE "$D/full" "$M" --shard-size 5 --seed 3 --epochs 0 1 2147483647
	check "mount-examples/imagenet/epochs.py: 3 workers split epoch 2's shards" \
		$PY "$SFS_ROOT/tests/integration/epochs_loader_check.py" "$D/full" "$M" 5 3 2 3
	check "ls of the root lists epochs" bash -c "ls '$M' | grep -qx epochs"
fi
check "unmount, no sanitizer report" sfs_umount "$M"

if check "mount" sfs_mount "$D/full" "$M" -o layout=imagenet,shard_size=4; then
	check "no shard_seed: seed 0, epochs 0, 1, 2^31-1" \
		$ORACLE "$D/full" "$M" --shard-size 4 --seed 0 --epochs 0 1 2147483647
	check "the oracle tells seeds apart (seed 3 is not this mount's)" \
		bash -c "! $ORACLE '$D/full' '$M' --shard-size 4 --seed 3 --epochs 1 >/dev/null"
fi
check "unmount, no sanitizer report" sfs_umount "$M"

if check "mount" sfs_mount "$D/nodevkit" "$M" -o layout=imagenet,shard_size=6,shard_seed=11; then
	check "train/<wnid>.tar, no devkit (train only): epochs 5, 6, 2^31-1" \
		$ORACLE "$D/nodevkit" "$M" --shard-size 6 --seed 11 --epochs 5 6 2147483647
fi
check "unmount, no sanitizer report" sfs_umount "$M"

# Quick, Draw!: <gidx>.cls, <gidx>.npy, <gidx>.strokes.npy, the lines of
# splits/<split>.txt in each epoch's order
if check "mount" sfs_mount "$D/qd" "$M" -o shard_size=7,shard_seed=5; then
	check "Quick, Draw!: epochs 0, 1, 2^31-1 vs tarfile's shards" \
		$ORACLE "$D/qd" "$M" --quickdraw --shard-size 7 --seed 5 --epochs 0 1 2147483647
	check "mount-examples/imagenet/epochs.py on Quick, Draw!: 2 workers, epoch 4" \
		$PY "$SFS_ROOT/tests/integration/epochs_loader_check.py" "$D/qd" "$M" 7 5 4 2 --quickdraw
fi
check "unmount, no sanitizer report" sfs_umount "$M"
if check "mount" sfs_mount "$D/qd" "$M"; then
	check "Quick, Draw!, no options: one shard a split, seed 0" \
		$ORACLE "$D/qd" "$M" --quickdraw --shard-size 10000 --seed 0 --epochs 0 1 2147483647
fi
check "unmount, no sanitizer report" sfs_umount "$M"
if check "mount" sfs_mount "$D/qdimg" "$M" -o shard_size=4; then
	check "Quick, Draw! images only: <gidx>.cls, <gidx>.npy" \
		$ORACLE "$D/qdimg" "$M" --quickdraw --shard-size 4 --seed 0 --epochs 2 9
fi
check "unmount, no sanitizer report" sfs_umount "$M"
sfs_done
