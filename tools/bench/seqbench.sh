#!/usr/bin/env bash
# seqbench.sh - big sequential reads and warm epochs (issue 26); not part of
# `make bench` (bench.sh wires it in, or run it alone):
#
#   seq    the ImageNet layout's first SEQ_SHARDS virtual WebDataset shards
#          (shards/train-*.tar) streamed front to back with cat, against the
#          same shards as files on this disk (copied out of a mount once) and
#          against the sequential FUSE floor (samplefs-floorfs serving one
#          file of the same size from memory: the least a FUSE server can do
#          per byte), both FUSE mounts with the same -o readahead; and,
#          warm, the copying floor (floorcopy: the same floor reading its
#          bytes from the shards' files, concatenated and cached, by one
#          pread a READ: the least a server that copies from the page
#          cache does, as samplefs must where a READ cannot be spliced).
#          cold: `sync; echo 3 > drop_caches` before each (samplefs then also
#          loads its index cold; the mount's time is not counted); warm: the
#          sources (and the files) in the page cache, a fresh mount (nothing
#          of it in the kernel's caches); again: a second cat on that mount.
#          user: samplefs with -o readahead=128, the window (and so the
#          READ size) every user but root gets, cold and warm.
#   epoch  a warm second pass with 4 threads (readfiles.c): SEQ_READ random
#          train JPEGs of the same release against the extracted tree, and
#          the first SEQ_READ Quick, Draw! image files (gidx order) against the
#          exploded tree (explode_quickdraw.py); every tree and mount (both
#          mounted at once) read once untimed, then each timed back to back.
#
# Each run measures every contender once, their order rotating from run to
# run (the machine is shared: ratios of neighbours, medians of SEQ_RUNS runs
# with min-max, never one absolute figure), and each FUSE daemon's CPU
# seconds per GB streamed (cpu.*: what it does per byte, less noisy than
# GB/s when other work shares the CPUs).  Writes $SEQ_DIR/results.tsv and
# prints a Markdown table (also $SEQ_DIR/results.md).
#
#   SEQ_DIR=DIR       data (default /var/tmp/samplefs-seqbench: ~4 GB with the
#                     default sizes), generated once and kept
#   SEQ_CLASSES=N SEQ_PER=N  ImageNet classes x JPEGs per class (1000 x 200:
#                     200k JPEGs of ~3 KB, 20 shards of ~49 MB)
#   SEQ_SHARDS=N      shards streamed (default 20, at most 1 GiB: the floor's
#                     file is one buffer)
#   SEQ_READ=N        files per epoch (default 20000)
#   SEQ_REPEAT=N      a timed pass reads that list N times over (default 5)
#   SEQ_QD_PER=N      Quick, Draw! samples per class, 345 classes (default 300)
#   SEQ_MEMBER_KB=LO-HI  members of LO to HI KB, as the real release's JPEGs
#                     (60-160: 110 KB on average; gen_imagenet.py's
#                     GEN_IMAGENET_MEMBER_KB), with defaults of their own: SEQ_DIR
#                     /var/tmp/samplefs-seqbench-LO-HI, 90 x 100 JPEGs in 1 shard
#                     of ~1 GB, part seq
#   SEQ_PIPE=BYTES    adds contender `pipe`: samplefs streaming warm with
#                     /proc/sys/fs/pipe-max-size at BYTES (2097152: what a
#                     1 MiB READ needs to splice, as CAP_SYS_RESOURCE gives
#                     root outside a container), put back after each run and
#                     by the EXIT trap
#   SEQ_RUNS=N        runs (default 5)
#   SEQ_RA=KIB        -o readahead of both FUSE mounts (default: samplefs'
#                     own default, 1024 as root)
#   SEQ_BUILD=DIR     where samplefs and samplefs-floorfs are (default build)
#   SEQ_BEFORE=PATH   another samplefs (e.g. main's build) measured alongside,
#                     with its own defaults, as "before"
#   SEQ_PARTS="seq epoch"
# Needs root (drop_caches, the read-ahead window).  Every mount is unmounted
# by the EXIT trap and every daemon started is killed by its PID.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tools/bench
PY=/usr/bin/python3
BUILD=${SEQ_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLEFS=$BUILD/samplefs
FLOORFS=$BUILD/samplefs-floorfs
BEFORE=${SEQ_BEFORE:-}
MEMBER_KB=${SEQ_MEMBER_KB:-}
if [ -n "$MEMBER_KB" ]; then
	D=${SEQ_DIR:-/var/tmp/samplefs-seqbench-$MEMBER_KB}
	CLASSES=${SEQ_CLASSES:-90} PER=${SEQ_PER:-100} NSHARDS=${SEQ_SHARDS:-1}
	PARTS=${SEQ_PARTS:-seq}
else
	D=${SEQ_DIR:-/var/tmp/samplefs-seqbench}
	CLASSES=${SEQ_CLASSES:-1000} PER=${SEQ_PER:-200} NSHARDS=${SEQ_SHARDS:-20}
	PARTS=${SEQ_PARTS:-seq epoch}
fi
NREAD=${SEQ_READ:-20000}
QD_PER=${SEQ_QD_PER:-300} RUNS=${SEQ_RUNS:-5} REPEAT=${SEQ_REPEAT:-5}
RA=${SEQ_RA:-}
PIPE=${SEQ_PIPE:-}
PIPE_SYSCTL=/proc/sys/fs/pipe-max-size
PIPE_WAS=$(cat "$PIPE_SYSCTL")
CATEGORIES=/work/shared/data/quickdraw-categories.txt
[ -f "$CATEGORIES" ] || CATEGORIES=$ROOT/../shared/data/quickdraw-categories.txt
READER=$D/readfiles
MNT=$D/mnt
MNT2=$D/mnt2
RES=$D/results.tsv
LOG=$D/seqbench.log

PIDS=()
cleanup() {
	local p m
	[ "$(cat "$PIPE_SYSCTL")" = "$PIPE_WAS" ] || echo "$PIPE_WAS" >"$PIPE_SYSCTL"
	for m in "$D/mnt" "$D/mnt2"; do
		grep -qs " $m fuse" /proc/mounts && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '[seqbench %s] %s\n' "$(date +%T)" "$*" | tee -a "$LOG" >&2; }
rec() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RES"; say "run $1: $2 = $3"; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }

[ "$(id -u)" = 0 ] || { echo "seqbench.sh: needs root (drop_caches, read_ahead_kb)" >&2; exit 1; }
for t in "$SAMPLEFS" "$FLOORFS"; do
	[ -x "$t" ] || { echo "seqbench.sh: missing $t: run make first" >&2; exit 1; }
done
mkdir -p "$D" "$MNT" "$MNT2"
: >"$RES"

# up CMD...: a FUSE daemon in the foreground (-f) on $MNT, waited for (60 s)
up() {
	local i
	"$@" >>"$LOG" 2>&1 &
	FS_PID=$!
	PIDS+=("$FS_PID")
	for i in $(seq 1 3000); do
		is_mounted "$MNT" && return 0
		kill -0 "$FS_PID" 2>/dev/null || { say "$1 exited before mounting"; return 1; }
		sleep 0.02
	done
	say "$1 did not mount"
	return 1
}
down() {
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	wait "$FS_PID" 2>/dev/null
}
# the second mount (SEQ_BEFORE's, at $MNT2); its daemon is the caller's to wait for
down2() {
	fusermount3 -u "$MNT2" 2>/dev/null || umount -l "$MNT2"
}
# mount_in BIN [extra -o]: the ImageNet release
mount_in() {
	local ra=${RA:+,readahead=$RA}
	[ "$1" = "$BEFORE" ] && ra=
	up "$1" -f -o "quiet,layout=imagenet,index_dir=$D/idx$ra${2:+,$2}" "$D/imagenet" "$MNT"
}
mount_qd() {
	local ra=${RA:+,readahead=$RA}
	[ "$1" = "$BEFORE" ] && ra=
	up "$1" -f -o "quiet,layout=quickdraw,index_dir=$D/idx$ra" "$D/qd" "$MNT"
}
mount_floor() {	# mount_floor [BACKING]
	up "$FLOORFS" -f -o "files=1,size=$SHARD_BYTES,per_dir=1,ext=tar,poll=50,readahead=${RA:-1024}${1:+,backing=$1}" "$MNT"
}

# GB/s of cat over the files named in $SHARDS under DIR
stream() {
	local dir=$1 t0 t1
	t0=$EPOCHREALTIME
	(cd "$dir" && cat "${SHARDS[@]}" >/dev/null) || { echo 0; return 1; }
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" -v n="$SHARD_BYTES" 'BEGIN { printf "%.3f", n / (b - a) / 1e9 }'
}
# files/s of a pass over LIST under ROOT with 4 threads
pass() {
	timeout 600 "$READER" -t 4 -p "$2" "$1" 2>>"$LOG" |
		sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p'
}

# ---- data ------------------------------------------------------------------

data_in() {
	local i
	if [ ! -f "$D/imagenet/.done" ]; then
		say "generating $CLASSES x $PER ImageNet-shaped JPEGs in $D/imagenet"
		rm -rf "$D/imagenet"
		GEN_IMAGENET_MEMBER_KB=$MEMBER_KB \
			"$PY" "$HERE/gen_imagenet.py" "$D/imagenet" "$CLASSES" "$PER" 2000 0 >>"$LOG" || return 1
		rm -f "$D/imagenet/flat.tar"
		touch "$D/imagenet/.done"
	fi
	SHARDS=()
	for i in $(seq 0 $((NSHARDS - 1))); do
		SHARDS+=("$(printf 'train-%06d.tar' "$i")")
	done
	if [ ! -f "$D/shardfiles/.done" ]; then
		say "copying $NSHARDS shards out of a mount into $D/shardfiles"
		rm -rf "$D/shardfiles" && mkdir -p "$D/shardfiles"
		mount_in "$SAMPLEFS" || return 1
		(cd "$MNT/shards" && cp "${SHARDS[@]}" "$D/shardfiles/") || { down; return 1; }
		down
		touch "$D/shardfiles/.done"
	fi
	SHARD_BYTES=$(cd "$D/shardfiles" && cat "${SHARDS[@]}" | wc -c)
	# the copying floor's file: the shards, one after another
	[ "$(stat -c %s "$D/shards.all" 2>/dev/null)" = "$SHARD_BYTES" ] ||
		(cd "$D/shardfiles" && cat "${SHARDS[@]}" >"$D/shards.all") || return 1
	if [ ! -f "$D/extracted/.done" ]; then
		say "extracting the train tar into $D/extracted"
		rm -rf "$D/extracted" && mkdir -p "$D/extracted/train"
		(cd "$D/extracted/train" && tar -xf "$D/imagenet/ILSVRC2012_img_train.tar" &&
			for f in *.tar; do mkdir "${f%.tar}" && tar -xf "$f" -C "${f%.tar}" && rm "$f" || exit 1; done) ||
			return 1
		touch "$D/extracted/.done"
	fi
	[ -f "$D/in_random.txt" ] || "$PY" - "$D/imagenet/train.txt" "$NREAD" >"$D/in_random.txt" <<'PY'
import random, sys
names = [l.split("\t")[0] for l in open(sys.argv[1])]
random.Random(1).shuffle(names)
print("\n".join(names[:int(sys.argv[2])]))
PY
	repeat "$D/in_random.txt" >"$D/in_epoch.txt"
}

data_qd() {
	if [ ! -f "$D/qd/.done" ]; then
		say "generating 345 x $QD_PER Quick, Draw! samples in $D/qd"
		rm -rf "$D/qd"
		"$PY" "$HERE/gen_quickdraw.py" "$D/qd" "$CATEGORIES" 345 "$QD_PER" 1 >>"$LOG" || return 1
		touch "$D/qd/.done"
	fi
	if [ ! -f "$D/qd-exploded/.done" ]; then
		say "exploding Quick, Draw! into $D/qd-exploded"
		rm -rf "$D/qd-exploded"
		"$PY" "$HERE/explode_quickdraw.py" "$D/qd" "$D/qd-exploded" 2 >>"$LOG" || return 1
		touch "$D/qd-exploded/.done"
	fi
	mkdir -p "$D/qdlists"
	"$PY" "$HERE/lists.py" qd "$D/qd/manifest.json" "$D/qdlists" "$NREAD" 10 1 >/dev/null || return 1
	repeat "$D/qdlists/qd_images.txt" >"$D/qd_epoch.txt"
}
# a list SEQ_REPEAT times over: a timed pass long enough (~0.5 s) to time
repeat() {
	local i
	for i in $(seq 1 "$REPEAT"); do cat "$1"; done
}

# ---- measurements ----------------------------------------------------------

# ticks: the daemon's CPU time so far (user + system, clock ticks)
ticks() {
	awk '{ print $14 + $15 }' "/proc/$FS_PID/stat"
}
# fuse_stream RUN KEY: a stream of $MNT/SUBDIR's shards (SUB, default
# shards), recorded as GB/s and as the daemon's CPU seconds per GB (less
# noisy than GB/s on a loaded machine: what the daemon does per byte)
fuse_stream() {
	local r=$1 k=$2 t0 v
	t0=$(ticks)
	v=$(stream "$MNT/${SUB:-shards}")
	rec "$r" "$k" "$v"
	rec "$r" "cpu.$k" "$(awk -v a="$t0" -v b="$(ticks)" -v n="$SHARD_BYTES" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.3f", (b - a) / hz / (n / 1e9) }')"
}

