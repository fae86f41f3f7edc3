#!/bin/bash
# libarchive_mount.sh FILE: a first mount (fresh index) of FILE with
# layout=tar, every file read, the unmount: one run, to be timed whole and
# alternated with the same for a tar (docs/benchmarks.md, "Measured outside make bench").
# SAMPLEFS: the daemon (default build/samplefs).
f=$1; d=$(mktemp -d "${TMPDIR:-/tmp}/sfs-larc.XXXXXX"); mkdir -p $d/m
${SAMPLEFS:-build/samplefs} -f -o layout=tar,index_dir=$d $f $d/m 2>$d/log & p=$!
for i in $(seq 1 500); do mountpoint -q $d/m && break; sleep 0.01; done
find $d/m -type f -exec cat {} + >/dev/null
fusermount3 -u $d/m; wait $p; rm -rf $d
