#!/usr/bin/env bash
# bucketbench.sh - samplefs over a bucket (issue 17), against Swift's s3api
# on loopback (tests/integration/swift_lib.sh), with the ImageNet-shaped
# release bench.sh generates (gen_imagenet.py, same sizes, same directory):
#
#  1. the mount of a prebuilt index from the bucket: samplefs-inspect
#     --save-index=s3://BUCKET/KEY once, then BENCH_RUNS cold mounts (a
#     fresh index_dir each: fetch + check + map) with index=s3://...,
#     index_only, timed from the daemon's start to the mount showing in
#     /proc/mounts (target: under 2 s);
#  2. random train JPEGs read with 16 threads through a fresh mount
#     (readfiles.c), against curlloop.c doing the same ranged GETs (the
#     members' bytes inside the train tar, found by Python's tarfile, not
#     by samplefs) with 16 threads against the same store (target: samplefs
#     at least 0.7x), with Swift's access log counting samplefs' GETs per
#     sample (target: at most 1);
#  3. the same files read through `rclone mount` of a bucket holding them
#     as one object each (the exploded layout people upload): the ratio.
#
#   tools/bench/bucketbench.sh
#   BENCH_QUICK=1   40 classes x 500 (bench.sh's quick data), 500 reads
#   BENCH_RUNS=N    cold mounts timed (default 5), median shown
#   BENCH_READ_RUNS=N  rounds of the three read passes, alternating (default 3)
#   BENCH_N=N       random files read per pass (default 2,000; Swift's one
#                   proxy process serves some tens of requests a second here)
#   BENCH_DIR=DIR   generated data, shared with bench.sh (/var/tmp/samplefs-bench)
#
# Swift runs from a temporary directory (its store holds a copy of the
# train tar: ~3.5 GB at full size); everything it started is stopped, and
# every mount unmounted, by lib.sh's EXIT trap.  Not a test: it fails only
# when a tool is missing or a reader hits an error.  Writes its table to
# $DATA/bucket-results.md and prints it.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
HERE=$ROOT/tools/bench
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/http_lib.sh"
. "$ROOT/tests/integration/swift_lib.sh"
INSPECT=$SFS_BIN/samplefs-inspect
READER=$SFS_BIN/bench-readfiles
CURLLOOP=$SFS_BIN/bench-curlloop
BASE=${BENCH_DIR:-/var/tmp/samplefs-bench}
RUNS=${BENCH_RUNS:-5}
READ_RUNS=${BENCH_READ_RUNS:-3}
THREADS=16
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	DATA=$BASE/quick IN="40 500 1000 5" N=${BENCH_N:-500}
else
	DATA=$BASE IN="1000 1281 50000 20" N=${BENCH_N:-2000}
fi
SRC=$DATA/imagenet
OUT=$DATA/bucket-results.md
ROWS=()

say() { printf '[bucketbench %s] %s\n' "$(date +%T)" "$*" >&2; }
row() { ROWS+=("| $1 | $2 | $3 |"); say "$1: $2 ($3)"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }	# KEY: its value in a readfiles line

for t in "$SAMPLEFS" "$INSPECT" rclone; do
	command -v "$t" >/dev/null || { say "missing $t (make; tools/deps.sh)"; exit 1; }
done
cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$READER" "$HERE/readfiles.c" -lpthread &&
	cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$CURLLOOP" "$HERE/curlloop.c" -lcurl -lpthread ||
	exit 1
if [ ! -f "$SRC/.done" ]; then
	say "generating the ImageNet-shaped release ($IN) in $SRC"
	rm -rf "$SRC"
	# shellcheck disable=SC2086
	"$PY" "$HERE/gen_imagenet.py" "$SRC" $IN 1 >/dev/null && touch "$SRC/.done" || exit 1
fi
sfs_setup
T=$SFS_TMP

# The samples: N random train members, their mount paths, and their bytes'
# offsets in the train tar (outer member's data + inner member's data),
# from Python's tarfile; and the same files on disk, for rclone's bucket.
# Kept next to the data (a walk of 1.28 M members takes minutes).
P=$DATA/bucketbench-$N
if [ ! -f "$P/.done" ]; then
	say "picking $N random train files"
	rm -rf "$P" && mkdir -p "$P" || exit 1
	"$PY" - "$SRC/ILSVRC2012_img_train.tar" "$N" "$P" <<'PY' && touch "$P/.done" || exit 1
