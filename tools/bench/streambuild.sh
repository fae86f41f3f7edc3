#!/usr/bin/env bash
# streambuild.sh - first tar index builds over a slow or flaky link,
# measured (issue 26): nginx on loopback behind
# tests/integration/fault_proxy.py, with
#   1. 20 ms added to every request (/__delay: an object store's time to
#      first byte): the build (a mount with a fresh index_dir, which returns
#      once the index is built and the mount serves) against `curl` fetching
#      the whole tar through the same proxy, runs alternating (curl, build,
#      curl, build, ...), for a tar of 2000 members of 60-160 KB (~220 MB,
#      ImageNet's JPEG sizes) and for the ImageNet shape (an outer tar of 20
#      class tars of 100 such members); medians, min and max, and the median
#      of the per-pair ratios build / curl;
#      Beside them, the floor a build over this link cannot beat: the
#      mount's start (a build of a tar of one 3-byte file: its HEAD and GET
#      and the mount, each waiting for the one before) plus the same tar
#      fetched by curl in as many ranged GETs as the build sent, 6 in
#      flight as the build keeps them (curl --parallel, through the same
#      proxy): floor / curl says how far a build of BUILD_JOBS windows can
#      get, build / floor how far samplefs is from it;
#   2. /__chaos faulting a fraction of the GETs (a seeded mix of 500, 503,
#      429, resets, bodies cut with and without Content-Length, trickles,
#      stops, 2 s delays), no delay otherwise: builds of the flat tar, each
#      capped at STREAM_CAP seconds; how many completed, median, min, max.
# The tars are generated once with Python's tarfile into $STREAM_DIR.
#
#   tools/bench/streambuild.sh [RUNS [RATES]]        (RATES like "0.2 0.6")
#
# Environment: SAMPLEFS_BUILD=DIR (build), STREAM_DIR (the tars,
# /var/tmp/samplefs-streambuild), STREAM_CAP (seconds a build may take,
# 300), STREAM_OPTS (more -o options, e.g. cache_mem=128M), STREAM_DELAY
# (ms, 20), STREAM_FLOORS (more floors of the flat tar, "N:J ...": the
# start plus N ranged GETs, J in flight, against curl).  Not a test: no
# assertion; speed only.  Kills only what it started (lib.sh's cleanup).  Prints Markdown table rows.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib.sh"
. "$ROOT/tests/integration/http_lib.sh"
RUNS=${1:-5}
RATES=${2:-0.2 0.6}
DIR=${STREAM_DIR:-/var/tmp/samplefs-streambuild}
CAP=${STREAM_CAP:-300}
DELAY=${STREAM_DELAY:-20}
sfs_setup
mkdir -p "$DIR"
gen() {	# gen FILE NESTED
	[ -s "$1" ] && return 0
	"$PY" - "$1.part" "$2" <<'PY' && mv "$1.part" "$1"
import io, random, sys, tarfile
rng = random.Random(26)
def add(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
    t.addfile(ti, io.BytesIO(data))
def jpeg():
    return rng.randbytes(rng.randrange(60000, 160000))
with tarfile.open(sys.argv[1], "w") as out:
    if sys.argv[2] == "0":
        for i in range(2000):
            add(out, "d%02d/s%06d.jpg" % (i % 10, i), jpeg())
    else:
        for c in range(20):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as inner:
                for i in range(100):
                    add(inner, "n%08d_%d.JPEG" % (c, i), jpeg())
            add(out, "n%08d.tar" % c, buf.getvalue())
PY
}
gen "$DIR/flat.tar" 0 || exit 1
(cd "$SFS_TMP" && printf 'hi\n' >one && tar -cf "$DIR/one.tar" one) || exit 1
gen "$DIR/nested.tar" 1 || exit 1
http_start "$DIR" || exit 1
proxy_start "$(http_url /)" || exit 1
MNT=$SFS_TMP/mnt
mkdir -p "$MNT"

# ms COMMAND...: runs it, prints its wall time in ms and returns its status
ms() {
	local t0=${EPOCHREALTIME/./} rc
	"$@"
	rc=$?
	echo $(((${EPOCHREALTIME/./} - t0) / 1000))
	return $rc
}
build() {	# build URL: one build with a fresh index, then unmount
	rm -rf "$SFS_TMP/idx"
	timeout -k 5 "$CAP" "$SAMPLEFS" -o "layout=tar,quiet,index_dir=$SFS_TMP/idx${STREAM_OPTS:+,$STREAM_OPTS}" \
		"$1" "$MNT" 2>"$SFS_TMP/run.log" && sfs_mounted "$MNT" && fusermount3 -u "$MNT"
}
fetch() { curl -sf -o /dev/null "$1"; }
# ranged URL N [J]: the whole file at URL in N ranged GETs, J (6) at a time
ranged() {
	local size k a step args=()
	size=$(curl -sfI "$1" | tr -d '\r' | awk 'tolower($1) == "content-length:" { print $2 }')
	step=$(((size + $2 - 1) / $2))
	for ((k = 0; k < $2; k++)); do
		a=$((k * step))
		args+=(-r "$a-$((a + step - 1))" -o /dev/null "$1")
	done
	curl -sf --parallel --parallel-max "${3:-6}" "${args[@]}" 2>/dev/null
}
# floor URL N [J]: "START RANGED", ms of the mount's start (a one-file
# tar's build) and of URL fetched in N ranged GETs, J (6) in flight
floor() {
	local st rg
	st=$(ms build "$(proxy_url /one.tar)") || { echo "build of one.tar failed" >&2; return 1; }
	rg=$(ms ranged "$1" "$2" "${3:-6}") || { echo "ranged curl failed" >&2; return 1; }
	echo "$st $rg"
}
# stats N...: "median min max" of the numbers
stats() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s\n", m, v[1], v[NR] }'
}

