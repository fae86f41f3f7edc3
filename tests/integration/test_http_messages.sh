#!/usr/bin/env bash
# What a mount of a URL says when it cannot go on, or serves less than
# SOURCE holds (issue 16, items 4 and 5), against nginx on loopback:
#   - a directory URL whose probes all fail for one cause (TLS
#     verification, connection refused, 404) fails with that cause in one
#     line naming the URL, and no layout guess;
#   - -o cacert=FILE with no FILE fails at mount, naming it; the URL-only
#     options are refused on a local source;
#   - an ImageNet directory with other tars and no val tar or devkit says
#     what is not served, and names what each of its two indexes holds;
#   - samplefs-inspect --verify of a URL reads the tars the layout reads:
#     a broken header fails it (exit 1), and a good tar or ImageNet gives
#     the counts the same SOURCE on disk gives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www
M=$T/m
INSPECT=$SFS_BIN/samplefs-inspect
export SFS_ROOT
mkdir -p "$M"

"$PY" - "$W" <<'PY' || { echo "not ok - fixtures"; exit 1; }
import io, os, sys, tarfile
sys.path.insert(0, os.path.join(os.environ["SFS_ROOT"], "tests", "fixtures"))
from make_imagenet import make_imagenet, pick_wnids
w = sys.argv[1]
os.makedirs(w + "/qd")
open(w + "/qd/classes.txt", "w").write("cat\n")
# ImageNet: the train tar only, and two tars no layout=imagenet serves
make_imagenet(w + "/in", pick_wnids(2, seed=5), per_class=2, n_val=0, devkit=False, seed=2)
def tar(path, n):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for i in range(n):
            ti = tarfile.TarInfo("m%d.bin" % i)
            ti.size = 1000 + i
            t.addfile(ti, io.BytesIO(bytes([i]) * ti.size))
tar(w + "/in/extra1.tar", 1)
tar(w + "/in/extra2.tar", 1)
tar(w + "/good.tar", 4)
# broken.tar: member 1's header (at 1536, after m0's 1000 bytes in two
# blocks) has one byte of its name changed, so its checksum is wrong
tar(w + "/broken.tar", 4)
b = bytearray(open(w + "/broken.tar", "rb").read())
b[1536] ^= 0x20
open(w + "/broken.tar", "wb").write(b)
PY

check "nginx serves the fixtures (HTTP and HTTPS)" http_start -s "$W"

# one_line_fail NAME PATTERN ARGS...: samplefs ARGS fails, before mounting,
# with exactly one line, which matches PATTERN and guesses no layout
one_line_fail() {
	local pat=$1 err rc; shift
	err=$(timeout 60 "$SAMPLEFS" -f "$@" "$M" 2>&1); rc=$?
	if [ $rc -eq 0 ] || [ $rc -eq 124 ] || sfs_mounted "$M"; then
		echo "    rc=$rc: $err"; return 1
	fi
	[ "$(grep -c . <<<"$err")" = 1 ] || { echo "    not one line:"; echo "$err" | sed 's/^/      /'; return 1; }
	grep -q -- "$pat" <<<"$err" || { echo "    want '$pat': $err"; return 1; }
	! grep -q "cannot tell the layout\|use -o layout=" <<<"$err" || { echo "    a layout guess: $err"; return 1; }
}
SFS_MOUNTS+=("$M")
url=$(http_url -s qd/)
check "https directory, self-signed, no cacert=: one line, the TLS cause, the URL" \
	one_line_fail "^samplefs: error: $url: .*SSL certificate problem" -o index_dir="$T/idx" "$url"
url=$(http_url nothere/)
check "a directory URL that 404s: one line saying so, naming the URL" \
	one_line_fail "^samplefs: error: $url: not found on the server" -o index_dir="$T/idx" "$url"
url=$(http_url nothere.tar)
check "a file URL that 404s: one line saying so" \
	one_line_fail "^samplefs: error: $url: not found on the server" -o index_dir="$T/idx" "$url"
port=$(http_free_ports 1)	# nothing listens there
check "connection refused: one line, the cause" \
	one_line_fail "^samplefs: error: http://127.0.0.1:$port/qd/: .*Couldn't connect" \
	-o retries=1,index_dir="$T/idx" "http://127.0.0.1:$port/qd/"

