#!/usr/bin/env bash
# Prefetch in a shard's order (core/layouts/imagenet_ahead.c): a globally
# shuffled virtual shard (-o shard_seed) of an ImageNet-shaped release with
# members of 24-56 KiB is read from its start through the mount, and the
# members it holds next are fetched before the reader gets there: resident
# in the page cache (mincore) locally, in nginx's access log over HTTP;
# members past the budget are not, also a second after the reader stopped
# (shard_ahead.py, against the oracle's model of the shard).  Without
# prefetch (shard_prefetch=0) the same reads leave members ahead cold, so
# what passes is the prefetch.  Every byte of the mount still equals the
# oracle's (imagenet_oracle.py), read after the prefetch.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"
sfs_setup
ORACLE="$PY $SFS_ROOT/tests/integration/imagenet_oracle.py"
AHEAD="$PY $SFS_ROOT/tests/integration/shard_ahead.py"
D=$SFS_TMP/data
M=$SFS_TMP/mnt
# hints MNT: the ranges asked of the source so far (stats.json's
# prefetch_hints: the index build's walk, then the shards' prefetch)
hints() {
	timeout 20 "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["sources"][0]["prefetch_hints"])' \
		"$1/.samplefs/stats.json"
}
# since N0 MNT: the ranges asked since hints said N0, or "unreadable" (so
# that the check comparing it fails)
since() {
	local n1
	n1=$(hints "$2")
	case "$1$n1" in *[!0-9]* | "") echo unreadable ;; *) echo $((n1 - $1)) ;; esac
}

# paced FILE [SKIP]: reads FILE from byte SKIP in 256 KiB pieces, 20 ms
# apart.  The advisor runs beside the reads: a reader at memory speed (the
# fixture is in the page cache) can finish an 8 MB shard before a loaded
# machine schedules it, and then nothing was ahead to ask for (CI saw 1
# range of 4).
paced() {
	timeout 60 "$PY" -c 'import sys, time
f = open(sys.argv[1], "rb", buffering=0)
f.seek(int(sys.argv[2]))
while f.read(262144):
	time.sleep(0.02)' "$1" "${2:-0}"
}
# advised MNT N0: waits (10 s at most) until MNT's stats say a range was
# asked for since N0
advised() {
	local end=$((SECONDS + 10)) n
	while [ "$SECONDS" -lt "$end" ]; do
		n=$(since "$2" "$1")
		[ "$n" != unreadable ] && [ "$n" -ge 1 ] && return 0
		sfs_nap 0.02
	done
	return 1
}

# 12 classes x 80 members of 24-56 KiB (random bytes: the layout does not
# decode images), class tars in shuffled order, no devkit and no val tar:
# labels are the sorted class WNIDs.  ~38 MB, so that members past the
# budget lie megabytes away from those read.
mkdir -p "$D/r"
timeout 60 $PY "$SFS_ROOT/tests/integration/random_release.py" "$D/r" 26 12 80 $((24 << 10)) $((56 << 10)) ||
	{ echo "fixture generation failed"; exit 1; }

opts=layout=imagenet,shard_size=200,shard_seed=7,index_dir=$SFS_TMP/idx
args="--shard-size 200 --shard-seed 7 --shard 1 --read 131072"
if check "local: mounts with shard_prefetch=512k" sfs_mount "$D/r" "$M" -o "$opts,shard_prefetch=512k"; then
	n0=$(hints "$M")	# the index build's, at the mount
	check "local: the members ahead of the reader become resident, none past the budget" \
		$AHEAD "$D/r" "$M" $args --budget 524288
	n=$(since "$n0" "$M")
	check "local: ... a range asked for each member apart ($n)" test "$n" -ge 8
	check "local: every path and byte vs the oracle" \
		$ORACLE "$D/r" "$M" --shard-size 200 --shard-seed 7 --preads 50
	check "local: unmounts cleanly" sfs_umount "$M"
fi
# with checksums (issue 28) members are copied through their checks, not
# spliced: the prefetch still asks for them
if check "local: mounts with shard_prefetch=512k,checksums" \
	sfs_mount "$D/r" "$M" -o "$opts,shard_prefetch=512k,checksums,index_dir=$SFS_TMP/idx-sums"; then
	check "local, checksums: the members ahead of the reader become resident, none past the budget" \
		$AHEAD "$D/r" "$M" $args --budget 524288
	check "local, checksums: unmounts cleanly" sfs_umount "$M"
