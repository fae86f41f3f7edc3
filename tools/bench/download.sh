#!/usr/bin/env bash
# download.sh - samplefs-download against curl, fetching the same objects
# from Swift's s3api on loopback (not part of `make bench`):
#
#   tools/bench/download.sh [N] [JOBS] [RUNS]      (200 objects, 8, 5)
#
# N objects of 1-4 MB (random bytes, sizes drawn with a fixed seed) are
# uploaded once into a throwaway Swift (tests/integration/swift_lib.sh).
# Then, alternating, RUNS times each, into a fresh directory every time:
#   samplefs-download -j JOBS s3://bench/obj/ DIR   (listing, transfers,
#                                                   MD5 of every file)
#   curl --parallel --parallel-max JOBS --aws-sigv4 ... -K LIST
#                                                   (the URLs known: no
#                                                   listing, no checks)
# each timed wall-clock (and its CPU time); every download is compared (cmp) with the
# uploaded files, so a fast wrong copy cannot win.  Prints the medians,
# the spread (min-max) and the ratio; the target is samplefs-download
# within 10 % of curl.  Swift's data and the copies live under $SFS_TMP
# (removed at exit); the machine's other load shows in the spread.
. "$(dirname "$0")/../../tests/integration/lib.sh"
. "$(dirname "$0")/../../tests/integration/http_lib.sh"
. "$(dirname "$0")/../../tests/integration/swift_lib.sh"
N=${1:-200} JOBS=${2:-8} RUNS=${3:-5}
DL=$SFS_BIN/samplefs-download
[ -x "$DL" ] || { echo "no $DL: make first" >&2; exit 1; }
sfs_setup
T=$SFS_TMP
swift_start || exit 1
export AWS_ACCESS_KEY_ID=$SWIFT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$SWIFT_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION

"$PY" - "$T/src" "$N" <<'PY' || exit 1
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d)
r = random.Random(17)
for i in range(n):
    with open(os.path.join(d, "o%04d.bin" % i), "wb") as f:
        f.write(os.urandom(r.randint(1 << 20, 4 << 20)))
PY
swift_mkbucket bench || exit 1
# uploads 8 at a time (curl -T per object; the store's time, not measured)
ls "$T/src" | xargs -P 8 -I{} curl -s -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" \
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T "$T/src/{}" \
	"http://test%3Atester:testing@${SWIFT_S3#http://}/bench/obj/{}" || exit 1
bytes=$(du -cb "$T/src" | tail -1 | cut -f1)

# curl's list: one url and output per object
for f in $(ls "$T/src"); do
	printf 'url = "http://test%%3Atester:testing@%s/bench/obj/%s"\noutput = "%s"\n' \
		"${SWIFT_S3#http://}" "$f" "$f"
done >"$T/curl.cfg"

run_dl() { "$DL" -q -j "$JOBS" --endpoint "$SWIFT_S3" s3://bench/obj/ "$1"; }
run_curl() {
	mkdir -p "$1" && (cd "$1" && curl -s -f --parallel --parallel-max "$JOBS" \
		--aws-sigv4 "aws:amz:us-east-1:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		-K "$T/curl.cfg")
}
# timed TOOL DIR: wall-clock seconds and the tool's CPU seconds (user +
# system), after checking the copy
timed() {
	local TIMEFORMAT='%R %U %S'
	rm -rf "$2"
	sync
	{ time "run_$1" "$2" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; echo "$1 failed" >&2; exit 1; }; } 2>"$T/time"
	diff -r "$T/src" "$2" >/dev/null || { echo "$1: the copy differs" >&2; exit 1; }
	rm -rf "$2"
	awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$T/time"
}
timed dl "$T/warm" >/dev/null	# Swift's caches warm for both
for i in $(seq 1 "$RUNS"); do
	echo "dl $(timed dl "$T/d")" >>"$T/times"
	echo "curl $(timed curl "$T/c")" >>"$T/times"
done
"$PY" - "$T/times" "$N" "$bytes" "$JOBS" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    k, wall, cpu = line.split()
    t.setdefault(k, []).append((float(wall), float(cpu)))
n, b, j = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print("%d objects, %.0f MB, -j %s / --parallel-max %s, %d runs each, alternating" %
      (n, b / 1e6, j, j, len(t["dl"])))
for k, name in (("dl", "samplefs-download"), ("curl", "curl --parallel")):
    m = statistics.median(x[0] for x in t[k])
    print("%-18s median %6.2f s (%6.1f MB/s), spread %.2f-%.2f s, CPU %.2f s" %
          (name, m, b / 1e6 / m, min(x[0] for x in t[k]), max(x[0] for x in t[k]),
           statistics.median(x[1] for x in t[k])))
r = statistics.median(x[0] for x in t["dl"]) / statistics.median(x[0] for x in t["curl"])
print("ratio samplefs-download / curl: %.3f (target <= 1.10)" % r)
PY
