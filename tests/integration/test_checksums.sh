#!/usr/bin/env bash
# Members' checksums, -o checksums (issue 28 part 2): no wrong byte reaches
# a reader.
#   1. a local tar indexed with checksums, then changed in place (a byte
#      inverted in a small member, a 300 KB one and a 3 MB one, its mtime
#      put back, so the saved index still fits): the changed members give
#      EIO, named with the source and offset in the log, the others (and
#      the 3 MB member's pieces away from the change) read tarfile's bytes;
#      stats.json counts the failures; samplefs-inspect --verify lists
#      exactly the changed members and exits 1 (0 before the change); a
#      mount of an index without checksums serves the changed bytes (the
#      damage is real: what the checks stop);
#   2. HTTP through fault_proxy.py inverting one byte in 30 % of the
#      response bodies: with checksums every file reads tarfile's bytes or
#      EIO, never others, most of them right (one refetch each), and
#      stats.json counts failures and refetches; without checksums some
#      file reads wrong bytes (the proxy's damage reaches readers); a
#      byte damaged on the first fetch only is read right by the refetch,
#      which replaces the bad block in cache_dir too; damaged on every
#      fetch, EIO, said, and the bad copy leaves the caches (read again
#      once the damage stops, no failure);
#   2b. the tar gzipped and xz-compressed, over HTTP: a byte of the
#      compressed stream damaged on its first fetch only fails its span's
#      CRC-32s (the first pass's), which is read again past every cache,
#      and every member reads right (counted, said); damaged on every
#      fetch, EIO, never other bytes, said naming the URL and offsets;
#   3. samplefs-inspect --save-index --checksums, before the change, makes
#      a prebuilt index that a mount takes (-o index=) and checks with;
#   4. an object read whole (a tar under 32 KiB) served with GCS's
#      x-goog-hash: a byte damaged on its way once fails the store's
#      CRC32C and is fetched again (counted), the mount reads it right; a
#      CRC32C that never matches fails the reads (here the index build:
#      no mount, said);
#   4b. the same object as an S3 bucket's (nginx at endpoint=, answering
#      only requests that ask for the checksum, x-amz-checksum-mode:
#      ENABLED, with S3's x-amz-checksum-crc32c): a right one mounts and
#      reads right, a wrong one is no mount, said;
#   5. S3 (Swift's S3 API on loopback): through the fault proxy with 30 %
#      of bodies damaged, every member exact or EIO, most right; a byte of the object flipped on
#      the store's disk (same size, ETag and dates): that member EIO after
#      a refetch, said, the others right.  (Swift 2.30's S3 API sends no
#      x-amz-checksum-crc32c: the store's own checksum is not tried here.)
# Oracle: Python's tarfile on the tar as written (www/t.tar, which nginx
# serves; t.tar is the copy changed in place).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/swift_lib.sh"
sfs_setup
T=$SFS_TMP
INSPECT=$SFS_BIN/samplefs-inspect
mkdir -p "$T/www"
"$PY" - "$T/www" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, random, sys, tarfile
rng = random.Random(28)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data))
with tarfile.open(sys.argv[1] + "/t.tar", "w") as t:
    add(t, "a/small.bin", rng.randbytes(1000))
    add(t, "a/mid.bin", rng.randbytes(300000))
    add(t, "b/big.bin", rng.randbytes(3 * 1024 * 1024 + 123))
    add(t, "b/empty", b"")
    for i in range(40):
        add(t, "c/f%02d.bin" % i, rng.randbytes(rng.randrange(100, 200000)))
# small.tar (whole in one request) and bad.tar (its copy), served with a
# right and a wrong x-goog-hash: their CRC32C, base64 of 4 bytes
with tarfile.open(sys.argv[1] + "/small.tar", "w") as t:
    add(t, "x.bin", rng.randbytes(3000))
    add(t, "y.bin", rng.randbytes(2000))
data = open(sys.argv[1] + "/small.tar", "rb").read()
open(sys.argv[1] + "/bad.tar", "wb").write(data)
crc = 0xffffffff
for b in data:
    crc ^= b
    for _ in range(8):
        crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