fi
# an ordered shard (no shard_seed) lies in one run of its source, its
# members in the tar's order, a header and padding apart.  Of members of
# 16 KiB or more, the prefetch asks for them ahead (the advice's depth
# keeps the disk busy); of small ones it leaves the run to the kernel's
# readahead of the source, which the daemon reads in order
# (imagenet_ahead.c's goes_on: advice queued the same bytes deep).  A shard
# of 200 members of 24-56 KiB is ~8 MB: with a budget of 4 MiB (more than
# a READ, 1 MiB as root) the prefetch asks for ranges of 2 MiB of it.
if check "local: mounts ordered shards with shard_prefetch=4m" \
	sfs_mount "$D/r" "$M" -o "layout=imagenet,shard_size=200,index_dir=$SFS_TMP/idx-ord,shard_prefetch=4m"; then
	n0=$(hints "$M")	# the index build's, before the stream
	# its first 512 KiB (the first READ opens a stream, the next one moves
	# it on and wakes the advisor), then the rest behind the advice
	check "local, ordered: a shard's first 512 KiB" \
		dd if="$M/shards/train-000001.tar" of=/dev/null bs=256k count=2 status=none
	advised "$M" "$n0"	# the count below says whether it was
	check "local, ordered: the rest streams, paced" paced "$M/shards/train-000001.tar" 524288
	n=$(since "$n0" "$M")
	check "local, ordered: members of 24-56 KiB are asked for ahead ($n ranges)" test "$n" -ge 2
	check "local, ordered: unmounts cleanly" sfs_umount "$M"
fi
# the same of 1-4 KiB members: 12 classes x 400, a shard of 1000 ~3.5 MB,
# which a budget of 1 MiB asked for in 3 or more ranges before
mkdir -p "$D/small"
timeout 60 $PY "$SFS_ROOT/tests/integration/random_release.py" "$D/small" 27 12 400 1024 4096 ||
	{ echo "small fixture generation failed"; exit 1; }
if check "local: mounts ordered shards of small members with shard_prefetch=1m" \
	sfs_mount "$D/small" "$M" -o "layout=imagenet,shard_size=1000,index_dir=$SFS_TMP/idx-small,shard_prefetch=1m"; then
	n0=$(hints "$M")
	check "local, ordered small: a shard streams, paced" paced "$M/shards/train-000001.tar"
	n=$(since "$n0" "$M")
	check "local, ordered small: the run is left to the source's readahead ($n ranges asked)" \
		test "$n" -le 1
	check "local, ordered small: every path and byte vs the oracle" \
		$ORACLE "$D/small" "$M" --shard-size 1000 --preads 50
	check "local, ordered small: unmounts cleanly" sfs_umount "$M"
fi
if check "local: mounts with shard_prefetch=0" sfs_mount "$D/r" "$M" -o "$opts,shard_prefetch=0"; then
	check "local, no prefetch: the same reads leave members ahead cold" \
		$AHEAD "$D/r" "$M" $args --budget 524288 --expect none
	check "local, no prefetch: unmounts cleanly" sfs_umount "$M"
fi

http_start "$D/r" || exit 1
# the index is built first, in a mount of its own: the build's reads fill
# the block cache, where the reads below would find the members instead
check "http: the index is built" sfs_mount "$(http_url /)" "$M" -o "$opts" &&
	check "http: ... and the mount unmounted" sfs_umount "$M"
# over HTTP at most SOURCE_WILLNEED_MAX (16) members ahead
if check "http: mounts with shard_prefetch=512k" \
	sfs_mount "$(http_url /)" "$M" -o "$opts,shard_prefetch=512k"; then
	check "http: ranged GETs for the members ahead, none past the budget" \
		$AHEAD "$D/r" "$M" $args --budget 524288 --depth 16 --access-log "$HTTP_ACCESS_LOG"
	check "http: every path and byte vs the oracle" \
		$ORACLE "$D/r" "$M" --shard-size 200 --shard-seed 7 --preads 50
	check "http: unmounts cleanly" sfs_umount "$M"
fi
sfs_done
