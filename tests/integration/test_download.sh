#!/usr/bin/env bash
# samplefs-download against two stores, checked against the bytes the
# servers hold (the files uploaded or served, compared with diff -r / cmp):
#  - Swift's s3api (signed S3 requests, ETags that are MD5s): a Quick,
#    Draw! tree and names with spaces fetched 4 at a time; a second run
#    skips everything; a .part holding the start of a file is resumed
#    with a Range; a .part of wrong bytes is caught by the MD5 (a warning
#    names the .part and why it is fetched again) and the
#    file fetched again whole; DEST then mounts as the source does;
#  - GCS's XML API, anonymously: the recorded pages of test_gcs.sh
#    (gcs_pages.py) served by nginx, through tests/integration/fault_proxy.py:
#    the whole prefix, a class filter (--classes, read by the Quick, Draw!
#    layout's parser: the mount of DEST equals the source's mount with
#    classes=), --include, a storm of 503s absorbed by the retries, a
#    connection cut mid-file (resumed within the run), a run killed with
#    SIGKILL mid-file and run again (resumed, not restarted), Ctrl-C
#    (SIGINT: exit 130, the .part kept), and a file of URLs with one that
#    is not there (exit 1, the file named).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/swift_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www
DL=${SAMPLEFS_DOWNLOAD:-$SFS_BIN/samplefs-download}
export SFS_ROOT

"$PY" "$(dirname "$0")/gcs_pages.py" "$W" || { echo "not ok - fixtures"; exit 1; }
Q=$W/qdb/qd	# the Quick, Draw! tree, as files
mkdir -p "$T/misc/a b"
head -c 300000 /dev/urandom >"$T/misc/a b/c d.dat"
head -c 5 /dev/urandom >"$T/misc/x y.dat"

# dl OUT ARGS...: samplefs-download ARGS with its stdout into OUT
dl() { local out=$1; shift; "$DL" "$@" >"$out"; }
# lines LOG TAG: how many lines of LOG start with [TAG]
lines() { grep -c "^\[$2\]" "$1"; }
# only_tag LOG TAG N: LOG has N lines, all [TAG]
only_tag() { [ "$(wc -l <"$1")" = "$3" ] && [ "$(lines "$1" "$2")" = "$3" ]; }

# ---- Swift ----
check "Swift starts (s3api, tempauth)" swift_start || { sfs_done; exit 1; }
export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
uploads() { swift_mkbucket dlb && swift_put_tree dlb qd/ "$Q" && swift_put_tree dlb misc/ "$T/misc"; }
check "uploads" uploads
S3="--endpoint $SWIFT_S3"
check "s3://: a Quick, Draw! tree, 4 at a time" dl "$T/o1" -j 4 $S3 s3://dlb/qd/ "$T/d1"
check "s3://: every byte as uploaded" diff -r "$Q" "$T/d1"
check "s3://: one [DOWNLOAD] line per file" only_tag "$T/o1" DOWNLOAD 6
check "s3://: run again: every file skipped" dl "$T/o2" -j 4 $S3 s3://dlb/qd/ "$T/d1"
check "s3://: run again: six [SKIP] lines" only_tag "$T/o2" SKIP 6
F="sketchrnn/a c.npz" P="$T/d1/sketchrnn/.a c.npz.part"
n=$(stat -c %s "$Q/$F")
head -c $((n / 2)) "$Q/$F" >"$P" && rm "$T/d1/$F"
check "s3://: a .part with the file's first half: resumed" dl "$T/o3" $S3 s3://dlb/qd/ "$T/d1"
check "s3://: resumed with a Range from its size" grep -qx "\[DOWNLOAD\] $F (resumed at byte $((n / 2)))" "$T/o3"
check "s3://: resumed: the same bytes" cmp "$Q/$F" "$T/d1/$F"
check "s3://: resumed: no .part left" test ! -e "$P"
head -c $((n / 2)) /dev/zero >"$P" && rm "$T/d1/$F"
dl_e() { local out=$1 err=$2; shift 2; "$DL" "$@" >"$out" 2>"$err"; }
check "s3://: a .part of wrong bytes: fetched again" dl_e "$T/o4" "$T/e4" $S3 s3://dlb/qd/ "$T/d1"
# issue 25 item 5: and says why, naming the .part
check "s3://: wrong bytes: one warning names the .part, the kept bytes and the MD5s" \
	test "$(grep -c "warning: $P: the $((n / 2)) bytes kept from an earlier run are damaged or another version's (MD5 of the whole [0-9a-f]\{32\}, expected [0-9a-f]\{32\}): fetching $F whole again" "$T/e4")" = 1
check "s3://: wrong bytes: resumed, then fetched whole (two starts)" \
	test "$(grep -c "^\[DOWNLOAD\] $F" "$T/o4")" = 2
