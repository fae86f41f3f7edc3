#!/usr/bin/env bash
# zipbench.sh - random reads into one large deflated zip member
# (layout=tar over a zip: core/formats/zipread.c, core/io/codecs/zsource.c's
# raw-deflate row), side by side in one run, alternating:
#   before  a samplefs built elsewhere (BENCH_BEFORE: main's binary, whose
#           inflate cursors start every read behind them at the member's
#           start): BEFORE_READS reads, as each costs about half a pass
#   after   this tree's samplefs, remounted (the member's access points
#           saved by a first mount, whose first read ran the pass)
#   floor   ISA-L alone inflating from the access point before each read
#           to its end (gzspans.c, on a gzip file holding the member's own
#           deflate stream: same blocks, same points at 1 MiB)
# Each mount reads 64 KiB at READS random offsets of the member (the same
# offsets every run) through os.pread; wall seconds of the reads, and the
# daemon's CPU seconds over them (/proc/PID/stat, utime + stime).  Also:
# the first mount's first read (the pass over the member), wall.
#
#   tools/bench/zipbench.sh
#   BENCH_BEFORE=PATH  the samplefs to compare with (required)
#   BENCH_MB=N         the member's size (default 200)
#   BENCH_RUNS=N       runs of each (default 3); medians printed
#   BENCH_READS=N      reads per run (default 200); BENCH_BEFORE_READS (20)
#   BENCH_DIR=DIR      data, kept (default: a new mktemp -d, removed)
#   BENCH_BUILD=DIR    where this tree's samplefs is (default build)
# Not a test: it fails only when a tool is missing or a read is wrong.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tools/bench
PY=/usr/bin/python3
BUILD=${BENCH_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
AFTER=$BUILD/samplefs
BEFORE=${BENCH_BEFORE:?set BENCH_BEFORE to the samplefs to compare with}
MB=${BENCH_MB:-200} RUNS=${BENCH_RUNS:-3}
READS=${BENCH_READS:-200} BREADS=${BENCH_BEFORE_READS:-20}
if [ -n "${BENCH_DIR:-}" ]; then D=$BENCH_DIR; KEEP=1; else D=$(mktemp -d); KEEP=0; fi
mkdir -p "$D"
command -v zip >/dev/null || { echo "zipbench: zip missing"; exit 1; }
[ -x "$AFTER" ] && [ -x "$BEFORE" ] || { echo "zipbench: $AFTER or $BEFORE missing"; exit 1; }
SPANS=$D/bench-gzspans
cc -O2 -Wall -D_GNU_SOURCE -o "$SPANS" "$HERE/gzspans.c" -lisal -lz -lpthread || exit 1

MNT=$D/mnt PID=
cleanup() {
	if [ -n "$PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
	fi
	[ "$KEEP" = 1 ] || rm -rf "$D"
}
trap cleanup EXIT

# the member (64 KiB pieces: 35% random, the rest text), its zip, the
# same deflate stream as a gzip file for the floor, the offsets
if [ ! -f "$D/big.zip" ]; then
	"$PY" - "$D" "$MB" <<'PYEOF' || exit 1
import os, random, struct, subprocess, sys, zipfile, zlib
d, mb = sys.argv[1], int(sys.argv[2])
rng = random.Random(18)
os.makedirs(os.path.join(d, "src"), exist_ok=True)
with open(os.path.join(d, "src", "big.bin"), "wb") as f:
    k = 0
    for _ in range(mb * 16):
        if rng.random() < 0.35:
            f.write(rng.randbytes(65536))
        else:
            f.write(b"".join(b"%09d %s\n" % (k + j, b"x" * (j % 23)) for j in range(2000))[:65536])
        k += 2000
subprocess.run(["zip", "-q", "../big.zip", "big.bin"], cwd=os.path.join(d, "src"), check=True)
z = zipfile.ZipFile(os.path.join(d, "big.zip"))
i = z.getinfo("big.bin")
with open(os.path.join(d, "big.zip"), "rb") as f:
    f.seek(i.header_offset)
    h = f.read(30)
    n, e = struct.unpack("<HH", h[26:30])
    f.seek(i.header_offset + 30 + n + e)
    raw = f.read(i.compress_size)
with open(os.path.join(d, "big.gz"), "wb") as g:
    g.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + raw +
            struct.pack("<II", i.CRC, i.file_size & 0xffffffff))
with open(os.path.join(d, "offsets"), "w") as o:
    for _ in range(1000):
        o.write("%d 65536\n" % rng.randrange(i.file_size - 65536))
os.unlink(os.path.join(d, "src", "big.bin"))
PYEOF
fi

mount_it() {	# BINARY CACHE: mounts big.zip on $MNT, sets PID
	mkdir -p "$MNT" "$2"
	XDG_CACHE_HOME=$2 "$1" -f "$D/big.zip" "$MNT" -o layout=tar 2>>"$D/daemon.log" &
	PID=$!
	for _ in $(seq 500); do
		grep -qs " $MNT fuse" /proc/mounts && return 0
		sleep 0.02
	done
	echo "zipbench: mount failed"; cat "$D/daemon.log"; exit 1
}
umount_it() {
	fusermount3 -u "$MNT"
	wait "$PID"
	PID=
}
cpu() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
TCK=$(getconf CLK_TCK)
# reads N offsets, checking them against zipfile's bytes: wall seconds
reads() {
	"$PY" - "$D/big.zip" "$MNT/big.bin" "$D/offsets" "$1" <<'PYEOF'
import os, sys, time, zipfile
want = zipfile.ZipFile(sys.argv[1]).read("big.bin")
offs = [int(l.split()[0]) for l in open(sys.argv[3])][:int(sys.argv[4])]
fd = os.open(sys.argv[2], os.O_RDONLY)
t0 = time.monotonic()
got = [os.pread(fd, 65536, o) for o in offs]
dt = time.monotonic() - t0
for o, g in zip(offs, got):
    if g != want[o:o + 65536]:
        sys.exit("zipbench: the bytes at %d differ" % o)
print("%.3f" % dt)
PYEOF
}
# one measured mount: per-read wall ms and daemon CPU ms
measure() {	# BINARY CACHE N
	local c0 w c1
	mount_it "$1" "$2"
	c0=$(cpu)
	w=$(reads "$3") || exit 1
	c1=$(cpu)
	umount_it
	awk -v w="$w" -v c="$((c1 - c0))" -v n="$3" -v t="$TCK" \
		'BEGIN { printf "%.2f %.2f\n", w * 1000 / n, c * 1000 / t / n }'
}

: >"$D/b" ; : >"$D/a" ; : >"$D/f" ; : >"$D/p"
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
for r in $(seq "$RUNS"); do
	measure "$BEFORE" "$D/cache-b$r" "$BREADS" >>"$D/b"
	# the first mount: its first read runs the pass and saves the table
	rm -rf "$D/cache-a"
	mount_it "$AFTER" "$D/cache-a"
	reads 1 >>"$D/p" || exit 1
	umount_it
	measure "$AFTER" "$D/cache-a" "$READS" >>"$D/a"
	head -n "$READS" "$D/offsets" >"$D/offs.f"
	"$SPANS" -s 1048576 "$D/big.gz" "$D/offs.f" |
		sed -n "s/.*secs=\([0-9.]*\).*/\1/p" |
		awk -v n="$READS" '{ printf "%.2f\n", $1 * 1000 / n }' >>"$D/f"
done
med() { sort -n | awk '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)]; printf "%s (%s-%s)", m, v[1], v[NR] }'; }
echo "| $MB MB member, 64 KiB random reads, medians of $RUNS (min-max) | wall ms/read | daemon CPU ms/read |"
echo "|---|---|---|"
echo "| before: $BEFORE, $BREADS reads | $(cut -d' ' -f1 "$D/b" | med) | $(cut -d' ' -f2 "$D/b" | med) |"
echo "| after: remounted, $READS reads | $(cut -d' ' -f1 "$D/a" | med) | $(cut -d' ' -f2 "$D/a" | med) |"
echo "| floor: ISA-L from the point before each read (gzspans), $READS reads | $(med <"$D/f") | - |"
echo "| after: the first mount's first read (the pass), s | $(med <"$D/p") | - |"
echo "load average (1 min) at the start and the end: $LOAD0, $(cut -d' ' -f1 /proc/loadavg)"