import os, random, sys, tarfile
src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rnd = random.Random(17)
where = []
with open(src, "rb") as f, tarfile.open(fileobj=f) as outer:
    for m in outer:
        f.seek(m.offset_data)
        inner = tarfile.open(fileobj=f, mode="r|")
        wnid = m.name[:-4]
        for im in inner:
            where.append(("train/%s/%s" % (wnid, im.name), m.offset_data + im.offset_data, im.size))
        f.seek(m.offset_data + m.size)
pick = rnd.sample(where, n)
with open(src, "rb") as f, open(out + "/paths.txt", "w") as p, open(out + "/ranges.txt", "w") as r:
    for path, off, size in pick:
        p.write(path + "\n")
        r.write("%d %d\n" % (off, size))
        os.makedirs(os.path.dirname(os.path.join(out, "exploded", path)), exist_ok=True)
        f.seek(off)
        open(os.path.join(out, "exploded", path), "wb").write(f.read(size))
PY
fi

swift_start || exit 1
export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
EP="endpoint=$SWIFT_S3"
swift_mkbucket bench && swift_mkbucket exploded || exit 1
say "uploading the release to s3://bench/imagenet/"
export SWIFT_MAX_TIME=3600	# gigabytes in one PUT
for f in ILSVRC2012_img_train.tar ILSVRC2012_img_val.tar ILSVRC2012_devkit_t12.tar.gz; do
	swift_put bench "imagenet/$f" "$SRC/$f" || { say "upload of $f failed"; exit 1; }
done
# rclone: an S3 remote from environment variables (no config file); an
# AWS_CA_BUNDLE in the environment makes its AWS SDK refuse the transport
unset AWS_CA_BUNDLE
export RCLONE_CONFIG_SWIFT_TYPE=s3 RCLONE_CONFIG_SWIFT_PROVIDER=Other \
	RCLONE_CONFIG_SWIFT_ENDPOINT=$SWIFT_S3 RCLONE_CONFIG_SWIFT_REGION=us-east-1 \
	RCLONE_CONFIG_SWIFT_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY \
	RCLONE_CONFIG_SWIFT_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY RCLONE_CONFIG=/dev/null
say "uploading the $N files as objects to s3://exploded/ (rclone copy)"
rclone copy --transfers 16 "$P/exploded" swift:exploded 2>"$T/rclone-copy.log" ||
	{ cat "$T/rclone-copy.log" >&2; exit 1; }

# ---- 1. the prebuilt index's mount ----
PRE=s3://bench/index/imagenet.sfsidx
t0=$EPOCHREALTIME
TMPDIR=$T "$INSPECT" --save-index="$PRE" -o "$EP,quiet" s3://bench/imagenet/ >"$T/inspect.log" 2>&1 ||
	{ cat "$T/inspect.log" >&2; exit 1; }
row "prebuild: samplefs-inspect --save-index=s3://... (build + upload)" \
	"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f s", b - a }')" \
	"$(grep -o 'uploaded, [0-9.]* MB' "$T/inspect.log")"
mount_secs() {	# RUN: seconds until a cold mount from the prebuilt index is up
	local m=$T/pm$1 t0 i
	mkdir -p "$m"
	t0=$EPOCHREALTIME
	"$SAMPLEFS" -f -o "$EP,index=$PRE,index_only,index_dir=$T/pidx$1" s3://bench/imagenet/ "$m" \
		2>"$T/pm$1.log" &
	SFS_MOUNTS+=("$m")
	SFS_PID_OF[$m]=$!
	SFS_LOG_OF[$m]=$T/pm$1.log
	for ((i = 0; i < 60000; i++)); do
		sfs_mounted "$m" && break
		kill -0 "${SFS_PID_OF[$m]}" 2>/dev/null || { cat "$T/pm$1.log" >&2; return 1; }
		sfs_nap 0.001
	done
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }'
	sfs_umount "$m"
}
for ((r = 1; r <= RUNS; r++)); do
	mount_secs "$r" || exit 1
done >"$T/mounts.txt"
row "mount from the prebuilt index in the bucket, cold (fetch + check + map), median of $RUNS" \
	"$(median <"$T/mounts.txt") s" "target < 2 s; runs: $(tr '\n' ' ' <"$T/mounts.txt")"

