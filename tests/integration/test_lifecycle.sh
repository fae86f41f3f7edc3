#!/usr/bin/env bash
# The daemon's lifecycle as a user meets it: exit status, signals, the
# index directory (issue 9, items 1, 2 and part of 6).
#
#  1. In the background (no -f) the exit status is the mount's: 0 only once
#     it serves.  Refused with a non-zero status, a message saying what to
#     do and nothing mounted: -o max_read, a mount point that is a file,
#     one already mounted (unless -o stack), one a dead daemon left ("run
#     fusermount3 -u"), and a user without access to /dev/fuse (before any
#     index is built: a user created here, in a mount namespace whose
#     /dev/fuse it may not open).
#  2. SIGINT, SIGTERM and SIGHUP during a first mount's index build end
#     it with the signal's status, nothing mounted, no index and no
#     temporary file left, in the foreground and in the background (sent
#     to the command alone, passed on by it), SIGINT ignored at start too
#     (a script's background job), SIGHUP under nohup excepted (issue 16,
#     item 3).  kill -9 of the background command ends its builder the
#     same way; kill -9 of the builder ends the command with 137, and its
#     temporary file is removed by the next build.  The build is made to block, not raced:
#     its source is a file on a second mount whose daemon is stopped (as in
#     test_faults.sh); the signal lands during the build either way.
#  2b. A stop signal sent right after the command starts (issue 25 item
#     5: `samplefs ... & sleep 0.1; kill -INT $!` in a script, SIGINT
#     ignored at start) is heeded, not lost: the command ends within 10 s
#     and nothing stays mounted (130 before the mount serves, 0 after it,
#     as later ones); in the foreground, SIGINT sent by kill once the mount
#     serves unmounts it with status 0.
#  3. An unwritable default index directory (a read-only tmpfs mounted
#     here: chmod does not stop root) gives one warning and a private
#     temporary index, removed at unmount; an unwritable -o index_dir=
#     fails saying so.  Each index path is printed once per mount.
#
# References: mounted bytes are compared with the files GNU tar was given.
# Elapsed times are hang guards, never assertions.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
RO=	# a tmpfs this test mounted
STOPPED=	# a daemon this test stopped
TUSER=	# a user this test created
life_cleanup() {
	[ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null
	[ -n "$RO" ] && umount "$RO" 2>/dev/null
	sfs_cleanup
	[ -n "$TUSER" ] && userdel "$TUSER" 2>/dev/null
}
trap life_cleanup EXIT

# ---- fixtures ----
mkdir -p "$T/files/small/sub"
for i in 1 2 3 4 5; do head -c $((i * 700)) /dev/urandom >"$T/files/small/f$i"; done
echo hello >"$T/files/small/sub/g"
# members enough that a build reads past what one read-ahead brings in
"$PY" - "$T/files/big" <<'PY' || { echo "not ok - fixtures"; SFS_FAIL=1; sfs_done; exit 1; }
import os, sys
d = sys.argv[1]
os.makedirs(d)
for i in range(1500):
    with open('%s/m%04d' % (d, i), 'wb') as f:
        f.write(bytes([i % 251 + 1]) * (1000 + i % 2000))
PY
tar -C "$T/files/small" -cf "$T/small.tar" . &&
	tar -C "$T/files/big" -cf "$T/big.tar" . &&
	mkdir "$T/outer" && for n in $(seq 1 14); do cp "$T/big.tar" "$T/outer/big$n.tar" || exit 1; done &&
	tar -C "$T/outer" -cf "$T/outer.tar" . ||
	{ echo "not ok - GNU tar"; SFS_FAIL=1; sfs_done; exit 1; }

mounts_on() {	# how many mounts sit on $1
	awk -v m="$1" '$2 == m' /proc/mounts | wc -l
}
# bg_fails PATTERN MNT ARGS...: samplefs ARGS in the background (no -f)
# exits non-zero, says PATTERN, leaves the mounts on MNT as they were
bg_fails() {
	local pat=$1 mnt=$2 before out rc; shift 2
	before=$(mounts_on "$mnt")
	SFS_MOUNTS+=("$mnt")	# in case it mounts after all
	out=$(timeout 60 "$SAMPLEFS" "$@" 2>&1); rc=$?
	[ "$rc" -ne 0 ] || { echo "    exit status 0: $out"; return 1; }
	[ "$rc" -ne 124 ] || { echo "    did not exit within 60 s"; return 1; }
	grep -q "$pat" <<<"$out" || { echo "    exit $rc, no '$pat' in: $out"; return 1; }
	grep -q 'Sanitizer\|runtime error:' <<<"$out" && { echo "$out"; return 1; }
	[ "$(mounts_on "$mnt")" = "$before" ] || { echo "    the mounts on $mnt changed"; return 1; }
}
same_file() { cmp "$1" "$2"; }

# ---- 1. exit status in the background ----
M=$T/m
mkdir -p "$M"
check "background mount: exit 0 once it serves" \
	sh -c "timeout 60 '$SAMPLEFS' '$T/small.tar' '$M' && grep -q ' $M fuse' /proc/mounts"
SFS_MOUNTS+=("$M")
check "background mount: serves GNU tar's bytes" same_file "$M/sub/g" "$T/files/small/sub/g"
check "already mounted: refused, says so" bg_fails "already mounted.*-o stack" "$M" "$T/small.tar" "$M"
check "-o stack: mounts over it" sh -c "timeout 60 '$SAMPLEFS' -o stack '$T/small.tar' '$M' && test \$(awk '\$2 == \"$M\"' /proc/mounts | wc -l) = 2"
SFS_MOUNTS+=("$M")
check "unmount both" sh -c "fusermount3 -u '$M' && fusermount3 -u '$M' && test \$(awk '\$2 == \"$M\"' /proc/mounts | wc -l) = 0"
check "-o max_read: refused, says so" bg_fails "max_read" "$M" -o max_read=65536 "$T/small.tar" "$M"
: >"$T/file-mnt"
check "a file as mount point: refused, says so" bg_fails "not a directory" "$T/file-mnt" "$T/small.tar" "$T/file-mnt"
check "a missing mount point: refused" bg_fails "No such file or directory" "$T/nope" "$T/small.tar" "$T/nope"
check "dead mount: mount it" sfs_mount "$T/small.tar" "$M"
kill -9 "${SFS_PID_OF[$M]}"
wait "${SFS_PID_OF[$M]}" 2>/dev/null
unset "SFS_PID_OF[$M]"
check "dead mount: Transport endpoint is not connected" expect_fail "not connected" stat "$M/f1"
check "dead mount: refused, says to run fusermount3 -u" \
	bg_fails "fusermount3 -u $M" "$M" "$T/small.tar" "$M"
check "dead mount: fusermount3 -u clears it" fusermount3 -u "$M"

# A user without access to /dev/fuse: in a private mount namespace a file
# only root may open is bound over /dev/fuse, for this user's process only.
TU=sfs-life-$$
if ! command -v useradd >/dev/null || ! command -v unshare >/dev/null ||
   ! command -v runuser >/dev/null; then
	echo "skipped: no useradd/unshare/runuser: /dev/fuse access as a user without it"
elif [ "$(id -u)" != 0 ]; then
	echo "skipped: not root: cannot create a user for the /dev/fuse access case"
elif ! useradd -M -N -s /bin/sh "$TU"; then
	echo "skipped: useradd $TU failed: /dev/fuse access as a user without it"
else
	TUSER=$TU
	chmod 711 "$T"
	U=$T/user
	mkdir -p "$U/m" "$U/idx" && cp "$T/small.tar" "$U/" && chown -R "$TU" "$U" && chmod 755 "$U"
	install -m 600 /dev/null "$T/nofuse"
	nofuse() {
		local out rc
		out=$(timeout 60 unshare -m --propagation private sh -c '
			mount --bind "$1" /dev/fuse || exit 99
			shift; exec runuser -u "$@"' sh "$T/nofuse" "$TU" -- \
			env ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
			"$SAMPLEFS" -o index_dir="$U/idx" "$U/small.tar" "$U/m" 2>&1); rc=$?
		[ "$rc" -ne 99 ] || { echo "    cannot bind over /dev/fuse: $out"; return 1; }
		[ "$rc" -ne 0 ] || { echo "    exit status 0: $out"; return 1; }
		grep -q "/dev/fuse: Permission denied" <<<"$out" || { echo "    exit $rc: $out"; return 1; }
		! grep -q 'Sanitizer\|runtime error:' <<<"$out" || { echo "$out"; return 1; }
	}
	SFS_MOUNTS+=("$U/m")
	check "no access to /dev/fuse: refused, says so" nofuse
	check "no access to /dev/fuse: said before building an index" \
		sh -c "! ls '$U/idx' | grep -q ."
	check "no access to /dev/fuse: nothing mounted" test "$(mounts_on "$U/m")" = 0
	userdel "$TU" && TUSER=
fi

# ---- 2. signals during an index build ----
MO=$T/mo MB=$T/mb IDX=$T/idx-sig
check "signals: mount the outer tar" sfs_mount "$T/outer.tar" "$MO" -o layout=tar,recursive=0
mkdir -p "$MB" "$IDX"
SFS_MOUNTS+=("$MB")
# build_blocked N [-f]: starts a build of big<N>.tar with its source's
# daemon stopped past the first bytes; sets BPID once the build has begun
# (its temporary file exists).  The signals are at their defaults, as for
# a command typed at a terminal, or as SIGENV sets them (a script's
# background job ignores SIGINT; nohup, SIGHUP).
SIGENV=--default-signal=INT,TERM,HUP
stop_source() {	# N: big<N>.tar's daemon stopped past its first bytes
	rm -f "$IDX"/*	# what a failed case left would pass for this build's
	head -c 65536 "$MO/big$1.tar" >/dev/null && stat "$MO/big$1.tar" >/dev/null || return 1
	STOPPED=${SFS_PID_OF[$MO]}
	kill -STOP "$STOPPED"
}
build_blocked() {
	local n=$1 i; shift
	stop_source "$n" || return 1
	env "$SIGENV" "$SAMPLEFS" "$@" -o layout=tar,index_dir="$IDX" \
		"$MO/big$n.tar" "$MB" 2>"$T/build$n.log" &
	BPID=$!
	for i in $(seq 1 600); do	# a hang guard, not a timing check
		compgen -G "$IDX/tar-*.tmp.*" >/dev/null && return 0
		kill -0 "$BPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "    the build did not begin"; cat "$T/build$n.log"
	return 1
}
# ends SIG WANT_STATUS [PID]: the build, sent SIG (to PID, else to the
# command), then its source's daemon resumed, exits with WANT_STATUS within
# 10 s (a hang guard)
ends() {
	local sig=$1 want=$2 i rc
	kill -"$sig" "${3:-$BPID}"
	kill -CONT "$STOPPED"
	STOPPED=
	for i in $(seq 1 100); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$BPID" 2>/dev/null; then
		echo "    still running 10 s after SIG$sig"
		kill -9 "$BPID"; wait "$BPID" 2>/dev/null
		return 1
	fi
	wait "$BPID"; rc=$?
	[ "$rc" = "$want" ] || { echo "    exit status $rc, expected $want"; cat "$T/build$n.log"; return 1; }
}
nothing_left() {	# no index, no temporary file, no mount
	local left
	# an unwanted mount is unmounted, for the cases after this one
	[ "$(mounts_on "$MB")" = 0 ] || { echo "    mounted"; fusermount3 -u "$MB"; return 1; }
	# the build's checkpoint stays on purpose: the next mount resumes
	# from it (core/index/checkpoint.c, test_build_faults.sh)
	left=$(ls -A "$IDX" | grep -v '\.sfsidx\.ckpt\.[0-9a-f][0-9a-f]$')
	[ -z "$left" ] || { echo "    left in the index directory: $left"; return 1; }
}
# SIG STATUS MODE ENTRY: SIG sent to the command alone (kill PID, as a
# script or a supervisor does); ENTRY is its disposition when the command
# starts: "ignored" as a script's background job (`samplefs ... &`) has
# SIGINT, which shields it from the terminal's Ctrl-C, not from kill
n=1
for case in "INT 130 fg default" "TERM 143 fg default" "HUP 129 fg default" \
	    "INT 130 bg default" "TERM 143 bg default" "HUP 129 bg default" \
	    "INT 130 bg ignored" "INT 130 fg ignored"; do
	read -r sig status mode entry <<<"$case"
	fg=
	[ "$mode" = fg ] && fg=-f
	SIGENV=--default-signal=INT,TERM,HUP
	[ "$entry" = ignored ] && SIGENV=--ignore-signal=$sig
	name="SIG$sig during the build ($mode, $entry at start)"
	if check "$name: the build has begun" build_blocked "$n" $fg; then
		check "$name: exit status $status within 10 s" ends "$sig" "$status"
		check "$name: no index, no temporary file, nothing mounted" nothing_left
		check "$name: it says so" grep -q "interrupted: index build stopped" "$T/build$n.log"
		check "$name: no sanitizer report" sh -c "! grep -q 'Sanitizer\|runtime error:' '$T/build$n.log'"
	else
		[ -n "$STOPPED" ] && kill -CONT "$STOPPED" && STOPPED=
		[ -n "${BPID:-}" ] && kill -9 "$BPID" 2>/dev/null && wait "$BPID" 2>/dev/null
	fi
	n=$((n + 1))
done
SIGENV=--default-signal=INT,TERM,HUP
# kill -9 cannot be caught: its temporary file stays until the next build
if check "kill -9 during the build: the build has begun" build_blocked "$n" -f; then
	ends KILL 137
	check "kill -9 during the build: a temporary file is left" \
		sh -c "ls '$IDX'/tar-*.tmp.* >/dev/null"
	check "kill -9: the next build works" \
		sfs_mount "$MO/big$n.tar" "$MB" -o layout=tar,index_dir="$IDX"
	check "kill -9: the next build removed the leftover, saying so" \
		grep -q "removed: an unfinished index no process is writing" "$(sfs_log "$MB")"
	check "kill -9: only the index is left" \
		sh -c "test \"\$(ls -A '$IDX')\" = \"\$(cd '$IDX' && ls *.sfsidx)\""
	check "kill -9: the remount serves GNU tar's bytes" same_file "$MB/m0777" "$T/files/big/m0777"
	check "kill -9: unmount" sfs_umount "$MB"
else
	[ -n "$STOPPED" ] && kill -CONT "$STOPPED" && STOPPED=
fi
n=$((n + 1))
# under nohup (SIGHUP ignored at start) a hangup does not stop the build
SIGENV=--ignore-signal=HUP
if check "SIGHUP under nohup: the build has begun" build_blocked "$n"; then
	check "SIGHUP under nohup: ignored, the mount comes up (exit 0)" ends HUP 0
	check "SIGHUP under nohup: serves GNU tar's bytes" same_file "$MB/m0777" "$T/files/big/m0777"
	check "SIGHUP under nohup: unmount" fusermount3 -u "$MB"
else
	[ -n "$STOPPED" ] && kill -CONT "$STOPPED" && STOPPED=
fi
SIGENV=--default-signal=INT,TERM,HUP
n=$((n + 1))
# the builder's PID, once: the background command's one child
builder_of() { ps -o pid= --ppid "$1" | tr -d ' '; }
# gone PID: PID has ended (or is a zombie nobody reaped) within 10 s (a
# hang guard); else it is killed, as this test started it
gone() {
	local i st
	for i in $(seq 1 100); do
		st=$(ps -o stat= -p "$1") || return 0
		case $st in Z*) return 0 ;; esac
		sleep 0.1
	done
	echo "    process $1 still running 10 s later"
	kill -9 "$1"
	return 1
}
# kill -9 of the command: nobody is left to report to, so its builder ends
# before mounting and removes its temporary file (the other order, the
# builder killed, is the command's exit status 137)
if check "kill -9 of the command: the build has begun" build_blocked "$n"; then
	CPID=$(builder_of "$BPID")
	kill -9 "$BPID"
	wait "$BPID" 2>/dev/null
	kill -CONT "$STOPPED"
	STOPPED=
	check "kill -9 of the command: its builder ends within 10 s" gone "$CPID"
	check "kill -9 of the command: no index, no temporary file, nothing mounted" nothing_left
	check "kill -9 of the command: the builder says so" grep -q "interrupted: index build stopped" "$T/build$n.log"
	check "kill -9 of the command: no sanitizer report" sh -c "! grep -q 'Sanitizer\|runtime error:' '$T/build$n.log'"
else
	[ -n "$STOPPED" ] && kill -CONT "$STOPPED" && STOPPED=
fi
n=$((n + 1))
if check "kill -9 of the builder: the build has begun" build_blocked "$n"; then
	CPID=$(builder_of "$BPID")
	check "kill -9 of the builder: the command exits 137 within 10 s" ends KILL 137 "$CPID"
	check "kill -9 of the builder: it has ended" gone "$CPID"
	check "kill -9 of the builder: nothing mounted" test "$(mounts_on "$MB")" = 0
else
	[ -n "$STOPPED" ] && kill -CONT "$STOPPED" && STOPPED=
fi
# ctrl_c N ENTRY WANT: Ctrl-C typed at the terminal (a pty) of the command
# building big<N>.tar in the background, SIGINT at ENTRY ("default" or
# "ignore", as in a script's background job) when it starts: it exits WANT.
# The terminal's SIGINT has been sent once it echoes "^C".
ctrl_c() {
	local n=$1 entry=$2 want=$3 rc
	stop_source "$n" || return 1
	timeout 60 "$PY" - "$entry" "$IDX" "$STOPPED" "$SAMPLEFS" -o layout=tar,index_dir="$IDX" \
		"$MO/big$n.tar" "$MB" >"$T/build$n.log" 2>&1 <<'PY'
import glob, os, pty, signal, sys, time
entry, idx, stopped, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("env", ["env", "--%s-signal=INT" % entry] + cmd)
out = b""
for _ in range(600):	# a hang guard: the build has begun
    if glob.glob(idx + "/tar-*.tmp.*"):
        break
    time.sleep(0.1)
os.write(fd, b"\x03")
while b"^C" not in out:
    out += os.read(fd, 4096)
os.kill(stopped, signal.SIGCONT)
while True:
    try:
        got = os.read(fd, 4096)
    except OSError:	# EIO: the terminal's last writer is gone
        break
    if not got:
        break
    out += got
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
PY
	rc=$?
	kill -CONT "$STOPPED"
	STOPPED=
	[ "$rc" = "$want" ] || { echo "    exit status $rc, expected $want"; cat "$T/build$n.log"; return 1; }
}
n=$((n + 1))
if check "Ctrl-C at the terminal during the build: exit status 130" ctrl_c "$n" default 130; then
	check "Ctrl-C at the terminal: no index, no temporary file, nothing mounted" nothing_left
	check "Ctrl-C at the terminal: it says so" grep -q "interrupted: index build stopped" "$T/build$n.log"
fi
n=$((n + 1))
if check "Ctrl-C at the terminal, SIGINT ignored at start: ignored, exit 0" ctrl_c "$n" ignore 0; then
	check "Ctrl-C at the terminal, SIGINT ignored at start: serves GNU tar's bytes" \
		same_file "$MB/m0777" "$T/files/big/m0777"
	check "Ctrl-C at the terminal, SIGINT ignored at start: unmount" fusermount3 -u "$MB"
fi
# the inner mounts' daemons may still be closing their sources on $MO
# (fusermount3 -u returns before a daemon has exited): its unmount waits
# up to 60 s for no process to hold a file there (EBUSY otherwise; seen
# once in a clean-clone run; an ASan daemon's exit on a loaded machine
# takes seconds)
held_under() {
	local l
	for l in /proc/[0-9]*/fd/*; do
		[[ "$(readlink "$l" 2>/dev/null)" == "$1"/* ]] && return 0
	done
	return 1
}
for i in $(seq 1 600); do held_under "$MO" || break; sleep 0.1; done
check "signals: unmount the outer tar" sfs_umount "$MO"

# ---- 3. the index directory ----
RO=$T/ro
mkdir -p "$RO" "$T/tmpd"
if mount -t tmpfs -o size=1m tmpfs "$RO" && mkdir "$RO/idx" && mount -o remount,ro "$RO"; then
	fallback() {
		local out rc
		out=$(XDG_CACHE_HOME=$RO/cache TMPDIR=$T/tmpd timeout 60 "$SAMPLEFS" "$T/small.tar" "$M" 2>&1)
		rc=$?
		SFS_MOUNTS+=("$M")
		echo "$out" >"$T/fallback.log"
		[ "$rc" = 0 ] || { echo "    exit $rc: $out"; return 1; }
		[ "$(grep -c "cannot write indexes there" <<<"$out")" = 1 ] &&
			grep -q "$RO/cache/samplefs: cannot write indexes there (Read-only file system): using a private temporary index in $T/tmpd/samplefs-index\..*-o index_dir=" <<<"$out" ||
			{ echo "    $out"; return 1; }
	}
	check "read-only cache directory: mounts with one warning" fallback
	check "read-only cache directory: the index is in the private directory" \
		sh -c "ls '$T'/tmpd/samplefs-index.*/tar-*.sfsidx >/dev/null"
	check "read-only cache directory: serves GNU tar's bytes" same_file "$M/f3" "$T/files/small/f3"
	gone() {	# the private directory is removed once the daemon has ended
		local i
		fusermount3 -u "$M" || return 1
		for i in $(seq 1 600); do	# a hang guard (60 s: ASan's exit)
			[ -z "$(ls -A "$T/tmpd")" ] && return 0
			sleep 0.1
		done
		ls -lR "$T/tmpd"
		return 1
	}
	check "read-only cache directory: the private index is removed at unmount" gone
	check "read-only -o index_dir: refused, names the directory and the option" \
		bg_fails "$RO/idx/.*Read-only file system.*-o index_dir=" "$M" -o index_dir="$RO/idx" "$T/small.tar" "$M"
else
	echo "not ok - cannot mount a read-only tmpfs on $RO"
	SFS_FAIL=$((SFS_FAIL + 1))
fi

# ---- 2b. a stop signal at once ----
ME=$T/me
mkdir -p "$ME"
SFS_MOUNTS+=("$ME")
# early MODE DELAY: `samplefs [-f] small.tar ME &` with SIGINT ignored (a
# script's background job), kill -INT after DELAY; the command must end
# within 10 s with 130 or 0, nothing left mounted (a mount that served
# before the signal is unmounted by it).  A background command that had
# already exited 0 (it served: the signal reached nobody; a zombie not
# yet waited for, which kill would not fail on) passes when its mount
# serves.
early() {
	local fg= i rc pid
	[ "$1" = fg ] && fg=-f
	env --ignore-signal=INT "$SAMPLEFS" $fg -o index_dir="$T/idx-early" \
		"$T/small.tar" "$ME" 2>"$T/early.log" &
	pid=$!
	sleep "$2"
	# one that has exited is a zombie until waited for: kill would succeed
	if [[ "$(ps -o stat= -p "$pid")" == Z* ]] || ! kill -INT "$pid" 2>/dev/null; then
		wait "$pid"; rc=$?
		[ "$rc" = 0 ] && [ "$(mounts_on "$ME")" = 1 ] && fusermount3 -u "$ME" && return 0
		echo "    exited $rc before the signal"; return 1
	fi
	for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		echo "    still running 10 s after SIGINT (lost)"
		kill -TERM "$pid"; wait "$pid" 2>/dev/null
		[ "$(mounts_on "$ME")" = 0 ] || fusermount3 -u "$ME"
		return 1
	fi
	wait "$pid"; rc=$?
	for i in $(seq 1 20); do [ "$(mounts_on "$ME")" = 0 ] && break; sleep 0.1; done
	if [ "$(mounts_on "$ME")" != 0 ]; then
		echo "    still mounted (exit $rc)"; fusermount3 -u "$ME"
		[ "$rc" = 0 ] && [ "$1" = bg ] && return 2	# maybe the race below
		return 1
	fi
	case $rc in 0|130) ;; *) echo "    exit status $rc"; cat "$T/early.log"; return 1 ;; esac
	! grep -q 'Sanitizer\|runtime error:' "$T/early.log" || { cat "$T/early.log"; return 1; }
}
# A background command (bg) that has read its child's "serving" byte and is
# exiting can take the signal without acting on it (blocked, then gone
# with the process): exit 0, the mount serving, as if it had come a moment
# later.  That outcome is tried once more; a command that ignored the
# signal would give it both times.
early_heeded() {
	early "$@"
	case $? in
	0) return 0 ;;
	2) echo "    tried again (the signal may have met the exit)"; early "$@" ;;
	*) return 1 ;;
	esac
}
check "early SIGINT: a first mount, to save the index" \
	sh -c "'$SAMPLEFS' -o index_dir='$T/idx-early' '$T/small.tar' '$ME' && fusermount3 -u '$ME'"
