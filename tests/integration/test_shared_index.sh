#!/usr/bin/env bash
# One index for every node (core/index/lock.c, prebuilt.c): a cluster on
# one machine.  A tar served by nginx; eight mounts of it started at once
# on one shared index_dir, then a prebuilt index (samplefs-inspect
# --save-index) passed with index=URL and index_only to eight more, and
# with index=PATH to one.  Every mount serves GNU tar's tree
# (tree_compare.py against tar -x), and nginx's access log shows the data
# GETs of one index build, not eight, and one fetch of the prebuilt index.
# Then a .tar.gz: its access points come with the prebuilt index (four
# mounts with index_only send no GET of it to mount), and one made with
# another span= is refused, naming the source and the spans.
# Then a builder killed with -9 while it holds the build lock (its reads
# slowed by fault_proxy.py): the next mount breaks the dead lock and
# builds.  Then the failures: index_only with no index, a prebuilt index
# with none for the mount (made with other options, or for another
# source's name: said, naming them), a stale prebuilt index (a warning and
# a build, or with index_only an error).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
. "$(dirname "$0")/cluster_lib.sh"
sfs_setup
T=$SFS_TMP
export SFS_ROOT
W=$T/www
mkdir -p "$W" "$T/x"

cluster_tar "$W/data.tar" 240 17 4 >"$T/last.off" || { echo "not ok - fixtures"; exit 1; }
LAST=$(cat "$T/last.off")
tar -C "$T/x" -xf "$W/data.tar" || { echo "not ok - tar -x"; exit 1; }
check "nginx up" http_start "$W" || exit 1
# the fault proxy in front of it slows every request, where a build must
# take long enough for the others to find it under way
check "fault proxy up" proxy_start "$(http_url)" || exit 1
SRC=$(http_url data.tar)

gets() {	# URI-PATH MARK: GETs of it since MARK
	http_log_lines "$2" | awk -F'\t' -v u="$1" '$1 == "GET" && $2 == u { n++ } END { print n + 0 }'
}
# builds MARK: GETs of the tar since MARK whose bytes hold its last member's
# header: each build reads it once, whatever its reads' sizes (readahead
# and timing vary them), and a mount that builds nothing never does
builds() {
	http_log_lines "$1" | awk -F'\t' -v off="$LAST" '
		$1 == "GET" && $2 == "/data.tar" {
			if ($3 == "-") { n++; next }
			split(substr($3, 7), r, "-")
			if (r[1] + 0 <= off && (r[2] == "" || off < r[2] + 0)) n++
		} END { print n + 0 }'
}
# ---- what one build reads ----
mark=$(http_log_mark)
check "one mount builds the index" sfs_mount "$SRC" "$T/one" -o index_dir="$T/idx1"
check "one build: nginx's log shows it (one GET of the last header)" test "$(builds "$mark")" = 1
check "one mount: unmount" sfs_umount "$T/one"
mark=$(http_log_mark)
check "one mount again, on its saved index" sfs_mount "$SRC" "$T/one" -o index_dir="$T/idx1"
check "one mount again: no build in nginx's log" test "$(builds "$mark")" = 0
check "one mount again: unmount" sfs_umount "$T/one"

# ---- eight mounts at once, one shared index_dir ----
# through the proxy, 300 ms a request: the build takes a while
proxy_ctl "delay?ms=300" >/dev/null
mark=$(http_log_mark)
start_many c8 8 "index_dir=$T/idx8" "$(proxy_url data.tar)"
check "eight at once: all mounted" all_mounted c8 8
proxy_ctl "delay?ms=0" >/dev/null
echo "    eight at once: $(builds "$mark") build(s) in nginx's log, $(gets /data.tar "$mark") data GETs"
check "eight at once: nginx's log shows one build, not eight" test "$(builds "$mark")" = 1
check "eight at once: one built the index" test "$(in_logs 'indexed in' c8)" = 1
check "eight at once: the seven others mapped it" \
	test "$(in_logs 'using the just built index\|using the saved index' c8)" = 7
