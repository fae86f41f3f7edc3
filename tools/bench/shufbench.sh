#!/usr/bin/env bash
# shufbench.sh - virtual WebDataset shards streamed by one reader, cold
# (issue 26, "prefetch in a shard's order"; not part of `make bench`).
#
# An ImageNet-shaped release (gen_imagenet.py, SHUF_CLASSES x SHUF_PER_CLASS
# members of SHUF_MEMBER_KB, default 64 x 300 of 60-160 KB, as the real
# JPEGs: ~2.1 GB; SHUF_MEMBER_KB= (empty): gen_imagenet's ~3 KB members)
# and its train tree extracted beside it, in $BENCH_DIR/shuf-<KB>.  Each run, in turn, every cache dropped before each
# (sync; echo 3 > /proc/sys/vm/drop_caches: root) and the mount made
# before the clock starts:
#   shuf     `cat` of one globally shuffled shard (-o shard_seed=1,
#            shard_size=SHUF_SHARD), prefetch on (-o shard_prefetch default)
#   shuf0    the same with -o shard_prefetch=0 (as before prefetch)
#   ordered  `cat` of one shard in the tar's order (no shard_seed), prefetch on
#   tree4    SHUF_FILES files of the extracted tree at random, 4 threads
#            (readfiles.c), the anchor of the target: shuf >= 2x tree4
#   disk16   the floor: the same shard's members read from the release's
#            train tar in the shard's order by 16 threads of pread
#            (readfiles -r), no FUSE and nothing above the disk: the
#            source's own parallel random-read rate, which no reader of
#            those members beats
# With SHUF_HTTP=1, over HTTP too (nginx on loopback serving the release,
# tests/integration/http_lib.sh; a cold disk under it):
#   hshuf    `cat` of the shuffled shard through an http:// mount
#   hordered `cat` of the shard in the tar's order through an http:// mount:
#            adjacent members come in one GET (imagenet_ahead.c joins them)
#   curl16   the same members' ranged GETs by curlloop.c, 16 threads (one
#            request in flight each, keep-alive), the target's anchor:
#            hshuf >= 0.7x curl16
# and, for hshuf and hordered, the GETs a sample (nginx's access log, from
# the cat's start to the unmount: issue 26 wants <= 1, and far fewer for
# hordered) and MB/s, in $BENCH_DIR/shuf-<KB>/http.tsv.
# The shard read is a different one each run (k = run mod shards).  The
# order of the measurements rotates from run to run.  Prints samples/s per run and
# medians with min-max, and writes them to $BENCH_DIR/shuf-<KB>/results.tsv.
#
# SHUF_RUNS (default 5), SHUF_BUILD (build), SHUF_PREFETCH (-o
# shard_prefetch= of `shuf`, default: samplefs' own).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${SHUF_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLEFS=$BUILD/samplefs
BENCH_DIR=${BENCH_DIR:-/var/tmp/samplefs-bench}
NCLS=${SHUF_CLASSES:-64} PER=${SHUF_PER_CLASS:-300} KB=${SHUF_MEMBER_KB-60-160}
D=$BENCH_DIR/shuf-${KB:-small}
S=${SHUF_SHARD:-2000} RUNS=${SHUF_RUNS:-5} NFILES=${SHUF_FILES:-4000}
PF=${SHUF_PREFETCH:+,shard_prefetch=$SHUF_PREFETCH}
PY=/usr/bin/python3
M=$D/mnt
READFILES=$BUILD/bench-readfiles

HTTP=${SHUF_HTTP:-0}
CURLLOOP=$BUILD/bench-curlloop
SFS_CLEANUP_HOOKS=()	# http_lib.sh adds its own, run by cleanup below
SFS_TMP=
. "$ROOT/tests/integration/http_lib.sh" || exit 1

