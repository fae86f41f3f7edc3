#!/usr/bin/env bash
# zipsmall.sh - many small deflated zip members read whole (layout=tar over
# a zip: core/formats/zipread.c's whole-member read, inflated by
# core/io/codecs/zgzip.c through zsource_inflate_whole), one mount per call,
# so that an outside timer (pairing two builds, alternating) measures it:
#   tools/bench/zipsmall.sh make DIR [N]    DIR/small.zip: N (20000) members
#                                           of 100 KB, text-like with random
#                                           runs, deflated by Python's zipfile
#   tools/bench/zipsmall.sh read SAMPLEFS DIR   mounts DIR/small.zip with that
#                                           binary, reads every member whole in
#                                           one fixed random order, unmounts
# The first `read` builds the zip's tar index (~/.cache/samplefs): run one
# before timing.  Not a test: it fails only when a tool is missing, the
# mount fails or the bytes read are not the members' count and size.
set -uo pipefail
PY=/usr/bin/python3
case ${1:-} in
make)
	dir=$2 n=${3:-20000}
	mkdir -p "$dir" && exec "$PY" - "$dir/small.zip" "$n" <<'PYEOF'
import random, sys, zipfile
n, size = int(sys.argv[2]), 100_000
rnd = random.Random(7)
words = [b"sample ", b"member ", b"zip ", b"deflate ", b"\n", b"label 0042 ", b"pixel ", b"data "]
base = bytearray()
while len(base) < 4 << 20:
    if rnd.random() < 0.15:
        base += rnd.randbytes(rnd.randint(50, 600))
    else:
        base += b"".join(rnd.choice(words) for _ in range(rnd.randint(5, 80)))
base = bytes(base)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
    for i in range(n):
        o = rnd.randrange(len(base) - size)
        z.writestr("m/%05d.bin" % i, b"%08d" % i + base[o:o + size - 8])
PYEOF
	;;
read)
	bin=$2 dir=$3
	mnt=$(mktemp -d "$dir/mnt.XXXXXX") || exit 1
	"$bin" -f -o layout=tar "$dir/small.zip" "$mnt" 2>>"$dir/daemon.log" &
	pid=$!
	trap 'fusermount3 -u "$mnt" 2>/dev/null; wait $pid; rmdir "$mnt"' EXIT
	for ((i = 0; i < 3000; i++)); do
		grep -q " $mnt fuse" /proc/mounts && break
		sleep 0.02
	done
	"$PY" - "$mnt" "$dir/small.zip" <<'PYEOF'
import os, random, sys, zipfile
root = sys.argv[1]
names = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
random.Random(1).shuffle(names)
total = 0
for n in names:
    with open(n, "rb", buffering=0) as f:
        while b := f.read(1 << 20):
            total += len(b)
with zipfile.ZipFile(sys.argv[2]) as z:
    want = [i.file_size for i in z.infolist() if not i.is_dir()]
if (len(names), total) != (len(want), sum(want)):
    sys.exit("read %d members, %d bytes; the zip has %d, %d bytes"
             % (len(names), total, len(want), sum(want)))
PYEOF
	;;
*)
	echo "usage: $0 make DIR [N] | read SAMPLEFS DIR" >&2
	exit 2
	;;
esac
