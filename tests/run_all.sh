#!/usr/bin/env bash
# The whole test suite, as `make test` runs it after building build/ and
# build-asan/ (build-tsan/ and build-fuzz/ are built here meanwhile, see
# SFS_LATE_BUILD, or before, by `make test-build`): the layering check of core/
# (tests/check_layers.sh), unit tests of both builds, the fuzz targets'
# regressions and a short run of each, then every integration test with the
# ASan+UBSan daemon and a few (PLAIN, see there) with the plain daemon too.
# Ends with "N passed, N failed".
#
# Nothing can stall it: every check is bounded and a hang fails it, saying
# so.  Each unit test has a timeout (tests/unit/timeout.c) and each unit
# binary one as a whole (tests/run_unit.sh), tests/check_timeouts.sh shows
# both work; each integration test gets 900 s, each fixture generator 600 s,
# the fuzz job's every libFuzzer run its time plus a margin (tests/fuzz/run.sh).
#
# The checks run as jobs, TEST_JOBS at a time (default: one more than the
# CPUs, since the integration tests wait on mounts, servers and their
# children much of their time): each unit test binary of each build, the
# fuzz targets, each integration test of each build.  A job's output goes to
# its own log, and its results to its own files; a line says when each job
# ends, and once all have, the logs are printed in the order above, then the
# failed checks, then the total.  Every integration test picks its own
# temporary directory, mount points, cache and free ports, so they can run
# side by side.  TEST_JOBS=1 runs one job at a time.
set -u
cd "$(dirname "$0")/.."
OUT=$(mktemp -d /tmp/sfs-run.XXXXXX)	# one log, results and failures per job
export SFS_FIXTURES=$(mktemp -d /tmp/sfs-fixtures.XXXXXX)
trap 'rm -rf "$OUT" "$SFS_FIXTURES"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
FUZZ_SECONDS_CI=${FUZZ_SECONDS_CI:-5}
TEST_JOBS=${TEST_JOBS:-$(( $(nproc 2>/dev/null || echo 1) + 1 ))}

# Unit-test fixtures, written by numpy/scipy/tarfile (the oracles) into one
# temporary directory that criterion tests (and the fuzz seeds) find
# through $SFS_FIXTURES; made while the first jobs, integration tests, run.
# The jobs that need them wait for $OUT/fixtures.done.
(
	for g in tests/fixtures/make_*.py; do
		[ -e "$g" ] || continue
		timeout -k 10 600 /usr/bin/python3 "$g" "$SFS_FIXTURES" ||
			{ rc=$?; [ $rc -eq 124 ] && echo "fixture generator $g timed out after 600 s"
			  echo "fixture generator $g failed"; echo "0 1" >> "$OUT/fixtures.results"
			  echo "fixture generator $g" >> "$OUT/fixtures.failures"; }
	done >"$OUT/fixtures.log" 2>&1
	touch "$OUT/fixtures.done"
) </dev/null &
FIXTURES_PID=$!

# The builds `make test` leaves to this script ($SFS_LATE_BUILD: make
# targets, built SFS_LATE_JOBS compiles at a time) while the first jobs
# run; the jobs that need them (LATE) wait for $OUT/late.done.  A failed
# build is a failed check, its log printed at the end.
LATE="fuzz int:build:test_soak.sh"
if [ -n "${SFS_LATE_BUILD:-}" ]; then
	(
		: >"$OUT/late.results"; : >"$OUT/late.failures"
		# shellcheck disable=SC2086
		if ! make -j"${SFS_LATE_JOBS:-2}" $SFS_LATE_BUILD >"$OUT/late.build" 2>&1; then
			{ tail -n 40 "$OUT/late.build"; echo "make $SFS_LATE_BUILD failed"; } >"$OUT/late.log"
			echo "0 1" >> "$OUT/late.results"
			echo "make $SFS_LATE_BUILD" >> "$OUT/late.failures"
		fi
		touch "$OUT/late.done"
	) </dev/null &
	LATE_PID=$!
else
	touch "$OUT/late.done"
	LATE_PID=
fi

# ---- the jobs, in the order their logs are printed ----
JOBS=()	# KIND or KIND:BUILD:NAME; run_job runs one
JOBS+=(layers)
for b in build build-asan; do
	for t in $(ls "$b"/tests/test_* 2>/dev/null | grep -v "\.d$"); do
		JOBS+=("unit:$b:${t##*/}")
	done
