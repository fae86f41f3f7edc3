#!/usr/bin/env bash
# Bucket sources over S3, against OpenStack Swift's s3api on loopback
# (swift_lib.sh): every layout mounted from s3://BUCKET/PREFIX/ (and an
# object, s3://BUCKET/KEY) equals the same layout mounted from the same
# files on disk, names, types, sizes and bytes; listings of many pages
# (max_keys=2); keys with spaces, '+', '=' and unicode; a remount with the
# saved index; a wrong secret, an unknown bucket (a prefix, an object or
# the bucket; a layout given or detected) and anonymous access refused at
# mount with one line naming the bucket, the key and the store's <Code>, the secret in no message; an object overwritten while
# mounted reads EIO with the one "changed since mounting" warning naming
# it; credentials from a profile in a credentials file; a session token
# sent as x-amz-security-token on every request (Swift's access log) and
# in no message; bucket options refused on a local source.  Issue 25 item
# 5: a refusal says which credentials signed (the environment, profile
# NAME of FILE) or that the request went unsigned, why, and how to give
# credentials; -o profile= wins over stale AWS_* keys.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/swift_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/data	# the files, uploaded and mounted locally
L=$T/ml M=$T/ms
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
# keys with spaces, '+', '=' and unicode, from the listing
make_quickdraw(w + "/qdlist", ["b", "a c", "crème brûlée", "x+y=z"], [13, 17, 5, 6],
               [11, 9, 4, 3], layout="official", seed=4)
make_imagenet(w + "/imagenet", pick_wnids(4, seed=3), per_class=5, n_val=9, seed=1)
rnd = random.Random(7)
def member(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data))
inner = io.BytesIO()
with tarfile.open(fileobj=inner, mode="w") as t:
    for i in range(5):
        member(t, "x/%d.txt" % i, bytes(rnd.getrandbits(8) for _ in range(700 * i)))
os.makedirs(w + "/tars")
with tarfile.open(w + "/tars/data.tar", "w", format=tarfile.GNU_FORMAT) as t:
    member(t, "inner.tar", inner.getvalue())
    for i in range(6):
        member(t, "d/f%d.bin" % i, os.urandom(rnd.choice([0, 1, 5000, 70000])))
# the overwrite test's tar (outside tars/): members far apart
for v in ("1", "2"):
    with tarfile.open(w + "/../big" + v + ".tar", "w") as t:
        for i in range(12):
            member(t, "m%02d.bin" % i, os.urandom(1 << 20))
with tarfile.open(w + "/tars/small é+1.tar", "w") as t:
    member(t, "one.bin", os.urandom(3000))
os.makedirs(w + "/npy")
np.save(w + "/npy/arr.npy", np.arange(3 * 5 * 7, dtype="<f4").reshape(3, 5, 7))
np.save(w + "/npy/b c.npy", np.arange(4 * 9, dtype="<i2").reshape(4, 9))
PY

check "Swift starts (s3api, tempauth)" swift_start || { sfs_done; exit 1; }
B=sfs-data
check "bucket $B made" swift_mkbucket "$B"
check "fixtures uploaded (keys with spaces and unicode)" swift_put_tree "$B" "" "$W"
check "local files given their objects' mtimes" swift_mtimes "$B" "" "$W"

export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
EP="endpoint=$SWIFT_S3"

