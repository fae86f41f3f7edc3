#!/usr/bin/env bash
# Compressed tars (core/io/codecs/zxz.c, zzstd.c, zbz2.c): random reads through
# samplefs against the decompressor alone (tools/bench/zblocks.c: per read,
# the block or frame holding it decoded from its start to the read's end,
# no FUSE, no cache) on the same offsets, in the same run, rounds
# alternating which goes first; and, once, the first mount (the pass and
# the tar index) against the tool's own decompression to /dev/null.
#
#   tools/bench/zbench.sh [MB] [READS] [ROUNDS]   (default 160 MB, 100 reads, 5 rounds)
#   BENCH_BUILD=DIR   where samplefs and samplefs-zblocks are (default build)
#   ZBENCH_ONLY=REGEX only the files whose names match (xzT0, pixz, pzstd,
#                     pbzip2, bzip2, xz, zstdT0)
#   ZBENCH_BASE=FILE  another samplefs binary (an older commit's) read the
#                     same way in each round, with its own index_dir
#
# The tar: files of 1 MiB, half text, half random bytes.  Formats: xz -T0,
# pixz, pzstd, pbzip2, bzip2 (blocks or frames), and xz, zstd -T0 (one
# block or frame: READS/10 reads, each decodes from the file's start).  A
# round mounts afresh (the saved table: no pass; cold span cache and page
# cache), reads READS random 64 KiB pieces of random members, one thread,
# each file opened with POSIX_FADV_RANDOM (the kernel asks for the 64 KiB
# and no read-ahead), and unmounts.  Prints the blocks each tool made
# (tests/unit/zblocks.py) and markdown tables: reads/s and CPU seconds
# (the daemon's, /proc/PID/stat; the floor's own) as medians of the rounds
# with their range, and the median of the rounds' ratios.
# Not a test: it fails only when a tool is missing or a read fails.
set -uo pipefail
MB=${1:-160}
READS=${2:-100}
ROUNDS=${3:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SAMPLEFS=$BUILD/samplefs
FLOOR=$BUILD/samplefs-zblocks
PY=/usr/bin/python3
for t in xz pixz zstd pzstd bzip2 pbzip2 bzip2recover; do
	command -v $t >/dev/null || { echo "zbench: $t missing (tools/deps.sh)"; exit 1; }
done
[ -x "$SAMPLEFS" ] && [ -x "$FLOOR" ] || { echo "zbench: make first ($SAMPLEFS, $FLOOR)"; exit 1; }
T=$(mktemp -d /tmp/zbench.XXXXXX)
MNT=$T/m
PID=
unmount() {
	if [ -n "$PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=
	fi
}
trap 'unmount; rm -rf "$T"' EXIT
mkdir -p "$MNT"

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
tar -cf "$T/t.tar" -C "$T/src" . && rm -rf "$T/src"

# the reads: member and offset in it ($T/reads), the same as tar offsets ($T/offs)
"$PY" - "$T/t.tar" "$READS" "$T" <<'EOF'
import random, sys, tarfile
tar, n, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
members = [m for m in tarfile.open(tar) if m.isfile()]
rng = random.Random(2)
for name, k in (("", n), ("-one", max(n // 10, 3))):
    with open(f"{d}/reads{name}", "w") as r, open(f"{d}/offs{name}", "w") as o:
        for _ in range(k):
            m = rng.choice(members)
            off = rng.randrange(m.size - 65536)
            r.write(f"{m.name.removeprefix('./')} {off}\n")
            o.write(f"{m.offset_data + off}\n")
EOF

usec() { local t=$EPOCHREALTIME; echo "${t/./}"; }
since() { awk -v a="$1" -v b="$(usec)" 'BEGIN { printf "%.2f", (b - a) / 1e6 }'; }
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$1/stat"; }

# mount FILE [BINARY INDEX_DIR]: samplefs -f in the background until it
# serves (sets PID)
mount_z() {
	local i
	"${2:-$SAMPLEFS}" -f -o layout=tar,quiet,index_dir="${3:-$T/idx}" "$T/$1" "$MNT" 2>>"$T/log" &
	PID=$!
	for ((i = 0; i < 60000; i++)); do
		grep -qs " $MNT fuse" /proc/mounts && return 0
		kill -0 "$PID" 2>/dev/null || { echo "zbench: mount of $1 failed:"; tail -5 "$T/log"; exit 1; }
		sleep 0.01
	done
	echo "zbench: mount of $1 timed out"; exit 1
}

# the reader: wall seconds of the reads (the mount's open, fadvise, pread)
cat >"$T/read.py" <<'EOF'
import os, sys, time
root, reads = sys.argv[1], [l.split() for l in open(sys.argv[2])]
t0 = time.perf_counter()
for name, off in reads:
    fd = os.open(os.path.join(root, name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    if len(os.pread(fd, 65536, int(off))) != 65536:
        sys.exit(f"short read of {name} at {off}")
    os.close(fd)
print(f"{time.perf_counter() - t0:.4f}")
EOF

# name, compression command (stdin to stdout), the tool's decompression
KINDS=(
	"xzT0.tar.xz|xz -T0 -6 -c|xz -dc -T0"
	"pixz.tar.xz|pixz -6|pixz -d"
	"pzstd.tar.zst|pzstd -q -c|pzstd -dcq"
	"pbzip2.tar.bz2|pbzip2 -c|pbzip2 -dc"
	"bzip2.tar.bz2|bzip2 -c|bzip2 -dc"
	"xz.tar.xz|xz -6 -c|xz -dc"
	"zstdT0.tar.zst|zstd -q -T0 -c|zstd -dcq"
)
echo "### $MB MB tar, $(( $(stat -c %s "$T/t.tar") >> 20 )) MiB; commit $(git -C "$ROOT" rev-parse --short HEAD); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| file | size | blocks the tool made (output sizes) | tool's decompression | first mount |"
echo "|---|---|---|---|---|"
ONLY=()
for k in "${KINDS[@]}"; do
	[[ ${k%%|*} =~ ${ZBENCH_ONLY:-.} ]] && ONLY+=("$k")
done
KINDS=("${ONLY[@]}")
SIDES="fs floor${ZBENCH_BASE:+ base}"
for k in "${KINDS[@]}"; do
	IFS='|' read -r f comp dec <<<"$k"
	$comp <"$T/t.tar" >"$T/$f" || exit 1
	blocks=$("$PY" "$ROOT/tests/unit/zblocks.py" "$T/$f" | "$PY" -c '
import statistics, sys
s = [int(l.split()[1]) for l in sys.stdin if int(l.split()[1])]
print(f"{len(s)}, median {statistics.median_low(s) / 1e3:.0f} kB, "
      f"{min(s) / 1e3:.0f}-{max(s) / 1e3:.0f} kB")')
	t0=$(usec); $dec <"$T/$f" >/dev/null; tool=$(since "$t0")
	t0=$(usec); mount_z "$f"; first=$(since "$t0"); unmount
	[ -n "${ZBENCH_BASE:-}" ] && { mount_z "$f" "$ZBENCH_BASE" "$T/idx-base"; unmount; }
	echo "| $f | $(( $(stat -c %s "$T/$f") >> 20 )) MiB | $blocks | $tool s (\`$dec\`) | $first s |"
done

# rounds: samplefs and the floor, alternating which goes first; each
# run is a line "FILE SIDE READS SECS CPU" of $T/res
for ((r = 0; r < ROUNDS; r++)); do
	for k in "${KINDS[@]}"; do
		IFS='|' read -r f comp dec <<<"$k"
		case $f in xz.*|zstdT0.*) sfx=-one ;; *) sfx= ;; esac
		n=$(wc -l <"$T/reads$sfx")
		for side in $( ((r % 2)) && echo "$SIDES" | tr ' ' '\n' | tac || echo "$SIDES"); do
			if [ $side = fs ] || [ $side = base ]; then
				if [ $side = fs ]; then mount_z "$f"; else mount_z "$f" "$ZBENCH_BASE" "$T/idx-base"; fi
				c0=$(cpu_of "$PID")
				s=$("$PY" "$T/read.py" "$MNT" "$T/reads$sfx") || exit 1
				c1=$(cpu_of "$PID")
				unmount
				echo "$f $side $n $s $(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" >>"$T/res"
			else
				out=$("$FLOOR" "$T/$f" "$T/offs$sfx") || exit 1
				echo "$f floor $n $(sed 's/.*secs=\([0-9.]*\) cpu=\([0-9.]*\).*/\1 \2/' <<<"$out")" >>"$T/res"
			fi
		done
	done
done

echo
echo "$ROUNDS rounds of $READS random 64 KiB reads (one-block files: $(wc -l <"$T/reads-one")), 1 thread; reads/s median [range], CPU s of a round (median)"
echo
"$PY" - "$T/res" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f, side, n, secs, cpu = line.split()
    runs.setdefault(f, {}).setdefault(side, []).append((int(n) / float(secs), float(cpu)))
def rng(v):
    return f"{statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]"
base = any("base" in r for r in runs.values())
print("| file | samplefs reads/s | daemon CPU s | floor reads/s | floor CPU s | samplefs / floor (target >= 0.8) |"
      + (" base reads/s | base CPU s | samplefs / base |" if base else ""))
print("|---|---|---|---|---|---|" + ("---|---|---|" if base else ""))
def ratio(a, b):
    v = [x[0] / y[0] for x, y in zip(a, b)]
    return f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
for f, r in runs.items():
    fs, fl = r["fs"], r["floor"]
    line = (f"| {f} | {rng([x[0] for x in fs])} | {statistics.median(x[1] for x in fs):.2f} | "
            f"{rng([x[0] for x in fl])} | {statistics.median(x[1] for x in fl):.2f} | {ratio(fs, fl)} |")
    if base:
        b = r["base"]
        line += f" {rng([x[0] for x in b])} | {statistics.median(x[1] for x in b):.2f} | {ratio(fs, b)} |"
    print(line)
EOF