check "eight at once: some found the build under way and waited" \
	test "$(in_logs 'waiting for pid' c8)" -ge 1
check "eight at once: none rebuilt or read a partial index" \
	test "$(in_logs 'rebuilding\|does not load\|error' c8)" = 0
check "eight at once: the index, and no lock or temporary file, in index_dir" \
	test "$(ls -A "$T/idx8" | grep -vc '\.sfsidx$') $(ls "$T/idx8" | grep -c '\.sfsidx$')" = "0 1"
each_serves_tar c8 8 "$T/x"
umount_all c8 8

# ---- a prebuilt index, served by nginx, to eight more ----
check "samplefs-inspect --save-index writes the prebuilt index" \
	"$SFS_BIN/samplefs-inspect" --save-index="$W/pre.sfsidx" -o quiet "$SRC"
check "no build directory is left next to it" test "$(ls -A "$W" | grep -c samplefs-prebuild)" = 0
PRE=$(http_url pre.sfsidx)
mark=$(http_log_mark)
check "one mount from the prebuilt index (index=URL, index_only)" \
	sfs_mount "$SRC" "$T/p1" -o index="$PRE",index_only,index_dir="$T/idxp1"
F1=$(gets /pre.sfsidx "$mark")
check "one mount from the prebuilt index: it built nothing" test "$(builds "$mark")" = 0
check "one mount from the prebuilt index: unmount" sfs_umount "$T/p1"
mark=$(http_log_mark)
start_many p8 8 "index=$PRE,index_only,index_dir=$T/idxp8" "$SRC"
check "eight from the prebuilt index: all mounted" all_mounted p8 8
echo "    eight from the prebuilt index: $(gets /pre.sfsidx "$mark") GETs of it (one fetch: $F1)," \
	"$(gets /data.tar "$mark") of the tar"
check "eight from the prebuilt index: fetched once" test "$(gets /pre.sfsidx "$mark")" = "$F1"
check "eight from the prebuilt index: no build in nginx's log" test "$(builds "$mark")" = 0
check "eight from the prebuilt index: one fetched it" \
	test "$(in_logs 'using the prebuilt index' p8)" = 1
check "eight from the prebuilt index: none built" test "$(in_logs 'indexed\|error' p8)" = 0
check "eight from the prebuilt index: the index alone is left in index_dir" \
	test "$(ls -A "$T/idxp8" | grep -vc '\.sfsidx$') $(ls "$T/idxp8" | grep -c '\.sfsidx$')" = "0 1"
each_serves_tar p8 8 "$T/x"
umount_all p8 8
check "index=PATH (a local file) with index_only" \
	sfs_mount "$SRC" "$T/pl" -o index="$W/pre.sfsidx",index_only,index_dir="$T/idxpl"
check "index=PATH: serves tar -x's tree" is_tar_tree "$T/x" "$T/pl"
check "index=PATH: unmount" sfs_umount "$T/pl"

# ---- ImageNet: two index files in one prebuilt index ----
"$PY" - "$T/imagenet" <<'PY' || echo "not ok - ImageNet fixture"
import os, sys
sys.path.insert(0, os.path.join(os.environ["SFS_ROOT"], "tests", "fixtures"))
from make_imagenet import make_imagenet, pick_wnids
make_imagenet(sys.argv[1], pick_wnids(4, seed=3), per_class=5, n_val=9, seed=1)
PY
check "ImageNet: --save-index with the mount's options" \
	"$SFS_BIN/samplefs-inspect" --save-index="$T/in.sfsidx" \
	-o quiet,shard_size=3 "$T/imagenet"
check "ImageNet: mounted with its own build" \
	sfs_mount "$T/imagenet" "$T/in-own" -o shard_size=3,index_dir="$T/idxin1"
