#!/usr/bin/env bash
# bigtar.sh - the tar index build in bounded memory, measured: a generated
# tar of NTARS nested tars x MEMBERS empty members (gen_bigtar.py; 2000 x
# 10000 = 20 M members, ~10 GB), mounted with a fresh index_dir in the
# foreground: the build's peak memory (RssAnon, sampled) and time, against
# the floor of reading just the headers' blocks (headers.c); then the
# remount with the saved index, and a find of the whole tree (at most
# BIGTAR_FIND_S seconds, default 900).
#
#   tools/bench/bigtar.sh [NTARS [MEMBERS]]     (BIGTAR_DIR=/var/tmp/samplefs-bigtar)
#
# Not part of `make bench` (the data takes ~10 GB and minutes to write);
# the tar is kept between runs, delete BIGTAR_DIR to start over.  Kills
# only the samplefs it started (by PID), and unmounts on exit.
set -eu
cd "$(dirname "$0")/../.."
NTARS=${1:-2000}
MEMBERS=${2:-10000}
DIR=${BIGTAR_DIR:-/var/tmp/samplefs-bigtar}
BUILD=${SAMPLEFS_BUILD:-build}
TAR=$DIR/big-$NTARS-$MEMBERS.tar
MNT=$DIR/mnt
mkdir -p "$DIR" "$MNT"
[ -x "$BUILD/samplefs" ] || make -j2 "$BUILD/samplefs"
cc -O2 -o "$DIR/headers" tools/bench/headers.c
[ -s "$TAR" ] || /usr/bin/python3 tools/bench/gen_bigtar.py "$TAR.part" "$NTARS" "$MEMBERS"
[ -s "$TAR" ] || mv "$TAR.part" "$TAR"
pid=
cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$DIR/idx"
}
trap cleanup EXIT

# mount TAG: mounts in the foreground, samples its RssAnon (heap and
# stacks: the build's own memory, not the pages of the index it maps)
# until it serves; sets mount_s, anon_kb and hwm_kb (VmHWM: with the
# mapped index's pages, which are the page cache's to drop)
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mount_timed() {
	local t0=$(date +%s.%N) a
	"$BUILD/samplefs" -f -o quiet,index_dir="$DIR/idx" "$TAR" "$MNT" \
		>"$DIR/$1.log" 2>&1 </dev/null &
	pid=$!
	anon_kb=0
	until mountpoint -q "$MNT"; do
		kill -0 "$pid" 2>/dev/null || { cat "$DIR/$1.log"; exit 1; }
		a=$(status_kb "$pid" RssAnon)
		[ "${a:-0}" -gt "$anon_kb" ] && anon_kb=$a
		sleep 0.05
	done
	mount_s=$(echo "$(date +%s.%N) - $t0" | bc)
	hwm_kb=$(status_kb "$pid" VmHWM)
}
unmount() {
	fusermount3 -u "$MNT"
	wait "$pid" || true
	pid=
}

cat "$TAR" > /dev/null		# the page cache, as for both runs below
"$DIR/headers" "$TAR" | tee "$DIR/headers.out"
rm -rf "$DIR/idx"
mount_timed build
build_s=$mount_s build_anon=$anon_kb build_hwm=$hwm_kb
unmount
mount_timed remount
t0=$(date +%s.%N)
nfind=$(timeout "${BIGTAR_FIND_S:-900}" find "$MNT" | wc -l)
find_s=$(echo "$(date +%s.%N) - $t0" | bc)
unmount
idx=$(du -b "$DIR"/idx/*.sfsidx | cut -f1)
members=$((NTARS * MEMBERS))
echo "commit $(git rev-parse --short HEAD): $members members ($NTARS x $MEMBERS)"
echo "build (mount until serving): $build_s s, peak RssAnon $((build_anon / 1024)) MiB, VmHWM $((build_hwm / 1024)) MiB"
echo "headers only: $(cat "$DIR/headers.out")"
echo "index: $idx bytes, $(echo "scale=1; $idx / $members" | bc) B a member"
echo "remount: $mount_s s; find: $nfind entries in $find_s s"
