#!/usr/bin/env bash
# bench.sh - `make bench`: samplefs against what people do without it
# (explode to one file per sample, extract the tars, squashfuse, archivemount)
# and against the FUSE floor (build/samplefs-floorfs: the least any FUSE
# filesystem can do per file), side by side in one run, medians of
# BENCH_RUNS runs, cold and warm caches.  Writes tools/bench/results.md and
# its charts, docs/bench/*.png (tools/bench/charts.py).
#
#   tools/bench/bench.sh [A] [B] [http] [scale] [stats] [stream] [seq] [shuf] [sums] [rand] [tools] [cold]
#                   parts: A Quick, Draw!, B ImageNet, http mounts over
#                   HTTP, scale mount time, index and RSS against dataset
#                   size, stats the cost of reading stats.json; issue 26's
#                   read path: stream index builds over a 20 ms link and a
#                   faulty store (streambuild.sh), seq shards streamed
#                   (members of ~3 KB, and of 60-160 KB as the real
#                   release's) and warm epochs (seqbench.sh), shuf shuffled shards with
#                   prefetch (shufbench.sh), sums random reads with
#                   and without -o checksums (sumsbench.sh), rand random
#                   samples over S3 and HTTP and a second session thread
#                   (randbench.sh) (default those ten); tools:
#                   du, ls -lR, find over ImageNet only; cold: cold ImageNet
#                   reads only
#   BENCH_QUICK=1   small data and one run, for debugging; the table goes to
#                   $BENCH_DIR/quick/results.md and the charts to
#                   $BENCH_DIR/quick/charts/, not into the repository
#   BENCH_RUNS=N    runs per measurement (default 3)
#   BENCH_POLL=USEC the floor's -o poll, as samplefs' default (50)
#   BENCH_DIR=DIR   generated data, kept between runs (default /var/tmp/samplefs-bench)
#   BENCH_OUT=FILE  where the table goes
#   BENCH_CHARTS=DIR where the charts go
#   BENCH_BUILD=DIR where build/samplefs and build/samplefs-floorfs are
#
# Data is generated once (by the fast numpy generators next to this script)
# and reused; the explode and extract steps are timed on every run.  Cold
# means `sync; echo 3 > /proc/sys/vm/drop_caches` (needs root; without it
# cold rows are skipped).  Every mount is unmounted by the EXIT trap and
# every daemon we started is killed by its PID.  Not a test: it fails only
# when a tool it needs is missing or a reader hits an error.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
PY=/usr/bin/python3
HERE=$ROOT/tools/bench
BUILD=${BENCH_BUILD:-build}		# where make put the binaries
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLEFS=$BUILD/samplefs
FLOORFS=$BUILD/samplefs-floorfs
READER=$BUILD/bench-readfiles

QUICK=${BENCH_QUICK:-0}
POLL=${BENCH_POLL:-50}	# samplefs' default -o poll, given to the floor too
BASE=${BENCH_DIR:-/var/tmp/samplefs-bench}
PARTS=${*:-A B http scale stats stream seq shuf sums rand}
if [ "$QUICK" = 1 ]; then
	DATA=$BASE/quick
	RUNS=${BENCH_RUNS:-1}
	OUT=${BENCH_OUT:-$DATA/results.md}
	CHARTS=${BENCH_CHARTS:-$DATA/charts}
	QD_CLASSES=20 QD_PER=1000
	QD_READ=20000 QD_STROKES=5000
	SLOW_BUILD=60
	SCALE_QD="10 100 1000" SCALE_IN="5 50 500"	# samples per class
	STATS_RUNS=2
	IN_CLASSES=40 IN_PER=500 IN_VAL=1000 IN_FLAT=5 IN_READ=5000 AM_READ=500
	AM_TIMEOUT=60
	HTTP_EPOCH=5
else
	DATA=$BASE
	RUNS=${BENCH_RUNS:-3}
	OUT=${BENCH_OUT:-$HERE/results.md}
	CHARTS=${BENCH_CHARTS:-$ROOT/docs/bench}
	QD_CLASSES=345 QD_PER=3000
	QD_READ=100000 QD_STROKES=20000
	SLOW_BUILD=60
	# ~10k, ~100k and the full ~1M: x 345 classes, x 1000 class tars
	SCALE_QD="30 300 3000" SCALE_IN="10 100 1281"
	STATS_RUNS=5	# issue 19's target: the median of 5 alternating runs
	IN_CLASSES=1000 IN_PER=1281 IN_VAL=50000 IN_FLAT=20 IN_READ=20000
	AM_READ=1000 AM_TIMEOUT=300
	HTTP_EPOCH=10	# whole classes in the sequential epoch at 20 ms
fi
CATEGORIES=/work/shared/data/quickdraw-categories.txt
[ -f "$CATEGORIES" ] || CATEGORIES=$ROOT/../shared/data/quickdraw-categories.txt
MNT=$DATA/mnt
SQ=$DATA/sq
RES=$DATA/results.tsv
LOG=$DATA/bench.log
LISTS=$DATA/lists

MOUNTS=()
PIDS=()
# nginx and the fault proxy of part http: tests/integration/http_lib.sh,
# which runs its servers under $SFS_TMP and stops them from these hooks
SFS_CLEANUP_HOOKS=()
SFS_TMP=
. "$ROOT/tests/integration/http_lib.sh" || exit 1
cleanup() {
	local m p h
	for m in "${MOUNTS[@]}"; do
		is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null ||
			fusermount -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; }
	done
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for h in "${SFS_CLEANUP_HOOKS[@]}"; do
		$h
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '[bench %s] %s\n' "$(date +%T)" "$*" | tee -a "$LOG" >&2; }
rec() { printf 'm\t%s\t%s\n' "$1" "$2" >>"$RES"; say "$1 = $2"; }
fail() { printf 'fail\t%s\t%s\n' "$1" "$2" >>"$RES"; say "FAILED $1: $2"; }
fact() { printf 'fact\t%s\t%s\n' "$1" "$2" >>"$RES"; }
note() { printf 'note\t%s\n' "$1" >>"$RES"; }
usec() { local t=$EPOCHREALTIME; echo "${t/./}"; }
secs_since() { awk -v a="$1" -v b="$(usec)" 'BEGIN { printf "%.4f", (b - a) / 1e6 }'; }
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }

