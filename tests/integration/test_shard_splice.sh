#!/usr/bin/env bash
# Virtual shards spliced (issue 26, layout.h's spans): an ImageNet-shaped
# release whose members (1-40 KiB of random bytes) lie in place in a local
# tar, its shards streamed with cat:
#  - the READs of the shards are spliced replies, none copied but a tail
#    too short to splice (stats.json's replies_spliced and replies_copied,
#    counts, never a time); the READs stay under libfuse's largest spliced
#    reply with -o readahead=0 (the kernel's window);
#  - every byte is the oracle's (imagenet_oracle.py: tarfile over the
#    source, the shards read back from the page cache cat filled);
#  - with -o checksums the same reads are copied (each member checked on
#    the way), none spliced, and the bytes are still the oracle's;
#  - the source changed under the mount (mtime): a shard read gives EIO,
#    never bytes spliced from the changed file.
. "$(dirname "$0")/lib.sh"
sfs_setup
T=$SFS_TMP
ORACLE="$PY $SFS_ROOT/tests/integration/imagenet_oracle.py"
M=$T/mnt

# 6 classes x 60 members of 1-40 KiB, some too short to splice
mkdir -p "$T/r"
timeout 60 "$PY" "$SFS_ROOT/tests/integration/random_release.py" "$T/r" 2626 6 60 1024 $((40 << 10)) ||
	{ echo "not ok - fixture"; exit 1; }

# stat_of MNT KEY: a top-level number of stats.json
stat_of() {
	timeout 20 "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$1/.samplefs/stats.json" "$2"
}
# stream MNT: cat every train shard; prints "SPLICED COPIED BYTES" of it
stream() {
	local s0 c0 bytes
	s0=$(stat_of "$1" replies_spliced) c0=$(stat_of "$1" replies_copied)
	bytes=$(timeout 30 cat "$1"/shards/train-*.tar | wc -c)
	echo "$(($(stat_of "$1" replies_spliced) - s0)) $(($(stat_of "$1" replies_copied) - c0)) $bytes"
}

opts=layout=imagenet,shard_size=100,shard_seed=3,readahead=0
oracle_args="--shard-size 100 --shard-seed 3 --preads 40"
nshards=4	# 360 samples in shards of 100

if check "mounts" sfs_mount "$T/r" "$M" -o "$opts,index_dir=$T/idx"; then
	read -r spliced copied bytes < <(stream "$M")
	echo "    $bytes bytes of shards: $spliced replies spliced, $copied copied"
	# each READ is at most 1 MiB, so at least bytes / 1 MiB of them; a
	# shard's last READ may be too short to splice
	check "the shards' READs are spliced ($spliced, at least $((bytes >> 20)))" \
		test "$spliced" -ge $((bytes >> 20)) -a "$spliced" -gt 0
	check "none copied but the tails ($copied <= $nshards)" test "$copied" -le "$nshards"
	check "every path and byte vs the oracle (the shards as streamed)" \
		timeout 120 $ORACLE "$T/r" "$M" $oracle_args
	check "unmounts cleanly" sfs_umount "$M"
fi

if check "mounts with checksums" sfs_mount "$T/r" "$M" -o "$opts,checksums,index_dir=$T/idx-sums"; then
	read -r spliced copied bytes < <(stream "$M")
	echo "    checksums: $spliced replies spliced, $copied copied"
	check "checksums: no reply spliced" test "$spliced" -eq 0
	check "checksums: the READs are copied ($copied, at least $((bytes >> 20)))" \
		test "$copied" -ge $((bytes >> 20)) -a "$copied" -gt 0
	check "checksums: every path and byte vs the oracle" \
		timeout 120 $ORACLE "$T/r" "$M" $oracle_args
	check "checksums: unmounts cleanly" sfs_umount "$M"
fi

# the source's mtime changed while mounted: EIO, no bytes of the shard
if check "mounts again" sfs_mount "$T/r" "$M" -o "$opts,index_dir=$T/idx"; then
	touch -d '2001-01-01' "$T/r/ILSVRC2012_img_train.tar"
	check "source changed: a shard read gives EIO" \
		expect_fail "Input/output error" timeout 30 cat "$M/shards/train-000001.tar"
	check "unmounts cleanly at last" sfs_umount "$M"
fi
sfs_done
