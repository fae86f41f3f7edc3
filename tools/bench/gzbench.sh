#!/usr/bin/env bash
# gzbench.sh - gzip sources (core/io/zsource.c): an ImageNet-shaped train
# tar (gen_imagenet.py, as bench.sh's part B) compressed with `gzip -6`,
# mounted with layout=tar (its class tars expanded), against ISA-L's
# `igzip -dc` and python3-indexed-gzip on the same file in the same run.
#
#   tools/bench/gzbench.sh
#   BENCH_QUICK=1   40 classes x 500 (20 k members), else 1000 x 1281 (1.28 M)
#   BENCH_DIR=DIR   data, kept between runs (default /var/tmp/samplefs-gzbench)
#   BENCH_BUILD=DIR where samplefs is (default build)
#
# Prints a table (markdown) of: igzip -dc cold and warm; the first mount
# (the pass, the tar index) cold and warm, with and without
# SAMPLEFS_INFLATE=zlib; the remount; every member in tar order (1
# thread); 4000 random JPEGs warm with 1 and 4 threads, and the same
# members through indexed_gzip (python3-indexed-gzip, zran-based: the
# anchor, as ratarmount is not in Debian); the access points' size over
# the uncompressed size; the daemon's peak RSS.  Cold = drop_caches (root).
# Not a test: it fails only when a tool is missing or a read fails.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tools/bench
PY=/usr/bin/python3
BUILD=${BENCH_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLEFS=$BUILD/samplefs
READER=$BUILD/bench-readfiles
BASE=${BENCH_DIR:-/var/tmp/samplefs-gzbench}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	D=$BASE/quick; CLASSES=40; PER=500; NREAD=4000
else
	D=$BASE/full; CLASSES=1000; PER=1281; NREAD=4000
fi
MNT=$D/mnt IDX=$D/index
mkdir -p "$D" "$MNT"
for t in igzip gzip pigz; do
	command -v $t >/dev/null || { echo "gzbench: $t missing (tools/deps.sh)"; exit 1; }
done
[ -x "$SAMPLEFS" ] || { echo "gzbench: build $SAMPLEFS first (make)"; exit 1; }
cc -O2 -Wall -D_GNU_SOURCE -o "$READER" "$HERE/readfiles.c" -lpthread || exit 1
SPANS=$BUILD/bench-gzspans FLOORFS=$BUILD/samplefs-floorfs
cc -O2 -Wall -D_GNU_SOURCE -o "$SPANS" "$HERE/gzspans.c" -lisal -lz -lpthread || exit 1
[ -x "$FLOORFS" ] || { echo "gzbench: build $FLOORFS first (make)"; exit 1; }
PID=
trap '[ -n "$PID" ] && { fusermount3 -u "$MNT" 2>/dev/null; kill "$PID" 2>/dev/null; wait "$PID"; }' EXIT

cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "    (cannot drop caches: not cold)"; }
usec() { local t=$EPOCHREALTIME; echo "${t/./}"; }
since() { awk -v a="$1" -v b="$(usec)" 'BEGIN { printf "%.2f", (b - a) / 1e6 }'; }
row() { printf '| %s | %s |\n' "$1" "$2"; }

# the data
TAR=$D/ILSVRC2012_img_train.tar GZ=$D/train.tar.gz
if [ ! -f "$GZ" ]; then
	"$PY" "$HERE/gen_imagenet.py" "$D/gen" "$CLASSES" "$PER" 10 1 1 >/dev/null || exit 1
	mv "$D/gen/ILSVRC2012_img_train.tar" "$TAR" && rm -rf "$D/gen"
	gzip -6 -c "$TAR" >"$GZ" || exit 1
fi
USIZE=$(stat -c %s "$TAR") CSIZE=$(stat -c %s "$GZ")

