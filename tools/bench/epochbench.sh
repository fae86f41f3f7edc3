#!/usr/bin/env bash
# epochbench.sh - what /epochs/<e> costs (issue 28; not part of `make bench`):
# on an ImageNet-sized release (gen_imagenet.py, EPOCH_CLASSES x
# EPOCH_PER_CLASS members of gen_imagenet's ~3 KB, default 1000 x 1281 =
# 1.28 M train samples, ~4 GB, in $BENCH_DIR/epochs), per run, a fresh
# mount (-o shard_seed=1, the saved index; sources warm) and in it:
#   shards   the first stat of /shards/train-000000.tar: the mount's
#            shard orders made (the anchor)
#   epoch    the first stat of /epochs/<run>/shards/train-000000.tar: that
#            epoch's orders and offsets made
#   again    a second stat in the same epoch (its views kept)
#   cat_s / cat_e  `cat` of shard k of /shards and of /epochs/<run> (warm
#            page cache, in turn, the order alternating), MB/s
# Prints each run and the medians (min-max), with the per-run ratios.
# EPOCH_RUNS (default 7), EPOCH_BUILD (build).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${EPOCH_BUILD:-build}
SAMPLEFS=$ROOT/$BUILD/samplefs
BENCH_DIR=${BENCH_DIR:-/var/tmp/samplefs-bench}
D=$BENCH_DIR/epochs
M=$D/mnt
RUNS=${EPOCH_RUNS:-7}
PY=/usr/bin/python3

[ -x "$SAMPLEFS" ] || { echo "epochbench: no $SAMPLEFS (make all)" >&2; exit 1; }
cleanup() { grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$D" "$M"
if [ ! -s "$D/src/manifest.json" ]; then
	$PY "$ROOT/tools/bench/gen_imagenet.py" "$D/src" "${EPOCH_CLASSES:-1000}" \
		"${EPOCH_PER_CLASS:-1281}" 1000 0 1 || exit 1
fi
export XDG_CACHE_HOME=$D/cache
for r in $(seq 1 "$RUNS"); do
	"$SAMPLEFS" "$D/src" "$M" -o layout=imagenet,shard_seed=1 2>/dev/null || exit 1
	$PY - "$M" "$r" <<'PY' || exit 1
import os, sys, time
m, r = sys.argv[1], int(sys.argv[2])

def clock(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t

def cat(p):
    n = 0
    with open(p, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return n
            n += len(b)

k = r % 100
sh = clock(lambda: os.stat(m + "/shards/train-000000.tar"))
ep = clock(lambda: os.stat(m + "/epochs/%d/shards/train-000000.tar" % r))
ag = clock(lambda: os.stat(m + "/epochs/%d/shards/train-000001.tar" % r))
ps, pe = m + "/shards/train-%06d.tar" % k, m + "/epochs/%d/shards/train-%06d.tar" % (r, k)
cat(ps), cat(pe)    # warm: the page cache holds both shards' members
rate = {}
for p in ([ps, pe] if r % 2 else [pe, ps]):
    t = time.perf_counter(); n = cat(p); rate[p] = n / (time.perf_counter() - t) / 1e6
print("%d\t%.4f\t%.4f\t%.6f\t%.0f\t%.0f" % (r, sh, ep, ag, rate[ps], rate[pe]))
PY
	fusermount3 -u "$M"
done | tee "$D/results.tsv"
$PY - "$D/results.tsv" <<'PY'
import statistics, sys
rows = [list(map(float, l.split("\t"))) for l in open(sys.argv[1]) if l.strip()]
def med(i, f=None):
    v = [f(r) if f else r[i] for r in rows]
    return "%.4g (%.4g-%.4g)" % (statistics.median(v), min(v), max(v))
print("runs: %d" % len(rows))
print("shards first stat, s:   ", med(1))
print("epoch first stat, s:    ", med(2))
print("epoch second stat, s:   ", med(3))
print("epoch / shards first:   ", med(0, lambda r: r[2] / r[1]))
print("cat /shards MB/s:       ", med(4))
print("cat /epochs MB/s:       ", med(5))
print("cat epochs / shards:    ", med(0, lambda r: r[5] / r[4]))
PY
