#!/usr/bin/env bash
# gzbench.sh - gzip sources (core/io/codecs/zsource.c): an ImageNet-shaped train
# tar (gen_imagenet.py, as bench.sh's part B) compressed with `gzip -6`,
# mounted with layout=tar (its class tars expanded), against ISA-L's
# `igzip -dc` and python3-indexed-gzip on the same file in the same run.
#
#   tools/bench/gzbench.sh
#   BENCH_QUICK=1   40 classes x 500 (20 k members), else 1000 x 1281 (1.28 M)
#   BENCH_DIR=DIR   data, kept between runs (default /var/tmp/samplefs-gzbench)
#   BENCH_BUILD=DIR where samplefs is (default build)
#   RATARMOUNT_SRC=DIR  ratarmount 1.3.0's source (ratarmount/ and core/,
#                   tools/bench/README.md says how): its rows side by side;
#                   without it they say "skipped"
#   RATARMOUNT_RUNS=N   alternating pairs of warm first mounts (default 3)
#   RATARMOUNT_COLD=0   no cold pair of first mounts
#   RATARMOUNT_SPACINGS="16 1"  its seek-point spacings (MiB) for the random
#                   reads: 16 is its default, 1 about samplefs' access points
#   BENCH_ONLY=ratarmount  only the side-by-side rows (igzip, first mounts,
#                   remounts, random reads): no zlib pass, pigz, gzip, tar
#                   order, floorfs or gzspans (it keeps its windows in memory)
#
# Prints a table (markdown) of: igzip -dc cold and warm; the first mount
# (the pass, the tar index) cold and warm, with and without
# SAMPLEFS_INFLATE=zlib; the remount; every member in tar order (1
# thread); 4000 random JPEGs warm with 1 and 4 threads, and the same
# members through indexed_gzip (python3-indexed-gzip, zran-based); the
# access points' size over the uncompressed size; the daemon's peak RSS.
# With RATARMOUNT_SRC, ratarmount 1.3 (pure Python, not in Debian; run from
# its source on Debian's python3-fusepy and python3-indexed-gzip) on the
# same file: first mounts alternating with samplefs', its remount, and the
# same random JPEGs from a fresh mount after samplefs' (ratios in the
# table).  Cold = drop_caches (root).  Not a test: it fails only when a
# tool is missing, a read fails or a mount serves bytes that differ from
# the uncompressed tar's (100 of the random members checked, each mount).
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
ONLY=${BENCH_ONLY:-}
RSRC=${RATARMOUNT_SRC:-} RRUNS=${RATARMOUNT_RUNS:-3} RSPACINGS=${RATARMOUNT_SPACINGS:-16 1}
for t in igzip gzip pigz; do
	command -v $t >/dev/null || { echo "gzbench: $t missing (tools/deps.sh)"; exit 1; }
done
[ -x "$SAMPLEFS" ] || { echo "gzbench: build $SAMPLEFS first (make)"; exit 1; }
cc -O2 -Wall -D_GNU_SOURCE -o "$READER" "$HERE/readfiles.c" -lpthread || exit 1
SPANS=$BUILD/bench-gzspans FLOORFS=$BUILD/samplefs-floorfs
cc -O2 -Wall -D_GNU_SOURCE -o "$SPANS" "$HERE/gzspans.c" -lisal -lz -lpthread || exit 1
[ -x "$FLOORFS" ] || { echo "gzbench: build $FLOORFS first (make)"; exit 1; }
PID= SHIM=
trap '[ -n "$PID" ] && { fusermount3 -u "$MNT" 2>/dev/null; kill "$PID" 2>/dev/null; wait "$PID"; }
      [ -n "$SHIM" ] && rm -rf "$SHIM"' EXIT

# ratarmount: runnable from RATARMOUNT_SRC with Debian's packages only?
# RATAR is empty when not, and SKIP says why
RATAR= SKIP=
if [ -z "$RSRC" ]; then
	SKIP="RATARMOUNT_SRC not set (tools/bench/README.md)"
elif [ ! -f "$RSRC/ratarmount/__main__.py" ] || [ ! -d "$RSRC/core/ratarmountcore" ]; then
	SKIP="no ratarmount/ and core/ratarmountcore/ in $RSRC"