check "s3://: wrong bytes: the MD5 caught them" cmp "$Q/$F" "$T/d1/$F"
echo junk >"$T/d1/numpy_bitmap/b.npy"
check "s3://: a complete file of another size: fetched again" dl "$T/o5" $S3 s3://dlb/qd/ "$T/d1"
check "s3://: another size: the right bytes" cmp "$Q/numpy_bitmap/b.npy" "$T/d1/numpy_bitmap/b.npy"
# issue 25 item 5: --profile (the hint names it), used over stale AWS_* keys
printf '[swift]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$SWIFT_ACCESS_KEY" "$SWIFT_SECRET_KEY" >"$T/credentials"
check "s3://: a wrong secret: the hint names --profile, not a mount option alone" \
	expect_fail "SignatureDoesNotMatch.*samplefs-download --profile NAME" \
	env AWS_SECRET_ACCESS_KEY=stale "$DL" $S3 s3://dlb/misc/ "$T/d-stale"
check "s3://: --profile swift over stale AWS_* keys: downloads" \
	env AWS_ACCESS_KEY_ID=stale AWS_SECRET_ACCESS_KEY=stale AWS_SHARED_CREDENTIALS_FILE="$T/credentials" \
	"$DL" -q --profile swift $S3 s3://dlb/misc/ "$T/d-prof"
check "s3://: --profile: the same bytes" diff -r "$T/misc" "$T/d-prof"
check "s3://: names with spaces, in directories" dl /dev/null -j 2 $S3 s3://dlb/misc/ "$T/d2"
check "s3://: names with spaces: the same bytes" diff -r "$T/misc" "$T/d2"
check "local mount of the source" sfs_mount "$Q" "$T/ml" -o "layout=quickdraw,index_dir=$T/i1"
check "local mount of the download" sfs_mount "$T/d1" "$T/md" -o "layout=quickdraw,index_dir=$T/i2"
check "the download mounts as the source: the same tree and bytes" sfs_same_mounts "$T/ml" "$T/md"
check "unmount" sfs_umount "$T/md"
check "unmount" sfs_umount "$T/ml"
swift_stop

# ---- GCS, through the fault proxy ----
HTTP_EXTRA=$HTTP_GCS_QDB
check "nginx serves the bucket" http_start "$W"
check "the fault proxy starts" proxy_start "$(http_url)"
unset GOOGLE_OAUTH_ACCESS_TOKEN
G="--endpoint $(proxy_url)"
check "gs://: the prefix, paged as GCS pages" dl /dev/null -j 3 $G gs://qdb/qd/ "$T/g1"
check "gs://: every byte as served" diff -r "$Q" "$T/g1"
printf 'a c\ncr\xc3\xa8me br\xc3\xbbl\xc3\xa9e\n' >"$T/classes.txt"
check "gs://: --classes" dl /dev/null $G --classes "$T/classes.txt" gs://qdb/qd/ "$T/g2"
check "gs://: --classes: those classes' files only" test "$(cd "$T/g2" && find . -type f | sort | tr '\n' '|')" = \
	"./numpy_bitmap/a c.npy|./numpy_bitmap/crème brûlée.npy|./sketchrnn/a c.npz|./sketchrnn/crème brûlée.npz|"
check "--classes: local mount with classes=" sfs_mount "$Q" "$T/ml" -o "layout=quickdraw,classes=$T/classes.txt,index_dir=$T/i3"
check "--classes: mount of the download" sfs_mount "$T/g2" "$T/md" -o "layout=quickdraw,index_dir=$T/i4"
check "--classes: the same tree and bytes" sfs_same_mounts "$T/ml" "$T/md"
check "unmount" sfs_umount "$T/md"
check "unmount" sfs_umount "$T/ml"
check "gs://: --include" dl /dev/null $G --include '*/b.np?' gs://qdb/qd/ "$T/g3"
check "gs://: --include: the matching files only" test "$(cd "$T/g3" && find . -type f | sort | tr '\n' '|')" = \
	"./numpy_bitmap/b.npy|./sketchrnn/b.npz|"
check "a storm of 503s armed" proxy_ctl 'fault?mode=503&n=15&method=GET&match=/qdb/qd/' >/dev/null
check "gs://: through a storm of 503s" dl /dev/null -j 3 --retries 30 $G gs://qdb/qd/ "$T/g4"
check "gs://: the storm was met (15 faults)" test "$(proxy_stat faults)" = 15
check "gs://: after the storm: every byte" diff -r "$Q" "$T/g4"
check "a connection cut mid-file armed" proxy_ctl 'fault?mode=cut&n=1&method=GET&match=/qdb/qd/numpy_bitmap/b.npy' >/dev/null
check "gs://: a connection cut mid-file" dl "$T/o8" -j 2 $G gs://qdb/qd/ "$T/g9"
check "gs://: cut: retried from where it stopped" grep -q "^\[DOWNLOAD\] numpy_bitmap/b.npy (resumed at byte [1-9]" "$T/o8"
check "gs://: cut: every byte" diff -r "$Q" "$T/g9"