for mode in fg bg; do
	for d in 0.1 0.15 0.25; do
		check "SIGINT ${d} s after the start ($mode, ignored at start): heeded" early_heeded "$mode" "$d"
	done
done
# served_int: -f, SIGINT ignored at start, kill -INT once it serves: exit 0, unmounted
served_int() {
	local pid i rc
	env --ignore-signal=INT "$SAMPLEFS" -f -o index_dir="$T/idx-early" \
		"$T/small.tar" "$ME" 2>"$T/early.log" &
	pid=$!
	for i in $(seq 1 300); do [ "$(mounts_on "$ME")" = 1 ] && break; sleep 0.1; done
	kill -INT "$pid"
	for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		echo "    still running 10 s after SIGINT"
		kill -TERM "$pid"; wait "$pid" 2>/dev/null; return 1
	fi
	wait "$pid"; rc=$?
	[ "$rc" = 0 ] && [ "$(mounts_on "$ME")" = 0 ] || { echo "    exit $rc, mounts $(mounts_on "$ME")"; return 1; }
}
check "SIGINT by kill once serving (-f, ignored at start): unmounted, exit 0" served_int

# Each index path once per mount: first builds and rebuilds of a tar, a
# Quick, Draw! and an ImageNet source.
"$PY" - "$T" "$SFS_ROOT" <<'PY' || { echo "not ok - fixtures"; SFS_FAIL=$((SFS_FAIL + 1)); }
import sys
sys.path.insert(0, sys.argv[2] + '/tests/fixtures')
from make_quickdraw import make_quickdraw
from make_imagenet import make_imagenet, pick_wnids
make_quickdraw(sys.argv[1] + '/qd', ['cat', 'dog'], 8, 8, seed=1)
make_imagenet(sys.argv[1] + '/in', pick_wnids(2, seed=5), per_class=3, n_val=4, seed=2)
PY
IP=$T/idx-paths
paths_once() {	# paths_once LOG MIN: each index path at most once, at least MIN paths
	local counts
	counts=$(grep -o "$IP/[^ :()]*\.sfsidx" "$1" | sort | uniq -c)
	if awk -v min="$2" '$1 > 1 { bad = 1 } END { exit bad || NR < min }' <<<"$counts"; then
		return 0
	fi
	echo "    paths and times printed:"; echo "${counts:-    (none)}"; sed 's/^/    /' "$1"
	return 1
}
for src in small.tar qd in; do
	for round in "first build" "rebuild"; do
		[ "$round" = rebuild ] && touch -d '1 hour ago' "$T/$src" "$T/$src"/* 2>/dev/null
		min=1
		[ "$src" = in ] && min=$([ "$round" = rebuild ] && echo 2 || echo 0)
		if check "$src, $round: mount" sfs_mount "$T/$src" "$M" -o index_dir="$IP"; then
			check "$src, $round: each index path printed once" paths_once "$(sfs_log "$M")" "$min"
			check "$src, $round: unmount" sfs_umount "$M"
		fi
	done
done

sfs_done
