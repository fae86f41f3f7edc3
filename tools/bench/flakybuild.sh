#!/usr/bin/env bash
# flakybuild.sh - the tar index build over a flaky store, measured: a
# generated ~170 MB tar (gen_bigtar.py: NTARS nested tars of MEMBERS members
# of SIZE bytes) served by nginx behind tests/integration/fault_proxy.py,
# whose /__chaos mode faults a fraction of the GETs with a mix of faults
# (500, 503, 429, resets, bodies cut with and without Content-Length,
# trickles, stops mid-body, 2 s delays), seeded per run.  For each rate, the
# index is built RUNS times with a fresh index_dir (samplefs returns once
# the build is done and the mount serves; each run capped at FLAKY_CAP s),
# and the median, min and max build time of the successful runs and the
# success count are printed as a Markdown table row.
#
#   tools/bench/flakybuild.sh [RATES [RUNS]]      (RATES like "0 0.2 0.6")
#
# Environment: SAMPLEFS_BUILD=DIR (build), FLAKY_DIR (where the tar is kept,
# /var/tmp/samplefs-flaky), FLAKY_CAP (seconds a run may take, 300),
# FLAKY_OPTS (more -o options), FLAKY_SEED (first seed, 1).  Not a test:
# no assertion; speed only.  Kills only what it started (lib.sh's cleanup).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/http_lib.sh"
RATES=${1:-0 0.2 0.6}
RUNS=${2:-5}
NTARS=16 MEMBERS=1000 SIZE=10000
DIR=${FLAKY_DIR:-/var/tmp/samplefs-flaky}
CAP=${FLAKY_CAP:-300}
SEED=${FLAKY_SEED:-1}
TAR=$DIR/flaky-$NTARS-$MEMBERS-$SIZE.tar
sfs_setup
mkdir -p "$DIR"
[ -s "$TAR" ] || { "$PY" "$ROOT/tools/bench/gen_bigtar.py" "$TAR.part" $NTARS $MEMBERS $SIZE &&
	mv "$TAR.part" "$TAR"; } || exit 1
http_start "$DIR" || exit 1
proxy_start "$(http_url /)" || exit 1
url=$(proxy_url "/$(basename "$TAR")")
MNT=$SFS_TMP/mnt
mkdir -p "$MNT"
echo "# $SAMPLEFS ($(git -C "$ROOT" rev-parse --short HEAD)), $(du -m "$TAR" | cut -f1) MB, $((NTARS * MEMBERS)) members, runs capped at $CAP s"
echo "| faulted | builds ok | median s | min s | max s |"
echo "|---|---|---|---|---|"
for rate in $RATES; do
	times=() ok=0
	for ((i = 0; i < RUNS; i++)); do
		proxy_ctl "chaos?rate=$rate&seed=$((SEED + i))" >/dev/null
		rm -rf "$SFS_TMP/idx"
		t0=${EPOCHREALTIME/./}
		timeout -k 5 "$CAP" "$SAMPLEFS" -o "layout=tar,quiet,index_dir=$SFS_TMP/idx${FLAKY_OPTS:+,$FLAKY_OPTS}" \
			"$url" "$MNT" 2>"$SFS_TMP/run.log"
		rc=$?
		t1=${EPOCHREALTIME/./}
		s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')
		if [ $rc -eq 0 ] && sfs_mounted "$MNT"; then
			ok=$((ok + 1)); times+=("$s")
			fusermount3 -u "$MNT"
		else
			echo "  rate $rate run $i: failed (exit $rc) after $s s: $(tail -1 "$SFS_TMP/run.log")" >&2
		fi
		echo "  rate $rate run $i: $s s, exit $rc, $(proxy_stat faults) faults of $(proxy_stat requests) requests" >&2
		proxy_ctl "stats?reset=1" >/dev/null
	done
	if [ ${#times[@]} -gt 0 ]; then
		read -r med min max < <(printf '%s\n' "${times[@]}" | sort -n |
			awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			      printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }')
	else
		med=- min=- max=-
	fi
	echo "| $(awk -v r="$rate" 'BEGIN { printf "%d %%", r * 100 }') | $ok of $RUNS | $med | $min | $max |"
done
proxy_ctl "chaos?rate=0" >/dev/null