# compare NAME LOCAL-SOURCE S3-SOURCE OPTIONS: both mounted with OPTIONS,
# the bucket with the endpoint and two keys a listing page too
compare() {
	local name=$1 src=$2 url=$3 opts=$4
	check "$name: local mount" sfs_mount "$src" "$L" -o "$opts,index_dir=$T/idx-l"
	check "$name: mount of $url" sfs_mount "$url" "$M" -o "$opts,$EP,max_keys=2,index_dir=$T/idx-s"
	check "$name: the same tree and bytes from the bucket as from disk" sfs_same_mounts "$L" "$M"
	check "$name: unmount local" sfs_umount "$L"
	check "$name: unmount bucket" sfs_umount "$M"
}
compare "quickdraw, classes.txt" "$W/qd" "s3://$B/qd/" layout=quickdraw,per_class=6
compare "quickdraw, the bucket's listing" "$W/qdlist" "s3://$B/qdlist/" layout=quickdraw
compare "quickdraw, detected" "$W/qdlist" "s3://$B/qdlist" ""
compare "imagenet" "$W/imagenet" "s3://$B/imagenet/" layout=imagenet,shard_size=4
compare "tar, one object" "$W/tars/data.tar" "s3://$B/tars/data.tar" layout=tar
compare "tars, a prefix" "$W/tars" "s3://$B/tars/" layout=tar
compare "npy, a prefix" "$W/npy" "s3://$B/npy/" layout=npy
compare "npy, a key with a space" "$W/npy/b c.npy" "s3://$B/npy/b c.npy" layout=npy

check "imagenet: remount with the saved index" \
	sfs_mount "s3://$B/imagenet/" "$M" -o "layout=imagenet,shard_size=4,$EP,index_dir=$T/idx-s"
check "remount: index reused (log)" grep -q "using the saved index" "$(sfs_log "$M")"
# the secret ("testing") is in the daemon's environment only
no_secret_of() { local s=$1; shift; ! grep -aq -e "$s" "$@"; }
no_secret() { no_secret_of "$SWIFT_SECRET_KEY" "$@"; }
check "the secret is not in /proc/PID/cmdline" no_secret "/proc/${SFS_PID_OF[$M]}/cmdline"
check "the secret is in no message" no_secret "$(sfs_log "$M")"
check "the secret is in no index file" no_secret -r "$T/idx-s"
check "imagenet: unmount" sfs_umount "$M"

# ---- refused at mount, with one line saying why ----
mkdir -p "$M"
check "a wrong secret: refused, naming the bucket and SignatureDoesNotMatch" \
	expect_fail "bucket $B.*SignatureDoesNotMatch" env AWS_SECRET_ACCESS_KEY=not-the-secret \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
check "a wrong secret: the secret in no message" \
	bash -c '! env AWS_SECRET_ACCESS_KEY=not-the-secret "$@" 2>&1 | grep -q "not-the-secret\|testing"' _ \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/" "$M"
check "a wrong secret, listing a prefix: refused, naming it" \
	expect_fail "listing: bucket $B, key \"tars/\".*SignatureDoesNotMatch" \
	env AWS_SECRET_ACCESS_KEY=not-the-secret \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/" "$M"
one_line() {	# PATTERN CMD...: CMD fails with exactly one line, matching PATTERN
	local pat=$1 err; shift
	err=$("$@" 2>&1) && { echo "    succeeded: $err"; return 1; }
	[ "$(grep -c . <<<"$err")" = 1 ] || { echo "    not one line:"; echo "$err" | sed 's/^/      /'; return 1; }
	grep -q -- "$pat" <<<"$err" || { echo "    want '$pat': $err"; return 1; }
}
for src in "s3://$B/tars/data.tar" "s3://$B/tars/" "s3://$B/qd/"; do
	check "a wrong secret, $src: one line" one_line "SignatureDoesNotMatch" \
		env AWS_SECRET_ACCESS_KEY=not-the-secret "$SAMPLEFS" \
		-o "$EP,index_dir=$T/idx-x" "$src" "$M"
done
for src in "s3://no-such-bucket/tars/" "s3://no-such-bucket/tars/data.tar" "s3://no-such-bucket"; do
	for lay in layout=tar, ""; do
		check "no such bucket, $src ${lay:-detected}: one line, the bucket, key and NoSuchBucket" \
			one_line "bucket no-such-bucket, key \"[^\"]*\" at .*HTTP 404 NoSuchBucket" \
			"$SAMPLEFS" -o "$lay$EP,index_dir=$T/idx-x" "$src" "$M"
	done
