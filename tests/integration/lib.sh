# Shared helpers for integration tests (sourced).  Each test script:
#   . "$(dirname "$0")/lib.sh"; sfs_setup; ... sfs_mount SRC MNT [opts]; check NAME cmd...; sfs_done
# Every mount is recorded and unmounted by an EXIT trap, even on failure;
# daemons we started are killed by PID if unmount fails.
set -u
SFS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SAMPLEFS_BUILD=${SAMPLEFS_BUILD:-build}
# SFS_BIN: the build's directory, SAMPLEFS_BUILD as given when absolute
# (make bench gives it so), else under the repository
case $SAMPLEFS_BUILD in /*) SFS_BIN=$SAMPLEFS_BUILD ;; *) SFS_BIN=$SFS_ROOT/$SAMPLEFS_BUILD ;; esac
SAMPLEFS=${SAMPLEFS:-$SFS_BIN/samplefs}
PY=/usr/bin/python3
SFS_MOUNTS=()
SFS_PIDS=()
# commands sfs_cleanup runs after the mounts are gone and before $SFS_TMP is
# removed: servers a test started (http_lib.sh adds http_cleanup)
SFS_CLEANUP_HOOKS=()
declare -A SFS_PID_OF SFS_LOG_OF
SFS_PASS=0
SFS_FAIL=0

sfs_cleanup() {
	local m p i h
	for m in "${SFS_MOUNTS[@]}"; do
		grep -q " $m fuse" /proc/mounts 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null; }
	done
	# only daemons not yet seen to exit (sfs_umount unregisters them), so
	# a recycled PID is never signalled
	for p in "${SFS_PID_OF[@]}"; do
		kill "$p" 2>/dev/null
	done
	# and waited for (bounded), so none outlives the test or writes into
	# $SFS_TMP while it is removed
	for p in "${SFS_PID_OF[@]}"; do
		for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for h in "${SFS_CLEANUP_HOOKS[@]}"; do
		$h
	done
	[ -n "${SFS_TMP:-}" ] && [ -d "$SFS_TMP" ] && rm -rf "$SFS_TMP"
}

sfs_setup() {
	SFS_TMP=$(mktemp -d /tmp/sfs-test.XXXXXX)
	export XDG_CACHE_HOME=$SFS_TMP/cache
	trap 'sfs_cleanup' EXIT
	trap 'exit 130' INT TERM
	mkfifo "$SFS_TMP/nap"	# nobody writes to it: sfs_nap's clock
}

# sfs_nap SECONDS: sleeps (fractions too) without starting a process, for
# polling loops that run hundreds of times a test
sfs_nap() {
	# a timed-out read returns more than 128; anything else (no FIFO) sleeps
	read -r -t "$1" <>"$SFS_TMP/nap" 2>/dev/null
	[ $? -gt 128 ] || sleep "$1"
}

# sfs_shared NAME FUNC [ARGS...]: fixtures FUNC ARGS... DIR writes into
# DIR, made once and hard-linked into $SFS_TMP (which keeps their inodes
# and mtimes; FUNC's output goes to stderr).  Under run_all.sh
# ($SFS_FIXTURES) DIR is $SFS_FIXTURES/shared/NAME, made by the first test
# run that asks (the plain or the ASan one) under a lock the other waits
# on; alone, DIR is in $SFS_TMP.  The files are shared: a test that damages
# one writes a copy (cp without -l), never the file in place.
sfs_shared() {
	local name=$1 dir; shift
	if [ -n "${SFS_FIXTURES:-}" ]; then
		dir=$SFS_FIXTURES/shared/$name
		mkdir -p "$SFS_FIXTURES/shared" || return 1
		(
			flock 9 || exit 1
			[ -e "$dir.done" ] && exit 0
			rm -rf "$dir" && mkdir "$dir" && "$@" "$dir" >&2 && touch "$dir.done"
		) 9>"$dir.lock" || { echo "    sfs_shared $name: $* failed" >&2; return 1; }
	else
		dir=$SFS_TMP/shared-$name
		mkdir "$dir" && "$@" "$dir" >&2 ||
			{ echo "    sfs_shared $name: $* failed" >&2; return 1; }
	fi
	cp -al "$dir"/. "$SFS_TMP"/ 2>/dev/null || cp -a --remove-destination "$dir"/. "$SFS_TMP"/
}

# sfs_mounted MNT: MNT is a FUSE mount now (read by the shell, no process)
sfs_mounted() {
	local all
	read -r -d '' all </proc/mounts
	[[ $all == *" $1 fuse"* ]]
}

# sfs_mount SRC MNT [samplefs args...]: mounts in the foreground in the
# background (-f), waits until the mount is up, records it for cleanup.
# Daemon stderr goes to $SFS_TMP/daemon-<n>.log.  Returns nonzero if it fails.
sfs_mount() {
	local src=$1 mnt=$2; shift 2
	local log=$SFS_TMP/daemon-${#SFS_PIDS[@]}.log i
	mkdir -p "$mnt"
	SFS_MOUNTS+=("$mnt")
	"$SAMPLEFS" -f "$@" "$src" "$mnt" 2>"$log" &
	local pid=$!
	SFS_PIDS+=("$pid")
	SFS_PID_OF[$mnt]=$pid
	SFS_LOG_OF[$mnt]=$log
	# every 20 ms, for 60 s: a mount takes from a few ms to seconds
	for ((i = 0; i < 3000; i++)); do
		sfs_mounted "$mnt" && return 0
		kill -0 "$pid" 2>/dev/null || {
			# reaped here, so cleanup never signals a recycled PID
			wait "$pid" 2>/dev/null; unset "SFS_PID_OF[$mnt]"
			cat "$log" >&2; return 1; }
		sfs_nap 0.02
	done
	echo "mount of $src did not come up" >&2
	cat "$log" >&2
	return 1
}

# sfs_umount MNT: unmounts and waits for the daemon sfs_mount started on
# MNT to exit; fails on any sanitizer report in the daemon's log.
sfs_umount() {
	local mnt=$1
	local pid=${SFS_PID_OF[$mnt]:-} log=${SFS_LOG_OF[$mnt]:-/dev/null}
	fusermount3 -u "$mnt" || return 1
	[ -n "$pid" ] || return 0
	# the daemon is this shell's child: wait returns as it exits (a daemon
	# that never does is stopped by run_all.sh's timeout of the test)
	wait "$pid" 2>/dev/null
	local rc=$?
	unset "SFS_PID_OF[$mnt]"
	if grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:' "$log"; then
		cat "$log" >&2
		return 1
	fi
	return $rc
}

# sfs_log MNT: the daemon log of the mount sfs_mount made on MNT
sfs_log() {
	echo "${SFS_LOG_OF[$1]}"
}

# sfs_evict PATH...: writes back and drops from the page cache each file
# PATH, and every file under each directory PATH (a mount point: the kernel
# keeps the pages of files read through FUSE too).  Fails unless fincore(1)
# agrees nothing of all those files is left, so the reads that follow reach
# samplefs and take its cold path (a no-wait read fails, a worker waits).
# POSIX_FADV_DONTNEED is advice (a page under writeback stays), so it tries
# a few times before saying the files could not be made cold.
sfs_evict() {
	local try left list=$SFS_TMP/evict.list
	command -v fincore >/dev/null || { echo "    fincore missing (util-linux-extra)"; return 1; }
	for try in 1 2 3 4 5; do
		"$PY" -c 'import os, sys
def drop(p):
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    sys.stdout.write(p + "\0")
os.sync()
for p in sys.argv[1:]:
    if not os.path.isdir(p):
        drop(p)
        continue
    for d, _, names in os.walk(p):
        for n in names:
            q = os.path.join(d, n)
            if os.path.isfile(q) and not os.path.islink(q):
                drop(q)' "$@" >"$list" || return 1
		left=$(xargs -0 -r fincore -nb -o RES <"$list" | awk '{ s += $1 } END { print s + 0 }')
		[ "$left" = 0 ] && return 0
		sleep 0.2
	done
	echo "    still cached after eviction: $left bytes"
	return 1
}

# same_or_eio FILE WANT: FILE reads as WANT's bytes, or its read fails with
# EIO -- all a file read before its source changed may give, since the
# kernel keeps or drops its cached pages as it likes.  It is read once.
same_or_eio() {
	local got=$SFS_TMP/same_or_eio.out err=$SFS_TMP/same_or_eio.err
	if cat "$1" >"$got" 2>"$err"; then
		cmp -s "$got" "$2"
	else
		grep -q 'Input/output error' "$err"
	fi
}

# sfs_same_mounts A B: the same names, types and sizes under A and B (two
# mounts of one layout from different sources), then the same bytes
sfs_same_mounts() {
	diff <(cd "$1" && find . -printf '%p %y %s\n' | sort) \
	     <(cd "$2" && find . -printf '%p %y %s\n' | sort) | head -5 | sed 's/^/    /'
	[ "${PIPESTATUS[0]}" -eq 0 ] || return 1
	diff -r "$1" "$2" | head -5 | sed 's/^/    /'
	[ "${PIPESTATUS[0]}" -eq 0 ]
}

# expect_fail PATTERN CMD...: CMD fails, its stderr matches PATTERN, and
# it holds no sanitizer report
expect_fail() {
	local pat=$1 err; shift
	if err=$("$@" 2>&1); then
		echo "    unexpectedly succeeded: $*"
		return 1
	fi
	if grep -q 'Sanitizer\|runtime error:' <<<"$err"; then
		echo "$err" | head -30
		return 1
	fi
	grep -q "$pat" <<<"$err" || { echo "    $*: $err"; return 1; }
}

# inodes_in_scheme MNT: the inodes under MNT are distinct but for hard
# links (a file is named as many times as its st_nlink says), and none is of
# the kind core/layouts/layout.h reserves for the control directory (top
# byte 0xff, from 0xff << 56 = 18374686479671623680 up).  Compared as
# strings: awk's numbers lose the low digits of 64-bit values.
inodes_in_scheme() {
	find "$1" -printf '%i %y %n\n' | awk '
		{ seen[$1]++; type[$1] = type[$1] $2; links[$1] = $3 }
		length($1) == 20 && $1 >= "18374686479671623680" {
			print "    inode " $1 " is in the reserved range"; bad = 1 }
		END {
			for (i in seen)
				if (type[i] ~ /^f+$/ ? seen[i] != links[i] : seen[i] > 1) {
					print "    inode " i " " seen[i] " times (" type[i] ", nlink " links[i] ")"
					bad = 1
				}
			exit bad
		}'
}

# check NAME CMD...: runs CMD, records pass/fail.
check() {
	local name=$1; shift
	if "$@"; then
		SFS_PASS=$((SFS_PASS + 1)); echo "ok - $name"
	else
		SFS_FAIL=$((SFS_FAIL + 1)); echo "not ok - $name"
		# run_all.sh repeats these at the end, where a truncated log still shows them
		[ -n "${SFS_FAILURES:-}" ] && echo "$(basename "$0") ($SAMPLEFS_BUILD): not ok - $name" >> "$SFS_FAILURES"
		return 1	# as when run alone: `check ... || return` stops there
	fi
}

sfs_done() {
	[ -n "${SFS_RESULTS:-}" ] && echo "$SFS_PASS $SFS_FAIL" >> "$SFS_RESULTS"
	echo "$SFS_PASS passed, $SFS_FAIL failed"
	[ "$SFS_FAIL" -eq 0 ]
}