echo "# $SAMPLEFS ($(git -C "$ROOT" rev-parse --short HEAD)), $RUNS runs each, options: layout=tar${STREAM_OPTS:+,$STREAM_OPTS}"
echo
echo "| tar, ${DELAY} ms a request | curl ms: median (min-max) | build ms: median (min-max) | build / curl: median of pairs (min-max) | GETs a build | floor ms: start + ranged GETs | floor / curl | build / floor |"
echo "|---|---|---|---|---|---|---|---|"
proxy_ctl "delay?ms=$DELAY" >/dev/null
for t in flat nested; do
	url=$(proxy_url "/$t.tar")
	cs=() bs=() rs=() fs=() fcs=() bfs=() gets=
	for ((i = 0; i < RUNS; i++)); do
		c=$(ms fetch "$url") || { echo "curl failed" >&2; exit 1; }
		proxy_ctl "stats?reset=1" >/dev/null
		b=$(ms build "$url") || { echo "build failed: $(tail -1 "$SFS_TMP/run.log")" >&2; exit 1; }
		gets=$(proxy_stat method.GET)
		read -r st rg < <(floor "$url" "$gets") && [ -n "$rg" ] || exit 1
		f=$((st + rg))
		cs+=("$c") bs+=("$b") rs+=("$(awk -v a="$b" -v b="$c" 'BEGIN { printf "%.2f", a / b }')")
		fs+=("$f") fcs+=("$(awk -v a="$f" -v b="$c" 'BEGIN { printf "%.2f", a / b }')")
		bfs+=("$(awk -v a="$b" -v b="$f" 'BEGIN { printf "%.2f", a / b }')")
		echo "  $t run $i: curl $c ms, build $b ms, $gets GETs; floor $f ms (start $st + ranged $rg)" >&2
	done
	read -r cm cmin cmax < <(stats "${cs[@]}")
	read -r bm bmin bmax < <(stats "${bs[@]}")
	read -r rm rmin rmax < <(stats "${rs[@]}")
	read -r fm fmin fmax < <(stats "${fs[@]}")
	read -r fcm fcmin fcmax < <(stats "${fcs[@]}")
	read -r bfm bfmin bfmax < <(stats "${bfs[@]}")
	echo "| $t ($(du -m "$DIR/$t.tar" | cut -f1) MB) | $cm ($cmin-$cmax) | $bm ($bmin-$bmax) | ${rm}x ($rmin-$rmax) | $gets | $fm ($fmin-$fmax) | ${fcm}x ($fcmin-$fcmax) | ${bfm}x ($bfmin-$bfmax) |"
done
# other floors: the same start plus the tar in N GETs, J in flight
# (fewer, larger windows than a build with the default cache_mem sends)
if [ -n "${STREAM_FLOORS:-}" ]; then
	echo
	echo "| flat tar, ${DELAY} ms a request: floor with N GETs, J in flight | floor / curl: median of pairs (min-max) |"
	echo "|---|---|"
	url=$(proxy_url /flat.tar)
	for nj in $STREAM_FLOORS; do
		fcs=()
		for ((i = 0; i < RUNS; i++)); do
			c=$(ms fetch "$url") || exit 1
			read -r st rg < <(floor "$url" "${nj%:*}" "${nj#*:}") && [ -n "$rg" ] || exit 1
			fcs+=("$(awk -v a="$((st + rg))" -v b="$c" 'BEGIN { printf "%.2f", a / b }')")
			echo "  floor $nj run $i: curl $c ms, start $st + ranged $rg ms" >&2
		done
		read -r fcm fcmin fcmax < <(stats "${fcs[@]}")
		echo "| ${nj%:*} GETs, ${nj#*:} in flight | ${fcm}x ($fcmin-$fcmax) |"
	done
fi
proxy_ctl "delay?ms=0" >/dev/null

echo
echo "| flat tar, GETs faulted | builds ok | median s | min s | max s |"
echo "|---|---|---|---|---|"
url=$(proxy_url /flat.tar)
for rate in $RATES; do
	times=() ok=0
	for ((i = 0; i < RUNS; i++)); do
		proxy_ctl "chaos?rate=$rate&seed=$((i + 1))" >/dev/null
		proxy_ctl "stats?reset=1" >/dev/null
		if b=$(ms build "$url"); then
			ok=$((ok + 1)); times+=("$(awk -v a="$b" 'BEGIN { printf "%.1f", a / 1000 }')")
		else
			echo "  rate $rate run $i: failed after $b ms: $(tail -1 "$SFS_TMP/run.log")" >&2
		fi
		echo "  rate $rate run $i: $b ms, $(proxy_stat faults) faults of $(proxy_stat requests) requests" >&2
	done
	med=- min=- max=-
	[ ${#times[@]} -gt 0 ] && read -r med min max < <(stats "${times[@]}")
	echo "| $(awk -v r="$rate" 'BEGIN { printf "%d %%", r * 100 }') | $ok of $RUNS | $med | $min | $max |"
done
proxy_ctl "chaos?rate=0" >/dev/null
