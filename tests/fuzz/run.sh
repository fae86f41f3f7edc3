#!/usr/bin/env bash
# Runs the libFuzzer targets of build-fuzz/ (see tests/fuzz/README.md).
#
#   run.sh fuzz SECONDS [TARGET...]   `make fuzz`: each target for SECONDS
#                                     over build-fuzz/corpus/TARGET
#   run.sh ci SECONDS [TARGET...]     `make test`: replays
#                                     tests/fuzz/regressions/TARGET/*, then
#                                     fuzzes each target for SECONDS; adds
#                                     "passed failed" lines to $SFS_RESULTS and
#                                     failed targets to $SFS_FAILURES
#
# Seed corpora: the fixture generators' files ($SFS_FIXTURES when set, else
# generated here into a temporary directory) picked by tests/fuzz/seeds.py.
# A crash, timeout, leak or memory blow-up fails the target and leaves the
# input in build-fuzz/artifacts/TARGET/, but for a failure an input in
# tests/fuzz/pending/TARGET/ already shows (KNOWN: not counted by ci, the
# run goes on for the time left; fuzz mode still exits nonzero).  Prints executions and executions
# per second per target, then a summary; exits nonzero if any target failed.
set -u
cd "$(dirname "$0")/../.."
mode=$1 secs=$2
shift 2
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(npy pickle zip tar tarindex mat5 devkit strokes index)
B=build-fuzz

# per-target limits: the largest input, and the largest single allocation
# (MB).  zip, mat5 and devkit get small ones: issue 8 asks that work be a
# small multiple of the input, so a member or array allocated far beyond
# what max_len bytes could hold is a failure, not a slow run.
max_len() {
	case $1 in
	npy) echo 8192 ;; index) echo 4096 ;; strokes|pickle) echo 16384 ;;
	zip) echo 131072 ;; *) echo 65536 ;;
	esac
}
malloc_mb() {
	case $1 in
	zip) echo 64 ;; mat5|devkit) echo 128 ;; *) echo 1024 ;;
	esac
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sfs-fuzz-run.XXXXXX")
# the targets' own temporary directories go under here (tmpfs when there is
# one: the tar index targets write an index file per input)
work=$(mktemp -d "$( [ -w /dev/shm ] && echo /dev/shm || echo /tmp )/sfs-fuzz-work.XXXXXX")
trap 'rm -rf "$tmp" "$work"' EXIT

fixtures=${SFS_FIXTURES:-}
if [ -z "$fixtures" ]; then
	fixtures=$tmp/fixtures
	mkdir -p "$fixtures"
	for g in tests/fixtures/make_*.py; do
		/usr/bin/python3 "$g" "$fixtures" >/dev/null || { echo "fixture generator $g failed"; exit 1; }
	done
