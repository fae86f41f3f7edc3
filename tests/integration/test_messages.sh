#!/usr/bin/env bash
# Messages that reach the user and say what is wrong (issue 9, items 3 and
# 6; issue 16, item 4: --help whole, the build's progress bar counted right
# and ended before a warning): a runtime warning of a daemonised mount lands in -o log=FILE
# (timestamped, tagged with the mount point) and in syslog (a datagram
# socket of this test's own bound over /dev/log in a private mount
# namespace); a tar name with a component over 255 bytes and a split= that
# does not add up to 100 say so; samplefs-inspect --verify on Quick, Draw!
# reads every file (counts and bytes against numpy's), and fails naming the
# block when a stroke block is corrupt; getxattr gives EOPNOTSUPP and
# listxattr an empty list (Python's os.*xattr), rsync -aX copies quietly.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
INSPECT=$SFS_BIN/samplefs-inspect
# daemonised mounts have no stderr: sanitizer reports go to files instead
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$T/asan-bg"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$T/asan-bg"

# src.tar: four 10000-byte members, and one whose name has a 256-byte
# component (pax, so the name is whole), which is skipped with a warning
"$PY" - "$T/src.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    for i in range(4):
        data = bytes([65 + i]) * 10000
        ti = tarfile.TarInfo("d/f%d.txt" % i)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    ti = tarfile.TarInfo("long/" + "n" * 256)
    ti.size = 3
    tf.addfile(ti, io.BytesIO(b"abc"))
PY

# ---- explaining messages ----
M=$T/mlong
check "mount a tar with a 256-byte name component" sfs_mount "$T/src.tar" "$M" -o layout=tar,quiet
check "the long name's warning says the component is over 255 bytes" \
	grep -q "src.tar: name 'long/n*' in header at offset [0-9]* has a component of 256 bytes, over the 255" "$(sfs_log "$M")"
check "and not 'unsafe or empty name'" sh -c "! grep -q 'unsafe or empty' '$(sfs_log "$M")'"
check "the other members are served" cmp "$M/d/f1.txt" <("$PY" -c 'import sys; sys.stdout.buffer.write(b"B" * 10000)')

mkdir -p "$T/msplit"
check "split=80/10/5 says what it adds up to" \
	expect_fail "split=80/10/5: train/valid/test percentages add up to 95, not 100" \
	"$SAMPLEFS" -f -o split=80/10/5 "$T/src.tar" "$T/msplit"
check "split=80/30/0 too" expect_fail "add up to 110, not 100" \
	"$SAMPLEFS" -f -o split=80/30/0 "$T/src.tar" "$T/msplit"
check "a malformed split= keeps the general message" expect_fail "bad value in -o split=80/20" \
	"$SAMPLEFS" -f -o split=80/20 "$T/src.tar" "$T/msplit"
check "-o log= in a directory that does not exist fails, naming it" \
	expect_fail "log=$T/nodir/x.log: cannot open for appending" \
	"$SAMPLEFS" -f -o log="$T/nodir/x.log" "$T/src.tar" "$T/msplit"

# ---- --help and the progress bar (issue 16, item 4) ----
check "--help shows readdirplus=auto|always|adaptive whole" \
	sh -c "'$SAMPLEFS' --help | grep -qF -- '-o readdirplus=auto|always|adaptive '"
# the bar is drawn on a terminal only: script(1) gives inspect one
bar() {	# TAR IDX: what inspect's index build wrote on its terminal
	script -qec "'$INSPECT' -o index_dir='$2' '$1'" /dev/null
}
"$PY" - "$T/five.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as tf:
    for i in range(5):
        ti = tarfile.TarInfo("f%d" % i)
        ti.size = 3
        tf.addfile(ti, io.BytesIO(b"abc"))
PY
bar "$T/five.tar" "$T/idx-bar5" >"$T/bar5.out" 2>&1
check "the bar ends with all 5 members of a 5-member tar" \
	grep -aq "samplefs: indexing tar: 5 files, [0-9.]* MB in " "$T/bar5.out"
check "no total is shown while it is unknown (no '/0 files')" \
	sh -c "! grep -aq '/0 files' '$T/bar5.out'"