CAN_DROP=0
drop_caches() {
	sync
	[ "$CAN_DROP" = 1 ] && echo 3 >/proc/sys/vm/drop_caches
}

# fs_start MNT TIMEOUT CMD...: starts a FUSE daemon that stays in the
# foreground (CMD has -f), waits until MNT is mounted.  Sets FS_PID and
# FS_SECS (launch to mount, the mount time).  Nonzero if it did not mount.
fs_start() {
	local mnt=$1 timeout=$2 t0
	shift 2
	mkdir -p "$mnt"
	if is_mounted "$mnt"; then
		say "$mnt is already mounted"
		return 1
	fi
	t0=$(usec)
	"$@" >>"$LOG" 2>&1 &
	FS_PID=$!
	PIDS+=("$FS_PID")
	MOUNTS+=("$mnt")
	while ! is_mounted "$mnt"; do
		if ! kill -0 "$FS_PID" 2>/dev/null; then
			say "$1 exited before mounting (see $LOG)"
			return 1
		fi
		if [ $(( $(usec) - t0 )) -gt $((timeout * 1000000)) ]; then
			say "$1 did not mount within $timeout s; killing it"
			kill "$FS_PID"
			wait "$FS_PID" 2>/dev/null
			is_mounted "$mnt" && fusermount3 -u "$mnt"
			return 1
		fi
		sleep 0.005
	done
	FS_SECS=$(secs_since "$t0")
}

# fs_stop MNT: sets FS_HWM (the daemon's VmHWM in KiB: peak resident, mapped
# file pages included) and FS_ANON (RssAnon now: heap and stacks), unmounts,
# waits.
fs_stop() {
	local mnt=$1 i
	FS_HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$FS_PID/status" 2>/dev/null)
	FS_ANON=$(awk '/^RssAnon:/ { print $2 }' "/proc/$FS_PID/status" 2>/dev/null)
	fusermount3 -u "$mnt" 2>/dev/null || fusermount -u "$mnt" 2>/dev/null ||
		umount -l "$mnt"
	for i in $(seq 1 200); do
		kill -0 "$FS_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill "$FS_PID" 2>/dev/null
	wait "$FS_PID" 2>/dev/null
	return 0
}

# samplefs_start SOURCE INDEX_DIR [more -o options]: layout $SFS_LAYOUT
samplefs_start() {
	local src=$1 idx=$2 extra=${3:+,$3}
	fs_start "$MNT" 600 "$SAMPLEFS" -f \
		-o "quiet,layout=$SFS_LAYOUT,index_dir=$idx$extra" "$src" "$MNT"
}

# The floor polls the device as samplefs does (-o poll=$POLL), so "samplefs /
# floor" compares like with like; floor_start_libfuse is the floor on
# libfuse's own multi-threaded loop, for reference.
floor_start() {	# files size per_dir ext
	fs_start "$MNT" 60 "$FLOORFS" -f \
		-o "files=$1,size=$2,per_dir=$3,ext=$4,poll=$POLL" "$MNT"
}
floor_start_libfuse() {	# files size per_dir ext
	fs_start "$MNT" 60 "$FLOORFS" -f \
		-o "files=$1,size=$2,per_dir=$3,ext=$4" "$MNT"
}

# readlist LIST ROOT THREADS [TIMEOUT]: prints files/s; nonzero on any error.
# READER_FLAGS=-l: list each directory first (readfiles -l), as loaders do.
readlist() {
	local out
	out=$(timeout "${4:-900}" "$READER" ${READER_FLAGS:-} -t "$3" -p "$2" "$1" 2>>"$LOG") || {
		say "reader failed on $2 ($1): $out"
		return 1
	}
	echo "$out" >>"$LOG"
	sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p' <<<"$out"
}

# measure KEY LIST ROOT THREADS [TIMEOUT]: reads and records files/s.
measure() {
	local v
	if v=$(readlist "$2" "$3" "$4" "${5:-900}"); then
		rec "$1" "$v"
	else
		fail "$1" "reader error or timeout (see bench.log)"
		return 1
	fi
}

cat_files() { cat "$@" >/dev/null 2>&1; }