[ "$(id -u)" = 0 ] || { echo "shufbench: cold runs need root (drop_caches)" >&2; exit 1; }
[ -x "$SAMPLEFS" ] || { echo "shufbench: no $SAMPLEFS (make all)" >&2; exit 1; }
cleanup() {
	grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
	[ -n "$SFS_TMP" ] && http_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$D" "$M"
cc -O2 -D_GNU_SOURCE -pthread -o "$READFILES" "$ROOT/tools/bench/readfiles.c" || exit 1

# the release, the extracted train tree, the random list
if [ ! -s "$D/src/manifest.json" ]; then
	rm -rf "$D/src" "$D/tree"
	GEN_IMAGENET_MEMBER_KB=$KB $PY "$ROOT/tools/bench/gen_imagenet.py" \
		"$D/src" "$NCLS" "$PER" 100 0 || exit 1
fi
if [ ! -e "$D/tree/.done" ]; then
	rm -rf "$D/tree"
	$PY - "$D/src/ILSVRC2012_img_train.tar" "$D/tree/train" <<'EOF' || exit 1
import os, sys, tarfile
with tarfile.open(sys.argv[1]) as outer:
    for m in outer:
        d = os.path.join(sys.argv[2], m.name[:-4])
        os.makedirs(d)
        with tarfile.open(fileobj=outer.extractfile(m)) as inner:
            for x in inner:
                with open(os.path.join(d, x.name), "wb") as f:
                    f.write(inner.extractfile(x).read())
EOF
	touch "$D/tree/.done"
fi
$PY - "$D/src/train.txt" "$NFILES" >"$D/random.list" <<'EOF'
import random, sys
paths = [l.split("\t")[0] for l in open(sys.argv[1])]
random.Random(26).shuffle(paths)
print("\n".join(paths[:int(sys.argv[2])]))
EOF
NSHARDS=$(( (NCLS * PER + S - 1) / S - 1 ))	# the last, short one is never read
if [ "$HTTP" = 1 ]; then
	cc -O2 -D_GNU_SOURCE -o "$CURLLOOP" "$ROOT/tools/bench/curlloop.c" -lcurl -lpthread || exit 1
	SFS_TMP=$D/http
	rm -rf "$SFS_TMP" && mkdir -p "$SFS_TMP" && http_start "$D/src" || exit 1
	export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench	# nginx ignores the signature
fi
# "OFFSET SIZE" of every train member of shard k (shard_seed=1), per k:
# the shard order computed as imagenet_oracle.py does (numpy), offsets
# from tarfile (disk16 and curl16 read them)
$PY - "$D/src/ILSVRC2012_img_train.tar" "$S" "$D/shard" <<'EOF' || exit 1
import sys, tarfile
import numpy as np
ext = []
with tarfile.open(sys.argv[1]) as outer:
    for m in outer:
        with tarfile.open(fileobj=outer.extractfile(m)) as inner:
            for x in inner:
                ext.append((m.name[:-4], x.name, m.offset_data + x.offset_data, x.size))
wnids = sorted({e[0] for e in ext})
canon = sorted(ext, key=lambda e: (wnids.index(e[0]), e[1]))
np.random.seed(1)
order = np.arange(len(canon))
np.random.shuffle(order)
S = int(sys.argv[2])
for k in range(len(canon) // S):
    with open("%s-%d.list" % (sys.argv[3], k), "w") as f:
        for c in order[k * S:(k + 1) * S]:
            f.write("%d %d\n" % (canon[c][2], canon[c][3]))
EOF

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
mnt() {	# mnt OPTIONS: a mount of the release (its index built once, at the first)
	"$SAMPLEFS" -o "layout=imagenet,index_dir=$D/idx,shard_size=$S${1:+,$1}" "$D/src" "$M" 2>>"$D/daemon.log" || exit 1
}
hmnt() {	# hmnt OPTIONS: the same over HTTP (its own index)
	"$SAMPLEFS" -o "layout=imagenet,index_dir=$D/hidx,shard_size=$S${1:+,$1}" \
		"$(http_url /)" "$M" 2>>"$D/daemon.log" || exit 1
}
# one shard through the mount: prints samples/s
cat_shard() {
	local k=$1 t0 t1
	t0=$(now)
	cat "$M/shards/train-$(printf %06d "$k").tar" >/dev/null || exit 1
	t1=$(now)
	echo "$S / ($t1 - $t0)" | bc -l
}
# hcat NAME RUN K: cat_shard of the http:// mount (cold), then unmounted;
# its GETs a sample and MB/s go to http.tsv; prints samples/s
hcat() {
	local f=$M/shards/train-$(printf %06d "$3").tar bytes mark r gets
	bytes=$(stat -c %s "$f") || exit 1
	drop
	mark=$(http_log_mark) || exit 1
	r=$(cat_shard "$3")
	fusermount3 -u "$M"
	gets=$(http_log_count GET "$mark") || exit 1
	printf '%s\t%d\t%.3f\t%.1f\n' "$1" "$2" "$(echo "$gets / $S" | bc -l)" \
		"$(echo "$bytes / 1000000 * $r / $S" | bc -l)" >>"$D/http.tsv"
	echo "$r"
}
run() {	# run NAME RUN: one measurement, cold
	local k=$(( $2 % NSHARDS )) r
	case $1 in
	shuf) mnt "shard_seed=1$PF"; drop; r=$(cat_shard "$k"); fusermount3 -u "$M" ;;
	shuf0) mnt "shard_seed=1,shard_prefetch=0"; drop; r=$(cat_shard "$k"); fusermount3 -u "$M" ;;
	ordered) mnt "${PF#,}"; drop; r=$(cat_shard "$k"); fusermount3 -u "$M" ;;
	tree4) drop; r=$("$READFILES" -t 4 -p "$D/tree" "$D/random.list" |
			sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p') ;;
	disk16) drop; r=$("$READFILES" -t 16 -r "$D/src/ILSVRC2012_img_train.tar" "$D/shard-$k.list" |
			sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p') ;;
	hshuf) hmnt "shard_seed=1$PF"; r=$(hcat "$1" "$2" "$k") ;;
	hordered) hmnt "${PF#,}"; r=$(hcat "$1" "$2" "$k") ;;
	curl16) drop; r=$("$CURLLOOP" -t 16 "$(http_url ILSVRC2012_img_train.tar)" \
			"$D/shard-$k.list" | sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p') ;;
	esac
	printf '%s\t%d\t%.0f\n' "$1" "$2" "$r" | tee -a "$D/results.tsv"
}
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
mnt "shard_seed=1" && ls "$M/shards" >/dev/null && fusermount3 -u "$M"	# the indexes
mnt "" && ls "$M/shards" >/dev/null && fusermount3 -u "$M"
names=(shuf shuf0 ordered tree4 disk16)
if [ "$HTTP" = 1 ]; then
	names+=(hshuf hordered curl16)
	hmnt "shard_seed=1" && ls "$M/shards" >/dev/null && fusermount3 -u "$M"
	hmnt "" && ls "$M/shards" >/dev/null && fusermount3 -u "$M"
