#!/usr/bin/env bash
# make demo: generates a small Quick, Draw!-style dataset (5 classes) and a
# tiny ImageNet-style one with numpy/PIL, mounts each with samplefs, shows
# what a user and a loader see, and unmounts (DEMO_KEEP=1 leaves them mounted).
# Everything goes into a fresh directory of its own (mktemp; DEMO_DIR=DIR
# names one, which must be empty or absent: nothing there is deleted),
# removed at the end unless DEMO_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
BIN=$PWD/${SAMPLEFS_BUILD:-build}/samplefs
if [ -n "${DEMO_DIR:-}" ]; then
	if [ -e "$DEMO_DIR" ] && [ -n "$(ls -A "$DEMO_DIR")" ]; then
		echo "demo: DEMO_DIR=$DEMO_DIR is not empty: give an empty or new directory" >&2
		exit 1
	fi
	mkdir -p "$DEMO_DIR"
	D=$(cd "$DEMO_DIR" && pwd)
else
	D=$(mktemp -d "${TMPDIR:-/tmp}/samplefs-demo.XXXXXX")
fi
mounts=()
cleanup() {
	[ "${DEMO_KEEP:-0}" = 1 ] && return
	for m in "${mounts[@]}"; do fusermount3 -u "$m" 2>/dev/null || true; done
	rm -rf --one-file-system "$D"
}
trap cleanup EXIT

echo "== generating a 5-class Quick, Draw! dataset in $D/quickdraw"
$PY - "$D/quickdraw" <<'PY'
import sys
sys.path.insert(0, "tests/fixtures")
from make_quickdraw import make_quickdraw
make_quickdraw(sys.argv[1], ["cat", "The Eiffel Tower", "aircraft carrier", "t-shirt", "dog"], 200, 150, seed=1)
PY
mkdir -p "$D/qd"
XDG_CACHE_HOME=$D/cache "$BIN" "$D/quickdraw" "$D/qd"
mounts+=("$D/qd")
echo "== mounted: samplefs $D/quickdraw $D/qd"
set -x
ls "$D/qd"
cat "$D/qd/classes.txt"
ls "$D/qd/images/The Eiffel Tower" | sed -n 1,3p
ls -l "$D/qd/strokes/cat" | sed -n 1,4p
head -3 "$D/qd/splits/train.txt"
df -i "$D/qd"
{ set +x; } 2>/dev/null
$PY -c "
import numpy as np, glob, sys
root = sys.argv[1]
paths = sorted(glob.glob(root + '/images/cat/*.npy'))
x = np.load(paths[0]); s = np.load(paths[0].replace('images', 'strokes'))
print(len(paths), 'cat images; first:', x.shape, x.dtype, 'min %.3f max %.3f' % (x.min(), x.max()))
print('its strokes:', s.shape, s.dtype, 'x range %.1f..%.1f' % (s[:, 0].min(), s[:, 0].max()))
" "$D/qd"

echo "== generating a tiny ILSVRC2012 (4 classes) in $D/imagenet"
$PY - "$D/imagenet" <<'PY'
import sys
sys.path.insert(0, "tests/fixtures")
from make_imagenet import make_imagenet
wnids = [l.split()[0] for l in open("../shared/data/imagenet-wnids.txt")][:4] if __import__("os").path.exists("../shared/data/imagenet-wnids.txt") else ["n01440764", "n01443537", "n01484850", "n01491361"]
make_imagenet(sys.argv[1], wnids, 6, 8)
PY
mkdir -p "$D/in"
XDG_CACHE_HOME=$D/cache "$BIN" -o shard_size=10 "$D/imagenet" "$D/in"
mounts+=("$D/in")
set -x
ls "$D/in" "$D/in/train" "$D/in/shards"
cat "$D/in/classes.txt"
tar -tvf "$D/in/shards/train-000000.tar" | sed -n 1,4p
{ set +x; } 2>/dev/null
if [ "${DEMO_KEEP:-0}" = 1 ]; then
	echo "== left mounted at $D/qd and $D/in; unmount with: fusermount3 -u $D/qd; fusermount3 -u $D/in"
else
	echo "== unmounting and removing $D (DEMO_KEEP=1 make demo leaves them)"
fi
