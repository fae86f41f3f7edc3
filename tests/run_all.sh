#!/usr/bin/env bash
# The whole test suite, as `make test` runs it after building build/,
# build-asan/ and build-fuzz/: the layering check of core/
# (tests/check_layers.sh), unit tests of both builds, the fuzz targets'
# regressions and a short run of each, then every integration test with the
# plain daemon and with the ASan+UBSan daemon.  Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
export SFS_RESULTS=$(mktemp /tmp/sfs-results.XXXXXX)
export SFS_FAILURES=$(mktemp /tmp/sfs-failures.XXXXXX)	# names of failed checks
trap 'rm -f "$SFS_RESULTS" "$SFS_FAILURES"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Unit-test fixtures, written by numpy/scipy/tarfile (the oracles) into one
# temporary directory that criterion tests find through $SFS_FIXTURES.
export SFS_FIXTURES=$(mktemp -d /tmp/sfs-fixtures.XXXXXX)
trap 'rm -f "$SFS_RESULTS" "$SFS_FAILURES"; rm -rf "$SFS_FIXTURES"' EXIT
for g in tests/fixtures/make_*.py; do
	[ -e "$g" ] || continue
	/usr/bin/python3 "$g" "$SFS_FIXTURES" || { echo "fixture generator $g failed"; echo "0 1" >> "$SFS_RESULTS"; }
done

# the layering of core/: source reads only in core/io, includes downwards
# (one result per check)
echo "== tests/check_layers.sh"
bash tests/check_layers.sh

for b in build build-asan; do
	bash tests/run_unit.sh "$b" $(ls "$b"/tests/test_* 2>/dev/null | grep -v "\.d$")
done
# libFuzzer targets (tests/fuzz/README.md): every input under
# tests/fuzz/regressions/ replayed, then each target for FUZZ_SECONDS_CI s;
# run.sh adds one result per replay and per run, and names failed targets.
if ls build-fuzz/fuzz_* >/dev/null 2>&1; then
	echo "== fuzz targets (${FUZZ_SECONDS_CI:-10} s each)"
	bash tests/fuzz/run.sh ci "${FUZZ_SECONDS_CI:-10}"
else
	echo "build-fuzz/ has no fuzz targets (make fuzz-build)"
	echo "0 1" >> "$SFS_RESULTS"
	echo "fuzz targets not built" >> "$SFS_FAILURES"
fi

for b in build build-asan; do
	for t in tests/integration/test_*.sh; do
		[ -e "$t" ] || continue
		echo "== $t ($b)"
		start=$(date +%s)
		SAMPLEFS_BUILD=$b timeout 900 bash "$t"
		rc=$?
		[ $rc -ne 0 ] && echo "$(basename "$t") exited $rc" && echo "0 1" >> "$SFS_RESULTS" &&
			echo "$(basename "$t") ($b) exited $rc" >> "$SFS_FAILURES"
		echo "   ($(( $(date +%s) - start )) s)"
	done
done
read -r passed failed < <(awk '{p+=$1; f+=$2} END {print p+0, f+0}' "$SFS_RESULTS")
echo
if [ -s "$SFS_FAILURES" ]; then
	echo "Failed:"
	sed 's/^/  /' "$SFS_FAILURES"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