fi
: >"$D/results.tsv"
: >"$D/http.tsv"
echo "# commit $(git -C "$ROOT" rev-parse --short HEAD), $NCLS x $PER members of ${KB:-~3} KB, shards of $S"
for ((i = 0; i < RUNS; i++)); do
	for ((j = 0; j < ${#names[@]}; j++)); do
		run "${names[(i + j) % ${#names[@]}]}" "$i"
	done
done
$PY - "$D/results.tsv" "$D/http.tsv" <<'EOF'
import statistics, sys
h = {}
for line in open(sys.argv[2]):
    n, _, g, mb = line.split("\t")
    h.setdefault(n, []).append((float(g), float(mb)))
for n, x in h.items():
    g, mb = [a for a, _ in x], [b for _, b in x]
    print("%-8s GETs a sample: median %.3f (min %.3f, max %.3f); MB/s: median %.1f "
          "(min %.1f, max %.1f), %d runs" % (n, statistics.median(g), min(g), max(g),
                                            statistics.median(mb), min(mb), max(mb), len(x)))
v = {}
for line in open(sys.argv[1]):
    n, _, r = line.split("\t")
    v.setdefault(n, []).append(float(r))
med = {n: statistics.median(x) for n, x in v.items()}
for n, x in v.items():
    print("%-8s median %8.0f samples/s  (min %.0f, max %.0f, %d runs)"
          % (n, med[n], min(x), max(x), len(x)))
print("ratios of medians: shuf / tree4 %.2fx   shuf / shuf0 %.2fx   shuf / ordered %.2fx"
      % (med["shuf"] / med["tree4"], med["shuf"] / med["shuf0"], med["shuf"] / med["ordered"]))
print("the floor: disk16 / tree4 %.2fx (the most any reader of the shard's members reaches"
      " against the target's anchor)   shuf / disk16 %.2fx"
      % (med["disk16"] / med["tree4"], med["shuf"] / med["disk16"]))
if "hshuf" in med:
    print("ratios of medians: hshuf / curl16 %.2fx" % (med["hshuf"] / med["curl16"]))
# the same ratio within each run (measured minutes apart at most), median
runs = {}
for line in open(sys.argv[1]):
    n, i, r = line.split("\t")
    runs.setdefault(int(i), {})[n] = float(r)
for a, b in (("shuf", "tree4"), ("shuf", "shuf0"), ("shuf", "ordered"), ("shuf", "disk16"),
             ("disk16", "tree4"), ("hshuf", "curl16"),
             ("hordered", "ordered")):
    x = sorted(v[a] / v[b] for v in runs.values() if a in v and b in v)
    if x:
        print("per-run %s / %s: median %.2fx (min %.2f, max %.2f)"
              % (a, b, statistics.median(x), x[0], x[-1]))
EOF
