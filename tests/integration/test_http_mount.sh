#!/usr/bin/env bash
# Every layout mounted over HTTP(S) from nginx, compared with the same
# layout mounted from the same files on disk (names, types, sizes, bytes):
# Quick, Draw! from classes.txt and from the server's listing, ImageNet, a
# tar with a nested tar, an .npy file; HTTPS with the test's own CA; the
# index of a URL saved and reused (a remount reads no data, nginx's log
# says; a changed classes.txt is noticed by its stamp; a URL of one tar,
# layout= not given, remounts with as few requests as with layout=tar:
# its name decides); then faults injected by tests/integration/fault_proxy.py between
# samplefs and nginx: 500s, 429 with Retry-After, a body cut short, a
# trickle below the low-speed limit, Range ignored, the ETag changed.  Each
# read either gives the server's bytes or fails with EIO within a bound
# this test's `timeout` enforces, and the mount stays usable.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www	# what nginx serves
L=$T/ml M=$T/mh	# local and remote mounts
export SFS_ROOT

"$PY" - "$W" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, os, random, sys, tarfile
import numpy as np
sys.path.insert(0, os.path.join(os.environ["SFS_ROOT"], "tests", "fixtures"))
from make_quickdraw import make_quickdraw
from make_imagenet import make_imagenet, pick_wnids
w = sys.argv[1]
o = w + "/qd"
make_quickdraw(o, ["cat", "The Mona Lisa", "ice cream"], [9, 7, 8], [8, 9, 7],
               layout="official", seed=2)
open(o + "/classes.txt", "w").write("cat\nThe Mona Lisa\nice cream\n")
make_quickdraw(w + "/qdlist", ["b", "a c"], [13, 17], [11, 9], layout="official", seed=4)
make_imagenet(w + "/imagenet", pick_wnids(4, seed=3), per_class=5, n_val=9, seed=1)
rnd = random.Random(7)
def member(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data))
inner = io.BytesIO()
with tarfile.open(fileobj=inner, mode="w") as t:
    for i in range(5):
        member(t, "x/%d.txt" % i, bytes(rnd.getrandbits(8) for _ in range(700 * i)))
with tarfile.open(w + "/data.tar", "w", format=tarfile.GNU_FORMAT) as t:
    member(t, "inner.tar", inner.getvalue())
    for i in range(6):
        member(t, "d/f%d.bin" % i, os.urandom(rnd.choice([0, 1, 5000, 70000])))
# the fault tests' tar: 48 members of 400 KiB, each read once, far apart
with tarfile.open(w + "/big.tar", "w") as t:
    for i in range(48):
        member(t, "m%02d.bin" % i, os.urandom(400 << 10))
np.save(w + "/arr.npy", np.arange(3 * 5 * 7, dtype="<f4").reshape(3, 5, 7))
PY

# compare NAME LOCAL-SOURCE URL OPTIONS [URL-OPTIONS]: both mounted with
# OPTIONS, the URL with URL-OPTIONS too (refused for a local source), compared
compare() {
	local name=$1 src=$2 url=$3 opts=$4 uopts=${5:+,$5}
	check "$name: local mount" sfs_mount "$src" "$L" -o "$opts,index_dir=$T/idx-l"
	check "$name: mount over $url" sfs_mount "$url" "$M" -o "$opts$uopts,index_dir=$T/idx-h"
	check "$name: the same tree and bytes over HTTP as from disk" sfs_same_mounts "$L" "$M"
	check "$name: unmount local" sfs_umount "$L"
	check "$name: unmount remote" sfs_umount "$M"
}

check "nginx serves the fixtures (HTTP and HTTPS)" http_start -s "$W"

compare "quickdraw, classes.txt" "$W/qd" "$(http_url /qd/)" layout=quickdraw,per_class=6
compare "quickdraw, the server's listing" "$W/qdlist" "$(http_url /qdlist/)" layout=quickdraw
compare "imagenet" "$W/imagenet" "$(http_url /imagenet/)" layout=imagenet,shard_size=4
compare "tar, nested" "$W/data.tar" "$(http_url /data.tar)" layout=tar
compare "npy file" "$W/arr.npy" "$(http_url /arr.npy)" layout=npy
compare "tar over HTTPS (cacert=)" "$W/data.tar" "$(http_url -s /data.tar)" \
	layout=tar "cacert=$HTTP_CACERT"
