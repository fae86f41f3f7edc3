#!/usr/bin/env bash
# The daemon and the npy layout end to end: every file of the mount equals
# np.save(arr[i]) written by numpy (tests/integration/npy_oracle.py), the
# tree agrees with the oracle under ls/stat/find/du/df, writes fail with
# EROFS, bad sources and options fail before mounting, mount(8) and fstab
# work, broken sources are skipped, parallel readers agree, and a source
# that shrinks while mounted gives EIO.
. "$(dirname "$0")/lib.sh"
sfs_setup
ORACLE=oracle
oracle() {	# a broken oracle must not pass for a test
	"$PY" "$SFS_ROOT/tests/integration/npy_oracle.py" "$@" || {
		echo "not ok - oracle failed: $*"; SFS_FAIL=$((SFS_FAIL + 1)); sfs_done; exit 1; }
}
T=$SFS_TMP
BUILD_DIR=$(dirname "$SAMPLEFS")

$ORACLE make "$T/src"
$ORACLE expect "$T/src" "$T/want"

# tree listing as find/stat show it: path, type, links and file size
# (modes are checked on their own: the oracle's are not 0444/0555)
tree_of() {
	(cd "$1" && find . \( -type d -printf '%p d %n\n' \) -o -printf '%p %y %n %s\n' | sort)
}
same_tree() {
	diff <(tree_of "$1") <(tree_of "$2") | sed 's/^/    /' | head -20
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
same_bytes() {
	diff -r "$1" "$2" | head -5
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
mounted() {
	grep -q " $1 fuse" /proc/mounts
}

# ---- explicit layout ----
M=$T/m1
check "mount -o layout=npy" sfs_mount "$T/src" "$M" -o layout=npy
check "every file equals np.save(arr[i])" same_bytes "$T/want" "$M"
check "ls/stat/find agree with the oracle" same_tree "$T/want" "$M"
check "inodes distinct, none in the reserved range" inodes_in_scheme "$M"
# our directories have size 0 and no blocks: du sums the files only
want_bytes=$(find "$T/want" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
want_blocks=$(find "$T/want" -type f -printf '%s\n' | awk '{s += int(($1 + 511) / 512)} END {print s * 512}')
check "du --apparent-size agrees ($want_bytes bytes)" \
	test "$(du -sb --apparent-size "$M" | cut -f1)" = "$want_bytes"
check "du (st_blocks) agrees" test "$(du -s -B1 "$M" | cut -f1)" = "$want_blocks"
check "file modes 0444, directories 0555" \
	test "$(find "$M" -printf '%y%m\n' | sort -u | tr '\n' ' ')" = "d555 f444 "
check "st_blocks = ceil(size/512)" \
	test "$(stat -c %b "$M/digits/000000.npy")" = $(( ($(stat -c %s "$M/digits/000000.npy") + 511) / 512 ))
check "mtime is the source's" \
	test "$(stat -c %Y "$M/images/000003.npy")" = "$(stat -c %Y "$T/src/images.npy")"
check "owner is the mounting user" test "$(stat -c %u:%g "$M/flags")" = "$(id -u):$(id -g)"
check "0-row array is an empty directory" test -z "$(ls -A "$M/empty")"
check "df -i counts every inode" \
	test "$(df --output=itotal "$M" | tail -1 | tr -d ' ')" = "$(find "$T/want" | wc -l)"
check "unknown name: ENOENT" expect_fail "No such file" stat "$M/nope"
check "unknown row: ENOENT" expect_fail "No such file" stat "$M/digits/000037.npy"
check "non-canonical row name: ENOENT" expect_fail "No such file" stat "$M/digits/0000001.npy"
check "touch: EROFS" expect_fail "Read-only file system" touch "$M/new"
# Cold reads: with the sources out of the page cache every read first
# fails its no-wait try and is then served by a worker (or in line when it
# is the only request); 8 readers at once must still get the right bytes.
par_cmp() {	# par_cmp WANT MNT: cmp every file, 8 processes at once
	(cd "$1" && find . -type f -print0) | xargs -0 -P 8 -n 16 sh -c '
		for f; do cmp -s "$0/$f" "'"$2"'/$f" || { echo "    differs: $f"; exit 1; }; done' "$1"
}
cold_cmp() { sfs_evict "$T"/src/*.npy "$M" && par_cmp "$T/want" "$M"; }
check "sources evicted from the page cache" sfs_evict "$T"/src/*.npy "$M"
check "cold: 8 readers at once get np.save's bytes" par_cmp "$T/want" "$M"
check "touch existing: EROFS" expect_fail "Read-only file system" touch "$M/digits/000000.npy"
check "echo >: EROFS" expect_fail "Read-only file system" sh -c "echo x > '$M/digits/000001.npy'"
check "mkdir: EROFS" expect_fail "Read-only file system" mkdir "$M/d"
check "rm: EROFS" expect_fail "Read-only file system" rm -f "$M/digits/000002.npy"
check "mv: EROFS" expect_fail "Read-only file system" mv "$M/digits" "$M/x"
check "read past the end is empty" \
	test "$(dd if="$M/digits/000000.npy" bs=1 skip=5000 count=10 2>/dev/null | wc -c)" = 0
check "odd offsets read the right bytes" \
	cmp <(dd if="$M/images/000001.npy" bs=7 skip=13 2>/dev/null) \
	    <(dd if="$T/want/images/000001.npy" bs=7 skip=13 2>/dev/null)
check "unmount" sfs_umount "$M"

# ---- detected layout, single file, -s, debug: no OPEN after ENOSYS ----
M=$T/m2
check "mount with the layout detected" sfs_mount "$T/src" "$M"
check "detected mount serves the same bytes" same_bytes "$T/want" "$M"
check "unmount detected" sfs_umount "$M"
# the three ways requests are served: polling with workers (above, the
# default), polling alone (-s), libfuse's multi-threaded loop (poll=0)
for how in "-s" "-o poll=0" "-o poll=0 -s" "-o workers=1,poll=1000"; do
	check "mount $how" sfs_mount "$T/src" "$M" $how
	check "$how: cold, 8 readers at once get np.save's bytes" cold_cmp
	check "unmount $how" sfs_umount "$M"
done
# SIGTERM / SIGHUP end the daemon (it unmounts itself) even while it is
# busy polling for the next request of a reader going file after file.
stop_by_signal() {	# stop_by_signal SIG MNT: exits 0, unmounted
	local sig=$1 mnt=$2 pid=${SFS_PID_OF[$2]} log=${SFS_LOG_OF[$2]} i rc
	local started=$SFS_TMP/reader.$sig
	# statfs is never cached by the kernel: a request every few microseconds
	# for as long as the mount is there, even once the files are cached
	"$PY" -c 'import glob, os, sys
mnt, started = sys.argv[1], sys.argv[2]
try:
    for p in glob.glob(mnt + "/images/*.npy"):
        open(p, "rb").read()
    open(started, "w").close()
    while True:
        os.statvfs(mnt)
except OSError:
    pass' "$mnt" "$started" &
	local reader=$!
	for i in $(seq 1 600); do [ -e "$started" ] && break; sleep 0.1; done
	kill -"$sig" "$pid"
	# a hang guard, not a timing check: a busy ASan daemon may take seconds
	for i in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && { echo "    still running 60 s after SIG$sig"; kill -9 "$pid"; }
	wait "$pid"; rc=$?
	kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
	unset "SFS_PID_OF[$mnt]"
	grep -qs " $mnt fuse" /proc/mounts && { echo "    still mounted"; fusermount3 -u "$mnt"; return 1; }
	grep -q 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:' "$log" && { cat "$log"; return 1; }
	[ "$rc" = 0 ] || { echo "    exit status $rc"; return 1; }
}
# (not SIGINT: a job started with & by a script inherits SIGINT ignored,
# and libfuse installs its handler only over the default disposition)
for sig in TERM HUP; do
	check "mount to stop by SIG$sig" sfs_mount "$T/src" "$M"
	check "SIG$sig during reads: daemon exits 0 and the mount is gone" stop_by_signal $sig "$M"
done
# polling for a whole second, the session thread never sleeps while the
# reader goes on: the signal must get in while it spins
check "mount to stop by SIGTERM, -o poll=1000000" sfs_mount "$T/src" "$M" -o poll=1000000
check "SIGTERM while always polling: daemon exits 0 and the mount is gone" stop_by_signal TERM "$M"
check "workers=65: refused before mounting" expect_fail "at most 64" \
	"$SAMPLEFS" -o workers=65 "$T/src" "$M"
for v in 0 4294967296; do
	check "shard_size=$v: refused before mounting" expect_fail "shard_size=$v: from 1 to" \
		"$SAMPLEFS" -o shard_size=$v "$T/src" "$M"
done
# (options of other layouts are refused: test_hidden.sh)
check "every samplefs option npy takes accepted" sfs_mount "$T/src" "$M" -o \
layout=npy,quiet,per_class=5,index_dir="$T/idx",poll=20,workers=2,readdirplus=auto,fsname=x
check "unmount all options" sfs_umount "$M"
$ORACLE expect "$T/src" "$T/want3" 3
check "mount -o per_class=3" sfs_mount "$T/src" "$M" -o layout=npy,per_class=3
check "per_class=3: first 3 rows of each array" same_bytes "$T/want3" "$M"
check "per_class=3: tree" same_tree "$T/want3" "$M"
check "unmount per_class" sfs_umount "$M"

mkdir -p "$T/want1"
$ORACLE expect "$T/src/digits.npy" "$T/want1"
check "mount a single .npy file (-s)" sfs_mount "$T/src/digits.npy" "$M" -s
check "single file: tree and bytes" same_bytes "$T/want1" "$M"
check "unmount single" sfs_umount "$M"

check "mount -d" sfs_mount "$T/src" "$M" -d
cat "$M/labels/000001.npy" "$M/labels/000001.npy" "$M/labels/000002.npy" >/dev/null
stat "$M/absent_name_1234567" "$M/absent_name_1234567" 2>/dev/null
# a LOOKUP of a 19-byte name in the root has insize 40 + 20
n_miss=$(grep -c 'opcode: LOOKUP (1), nodeid: 1, insize: 60,' "${SFS_LOG_OF[$M]}")
check "negative lookups are cached ($n_miss lookups for 2 stats)" test "$n_miss" = 1
n_open=$(grep -c 'opcode: OPEN ' "${SFS_LOG_OF[$M]}")
n_read=$(grep -c 'opcode: READ ' "${SFS_LOG_OF[$M]}")
check "open answered once (ENOSYS), then never sent ($n_open opens)" test "$n_open" = 1
check "page cache kept across opens ($n_read reads for 2 files)" test "$n_read" = 2
check "unmount -d" sfs_umount "$M"

# ---- 50,000 entries across many small readdir replies ----
$ORACLE big "$T/bigsrc" 50000
check "mount 50k rows" sfs_mount "$T/bigsrc" "$M" -o layout=npy
check "ls | wc -l = 50000" test "$(ls "$M/big" | wc -l)" = 50000
check "ls lists 000000.npy..049999.npy in order" \
	cmp -s <(ls -f "$M/big" | grep -v '^\.\.\?$') <(seq -f '%06.0f.npy' 0 49999)
check "find sees 50000 files" test "$(find "$M/big" -type f | wc -l)" = 50000
check "unmount 50k" sfs_umount "$M"

# ---- a listing then reads (a loader's glob, then np.load of each file) ----
# npy directories are listed with attributes (readdirplus=always): the
# reads that follow need no LOOKUP.  -o readdirplus=auto leaves it to the
# kernel, which gives attributes to the first reply only: ~1 LOOKUP a file.
$ORACLE big "$T/rdp" 3000
list_then_read() {	# MNT: ls, then cat of every file; both must work
	ls "$1/big" >/dev/null && cat "$1"/big/*.npy | cmp -s - <(
		"$PY" -c 'import numpy as np, io, sys
a = np.load(sys.argv[1])
for r in a:
    b = io.BytesIO(); np.save(b, r); sys.stdout.buffer.write(b.getvalue())' "$T/rdp/big.npy")
}
lookups_in_big() {	# MNT: LOOKUPs of names in big/ that the daemon logged
	local ino
	ino=$(stat -c %i "$1/big")
	grep -c "opcode: LOOKUP (1), nodeid: $ino," "${SFS_LOG_OF[$1]}"
}
for mode in "" readdirplus=always readdirplus=auto; do
	check "mount -d ${mode:-(default)}" sfs_mount "$T/rdp" "$M" -d -o layout=npy${mode:+,$mode}
	check "${mode:-default}: 3000 files listed, then read, = np.save's bytes" list_then_read "$M"
	n=$(lookups_in_big "$M")
	if [ "$mode" = readdirplus=auto ]; then
		check "$mode: the reads looked names up ($n LOOKUPs for 3000 files)" test "$n" -ge 1000
	else
		# (a tenth of slack: the kernel may reclaim a few listed dentries)
		check "${mode:-default}: the reads needed (almost) no LOOKUP ($n for 3000 files)" test "$n" -le 300
	fi
	check "unmount -d ${mode:-(default)}" sfs_umount "$M"
done
check "-o readdirplus=sometimes: refused, naming the option" \
	expect_fail "readdirplus=auto|always" "$SAMPLEFS" -o readdirplus=sometimes "$T/rdp" "$M"

# ---- 8 parallel readers on a fresh mount (the cold path is cold_cmp's) ----
check "mount for parallel readers (-o allow_other)" sfs_mount "$T/src" "$M" -o layout=npy,allow_other
check "allow_other reaches the kernel" grep -q " $M fuse.* .*allow_other" /proc/mounts
pids=()
for i in 1 2 3 4 5 6 7 8; do
	diff -r "$T/want" "$M" >"$T/par.$i" 2>&1 &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "8 parallel readers agree with the oracle" test "$bad" = 0
check "unmount parallel" sfs_umount "$M"

# ---- broken sources are skipped with a warning naming them ----
$ORACLE bad "$T/bad"
mkdir -p "$T/wantbad"
$ORACLE expect "$T/bad" "$T/wantbad"
check "mount a directory with broken files" sfs_mount "$T/bad" "$M" -o layout=npy
log=${SFS_LOG_OF[$M]}
check "only the good array is served" same_tree "$T/wantbad" "$M"
check "good array bytes" same_bytes "$T/wantbad" "$M"
for f in trunc lies fortran objects scalar garbage endless; do
	check "warning names $f.npy" grep -q "warning: .*$f.npy" "$log"
done
check "unmount broken" sfs_umount "$M"

# ---- a source that changes while mounted: EIO, never wrong bytes ----
mkdir -p "$T/shrink"
cp "$T/src/digits.npy" "$T/src/images.npy" "$T/shrink/"
check "mount a source to shrink" sfs_mount "$T/shrink" "$M" -o layout=npy
check "row 30 reads before" cmp -s "$M/digits/000030.npy" "$T/want/digits/000030.npy"
check "row 1 reads before" cmp -s "$M/images/000001.npy" "$T/want/images/000001.npy"
truncate -s $(( 128 + 784 * 20 + 100 )) "$T/shrink/digits.npy"
check "row 30, read before: its bytes or EIO" same_or_eio "$M/digits/000030.npy" "$T/want/digits/000030.npy"
check "row 5 (intact bytes, changed file) gives EIO" expect_fail "Input/output error" cat "$M/digits/000005.npy"
check "row 20 (cut short) gives EIO" expect_fail "Input/output error" cat "$M/digits/000020.npy"
check "row 36 (gone) gives EIO" expect_fail "Input/output error" cat "$M/digits/000036.npy"
# rewritten in place, same size: the bytes are not the ones we described
dd if=/dev/urandom of="$T/shrink/images.npy" bs=1 seek=200 count=64 conv=notrunc status=none
touch -d '+1 min' "$T/shrink/images.npy"
check "rewritten source gives EIO" expect_fail "Input/output error" cat "$M/images/000002.npy"
check "unmount shrunk" sfs_umount "$M"

# ---- errors before mounting: one line, non-zero, nothing mounted ----
# mount_error NAME PATTERN ARGS...: samplefs ARGS fails with one line
mount_error() {
	local name=$1 pat=$2 err rc; shift 2
	mkdir -p "$T/never"
	SFS_MOUNTS+=("$T/never")
	[ "$1" = setpriv ] || [ "$1" = unshare ] || set -- "$SAMPLEFS" "$@"
	err=$(timeout 20 "$@" 2>&1 >/dev/null); rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && ! mounted "$T/never" &&
		[ "$(printf '%s\n' "$err" | grep -vc '^$')" = 1 ] &&
		grep -q -- "$pat" <<<"$err" && return 0
	echo "    rc=$rc: $err"
	return 1
}
check "missing source" mount_error x "$T/nosuch: No such file" "$T/nosuch" "$T/never"
check "bad option value" mount_error x "seed=abc" -o seed=abc "$T/src" "$T/never"
check "bad size" mount_error x "cache=12Q" -o cache=12Q "$T/src" "$T/never"
check "bad split" mount_error x "split=50/10/10" -o split=50/10/10 "$T/src" "$T/never"
check "unknown layout" mount_error x "unknown layout 'bogus'" -o layout=bogus "$T/src" "$T/never"
check "unknown option" mount_error x "bogus_opt" -o bogus_opt "$T/src" "$T/never"
check "undetectable source" mount_error x "cannot tell the layout" "$T/bad/../src/README.txt" "$T/never"
check "empty layout name" mount_error x "layout=" -o layout= "$T/src" "$T/never"
check "no mountpoint" mount_error x "usage" "$T/src"
# an unreadable source file fails the mount (as an unprivileged user: root
# reads anything); it fails before mounting, so no fusermount3 is involved
mkdir -p "$T/locked"
cp "$T/src/digits.npy" "$T/src/labels.npy" "$T/locked/"
chmod 000 "$T/locked/labels.npy"
chmod 711 "$T"
chmod 755 "$T/locked" "$T/never"
# samplefs checks /dev/fuse and the index directory first: the user gets a
# FUSE device it may open (bound over /dev/fuse in a mount namespace of its
# own) and a cache directory it may write, as its own home would be
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] &&
   mknod -m 666 "$T/fuse-dev" c 10 229 && mkdir -m 777 "$T/cache-65534"; then
	check "unreadable source file" mount_error x "labels.npy: Permission denied" \
		unshare -m --propagation private sh -c 'mount --bind "$0" /dev/fuse && exec "$@"' \
		"$T/fuse-dev" env XDG_CACHE_HOME="$T/cache-65534" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$SAMPLEFS" "$T/locked" "$T/never"
fi
chmod 700 "$T"
check "--help exits 0" sh -c "'$SAMPLEFS' --help | grep -q 'layout='"
check "--version exits 0" sh -c "'$SAMPLEFS' --version | grep -q 'samplefs version'"

# ---- mount(8) and fstab through mount.fuse3 ----
# mount.fuse3 runs `samplefs SOURCE MNT -o OPTS` through /bin/sh, daemonized,
# so its stderr is gone: sanitizer reports go to files instead.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$T/asan-mount"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$T/asan-mount"
M=$T/m3
mkdir -p "$M"
SFS_MOUNTS+=("$M")
check "mount.fuse3 with samplefs on PATH" env PATH="$BUILD_DIR:$PATH" \
	mount.fuse3 "$T/src" "$M" -o rw,dev,suid,layout=npy,nofail,_netdev -t fuse.samplefs
check "mount.fuse3 mount serves the oracle" same_bytes "$T/want" "$M"
check "mount.fuse3 mount is read-only" expect_fail "Read-only file system" touch "$M/x"
check "fusermount3 -u" fusermount3 -u "$M"

check "daemonized with a relative SOURCE" sh -c "cd '$T' && '$SAMPLEFS' src '$M'"
check "relative SOURCE was made absolute before chdir /" same_bytes "$T/want" "$M"
check "unmount daemonized" fusermount3 -u "$M"

# mount(8) resets PATH for its helpers, so in a private mount namespace the
# build directory is bound over /usr/local/bin (in the default PATH).
printf '%s %s fuse.samplefs layout=npy,quiet,nofail,noauto,x-systemd.automount 0 0\n' \
	"$T/src" "$M" > "$T/fstab"
in_ns() {
	unshare -m --propagation private sh -c '
		mount --bind "$1" /usr/local/bin || exit 1
		shift
		trap "fusermount3 -u \"\$MNT\" 2>/dev/null" EXIT
		"$@" || exit 1
		diff -r "$WANT" "$MNT" >/dev/null; rc=$?
		touch "$MNT/x" 2>/dev/null && rc=1
		fusermount3 -u "$MNT" || rc=1
		exit $rc' sh "$BUILD_DIR" "$@"
}
if unshare -m true 2>/dev/null; then
	export WANT=$T/want MNT=$M
	check "mount -t fuse.samplefs serves the oracle, read-only" \
		in_ns mount -t fuse.samplefs "$T/src" "$M" -o layout=npy,nofail
	check "fstab line via mount -T serves the oracle, read-only" \
		in_ns mount -T "$T/fstab" "$M"
else
	echo "skip - mount(8) tests: no unshare -m here"
fi
check "nothing left mounted" sh -c "! grep -q ' $M fuse' /proc/mounts"
# the daemonized samplefs processes (their command lines name $M, a path
# of this run's own) exit after unmount, writing any sanitizer report first
daemons_gone() {
	local i
	for i in $(seq 1 600); do
		pgrep -f -- "samplefs.* $M" >/dev/null || return 0
		sleep 0.1
	done
	echo "    still running: $(pgrep -af -- "samplefs.* $M")"
	return 1
}
check "the daemonized samplefs processes exited" daemons_gone
check "no sanitizer reports from daemonized mounts" \
	sh -c "! cat '$T'/asan-mount* 2>/dev/null | grep -q ."

sfs_done
