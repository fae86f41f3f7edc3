#!/usr/bin/env bash
# A cluster on one machine, against a bucket (issue 17): a tar in Swift's
# s3api on loopback (swift_lib.sh); eight mounts of s3://BUCKET/data.tar
# started at once on one shared index_dir, then a prebuilt index uploaded
# to the bucket by samplefs-inspect --save-index=s3://BUCKET/KEY and taken
# with index=s3://...,index_only by eight more.  Every mount serves GNU
# tar's tree (tree_compare.py against tar -x), and Swift's access log (the
# proxy's, read back by swift_log_lines) shows the data GETs of one index
# build, not eight, then none, and the prebuilt index fetched once; the
# uploaded object holds the bytes --save-index writes to a file; then the
# same for a .tar.gz, whose access points come with the prebuilt index: no
# GET of it at mount.  Then
# what fails: an upload to a bucket that is not there, to a prefix, with a
# wrong secret.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/swift_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
sfs_setup
T=$SFS_TMP
mkdir -p "$T/x"
INSPECT=$SFS_BIN/samplefs-inspect
export TMPDIR=$T/tmp	# where --save-index=s3://... builds
mkdir -p "$TMPDIR"

cluster_tar "$T/data.tar" 400 23 5 >"$T/last.off" || { echo "not ok - fixtures"; exit 1; }
LAST=$(cat "$T/last.off")
tar -C "$T/x" -xf "$T/data.tar" || { echo "not ok - tar -x"; exit 1; }

check "Swift starts (s3api, tempauth, access log)" swift_start || { sfs_done; exit 1; }
B=sfs-cluster
check "bucket $B made" swift_mkbucket "$B"
check "data.tar uploaded" swift_put "$B" data.tar "$T/data.tar"
export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
EP="endpoint=$SWIFT_S3"
SRC=s3://$B/data.tar
PRE=s3://$B/index/data.sfsidx

# reqs METHOD PATH MARK: how many such requests Swift logged since MARK
reqs() {
	swift_log_lines "$3" | awk -F'\t' -v m="$1" -v p="$2" '$1 == m && $2 == p { n++ } END { print n + 0 }'
}
# builds MARK: GETs of data.tar since MARK whose bytes hold its last
# member's header: each build reads it once, whatever its reads' sizes,
# and a mount that builds nothing never does
builds() {
	swift_log_lines "$1" | awk -F'\t' -v off="$LAST" -v p="/$B/data.tar" '
		$1 == "GET" && $2 == p {
			if ($3 == "-") { n++; next }
			split($3, r, "-")
			if (r[1] + 0 <= off && (r[2] == "" || off <= r[2] + 0)) n++
		} END { print n + 0 }'
}
# the log must see a build for the counts below to mean anything
mark=$(swift_log_mark)
check "one mount builds the index" sfs_mount "$SRC" "$T/one" -o "$EP,index_dir=$T/idx1"
check "one build: Swift's log shows it (one GET of the last header)" test "$(builds "$mark")" = 1
check "one mount: serves tar -x's tree" is_tar_tree "$T/x" "$T/one"
check "one mount: unmount" sfs_umount "$T/one"

# ---- eight at once, one shared index_dir ----
mark=$(swift_log_mark)
start_many c8 8 "$EP,index_dir=$T/idx8" "$SRC"
check "eight at once: all mounted" all_mounted c8 8
echo "    eight at once: $(builds "$mark") build(s) in Swift's log," \
	"$(reqs GET "/$B/data.tar" "$mark") GETs of data.tar"
check "eight at once: Swift's log shows one build, not eight" test "$(builds "$mark")" = 1
check "eight at once: one built the index" test "$(in_logs 'indexed in' c8)" = 1
check "eight at once: the seven others mapped it" \
	test "$(in_logs 'using the just built index\|using the saved index' c8)" = 7
check "eight at once: none rebuilt or read a partial index" \
	test "$(in_logs 'rebuilding\|does not load\|error' c8)" = 0
each_serves_tar c8 8 "$T/x"
umount_all c8 8

# ---- a prebuilt index uploaded to the bucket, to eight more ----
mark=$(swift_log_mark)
check "samplefs-inspect --save-index=s3://... uploads the prebuilt index" \
	"$INSPECT" --save-index="$PRE" -o "$EP,quiet" "$SRC"