check "ImageNet: mounted from the prebuilt index, index_only" \
	sfs_mount "$T/imagenet" "$T/in-pre" -o shard_size=3,index="$T/in.sfsidx",index_only,index_dir="$T/idxin2"
# (the layout's two index files, and the devkit's .tar.gz's access points,
# core/index/zstore.c: the first of them to be looked for fetches it whole)
check "ImageNet: the index files came from it, none was built" \
	test "$(grep -c 'using the prebuilt index' "$(sfs_log "$T/in-pre")") $(grep -c 'indexed\|access points, ' "$(sfs_log "$T/in-pre")") $(ls "$T/idxin2" | grep -c '^imagenet-.*\.sfsidx$')" = "1 0 2"
check "ImageNet: the same tree and bytes as its own build" diff -r "$T/in-own" "$T/in-pre"
check "ImageNet: unmount own" sfs_umount "$T/in-own"
check "ImageNet: unmount prebuilt" sfs_umount "$T/in-pre"
check "ImageNet: other options than the prebuilt index's: index_only fails" \
	sh -c "! '$SAMPLEFS' -f -o shard_size=4,index='$T/in.sfsidx',index_only,index_dir='$T/idxin3' '$T/imagenet' '$T/in-pre' 2>/dev/null"

# ---- a .tar.gz: its access points travel in the prebuilt index ----
# (core/index/zstore.c): mounts with index=URL read no byte of the .tar.gz
# to start, where without them each would inflate the whole file first
gzip -n -c "$W/data.tar" >"$W/data.tar.gz"
mkdir -p "$T/gf"
GZ=$(http_url data.tar.gz)
check "gz: --save-index of the .tar.gz" \
	"$SFS_BIN/samplefs-inspect" --save-index="$W/gz.sfsidx" -o quiet "$GZ"
mark=$(http_log_mark)
start_many g4 4 "index=$(http_url gz.sfsidx),index_only,index_dir=$T/idxg4" "$GZ"
check "gz: four from the prebuilt index: all mounted" all_mounted g4 4
echo "    gz: four from the prebuilt index: $(gets /gz.sfsidx "$mark") GETs of it," \
	"$(gets /data.tar.gz "$mark") of the .tar.gz"
check "gz: no GET of the .tar.gz at mount (no pass, no build)" \
	test "$(gets /data.tar.gz "$mark")" = 0
check "gz: the access points came from it" \
	test "$(in_logs 'using the prebuilt index of the access points' g4)" = 1
check "gz: none made access points or built" \
	test "$(in_logs 'access points, \|indexed\|error' g4)" = 0
each_serves_tar g4 4 "$T/x"
umount_all g4 4
check "gz: another span than the table's, index_only: fails naming the source and the span" \
	expect_fail "$GZ.*span 1048576.*65536.*index_only" \
	"$SAMPLEFS" -f -o "span=64k,index=$W/gz.sfsidx,index_only,index_dir=$T/idxg5" "$GZ" "$T/gf"
mark=$(http_log_mark)
check "gz: another span, without index_only: a warning, then a pass" \
	sfs_mount "$GZ" "$T/gs" -o span=64k,index="$W/gz.sfsidx",index_dir="$T/idxg6"
check "gz: it said why" grep -q "warning:.*$GZ.*span 1048576" "$(sfs_log "$T/gs")"
check "gz: it read the .tar.gz through" test "$(gets /data.tar.gz "$mark")" -ge 1
check "gz: serves tar -x's tree" is_tar_tree "$T/x" "$T/gs"
check "gz: unmount" sfs_umount "$T/gs"

