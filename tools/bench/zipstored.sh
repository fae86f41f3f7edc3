#!/usr/bin/env bash
# zipstored.sh - what checking stored zip members' CRC-32 costs (issue 25):
# side by side in one run, alternating, another samplefs (BENCH_BEFORE,
# e.g. main's before the check: stored members spliced unchecked) and this
# tree's (every member CRC-checked before its first byte is served):
#   small  a zip of NFILES stored members of 20-200 KB (ImageNet's JPEGs
#          average 110 KB), read whole in random order by THREADS threads
#          (readfiles.c): files/s of a fresh mount with the page cache
#          dropped (cold: the disk's speed; as root), of a fresh mount of
#          the zip held in the page cache (fresh: every read reaches the
#          daemon, which is what the check costs), and of the second pass
#          of that mount (warm: the kernel's page cache of the mount, no
#          read reaches the daemon)
#   large  one stored member of LARGE_MB: the first 64 KiB read of a fresh
#          mount (the check reads the member whole once) and then 200
#          random 64 KiB reads; wall seconds, and the floor beside it: the
#          same member read whole by dd from the zip (cold and warm)
# Medians of RUNS alternating runs, with min and max; ratios after/before.
#
#   BENCH_BEFORE=PATH tools/bench/zipstored.sh
#   BENCH_NFILES=N (5000)  BENCH_LARGE_MB=N (1024)  BENCH_RUNS=N (5)
#   BENCH_THREADS=N (4)    BENCH_DIR=DIR (data, kept; default mktemp -d)
#   BENCH_BUILD=DIR        where this tree's samplefs is (default build)
# Not a test: it fails only when a tool is missing or a read fails.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
BUILD=${BENCH_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
AFTER=$BUILD/samplefs
BEFORE=${BENCH_BEFORE:?set BENCH_BEFORE to the samplefs to compare with}
NFILES=${BENCH_NFILES:-5000} LARGE_MB=${BENCH_LARGE_MB:-1024}
RUNS=${BENCH_RUNS:-5} THREADS=${BENCH_THREADS:-4}
if [ -n "${BENCH_DIR:-}" ]; then D=$BENCH_DIR; KEEP=1; else D=$(mktemp -d); KEEP=0; fi
mkdir -p "$D"
[ -x "$AFTER" ] && [ -x "$BEFORE" ] || { echo "zipstored: $AFTER or $BEFORE missing"; exit 1; }
READER=$D/readfiles
cc -O2 -Wall -D_GNU_SOURCE -o "$READER" "$ROOT/tools/bench/readfiles.c" -lpthread || exit 1

MNT=$D/mnt PID=
unmount() {
	[ -n "$PID" ] || return 0
	fusermount3 -u "$MNT" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
}
cleanup() {
	unmount
	kill "$PID" 2>/dev/null
	[ "$KEEP" = 1 ] || rm -rf "$D"
}
trap cleanup EXIT

if [ ! -f "$D/small.zip" ] || [ ! -f "$D/large.zip" ]; then
	"$PY" - "$D" "$NFILES" "$LARGE_MB" <<'PYEOF' || exit 1
import os, random, sys, zipfile
d, n, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(25)
names = []
with zipfile.ZipFile(os.path.join(d, "small.zip"), "w", zipfile.ZIP_STORED) as z:
    for i in range(n):
        name = "c%03d/%06d.JPEG" % (i % 100, i)
        z.writestr(name, rng.randbytes(rng.randint(20000, 200000)))
        names.append(name)
rng.shuffle(names)
with open(os.path.join(d, "small.list"), "w") as f:
    f.write("".join(x + "\n" for x in names))
with zipfile.ZipFile(os.path.join(d, "large.zip"), "w", zipfile.ZIP_STORED) as z:
    with z.open("large.bin", "w", force_zip64=True) as f:
        block = rng.randbytes(1 << 20)
        for k in range(mb):
            f.write(block[k % 7:] + block[:k % 7])
PYEOF
fi

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

mount_with() {	# BINARY ZIP
	mkdir -p "$MNT"
	"$1" -f "$2" "$MNT" -o layout=tar,index_dir="$D/idx-$(basename "$1")-$$" 2>>"$D/daemon.log" &
	PID=$!
	for _ in $(seq 1 3000); do
		grep -q " $MNT fuse" /proc/mounts && return 0
		kill -0 "$PID" 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}

fps() { "$READER" -t "$THREADS" -p "$MNT" "$D/small.list" | sed -n 's/.*files_per_s=\([0-9.]*\).*/\1/p'; }

# files/s: "COLD FRESH WARM" (see the top)
small_run() {
	local bin=$1 cold fresh warm
	drop
	mount_with "$bin" "$D/small.zip" || return 1
	cold=$(fps)
	unmount
	cat "$D/small.zip" >/dev/null
	mount_with "$bin" "$D/small.zip" || return 1
	fresh=$(fps)
	warm=$(fps)
	unmount
	echo "$cold $fresh $warm"
}

# the large member: "FIRST_64K_S RANDOM_200_S" of a fresh mount, cold
large_run() {
	local bin=$1
	drop
	mount_with "$bin" "$D/large.zip" || return 1
	"$PY" - "$MNT/large.bin" <<'PYEOF'
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
t0 = time.monotonic()
assert len(os.pread(fd, 65536, 0)) == 65536
t1 = time.monotonic()
rng = random.Random(7)
for _ in range(200):
    off = rng.randrange(size - 65536)
    assert len(os.pread(fd, 65536, off)) == 65536
t2 = time.monotonic()
print("%.4f %.4f" % (t1 - t0, t2 - t1))
PYEOF
	unmount
}

floor_run() {	# dd of the member's bytes from the zip: cold and warm seconds
	local c w
	drop
	c=$( { /usr/bin/time -f %e dd if="$D/large.zip" of=/dev/null bs=1M status=none; } 2>&1)
	w=$( { /usr/bin/time -f %e dd if="$D/large.zip" of=/dev/null bs=1M status=none; } 2>&1)
	echo "$c $w"
}

: >"$D/runs.tsv"
for r in $(seq 1 "$RUNS"); do
	order="before after"
	[ $((r % 2)) = 0 ] && order="after before"	# neither always first
	for v in $order; do
		bin=$BEFORE; [ $v = after ] && bin=$AFTER
		read -r c f w <<<"$(small_run "$bin")" || exit 1
		printf 'small.cold\t%s\t%s\nsmall.fresh\t%s\t%s\nsmall.warm\t%s\t%s\n' \
			"$v" "$c" "$v" "$f" "$v" "$w" >>"$D/runs.tsv"
		read -r f rr <<<"$(large_run "$bin")" || exit 1
		printf 'large.first64k_s\t%s\t%s\nlarge.random200_s\t%s\t%s\n' "$v" "$f" "$v" "$rr" >>"$D/runs.tsv"
	done
	read -r c w <<<"$(floor_run)"
	printf 'large.dd_whole_s\tfloor-cold\t%s\nlarge.dd_whole_s\tfloor-warm\t%s\n' "$c" "$w" >>"$D/runs.tsv"
done

"$PY" - "$D/runs.tsv" "$RUNS" "$NFILES" "$LARGE_MB" "$(git -C "$ROOT" rev-parse --short HEAD)" <<'PYEOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v, x = line.split("\t")
    rows[(k, v)].append(float(x))
print("zipstored.sh at %s: %s runs, %s small stored members, a %s MB stored member"
      % (sys.argv[5], sys.argv[2], sys.argv[3], sys.argv[4]))
print("| measure | variant | median | min | max |")
print("|---|---|---|---|---|")
for (k, v), xs in sorted(rows.items()):
    print("| %s | %s | %.4g | %.4g | %.4g |" % (k, v, statistics.median(xs), min(xs), max(xs)))
for k in ("small.cold", "small.fresh", "small.warm", "large.first64k_s", "large.random200_s"):
    a, b = rows.get((k, "after")), rows.get((k, "before"))
    if a and b:
        r = sorted(x / y for x, y in zip(a, b))
        print("%s: after/before median %.3f (range %.3f-%.3f)" % (k, statistics.median(r), r[0], r[-1]))
PYEOF