done
JOBS+=(fuzz)
# Every integration test runs with the ASan+UBSan daemon: the stricter
# run, the same code at the same -O2, the same oracles, and it stops at the
# first memory error or undefined behaviour.  The plain daemon (the binary
# users get) runs a test again only where it proves something the ASan run
# cannot, listed in PLAIN:
#   - memory judged on the plain build only (a sanitizer's RSS holds its
#     own state): test_soak (and its ThreadSanitizer run), test_quickdraw
#     (10M samples), test_gzip and test_zcodecs (the bombs' peak RSS);
#   - time: test_http_stall (EIO within read_timeout plus slack), and the
#     read path's replies as glibc's allocator sees them (test_replies);
#   - the shipped binary as a user starts and stops it: test_daemon
#     (mount(8), fstab, the npy layout end to end), test_lifecycle (exit
#     status, signals, background start);
#   - threads judged by ThreadSanitizer: test_sessions (several session
#     threads on clones of /dev/fuse; its TSan run needs the plain one).
# The others compare bytes, trees and messages with their oracles; a second
# run with the plain daemon would prove the same of the same code and cost
# a third of the suite's time on 2 cores.
PLAIN="test_soak.sh test_quickdraw.sh test_gzip.sh test_zcodecs.sh test_http_stall.sh
	test_replies.sh test_daemon.sh test_lifecycle.sh test_sessions.sh"
PLAIN=" $(echo $PLAIN) "	# one line, a space either side of each name
for b in build build-asan; do
	for t in tests/integration/test_*.sh; do
		[ -e "$t" ] || continue
		[ "$b" = build ] && [[ $PLAIN != *" ${t##*/} "* ]] && continue
		JOBS+=("int:$b:${t##*/}")
	done
done

# run_job NAME: runs one job with its output in $OUT/NAME.log and its
# "passed failed" lines and failure names in $OUT/NAME.{results,failures}
run_job() {
	local name=$1 kind b t rc start
	IFS=: read -r kind b t <<<"$name"
	if [ "$kind" = unit ] || [ "$kind" = fuzz ]; then
		while [ ! -e "$OUT/fixtures.done" ]; do sleep 0.2; done
	fi
	if [[ " $LATE " == *" $name "* ]]; then
		while [ ! -e "$OUT/late.done" ]; do sleep 0.5; done
	fi
	export SFS_RESULTS=$OUT/$name.results SFS_FAILURES=$OUT/$name.failures
	: >"$SFS_RESULTS"; : >"$SFS_FAILURES"
	case $kind in
	layers)
		# the layering: source reads only in core/io, includes and
		# calls downwards, no include circle; then its self-test
		# (a violation of each kind planted in a copy must be
		# caught); one result per check
		echo "== tests/check_layers.sh"
		timeout -k 10 300 bash tests/check_layers.sh ||
			{ [ $? -eq 124 ] && echo "0 1" >> "$SFS_RESULTS" &&
			  echo "check_layers.sh timed out after 300 s" | tee -a "$SFS_FAILURES"; }
		# a hang fails a unit test and its binary, never stalls the suite
		echo "== tests/check_timeouts.sh"
		bash tests/check_timeouts.sh build ;;
	unit)
		# its own cache directory: no job shares one
		XDG_CACHE_HOME=$OUT/$name.cache bash tests/run_unit.sh "$b" "$b/tests/$t" ;;
	fuzz)
		# libFuzzer targets (tests/fuzz/README.md): every input under
		# tests/fuzz/regressions/ replayed, then each target for
		# FUZZ_SECONDS_CI s; run.sh adds one result per replay and per
		# run, and names failed targets.
		if ls build-fuzz/fuzz_* >/dev/null 2>&1; then
			echo "== fuzz targets ($FUZZ_SECONDS_CI s each)"
			bash tests/fuzz/run.sh ci "$FUZZ_SECONDS_CI"
		else
			echo "build-fuzz/ has no fuzz targets (make fuzz-build)"
			echo "0 1" >> "$SFS_RESULTS"
			echo "fuzz targets not built" >> "$SFS_FAILURES"
		fi ;;
	int)
		echo "== tests/integration/$t ($b)"
		start=$(date +%s)
		SAMPLEFS_BUILD=$b timeout -k 10 900 bash "tests/integration/$t"
		rc=$?
		why="exited $rc"
		[ $rc -eq 124 ] || [ $rc -eq 137 ] && why="timed out after 900 s (killed)"
		[ $rc -ne 0 ] && echo "$t $why" && echo "0 1" >> "$SFS_RESULTS" &&
			echo "$t ($b) $why" >> "$SFS_FAILURES"
		echo "   ($(( $(date +%s) - start )) s)" ;;
	esac
}

