#!/usr/bin/env bash
# Compressed tars (core/io/codecs/zsource.c, zgzip.c) end to end: one tar made by
# GNU tar, compressed by the real tools (gzip -6 and -1, gzip members
# concatenated, pigz, bgzip), mounted with layout=tar and compared file by
# file with what `tar -x` extracts (tree_compare.py), ISA-L's inflater and
# zlib's (SAMPLEFS_INFLATE=zlib) alike, with reads at random offsets; a
# remount uses the saved access points (no second pass); damaged streams
# (a flipped byte, a member whose CRC fails, a truncation) give EIO for the
# files they hold, named in the log, and the right bytes for the others,
# never wrong ones; a bomb (2 GiB of zeros in 2 MB, its last ISIZE a lie)
# is bounded (the daemon's peak RSS) and its lie named; a gzip inside a
# gzip is decompressed once only; over HTTP as from disk; span=1k is one
# error line naming the bounds, span= and span_cache= on a plain tar are
# refused (issue 25 item 5).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/ztree_lib.sh"
sfs_setup
T=$SFS_TMP
COMPARE=$SFS_ROOT/tests/integration/tree_compare.py

# the tree: small and large files, text and random bytes, a symlink; its
# tar and the compressed tars (made once for the plain and the ASan run)
gztree() {
	local T=$1
	tree_tar "$T" 6 60 2 || return 1

	gzip -6 -c "$T/t.tar" >"$T/g6.tar.gz"
	gzip -1 -c "$T/t.tar" >"$T/g1.tgz"
	split -b 5000000 "$T/t.tar" "$T/part."
	for p in "$T"/part.*; do gzip -c "$p"; done >"$T/members.tar.gz"
	pigz -p 2 -c "$T/t.tar" >"$T/pigz.tar.gz"
	bgzip -c "$T/t.tar" >"$T/bgzf.tar.gz"
}
sfs_shared gzip-tree gztree && extract || exit 1

n=0
# same_tree FILE [VAR=VALUE...]: FILE mounted (span=64k, with those
# variables in the daemon's environment) is the extracted tree
same_tree() {
	local f=$1 mnt=$T/m$n; shift
	n=$((n + 1))
	SFS_ENV=("$@")
	check "$f $*: mounted" mount_env "$T/$f" "$mnt" || return
	check "$f $*: every file as tar -x made it" "$PY" "$COMPARE" "$T/x" "$mnt"
	check "$f $*: reads at random offsets of big.bin" random_reads "$mnt" big.bin
	check "$f $*: unmount" sfs_umount "$mnt"
}
# mount_env SRC MNT: sfs_mount with the environment in SFS_ENV
mount_env() {
	local e rc
	for e in "${SFS_ENV[@]}"; do export "${e?}"; done
	sfs_mount "$1" "$2" -o layout=tar,span=64k
	rc=$?
	for e in "${SFS_ENV[@]}"; do unset "${e%%=*}"; done
	return $rc
}

for f in g6.tar.gz g1.tgz members.tar.gz pigz.tar.gz bgzf.tar.gz; do
	same_tree "$f"
done
same_tree g6.tar.gz SAMPLEFS_INFLATE=zlib
same_tree bgzf.tar.gz SAMPLEFS_INFLATE=zlib

# a remount finds the access points saved by the first mount
mnt=$T/again
check "remount: mounted" sfs_mount "$T/g6.tar.gz" "$mnt" -o layout=tar,span=64k
check "remount: the saved access points, no second pass" \
	bash -c '! grep -q "access points, in" "$0"' "$(sfs_log "$mnt")"
check "remount: every file as tar -x made it" "$PY" "$COMPARE" "$T/x" "$mnt"
check "remount: unmount" sfs_umount "$mnt"

# over HTTP: the same tree, and a remount reads no data (the saved table)
mkdir -p "$T/www" && cp "$T/bgzf.tar.gz" "$T/www/" && http_start "$T/www"
mnt=$T/http
check "http: mounted" sfs_mount "$(http_url bgzf.tar.gz)" "$mnt" -o layout=tar,span=64k
check "http: every file as tar -x made it" "$PY" "$COMPARE" "$T/x" "$mnt"
check "http: unmount" sfs_umount "$mnt"
mark=$(http_log_mark)
check "http: remounted" sfs_mount "$(http_url bgzf.tar.gz)" "$mnt" -o layout=tar,span=64k
check "http: the remount sent no data GET" test "$(http_log_count GET "$mark")" = 0
check "http: unmount again" sfs_umount "$mnt"