mkdir -p "$M"
check "HTTPS without the test's CA: refused, naming the URL" \
	expect_fail "data.tar" "$SAMPLEFS" -o "layout=tar,index_dir=$T/idx-x" "$(http_url -s /data.tar)" "$M"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"

# ---- a saved index: the remount sends no data GET ----
check "imagenet: mount again (index saved)" \
	sfs_mount "$(http_url /imagenet/)" "$M" -o layout=imagenet,shard_size=4,index_dir=$T/idx-h
check "unmount" sfs_umount "$M"
http_log_sync
mark=$(http_log_mark)
check "imagenet: remount" \
	sfs_mount "$(http_url /imagenet/)" "$M" -o layout=imagenet,shard_size=4,index_dir=$T/idx-h
check "remount: index reused (log)" grep -q "index" "$(sfs_log "$M")"
check "unmount" sfs_umount "$M"
http_log_sync
# one listing of /imagenet/ (to say what is not served), no data GET
gets=$(http_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $4 ~ /^20[06]$/ {print $2}' | sort | uniq -c |
	awk '{ print $2 " x" $1 }' | paste -sd,)
check "remount with a saved index: no data GET, one listing ($gets; HEADs: $(http_log_count HEAD "$mark"))" \
	grep -qx '/*imagenet/ x1' <<<"$gets"

# issue 25 item 5: the layout of one file's URL is decided from its name:
# a remount of data.tar without layout= sends no more requests (nginx's
# log, every method) than one with layout=tar (it sent some 44 probes)
# requests_of OPTS: the requests nginx logged for a remount of data.tar with OPTS
requests_of() {
	local mark n
	mark=$(http_log_mark) || return 1
	sfs_mount "$(http_url /data.tar)" "$M" -o "$1index_dir=$T/idx-name" || return 1
	n=$(http_log_lines "$mark" | wc -l)
	sfs_umount "$M" || return 1
	echo "$n"
}
check "data.tar: a first mount, to save its index" requests_of layout=tar, >/dev/null
with=$(requests_of layout=tar,) without=$(requests_of "")
check "data.tar remounted without layout=: $without requests, as many as with layout=tar ($with)" \
	test -n "$with" -a -n "$without" -a "${without:-99}" -le "${with:-0}"

