#!/usr/bin/env bash
# sumsbench.sh - what -o checksums costs random reads (issue 28 part 2's
# target: files/s within 5 % of a mount without them).
#
#   tools/bench/sumsbench.sh            # SUMS_FILES=2000 members
#   SUMS_FILES=N SUMS_RUNS=R SUMS_THREADS=T tools/bench/sumsbench.sh
#   SUMS_COLD=1 tools/bench/sumsbench.sh   # the host's caches dropped
#                                          # before each run (root)
#   SUMS_OPTS=readahead=128 tools/bench/sumsbench.sh   # more -o options
#                                          # for both mounts (128 KiB
#                                          # READs, as a user's mount has)
#
# One tar of N members of 3-250 KB (uniform: ImageNet JPEGs' sizes, a
# mean of ~125 KB; a few go past one 128 KiB FUSE read, so a member is
# then read, and checked, whole for each of its reads), in a temporary
# directory, read in one random order, all of it.  The tar's pages are
# warm in the host's cache, so the FUSE path, where the checks are, is
# all that is measured (SUMS_COLD=1: dropped before each run, so the
# disk's reads are in it too).  Two indexes, built once: without checksums and
# with (-o checksums).  R alternating pairs of runs (the order swapped
# every other pair), each a fresh mount (empty FUSE page cache) read by
# readfiles.c with T threads (4).  Prints each run's files/s, the medians
# and their ratio with the pairs' spread; with SUMS_TSV=FILE also appends
# each run as bench.sh's results.tsv lines (m sums.without V, m sums.with
# V).  Not a test: nothing asserts.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-${SAMPLEFS_BUILD:-$ROOT/build}}
COLD=${SUMS_COLD:-0}
N=${SUMS_FILES:-2000} RUNS=${SUMS_RUNS:-5} THREADS=${SUMS_THREADS:-4}
W=$(mktemp -d /tmp/sfs-sumsbench.XXXXXX)
M=$W/m
cleanup() {
	grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cc -O2 -Wall -D_GNU_SOURCE -o "$W/readfiles" "$HERE/readfiles.c" -lpthread
/usr/bin/python3 - "$W" "$N" <<'PY'
import io, os, random, sys, tarfile
w, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(28)
names = ["n%03d/n%03d_%05d.JPEG" % (i % 40, i % 40, i) for i in range(n)]
with tarfile.open(w + "/data.tar", "w") as tf:
    for name in names:
        data = os.urandom(rng.randrange(3000, 250000))
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
rng.shuffle(names)
open(w + "/list.txt", "w").write("\n".join(names) + "\n")
PY
SRC=$W/data.tar LIST=$W/list.txt
cat "$SRC" >/dev/null
mkdir -p "$M"
# run WITH: one run's files/s (WITH=1: the index with checksums)
run() {
	local r opts=quiet,index_dir=$W/idx-plain${SUMS_OPTS:+,$SUMS_OPTS}
	[ "$1" = 1 ] && opts=quiet,checksums,index_dir=$W/idx-sums${SUMS_OPTS:+,$SUMS_OPTS}
	[ "$COLD" = 1 ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
	"$BUILD/samplefs" "$SRC" "$M" -o "$opts" 2>>"$W/daemon.log"
	r=$("$W/readfiles" -t "$THREADS" -p "$M" "$LIST")
	if [ "$1" = 1 ] && ! grep -q '"checksum_failures": 0' "$M/.samplefs/stats.json"; then
		echo "sumsbench: checksums failed: see $W/daemon.log" >&2
		exit 1
	fi
	fusermount3 -u "$M"
	sed 's/.*files_per_s=\([0-9.]*\).*/\1/' <<<"$r"
}
t0=$(date +%s.%N); run 0 >/dev/null; t1=$(date +%s.%N)	# the indexes, and warm-up
run 1 >/dev/null; t2=$(date +%s.%N)
echo "index builds (with the first read of every member): without $(echo "$t1 - $t0" | bc) s, with checksums $(echo "$t2 - $t1" | bc) s"
without=() with=() ratios=()
for i in $(seq 1 "$RUNS"); do
	# the order alternates too: a run right after another may share the
	# CPUs with the last daemon's exit
	if [ $((i % 2)) = 1 ]; then
		without+=("$(run 0)"); with+=("$(run 1)")
	else
		with+=("$(run 1)"); without+=("$(run 0)")
	fi
	ratios+=("$(awk -v a="${without[-1]}" -v b="${with[-1]}" 'BEGIN {printf "%.3f", b / a}')")
	echo "pair $i: without ${without[-1]} files/s, with ${with[-1]} files/s, with/without ${ratios[-1]}"
	if [ -n "${SUMS_TSV:-}" ]; then
		printf 'm\tsums.without\t%s\nm\tsums.with\t%s\n' "${without[-1]}" "${with[-1]}" >>"$SUMS_TSV"
	fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
a=$(median "${without[@]}") b=$(median "${with[@]}")
lo=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1) hi=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)
echo "$([ "$COLD" = 1 ] && echo cold || echo warm) files=$N bytes=$(stat -c %s "$SRC") threads=$THREADS runs=$RUNS median without=$a with=$b change=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%+.2f %%", (b - a) / a * 100}') pair ratios $(median "${ratios[@]}") ($lo-$hi)"
