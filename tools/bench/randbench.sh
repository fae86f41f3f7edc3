#!/usr/bin/env bash
# randbench.sh - random whole-sample reads over the network (issue 26),
# as ratios taken side by side, the measurements of a round alternating:
#
#  s3:   a tar of real-size members (60-160 KB, as ImageNet's JPEGs) in
#        OpenStack Swift's S3 API on loopback (tests/integration/swift_lib.sh):
#        N random members read whole by 16 threads through a fresh s3://
#        mount (readfiles.c) against curlloop.c sending the same ranged
#        GETs (the members' bytes, found by Python's tarfile) with 16
#        threads; Swift's log counts the mount's GETs per sample (target:
#        >= 0.9x the curl loop, <= 1 GET a sample);
#  http: a tar of small members (1-6 KB) on nginx on loopback: N random
#        members read by 4 threads through a fresh http:// mount against a
#        fresh mount of the same tar on the local disk (page cache warm
#        for both: what is compared is the mount's path, not the disk),
#        and curlloop.c (4 threads) for the floor (target: >= 0.5x local).
#
#  sessions: the same small members from the local tar (page cache warm),
#        fresh mounts with -o sessions=1 and sessions=2 alternating, read
#        by 4 and by 16 threads: what a second session thread gives (on a
#        2-core machine, where readers and daemon share the cores).
#
#   tools/bench/randbench.sh [s3] [http] [sessions]   (s3 and http by default)
#   BENCH_RUNS=N   rounds (default 5); BENCH_N=N samples a pass (2000)
#   BENCH_MOUNT_OPTS=...  extra -o options for the network mounts
#   BENCH_DIR=DIR  generated data (/var/tmp/samplefs-bench/rand)
#   BENCH_VS=PATH  another samplefs binary (another commit's build): each
#                  round also reads through it, and the table gives the
#                  ratio of this build to it, per round
#
# Not a test: fails only when a tool is missing or a reader hits an error.
# Everything it started (nginx, Swift, mounts) is stopped by lib.sh's EXIT
# trap.  Prints a table of medians (min-max) and per-round ratios.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
HERE=$ROOT/tools/bench
. "$ROOT/tests/integration/lib.sh"
B=$SFS_BIN	# SAMPLEFS_BUILD, absolute or under the repository
. "$ROOT/tests/integration/http_lib.sh"
. "$ROOT/tests/integration/swift_lib.sh"
READER=$B/bench-readfiles
CURLLOOP=$B/bench-curlloop
DATA=${BENCH_DIR:-/var/tmp/samplefs-bench}/rand
RUNS=${BENCH_RUNS:-5}
N=${BENCH_N:-2000}
PARTS=${*:-s3 http}
MOPTS=${BENCH_MOUNT_OPTS:-}
VS=${BENCH_VS:-}