# SIGKILL while a file is half sent (the proxy holds the rest back)
F="numpy_bitmap/b.npy" P="$T/g5/numpy_bitmap/.b.npy.part"
proxy_ctl reset >/dev/null
proxy_ctl 'fault?mode=stop&n=1&method=GET&match=/qdb/qd/numpy_bitmap/b.npy&max_s=20' >/dev/null
"$DL" -j 1 $G gs://qdb/qd/ "$T/g5" >"$T/o5" 2>&1 &
pid=$!
for i in $(seq 1 500); do [ -s "$P" ] && break; sfs_nap 0.02; done
kill -9 $pid; wait $pid 2>/dev/null
check "kill -9 mid-file: a .part left, no file" test -s "$P" -a ! -e "$T/g5/$F"
have=$(stat -c %s "$P")
check "kill -9: run again" dl "$T/o6" -j 1 $G gs://qdb/qd/ "$T/g5"
check "kill -9: resumed where it stopped" grep -qx "\[DOWNLOAD\] $F (resumed at byte $have)" "$T/o6"
check "kill -9: every byte" diff -r "$Q" "$T/g5"

# SIGINT while a file is half sent: a clean stop
proxy_ctl 'fault?mode=stop&n=1&method=GET&match=/qdb/qd/sketchrnn/b.npz&max_s=20' >/dev/null
P="$T/g6/sketchrnn/.b.npz.part"
"$DL" -j 1 $G gs://qdb/qd/ "$T/g6" >"$T/o7" 2>"$T/e7" &
pid=$!
for i in $(seq 1 500); do [ -s "$P" ] && break; sfs_nap 0.02; done
kill -INT $pid; wait $pid
check "Ctrl-C: exit status 130" test $? = 130
check "Ctrl-C: says how to finish" grep -q "interrupted: run it again" "$T/e7"
check "Ctrl-C: the .part kept" test -s "$P"
check "Ctrl-C: run again finishes" dl /dev/null -j 1 $G gs://qdb/qd/ "$T/g6"
check "Ctrl-C: every byte" diff -r "$Q" "$T/g6"

# a server trickling 100 bytes/s: under --min-rate for --timeout, each
# attempt fails (with the old 1 byte/s limit it went on until the proxy
# gave up, max_s), the file fails naming its URL and the rate seen, and a
# run once the server is well again resumes it
F="numpy_bitmap/b.npy" P="$T/g10/.b.npy.part"
proxy_ctl reset >/dev/null
proxy_ctl "fault?mode=trickle&rate=100&n=-1&method=GET&match=/qdb/qd/$F&max_s=30" >/dev/null
echo "gs://qdb/qd/$F" >"$T/one.txt"
t0=$(date +%s)
check "a trickle: the file fails, naming its URL and the rate seen" \
	expect_fail "\[FAIL\] b.npy: slower than 1024 bytes/s for 2 s .*: [0-9]* bytes/s seen.*(2 attempts) (gs://qdb/qd/$F)" \
	"$DL" --timeout 2 --min-rate 1k --retries 1 $G "$T/one.txt" "$T/g10"
echo "    a trickle: $(($(date +%s) - t0)) s for two attempts of 2 s"
check "a trickle: both attempts were the trickle's" test "$(proxy_stat faults)" = 2
check "a trickle: the bytes received are kept" test -s "$P"
proxy_ctl reset >/dev/null
check "a trickle, then a well server: resumed" dl "$T/o10" $G "$T/one.txt" "$T/g10"
check "a trickle, then a well server: resumed from the kept bytes" \
	grep -q "^\[DOWNLOAD\] b.npy (resumed at byte [1-9]" "$T/o10"
check "a trickle, then a well server: the same bytes" cmp "$Q/$F" "$T/g10/b.npy"

# a file of URLs, one of them missing
printf '# two objects and one that is not there\ngs://qdb/qd/numpy_bitmap/b.npy\n\n  %s  \ngs://qdb/qd/nothing.npy\n' \
	"$(proxy_url 'qdb/qd/sketchrnn/a c.npz')" >"$T/urls.txt"
check "a file of URLs with a missing one: exit status 1, naming it" \
	expect_fail "nothing.npy" "$DL" $G "$T/urls.txt" "$T/g7"
check "a file of URLs: the others fetched" bash -c 'cmp "$1/numpy_bitmap/b.npy" "$2/b.npy" &&
	cmp "$1/sketchrnn/a c.npz" "$2/a c.npz"' _ "$Q" "$T/g7"
echo "ftp://x/y" >"$T/bad.txt"
check "a bad line: refused, naming the line" expect_fail "bad.txt: line 1: not a URL" \
	"$DL" $G "$T/bad.txt" "$T/g8"

check "a local directory as SOURCE: refused" expect_fail "a local directory" "$DL" "$Q" "$T/g9"
check "no arguments: usage, exit status 2" bash -c '"$1" >/dev/null 2>&1; test $? = 2' _ "$DL"

sfs_done
