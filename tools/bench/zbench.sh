#!/usr/bin/env bash
# Compressed tars (core/io/zxz.c, zzstd.c, zbz2.c): the first mount (one
# pass over the file) against the tool's own decompression of the same
# file to /dev/null, then random reads of 64 KiB in the mounted files.
#
#   tools/bench/zbench.sh [MB] [READS]     (default 200 MB, 300 reads)
#
# The tar: files of 1 MiB, half text, half random bytes.  Formats: xz -T0
# (blocks), xz (one block), zstd, pzstd, pbzip2.  Prints a markdown table;
# times are wall seconds (medians are up to the reader: run it thrice).
set -eu
MB=${1:-200}
READS=${2:-300}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SAMPLEFS=${SAMPLEFS:-$ROOT/build/samplefs}
PY=/usr/bin/python3
T=$(mktemp -d /tmp/zbench.XXXXXX)
MNT=$T/m
PID=
cleanup() {
	grep -q " $MNT fuse" /proc/mounts && fusermount3 -u "$MNT"
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

"$PY" - "$T/src" "$MB" <<'EOF'
import os, random, sys
root, mb = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
rng = random.Random(1)
line = b"".join(b"sample %d of a dataset shard\n" % i for i in range(40000))
for i in range(mb):
    data = rng.randbytes(1 << 20) if i % 2 else line[:1 << 20]
    open(f"{root}/f{i:05d}", "wb").write(data)
EOF
tar -cf "$T/t.tar" -C "$T/src" .
rm -rf "$T/src"

secs() {	# secs CMD...: wall seconds of CMD
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}

echo "| file | size | tool's decompression | first mount | $READS random 64 KiB reads |"
echo "|---|---|---|---|---|"
row() {	# row NAME DECOMPRESS...
	local f=$1 idx=$T/idx-$1 tool mount reads
	shift
	tool=$(secs "$@" "$T/$f")
	mkdir -p "$MNT" "$idx"
	local t0 t1
	t0=$(date +%s.%N)
	"$SAMPLEFS" -o layout=tar,index_dir="$idx" "$T/$f" "$MNT" 2>"$T/$f.log"
	t1=$(date +%s.%N)
	mount=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
	reads=$(secs "$PY" - "$MNT" "$READS" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
names = sorted(os.listdir(root))
rng = random.Random(2)
for _ in range(n):
    with open(os.path.join(root, rng.choice(names)), "rb") as f:
        f.seek(rng.randrange(1 << 20)); f.read(65536)
EOF
)
	fusermount3 -u "$MNT"
	echo "| $f | $(( $(stat -c %s "$T/$f") >> 20 )) MiB | $tool s (\`$*\`) | $mount s | $reads s |"
}
xz -T0 -6 -c "$T/t.tar" >"$T/blocks.tar.xz"
row blocks.tar.xz xz -dc -T0
xz -6 -c "$T/t.tar" >"$T/one.tar.xz"
row one.tar.xz xz -dc -T0
zstd -q -T0 -c "$T/t.tar" >"$T/one.tar.zst"
row one.tar.zst zstd -dcq
pzstd -q -c "$T/t.tar" >"$T/pzstd.tar.zst"
row pzstd.tar.zst pzstd -dcq
pbzip2 -c "$T/t.tar" >"$T/p.tar.bz2"
row p.tar.bz2 pbzip2 -dc