bar "$T/src.tar" "$T/idx-bar" >"$T/bar.out" 2>&1
check "a warning during the build is on a line of its own" bash -c \
	"grep -aq \"^samplefs: warning: $T/src.tar: name 'long/\" '$T/bar.out' &&
	 ! grep -aq 'indexing tar.*warning:' '$T/bar.out'" || cat -A "$T/bar.out"
check "src.tar: its 4 members taken, the long name skipped" \
	grep -aq "samplefs: indexing tar: 4 files, [0-9.]* MB in " "$T/bar.out"

# ---- extended attributes: none ----
# xattrs_none PATH...: listxattr [] and getxattr EOPNOTSUPP on each (the
# kernel's answer once the daemon said ENOSYS: no round trip per file for
# ls -l), setxattr EROFS
xattrs_none() {
	"$PY" - "$@" <<'PY'
import errno, os, sys
bad = 0
for p in sys.argv[1:]:
    try:
        got = os.listxattr(p)
        if got != []:
            print("    listxattr(%s) = %r" % (p, got)); bad = 1
    except OSError as e:
        print("    listxattr(%s): %s" % (p, e)); bad = 1
    for follow in (True, False):
        try:
            v = os.getxattr(p, "user.x", follow_symlinks=follow)
            print("    getxattr(%s) = %r" % (p, v)); bad = 1
        except OSError as e:
            if e.errno != errno.EOPNOTSUPP:
                print("    getxattr(%s): %s, expected EOPNOTSUPP" % (p, e)); bad = 1
    try:
        os.setxattr(p, "user.x", b"1")
        print("    setxattr(%s) succeeded" % p); bad = 1
    except OSError as e:
        if e.errno != errno.EROFS:
            print("    setxattr(%s): %s, expected EROFS" % (p, e)); bad = 1
sys.exit(bad)
PY
}
check "tar mount: listxattr [] and getxattr EOPNOTSUPP on the root, a dir, a file" \
	xattrs_none "$M" "$M/d" "$M/d/f0.txt"
rsync_quiet() {	# SRC DST: rsync -aX exits 0, prints nothing, copies every byte
	local err
	err=$(rsync -aX "$1/" "$2/" 2>&1) || { echo "    rsync -aX exit $?: $err"; return 1; }
	[ -z "$err" ] || { echo "    rsync -aX said: $err"; return 1; }
	diff -r "$1" "$2"
}
if command -v rsync >/dev/null; then
	check "rsync -aX from the mount: exit 0, quiet, same bytes" rsync_quiet "$M" "$T/rsync-tar"
else
	check "rsync is installed (tools/deps.sh)" false
fi
check "unmount ${M##*/}" sfs_umount "$M"

# ---- Quick, Draw!: xattrs, and inspect --verify reads every file ----
"$PY" - "$T/qd" "$SFS_ROOT" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[2], 'tests', 'fixtures'))
from make_quickdraw import make_quickdraw
make_quickdraw(sys.argv[1], ['cat', 'dog', 'ice cream'], [30, 20, 25], [28, 22, 25],
               max_points=[60, 60, 3000], min_points=[1, 1, 1500], seed=3)
PY
M=$T/mqd
check "mount the Quick, Draw! source" sfs_mount "$T/qd" "$M" -o quiet,index_dir="$T/idx-qd"
check "quickdraw mount: listxattr [] and getxattr EOPNOTSUPP" \
	xattrs_none "$M" "$M/strokes/cat" "$M/strokes/cat/000000.npy" "$M/classes.txt"
command -v rsync >/dev/null &&
	check "rsync -aX of strokes/: exit 0, quiet, same bytes" rsync_quiet "$M/strokes" "$T/rsync-qd"
check "unmount ${M##*/}" sfs_umount "$M"

# what the tree holds, from numpy (tests/integration/qd_oracle.py)
want=$("$PY" - "$T/qd" "$SFS_ROOT" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[2], 'tests', 'integration'))
import qd_oracle as q
ds = q.Dataset(sys.argv[1])
files = bytes_ = 0
for rel, kind, c, i in ds.files():
    files += 1
    bytes_ += len(q.npy_bytes(ds.stroke_array(c, i)) if kind == 'stk' else ds.image_bytes(c, i))
