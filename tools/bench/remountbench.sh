#!/usr/bin/env bash
# remountbench.sh - a remount of a saved tar index, A against B side by
# side (issue 26: "index load proportional to what is touched"): the time
# from starting the daemon to the answer of a stat of one member two levels
# down (the mount up, the root and one nested tar looked up), with the index
# file in the page cache (warm) and evicted from it (cold: posix_fadvise
# DONTNEED on the index file only, nothing else of the machine's cache),
# runs alternating A B A B ..., medians with min and max.  Also what the
# daemon's page cache holds of the index after that stat (fincore).
#
#   tools/bench/remountbench.sh BUILD_A BUILD_B TAR [RUNS] [MEMBER]
#
# BUILD_*: directories holding a samplefs binary (e.g. build, and another
# checkout's build); each gets its own index directory, built once by a
# first mount when missing (kept in $REMOUNT_DIR, default
# /var/tmp/samplefs-remount; delete it to start over).  TAR: e.g. the
# 20 M-member tar of bigtar.sh (/var/tmp/samplefs-bigtar/big-2000-10000.tar),
# MEMBER a path in it (default: gen_bigtar.py's n00001000/n00001000_5000.JPEG).
# Not part of `make bench`.  Kills only the daemons it started, unmounts on
# exit.
set -eu
cd "$(dirname "$0")/../.."
A=$1 B=$2 TAR=$3 RUNS=${4:-7}
MEMBER=${5:-n00001000/n00001000_5000.JPEG}
DIR=${REMOUNT_DIR:-/var/tmp/samplefs-remount}
MNT=$DIR/mnt
mkdir -p "$MNT" "$DIR/idx-a" "$DIR/idx-b"
pid=
cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
}
trap cleanup EXIT

now() { date +%s.%N; }
evict() {	# FILE...: out of the page cache
	/usr/bin/python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)' "$@"
}
# one BUILD IDX: mounts, stats MEMBER, prints the seconds and the index's
# resident KiB, unmounts
one() {
	local t0 t1 res
	t0=$(now)
	"$1/samplefs" -f -o layout=tar,quiet,index_dir="$2" "$TAR" "$MNT" \
		>"$DIR/daemon.log" 2>&1 </dev/null &
	pid=$!
	until mountpoint -q "$MNT"; do
		kill -0 "$pid" 2>/dev/null || { cat "$DIR/daemon.log"; exit 1; }
		sleep 0.005
	done
	stat "$MNT/$MEMBER" >/dev/null
	t1=$(now)
	res=$(fincore -nb -o RES "$2"/*.sfsidx | awk '{ s += $1 } END { print int(s / 1024) }')
	fusermount3 -u "$MNT"
	wait "$pid" || true
	pid=
	echo "$(echo "$t1 - $t0" | bc) $res"
}
# stats FILE: "median (min-max)" of the first column
stats() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3f s (%.3f-%.3f, %d runs)", m, v[1], v[NR], NR }'
}

for side in a b; do	# the indexes, once
	build=$A; [ $side = b ] && build=$B
	compgen -G "$DIR/idx-$side/*.sfsidx" >/dev/null || one "$build" "$DIR/idx-$side" >/dev/null
done
: >"$DIR/a.warm"; : >"$DIR/b.warm"; : >"$DIR/a.cold"; : >"$DIR/b.cold"
for r in $(seq 1 "$RUNS"); do
	for side in a b; do
		build=$A; [ $side = b ] && build=$B
		cat "$DIR/idx-$side"/*.sfsidx >/dev/null
		one "$build" "$DIR/idx-$side" >>"$DIR/$side.warm"
		evict "$DIR/idx-$side"/*.sfsidx
		one "$build" "$DIR/idx-$side" >>"$DIR/$side.cold"
	done
done
members=$(du -b "$DIR"/idx-b/*.sfsidx | cut -f1)
echo "A: $A ($(git -C "$A/.." rev-parse --short HEAD 2>/dev/null || echo ?)), B: $B"
echo "tar: $TAR; member: $MEMBER; index A $(du -b "$DIR"/idx-a/*.sfsidx | cut -f1) bytes, B $members bytes"
for side in a b; do
	echo "$side warm: $(stats "$DIR/$side.warm")"
	echo "$side cold: $(stats "$DIR/$side.cold"); of the index, in the page cache after: $(awk '{ print $2 }' "$DIR/$side.cold" | sort -n | tail -1) KiB"
done
paste "$DIR/a.warm" "$DIR/b.warm" | awk '{ printf "%.2f ", $3 / $1 } END { print "" }' |
	sed 's/^/B\/A warm, pair by pair: /'
paste "$DIR/a.cold" "$DIR/b.cold" | awk '{ printf "%.3f ", $3 / $1 } END { print "" }' |
	sed 's/^/B\/A cold, pair by pair: /'

