#!/usr/bin/env bash
# gs:// sources over GCS's XML API, anonymously, with nginx on loopback
# standing in for storage.googleapis.com (endpoint=): objects are files
# under /BUCKET/, and the listing (GET /BUCKET?delimiter=/&prefix=...) is
# answered from pages recorded here in GCS's format (ListBucketResult with
# Name, Prefix, Marker, NextMarker, IsTruncated, Contents with Key,
# Generation, MetaGeneration, LastModified, ETag, Size), each prefix's in
# two pages: the second is only found with the marker the first gave, so
# a mount that does not page as GCS does fails.  Then the real bucket's
# shape: images and strokes under prefixes of their own (images=,
# strokes=), with a class file the class list does not name.  And a
# bucket that answers only requests carrying the bearer token
# (GOOGLE_OAUTH_ACCESS_TOKEN): mounted with it, refused without it (401,
# named); the token in no message and not on the command line.  Last,
# the objects replaced by the same bytes (a second page set, only the
# Generations differ): the saved index is not reused, as it is when the
# pages stay the same.  The mount must equal the
# local mount of the same files, names, types, sizes and bytes; a prefix
# the recorded pages do not know is refused at mount, naming it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
T=$SFS_TMP
W=$T/www	# what nginx serves: /qdb/ is the bucket
L=$T/ml M=$T/mg
export SFS_ROOT

"$PY" "$(dirname "$0")/gcs_pages.py" "$W" || { echo "not ok - fixtures"; exit 1; }

# the recorded bucket (http_lib.sh), and /tok: the same behind a bearer token
HTTP_EXTRA="$HTTP_GCS_QDB"'
		location = /tok {
			if ($http_authorization != "Bearer t0k-3n") { return 401; }
			try_files "/_pages/p=$arg_prefix&m=$arg_marker.xml" =404;
		}
		location /tok/ {
			if ($http_authorization != "Bearer t0k-3n") { return 401; }
			rewrite ^/tok/(.*)$ /qdb/$1 last;
		}'
check "nginx serves the bucket" http_start "$W"
unset GOOGLE_OAUTH_ACCESS_TOKEN
EP="endpoint=$(http_url)"

check "local mount" sfs_mount "$W/qdb/qd" "$L" -o "layout=quickdraw,index_dir=$T/idx-l"
mark=$(http_log_mark)
check "gs:// mount, anonymous" sfs_mount "gs://qdb/qd/" "$M" -o "layout=quickdraw,$EP,index_dir=$T/idx-g"
check "the same tree and bytes from the bucket as from disk" sfs_same_mounts "$L" "$M"
http_log_sync
check "both pages of each prefix were asked for (the marker honoured)" \
	test "$(http_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $2 ~ /^\/qdb[?].*marker=qd%2F/ && $4 == 200' | wc -l)" = 2
check "unmount gs://" sfs_umount "$M"
check "unmount local" sfs_umount "$L"
check "a detected layout from the listing" sfs_mount "gs://qdb/qd" "$M" -o "$EP,index_dir=$T/idx-g2"
check "detected: quickdraw's tree" test -d "$M/images" -a -d "$M/strokes"
check "detected: no error logged" bash -c '! grep -q error: "$1"' _ "$(sfs_log "$M")"
check "unmount" sfs_umount "$M"
check "images= and strokes= apart, classes=: local mount" \
	sfs_mount "$W/qdb/qd" "$L" -o "layout=quickdraw,classes=$W/classes.txt,index_dir=$T/idx-l"
check "images= and strokes= apart, classes=: gs:// mount" \
	sfs_mount "gs://qdb/" "$M" -o "layout=quickdraw,classes=$W/classes.txt,$EP,index_dir=$T/idx-g3,images=gs://qdb/full/numpy_bitmap/,strokes=gs://qdb/sketchrnn/"
check "images= and strokes= apart: the same tree and bytes (zz.npy ignored)" sfs_same_mounts "$L" "$M"
check "unmount gs://" sfs_umount "$M"
check "unmount local" sfs_umount "$L"
# the same bucket as "tok", which answers only requests with the token
export GOOGLE_OAUTH_ACCESS_TOKEN=t0k-3n
check "GOOGLE_OAUTH_ACCESS_TOKEN: sent as a bearer token (a mount of gs://tok/)" \
	sfs_mount "gs://tok/qd/" "$M" -o "layout=quickdraw,$EP,index_dir=$T/idx-t"
check "with the token: local mount" sfs_mount "$W/qdb/qd" "$L" -o "layout=quickdraw,index_dir=$T/idx-l"
check "with the token: the same tree and bytes" sfs_same_mounts "$L" "$M"
check "unmount local" sfs_umount "$L"
unset GOOGLE_OAUTH_ACCESS_TOKEN
check "the token in no message" bash -c '! grep -q t0k-3n "$1"' _ "$(sfs_log "$M")"
check "the token not in /proc/PID/cmdline" bash -c '! grep -aq t0k-3n "$1"' _ "/proc/${SFS_PID_OF[$M]}/cmdline"
check "unmount gs://tok" sfs_umount "$M"
mkdir -p "$M"
check "no token for a bucket that wants one: refused, naming the bucket and the 401" \
	expect_fail "gs://tok/qd/: listing: bucket tok, key \"qd/\".*HTTP 401.*anonymous: the request was unsigned: no GOOGLE_OAUTH_ACCESS_TOKEN in the environment; a private bucket wants credentials: GOOGLE_OAUTH_ACCESS_TOKEN" \
	"$SAMPLEFS" -o "layout=quickdraw,$EP,index_dir=$T/idx-x" "gs://tok/qd/" "$M"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
check "a prefix with no recorded pages: refused, naming the bucket" \
	expect_fail "gs://qdb/nothing/: listing: bucket qdb, key \"nothing/\".*HTTP 404" \
	"$SAMPLEFS" -o "layout=quickdraw,$EP,index_dir=$T/idx-x" "gs://qdb/nothing/" "$M"
grep -q " $M fuse" /proc/mounts && fusermount3 -u "$M"
check "-o endpoint= on an http:// source: refused" \
	expect_fail "endpoint applies to bucket sources only" \
	"$SAMPLEFS" -o "layout=quickdraw,$EP,index_dir=$T/idx-x" "$(http_url /qdb/qd/)" "$M"

# ---- objects replaced by the same bytes: the generation tells ----
GOPT="layout=quickdraw,$EP,index_dir=$T/idx-gen"
check "generation: a mount builds its index" sfs_mount "gs://qdb/qd/" "$M" -o "$GOPT"
check "generation: unmount" sfs_umount "$M"
check "generation: the same pages again: the saved index is used" \
	sfs_mount "gs://qdb/qd/" "$M" -o "$GOPT"
check "generation: (log)" grep -q "using the saved index" "$(sfs_log "$M")"
check "generation: unmount" sfs_umount "$M"
mv "$W/_pages" "$W/_pages_gen1" && mv "$W/_pages_gen2" "$W/_pages"
check "generation: pages with other generations (same ETags, sizes, times): mounts" \
	sfs_mount "gs://qdb/qd/" "$M" -o "$GOPT"
check "generation: the saved index is not used, a new one is built" \
	bash -c '! grep -q "using the saved index" "$1" && grep -q "indexed in" "$1"' _ "$(sfs_log "$M")"
check "generation: local mount" sfs_mount "$W/qdb/qd" "$L" -o "layout=quickdraw,index_dir=$T/idx-l"
check "generation: the same tree and bytes" sfs_same_mounts "$L" "$M"
check "generation: unmount local" sfs_umount "$L"
check "generation: unmount" sfs_umount "$M"

sfs_done
