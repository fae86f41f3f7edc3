#!/usr/bin/env bash
# soak.sh - reads four samplefs mounts hard for SECONDS (default 300) with 16
# threads at random offsets and sizes, checking every byte against oracle
# trees on disk, while sampling the daemons' RSS.
#
#   tools/bench/soak.sh [SECONDS]
#
# Mounts (sources and oracles from tools/bench/soak_data.py, generated once
# into $SOAK_DIR and reused):
#   quickdraw  images + strokes layout             oracle: numpy (qd_oracle.py)
#   imagenet   train/val, /shards/*.tar, /shuffled oracle: imagenet_oracle.py
#   tar        a directory of GNU-tar-made tars    oracle: GNU tar -x
#   sparse     sparse members in every GNU format  oracle: GNU tar -x
# Each mount's tree (names, types, sizes, symlink targets) must equal its
# oracle's; then, while the sources are dropped from the page cache every
# second (so reads take the cold path too), tools/bench/soakread.c reads (see there for the mix) and
# fails on any wrong byte, any error, or VmRSS growth over $SOAK_GROWTH % from
# after its warm-up (every file read once, then $SOAK_WARM s of random reads)
# to the end.  Its reads and bytes figures are the random phase's; wrong
# bytes and errors count the warm-up too.  Every daemon must
# then unmount and exit with status 0 and no sanitizer report in its log.
#
# Environment:
#   SOAK_BUILD=DIR    where samplefs is (default build; build-asan, build-tsan)
#   SOAK_SIZE=small|large   data set size (default large)
#   SOAK_DIR=DIR      generated data (default /var/tmp/samplefs-soak/$SOAK_SIZE)
#   SOAK_RUN=DIR      mounts, index, logs of this run (default: a new temp dir,
#                     removed at the end unless the run failed)
#   SOAK_THREADS=N    reader threads (default 16)
#   SOAK_SPARSE=1|0   the sparse mount: 1 (default) read, 0 left out
#   SOAK_GROWTH=PCT   VmRSS growth limit in % (default 5 for runs of 120 s
#                     and more; 0 = not judged)
#   SOAK_GROWTH_KB=KB VmRSS and RssAnon growth limit in kB (default 32768 for
#                     shorter runs, else 0 = not judged).  Short runs end before malloc's
#                     arenas (one per thread of libfuse's loop and of the
#                     workers) have settled: they grow, slower and slower,
#                     over the first 30-100 s, so a short run can only
#                     catch a leak per read (32 MiB over ~100k reads of a
#                     mount is ~300 bytes a read).  Sanitizer builds: neither
#                     (their RSS holds shadow memory and a quarantine of
#                     freed blocks).
#   SOAK_WARM=S       random reads after the warm-up pass before the RSS
#                     baseline is taken (default SECONDS/10, 2 to 30)
#   SOAK_SEED=N       the reader's seed (default: the time)
# Prints "soak: PASS" or "soak: FAIL <why>" last; exit status 0 only on PASS.
# Every mount is unmounted by the EXIT trap, daemons killed by PID.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
SECONDS_TO_RUN=${1:-300}
BUILD=${SOAK_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLEFS=$BUILD/samplefs
SIZE=${SOAK_SIZE:-large}
DATA=${SOAK_DIR:-/var/tmp/samplefs-soak/$SIZE}
THREADS=${SOAK_THREADS:-16}
SPARSE=${SOAK_SPARSE:-1}
WARM=${SOAK_WARM:-$(( SECONDS_TO_RUN / 10 > 30 ? 30 : SECONDS_TO_RUN / 10 < 2 ? 2 : SECONDS_TO_RUN / 10 ))}
# RSS limits (see SOAK_GROWTH below): sanitizer builds none; short runs a
# bound that catches a leak per read; long runs the 5 % target
if [[ $BUILD == *asan* || $BUILD == *tsan* ]]; then
	GROWTH=${SOAK_GROWTH:-0} GROWTH_KB=${SOAK_GROWTH_KB:-0}
elif [ "$SECONDS_TO_RUN" -lt 120 ]; then
	GROWTH=${SOAK_GROWTH:-0} GROWTH_KB=${SOAK_GROWTH_KB:-32768}
else
	GROWTH=${SOAK_GROWTH:-5} GROWTH_KB=${SOAK_GROWTH_KB:-0}
fi
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66}
SANITIZER_RE='ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:\|WARNING: ThreadSanitizer'

if [ -n "${SOAK_RUN:-}" ]; then
	RUN=$SOAK_RUN
	mkdir -p "$RUN"
else
	RUN=$(mktemp -d /tmp/samplefs-soak.XXXXXX)
fi
declare -A PID_OF
GROUPS_UP=()
FAILED=()

