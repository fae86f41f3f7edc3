#!/usr/bin/env bash
# A short soak (tools/bench/soak.sh on its small data set): a Quick, Draw!
# mount, an ImageNet mount with /shards/*.tar and /shuffled, a directory of
# GNU-tar-made tars and one of sparse tars (when the daemon serves sparse
# members), read by 16 threads at random offsets and sizes (1 byte to 1 MiB,
# some past the end, some through mmap) for 10 s, every byte compared with
# trees written by the oracles (numpy via qd_oracle.py, imagenet_oracle.py,
# GNU tar -x); every daemon's RSS must grow by less than 32 MiB after the
# warm-up (plain build only: a sanitizer's RSS holds its own state; the 5 %
# target needs the long run, soak.sh explains why), every daemon must exit 0
# with no sanitizer report.  With the plain build, a second,
# smaller run (8 threads, 5 s) uses the ThreadSanitizer daemon
# (build-tsan/samplefs, `make tsan`), halting on its first report.
. "$(dirname "$0")/lib.sh"
sfs_setup
DATA=$SFS_TMP/data
export SOAK_SIZE=small SOAK_DIR=$DATA
export TSAN_OPTIONS=halt_on_error=1:exitcode=66

check "soak sources and oracle trees generated" \
	"$PY" "$SFS_ROOT/tools/bench/soak_data.py" make "$DATA" small

# field LINE KEY: the value of KEY=... in LINE
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

# group_ok OUT GROUP GROWTH: the mount's tree matched, the reader checked
# reads of it, found no wrong byte and no error, its RSS stayed flat (when
# GROWTH is judged), and its daemon exited 0
group_ok() {
	local out=$1 g=$2 line
	grep -q "^soak: tree $g ok" "$out" || { grep -A20 "^soak: tree $g" "$out"; return 1; }
	line=$(grep "^soak: $g files=" "$out") || return 1
	echo "    ($g: $(field "$line" reads) reads, $(field "$line" bytes) bytes," \
		"$(field "$line" wrong) wrong, VmRSS after warm-up -> end:" \
		"$(sed -n 's/.* rss_kb start=[0-9-]* warm=\([0-9-]*\) end=\([0-9-]*\).*/\1 -> \2/p' <<<"$line") kB)"
	[ "$(field "$line" reads)" -gt 0 ] && [ "$(field "$line" wrong)" = 0 ] &&
		[ "$(field "$line" errors)" = 0 ] && ! grep -q "^soak: FAIL $g" "$out" &&
		grep -q "^soak: daemon $g exit=0" "$out"
}

# soak LABEL BUILD SECONDS [VAR=VALUE...]: one run and its checks
soak() {
	local label=$1 build=$2 secs=$3 out=$SFS_TMP/$1.out g rc
	shift 3
	env "$@" SOAK_BUILD="$build" SOAK_RUN="$SFS_TMP/run-$label" \
		timeout 600 bash "$SFS_ROOT/tools/bench/soak.sh" "$secs" >"$out" 2>&1
	rc=$?
	sed 's/^/    /' "$out" | grep -v '^    soak: warm-up '
	for g in quickdraw imagenet tar sparse; do
		check "$label: $g mount: tree, every byte, no error, RSS, exit status" group_ok "$out" "$g"
	done
	check "$label: ImageNet shard tars as the oracle reads them" \
		grep -q "shard tars copied, 0 failures" "$out"
	check "$label: no sanitizer report in any daemon log" \
		bash -c "! grep -q 'sanitizer report' '$out'"
	check "$label: soak.sh passes (exit status $rc)" \
		bash -c "[ $rc = 0 ] && tail -n1 '$out' | grep -qx 'soak: PASS'"
}

soak "$SAMPLEFS_BUILD" "$SAMPLEFS_BUILD" 10
if [ "$SAMPLEFS_BUILD" = build ]; then
	if check "ThreadSanitizer daemon built (make tsan)" test -x "$SFS_ROOT/build-tsan/samplefs"; then
		soak tsan build-tsan 5 SOAK_THREADS=8
	fi
fi

sfs_done