# cpu_of PID: its user + system CPU seconds so far (/proc/PID/stat)
cpu_of() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}
# mount [VAR=VALUE]: samplefs -f in the background until it serves; sets
# PID, SECS (from the start to the mount serving) and CPU (the daemon's
# CPU seconds by then: on a shared machine, wall times are noisy)
mount_gz() {
	local t0 i
	t0=$(usec)
	env "$@" "$SAMPLEFS" -f -o layout=tar,quiet,index_dir="$IDX" "$GZ" "$MNT" 2>>"$D/log" &
	PID=$!
	for ((i = 0; i < 360000; i++)); do
		grep -qs " $MNT fuse" /proc/mounts && break
		kill -0 "$PID" 2>/dev/null || { echo "gzbench: mount failed (see $D/log)"; exit 1; }
		sleep 0.01
	done
	SECS=$(since "$t0")
	CPU=$(cpu_of "$PID")
}
# floor_mount: floorfs serving order.txt's count of files of the mean size
floor_mount() {
	local i
	"$FLOORFS" -f -o "files=$(wc -l <"$D/floor.txt"),size=$(cat "$D/mean"),per_dir=$PER,ext=JPEG,poll=50" "$MNT" &
	PID=$!
	for ((i = 0; i < 6000; i++)); do
		grep -qs " $MNT fuse" /proc/mounts && return
		sleep 0.01
	done
	echo "gzbench: floorfs did not mount"; exit 1
}
umount_gz() {
	HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status")
	fusermount3 -u "$MNT"; wait "$PID"; PID=
}
# igzip -dc: wall seconds (CPU seconds)
igzip_secs() {
	/usr/bin/time -f "%e (cpu %U + %S)" igzip -dc "$GZ" 2>&1 >/dev/null |
		awk '{ printf "%s (cpu %.2f)", $1, $3 + $5 }'
}

echo "| what | value |"
echo "|---|---|"
row "data" "$CLASSES x $PER members: $USIZE bytes, gzip -6 $CSIZE bytes"
row "command" "\`BENCH_QUICK=${BENCH_QUICK:-0} tools/bench/gzbench.sh\` at $(git -C "$ROOT" rev-parse --short HEAD)"
cold; row "igzip -dc, cold (s)" "$(igzip_secs)"
row "igzip -dc, warm (s)" "$(igzip_secs)"
# the floor of a pass that must stop at deflate block boundaries: zlib's
# own inflate (pigz inflates with zlib; GNU gzip has an inflater of its own)
row "pigz -dc -p1 (zlib inflate), warm (s)" "$(/usr/bin/time -f "%e %U %S" pigz -dc -p1 "$GZ" 2>&1 >/dev/null | awk '{ printf "%s (cpu %.2f)", $1, $2 + $3 }')"
row "gzip -dc, warm (s)" "$(/usr/bin/time -f "%e %U %S" gzip -dc "$GZ" 2>&1 >/dev/null | awk '{ printf "%s (cpu %.2f)", $1, $2 + $3 }')"
for eng in "" SAMPLEFS_INFLATE=zlib; do
	rm -rf "$IDX"; cold; mount_gz $eng
	row "first mount ${eng:-(ISA-L)}, cold (s)" "$SECS (cpu $CPU)"; umount_gz
	rm -rf "$IDX"; mount_gz $eng
	row "first mount ${eng:-(ISA-L)}, warm (s)" "$SECS (cpu $CPU)"; umount_gz
done
mount_gz; row "remount, warm (s)" "$SECS (cpu $CPU)"
row "access points / uncompressed" "$(stat -c %s "$IDX"/gz-*.sfsidx | awk -v u="$USIZE" '{ printf "%.2f %% (%d bytes)", 100 * $1 / u, $1 }')"

# the lists: every member in tar order; NREAD random ones
"$PY" - "$TAR" "$D" "$NREAD" "$PER" <<'EOF'
import random, sys, tarfile
tar, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = []
with tarfile.open(tar) as outer:
    for m in outer:
        f = outer.extractfile(m)
        with tarfile.open(fileobj=f) as inner:
            for x in inner:
                rows.append((m.name[:-4] + "/" + x.name, m.offset_data + x.offset_data, x.size))