# Deleting a tree of 2 M files takes minutes: set it aside, delete at the end.
TRASH=()
trash() {
	[ -e "$1" ] || return 0
	mv "$1" "$1.old.$$" && TRASH+=("$1.old.$$")
}
empty_trash() {
	[ ${#TRASH[@]} -eq 0 ] && return 0
	say "deleting the previous exploded/extracted trees"
	rm -rf "${TRASH[@]}"
}
index_bytes() { du -sb "$1" | awk '{ print $1 }'; }

setup() {
	local t
	mkdir -p "$DATA" "$LISTS" "$MNT"
	: >"$RES"
	say "data in $DATA, $RUNS run(s) per measurement, parts: $PARTS"
	for t in "$SAMPLEFS" "$FLOORFS"; do
		[ -x "$t" ] || { say "missing $t: run make first"; exit 1; }
	done
	cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$READER" "$HERE/readfiles.c" -lpthread ||
		exit 1
	if [ "$(id -u)" = 0 ] && sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
		CAN_DROP=1
	else
		note "not root: could not drop caches, so the cold rows are missing"
	fi
	fact "command" "\`${BENCH_CMD:-BENCH_QUICK=$QUICK BENCH_RUNS=$RUNS tools/bench/bench.sh $PARTS}\`"
	fact "commit" "$(git rev-parse --short HEAD 2>/dev/null) ($(date -u '+%F %H:%M UTC'))"
	fact "machine" "$(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM, kernel $(uname -r), $(df -T "$DATA" | awk 'NR == 2 { print $2 }') on $(df "$DATA" | awk 'NR == 2 { print $1 }')"
	fact "load average at start" "$(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: expect noise)"
	fact "runs" "$RUNS per measurement, median shown with the spread"
}

# ---- A. Quick, Draw! ----------------------------------------------------

qd_source() {	# DIR NCLASSES PER_CLASS
	[ -f "$1/.done" ] && return 0
	say "generating $2 x $3 Quick, Draw! classes in $1"
	rm -rf "$1"
	"$PY" "$HERE/gen_quickdraw.py" "$1" "$CATEGORIES" "$2" "$3" 1 >>"$LOG" &&
		touch "$1/.done"
}

qd_warm() {	# SOURCE INDEX_DIR: drop caches, then read the sources and index
	drop_caches
	cat_files "$1"/numpy_bitmap/* "$1"/sketchrnn/* "$2"/*
}

qd_explode() {	# SOURCE: times the explode step into $DATA/qd-exploded
	local x=$DATA/qd-exploded t0
	rm -rf "$x.new" "$x".old.*
	drop_caches
	t0=$(usec)
	if "$PY" "$HERE/explode_quickdraw.py" "$1" "$x.new" 2 >>"$LOG"; then
		sync
		rec qd.explode_s "$(secs_since "$t0")"
		trash "$x"
		mv "$x.new" "$x"
	else
		fail qd.explode_s "explode_quickdraw.py failed"
	fi
}

# The image directories the cold read touches, as a squashfs image (made once;
# all 345 classes would take mksquashfs a quarter of an hour on 2 CPUs).
# Mounted at $SQ/images so the list's paths work unchanged.
qd_squashfs() {
	local img=$DATA/qd-images.sqfs dirs=() c
	[ -f "$img" ] && return 0	# the explode step is deterministic
	while IFS= read -r c; do
		dirs+=("$DATA/qd-exploded/images/$c")
	done < <(cut -d/ -f2 "$LISTS/qd_images.txt" | uniq)
	say "mksquashfs of the ${#dirs[@]} exploded image classes the cold read touches (once)"
	mksquashfs "${dirs[@]}" "$img.tmp" -no-progress -quiet >>"$LOG" 2>&1 &&
		mv "$img.tmp" "$img"
}

qd_mounts() {	# SOURCE INDEX_DIR: first mount and remount times
	local src=$1 idx=$2 r n=$RUNS
	for r in $(seq 1 "$RUNS"); do
		if [ "$r" -le "$n" ]; then
			rm -rf "$idx"
			drop_caches
			samplefs_start "$src" "$idx" || { fail qd.mount1_cold_s "mount failed"; return 1; }
			rec qd.mount1_cold_s "$FS_SECS"
			# a slow index build is timed once, or the bench takes hours
			[ "$r" = 1 ] && slower "$FS_SECS" "$SLOW_BUILD" && n=1 &&
				note "A: the first mount took more than $SLOW_BUILD s, so it was timed once, cold only"
			fs_stop "$MNT"; build_hwm QD_BUILD_HWM
		fi
		drop_caches
		samplefs_start "$src" "$idx" && rec qd.remount_cold_s "$FS_SECS" && fs_stop "$MNT"
		qd_warm "$src" "$idx"
		samplefs_start "$src" "$idx" && rec qd.remount_warm_s "$FS_SECS" && fs_stop "$MNT"
	done
	if [ "$n" -gt 1 ]; then	# not when the build is slow: the bench would take hours
		rm -rf "$idx"
		qd_warm "$src" "$idx"
		samplefs_start "$src" "$idx" && rec qd.mount1_warm_s "$FS_SECS" && fs_stop "$MNT"
		build_hwm QD_BUILD_HWM
	fi
	[ -n "${QD_BUILD_HWM:-}" ] && rec qd.build_rss_kb "$QD_BUILD_HWM"
	rec qd.index_ratio "$(awk -v i="$(index_bytes "$idx")" -v n="$(qd_npz_bytes "$src")" \
		'BEGIN { printf "%.4f", i / n }')"
}

qd_npz_bytes() {	# SOURCE [CLASSES_FILE]: bytes of the .npz files used
	local c
	while IFS= read -r c; do
		stat -c %s "$1/sketchrnn/$c.npz"
	done <"${2:-$1/classes.txt}" | awk '{ n += $1 } END { print n }'
}

slower() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
build_hwm() { keep_max "$1" "${FS_HWM:-}"; }	# VAR: largest FS_HWM seen
keep_max() {	# VAR VALUE: VAR = max(VAR, VALUE)
	[ -n "$2" ] && [ "$2" -gt "${!1:-0}" ] && printf -v "$1" %s "$2"
	return 0
}


qd_reads() {	# SOURCE INDEX_DIR IMAGE_BYTES STROKE_BYTES
	local src=$1 idx=$2 isz=$3 ssz=$4 x=$DATA/qd-exploded r t
	local il=$LISTS/qd_images.txt fl=$LISTS/floor_images.txt
	local nimg nstr
	nimg=$(wc -l <"$il")
	nstr=$(wc -l <"$LISTS/qd_strokes.txt")
	for r in $(seq 1 "$RUNS"); do
		say "Quick, Draw! reads, run $r"
		if [ "$CAN_DROP" = 1 ]; then
			drop_caches
			measure qd.cold.exploded "$il" "$x" 1
			if fs_start "$SQ/images" 60 squashfuse_ll -f "$DATA/qd-images.sqfs" "$SQ/images"; then
				drop_caches
				measure qd.cold.squashfs "$il" "$SQ" 1
				fs_stop "$SQ/images"
			fi
			if samplefs_start "$src" "$idx"; then
				drop_caches
				measure qd.cold.samplefs "$il" "$MNT" 1
				fs_stop "$MNT"; build_hwm QD_HWM; keep_max QD_ANON "$FS_ANON"
			fi
			if samplefs_start "$src" "$idx" poll=0; then
				drop_caches
				measure qd.cold.samplefs_nopoll "$il" "$MNT" 1
				fs_stop "$MNT"
			fi
			# as the pipeline's loader reads: sorted(glob()) of a
			# class directory, then np.load of each file
			drop_caches
			READER_FLAGS=-l measure qd.cold_listed.exploded "$il" "$x" 1
			if samplefs_start "$src" "$idx"; then
				drop_caches
				READER_FLAGS=-l measure qd.cold_listed.samplefs "$il" "$MNT" 1
				fs_stop "$MNT"
			fi
		fi
		for t in 1 4; do
			qd_warm "$src" "$idx"
			if samplefs_start "$src" "$idx"; then
				measure "qd.first$t.samplefs" "$il" "$MNT" "$t"
				measure "qd.second$t.samplefs" "$il" "$MNT" "$t"
				fs_stop "$MNT"; build_hwm QD_HWM; keep_max QD_ANON "$FS_ANON"
			fi
			drop_caches
			if floor_start "$nimg" "$isz" "$QD_PER" npy; then
				measure "qd.first$t.floor" "$fl" "$MNT" "$t"
				measure "qd.second$t.floor" "$fl" "$MNT" "$t"
				fs_stop "$MNT"
			fi
			drop_caches
			if floor_start_libfuse "$nimg" "$isz" "$QD_PER" npy; then
				measure "qd.first$t.floor_libfuse" "$fl" "$MNT" "$t"
				fs_stop "$MNT"
			fi
			readlist "$il" "$x" "$t" >/dev/null	# warm the exploded tree
			measure "qd.second$t.exploded" "$il" "$x" "$t"
		done
		qd_warm "$src" "$idx"
		if samplefs_start "$src" "$idx"; then
			measure qd.strokes1.samplefs "$LISTS/qd_strokes.txt" "$MNT" 1
			fs_stop "$MNT"; build_hwm QD_HWM; keep_max QD_ANON "$FS_ANON"
		fi
		drop_caches
		if floor_start "$nstr" "$ssz" "$QD_PER" npy; then
			measure qd.strokes1.floor "$LISTS/floor_strokes.txt" "$MNT" 1
			fs_stop "$MNT"
		fi
		drop_caches
		if floor_start_libfuse "$nstr" "$ssz" "$QD_PER" npy; then
			measure qd.strokes1.floor_libfuse "$LISTS/floor_strokes.txt" "$MNT" 1
			fs_stop "$MNT"
		fi
	done
	[ -n "${QD_HWM:-}" ] && rec qd.rss_kb "$QD_HWM"
	[ -n "${QD_ANON:-}" ] && rec qd.anon_kb "$QD_ANON"
}

part_a() {
	local src=$DATA/qd-$QD_PER idx=$DATA/index/qd-$QD_PER sizes isz ssz total
	say "== A. Quick, Draw! ($QD_CLASSES classes x $QD_PER)"
	SFS_LAYOUT=quickdraw
	qd_source "$src" "$QD_CLASSES" "$QD_PER" || { fail qd.explode_s "generator failed"; return 1; }
	sizes=$("$PY" "$HERE/lists.py" qd "$src/manifest.json" "$LISTS" "$QD_READ" "$QD_STROKES" 1) || return 1
	read -r isz ssz total <<<"$sizes"
	fact "A data" "$QD_CLASSES classes x $QD_PER samples = $total samples ($((2 * total)) files); .npy $(du -sh "$src/numpy_bitmap" | cut -f1), .npz $(du -sh "$src/sketchrnn" | cut -f1); image files $isz B, stroke files $ssz B; reads: $(wc -l <"$LISTS/qd_images.txt") image files in gidx order, $(wc -l <"$LISTS/qd_strokes.txt") stroke files in random order"
	qd_explode "$src"
	qd_squashfs || fail qd.cold.squashfs "mksquashfs failed"
	qd_mounts "$src" "$idx"
	qd_reads "$src" "$idx" "$isz" "$ssz"
	note "A: 'gidx order' reads the first $(wc -l <"$LISTS/qd_images.txt") image files (classes in label order); the squashfs image (default gzip) holds the exploded images of just the classes that read touches."
	note "A: the explode step is timed once per bench run; samplefs mounts use a fresh -o index_dir under $DATA/index."
}

# ---- B. ImageNet ------------------------------------------------------------

in_source() {	# [DIR PER_CLASS NVAL]: part B's release unless given
	local d=${1:-$DATA/imagenet} per=${2:-$IN_PER} val=${3:-$IN_VAL}
	[ -f "$d/.done" ] && return 0
	say "generating an ImageNet-sized release ($IN_CLASSES x $per) in $d"
	rm -rf "$d"
	"$PY" "$HERE/gen_imagenet.py" "$d" "$IN_CLASSES" "$per" "$val" "$IN_FLAT" 1 >>"$LOG" &&
		touch "$d/.done"
}

in_warm() {	# INDEX_DIR [SOURCE]: drop caches, then read the sources and index
	drop_caches
	cat_files "${2:-$DATA/imagenet}"/ILSVRC2012_* "$1"/*
}

# The usual recipe: untar the outer tar, untar each class tar into its
# directory and delete it, untar val.
in_extract() {
	local src=$DATA/imagenet x=$DATA/in-extracted t0
	rm -rf "$x.new" "$x".old.*
	mkdir -p "$x.new/train" "$x.new/val"
	drop_caches
	t0=$(usec)
	if (cd "$x.new/train" && tar -xf "$src/ILSVRC2012_img_train.tar" &&
	    for t in *.tar; do
		mkdir -p "${t%.tar}" && tar -xf "$t" -C "${t%.tar}" && rm -f "$t" || exit 1
	    done && tar -xf "$src/ILSVRC2012_img_val.tar" -C ../val && sync); then
		rec in.extract_s "$(secs_since "$t0")"
		trash "$x"
		mv "$x.new" "$x"
	else
		fail in.extract_s "tar failed"
	fi
}


in_mounts() {	# INDEX_DIR MEMBERS
	local src=$DATA/imagenet idx=$1 members=$2 r n=$RUNS c t0
	for r in $(seq 1 "$RUNS"); do
		if [ "$r" -le "$n" ] && [ "$CAN_DROP" = 1 ]; then
			rm -rf "$idx"
			drop_caches
			samplefs_start "$src" "$idx" || { fail in.mount1_cold_s "mount failed"; return 1; }
			rec in.mount1_cold_s "$FS_SECS"
			[ "$r" = 1 ] && slower "$FS_SECS" "$SLOW_BUILD" && n=1 &&
				note "B: the first mount took more than $SLOW_BUILD s, so it was timed once cold and once warm"
			fs_stop "$MNT"; build_hwm IN_BUILD_HWM
		fi
		if [ "$r" -le "$n" ]; then
			rm -rf "$idx"
			in_warm "$idx"
			samplefs_start "$src" "$idx" || { fail in.mount1_warm_s "mount failed"; return 1; }
			rec in.mount1_warm_s "$FS_SECS"
			fs_stop "$MNT"; build_hwm IN_BUILD_HWM
		fi
		in_warm "$idx"
		samplefs_start "$src" "$idx" || continue
		rec in.remount_s "$FS_SECS"
		t0=$(usec)
		c=$(find "$MNT/train" -type f | wc -l)
		rec in.find_s "$(secs_since "$t0")"
		[ "$c" = "$((IN_CLASSES * IN_PER))" ] ||
			note "B: find on samplefs counted $c files, expected $((IN_CLASSES * IN_PER))"
		fs_stop "$MNT"; build_hwm IN_HWM; keep_max IN_ANON "$FS_ANON"
	done
	[ -n "${IN_BUILD_HWM:-}" ] && rec in.build_rss_kb "$IN_BUILD_HWM"
	rec in.index_per_member "$(awk -v i="$(index_bytes "$idx")" -v n="$members" \
		'BEGIN { printf "%.2f", i / n }')"
	find "$DATA/in-extracted/train" -type f | wc -l >/dev/null	# warm
	t0=$(usec)
	find "$DATA/in-extracted/train" -type f | wc -l >/dev/null
	rec in.find_extracted_s "$(secs_since "$t0")"
}

in_reads() {	# INDEX_DIR MEAN_SIZE
	local src=$DATA/imagenet idx=$1 msz=$2 x=$DATA/in-extracted r t
	local l=$LISTS/in_random.txt fl=$LISTS/floor_in.txt n
	n=$(wc -l <"$l")
	for r in $(seq 1 "$RUNS"); do
		say "ImageNet reads, run $r"
		for t in 1 4; do
			in_warm "$idx"
			if samplefs_start "$src" "$idx"; then
				measure "in.first$t.samplefs" "$l" "$MNT" "$t"
				measure "in.second$t.samplefs" "$l" "$MNT" "$t"
				fs_stop "$MNT"; build_hwm IN_HWM; keep_max IN_ANON "$FS_ANON"
			fi
			drop_caches
			if floor_start "$n" "$msz" 1281 JPEG; then
				measure "in.first$t.floor" "$fl" "$MNT" "$t"
				fs_stop "$MNT"
			fi
			drop_caches
			if floor_start_libfuse "$n" "$msz" 1281 JPEG; then
				measure "in.first$t.floor_libfuse" "$fl" "$MNT" "$t"
				fs_stop "$MNT"
			fi
			readlist "$l" "$x" "$t" >/dev/null
			measure "in.second$t.extracted" "$l" "$x" "$t"
		done
		if [ "$CAN_DROP" = 1 ]; then
			in_cold "$idx"
			if samplefs_start "$src" "$idx" poll=0; then
				drop_caches
				measure in.cold.samplefs_nopoll "$l" "$MNT" 1
				fs_stop "$MNT"
			fi
		fi
	done
	# ratarmount is not packaged in Debian and there is no network for pip
	# here, so its ~2,200 files/s is the issue's figure, not a measurement
	rec in.ratarmount_ref 2200
	note "B: ratarmount's 2,200 files/s (1 thread, first pass) is the figure the issue gives; ratarmount is not in Debian's archive, so it is not run here."
	[ -n "${IN_HWM:-}" ] && rec in.rss_kb "$IN_HWM"
	[ -n "${IN_ANON:-}" ] && rec in.anon_kb "$IN_ANON"
}

# archivemount reads a whole archive's headers at mount and does not look
# inside nested tars, so it gets the outer tar (mount time only) and flat.tar,
# the first IN_FLAT classes as one flat tar, for reads; both time-boxed.
in_archivemount() {
	local src=$DATA/imagenet idx=$1 fl=$LISTS/flat_random.txt
	if ! command -v archivemount >/dev/null; then
		note "B: archivemount is not installed"
		return 0
	fi
	drop_caches
	if fs_start "$MNT" "$AM_TIMEOUT" archivemount -f -o readonly "$src/ILSVRC2012_img_train.tar" "$MNT"; then
		rec in.am_outer_mount_s "$FS_SECS"
		fs_stop "$MNT"
	else
		fail in.am_outer_mount_s "did not mount within $AM_TIMEOUT s"
	fi
	drop_caches
	if fs_start "$MNT" "$AM_TIMEOUT" archivemount -f -o readonly "$src/flat.tar" "$MNT"; then
		rec in.am_flat_mount_s "$FS_SECS"
		measure in.am_flat_read "$fl" "$MNT" 1 "$AM_TIMEOUT"
		fs_stop "$MNT"
	else
		fail in.am_flat_mount_s "did not mount within $AM_TIMEOUT s"
	fi
	in_warm "$idx"
	if samplefs_start "$src" "$idx"; then
		measure in.flat_read.samplefs "$fl" "$MNT" 1
		fs_stop "$MNT"
	fi
	note "B: archivemount sees the outer tar's $IN_CLASSES class tars, not the JPEGs inside them; its reads use flat.tar ($IN_FLAT classes x $IN_PER members as train/<wnid>/<member>, $(du -h "$src/flat.tar" | cut -f1)), $(wc -l <"$fl") random members."
}

# Everyday tools over the whole tree (issue 9, item 7): du, ls -lR and
# find -size, each on a fresh mount (nothing in the kernel's caches for
# it: the case that used to take one LOOKUP per file) and again on the same
# mount, against the extracted tree warm; the same files (train/ and val/)
# and the whole mount (shards/ and shuffled/ too: every JPEG twice, as hard
# links), against the extracted tree made whole the same way (whole_tree.py).
# Then find, and the kernel slab it leaves, under the default adaptive
# listings and the kernel's auto, and du under auto (the old default).
tool_run() {	# TOOL PATH...
	local t=$1
	shift
	case $t in
	du) du -sh "$@" >/dev/null ;;
	lsR) ls -lR "$@" >/dev/null ;;
	findsize) find "$@" -size +3k | wc -l >/dev/null ;;
	find) find "$@" -type f | wc -l >/dev/null ;;
	esac
}
tool_time() {	# KEY TOOL PATH...
	local key=$1 t0
	shift
	t0=$(usec)
	tool_run "$@" && rec "$key" "$(secs_since "$t0")"
}
slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }

in_tools() {	# INDEX_DIR
	local idx=$1 x=$DATA/in-extracted r t mode s0
	if [ ! -d "$x/shards" ] && samplefs_start "$DATA/imagenet" "$idx"; then
		"$PY" "$HERE/whole_tree.py" "$MNT" "$x" >/dev/null || fail in.tools.whole "whole_tree.py failed"
		fs_stop "$MNT"
	fi
	for r in $(seq 1 "$RUNS"); do
		say "everyday tools, run $r"
		for t in du lsR findsize; do
			tool_run "$t" "$x/train" "$x/val"	# warm
			tool_time "in.tools.$t.extracted" "$t" "$x/train" "$x/val"
			samplefs_start "$DATA/imagenet" "$idx" || continue
			tool_time "in.tools.$t.samplefs" "$t" "$MNT/train" "$MNT/val"
			tool_time "in.tools.$t.samplefs2" "$t" "$MNT/train" "$MNT/val"
			fs_stop "$MNT"
			tool_run "$t" "$x"	# warm
			tool_time "in.tools.$t.whole_extracted" "$t" "$x"
			samplefs_start "$DATA/imagenet" "$idx" || continue
			tool_time "in.tools.$t.whole" "$t" "$MNT"
			fs_stop "$MNT"
		done
		for mode in adaptive auto; do
			samplefs_start "$DATA/imagenet" "$idx" "readdirplus=$mode" || continue
			s0=$(slab_kb)
			tool_time "in.tools.find.$mode" find "$MNT"
			rec "in.tools.find_slab.$mode" "$(( $(slab_kb) - s0 ))"
			fs_stop "$MNT"
		done
		samplefs_start "$DATA/imagenet" "$idx" readdirplus=auto || continue
		tool_time in.tools.du.auto du "$MNT/train" "$MNT/val"
		fs_stop "$MNT"
	done
	tool_run find "$x"
	tool_time in.tools.find.extracted find "$x"
	note "Everyday tools: 'fresh mount' = the tool is the first thing run on a new mount (saved index, sources in the page cache); the extracted tree is warm (run once untimed first). 'whole mount' also walks shards/ and shuffled/ (each JPEG a second time, as a hard link), against the extracted tree completed the same way by whole_tree.py (hard links, sparse shard tars)."
}

# Cold random ImageNet reads, 1 and 4 threads (as many disk reads in
# flight as readers), samplefs against the extracted tree, alternating,
# then samplefs again on a fresh mount with the members cached (its
# cost without the disk: a cold read adds the disk's wait to it);
# with the disk's reads and KB per file (/proc/diskstats of the disk
# under $DATA), which show what each read pulls in.
data_disk() { lsblk -no PKNAME "$(df --output=source "$DATA" | tail -1)" 2>/dev/null |
	      head -1 | grep . || basename "$(df --output=source "$DATA" | tail -1)"; }
disk_reads() { awk -v d="$(data_disk)" '$3 == d { print $4, $6 }' /proc/diskstats; }
cold_measure() {	# KEY LIST ROOT THREADS
	local r0 s0 r1 s1 n
	read -r r0 s0 < <(disk_reads)
	measure "$@" || return 1
	read -r r1 s1 < <(disk_reads)
	n=$(wc -l <"$2")
	[ -n "$r0" ] && [ -n "$r1" ] || return 0
	rec "$1.ios_per_file" "$(awk -v a="$((r1 - r0))" -v n="$n" 'BEGIN { print a / n }')"
	rec "$1.kb_per_file" "$(awk -v a="$((s1 - s0))" -v n="$n" 'BEGIN { print a * 0.512 / n }')"
}
in_cold() {	# INDEX_DIR
	local src=$DATA/imagenet idx=$1 x=$DATA/in-extracted l=$LISTS/in_random.txt t
	for t in 1 4; do
		drop_caches
		cold_measure "in.cold${t/1/}.extracted" "$l" "$x" "$t"
		if samplefs_start "$src" "$idx"; then
			drop_caches
			cold_measure "in.cold${t/1/}.samplefs" "$l" "$MNT" "$t"
			fs_stop "$MNT"; build_hwm IN_HWM; keep_max IN_ANON "$FS_ANON"
		fi
		# the same reads on a fresh mount with the members now in the
		# page cache: what the cold reads would be with a disk of no latency
		if samplefs_start "$src" "$idx"; then
			measure "in.cold${t/1/}.samplefs_nodisk" "$l" "$MNT" "$t"
			fs_stop "$MNT"
		fi
	done
}

# part B's cold rows alone
part_cold() {
	local r
	SFS_LAYOUT=imagenet
	in_source || { fail in.extract_s "generator failed"; return 1; }
	[ -d "$DATA/in-extracted/train" ] || in_extract
	"$PY" "$HERE/lists.py" in "$DATA/imagenet" "$LISTS" "$IN_READ" "$AM_READ" 1 >/dev/null || return 1
	[ "$CAN_DROP" = 1 ] || { note "cold: cannot drop caches (not root)"; return 0; }
	for r in $(seq 1 "$RUNS"); do
		say "cold reads, run $r"
		in_cold "$DATA/index/imagenet"
	done
}

part_tools() {	# just the everyday tools, on data made by part B
	SFS_LAYOUT=imagenet
	in_source || { fail in.extract_s "generator failed"; return 1; }
	[ -d "$DATA/in-extracted/train" ] || in_extract
	samplefs_start "$DATA/imagenet" "$DATA/index/imagenet" && fs_stop "$MNT"
	in_tools "$DATA/index/imagenet"
}

part_b() {
	local idx=$DATA/index/imagenet sizes msz members
	say "== B. ImageNet ($IN_CLASSES class tars x $IN_PER)"
	SFS_LAYOUT=imagenet
	in_source || { fail in.extract_s "generator failed"; return 1; }
	sizes=$("$PY" "$HERE/lists.py" in "$DATA/imagenet" "$LISTS" "$IN_READ" "$AM_READ" 1) || return 1
	read -r msz members <<<"$sizes"
	fact "B data" "$IN_CLASSES class tars x $IN_PER members = $members train JPEGs (mean $msz B) + $IN_VAL val; train tar $(du -h "$DATA/imagenet/ILSVRC2012_img_train.tar" | cut -f1); reads: $(wc -l <"$LISTS/in_random.txt") random train members"
	in_extract
	in_mounts "$idx" "$((members + IN_VAL))"
	in_reads "$idx" "$msz"
	in_tools "$idx"
	in_archivemount "$idx"
	note "B: index bytes per member = index file size / (train + val members); the floor serves $(wc -l <"$LISTS/in_random.txt") files of the mean member size ($msz B) in random order."
}

# ---- http. Mounts over HTTP: part_http.sh -------------------------------
. "$HERE/part_http.sh"

# ---- scale. Mount time, index size and RSS against dataset size ----------

# Each dataset at a few sizes of the real one's shape (Quick, Draw!'s
# QD_CLASSES classes, ImageNet's IN_CLASSES class tars) with SCALE_QD and
# SCALE_IN samples per class; the largest is part A's or B's own data (made
# once, shared).  For each size, RUNS times: a first mount cold (when caches
# can be dropped) and one with the sources warm, then a warm remount; the
# daemon's VmHWM over the first mounts; once, a remount that reads the random
# stroke files (Quick, Draw!) or train JPEGs (ImageNet) of lists.py, QD_STROKES
# of them, 1 thread, and its VmHWM; the index directory's size.  Keys:
# scale.<qd|in>.<metric>.<samples>; charts.py draws them against samples.

scale_warm() {	# SET SOURCE INDEX_DIR
	case $1 in
	qd) qd_warm "$2" "$3" ;;
	in) in_warm "$3" "$2" ;;
	esac
}

scale_point() {	# SET SAMPLES SOURCE INDEX_DIR LIST
	local set=$1 n=$2 src=$3 idx=$4 list=$5 k=scale.$1 r build=
	for r in $(seq 1 "$RUNS"); do
		if [ "$CAN_DROP" = 1 ]; then
			rm -rf "$idx"
			drop_caches
			samplefs_start "$src" "$idx" || { fail "$k.mount1_cold.$n" "mount failed"; return 1; }
			rec "$k.mount1_cold.$n" "$FS_SECS"
			fs_stop "$MNT"; keep_max build "$FS_HWM"
		fi
		rm -rf "$idx"
		scale_warm "$set" "$src" "$idx"
		samplefs_start "$src" "$idx" || { fail "$k.mount1_warm.$n" "mount failed"; return 1; }
		rec "$k.mount1_warm.$n" "$FS_SECS"
		fs_stop "$MNT"; keep_max build "$FS_HWM"
		scale_warm "$set" "$src" "$idx"
		samplefs_start "$src" "$idx" && rec "$k.remount.$n" "$FS_SECS" && fs_stop "$MNT"
	done
	[ -n "$build" ] && rec "$k.build_rss_kb.$n" "$build"
	rec "$k.index_kb.$n" "$(awk -v b="$(index_bytes "$idx")" 'BEGIN { printf "%.1f", b / 1024 }')"
	samplefs_start "$src" "$idx" || return 1
	if readlist "$list" "$MNT" 1 >/dev/null; then
		fs_stop "$MNT"
		rec "$k.rss_kb.$n" "$FS_HWM"
	else
		fs_stop "$MNT"
		fail "$k.rss_kb.$n" "reader error or timeout (see bench.log)"
	fi
}

part_scale() {
	local per src val l
	say "== scale. Quick, Draw! at $SCALE_QD x $QD_CLASSES, ImageNet at $SCALE_IN x $IN_CLASSES"
	SFS_LAYOUT=quickdraw
	for per in $SCALE_QD; do
		src=$DATA/qd-$per l=$LISTS/scale/qd-$per
		qd_source "$src" "$QD_CLASSES" "$per" || { fail "scale.qd.mount1_warm.$((QD_CLASSES * per))" "generator failed"; continue; }
		mkdir -p "$l"
		"$PY" "$HERE/lists.py" qd "$src/manifest.json" "$l" 0 "$QD_STROKES" 2 >/dev/null || continue
		scale_point qd "$((QD_CLASSES * per))" "$src" "$DATA/index/scale-qd-$per" "$l/qd_strokes.txt"
	done
	SFS_LAYOUT=imagenet
	for per in $SCALE_IN; do
		src=$DATA/imagenet-$per l=$LISTS/scale/in-$per
		val=$(( (IN_VAL * per + IN_PER / 2) / IN_PER ))	# val in proportion
		[ "$per" = "$IN_PER" ] && src=$DATA/imagenet val=$IN_VAL
		in_source "$src" "$per" "$val" || { fail "scale.in.mount1_warm.$((IN_CLASSES * per + val))" "generator failed"; continue; }
		mkdir -p "$l"
		"$PY" "$HERE/lists.py" in "$src" "$l" "$QD_STROKES" 0 2 >/dev/null || continue
		scale_point in "$((IN_CLASSES * per + val))" "$src" "$DATA/index/scale-in-$per" "$l/in_random.txt"
	done
	fact "scale data" "Quick, Draw! $QD_CLASSES classes x {${SCALE_QD// /, }} samples; ImageNet-shaped $IN_CLASSES class tars x {${SCALE_IN// /, }} JPEGs + val in proportion to part B's ($IN_VAL for $IN_PER); samples = images (or train + val members); reads after a remount: $QD_STROKES random stroke files or train JPEGs, 1 thread"
	note "scale: each size's first mounts are timed in each of the $RUNS run(s) (the cold ones only as root); the peak RSS of the first mount is the max over those, the RSS after random reads one remount's VmHWM (mapped index pages included)."
}

# ---- stats. What reading MOUNT/.samplefs/stats.json costs the reads --------

# tools/bench/statsbench.sh, the one implementation of the measurement, on
# part B's release and its random list (the bench's random-read workload,
# 4 threads): STATS_RUNS alternating pairs of fresh mounts without and with
# stats.json read 10 times a second; it adds the stats.without and
# stats.with lines to results.tsv.
part_stats() {
	local idx=$DATA/index/imagenet
	say "== stats. stats.json read 10 times a second during random ImageNet reads"
	in_source || { fail stats.with "generator failed"; return 1; }
	"$PY" "$HERE/lists.py" in "$DATA/imagenet" "$LISTS" "$IN_READ" "$AM_READ" 1 >/dev/null || return 1
	in_warm "$idx"
	if ! BUILD=$BUILD STATS_RUNS=$STATS_RUNS STATS_THREADS=4 STATS_TSV=$RES 		bash "$HERE/statsbench.sh" "$DATA/imagenet" "$LISTS/in_random.txt" 			"layout=imagenet,index_dir=$idx" >>"$LOG" 2>&1; then
		fail stats.with "statsbench.sh failed (see bench.log)"
		return 1
	fi
	note "stats: tools/bench/statsbench.sh on part B's release: $STATS_RUNS pairs of fresh mounts (saved index, sources warm), without and with a bash loop reading MOUNT/.samplefs/stats.json every 0.1 s, the order alternating; each reads the $(wc -l <"$LISTS/in_random.txt") random train JPEGs of part B with 4 threads."
}

# Issue 26's parts: each script measures its own anchors side by side
# (curl through the same proxy, the same shards as files and the FUSE
# floor, the extracted tree), alternating, and writes its own table; the
# bench's log keeps their output and results.md points at it.
part_script() {	# NAME SCRIPT ARGS...: runs SCRIPT with this bench's build
	local name=$1 script=$2 log=$BASE/$1.log; shift 2
	say "== $name: tools/bench/$script $*"
	if ! SAMPLEFS_BUILD=$BUILD SEQ_BUILD=$BUILD SHUF_BUILD=$BUILD \
		bash "$HERE/$script" "$@" >"$log" 2>&1; then
		fail "$name" "$script failed (see $log)"
		return 1
	fi
	note "$name: tools/bench/$script $* (its table: $log; docs/benchmarks.md has the numbers with their commit)"
}

setup
case " $PARTS " in *" A "*) part_a ;; esac
case " $PARTS " in *" B "*) part_b ;; esac
case " $PARTS " in *" http "*) part_http ;; esac
case " $PARTS " in *" scale "*) part_scale ;; esac
case " $PARTS " in *" stats "*) part_stats ;; esac
case " $PARTS " in *" tools "*) part_tools ;; esac
case " $PARTS " in *" cold "*) part_cold ;; esac
case " $PARTS " in *" stream "*) part_script stream streambuild.sh "$RUNS" "0.2 0.6" ;; esac
case " $PARTS " in *" seq "*)
	part_script seq seqbench.sh
	SEQ_MEMBER_KB=60-160 SEQ_PIPE=2097152 part_script seq-110k seqbench.sh ;;
esac
case " $PARTS " in *" shuf "*) part_script shuf shufbench.sh ;; esac
case " $PARTS " in *" sums "*) part_script sums sumsbench.sh ;; esac
case " $PARTS " in *" rand "*) BENCH_RUNS=$RUNS part_script rand randbench.sh s3 http sessions ;; esac
"$PY" "$HERE/table.py" "$RES" "$OUT" && say "results in $OUT"
mkdir -p "$CHARTS" && "$PY" "$HERE/charts.py" "$RES" "$CHARTS" && say "charts in $CHARTS"
empty_trash