bytes_ += len(''.join(n + '\n' for n in ds.names).encode())
for s in ('train.txt', 'val.txt', 'test.txt'):
    bytes_ += len(ds.split_text(s))
print("%d files, %d bytes" % (files + 4, bytes_))
PY
)
"$INSPECT" --verify -o index_dir="$T/idx-qd" "$T/qd" >"$T/verify.out" 2>&1
rc=$?
check "inspect --verify on Quick, Draw!: exit 0" test $rc = 0
check "inspect --verify read $want, ok" grep -q "^Verified: $want in [0-9]* directories, read through the quickdraw layout: ok" "$T/verify.out"
[ "$rc" = 0 ] || cat "$T/verify.out"

# a corrupt stroke block under index checksums that still match (the
# block's crc32 and the table's recomputed, see core/index/index.c): only
# the block's own adler32 can tell
"$PY" - "$T/idx-qd" <<'PY'
import glob, struct, sys, zlib
path, = glob.glob(sys.argv[1] + '/quickdraw-*.sfsidx')
b = bytearray(open(path, 'rb').read())
nsect, = struct.unpack_from('<I', b, 24)
table_off, total, nblocks, shift = struct.unpack_from('<QQII', b, 32)
tag = ord('Q') | ord('D') << 8 | ord('S') << 16 | ord('D') << 24
for i in range(nsect):
    t, blk, off, ln = struct.unpack_from('<IIQQ', b, table_off + 24 * i)
    if t == tag:
        break
else:
    sys.exit('no stroke data section')
at = off + ln // 2
b[at] ^= 0x5a
k = (at - off) >> shift
start = off + (k << shift)
end = min(off + ln, start + (1 << shift))
crcs = table_off + 24 * nsect
struct.pack_into('<I', b, crcs + 4 * (blk + k), zlib.crc32(bytes(b[start:end])))
struct.pack_into('<I', b, 28, zlib.crc32(bytes(b[table_off:total])))
open(path, 'wb').write(b)
PY
"$INSPECT" --verify -o index_dir="$T/idx-qd" "$T/qd" >"$T/verify-bad.out" 2>&1
rc=$?
check "inspect --verify: a corrupt stroke block fails (exit $rc)" test $rc = 1
check "and names the block and the file it was reading" bash -c \
	"grep -q 'index block [0-9]* at data offset [0-9]*: does not inflate' '$T/verify-bad.out' &&
	 grep -q '^verify: /strokes/.*\.npy: read at offset 0: Input/output error' '$T/verify-bad.out' &&
	 grep -q '^Verified: .*: FAILED' '$T/verify-bad.out'" || cat "$T/verify-bad.out"