open(f"{d}/order.txt", "w").write("".join(r[0] + "\n" for r in rows))
rnd = random.Random(1).sample(rows, min(n, len(rows)))
open(f"{d}/random.txt", "w").write("".join(r[0] + "\n" for r in rnd))
open(f"{d}/random.off", "w").write("".join(f"{r[1]} {r[2]}\n" for r in rnd))
# the floor's tree (floorfs.c): d<k>/<i:06d>.JPEG, per_dir as the classes
per = int(sys.argv[4])
open(f"{d}/floor.txt", "w").write("".join(f"d{i // per}/{i:06d}.JPEG\n" for i in range(len(rows))))
open(f"{d}/mean", "w").write(f"{sum(r[2] for r in rows) // len(rows)}\n")
EOF
rate() { "$READER" -t "$1" -p "$MNT" "$2" | sed -n 's/.*files_per_s=\([0-9.]*\).*MB_per_s=\([0-9.]*\).*/\1 files\/s, \2 MB\/s/p'; }
# indexed_gzip: its index built (s); the same random members read (rate)
igz_build() {
	"$PY" - "$GZ" <<'EOF'
import sys, time, indexed_gzip
t = time.time()
f = indexed_gzip.IndexedGzipFile(sys.argv[1], spacing=1 << 20)
f.build_full_index(); f.export_index(sys.argv[1] + ".igzidx")
print(f"{time.time() - t:.2f}")
EOF
}
igz_random() {
	"$PY" - "$GZ" "$D/random.off" <<'EOF'
import sys, time, indexed_gzip
f = indexed_gzip.IndexedGzipFile(sys.argv[1], spacing=1 << 20, index_file=sys.argv[1] + ".igzidx")
rows = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
t = time.time(); n = 0
for off, size in rows:
    f.seek(off); n += len(f.read(size))
dt = time.time() - t
print(f"{len(rows) / dt:.0f} files/s, {n / dt / 1e6:.1f} MB/s")
EOF
}

# every member in tar order (the remount's), then random members from a
# fresh mount each (the kernel drops a mount's pages at unmount; the
# compressed file stays in the page cache: warm)
c0=$(cpu_of "$PID") t0=$(usec)
r=$(rate 1 "$D/order.txt")
row "every member in tar order, 1 thread" "$r: $(since "$t0") s (daemon cpu $(awk -v a="$c0" -v b="$(cpu_of "$PID")" 'BEGIN { printf "%.2f", b - a }'))"
umount_gz
# the same members from the uncompressed tar through samplefs: its own
# per-file cost, with no inflating (an index of its own is built first)
GZ0=$GZ GZ=$TAR IDX0=$IDX IDX=$D/index-plain
mount_gz; t0=$(usec)
row "every member in tar order from the uncompressed .tar, 1 thread" "$(rate 1 "$D/order.txt"): $(since "$t0") s"
umount_gz; GZ=$GZ0 IDX=$IDX0
floor_mount
t0=$(usec)
r=$(rate 1 "$D/floor.txt")
row "floor: as many files of the mean size through FUSE (floorfs), 1 thread" "$r: $(since "$t0") s"
fusermount3 -u "$MNT"; wait "$PID"; PID=
for t in 1 4; do
	cat "$GZ" >/dev/null; mount_gz
	row "random JPEGs, warm, $t thread(s)" "$(rate "$t" "$D/random.txt")"
	umount_gz
	row "floor: inflate-bound (gzspans), $t thread(s)" "$("$SPANS" -t "$t" "$GZ" "$D/random.off" | sed -n 's/.*files_per_s=\([0-9.]*\).*MB_per_s=\([0-9.]*\).*/\1 files\/s, \2 MB\/s/p')"
done
row "daemon peak RSS (kB)" "$HWM"
row "indexed_gzip: build its index (s)" "$(igz_build)"
row "indexed_gzip: the same random JPEGs, 1 thread" "$(igz_random)"
