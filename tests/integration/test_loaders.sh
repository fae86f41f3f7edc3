#!/usr/bin/env bash
# The loaders users copy from mount-examples/ run on mounts of generated data
# and yield what an independent oracle says (tests/integration/loaders_check.py,
# one Python process so torch is imported once): the Quick, Draw! generator and
# torch Dataset, ImageFolder + DataLoader(num_workers=4), the WebDataset-style
# stream of shards/*.tar and the shuffled/train.txt epoch.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
S=6	# shard_size: several shards, the last one short

export SFS_ROOT	# the fixture code below finds tests/fixtures by it
$PY - "$T" <<'PY' || { echo "fixture generation failed"; exit 1; }
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["SFS_ROOT"], "tests", "fixtures"))
from make_imagenet import make_imagenet, pick_wnids
from make_quickdraw import make_quickdraw
t = sys.argv[1]
make_quickdraw(t + "/qd", ["cat", "The Eiffel Tower", "ice cream"], [30, 25, 20], [28, 26, 20],
               seed=7)
truth = make_imagenet(t + "/inet", pick_wnids(4, seed=3), per_class=6, n_val=12, seed=4)
json.dump(truth, open(t + "/inet.json", "w"))
PY

check "mount Quick, Draw!" sfs_mount "$T/qd" "$T/qd.m"
check "mount ImageNet" sfs_mount "$T/inet" "$T/inet.m" -o layout=imagenet,shard_size=$S
check "every loader yields the oracle's samples" \
	$PY "$SFS_ROOT/tests/integration/loaders_check.py" "$T/qd" "$T/qd.m" \
	"$T/inet" "$T/inet.m" "$T/inet.json" $S
check "unmount Quick, Draw!, no sanitizer report" sfs_umount "$T/qd.m"
check "unmount ImageNet, no sanitizer report" sfs_umount "$T/inet.m"
sfs_done
