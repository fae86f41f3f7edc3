#!/usr/bin/env bash
# prebuiltbench.sh - a mount from a prebuilt index served over HTTP, A
# against B side by side (issue 26: "prebuilt index mounted from the
# store"): each build saves its prebuilt index of SRC once
# (samplefs-inspect --save-index), nginx on loopback serves both
# (tests/integration/http_lib.sh), then RUNS alternating mounts A B A B
# ..., each with a fresh index_dir and -o index=http://...,index_only
# (fetch, copy into index_dir, check, map), timed from the daemon's start
# to the answer of a stat of one sample: medians and min-max.
#
#   tools/bench/prebuiltbench.sh BUILD_A BUILD_B SRC [RUNS] [SAMPLE]
#
# SRC: a local source (e.g. gen_imagenet.py's release directory, mounted
# with the imagenet layout it is recognised as); SAMPLE a path in the
# mount (default: the first of train/'s first class).  Data in
# $PREBUILT_DIR (default /var/tmp/samplefs-prebuilt; the saved indexes are
# kept).  Not part of `make bench`.  The daemons and nginx it started are
# stopped, the mounts unmounted, on exit (lib.sh's trap).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/http_lib.sh"
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) SRC=$(cd "$3" && pwd) RUNS=${4:-5} SAMPLE=${5:-}
DIR=${PREBUILT_DIR:-/var/tmp/samplefs-prebuilt}
mkdir -p "$DIR/www"
sfs_setup
M=$SFS_TMP/m

for side in a b; do	# the prebuilt indexes, once
	build=$A; [ $side = b ] && build=$B
	[ -s "$DIR/www/$side.sfsidx" ] && continue
	"$build/samplefs-inspect" --save-index="$DIR/www/$side.sfsidx" -o "index_dir=$DIR/idx-$side" \
		"$SRC" >"$DIR/save-$side.log" 2>&1 || { cat "$DIR/save-$side.log"; exit 1; }
done
http_start "$DIR/www" || exit 1

# one SIDE BUILD: a fresh index_dir, the mount, a stat of SAMPLE: seconds
one() {
	local t0 t1 idx=$SFS_TMP/idx-$1-$RANDOM
	t0=$(date +%s.%N)
	SAMPLEFS=$2/samplefs sfs_mount "$SRC" "$M" -o "quiet,index=$(http_url "/$1.sfsidx"),index_only,index_dir=$idx" ||
		exit 1
	[ -n "$SAMPLE" ] || SAMPLE=train/$(ls "$M/train" | head -1)
	[ -d "$M/$SAMPLE" ] && SAMPLE=$SAMPLE/$(ls "$M/$SAMPLE" | head -1)
	stat "$M/$SAMPLE" >/dev/null || exit 1
	t1=$(date +%s.%N)
	sfs_umount "$M" || exit 1
	rm -rf "$idx"
	echo "$t1 - $t0" | bc
}
stats() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3f s (%.3f-%.3f, %d runs)", m, v[1], v[NR], NR }'
}
: >"$DIR/a.times"; : >"$DIR/b.times"
for r in $(seq 1 "$RUNS"); do
	one a "$A" >>"$DIR/a.times"
	one b "$B" >>"$DIR/b.times"
done
echo "SRC $SRC; sample $SAMPLE; prebuilt A $(stat -c %s "$DIR/www/a.sfsidx") bytes, B $(stat -c %s "$DIR/www/b.sfsidx") bytes"
echo "A $A: $(stats "$DIR/a.times")"
echo "B $B: $(stats "$DIR/b.times")"
paste "$DIR/a.times" "$DIR/b.times" | awk '{ printf "%.3f ", $2 / $1 } END { print "" }' |
	sed 's/^/B\/A pair by pair: /'
sfs_done