# ---- daemonised: warnings go to -o log=FILE ----
# bg_pid LOGFILE MNT: the PID the daemon's first line in LOGFILE names
bg_pid() {
	sed -n "s|^[0-9T:+-]* samplefs\[\([0-9]*\)\]: $2: .*|\1|p" "$1" | tail -1
}
# gone PID: the daemon exits after its unmount (a hang guard, not a timing)
gone() {
	local i
	for i in $(seq 1 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	echo "    daemon $1 still running"
	return 1
}
cp "$T/src.tar" "$T/bg.tar"
M=$T/mbg
mkdir -p "$M" "$T/cwd"
SFS_MOUNTS+=("$M")
# a relative FILE is the mounting shell's, though the daemon then does chdir /
check "daemonised mount with -o log=bg.log (relative)" \
	sh -c "cd '$T/cwd' && '$SAMPLEFS' -o layout=tar,quiet,log=bg.log '$T/bg.tar' '$M' 2>'$T/bg.err'"
check "the mount is up" grep -q " $M fuse" /proc/mounts
truncate -s 12000 "$T/bg.tar"
check "a member of the truncated source gives EIO" expect_fail "Input/output error" cat "$M/d/f3.txt"
check "again (the warning is said once)" expect_fail "Input/output error" cat "$M/d/f2.txt"
pid=$(bg_pid "$T/cwd/bg.log" "$M")
check "the log file names the daemon's PID ($pid)" test -n "$pid"
check "the runtime warning is in the log file, timestamped, tagged with the mount point" \
	grep -q "^[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9:]*[+-][0-9]\{4\} samplefs\[$pid\]: $M: warning: $T/bg.tar: changed since mounting" "$T/cwd/bg.log"
check "said once" test "$(grep -c 'changed since mounting' "$T/cwd/bg.log")" = 1
check "the mount-time messages are in it too" grep -q "samplefs\[[0-9]*\]: $M: warning: $T/bg.tar: name 'long/" "$T/cwd/bg.log"
check "unmount the daemonised mount" fusermount3 -u "$M"
[ -n "$pid" ] && check "the daemon exited" gone "$pid"

# ---- daemonised: warnings go to syslog ----
# syslog(3) writes to /dev/log.  In a private mount namespace /dev is a
# tmpfs of links to the real nodes, and /dev/log a link to a datagram
# socket this test listens on, so nothing depends on the host's syslog.
syslog_in_ns() {
	unshare -m --propagation private sh -ec '
		T=$1 SAMPLEFS=$2 M=$3
		mkdir -p "$T/realdev"
		mount --bind /dev "$T/realdev"
		mount -t tmpfs -o mode=0755 sfs-test-dev /dev
		for e in "$T"/realdev/*; do ln -s "$e" /dev/; done
		rm -f /dev/log; ln -s "$T/log.sock" /dev/log
		trap "fusermount3 -u \"$M\" 2>/dev/null || true" EXIT
		"$SAMPLEFS" -o layout=tar,quiet "$T/sys.tar" "$M" 2>"$T/sys.err"
		grep -q " $M fuse" /proc/mounts
		truncate -s 12000 "$T/sys.tar"
		! cat "$M/d/f3.txt" >/dev/null 2>&1
		fusermount3 -u "$M"
		trap - EXIT' sh "$T" "$SAMPLEFS" "$1"
}
if unshare -m true 2>/dev/null; then
	"$PY" - "$T/log.sock" "$T/syslog.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(120)	# ends by itself if the test dies without killing it
with open(sys.argv[2], "ab", buffering=0) as out:
    try:
        while True:
            out.write(s.recv(65536).rstrip(b"\0\n") + b"\n")
    except socket.timeout:
        pass
PY
	lpid=$!
	trap 'kill $lpid 2>/dev/null; sfs_cleanup' EXIT
	for i in $(seq 1 100); do [ -S "$T/log.sock" ] && break; sleep 0.1; done
	cp "$T/src.tar" "$T/sys.tar"
	M=$T/msys
	mkdir -p "$M"
	check "daemonised mount in a namespace: mounted, EIO after truncation, unmounted" syslog_in_ns "$M"
	# the listener is a process of its own: wait (10 s at most) until it
	# has written the daemon's warning
	for i in $(seq 1 100); do
		grep -q "changed since mounting" "$T/syslog.out" 2>/dev/null && break
		sfs_nap 0.1
	done
	spid=$(sed -n "s|.*samplefs\[\([0-9]*\)\]: $M: .*|\1|p" "$T/syslog.out" 2>/dev/null | head -1)
	check "syslog got 'samplefs[PID]: MNT: warning: ... changed since mounting'" \
		grep -q "^<28>.* samplefs\[$spid\]: $M: warning: $T/sys.tar: changed since mounting" "$T/syslog.out"
	check "nothing said before daemonising went to syslog" \
		sh -c "! grep -q \"name 'long/\" '$T/syslog.out'"
	[ -n "$spid" ] && check "the daemon exited" gone "$spid"
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	[ "$SFS_FAIL" = 0 ] || { echo "    syslog received:"; sed "s/^/      /" "$T/syslog.out" 2>/dev/null; }
else
	echo "skip - syslog: no unshare -m here (needs root), so /dev/log cannot be replaced"
fi

check "no sanitizer reports from daemonised mounts" sh -c "! cat '$T'/asan-bg* 2>/dev/null | grep -q ."
sfs_done