# where big.bin's data starts in the tar: damage there leaves every tar
# header readable, so the mount comes up and only big.bin gives EIO
big=$("$PY" -c 'import sys, tarfile
print(tarfile.open(sys.argv[1]).getmember("./big.bin").offset_data)' "$T/t.tar")
# a byte in the BGZF block holding big.bin's byte 2 MiB
cp "$T/bgzf.tar.gz" "$T/flip.tar.gz"
flip "$T/flip.tar.gz" "$("$PY" -c 'import struct, sys
f = open(sys.argv[1], "rb"); want = int(sys.argv[2]); c = u = 0
while True:
    h = f.read(18); bsize = struct.unpack("<H", h[16:18])[0] + 1
    f.seek(c + bsize - 4); isize = struct.unpack("<I", f.read(4))[0]
    if u + isize > want:
        print(c + bsize // 2); break
    c += bsize; u += isize; f.seek(c)' "$T/flip.tar.gz" $((big + (2 << 20))))"
# three members, the middle one all big.bin's, its CRC-32 wrong
head -c $((big + (1 << 20))) "$T/t.tar" | gzip -c >"$T/crc.tar.gz"
tail -c +$((big + (1 << 20) + 1)) "$T/t.tar" | head -c $((3 << 20)) | gzip -c >"$T/mid.gz"
flip "$T/mid.gz" -6
cat "$T/mid.gz" >>"$T/crc.tar.gz"
tail -c +$((big + (4 << 20) + 1)) "$T/t.tar" | gzip -c >>"$T/crc.tar.gz"
for f in flip.tar.gz crc.tar.gz; do
	mnt=$T/bad-$f
	check "$f: mounted" sfs_mount "$T/$f" "$mnt" -o layout=tar,span=64k || continue
	check "$f: the damage is named in the log" \
		grep -q "$f: .*\(mismatch\|invalid\|incorrect\|truncated\)" "$(sfs_log "$mnt")"
	check "$f: each file reads right or gives EIO, some EIO" right_or_eio "$mnt"
	check "$f: the EIO is named in the log" \
		grep -q "$f: its uncompressed bytes .* are damaged (.*): reads of them give EIO" "$(sfs_log "$mnt")"
	check "$f: unmount" sfs_umount "$mnt"
done

# damage after the first mount, its size and mtime kept: the saved access
# points and index are used, and the span reads find the CRC-32 wrong
cp -p "$T/g6.tar.gz" "$T/later.tar.gz"
mnt=$T/later
check "later: first mount" sfs_mount "$T/later.tar.gz" "$mnt" -o layout=tar,span=64k
check "later: unmount" sfs_umount "$mnt"
touch -r "$T/later.tar.gz" "$T/stamp"
flip "$T/later.tar.gz" $(( $(stat -c %s "$T/later.tar.gz") * (big + (1 << 20)) / $(stat -c %s "$T/t.tar") ))
touch -r "$T/stamp" "$T/later.tar.gz"
check "later: mounted again" sfs_mount "$T/later.tar.gz" "$mnt" -o layout=tar,span=64k
check "later: each file reads right or gives EIO, some EIO" right_or_eio "$mnt"
check "later: the EIO is named in the log" \
	grep -q "later.tar.gz: span at uncompressed offset" "$(sfs_log "$mnt")"
check "later: unmount" sfs_umount "$mnt"

head -c 7000000 "$T/g6.tar.gz" >"$T/cut.tar.gz"
mnt=$T/cut
if sfs_mount "$T/cut.tar.gz" "$mnt" -o layout=tar 2>"$T/cut.err"; then
	check "truncated: each file right or EIO" right_or_eio "$mnt"
	check "truncated: unmount" sfs_umount "$mnt"
else
	check "truncated: the refusal names the truncation" \
		grep -q "cut.tar.gz: truncated gzip member" "$T/cut.err"
fi

# a bomb: 2 GiB of zeros as 8 members of 256 MiB, the last ISIZE a lie
head -c 256M /dev/zero | gzip -1 >"$T/z1.gz"
for i in 1 2 3 4 5 6 7 8; do cat "$T/z1.gz"; done >"$T/bomb.tar.gz"
flip "$T/bomb.tar.gz" -1
mnt=$T/bomb
check "bomb: mounted (an empty tar)" sfs_mount "$T/bomb.tar.gz" "$mnt" -o layout=tar
check "bomb: the ISIZE lie is named" grep -q "bomb.tar.gz: gzip member ISIZE mismatch" \
	"$(sfs_log "$mnt")"
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/${SFS_PID_OF[$mnt]}/status")
check "bomb: the daemon's peak RSS ${hwm} kB is under 128 MiB (without ASan's)" \
	test "$SAMPLEFS_BUILD" != build -o "${hwm:-999999}" -lt 131072
check "bomb: unmount" sfs_umount "$mnt"

mkdir -p "$T/opt"
check "span=1k is refused, naming the bounds" \
	expect_fail "span=1k: 1024 bytes; must be from 64k (65536) to 64M (67108864) bytes" \
	"$SAMPLEFS" -f -o layout=tar,span=1k "$T/g6.tar.gz" "$T/opt"
# issue 25 item 5: one line, not a second "Invalid argument"
one_line() {
	local err
	err=$("$SAMPLEFS" -f -o layout=tar,span=1k "$T/g6.tar.gz" "$T/opt" 2>&1)
	[ "$(wc -l <<<"$err")" -eq 1 ] || { echo "    $err"; return 1; }
}
check "span=1k: one error line" one_line
# span= on data with nothing compressed is refused, as docs/options.md says
gzip -dc "$T/g6.tar.gz" >"$T/plain.tar"
check "span=64k on a plain tar is refused" \
	expect_fail "span applies to compressed data only.*plain.tar has none" \
	"$SAMPLEFS" -f -o layout=tar,span=64k,index_dir=$T/idx-plain "$T/plain.tar" "$T/opt"

# gzip in gzip: one level is decompressed, the inner gzip is not a tar
gzip -c "$T/g6.tar.gz" >"$T/twice.tar.gz"
mkdir -p "$T/twice"
check "gzip in gzip: not a tar once decompressed" \
	expect_fail "not a tar archive" "$SAMPLEFS" -f -o layout=tar "$T/twice.tar.gz" "$T/twice"

sfs_done
