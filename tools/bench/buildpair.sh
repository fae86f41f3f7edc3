#!/usr/bin/env bash
# buildpair.sh - two builds of samplefs side by side on `make bench`'s data
# (parts A and B must have run once: $BENCH_DIR/qd-3000, imagenet, lists),
# for "nothing slower than before" checks such as issue 27's (the redesign
# against the commit before it).  Not part of `make bench`.
#
#   tools/bench/buildpair.sh BUILD_A BUILD_B [RUNS]
#
# BUILD_*: directories holding a samplefs binary (e.g. a worktree of the
# older commit's build/ and this one's).  Each run measures, for each
# build (the order A B in odd runs, B A in even ones, so neither is always
# second):
#   qd.mount_cold      Quick, Draw!'s first mount (fresh index), caches dropped
#   qd.read_cold       its 100,000 image files in gidx order, 1 thread, cold
#   qd.read_warm4      the same list again, 4 threads (a warm epoch)
#   in.mount_cold      the ImageNet-shaped release's first mount, cold
#   in.remount         its remount with the index saved, warm
#   in.read_cold4      20,000 random train JPEGs, 4 threads, cold
#   in.read_warm4      the same list again, 4 threads (a warm epoch)
#   qd.hwm_kb, in.hwm_kb  the daemon's VmHWM (peak RSS, mapped index pages
#                      included) after those reads
# and prints, per measurement, each build's median (min-max) and the
# median (min-max) of the per-run ratios B/A (seconds: < 1 means B is
# faster; files/s: > 1 means B is faster).  Needs root (drop_caches).
# Kills only the daemons it started and unmounts on any exit.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) RUNS=${3:-5}
DATA=${BENCH_DIR:-/var/tmp/samplefs-bench}
WORK=${PAIR_DIR:-/var/tmp/samplefs-pair}
MNT=$WORK/mnt READER=$WORK/readfiles OUT=$WORK/pair.tsv LOG=$WORK/daemon.log
QD=$DATA/qd-3000 IN=$DATA/imagenet
mkdir -p "$MNT"
cc -O2 -D_GNU_SOURCE -o "$READER" "$ROOT/tools/bench/readfiles.c" -lpthread || exit 1
for f in "$QD/.done" "$IN/.done" "$DATA/lists/qd_images.txt" "$DATA/lists/in_random.txt"; do
	[ -e "$f" ] || { echo "buildpair.sh: $f missing: run make bench's parts A and B first" >&2; exit 1; }
done
pid=
cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	return 0
}
trap cleanup EXIT
: >"$OUT"

usec() { local t=$EPOCHREALTIME; echo "${t/./}"; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# mount BUILD LAYOUT SOURCE INDEX: prints the seconds to mounted
mount_fs() {
	local t0=$(usec)
	"$1/samplefs" -f -o "quiet,layout=$2,index_dir=$4" "$3" "$MNT" >>"$LOG" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$WORK/daemon.pid"	# this runs in $(...): the caller reads it there
	until mountpoint -q "$MNT"; do
		kill -0 "$pid" 2>/dev/null || { echo "buildpair.sh: $1/samplefs did not mount (see $LOG)" >&2; exit 1; }
		sleep 0.005
	done
	awk -v a="$t0" -v b="$(usec)" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'
}
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$(cat "$WORK/daemon.pid")/status"; }
umount_fs() {
	pid=$(cat "$WORK/daemon.pid")
	fusermount3 -u "$MNT"
	wait "$pid" 2>/dev/null
	pid=
}
# files_per_s LIST THREADS
files_per_s() {
	local out
	out=$("$READER" -t "$2" -p "$MNT" "$1") || { echo "buildpair.sh: reader failed: $out" >&2; exit 1; }
	sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p' <<<"$out"
}
rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$OUT"; echo "run $1 $2 $3 = $4" >&2; }

one() {	# RUN NAME BUILD
	local r=$1 n=$2 b=$3 idx=$WORK/idx-$2
	rm -rf "$idx-qd" "$idx-in"
	drop
	rec "$r" "$n" qd.mount_cold "$(mount_fs "$b" quickdraw "$QD" "$idx-qd")"
	drop
	rec "$r" "$n" qd.read_cold "$(files_per_s "$DATA/lists/qd_images.txt" 1)"
	rec "$r" "$n" qd.read_warm4 "$(files_per_s "$DATA/lists/qd_images.txt" 4)"
	rec "$r" "$n" qd.hwm_kb "$(hwm_kb)"
	umount_fs
	drop
	rec "$r" "$n" in.mount_cold "$(mount_fs "$b" imagenet "$IN" "$idx-in")"
	umount_fs
	cat "$IN"/ILSVRC2012_* "$idx-in"/* >/dev/null 2>&1
	rec "$r" "$n" in.remount "$(mount_fs "$b" imagenet "$IN" "$idx-in")"
	drop
	rec "$r" "$n" in.read_cold4 "$(files_per_s "$DATA/lists/in_random.txt" 4)"
	rec "$r" "$n" in.read_warm4 "$(files_per_s "$DATA/lists/in_random.txt" 4)"
	rec "$r" "$n" in.hwm_kb "$(hwm_kb)"
	umount_fs
}

for r in $(seq 1 "$RUNS"); do
	if [ $((r % 2)) = 1 ]; then one "$r" A "$A"; one "$r" B "$B"
	else one "$r" B "$B"; one "$r" A "$A"; fi
done
/usr/bin/python3 - "$OUT" "$A" "$B" <<'PY'
import sys, statistics as st
from collections import defaultdict
v = defaultdict(dict)
for line in open(sys.argv[1]):
    r, n, k, x = line.rstrip("\n").split("\t")
    if not x.strip():
        continue  # a failed measurement (said on stderr)
    v[k].setdefault(n, {})[int(r)] = float(x)
print("A = %s\nB = %s\n" % (sys.argv[2], sys.argv[3]))
print("| measurement | A median (min-max) | B median (min-max) | B/A per run, median (min-max) |")
print("|---|---|---|---|")
for k, d in v.items():
    a, b = d["A"], d["B"]
    runs = sorted(set(a) & set(b))
    q = [b[i] / a[i] for i in runs]
    f = lambda xs: "%.3g (%.3g-%.3g)" % (st.median(xs), min(xs), max(xs))
    print("| %s | %s | %s | %.2f (%.2f-%.2f) |" % (k, f(list(a.values())), f(list(b.values())),
          st.median(q), min(q), max(q)))
PY