import base64
good = base64.b64encode((crc ^ 0xffffffff).to_bytes(4, "big")).decode()
bad = base64.b64encode((crc ^ 0xffffffff ^ 1).to_bytes(4, "big")).decode()
open(sys.argv[1] + "/../crc.txt", "w").write("%s %s %d\n" % (good, bad, len(data) // 2))
PY
read -r GOOD_CRC BAD_CRC SMALL_MID <"$T/crc.txt"
# as GCS answers: one x-goog-hash per hash
HTTP_EXTRA="
		location = /small.tar { add_header x-goog-hash \"crc32c=$GOOD_CRC\"; add_header x-goog-hash \"md5=AAAAAAAAAAAAAAAAAAAAAA==\"; }
		location = /bad.tar { add_header x-goog-hash \"md5=AAAAAAAAAAAAAAAAAAAAAA==,crc32c=$BAD_CRC\"; }
		location = /sbkt/small.tar { if (\$http_x_amz_checksum_mode != ENABLED) { return 400; } add_header x-amz-checksum-crc32c \"$GOOD_CRC\"; }
		location = /sbkt/bad.tar { if (\$http_x_amz_checksum_mode != ENABLED) { return 400; } add_header x-amz-checksum-crc32c \"$BAD_CRC\"; }"
mkdir -p "$T/www/sbkt"
cp "$T/www/small.tar" "$T/www/sbkt/small.tar"
cp "$T/www/small.tar" "$T/www/sbkt/bad.tar"
cp "$T/www/t.tar" "$T/t.tar"
# check_tree MNT MODE: every file of t.tar read through MNT; MODE exact:
# all tarfile's bytes; eio_only NAMES: those EIO, the rest exact; never:
# each exact or EIO (prints "right N eio M"); wrong: some file differs
CHECK='import errno, os, sys, tarfile
mnt, mode, tar = sys.argv[1], sys.argv[2], sys.argv[3]
eio_want = set(sys.argv[4:])
t = tarfile.open(tar)
right = eio = wrong = 0
for m in t.getmembers():
    if not m.isfile():
        continue
    want = t.extractfile(m).read()
    try:
        with open(os.path.join(mnt, m.name), "rb") as f:
            got = f.read()
    except OSError as e:
        if e.errno != errno.EIO:
            raise
        eio += 1
        if mode == "exact" or (mode == "eio_only" and m.name not in eio_want):
            print("    %s: EIO" % m.name); sys.exit(1)
        continue
    if got != want:
        wrong += 1
        if mode != "wrong":
            print("    %s: wrong bytes" % m.name); sys.exit(1)
    else:
        right += 1
        if mode == "eio_only" and m.name in eio_want:
            print("    %s: read, EIO wanted" % m.name); sys.exit(1)
print("right %d eio %d wrong %d" % (right, eio, wrong))
sys.exit(1 if mode == "wrong" and not wrong else 0)'
# stat_of MNT KEY: sources[0].KEY of MNT's stats.json
stat_of() {
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["sources"][0][sys.argv[2]])' \
		"$1/.samplefs/stats.json" "$2"
}

# ---- 1. a local tar changed in place
M=$T/m1
sfs_mount "$T/t.tar" "$M" -o checksums,index_dir="$T/idx" || { echo "not ok - mount"; exit 1; }
check "checksums: a build with -o checksums says so" grep -q "checksums (CRC32C) of 44 members" "$(sfs_log "$M")"
check "checksums: every member reads tarfile's bytes" "$PY" -c "$CHECK" "$M" exact "$T/www/t.tar"
check "checksums: no failure counted" test "$(stat_of "$M" checksum_failures)" = 0
sfs_umount "$M"
check "checksums: --verify of the intact tar passes" \
	"$INSPECT" --verify -o index_dir="$T/idx" "$T/t.tar"
check "checksums: samplefs-inspect --save-index --checksums" \
	"$INSPECT" --save-index="$T/pre.sfsidx" --checksums "$T/t.tar"

# inverts one byte in each named member (at its middle), mtime kept
"$PY" - "$T/t.tar" a/small.bin a/mid.bin b/big.bin >"$T/flips.txt" <<'PY'
import os, sys, tarfile
p = sys.argv[1]
st = os.stat(p)
t = tarfile.open(p)
with open(p, "r+b") as f:
    for n in sys.argv[2:]:
        m = t.getmember(n)
        at = m.offset_data + m.size // 2
        f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0xff]))
        print(n, m.offset_data, m.size // 2)
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
BIG_DATA=$(awk '$1 == "b/big.bin" { print $2 }' "$T/flips.txt")
BIG_AT=$(awk '$1 == "b/big.bin" { print $3 }' "$T/flips.txt")
sfs_mount "$T/t.tar" "$M" -o checksums,index_dir="$T/idx" || { echo "not ok - remount"; exit 1; }
check "checksums: the saved index is used (the tar's stamp unchanged)" \
	grep -q "using the saved index" "$(sfs_log "$M")"
check "checksums: changed members give EIO, the others tarfile's bytes" \
	"$PY" -c "$CHECK" "$M" eio_only "$T/www/t.tar" a/small.bin a/mid.bin b/big.bin
check "checksums: the error names the member, the source and the offset" \
	grep -q "error: $T/t.tar: member 'big.bin' (data at offset $BIG_DATA of the source): bytes .* fail their checksum" "$(sfs_log "$M")"
# the 3 MB member's first MiB and its last bytes are pieces away from the change
big_pieces() {
	"$PY" - "$M/b/big.bin" "$T/www/t.tar" "$BIG_AT" <<'PY'
import errno, sys, tarfile
want = tarfile.open(sys.argv[2]).extractfile("b/big.bin").read()
at = int(sys.argv[3])
with open(sys.argv[1], "rb", buffering=0) as f:
    for off, n in ((0, 1 << 20), (len(want) - 5000, 5000), (at - at % 65536 - 4096, 4096)):
        f.seek(off)
        if f.read(n) != want[off:off + n]:
            print("    bytes %d+%d differ" % (off, n)); sys.exit(1)
    try:
        f.seek(at - 10); f.read(20)
        print("    the changed piece read"); sys.exit(1)
    except OSError as e:
        if e.errno != errno.EIO:
            raise
PY
}
check "checksums: a large member's other pieces read, the changed one EIO" big_pieces
check "checksums: stats.json counts the failures" \
	test "$(stat_of "$M" checksum_failures)" -ge 3
check "checksums: no refetch of a local file" test "$(stat_of "$M" checksum_refetches)" = 0
sfs_umount "$M"
verify_lists() {
	local out rc
	out=$("$INSPECT" --verify -o index_dir="$T/idx" "$T/t.tar" 2>/dev/null); rc=$?
	[ "$rc" = 1 ] || { echo "    exit status $rc"; return 1; }
	[ "$(grep '^bad: ' <<<"$out" | sort | tr '\n' ' ')" = "bad: a/mid.bin bad: a/small.bin bad: b/big.bin " ] ||
		{ echo "$out" | sed 's/^/    /'; return 1; }
}
check "checksums: --verify lists the changed members and fails" verify_lists
sfs_mount "$T/t.tar" "$M" -o index_dir="$T/idx-plain" || { echo "not ok - plain mount"; exit 1; }
check "checksums: without them the changed bytes are served (the damage is real)" \
	"$PY" -c "$CHECK" "$M" wrong "$T/www/t.tar"
sfs_umount "$M"

# ---- 2. HTTP, one byte inverted in 30 % of the bodies
http_start "$T/www" || { echo "not ok - nginx"; exit 1; }
proxy_start "$(http_url)" || { echo "not ok - proxy"; exit 1; }
URL=$(proxy_url t.tar)
# the index is built from the bytes as served (the proxy does nothing yet)
M=$T/m2
sfs_mount "$URL" "$M" -o checksums,index_dir="$T/hidx",cache_mem=1M || { echo "not ok - http mount"; exit 1; }
sfs_umount "$M"
sfs_mount "$URL" "$M" -o index_dir="$T/hidx-plain",cache_mem=1M || { echo "not ok - http plain mount"; exit 1; }
sfs_umount "$M"
proxy_ctl 'chaos?rate=0.3&seed=28&modes=flip' >/dev/null
sfs_mount "$URL" "$M" -o checksums,index_dir="$T/hidx",cache_mem=1M || { echo "not ok - http remount"; exit 1; }
http_never_wrong() {
	local out
	out=$("$PY" -c "$CHECK" "$M" never "$T/www/t.tar") || { echo "$out"; return 1; }
	echo "    $out (proxy: $(proxy_stat chaos.flip) bodies damaged)"
	# most files right: a refetch is damaged again 3 times in 10
	[ "$(awk '{ print $2 }' <<<"$out")" -ge 30 ]
}
check "checksums: over HTTP every file reads tarfile's bytes or EIO, most right" http_never_wrong
check "checksums: stats.json counts failures and refetches" \
	test "$(stat_of "$M" checksum_failures)" -gt 0 -a "$(stat_of "$M" checksum_refetches)" -gt 0
sfs_umount "$M"
sfs_mount "$URL" "$M" -o index_dir="$T/hidx-plain",cache_mem=1M || { echo "not ok - http plain remount"; exit 1; }
check "checksums: over HTTP without them some file reads wrong bytes" \
	"$PY" -c "$CHECK" "$M" wrong "$T/www/t.tar"
sfs_umount "$M"
proxy_ctl 'chaos?rate=0' >/dev/null
# one byte of c/f10.bin damaged on its first fetch only: the refetch
# reads it right, and replaces the bad block in cache_dir too (a later
# mount on that cache_dir finds no failure); damaged on every fetch: EIO
read -r F10_AT F20_AT < <("$PY" -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
print(*(t.getmember(n).offset_data + t.getmember(n).size // 2 for n in ("c/f10.bin", "c/f20.bin")))' "$T/www/t.tar")
member_is() {	# MNT NAME: reads tarfile's bytes
	"$PY" -c 'import sys, tarfile
want = tarfile.open(sys.argv[2]).extractfile(sys.argv[3]).read()
sys.exit(open(sys.argv[1] + "/" + sys.argv[3], "rb").read() != want)' "$1" "$T/www/t.tar" "$2"
}
sfs_mount "$URL" "$M" -o checksums,index_dir="$T/hidx",cache_mem=1M,cache_dir="$T/blocks" ||
	{ echo "not ok - http cache_dir mount"; exit 1; }
proxy_ctl "fault?mode=flip&at=$F10_AT&n=1" >/dev/null
check "checksums: a byte damaged once on its way: read again, right" member_is "$M" c/f10.bin
check "checksums: ... one failure, one refetch" \
	test "$(stat_of "$M" checksum_failures) $(stat_of "$M" checksum_refetches)" = "1 1"
proxy_ctl "fault?mode=flip&at=$F20_AT&n=-1" >/dev/null
check "checksums: a byte damaged on every fetch: EIO" expect_fail "" cat "$M/c/f20.bin"
check "checksums: ... said, naming the member" \
	grep -q "error: $URL: member 'f20.bin' .* fail their checksum (CRC32C) again: EIO" "$(sfs_log "$M")"
proxy_ctl 'fault?mode=off' >/dev/null
fails=$(stat_of "$M" checksum_failures)
check "checksums: once the damage stops, the member reads right" member_is "$M" c/f20.bin
check "checksums: ... fetched anew: the bad copy left the caches (no failure more)" \
	test "$(stat_of "$M" checksum_failures)" = "$fails"
sfs_umount "$M"
sfs_mount "$URL" "$M" -o checksums,index_dir="$T/hidx",cache_mem=1M,cache_dir="$T/blocks" ||
	{ echo "not ok - http cache_dir remount"; exit 1; }
check "checksums: cache_dir kept the refetched block, not the damaged one" \
	member_is "$M" c/f10.bin
check "checksums: ... with no failure" test "$(stat_of "$M" checksum_failures)" = 0
sfs_umount "$M"

# ---- 2b. the same tar gzipped and xz-compressed, over HTTP: a byte of
# the compressed stream inverted on its way fails the span's CRC-32s (the
# first pass's, zsource.c) before any member's CRC32C: the span's
# compressed bytes are read again past every cache, once, as a plain
# tar's member is (xz: by a decoder of its own from the block's start);
# damaged on every fetch, EIO, said
gzip -n -c "$T/www/t.tar" >"$T/www/t.tar.gz"
xz -T1 -c "$T/www/t.tar" >"$T/www/t.tar.xz"
gz_eio() {
	local out
	out=$("$PY" -c "$CHECK" "$M" never "$T/www/t.tar") || { echo "$out"; return 1; }
	echo "    $out"
	[ "$(awk '{ print $4 }' <<<"$out")" -ge 1 ]
}
M=$T/m2b
for z in gz xz; do
	ZSIZE=$(stat -c %s "$T/www/t.tar.$z")
	URLZ=$(proxy_url "t.tar.$z")
	ZOPTS="checksums,index_dir=$T/zidx,cache_mem=64M"	# no block evicted unread
	sfs_mount "$URLZ" "$M" -o "$ZOPTS" || { echo "not ok - http $z mount"; exit 1; }
	sfs_umount "$M"
	sfs_mount "$URLZ" "$M" -o "$ZOPTS" || { echo "not ok - http $z remount"; exit 1; }
	check "checksums, $z: the saved index and table are used (no second pass)" \
		grep -q "using the saved index" "$(sfs_log "$M")"
	proxy_ctl reset >/dev/null
	proxy_ctl "fault?mode=flip&at=$((ZSIZE / 2))&n=1" >/dev/null
	check "checksums, $z: a compressed byte damaged once on its way: every member right" \
		"$PY" -c "$CHECK" "$M" exact "$T/www/t.tar"
	check "checksums, $z: ... the damage was sent once" test "$(proxy_stat faults)" = 1
	# (two readers of the span may both have taken the damaged copy)
	check "checksums, $z: ... failures counted, each read again, right" \
		test "$(stat_of "$M" checksum_failures)" -ge 1 -a \
		"$(stat_of "$M" checksum_failures)" = "$(stat_of "$M" checksum_refetches)"
	check "checksums, $z: ... said, naming the URL and the span's offsets" \
		grep -q "warning: $URLZ: span at uncompressed offset [0-9]* (compressed [0-9]*): .*: read again past every cache" "$(sfs_log "$M")"
	sfs_umount "$M"
	sfs_mount "$URLZ" "$M" -o "$ZOPTS" || { echo "not ok - http $z remount 2"; exit 1; }
	proxy_ctl "fault?mode=flip&at=$((ZSIZE * 3 / 4))&n=-1" >/dev/null
	check "checksums, $z: damaged on every fetch: EIO, never other bytes" gz_eio
	check "checksums, $z: ... said, naming the URL and the span's offsets" \
		grep -q "error: $URLZ: span at uncompressed offset [0-9]* (compressed [0-9]*): .*, read again too: EIO" "$(sfs_log "$M")"
	check "checksums, $z: ... counted" test "$(stat_of "$M" checksum_refetches)" -ge 1
	sfs_umount "$M"
	proxy_ctl 'fault?mode=off' >/dev/null
done

# ---- 4. the store's CRC32C of an object read whole (x-goog-hash)
M=$T/m4
proxy_ctl 'reset' >/dev/null
proxy_ctl "fault?mode=flip&at=$SMALL_MID&n=1" >/dev/null
sfs_mount "$(proxy_url small.tar)" "$M" -o index_dir="$T/gidx" || { echo "not ok - small.tar mount"; exit 1; }
small_right() {
	"$PY" -c 'import sys, tarfile
t = tarfile.open(sys.argv[2])
for m in t.getmembers():
    if open(sys.argv[1] + "/" + m.name, "rb").read() != t.extractfile(m).read():
        sys.exit("    %s differs" % m.name)' "$M" "$T/www/small.tar"
}
check "checksums: an object damaged on its way once: fails x-goog-hash's CRC32C, fetched again" \
	test "$(proxy_stat faults) $(stat_of "$M" checksum_failures)" = "1 1"
check "checksums: ... and read right" small_right
sfs_umount "$M"
mkdir -p "$T/m5"
SFS_MOUNTS+=("$T/m5")	# unmounted on exit should it mount after all
check "checksums: an object whose x-goog-hash never matches: no mount, said" \
	expect_fail "fails the store's CRC32C of the object" \
	timeout 60 "$SAMPLEFS" -f "$(http_url bad.tar)" "$T/m5" -o index_dir="$T/gidx",retries=1,build_timeout=1

# ---- 4b. S3's x-amz-checksum-crc32c, asked for (nginx as the store;
# part 5 sets Swift's credentials again)
M=$T/m4b
export AWS_ACCESS_KEY_ID=sfs-test AWS_SECRET_ACCESS_KEY=sfs-test-secret
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
S3N="endpoint=http://127.0.0.1:$HTTP_PORT,index_dir=$T/s3nidx"
check "checksums: S3 object with its x-amz-checksum-crc32c: mounts (the checksum asked for)" \
	sfs_mount s3://sbkt/small.tar "$M" -o "$S3N"
check "checksums: ... and reads right" small_right
check "checksums: ... with no failure" test "$(stat_of "$M" checksum_failures)" = 0
sfs_umount "$M"
mkdir -p "$T/m4c"
SFS_MOUNTS+=("$T/m4c")	# unmounted on exit should it mount after all
check "checksums: an S3 object whose x-amz-checksum-crc32c never matches: no mount, said" \
	expect_fail "fails the store's CRC32C of the object" \
	timeout 60 "$SAMPLEFS" -f s3://sbkt/bad.tar "$T/m4c" -o "$S3N",retries=1,build_timeout=1

# ---- 5. S3 (Swift's S3 API): the object changed on the store's disk,
# same size, its ETag and dates kept (a bit flipped under the server)
check "checksums: Swift starts" swift_start || { sfs_done; exit 1; }
check "checksums: t.tar uploaded" swift_mkbucket sums
check "checksums: ... into the bucket" swift_put sums t.tar "$T/www/t.tar"
export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
M=$T/m6
S3OPTS="checksums,index_dir=$T/sidx,cache_mem=1M,endpoint=$SWIFT_S3"
sfs_mount s3://sums/t.tar "$M" -o "$S3OPTS" || { echo "not ok - s3 mount"; exit 1; }
check "checksums: over S3 every member reads tarfile's bytes" "$PY" -c "$CHECK" "$M" exact "$T/www/t.tar"
sfs_umount "$M"
# the same object through the fault proxy (the client's Host kept: it is
# signed), one byte inverted in 30 % of Swift's bodies: the index built
# first with the proxy doing nothing, then every member exact or EIO
proxy_stop
proxy_start "$SWIFT_S3" --keep-host || { echo "not ok - proxy before Swift"; exit 1; }
S3P="checksums,index_dir=$T/spidx,cache_mem=1M,endpoint=$(proxy_url)"
S3PLAIN="index_dir=$T/spidx-plain,cache_mem=1M,endpoint=$(proxy_url)"
sfs_mount s3://sums/t.tar "$M" -o "$S3P" || { echo "not ok - s3 mount through the proxy"; exit 1; }
sfs_umount "$M"
sfs_mount s3://sums/t.tar "$M" -o "$S3PLAIN" || { echo "not ok - s3 plain mount through the proxy"; exit 1; }
sfs_umount "$M"
proxy_ctl 'chaos?rate=0.3&seed=29&modes=flip&method=GET' >/dev/null
sfs_mount s3://sums/t.tar "$M" -o "$S3P" || { echo "not ok - s3 remount through the proxy"; exit 1; }
check "checksums: over S3 with 30 % of bodies damaged every file reads tarfile's bytes or EIO, most right" \
	http_never_wrong
check "checksums: ... failures and refetches counted" \
	test "$(stat_of "$M" checksum_failures)" -gt 0 -a "$(stat_of "$M" checksum_refetches)" -gt 0
sfs_umount "$M"
sfs_mount s3://sums/t.tar "$M" -o "$S3PLAIN" || { echo "not ok - s3 plain remount through the proxy"; exit 1; }
check "checksums: over S3 without them some file reads wrong bytes" \
	"$PY" -c "$CHECK" "$M" wrong "$T/www/t.tar"
sfs_umount "$M"
proxy_ctl 'chaos?rate=0' >/dev/null
DATA=$(find "$SWIFT_DIR/srv" -name '*.data' -size "$(stat -c %s "$T/www/t.tar")c" | head -1)
F05_AT=$("$PY" -c 'import sys, tarfile
m = tarfile.open(sys.argv[1]).getmember("c/f05.bin")
print(m.offset_data + m.size // 2)' "$T/www/t.tar")
check "checksums: the object's file on the store's disk found" test -n "$DATA"
"$PY" -c 'import os, sys
p, at = sys.argv[1], int(sys.argv[2])
st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0xff]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))' "$DATA" "$F05_AT"
sfs_mount s3://sums/t.tar "$M" -o "$S3OPTS" || { echo "not ok - s3 remount"; exit 1; }
check "checksums: over S3 the changed member gives EIO, the others tarfile's bytes" \
	"$PY" -c "$CHECK" "$M" eio_only "$T/www/t.tar" c/f05.bin
check "checksums: ... read again past the caches first, then said" \
	grep -q "error: s3://sums/t.tar: member 'f05.bin' .* fail their checksum (CRC32C) again: EIO" "$(sfs_log "$M")"
check "checksums: ... counted" test "$(stat_of "$M" checksum_refetches)" -ge 1
sfs_umount "$M"

# ---- 6. a tar stored in a zip, expanded in place: its members are the
# zip's bytes, with no checksum of their own (the zip's source has none);
# each reads tarfile's bytes, with checksums given and at a remount of the
# same index without them
"$PY" - "$T/nz.zip" <<'PY'
import io, random, sys, tarfile, zipfile
rnd = random.Random(6)
b = io.BytesIO()
with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for i in range(5):
        data = rnd.randbytes(rnd.randrange(100, 90000))
        ti = tarfile.TarInfo("f%d" % i); ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr(zipfile.ZipInfo("inner.tar"), b.getvalue())   # stored
    z.writestr("plain.bin", rnd.randbytes(5000), zipfile.ZIP_DEFLATED)
PY
nested_right() {	# MNT: inner.tar's members as tarfile reads them
	"$PY" -c 'import io, sys, tarfile, zipfile
t = tarfile.open(fileobj=io.BytesIO(zipfile.ZipFile(sys.argv[2]).read("inner.tar")))
for m in t.getmembers():
    if open(sys.argv[1] + "/inner/" + m.name, "rb").read() != t.extractfile(m).read():
        sys.exit("    inner/%s differs" % m.name)' "$1" "$T/nz.zip"
}
M=$T/m7
sfs_mount "$T/nz.zip" "$M" -o checksums,index_dir="$T/nzidx" || { echo "not ok - nested zip mount"; exit 1; }
check "checksums: the members of a tar stored in a zip read tarfile's bytes" nested_right "$M"
sfs_umount "$M"
sfs_mount "$T/nz.zip" "$M" -o index_dir="$T/nzidx" || { echo "not ok - nested zip remount"; exit 1; }
check "checksums: ... and at a remount without -o checksums" nested_right "$M"
sfs_umount "$M"

# ---- 3. a prebuilt index with checksums, made before the change
M=$T/m3
sfs_mount "$T/t.tar" "$M" -o index="$T/pre.sfsidx",index_only,index_dir="$T/idx3" ||
	{ echo "not ok - prebuilt mount"; exit 1; }
check "checksums: a mount of the prebuilt index checks with it" \
	"$PY" -c "$CHECK" "$M" eio_only "$T/www/t.tar" a/small.bin a/mid.bin b/big.bin
sfs_umount "$M"
sfs_done