check "the upload: one PUT of it in Swift's log" test "$(reqs PUT "/$B/index/data.sfsidx" "$mark")" = 1
check "--save-index=FILE of the same source" "$INSPECT" --save-index="$T/local.sfsidx" -o "$EP,quiet" "$SRC"
check "the uploaded object holds the bytes --save-index=FILE wrote" \
	cmp <(swift_s3 "/$B/index/data.sfsidx") "$T/local.sfsidx"
check "nothing is left in TMPDIR" test "$(ls -A "$TMPDIR" | grep -c .)" = 0
mark=$(swift_log_mark)
check "one mount from it (index=s3://..., index_only)" \
	sfs_mount "$SRC" "$T/p1" -o "$EP,index=$PRE,index_only,index_dir=$T/idxp1"
F1=$(reqs GET "/$B/index/data.sfsidx" "$mark")
check "one mount from it: fetched it" test "$F1" -ge 1
check "one mount from it: built nothing" test "$(builds "$mark")" = 0
check "one mount from it: unmount" sfs_umount "$T/p1"
mark=$(swift_log_mark)
start_many p8 8 "$EP,index=$PRE,index_only,index_dir=$T/idxp8" "$SRC"
check "eight from the prebuilt index: all mounted" all_mounted p8 8
echo "    eight from the prebuilt index: $(reqs GET "/$B/index/data.sfsidx" "$mark") GETs of it" \
	"(one fetch: $F1), $(reqs GET "/$B/data.tar" "$mark") of data.tar"
check "eight from the prebuilt index: fetched once" \
	test "$(reqs GET "/$B/index/data.sfsidx" "$mark")" = "$F1"
check "eight from the prebuilt index: no GET of data.tar in Swift's log" \
	test "$(reqs GET "/$B/data.tar" "$mark")" = 0
check "eight from the prebuilt index: one fetched it" \
	test "$(in_logs 'using the prebuilt index' p8)" = 1
check "eight from the prebuilt index: none built" test "$(in_logs 'indexed\|error' p8)" = 0
each_serves_tar p8 8 "$T/x"
umount_all p8 8

# ---- a .tar.gz: its access points travel in the prebuilt index ----
gzip -n -c "$T/data.tar" >"$T/data.tar.gz"
check "data.tar.gz uploaded" swift_put "$B" data.tar.gz "$T/data.tar.gz"
GZ=s3://$B/data.tar.gz
check "gz: --save-index=s3://... of the .tar.gz" \
	"$INSPECT" --save-index="s3://$B/index/gz.sfsidx" -o "$EP,quiet" "$GZ"
mark=$(swift_log_mark)
start_many g4 4 "$EP,index=s3://$B/index/gz.sfsidx,index_only,index_dir=$T/idxg4" "$GZ"
check "gz: four from the prebuilt index: all mounted" all_mounted g4 4
echo "    gz: four from the prebuilt index: $(reqs GET "/$B/index/gz.sfsidx" "$mark") GETs of it," \
	"$(reqs GET "/$B/data.tar.gz" "$mark") of data.tar.gz"
check "gz: no GET of data.tar.gz at mount (no pass, no build)" \
	test "$(reqs GET "/$B/data.tar.gz" "$mark")" = 0
check "gz: none made access points or built" \
	test "$(in_logs 'access points, \|indexed\|error' g4)" = 0
each_serves_tar g4 4 "$T/x"
umount_all g4 4

# ---- uploads refused, with one line saying why ----
check "upload to no such bucket: fails naming it and NoSuchBucket" \
	expect_fail "upload: bucket no-such-bucket, key \"i.sfsidx\".*NoSuchBucket" \
	"$INSPECT" --save-index=s3://no-such-bucket/i.sfsidx -o "$EP,quiet" "$T/data.tar"
check "upload to a prefix: fails, a key is wanted" \
	expect_fail "an upload needs a key" \
	"$INSPECT" --save-index="s3://$B/index/" -o "$EP,quiet" "$T/data.tar"
check "upload with a wrong secret: fails with SignatureDoesNotMatch, no secret shown" \
	bash -c '! out=$(env AWS_SECRET_ACCESS_KEY=not-the-secret "$@" 2>&1) &&
		grep -q "upload: bucket.*SignatureDoesNotMatch" <<<"$out" &&
		! grep -q "not-the-secret" <<<"$out"' _ \
	"$INSPECT" --save-index="s3://$B/index/x.sfsidx" -o "$EP,quiet" "$T/data.tar"
check "the failed uploads stored nothing" \
	test "$(swift_s3 -o /dev/null -w '%{http_code}' -I "/$B/index/x.sfsidx")" = 404

sfs_done