elif ! "$PY" -c 'import fusepy, indexed_gzip' 2>/dev/null; then
	SKIP="python3-fusepy or python3-indexed-gzip missing (tools/deps.sh)"
else
	RATAR=$(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$RSRC/ratarmount/version.py")
	RATAR="$RATAR (ratarmountcore $(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$RSRC/core/ratarmountcore/version.py"))"
	# ratarmount wants mfusepy (PyPI only) and falls back to `import fuse`,
	# then fusepy; 1.3.0 then fails on Debian's fusepy 3.0.1 twice: one
	# `@fuse.overrides` (mfusepy's; ratarmountcore.utils has the same
	# decorator) and readdir's entries, whose attrs are mfusepy's bare
	# st_mode where fusepy wants a dict.  This `fuse` module is fusepy with
	# both filled in, so ratarmount's own code runs unchanged.
	SHIM=$(mktemp -d)
	cat >"$SHIM/fuse.py" <<'EOF'
import sys, fusepy
from ratarmountcore.utils import overrides
fusepy.overrides = overrides
_set_st_attrs = fusepy.set_st_attrs
fusepy.set_st_attrs = lambda st, attrs, use_ns=False: _set_st_attrs(
    st, {'st_mode': attrs} if isinstance(attrs, int) else attrs, use_ns=use_ns)
sys.modules[__name__] = fusepy
EOF
fi

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
# serving T0 LOG: waits until the daemon PID serves MNT; sets SECS (from
# T0 to the mount serving) and CPU (the daemon's CPU seconds by then: on a
# shared machine, wall times are noisy)
serving() {
	local i
	for ((i = 0; i < 360000; i++)); do
		grep -qs " $MNT fuse" /proc/mounts && break
		kill -0 "$PID" 2>/dev/null || { echo "gzbench: mount failed (see $2)"; exit 1; }
		sleep 0.01
	done
	SECS=$(since "$1")
	CPU=$(cpu_of "$PID")
}
# mount_gz [VAR=VALUE]: samplefs -f in the background until it serves
mount_gz() {
	local t0
	t0=$(usec)
	env "$@" "$SAMPLEFS" -f -o layout=tar,quiet,index_dir="$IDX" "$GZ" "$MNT" 2>>"$D/log" &
	PID=$!
	serving "$t0" "$D/log"
}
# ratar_mount SPACING [OPTION...]: ratarmount -f in the background until it
# serves, as layout=tar: class tars mounted (--recursive) at their names
# without .tar (-s); gzip through indexed_gzip with a seek point every
# SPACING MiB of the uncompressed tar; its index (SQLite, with
# indexed_gzip's seek points) in $D/ratar-gsSPACING.index.sqlite (-c: made
# anew)
ratar_mount() {
	local t0 gs=$1
	shift
	t0=$(usec)
	PYTHONPATH="$SHIM:$RSRC/core:$RSRC" "$PY" -m ratarmount -f --recursive -s \
		--use-backend indexed_gzip -gs "$gs" --index-file "$D/ratar-gs$gs.index.sqlite" \
		"$@" "$GZ" "$MNT" >>"$D/ratar.log" 2>&1 &
	PID=$!
	serving "$t0" "$D/ratar.log"
}
# spread: median (N runs, min-max) of the numbers on stdin, one a line
spread() {
	sort -g | awk '{ v[NR] = $1 } END {
		printf "%.2f (%d runs, %.2f-%.2f)", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, NR, v[1], v[NR] }'
}
# ratio A B: A / B, two decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }
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
env=
for v in RATARMOUNT_SRC RATARMOUNT_RUNS RATARMOUNT_SPACINGS RATARMOUNT_COLD BENCH_ONLY; do
	[ -n "${!v:-}" ] && env+="$v=${!v} "