done
check "anonymous (Swift's s3api serves none: 400): refused, naming the bucket, saying the request was unsigned and how to sign" \
	expect_fail "bucket $B, key \"tars/data.tar\".*HTTP 400.*the request was unsigned: -o anonymous; a private bucket wants credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, or a profile of ~/.aws/credentials (samplefs -o profile=NAME, samplefs-download --profile NAME)" \
	"$SAMPLEFS" -o "layout=tar,$EP,anonymous,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
# issue 25 item 5: no credentials anywhere (no keys, no file): unsigned, said
mkdir -p "$T/nohome"
check "no credentials at all: refused, saying none were found and how to give some" \
	expect_fail "bucket $B.*HTTP 4[0-9][0-9].*the request was unsigned: no credentials found.*a private bucket wants credentials" \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$T/nohome" \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
check "a wrong secret: the message says the keys came from the environment" \
	expect_fail "SignatureDoesNotMatch.*signed with the credentials of the environment (AWS_ACCESS_KEY_ID)" \
	env AWS_SECRET_ACCESS_KEY=not-the-secret \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
check "bucket options on a local source: refused" \
	expect_fail "endpoint applies to bucket sources only" \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "$W/tars/data.tar" "$M"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"

# ---- credentials from a profile of a credentials file ----
printf '[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[swift]\n# the test store\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$SWIFT_ACCESS_KEY" "$SWIFT_SECRET_KEY" >"$T/credentials"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
export AWS_SHARED_CREDENTIALS_FILE=$T/credentials
check "profile=swift from the credentials file: mounts" \
	sfs_mount "s3://$B/tars/data.tar" "$M" -o "layout=tar,$EP,profile=swift,index_dir=$T/idx-p"
check "profile=swift: the same bytes" cmp "$M/d/f1.bin" <(tar -xOf "$W/tars/data.tar" d/f1.bin)
# issue 25 item 5: config shows the bucket options in force (no region given, none in the environment)
check "config: region=us-east-1 in force, profile=swift, timeout=30" \
	bash -c "grep -qx region=us-east-1 '$M/.samplefs/config' && grep -qx profile=swift '$M/.samplefs/config' && grep -qx timeout=30 '$M/.samplefs/config'"
check "unmount" sfs_umount "$M"
check "the default profile (other keys): refused, naming the bucket and the profile used" \
	expect_fail "bucket $B.*HTTP 403.*signed with the credentials of profile default of $T/credentials" \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
# issue 25 item 5: -o profile= wins over stale AWS_* keys, as the AWS CLI's --profile
check "profile=swift with stale keys in the environment: the profile wins, mounts" \
	env AWS_ACCESS_KEY_ID=stale AWS_SECRET_ACCESS_KEY=stale-secret \
	"$SAMPLEFS" -o "layout=tar,$EP,profile=swift,index_dir=$T/idx-p" "s3://$B/tars/data.tar" "$M"
check "profile=swift over stale keys: the same bytes" cmp "$M/d/f1.bin" <(tar -xOf "$W/tars/data.tar" d/f1.bin)
check "profile=swift over stale keys: unmount" fusermount3 -u "$M"
check "stale keys, no profile=: the keys are used (AWS_PROFILE does not win over them)" \
	expect_fail "HTTP 403.*the environment (AWS_ACCESS_KEY_ID)" \
	env AWS_ACCESS_KEY_ID=stale AWS_SECRET_ACCESS_KEY=stale-secret AWS_PROFILE=swift \
	"$SAMPLEFS" -o "layout=tar,$EP,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
check "a profile the file lacks: refused, naming the file and the profile" \
	expect_fail "credentials: no credentials for profile nosuch" \
	"$SAMPLEFS" -o "layout=tar,$EP,profile=nosuch,index_dir=$T/idx-x" "s3://$B/tars/data.tar" "$M"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
unset AWS_SHARED_CREDENTIALS_FILE
export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY

