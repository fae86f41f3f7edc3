#!/usr/bin/env bash
# statsbench.sh - what reading MOUNT/.samplefs/stats.json 10 times a
# second costs a random-read workload (issue 19, item 1's target: files/s
# changes by under 2 %).
#
#   tools/bench/statsbench.sh            # BENCH_QUICK-sized: 20000 files
#   STATS_FILES=N STATS_RUNS=R STATS_THREADS=T tools/bench/statsbench.sh
#   tools/bench/statsbench.sh SOURCE LIST [OPTIONS]   # `make bench`'s part stats
#
# Without arguments: one tar of N members (3 KB, a JPEG's order of size) in
# a temporary directory, read in one random order.  With them: SOURCE
# mounted with -o OPTIONS (bench.sh gives part B's release, its layout and
# index_dir), LIST's paths read (part B's random train JPEGs).  The
# source's pages are warm in the host's cache (so the FUSE path, where
# counters are, is all that is measured); R alternating pairs of runs,
# each a fresh mount (empty FUSE page cache) read by readfiles.c with T
# threads, without and with (odd pairs; with and without in even ones) a
# reader of stats.json every 0.1 s (by bash builtins).  Prints each run's
# files/s and the medians' ratio; with STATS_TSV=FILE, also appends each
# run's files/s to FILE as bench.sh's results.tsv lines (m stats.without
# V, m stats.with V).  Not a test: nothing asserts.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
N=${STATS_FILES:-20000} RUNS=${STATS_RUNS:-5} THREADS=${STATS_THREADS:-4}
W=$(mktemp -d /tmp/sfs-statsbench.XXXXXX)
M=$W/m POLLER=
cleanup() {
	[ -n "$POLLER" ] && kill "$POLLER" 2>/dev/null
	grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cc -O2 -Wall -D_GNU_SOURCE -o "$W/readfiles" "$HERE/readfiles.c" -lpthread
if [ $# -ge 2 ]; then
	SRC=$1 LIST=$2 OPTS=${3:+$3,}quiet
	N=$(wc -l <"$LIST")
	if [ -d "$SRC" ]; then
		find "$SRC" -maxdepth 1 -type f -exec cat {} + >/dev/null
	else
		cat "$SRC" >/dev/null
	fi
else
SRC=$W/data.tar LIST=$W/list.txt OPTS=index_dir=$W/idx,quiet
/usr/bin/python3 - "$W" "$N" <<'PY'
import io, os, random, sys, tarfile
w, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
names = ["d%02d/f%06d.jpg" % (i % 50, i) for i in range(n)]
with tarfile.open(w + "/data.tar", "w") as tf:
    for name in names:
        data = os.urandom(3000)
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
rng.shuffle(names)
open(w + "/list.txt", "w").write("\n".join(names) + "\n")
PY
cat "$SRC" >/dev/null
fi
mkdir -p "$M"
mkfifo "$W/nap"	# nobody writes to it: the poller's clock
# run WITH: one run's files/s (WITH=1: stats.json read every 0.1 s)
run() {
	local r
	"$BUILD/samplefs" "$SRC" "$M" -o "$OPTS" 2>/dev/null
	if [ "$1" = 1 ]; then
		# bash builtins only (no process per read): what is measured is
		# samplefs making and serving the document, not fork and exec
		( while :; do read -r -d '' _ <"$M/.samplefs/stats.json"
			read -r -t 0.1 <>"$W/nap"; done ) &
		POLLER=$!
	fi
	r=$("$W/readfiles" -t "$THREADS" -p "$M" "$LIST")
	if [ -n "$POLLER" ]; then kill "$POLLER"; wait "$POLLER" 2>/dev/null || true; POLLER=; fi
	fusermount3 -u "$M"
	sed 's/.*files_per_s=\([0-9.]*\).*/\1/' <<<"$r"
}
run 0 >/dev/null	# the index, and warm-up
without=() with=()
for i in $(seq 1 "$RUNS"); do
	# the order alternates too: a run right after another may share the
	# CPUs with the last daemon's exit
	if [ $((i % 2)) = 1 ]; then
		without+=("$(run 0)"); with+=("$(run 1)")
	else
		with+=("$(run 1)"); without+=("$(run 0)")
	fi
	echo "pair $i: without ${without[-1]} files/s, with ${with[-1]} files/s"
	if [ -n "${STATS_TSV:-}" ]; then
		printf 'm\tstats.without\t%s\nm\tstats.with\t%s\n' "${without[-1]}" "${with[-1]}" >>"$STATS_TSV"
	fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
a=$(median "${without[@]}") b=$(median "${with[@]}")
echo "files=$N threads=$THREADS runs=$RUNS median without=$a with=$b change=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%+.2f %%", (b - a) / a * 100}')"