done
row "command" "\`BENCH_QUICK=${BENCH_QUICK:-0} $env""tools/bench/gzbench.sh\` at $(git -C "$ROOT" rev-parse --short HEAD)"
cold; row "igzip -dc, cold (s)" "$(igzip_secs)"
row "igzip -dc, warm (s)" "$(igzip_secs)"
if [ "$ONLY" != ratarmount ]; then
# the floor of a pass that must stop at deflate block boundaries: zlib's
# own inflate (pigz inflates with zlib; GNU gzip has an inflater of its own)
row "pigz -dc -p1 (zlib inflate), warm (s)" "$(/usr/bin/time -f "%e %U %S" pigz -dc -p1 "$GZ" 2>&1 >/dev/null | awk '{ printf "%s (cpu %.2f)", $1, $2 + $3 }')"
row "gzip -dc, warm (s)" "$(/usr/bin/time -f "%e %U %S" gzip -dc "$GZ" 2>&1 >/dev/null | awk '{ printf "%s (cpu %.2f)", $1, $2 + $3 }')"
fi
engines=("" SAMPLEFS_INFLATE=zlib)
[ "$ONLY" = ratarmount ] && engines=("")
for eng in "${engines[@]}"; do
	rm -rf "$IDX"; cold; mount_gz $eng
	row "first mount ${eng:-(ISA-L)}, cold (s)" "$SECS (cpu $CPU)"; umount_gz
	rm -rf "$IDX"; mount_gz $eng
	row "first mount ${eng:-(ISA-L)}, warm (s)" "$SECS (cpu $CPU)"; umount_gz
done
mount_gz; row "remount, warm (s)" "$SECS (cpu $CPU)"
row "access points / uncompressed" "$(stat -c %s "$IDX"/gz-*.sfsidx | awk -v u="$USIZE" '{ printf "%.2f %% (%d bytes)", 100 * $1 / u, $1 }')"
umount_gz

# side by side with ratarmount: RRUNS pairs of warm first mounts, the
# order swapped each run, then one cold pair; samplefs' index made anew
# (rm), ratarmount's too (-c on a removed file).  Its first mount also
# writes indexed_gzip's seek points: a full pass, as samplefs' does.
if [ -z "$RATAR" ]; then
	row "ratarmount 1.3" "skipped: $SKIP"
else
	row "ratarmount" "$RATAR from $RSRC, Debian's python3-fusepy and python3-indexed-gzip ($("$PY" -c 'import indexed_gzip; print(indexed_gzip.__version__)'))"
	: >"$D/fm.samplefs"; : >"$D/fm.ratar"
	fm_samplefs() { rm -rf "$IDX"; mount_gz; echo "$SECS $CPU" >>"$D/fm.samplefs"; umount_gz; }
	fm_ratar() { rm -f "$D/ratar-gs16.index.sqlite"; ratar_mount 16 -c; echo "$SECS $CPU" >>"$D/fm.ratar"; umount_gz; }
	for ((i = 1; i <= RRUNS; i++)); do
		if ((i % 2)); then fm_samplefs; fm_ratar; else fm_ratar; fm_samplefs; fi
	done
	for w in samplefs ratar; do
		eval "fm_${w}_wall=\$(cut -d' ' -f1 <\"\$D/fm.$w\" | spread)"
		eval "fm_${w}_cpu=\$(cut -d' ' -f2 <\"\$D/fm.$w\" | spread)"
	done
	row "first mount, warm, samplefs (s, alternating with ratarmount)" "$fm_samplefs_wall (cpu $fm_samplefs_cpu)"
	row "first mount, warm, ratarmount 1.3 (indexed_gzip, 16 MiB seek points: its default) (s)" "$fm_ratar_wall (cpu $fm_ratar_cpu)"
	row "first mount, warm: ratarmount / samplefs (medians)" "wall $(ratio "${fm_ratar_wall%% *}" "${fm_samplefs_wall%% *}")x, cpu $(ratio "${fm_ratar_cpu%% *}" "${fm_samplefs_cpu%% *}")x"
	if [ "${RATARMOUNT_COLD:-1}" != 0 ]; then
		rm -rf "$IDX"; cold; mount_gz; sw=$SECS sc=$CPU; umount_gz
		rm -f "$D/ratar-gs16.index.sqlite"; cold; ratar_mount 16 -c; rw=$SECS rc=$CPU; umount_gz
		row "first mount, cold: samplefs / ratarmount 1.3 (s)" "$sw (cpu $sc) / $rw (cpu $rc): ratarmount / samplefs wall $(ratio "$rw" "$sw")x, cpu $(ratio "$rc" "$sc")x"
	fi
	ratar_mount 16; row "ratarmount remount (its saved index), warm (s)" "$SECS (cpu $CPU)"; umount_gz
	row "ratarmount index (16 MiB) / uncompressed" "$(stat -c %s "$D/ratar-gs16.index.sqlite" | awk -v u="$USIZE" '{ printf "%.2f %% (%d bytes)", 100 * $1 / u, $1 }')"
	for gs in $RSPACINGS; do
		[ "$gs" = 16 ] && continue
		rm -f "$D/ratar-gs$gs.index.sqlite"; ratar_mount "$gs" -c
		row "ratarmount first mount, warm, $gs MiB seek points (s)" "$SECS (cpu $CPU), index $(stat -c %s "$D/ratar-gs$gs.index.sqlite") bytes"
		umount_gz
	done