# ---- a session token (AWS_SESSION_TOKEN) goes as x-amz-security-token ----
# Swift's s3api does not check it (it is signed with the rest, so the
# signature still holds); its access log shows the header it received
TOKEN=sfs-session-token-7f3a9c
mark=$(swift_log_mark)
export AWS_SESSION_TOKEN=$TOKEN
check "AWS_SESSION_TOKEN: mounts" \
	sfs_mount "s3://$B/tars/data.tar" "$M" -o "layout=tar,$EP,index_dir=$T/idx-t"
check "AWS_SESSION_TOKEN: the same bytes" cmp "$M/d/f1.bin" <(tar -xOf "$W/tars/data.tar" d/f1.bin)
TLOG=$(sfs_log "$M")
check "AWS_SESSION_TOKEN: unmount" sfs_umount "$M"
unset AWS_SESSION_TOKEN
tok_lines() { swift_log_lines "$mark" | awk -F'\t' -v t="X-Amz-Security-Token:%20$TOKEN" 'index($5, t) { n++ } END { print n + 0 }'; }
all_lines() { swift_log_lines "$mark" | grep -c .; }
check "AWS_SESSION_TOKEN: every request carried it (Swift's log)" \
	test "$(tok_lines)" -ge 1 -a "$(tok_lines)" = "$(all_lines)"
check "AWS_SESSION_TOKEN: the token is in no message" no_secret_of "$TOKEN" "$TLOG"
check "AWS_SESSION_TOKEN: the token is in no index file" no_secret_of "$TOKEN" -r "$T/idx-t"

# ---- a mount of an object asks for its stamp once ----
# (the layout's choice before the fork, the layout, the open and the
# index's check each looked, one HEAD after another: 4 HEADs, 80 ms at a
# store's 20 ms; the answer now stands for a second)
mark=$(swift_log_mark)
check "one HEAD a mount: mounts" \
	sfs_mount "s3://$B/tars/data.tar" "$M" -o "layout=tar,$EP,index_dir=$T/idx-h"
check "one HEAD a mount: the same bytes" cmp "$M/d/f1.bin" <(tar -xOf "$W/tars/data.tar" d/f1.bin)
check "one HEAD a mount: unmount" sfs_umount "$M"
heads() { swift_log_lines "$mark" | awk -F'\t' '$1 == "HEAD" && index($2, "data.tar") { n++ } END { print n + 0 }'; }
check "one HEAD a mount: Swift's log shows 1 HEAD of the object (got $(heads))" test "$(heads)" = 1

# ---- an object overwritten while mounted ----
BIG="s3://$B/big one.tar"
check "big one.tar uploaded" swift_put "$B" "big one.tar" "$T/big1.tar"
# cache_mem=1M: the build streams through the tar and keeps its blocks in
# memory, and the reads after the overwrite must reach the store
check "big one.tar: mount" sfs_mount "$BIG" "$M" -o "layout=tar,$EP,index_dir=$T/idx-b,cache_mem=1M"
read_as() {	# MEMBER TAR: the bytes tarfile gives for it
	cmp -s "$M/$1" <(tar -xOf "$2" "$1")
}
read_eio() {	# MEMBER: EIO, within 60 s (a hang is a failure, not a wait)
	local out
	out=$(timeout 60 cat "$M/$1" 2>&1 >/dev/null)
	[ $? -ne 124 ] && grep -q "Input/output error" <<<"$out"
}
check "big one.tar: m00.bin as stored" read_as m00.bin "$T/big1.tar"
check "big one.tar overwritten (same size, other bytes)" swift_put "$B" "big one.tar" "$T/big2.tar"
check "overwritten: m11.bin gives EIO" read_eio m11.bin
check "overwritten: 'changed since mounting' names the object" \
	grep -q "s3://$B/big one.tar: changed since mounting" "$(sfs_log "$M")"
check "overwritten: one warning" \
	test "$(grep -c "changed since mounting" "$(sfs_log "$M")")" = 1
check "overwritten: m05.bin gives EIO too" read_eio m05.bin
check "big one.tar: unmount" sfs_umount "$M"

sfs_done