say() { printf '[randbench %s] %s\n' "$(date +%T)" "$*" >&2; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
# stats FILE: "median (min-max)" of the numbers in FILE
stats() {
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f (%.2f-%.2f)", m, v[1], v[NR] }'
}
ratios() { paste -d' ' "$1" "$2" | awk '{ printf "%.3f\n", $1 / $2 }'; }

cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$READER" "$HERE/readfiles.c" -lpthread &&
	cc -O2 -Wall -Wextra -D_GNU_SOURCE -o "$CURLLOOP" "$HERE/curlloop.c" -lcurl -lpthread ||
	exit 1

# gen NAME COUNT LO HI: DATA/NAME.tar of COUNT members of LO-HI bytes, and
# DATA/NAME-N.{paths,ranges}: N random members' paths and byte ranges
# (Python's tarfile's offsets, not samplefs')
gen() {
	[ -f "$DATA/$1.done" ] && [ -f "$DATA/$1-$N.paths" ] && return 0
	say "generating $DATA/$1.tar ($2 members of $3-$4 bytes) and $N samples of it"
	mkdir -p "$DATA" || return 1
	"$PY" - "$DATA/$1" "$2" "$3" "$4" "$N" "$([ -f "$DATA/$1.done" ] && echo keep)" <<'PY' &&
import io, random, sys, tarfile
out, count, lo, hi, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(26)
if sys.argv[6] != "keep":	# the tar made before is kept: only new samples
    with tarfile.open(out + ".tar", "w", format=tarfile.USTAR_FORMAT) as t:
        for i in range(count):
            data = rnd.randbytes(rnd.randint(lo, hi))
            ti = tarfile.TarInfo("c%03d/s%06d.jpg" % (i % 100, i))
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
with tarfile.open(out + ".tar") as t:
    ms = [m for m in t.getmembers() if m.isfile()]
pick = random.Random(7).sample(ms, n)
with open(out + "-%d.paths" % n, "w") as p, open(out + "-%d.ranges" % n, "w") as r:
    for m in pick:
        p.write(m.name + "\n")
        r.write("%d %d\n" % (m.offset_data, m.size))
PY
		touch "$DATA/$1.done"
}

sfs_setup
T=$SFS_TMP
ROWS=()
row() { ROWS+=("| $1 | $2 | $3 |"); say "$1: $2 ($3)"; }

# pass_mount SRC THREADS LIST [OPTS]: files/s of a fresh mount of SRC
# (index kept in $T/idx), then its READs and unmount
pass_mount() {
	local m=$T/m$RANDOM line
	sfs_mount "$1" "$m" -o "index_dir=$T/idx${4:+,$4}" || return 1
	line=$("$READER" -t "$2" -p "$m" "$3") || { sfs_umount "$m"; return 1; }
	sfs_umount "$m"
	field files_per_s <<<"$line"
}

part_s3() {
	local url i g
	gen real 3000 60000 160000 || return 1
	swift_start || return 1
	export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
	unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
	swift_mkbucket randb && swift_put randb real.tar "$DATA/real.tar" || return 1
	url=s3://randb/real.tar
	# the first mount builds the index (kept for the passes)
	pass_mount "$url" 16 "$DATA/real-$N.paths" "endpoint=$SWIFT_S3${MOPTS:+,$MOPTS}" >/dev/null ||
		return 1
	: >"$T/s3.sfs"; : >"$T/s3.curl"; : >"$T/s3.gets"
	for ((i = 1; i <= RUNS; i++)); do
		mark=$(swift_log_mark) || return 1
		pass_mount "$url" 16 "$DATA/real-$N.paths" "endpoint=$SWIFT_S3${MOPTS:+,$MOPTS}" \
			>>"$T/s3.sfs" || return 1
		g=$(swift_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $2 == "/randb/real.tar" { n++ } END { print n + 0 }')
		awk -v g="$g" -v n="$N" 'BEGIN { printf "%.3f\n", g / n }' >>"$T/s3.gets"
		"$CURLLOOP" -t 16 "$SWIFT_S3/randb/real.tar" "$DATA/real-$N.ranges" |
			field files_per_s >>"$T/s3.curl" || return 1
		if [ -n "$VS" ]; then
			mark=$(swift_log_mark) || return 1
			SAMPLEFS=$VS pass_mount "$url" 16 "$DATA/real-$N.paths" \
				"endpoint=$SWIFT_S3${MOPTS:+,$MOPTS}" >>"$T/s3.vs" || return 1
			g=$(swift_log_lines "$mark" | awk -F'\t' '$1 == "GET" && $2 == "/randb/real.tar" { n++ } END { print n + 0 }')
			awk -v g="$g" -v n="$N" 'BEGIN { printf "%.3f\n", g / n }' >>"$T/s3.vsgets"
		fi
		say "s3 round $i: samplefs $(tail -1 "$T/s3.sfs"), curl $(tail -1 "$T/s3.curl"), GETs/sample $(tail -1 "$T/s3.gets")${VS:+, vs $(tail -1 "$T/s3.vs") ($(tail -1 "$T/s3.vsgets") GETs/sample)}"
	done
	ratios "$T/s3.sfs" "$T/s3.curl" >"$T/s3.ratio"
	if [ -n "$VS" ]; then
		ratios "$T/s3.vs" "$T/s3.curl" >"$T/s3.vsratio"
		ratios "$T/s3.sfs" "$T/s3.vs" >"$T/s3.vsself"
		row "BENCH_VS build: files/s; / curl loop; GETs a sample" "$(stats "$T/s3.vs")" \
			"$(stats "$T/s3.vsratio")x curl; $(stats "$T/s3.vsgets") GETs/sample"
		row "this build / BENCH_VS build, per round" "$(stats "$T/s3.vsself")" \
			"rounds: $(tr '\n' ' ' <"$T/s3.vsself")"
	fi
	row "s3, $N random 60-160 KB members, 16 threads: samplefs files/s" "$(stats "$T/s3.sfs")" \
		"runs: $(tr '\n' ' ' <"$T/s3.sfs")"
	row "the same ranged GETs, curlloop.c, 16 threads" "$(stats "$T/s3.curl")" \
		"runs: $(tr '\n' ' ' <"$T/s3.curl")"
	row "samplefs / curl loop, per round" "$(stats "$T/s3.ratio")" \
		"target >= 0.9; rounds: $(tr '\n' ' ' <"$T/s3.ratio")"
	row "GETs per sample (Swift's log)" "$(stats "$T/s3.gets")" "target <= 1"
	swift_stop
}

part_http() {
	local i
	gen small 40000 1000 6000 || return 1
	http_start "$DATA" || return 1
	export AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x	# curlloop signs; nginx ignores it
	pass_mount "$(http_url small.tar)" 4 "$DATA/small-$N.paths" "$MOPTS" >/dev/null || return 1
	cat "$DATA/small.tar" >/dev/null
	: >"$T/h.sfs"; : >"$T/h.local"; : >"$T/h.curl"
	for ((i = 1; i <= RUNS; i++)); do
		pass_mount "$(http_url small.tar)" 4 "$DATA/small-$N.paths" "$MOPTS" >>"$T/h.sfs" ||
			return 1
		pass_mount "$DATA/small.tar" 4 "$DATA/small-$N.paths" >>"$T/h.local" || return 1
		"$CURLLOOP" -t 4 "$(http_url small.tar)" "$DATA/small-$N.ranges" |
			field files_per_s >>"$T/h.curl" || return 1
		if [ -n "$VS" ]; then
			SAMPLEFS=$VS pass_mount "$(http_url small.tar)" 4 "$DATA/small-$N.paths" \
				"$MOPTS" >>"$T/h.vs" || return 1
		fi
		say "http round $i: samplefs $(tail -1 "$T/h.sfs"), local $(tail -1 "$T/h.local"), curl $(tail -1 "$T/h.curl")"
	done
	ratios "$T/h.sfs" "$T/h.local" >"$T/h.ratio"
	ratios "$T/h.curl" "$T/h.local" >"$T/h.cratio"
	row "http, $N random 1-6 KB members, 4 threads: samplefs files/s" "$(stats "$T/h.sfs")" \
		"runs: $(tr '\n' ' ' <"$T/h.sfs")"
	row "the same members, local mount of the tar (page cache warm)" "$(stats "$T/h.local")" \
		"runs: $(tr '\n' ' ' <"$T/h.local")"
	row "curlloop.c, 4 threads, the same ranges" "$(stats "$T/h.curl")" ""
	row "http / local, per round" "$(stats "$T/h.ratio")" \
		"target >= 0.5; rounds: $(tr '\n' ' ' <"$T/h.ratio")"
	row "curl loop / local, per round" "$(stats "$T/h.cratio")" "the floor's ratio"
	if [ -n "$VS" ]; then
		ratios "$T/h.vs" "$T/h.local" >"$T/h.vsratio"
		ratios "$T/h.sfs" "$T/h.vs" >"$T/h.vsself"
		row "BENCH_VS build: files/s; / local" "$(stats "$T/h.vs")" "$(stats "$T/h.vsratio")x local"
		row "this build / BENCH_VS build, per round" "$(stats "$T/h.vsself")" \
			"rounds: $(tr '\n' ' ' <"$T/h.vsself")"
	fi
	http_stop
}

part_sessions() {
	local i t s
	gen small 40000 1000 6000 || return 1
	cat "$DATA/small.tar" >/dev/null
	pass_mount "$DATA/small.tar" 4 "$DATA/small-$N.paths" >/dev/null || return 1
	for t in 4 16; do
		: >"$T/s1.$t"; : >"$T/s2.$t"
	done
	for ((i = 1; i <= RUNS; i++)); do
		for t in 4 16; do
			for s in 1 2; do
				pass_mount "$DATA/small.tar" "$t" "$DATA/small-$N.paths" "sessions=$s" \
					>>"$T/s$s.$t" || return 1
			done
			say "sessions round $i, $t threads: 1 session $(tail -1 "$T/s1.$t"), 2 sessions $(tail -1 "$T/s2.$t")"
		done
	done
	for t in 4 16; do
		ratios "$T/s2.$t" "$T/s1.$t" >"$T/s.$t.ratio"
		row "local small members, $t threads: files/s with sessions=1" "$(stats "$T/s1.$t")" \
			"runs: $(tr '\n' ' ' <"$T/s1.$t")"
		row "... with sessions=2" "$(stats "$T/s2.$t")" "runs: $(tr '\n' ' ' <"$T/s2.$t")"
		row "sessions=2 / sessions=1, $t threads, per round" "$(stats "$T/s.$t.ratio")" \
			"rounds: $(tr '\n' ' ' <"$T/s.$t.ratio")"
	done
}

for p in $PARTS; do
	"part_$p" || { say "part $p failed"; exit 1; }
done
echo "# randbench ($(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| measurement | median (min-max) | notes |"
echo "|---|---|---|"
printf '%s\n' "${ROWS[@]}"
sfs_done >/dev/null