check "-o cacert= a missing file: refused at mount, naming it" \
	one_line_fail "^samplefs: error: -o cacert=$T/no-ca.pem: No such file" \
	-o layout=tar,cacert="$T/no-ca.pem" "$(http_url -s good.tar)"
for o in cacert="$HTTP_CACERT" insecure timeout=5 retries=2 read_timeout=9; do
	check "-o ${o%%=*} on a local source: refused" expect_fail \
		"o ${o%%=*} applies to URL sources only (http://, https://, s3://, gs://), not $W/good.tar" \
		timeout 10 "$SAMPLEFS" -f -o "$o" "$W/good.tar" "$M"	# accepted: serves until killed
done
# the disk cache serves URLs and archives decompressed once (a 7z...):
# refused for a local tar, once it is known to be neither
for o in cache_dir="$T/cd" cache_dir_size=64M; do
	check "-o ${o%%=*} on a local tar: refused" expect_fail \
		"o ${o%%=*} applies to URL sources and to archives decompressed once (7-Zip, RAR, .*), and $W/good.tar is neither" \
		timeout 10 "$SAMPLEFS" -f -o "$o" "$W/good.tar" "$M"	# accepted: serves until killed
done
check "with cacert= the https tar mounts" sfs_mount "$(http_url -s good.tar)" "$M" \
	-o cacert="$HTTP_CACERT",index_dir="$T/idx"
check "unmount" sfs_umount "$M"

# ---- ImageNet over HTTP: what is not served is said ----
url=$(http_url in/)
check "ImageNet with two other tars, no val tar, no devkit: mounts" \
	sfs_mount "$url" "$M" -o index_dir="$T/idx"
log=$(sfs_log "$M")
for f in extra1.tar extra2.tar; do
	check "warns that $f is not served" \
		grep -q "warning: ${url}$f: not served (layout=imagenet serves ILSVRC2012_img_train.tar" "$log"
done
check "warns that /val is not served (no val tar)" \
	grep -q "warning: $url: layout=imagenet without ILSVRC2012_img_val.tar: /val is not served" "$log"
check "warns of the missing devkit" \
	grep -q "warning: $url: layout=imagenet without ILSVRC2012_devkit_t12.tar.gz: classes.txt has no words" "$log"
check "the train tar is not among the unserved" sh -c "! grep -q 'img_train.tar: not served' '$log'"
check "the two index lines say what each index holds" bash -c \
	"grep -q '^samplefs: $url: indexed the members of the tars in .*, into ' '$log' &&
	 grep -q '^samplefs: $url: indexed the classes, shards and splits in .*, into ' '$log'"
check "/train is served, /val is not" test "$(ls "$M" | tr '\n' ' ')" = "classes.txt epochs shards shuffled train "
check "unmount" sfs_umount "$M"

# ---- samplefs-inspect --verify of a URL ----
# verify_line SOURCE: the "Verified:" line of inspect --verify, exit status
# after it
verify_line() {
	local out rc
	out=$("$INSPECT" --verify -o quiet,index_dir="$T/idx-v" "$@" 2>"$T/verify.err"); rc=$?
	printf '%s rc=%s\n' "$(grep '^Verified:' <<<"$out")" "$rc"
}
got=$(verify_line "$(http_url broken.tar)")
check "--verify of a URL tar with a broken header: FAILED, exit 1 ($got)" \
	grep -q "^Verified: 1 members, 1000 bytes in 1 tars: FAILED rc=1$" <<<"$got"
check "... naming the member before the damage" \
	grep -q "verify: $(http_url broken.tar): damaged after member 'm0.bin' (header at offset 0)" "$T/verify.err"
want=$(verify_line "$W/good.tar")
check "the good tar on disk verifies ($want)" grep -q "^Verified: 4 members, 4006 bytes in 1 tars: ok rc=0$" <<<"$want"
got=$(verify_line "$(http_url good.tar)")
check "--verify of the good tar over HTTP: as on disk ($got)" test "$got" = "$want"
want=$(verify_line "$W/in")
got=$(verify_line -o layout=imagenet "$(http_url in/)")
check "--verify of ImageNet over HTTP: as on disk ($got)" test "$got" = "$want"
check "... which read its train tar ($want)" grep -q "in 1 tars: ok rc=0$" <<<"$want"
sfs_done