# Quick, Draw!: a remount reads the image headers from the index, lists no
# directory when the classes are named, and takes the class names from the
# index while classes.txt keeps its stamp (a HEAD says so): no data GET.
# From the server's listing, the two listings (numpy_bitmap/, sketchrnn/)
# give the class names, metadata requests like a bucket's LIST: those two
# GETs and nothing else.
# qd_remount NAME URL OPTIONS N URIS OTHERS SAID: remount; its GETs,
# counted before any read of the mounted files: N of URIS (an awk regex)
# and OTHERS others ("any": a build reads the class files); the log says
# SAID; the same tree and bytes as the local mount at $L
qd_remount() {
	local name=$1 url=$2 opts=$3 n=$4 uris=$5 others=$6 said=$7 mark gets got
	http_log_sync
	mark=$(http_log_mark)
	check "$name: remount" sfs_mount "$url" "$M" -o "$opts,index_dir=$T/idx-h"
	check "$name: remount: '$said' (log)" grep -q "$said" "$(sfs_log "$M")"
	gets=$(http_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $4 ~ /^20[06]$/ {print $2}')
	got="$(awk -v a="$uris" 'NF && $0 ~ a' <<<"$gets" | wc -l) "
	[ "$others" = any ] && got+=any || got+=$(awk -v a="$uris" 'NF && $0 !~ a' <<<"$gets" | wc -l)
	check "$name: remount: $n GETs of $uris, $others others (GETs: $(awk NF <<<"$gets" | wc -l); HEADs: $(http_log_count HEAD "$mark"))" \
		test "$got" = "$n $others"
	check "$name: remount: same tree and bytes as from disk" sfs_same_mounts "$L" "$M"
	check "unmount" sfs_umount "$M"
}
QL="/qdlist/(numpy_bitmap|sketchrnn)/?\$" QC="/qd/classes[.]txt\$"
check "qdlist: local mount" sfs_mount "$W/qdlist" "$L" -o "layout=quickdraw,index_dir=$T/idx-l"
qd_remount "quickdraw qdlist" "$(http_url /qdlist/)" layout=quickdraw 2 "$QL" 0 "using the saved index"
check "unmount local" sfs_umount "$L"

# qd_local: mounts /qd/ locally, the oracle of the remounts
QD=layout=quickdraw,per_class=6
qd_local() { sfs_mount "$W/qd" "$L" -o "$QD,index_dir=$T/idx-l"; }
check "qd: local mount" qd_local
qd_remount "quickdraw qd" "$(http_url /qd/)" "$QD" 0 "$QC" 0 "using the saved index"
check "unmount local" sfs_umount "$L"

# classes.txt changed on the server (and so for the local mount, from the
# same files): the remount sees its new stamp and reads it (one GET), and
# then rebuilds, refuses or reuses the index as the local mount does.
# Each version gets an mtime of its own: nginx's Last-Modified and ETag
# have whole seconds, and two writes may share one.
classes() {	# TEXT MTIME: writes classes.txt
	printf "$1" >"$W/qd/classes.txt" && touch -d "@$2" "$W/qd/classes.txt"
}
classes 'cat\nThe Mona Lisa\nice cream\n' 1700000001
check "classes.txt touched (same names): local mount" qd_local
qd_remount "classes.txt touched" "$(http_url /qd/)" "$QD" 1 "$QC" 0 "using the saved index"
check "unmount local" sfs_umount "$L"
classes 'ice cream\ncat\nThe Mona Lisa\n' 1700000002	# the same size
check "classes.txt reordered: local mount" qd_local
check "classes.txt reordered: the local mount's classes.txt is the file" \
	cmp "$L/classes.txt" "$W/qd/classes.txt"
qd_remount "classes.txt reordered" "$(http_url /qd/)" "$QD" 1 "$QC" any "rebuilding index"
qd_remount "classes.txt reordered, again" "$(http_url /qd/)" "$QD" 0 "$QC" 0 "using the saved index"
# the names are taken before the index's checksum is checked (that needs
# the fingerprint, which needs the names): a byte flipped in them is seen
# by their own hash, and classes.txt is read instead
flip_names() {	# DIR: flips a byte of /qd/'s saved class names
	"$PY" - "$1" <<'PY'
import glob, struct, sys
for path in glob.glob(sys.argv[1] + '/quickdraw-*.sfsidx'):
    b = bytearray(open(path, 'rb').read())
    magic, ver, hsize, fp, nsect, crc, toff, tlen = struct.unpack_from('<8sIIQIIQQ', b)
    for i in range(nsect):
        tag, _, off, n = struct.unpack_from('<4sIQQ', b, toff + 24 * i)
        if tag == b'QDNM' and b'Mona' in b[off:off + n]:
            b[off + n // 2] ^= 0xff
            open(path, 'wb').write(b)
            sys.exit(0)
sys.exit('no index with the names of /qd/')
PY
}
check "a byte flipped in the saved names" flip_names "$T/idx-h"
qd_remount "saved names damaged" "$(http_url /qd/)" "$QD" 1 "$QC" any "rebuilding index"
check "unmount local" sfs_umount "$L"
classes 'cat\ndog\n' 1700000003
mkdir -p "$L" "$M"
for d in "$W/qd $L idx-l" "$(http_url /qd/) $M idx-h"; do
	set -- $d
	check "classes.txt names a class without files: $1 refused, naming it" \
		expect_fail "class 'dog' has no image file" \
		"$SAMPLEFS" -o "$QD,index_dir=$T/$3" "$1" "$2"
	grep -q " $2 fuse" /proc/mounts && fusermount3 -u "$2"
done
classes 'cat\nThe Mona Lisa\nice cream\n' 1700000004

# An epoch in gidx order: reading the first image of a class (of fewer
# rows than the 1 MiB hint) asks for the next class's file in the
# background; the remount's cache is empty, so the GET is the hint's.
# wait_get URI_REGEX MARK: a GET of it logged after MARK, within 10 s
wait_get() {
	local i
	for i in $(seq 1 100); do
		http_log_lines "$2" | awk -F'\t' -v u="$1" '$1 == "GET" && $2 ~ u { f = 1 } END { exit !f }' &&
			return 0
		sleep 0.1
	done
	return 1
}
not_logged() { ! http_log_lines "$2" | grep -q "$1"; }
check "qd: build for the next-class hint" sfs_mount "$(http_url /qd/)" "$M" -o "$QD,index_dir=$T/idx-h"
check "unmount" sfs_umount "$M"
if check "qd: remount for the next-class hint" sfs_mount "$(http_url /qd/)" "$M" -o "$QD,index_dir=$T/idx-h"; then
	mark=$(http_log_mark)
	first=$(ls "$M/images/cat" | head -1)
	check "qd: the first image of cat is read" cat "$M/images/cat/$first" >/dev/null
	check "qd: ... and the next class's file is fetched in the background" \
		wait_get "/qd/numpy_bitmap/The%20Mona%20Lisa[.]npy\$" "$mark"
	check "qd: ... but not the class after it" not_logged "ice%20cream[.]npy" "$mark"
	check "unmount" sfs_umount "$M"
fi

# ---- faults between samplefs and nginx ----
check "fault proxy up" proxy_start "$(http_url /)"
BIG=$(proxy_url /big.tar)
proxy_ctl "fault?mode=norange&n=-1&method=GET" >/dev/null
mkdir -p "$M"
check "first mount from a server that ignores Range: refused, named" \
	expect_fail "ignores Range" "$SAMPLEFS" -o "layout=tar,timeout=2,retries=1,index_dir=$T/idx-n" "$BIG" "$M"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
proxy_ctl "fault?mode=off" >/dev/null
# cache_mem=1M: the build streams through the tar's 400 KB members
# (test_build_stream.sh), which would leave all of it in a larger memory
# cache, where the faults below would never be met
check "big.tar through the proxy (timeout=2, retries=3, cache_mem=1M)" \
	sfs_mount "$BIG" "$M" -o layout=tar,timeout=2,retries=3,cache_mem=1M,index_dir=$T/idx-p
n=0
# sets m: a member not read before (not in $(...): n must go on counting)
next_member() { n=$((n + 1)); m=$(printf 'm%02d.bin' $(( (n * 17) % 48 ))); }
read_ok() {	# MEMBER: the bytes tarfile gives, within 60 s
	cmp -s <(timeout 60 cat "$M/$1") <("$PY" -c 'import sys, tarfile
sys.stdout.buffer.write(tarfile.open(sys.argv[1]).extractfile(sys.argv[2]).read())' "$W/big.tar" "$1")
}
read_eio() {	# MEMBER: EIO, within 60 s (a hang is a failure, not a wait)
	local out
	out=$(timeout 60 cat "$M/$1" 2>&1 >/dev/null)
	[ $? -ne 124 ] && grep -q "Input/output error" <<<"$out"
}
next_member
check "no fault: $m" read_ok "$m"
read_first=$m	# in the kernel's page cache from now on
for f in "500&n=2" "503&n=1" "429&n=1" "cut&n=1" "drop&n=1"; do
	proxy_ctl "fault?mode=$f&method=GET" >/dev/null
	next_member
	check "fault $f: $m has the server's bytes after retries" read_ok "$m"
done
proxy_ctl "fault?mode=norange&n=-1&method=GET" >/dev/null
next_member
check "Range ignored (200, whole body): EIO" read_eio "$m"
check "Range ignored: named in the log" grep -q "ignores Range" "$(sfs_log "$M")"
proxy_ctl "fault?mode=500&n=-1" >/dev/null
next_member
check "500 for ever: $m gives EIO after the retries" read_eio "$m"
proxy_ctl "fault?mode=trickle&rate=100&n=-1&method=GET" >/dev/null
next_member
check "trickle below the low-speed limit: EIO" read_eio "$m"
proxy_ctl "fault?mode=off" >/dev/null
next_member
check "faults over: the mount is still usable ($m)" read_ok "$m"
check "ls still works" test "$(ls "$M" | wc -l)" = 48
proxy_ctl "etag?change=1" >/dev/null
next_member
check "ETag changed: EIO" read_eio "$m"
check "ETag changed: 'changed since mounting' in the log" \
	grep -q "big.tar: changed since mounting" "$(sfs_log "$M")"
# the daemon drops the kernel's pages of the tar's members once it sees
# the change (fs/inval.c, a thread of its own: within a few seconds)
eio_soon() {	# MEMBER: its read gives EIO within 10 s
	local i
	for i in $(seq 1 50); do
		cat "$M/$1" >/dev/null 2>&1 || { read_eio "$1"; return; }
		sfs_nap 0.2
	done
	return 1
}
check "ETag changed: a member read before ($read_first, its pages cached by the kernel) gives EIO too" \
	eio_soon "$read_first"
check "unmount after the faults" sfs_umount "$M"
sfs_done