cleanup() {
	local g p i
	[ -n "${EVICT_PID:-}" ] && kill "$EVICT_PID" 2>/dev/null
	for g in "${!PID_OF[@]}"; do
		grep -qs " $RUN/mnt/$g fuse" /proc/mounts &&
			{ fusermount3 -u "$RUN/mnt/$g" 2>/dev/null || fusermount3 -uz "$RUN/mnt/$g"; }
	done
	for p in "${PID_OF[@]}"; do
		kill "$p" 2>/dev/null
		for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -z "${SOAK_RUN:-}" ] && [ ${#FAILED[@]} -eq 0 ] && rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "soak: $*"; }
fail() { say "FAIL $*"; FAILED+=("$*"); }

# listing DIR: type, path, size (files only) and symlink target of
# everything under DIR, sorted
listing() {
	find "$1" -mindepth 1 -printf '%y\t%P\t%s\t%l\n' |
		awk -F'\t' -v OFS='\t' '$1 != "f" { $3 = "" } { print }' | LC_ALL=C sort
}

# mount_group GROUP SOURCE OPTIONS: mounts in the foreground, in the
# background; waits until it is up (an index build may take minutes)
mount_group() {
	local g=$1 mnt=$RUN/mnt/$1 i
	mkdir -p "$mnt"
	"$SAMPLEFS" -f -o "$3,index_dir=$RUN/index" "$2" "$mnt" 2>"$RUN/$g.log" &
	PID_OF[$g]=$!
	for i in $(seq 1 6000); do
		grep -qs " $mnt fuse" /proc/mounts && return 0
		if ! kill -0 "${PID_OF[$g]}" 2>/dev/null; then
			wait "${PID_OF[$g]}"
			say "$g: samplefs exited with status $? before mounting:"
			cat "$RUN/$g.log"
			unset "PID_OF[$g]"
			return 1
		fi
		sleep 0.1
	done
	say "$g: not mounted after 600 s"
	return 1
}

# umount_group GROUP: unmounts, waits for the daemon; its exit status must
# be 0 and its log free of sanitizer reports
umount_group() {
	local g=$1 p=${PID_OF[$1]} i rc
	fusermount3 -u "$RUN/mnt/$g" || { fail "$g: unmount failed"; return; }
	for i in $(seq 1 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	wait "$p"
	rc=$?
	unset "PID_OF[$g]"
	say "daemon $g exit=$rc"
	[ "$rc" -eq 0 ] || fail "$g: daemon exited with status $rc (see $RUN/$g.log)"
	if grep -q "$SANITIZER_RE" "$RUN/$g.log"; then
		grep -m1 -A30 "$SANITIZER_RE" "$RUN/$g.log"
		fail "$g: sanitizer report in $RUN/$g.log"
	fi
}

# tree_check GROUP: the mount lists exactly the oracle's tree
tree_check() {
	local g=$1
	listing "$RUN/mnt/$g" >"$RUN/$g.got"
	listing "$DATA/want/$g" >"$RUN/$g.want"
	if cmp -s "$RUN/$g.got" "$RUN/$g.want"; then
		say "tree $g ok ($(wc -l <"$RUN/$g.want") entries)"
		return 0
	fi
	say "tree $g DIFFERS (< mount, > oracle):"
	diff "$RUN/$g.got" "$RUN/$g.want" | head -20
	return 1
}

[ -x "$SAMPLEFS" ] || { say "FAIL $SAMPLEFS missing (make, make asan or make tsan)"; exit 1; }
cc -O2 -g -Wall -Wextra -D_GNU_SOURCE -o "$RUN/soakread" "$ROOT/tools/bench/soakread.c" -lpthread ||
	{ say "FAIL cannot build soakread"; exit 1; }
say "data in $DATA ($SIZE), run in $RUN, $SAMPLEFS"
"$PY" "$ROOT/tools/bench/soak_data.py" make "$DATA" "$SIZE" || { say "FAIL soak_data.py make"; exit 1; }
rm -rf "$RUN/index"

ARGS=()
while IFS=$'\t' read -r g src opts; do
	[ "$g" = sparse ] && [ "$SPARSE" = 0 ] && { say "sparse: left out (SOAK_SPARSE=0)"; continue; }
	t0=$EPOCHREALTIME
	mount_group "$g" "$DATA/$src" "$opts" || { fail "$g: mount failed"; continue; }
	say "mounted $g in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
	if [ "$g" = imagenet ]; then
		"$PY" "$ROOT/tools/bench/soak_data.py" vtars "$DATA" "$RUN/mnt/$g" |
			sed 's/^/soak: /' || fail "imagenet: shard tars differ from the oracle"
	fi
	tree_check "$g"
	case $? in
	0) ARGS+=("$g" "${PID_OF[$g]}" "$RUN/mnt/$g" "$DATA/want/$g"); GROUPS_UP+=("$g") ;;
	*) fail "$g: the mount's tree differs from the oracle's"; GROUPS_UP+=("$g") ;;
	esac
done <"$DATA/mounts.tsv"

if [ ${#ARGS[@]} -gt 0 ]; then
	"$PY" "$ROOT/tools/bench/soak_data.py" evict "$DATA" &
	EVICT_PID=$!
	"$RUN/soakread" -t "$THREADS" -s "$SECONDS_TO_RUN" -w "$WARM" -g "$GROWTH" -G "$GROWTH_KB" \
		-r "$RUN/rss.tsv" \
		${SOAK_SEED:+-S "$SOAK_SEED"} "${ARGS[@]}" || fail "the reader found wrong bytes, errors or RSS growth"
else
	fail "nothing mounted to read"
fi
if [ -n "${EVICT_PID:-}" ]; then
	kill "$EVICT_PID"
	wait "$EVICT_PID" 2>/dev/null
	EVICT_PID=
fi
say "RSS growth limit after the warm-up: $GROWTH % (0: none), $GROWTH_KB kB (0: none)"
for g in "${GROUPS_UP[@]}"; do
	umount_group "$g"
done
if [ ${#FAILED[@]} -eq 0 ]; then
	say PASS
else
	say "FAIL (${#FAILED[@]}): $(printf '%s; ' "${FAILED[@]}") logs in $RUN"
	exit 1
fi