# seq_one RUN WHO: one contender's cold and warm streams
seq_one() {
	local r=$1 who=$2 bin=$SAMPLEFS
	case $who in
	files)
		drop
		rec "$r" seq.cold.files "$(stream "$D/shardfiles")"
		stream "$D/shardfiles" >/dev/null
		rec "$r" seq.warm.files "$(stream "$D/shardfiles")"
		;;
	floor)
		drop
		mount_floor || return 1
		local all=("${SHARDS[@]}")
		SHARDS=(000000.tar)
		SUB=d0 fuse_stream "$r" seq.cold.floor
		down
		cat "$D/shards.all" >/dev/null
		mount_floor "$D/shards.all" || { SHARDS=("${all[@]}"); return 1; }
		SUB=d0 fuse_stream "$r" seq.warm.floorcopy
		SHARDS=("${all[@]}")
		down
		;;
	pipe)	# root's 1 MiB READs where a pipe may hold them: spliced
		cat "$D/imagenet/ILSVRC2012_img_train.tar" "$D"/idx/* >/dev/null
		echo "$PIPE" >"$PIPE_SYSCTL" || return 1
		# raised while streaming: libfuse grows its pipes on the way
		if mount_in "$bin"; then
			fuse_stream "$r" seq.warm.pipe
			down
		fi
		echo "$PIPE_WAS" >"$PIPE_SYSCTL"
		;;
	samplefs|before|user)
		local o=
		[ "$who" = before ] && bin=$BEFORE
		[ "$who" = user ] && o=readahead=128	# every user's but root's READs
		drop
		mount_in "$bin" $o || return 1
		fuse_stream "$r" "seq.cold.$who"
		down
		cat "$D/imagenet/ILSVRC2012_img_train.tar" "$D"/idx/* >/dev/null
		mount_in "$bin" $o || return 1
		fuse_stream "$r" "seq.warm.$who"
		[ "$who" = user ] || rec "$r" "seq.again.$who" "$(stream "$MNT/shards")"
		down
		;;
	esac
}

# epoch_run RUN KIND: a warm second pass of each contender, back to back in
# rotating order, each mount fresh for the run but read once untimed first
# (so the timed pass is an epoch with everything cached: a second one)
epoch_run() {
	local r=$1 kind=$2 tree list w p1 p2=
	if [ "$kind" = in ]; then
		tree=extracted list=$D/in_epoch.txt root_tree=$D/extracted
	else
		tree=exploded list=$D/qd_epoch.txt root_tree=$D/qd-exploded
	fi
	"mount_$kind" "$SAMPLEFS" || return 1
	p1=$FS_PID
	if [ -n "$BEFORE" ]; then
		MNT=$MNT2 "mount_$kind" "$BEFORE" || { down; return 1; }
		p2=$FS_PID
	fi
	for w in $tree samplefs${BEFORE:+ before}; do
		pass "$list" "$(epoch_root "$w")" >/dev/null
	done
	for w in $(rotate "$r" $tree samplefs${BEFORE:+ before}); do
		rec "$r" "epoch.$kind.$w" "$(pass "$list" "$(epoch_root "$w")")"
	done
	if [ -n "$p2" ]; then
		down2
		wait "$p2" 2>/dev/null
	fi
	FS_PID=$p1
	down
}
epoch_root() {
	case $1 in samplefs) echo "$MNT" ;; before) echo "$MNT2" ;; *) echo "$root_tree" ;; esac
}

# rotate N WORDS...: the words rotated left by N
rotate() {
	local n=$1; shift
	local a=("$@") k
	k=$((n % ${#a[@]}))
	echo "${a[@]:k}" "${a[@]:0:k}"
}

table() {
	"$PY" - "$RES" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, k, v = line.rstrip("\n").split("\t")
    if v:
        runs[k][r] = float(v)
def med(k):
    return statistics.median(runs[k].values()) if runs.get(k) else None
def cell(k, unit):
    if not runs.get(k):
        return "-"
    v = list(runs[k].values())
    return "%.2f %s (%.2f-%.2f, n=%d)" % (med(k), unit, min(v), max(v), len(v)) if unit in ("GB/s", "s/GB") else \
           "%.0f %s (%.0f-%.0f, n=%d)" % (med(k), unit, min(v), max(v), len(v))
def ratio(a, b):
    if not runs.get(a) or not runs.get(b):
        return "-"
    per = [runs[a][r] / runs[b][r] for r in runs[a] if r in runs[b] and runs[b][r]]
    return "%.2fx (runs %.2f-%.2f)" % (med(a) / med(b), min(per), max(per))
print("| measurement | value: median (min-max, runs) | ratio of medians (per-run range) |")
print("|---|---|---|")
rows = [
    ("seq.cold.files", "GB/s", None), ("seq.cold.floor", "GB/s", "seq.cold.files"),
    ("seq.cold.samplefs", "GB/s", "seq.cold.files"), ("seq.cold.before", "GB/s", "seq.cold.files"),
    ("seq.warm.files", "GB/s", None), ("seq.warm.floorcopy", "GB/s", "seq.warm.files"),
    ("seq.warm.samplefs", "GB/s", "seq.warm.files"),
    ("seq.warm.before", "GB/s", "seq.warm.files"),
    ("seq.cold.user", "GB/s", "seq.cold.files"), ("seq.warm.user", "GB/s", "seq.warm.files"),
    ("seq.warm.pipe", "GB/s", "seq.warm.files"),
    ("seq.again.samplefs", "GB/s", "seq.warm.files"), ("seq.again.before", "GB/s", "seq.warm.files"),
    ("epoch.in.extracted", "files/s", None), ("epoch.in.samplefs", "files/s", "epoch.in.extracted"),
    ("epoch.in.before", "files/s", "epoch.in.extracted"),
    ("epoch.qd.exploded", "files/s", None), ("epoch.qd.samplefs", "files/s", "epoch.qd.exploded"),
    ("epoch.qd.before", "files/s", "epoch.qd.exploded"),
    ("cpu.seq.cold.floor", "s/GB", None), ("cpu.seq.warm.floorcopy", "s/GB", "cpu.seq.cold.floor"),
    ("cpu.seq.cold.samplefs", "s/GB", "cpu.seq.cold.floor"),
    ("cpu.seq.cold.before", "s/GB", "cpu.seq.cold.floor"),
    ("cpu.seq.warm.samplefs", "s/GB", "cpu.seq.cold.floor"), ("cpu.seq.warm.before", "s/GB", "cpu.seq.cold.floor"),
    ("cpu.seq.cold.user", "s/GB", "cpu.seq.cold.floor"), ("cpu.seq.warm.user", "s/GB", "cpu.seq.cold.floor"),
    ("cpu.seq.warm.pipe", "s/GB", "cpu.seq.cold.floor"),
]
for k, unit, base in rows:
    if runs.get(k):
        print("| %s | %s | %s |" % (k, cell(k, unit), ratio(k, base) if base else ""))
for k, base in [("seq.cold.samplefs", "seq.cold.floor"), ("seq.warm.samplefs", "seq.cold.floor"),
                ("seq.warm.samplefs", "seq.warm.floorcopy"), ("cpu.seq.warm.samplefs", "cpu.seq.warm.floorcopy"),
                ("seq.warm.user", "seq.warm.floorcopy"), ("cpu.seq.warm.user", "cpu.seq.warm.floorcopy"),
                ("seq.warm.pipe", "seq.cold.floor"), ("seq.warm.pipe", "seq.warm.floorcopy"),
                ("cpu.seq.warm.pipe", "cpu.seq.warm.floorcopy"),
                ("seq.cold.before", "seq.cold.floor"), ("seq.warm.before", "seq.cold.floor"),
                ("seq.cold.samplefs", "seq.cold.before"), ("seq.warm.samplefs", "seq.warm.before"),
                ("cpu.seq.cold.samplefs", "cpu.seq.cold.before"), ("cpu.seq.warm.samplefs", "cpu.seq.warm.before")]:
    if runs.get(k) and runs.get(base):
        print("| %s / %s | | %s |" % (k, base, ratio(k, base)))
PY
}

say "data in $D; $RUNS runs; parts: $PARTS; samplefs $SAMPLEFS${BEFORE:+, before $BEFORE}; commit $(git -C "$ROOT" rev-parse --short HEAD)"
cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$READER" "$HERE/readfiles.c" -lpthread || exit 1
data_in || { say "ImageNet data failed (see $LOG)"; exit 1; }
say "$NSHARDS shards, $SHARD_BYTES bytes"
case " $PARTS " in *" epoch "*) data_qd || { say "Quick, Draw! data failed (see $LOG)"; exit 1; } ;; esac
SEQ_WHO="files floor samplefs user${PIPE:+ pipe}${BEFORE:+ before}"
for r in $(seq 1 "$RUNS"); do
	case " $PARTS " in *" seq "*)
		for w in $(rotate "$r" $SEQ_WHO); do seq_one "$r" "$w" || say "run $r: $w failed"; done ;;
	esac
	case " $PARTS " in *" epoch "*)
		epoch_run "$r" in || say "run $r: ImageNet epoch failed"
		epoch_run "$r" qd || say "run $r: Quick, Draw! epoch failed" ;;
	esac
done
table | tee "$D/results.md"