# ---- a builder killed with -9 while it holds the lock ----
KSRC=$(proxy_url data.tar)
proxy_ctl "delay?ms=1000" >/dev/null	# the build then takes seconds
mkdir -p "$T/k1" "$T/k2"
SFS_MOUNTS+=("$T/k1")
"$SAMPLEFS" -f -o index_dir="$T/idxk" "$KSRC" "$T/k1" 2>"$T/k1.log" &
k1=$!
SFS_PID_OF[$T/k1]=$k1
for ((i = 0; i < 300; i++)); do compgen -G "$T/idxk/*.lock" >/dev/null && break; sfs_nap 0.1; done
check "kill -9: the first daemon holds the build lock" compgen -G "$T/idxk/*.lock"
sfs_nap 0.3
kill -9 "$k1"
wait "$k1" 2>/dev/null
unset "SFS_PID_OF[$T/k1]"
check "kill -9: it never mounted" test "$(sfs_mounted "$T/k1" && echo yes)" = ""
check "kill -9: its lock stays behind" compgen -G "$T/idxk/*.lock"
proxy_ctl "delay?ms=0" >/dev/null
t0=$(date +%s)
check "kill -9: the next mount comes up" sfs_mount "$KSRC" "$T/k2" -o index_dir="$T/idxk"
echo "    ($(($(date +%s) - t0)) s, the dead lock's 10 s of silence included)"
check "kill -9: it broke the dead lock" grep -q "breaking the lock of pid $k1" "$(sfs_log "$T/k2")"
check "kill -9: and built the index itself" grep -q "indexed in" "$(sfs_log "$T/k2")"
check "kill -9: serves tar -x's tree" is_tar_tree "$T/x" "$T/k2"
check "kill -9: the index alone is left in index_dir" \
	test "$(ls -A "$T/idxk" | grep -vc '\.sfsidx$') $(ls "$T/idxk" | grep -c '\.sfsidx$')" = "0 1"
check "kill -9: unmount" sfs_umount "$T/k2"

# ---- what is refused ----
check "index_only with no index: the mount fails" \
	sh -c "! '$SAMPLEFS' -f -o index_only,index_dir='$T/idxn' '$SRC' '$T/k2' 2>'$T/n.log'"
check "index_only with no index: says so" grep -q "index_only forbids building" "$T/n.log"
# issue 25 item 5: a prebuilt index with none for the mount says why, not
# "(there is none)": other options (the tar's recursive=), another source
check "prebuilt index, other options, index_only: the mount fails" \
	sh -c "! '$SAMPLEFS' -f -o index='$PRE',index_only,recursive=2,index_dir='$T/idxo' '$SRC' '$T/k2' 2>'$T/o.log'"
check "prebuilt index, other options: says its index was made with other options, naming both" \
	grep -q "its index of tar for this source was made with other options, which shape the tree: \"r1\", this mount's \"r2\"" "$T/o.log"
OTHER=$(proxy_url data.tar)
check "prebuilt index, another source's name, index_only: the mount fails" \
	sh -c "! '$SAMPLEFS' -f -o index='$PRE',index_only,index_dir='$T/idxa' '$OTHER' '$T/k2' 2>'$T/a.log'"
check "prebuilt index, another source: names the source it is for and this one" \
	grep -qF "its index of tar is for another source, $SRC, not $OTHER" "$T/a.log"
touch -d '2001-01-01' "$W/data.tar"	# a new stamp: the prebuilt index is stale
check "stale prebuilt index with index_only: the mount fails" \
	sh -c "! '$SAMPLEFS' -f -o index='$PRE',index_only,index_dir='$T/idxs' '$SRC' '$T/k2' 2>'$T/s.log'"
check "stale prebuilt index with index_only: says why" \
	grep -q "sources or options changed.*index_only forbids" "$T/s.log"
check "stale prebuilt index: a warning, then a build" \
	sfs_mount "$SRC" "$T/st" -o index="$PRE",index_dir="$T/idxs2"
check "stale prebuilt index: warned" grep -q "warning:.*has no usable index" "$(sfs_log "$T/st")"
check "stale prebuilt index: built" grep -q "indexed in" "$(sfs_log "$T/st")"
check "stale prebuilt index: serves tar -x's tree" is_tar_tree "$T/x" "$T/st"
check "stale prebuilt index: unmount" sfs_umount "$T/st"

sfs_done