fi
mount_gz	# the remount, for the reads in tar order

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
# rate THREADS LIST: "F files/s, M MB/s" through MNT
rate() {
	local out
	out=$("$READER" -t "$1" -p "$MNT" "$2" | sed -n 's/.*errors=0 .*files_per_s=\([0-9.]*\).*MB_per_s=\([0-9.]*\).*/\1 files\/s, \2 MB\/s/p')
	[ -n "$out" ] || { echo "gzbench: reading $2 through $MNT failed" >&2; exit 1; }
	echo "$out"
}
# check_bytes WHAT: the first 100 random members through MNT against the
# uncompressed tar's bytes at the offsets Python's tarfile gave
check_bytes() {
	"$PY" - "$MNT" "$TAR" "$D/random.txt" "$D/random.off" "$1" <<'EOF' || exit 1
import sys
mnt, tar, names, offs, what = sys.argv[1:]
with open(tar, "rb") as t:
    for name, line in list(zip(open(names), open(offs)))[:100]:
        off, size = map(int, line.split())
        t.seek(off)
        if open(f"{mnt}/{name.strip()}", "rb").read() != t.read(size):
            sys.exit(f"gzbench: {what} served {name.strip()} with bytes other than the tar's at {off}")
EOF
}
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
if [ "$ONLY" != ratarmount ]; then
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
else
	umount_gz
fi
# rrow WHAT THREADS: the random JPEGs through the mount: rate, the
# daemon's CPU seconds; then the bytes checked; sets FPS and DCPU (those
# CPU seconds)
rrow() {
	local c0 r
	c0=$(cpu_of "$PID")
	r=$(rate "$2" "$D/random.txt") || exit 1
	DCPU=$(awk -v a="$c0" -v b="$(cpu_of "$PID")" 'BEGIN { printf "%.2f", b - a }')
	row "$1, $2 thread(s)" "$r (daemon cpu $DCPU s)"
	FPS=${r%% *}
	check_bytes "$1"
}
RHWM=0
for t in 1 4; do
	cat "$GZ" >/dev/null; mount_gz
	rrow "random JPEGs, warm" "$t"; sfps=$FPS scpu=$DCPU
	umount_gz; SHWM=$HWM
	[ "$ONLY" = ratarmount ] ||
		row "floor: inflate-bound (gzspans), $t thread(s)" "$("$SPANS" -t "$t" "$GZ" "$D/random.off" | sed -n 's/.*files_per_s=\([0-9.]*\).*MB_per_s=\([0-9.]*\).*/\1 files\/s, \2 MB\/s/p')"
	[ -n "$RATAR" ] || continue
	for gs in $RSPACINGS; do
		cat "$GZ" >/dev/null; ratar_mount "$gs"
		rrow "ratarmount 1.3 ($gs MiB seek points): random JPEGs, warm" "$t"
		umount_gz; ((HWM > RHWM)) && RHWM=$HWM
		row "random JPEGs, warm, $t thread(s): samplefs / ratarmount ($gs MiB)" "files/s $(ratio "$sfps" "$FPS")x; daemon cpu, ratarmount / samplefs $(ratio "$DCPU" "$scpu")x"
	done
done
row "daemon peak RSS (kB)" "$SHWM"
[ -n "$RATAR" ] && row "ratarmount peak RSS serving the random reads (kB)" "$RHWM"
row "indexed_gzip: build its index (s)" "$(igz_build)"
row "indexed_gzip: the same random JPEGs, 1 thread" "$(igz_random)"