# the order jobs start in: the longest first (as measured on 2 cores; the
# LATE ones as soon as the late build is done), then the other integration tests, the unit tests, the layering check, so
# the last to start are short and the workers end together.  Every job runs
# whatever its place.
LONG="fuzz int:build:test_soak.sh int:build-asan:test_faults.sh int:build-asan:test_tar.sh
	int:build-asan:test_s3_cluster.sh int:build-asan:test_zcodecs.sh int:build:test_zcodecs.sh
	int:build-asan:test_shared_index.sh int:build-asan:test_download.sh int:build-asan:test_soak.sh
	int:build-asan:test_quickdraw.sh int:build:test_quickdraw.sh int:build-asan:test_s3.sh
	int:build-asan:test_http_mount.sh int:build-asan:test_daemon.sh
	unit:build-asan:test_pickle unit:build-asan:test_tarindex"
QUEUE=()
for j in $LONG; do
	[[ " ${JOBS[*]} " == *" $j "* ]] && QUEUE+=("$j")
done
for p in int:build-asan: int:build: unit:build-asan: unit:build: layers; do
	for j in "${JOBS[@]}"; do
		[[ $j == "$p"* ]] && ! [[ " $LONG " == *[[:space:]]"$j"[[:space:]]* ]] && QUEUE+=("$j")
	done
done
[ ${#QUEUE[@]} -eq ${#JOBS[@]} ] || { echo "run_all.sh: ${#QUEUE[@]} jobs queued of ${#JOBS[@]}"; exit 1; }

# a pool of TEST_JOBS workers; each job's end is said as it happens
declare -A PID_JOB=()
done_n=0
t0=$(date +%s)
reap() {	# waits for one job to end and says so
	local pid name sum
	wait -n -p pid "${!PID_JOB[@]}"
	name=${PID_JOB[$pid]}
	unset "PID_JOB[$pid]"
	done_n=$((done_n + 1))
	sum=$(awk '{p += $1; f += $2} END {print p + 0 " passed, " f + 0 " failed"}' "$OUT/$name.results")
	printf '[%3d/%d, %4d s] %s: %s\n' "$done_n" "${#JOBS[@]}" "$(( $(date +%s) - t0 ))" "$name" "$sum"
}
echo "running ${#JOBS[@]} jobs, $TEST_JOBS at a time (logs follow once all have ended)"
pending=("${QUEUE[@]}")
while [ ${#pending[@]} -gt 0 ]; do
	while [ ${#PID_JOB[@]} -ge "$TEST_JOBS" ]; do reap; done
	# the first job in the queue, but a LATE one lets the others pass
	# until the late build is done (unless only LATE ones are left)
	k=0
	if [ ! -e "$OUT/late.done" ]; then
		for k in "${!pending[@]}"; do
			[[ " $LATE " == *" ${pending[$k]} "* ]] || break
		done
	fi
	j=${pending[$k]}
	pending=("${pending[@]:0:k}" "${pending[@]:k+1}")
	run_job "$j" >"$OUT/$j.log" 2>&1 </dev/null &
	PID_JOB[$!]=$j
done
while [ ${#PID_JOB[@]} -gt 0 ]; do reap; done
wait "$FIXTURES_PID" $LATE_PID

echo
cat "$OUT/fixtures.log"
[ -e "$OUT/late.log" ] && cat "$OUT/late.log"
for j in "${JOBS[@]}"; do
	cat "$OUT/$j.log"
done
read -r passed failed < <(cat "$OUT"/*.results 2>/dev/null | awk '{p+=$1; f+=$2} END {print p+0, f+0}')
echo
failures=$(cat "$OUT/fixtures.failures" "$OUT/late.failures" 2>/dev/null; for j in "${JOBS[@]}"; do cat "$OUT/$j.failures"; done)
if [ -n "$failures" ]; then
	echo "Failed:"
	sed 's/^/  /' <<<"$failures"
fi
echo "(the jobs took $(( $(date +%s) - t0 )) s, $TEST_JOBS at a time)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