fi
/usr/bin/python3 tests/fuzz/seeds.py "$fixtures" "$tmp/seeds" || { echo "seeds.py failed"; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# What a failure looks like, to tell a known one from a new one: the
# harness's invariant message, else the first core/ function in the report.
signature() {
	local l
	l=$(grep -a -m1 -o 'invariant failed: .*' "$1" | sed 's/ (.*//')
	[ -z "$l" ] && l=$(grep -a -m1 -o ' in [A-Za-z_0-9]* [^ ]*core/[a-z_0-9]*\.c' "$1" |
		sed 's| in \([^ ]*\) .*\(core/.*\)|\1 \2|')
	printf '%s\n' "${l:-unknown}"
}
# Signatures of the pending inputs of target $1 (each run once, index's
# with its tree checks on: pending/README.md); one that passes is said.
known_signatures() {
	local f
	[ -d "tests/fuzz/pending/$1" ] || return 0
	find "tests/fuzz/pending/$1" -type f ! -name '*.md' | while read -r f; do
		if FUZZ_STRICT_INDEX=1 TMPDIR=$work "$B/fuzz_$1" "${opts[@]}" "$f" >"$tmp/known.log" 2>&1; then
			echo "[fuzz] $1: pending input $(basename "$f") passes now: move it to tests/fuzz/regressions/$1/" >&2
		else
			signature "$tmp/known.log"
		fi
	done
}

failed=()
summary=()
for t in "${targets[@]}"; do
	bin=$B/fuzz_$t
	art=$B/artifacts/$t
	mkdir -p "$art" "$B/corpus/$t"
	[ -d "$tmp/seeds/$t" ] && cp -n "$tmp/seeds/$t"/* "$B/corpus/$t"/ 2>/dev/null
	# a known, unfixed failure (tests/fuzz/pending/) that is also a seed
	# would stop every run at once and hide new ones: leave it out
	if [ -d "tests/fuzz/pending/$t" ]; then
		known=$(find "tests/fuzz/pending/$t" -type f ! -name '*.md' -exec sha1sum {} + | cut -d' ' -f1)
		if [ -n "$known" ]; then
			find "$B/corpus/$t" -type f -exec sha1sum {} + | grep -F -f <(printf '%s\n' $known) |
				while read -r _ f; do
					echo "[fuzz] $t: seed $(basename "$f") is a pending failure, left out"
					rm -f "$f"
				done
		fi
	fi
	log=$B/logs/$t.log
	mkdir -p "$B/logs"
	opts=(-rss_limit_mb=2048 -malloc_limit_mb="$(malloc_mb "$t")" -timeout=10
	      -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="$art/")
	ok=1
	if [ "$mode" = ci ] && [ -d "tests/fuzz/regressions/$t" ]; then
		regs=$(find "tests/fuzz/regressions/$t" -type f ! -name '*.md' | sort)
		if [ -n "$regs" ]; then
			n=$(printf '%s\n' "$regs" | wc -l)
			# shellcheck disable=SC2086
			if TMPDIR=$work "$bin" "${opts[@]}" $regs >"$B/logs/$t.replay.log" 2>&1; then
				echo "[fuzz] $t: $n regression inputs replayed, all pass"
				echo "1 0" >> "${SFS_RESULTS:-/dev/null}"
			else
				ok=0
				echo "[fuzz] $t: a regression input fails again:"
				grep -a "ERROR\|runtime error\|invariant failed\|Running:" "$B/logs/$t.replay.log" | tail -n 8 | sed 's/^/    /'
				echo "0 1" >> "${SFS_RESULTS:-/dev/null}"
				echo "[fuzz] $t: regression replay (build-fuzz/logs/$t.replay.log)" >> "${SFS_FAILURES:-/dev/null}"
			fi
		fi
	fi
	# Fuzz for $secs in all.  A failure that an input in tests/fuzz/pending/
	# already shows (a fix not merged yet) is counted as KNOWN, its input
	# dropped from the corpus if it is there, and the run goes on for the
	# time left (at most MAX_KNOWN times), so that a shallow known bug does
	# not hide the rest of the target.  Any other failure ends the run.
	known=$(known_signatures "$t" | sort -u)
	t0=$(date +%s) execs=0 nknown=0 rc=0 new=
	while :; do
		left=$(( secs - ($(date +%s) - t0) ))
		[ $left -le 0 ] && break
		before=$(ls "$art" | wc -l)
		TMPDIR=$work "$bin" "${opts[@]}" -max_total_time="$left" "$B/corpus/$t" >"$log" 2>&1
		rc=$?
		n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
		execs=$(( execs + ${n:-0} ))
		rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n1)
		cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -n1 | sed 's/cov: //')
		new=$(ls -t "$art" | head -n $(( $(ls "$art" | wc -l) - before )))
		[ $rc -eq 0 ] && [ -z "$new" ] && break
		sig=$(signature "$log")
		if [ $rc -eq 0 ] || [ -z "$known" ] || ! printf '%s\n' "$known" | grep -qxF "$sig"; then
			ok=0
			break
		fi
		nknown=$(( nknown + 1 ))
		for f in $new; do
			h=$(sha1sum < "$art/$f" | cut -d' ' -f1)
			find "$B/corpus/$t" -type f -exec sha1sum {} + | awk -v h="$h" '$1 == h {print $2}' |
				xargs -r rm -f
			cp "$log" "$B/logs/$t.known.log"
			rm -f "$art/$f"
		done
		[ $nknown -ge "${MAX_KNOWN:-20}" ] && break
	done
	el=$(( $(date +%s) - t0 ))
	line=$(printf '%-9s %12s execs %8s/s  cov %6s  peak rss %5s MB' "$t" "$execs" \
		"$(( execs / (el > 0 ? el : 1) ))" "${cov:-?}" "${rss:-?}")
	[ $nknown -gt 0 ] && line="$line  KNOWN pending failure x$nknown ($(printf '%s' "$known" | tr '\n' ';'))"
	if [ $ok -eq 0 ]; then
		line="$line  FAILED (exit $rc)"
		echo "[fuzz] $t FAILED: libFuzzer exited $rc; log: $log"
		grep -a "ERROR: \|runtime error\|invariant failed\|SUMMARY\|out-of-memory\|malloc(.*) exceeds\|Test unit written" "$log" | head -n 12 | sed 's/^/    /'
		for f in $new; do
			echo "    reproducer: $art/$f"
			echo "    reproduce: $bin $art/$f"
			echo "    once fixed, move it to tests/fuzz/regressions/$t/ (tests/fuzz/pending/$t/ until then)"
		done
		failed+=("$t")
	else
		line="$line  ok"
		# `make fuzz` reports known failures as failures too: the target
		# is not clean until their fixes are merged
		[ "$mode" = fuzz ] && [ $nknown -gt 0 ] && failed+=("$t(known)")
	fi
	echo "[fuzz] $line"
	summary+=("$line")
	if [ "$mode" = ci ]; then
		if [ $ok -eq 1 ]; then
			echo "1 0" >> "${SFS_RESULTS:-/dev/null}"
		else
			echo "0 1" >> "${SFS_RESULTS:-/dev/null}"
			echo "[fuzz] $t: ${secs}s run (build-fuzz/logs/$t.log)" >> "${SFS_FAILURES:-/dev/null}"
		fi
	fi
done
echo
echo "fuzz summary (${secs} s per target):"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
	exit 1
fi