# ---- 2. random reads: samplefs, the curl loop, rclone ----
pass_samplefs() {	# RUN: files/s of a fresh mount (saved index), and its GETs
	local m=$T/rm$1 mark line
	sfs_mount s3://bench/imagenet/ "$m" -o "$EP,index_dir=$T/pidx1" || return 1
	mark=$(swift_log_mark)
	line=$("$READER" -t "$THREADS" -p "$m" "$P/paths.txt") || return 1
	echo "$(field files_per_s <<<"$line") $(swift_log_lines "$mark" |
		awk -F'\t' '$1 == "GET" && $2 == "/bench/imagenet/ILSVRC2012_img_train.tar" { n++ } END { print n + 0 }')"
	sfs_umount "$m"
}
pass_curl() {
	"$CURLLOOP" -t "$THREADS" "$SWIFT_S3/bench/imagenet/ILSVRC2012_img_train.tar" "$P/ranges.txt" |
		field files_per_s
}
pass_rclone() {	# RUN: files/s through a fresh rclone mount
	local m=$T/rc$1 i line
	mkdir -p "$m"
	rclone mount --read-only --vfs-cache-mode off swift:exploded "$m" 2>"$T/rc$1.log" &
	SFS_MOUNTS+=("$m")
	SFS_PID_OF[$m]=$!
	for ((i = 0; i < 3000; i++)); do sfs_mounted "$m" && break; sfs_nap 0.02; done
	line=$("$READER" -t "$THREADS" -p "$m" "$P/paths.txt") || return 1
	field files_per_s <<<"$line"
	fusermount3 -u "$m" && wait "${SFS_PID_OF[$m]}" 2>/dev/null
	unset "SFS_PID_OF[$m]"
}
: >"$T/sfs.txt"; : >"$T/curl.txt"; : >"$T/rclone.txt"
for ((r = 1; r <= READ_RUNS; r++)); do	# alternating, so drift hits all three
	pass_samplefs "$r" >>"$T/sfs.txt" || { say "samplefs pass failed"; exit 1; }
	pass_curl >>"$T/curl.txt" || { say "curl loop failed"; exit 1; }
	pass_rclone "$r" >>"$T/rclone.txt" || { say "rclone pass failed"; exit 1; }
done
S=$(cut -d' ' -f1 "$T/sfs.txt" | median) C=$(median <"$T/curl.txt") R=$(median <"$T/rclone.txt")
G=$(cut -d' ' -f2 "$T/sfs.txt" | median)
row "random train JPEGs, $THREADS threads, samplefs (fresh mount, s3://), median of $READ_RUNS" "$S files/s" \
	"runs: $(cut -d' ' -f1 "$T/sfs.txt" | tr '\n' ' ')"
row "the same ranged GETs, curlloop.c, $THREADS threads" "$C files/s" "runs: $(tr '\n' ' ' <"$T/curl.txt")"
row "samplefs / curl loop" "$(awk -v a="$S" -v b="$C" 'BEGIN { printf "%.2fx", a / b }')" "target >= 0.7x"
row "samplefs: GETs of the train tar per file (Swift's log)" \
	"$(awk -v g="$G" -v n="$N" 'BEGIN { printf "%.3f", g / n }')" "target <= 1; $G GETs for $N files"
row "the same files, exploded objects, rclone mount (vfs-cache-mode off)" "$R files/s" \
	"runs: $(tr '\n' ' ' <"$T/rclone.txt")"
row "samplefs / rclone" "$(awk -v a="$S" -v b="$R" 'BEGIN { printf "%.2fx", a / b }')" ""

{
	echo "# bucket bench ($(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD))"
	echo
	echo "Command: \`${BENCH_CMD:-BENCH_QUICK=${BENCH_QUICK:-0} BENCH_RUNS=$RUNS BENCH_READ_RUNS=$READ_RUNS BENCH_N=$N tools/bench/bucketbench.sh}\`;" \
		"data: gen_imagenet.py $IN; $N random files; Swift $(dpkg-query -W -f '${Version}' swift 2>/dev/null)," \
		"rclone $(rclone version 2>/dev/null | head -1 | cut -d' ' -f2); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "| measurement | value | notes |"
	echo "|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
} >"$OUT"
cat "$OUT"
sfs_done >/dev/null
