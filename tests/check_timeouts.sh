#!/usr/bin/env bash
# A hang fails, never stalls the suite: tests/unit/hang_selftest.c (two
# tests that never return, one that passes), linked with
# tests/unit/timeout.c as every unit test is, run through tests/run_unit.sh:
#  - each test's own timeout (SFS_TEST_TIMEOUT) fails the two hung tests,
#    "Timed out", the third passes, the binary ends well before its bound;
#  - with per-test timeouts off, the binary's bound (SFS_UNIT_TIMEOUT)
#    kills it and counts it failed, saying so.
# Run by tests/run_all.sh (one result per check in $SFS_RESULTS when set);
# needs BUILD/tests/unit/timeout.o (make BUILD/tests/test_X builds it).
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
tmp=$(mktemp -d /tmp/sfs-timeouts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0

result() {	# NAME OK(0/1)
	if [ "$2" -eq 0 ]; then
		echo "ok - $1"
		[ -n "${SFS_RESULTS:-}" ] && echo "1 0" >> "$SFS_RESULTS"
	else
		echo "not ok - $1"; bad=1
		[ -n "${SFS_RESULTS:-}" ] && echo "0 1" >> "$SFS_RESULTS"
		[ -n "${SFS_FAILURES:-}" ] && echo "check_timeouts: $1" >> "$SFS_FAILURES"
	fi
}

if ! cc -o "$tmp/hang_selftest" tests/unit/hang_selftest.c "$B/tests/unit/timeout.o" \
	-lcriterion 2>"$tmp/cc.log"; then
	cat "$tmp/cc.log"
	result "the planted hang builds (with $B/tests/unit/timeout.o)" 1
	exit 1
fi

# every run is bounded here too: this check must not hang either
t0=$(date +%s)
SFS_TEST_TIMEOUT=3 SFS_UNIT_TIMEOUT=60 SFS_RESULTS= SFS_FAILURES= \
	timeout 120 bash tests/run_unit.sh "$B" "$tmp/hang_selftest" >"$tmp/a.log" 2>&1
rc=$? el=$(( $(date +%s) - t0 ))
sed 's/^/    /' "$tmp/a.log"
result "a hung test fails the binary (exit $rc)" "$([ $rc -eq 1 ] && echo 0 || echo 1)"
result "both hung tests reported 'Timed out'" \
	"$([ "$(grep -c 'selftest::.*Timed out' "$tmp/a.log")" = 2 ] && echo 0 || echo 1)"
result "the other test still passes" \
	"$(grep -q 'hang_selftest *passed 1, failed 2' "$tmp/a.log" && echo 0 || echo 1)"
result "within the tests' timeouts ($el s, not the binary's 60)" "$([ $el -lt 40 ] && echo 0 || echo 1)"

t0=$(date +%s)
SFS_TEST_TIMEOUT=0 SFS_UNIT_TIMEOUT=5 SFS_RESULTS= SFS_FAILURES= \
	timeout 120 bash tests/run_unit.sh "$B" "$tmp/hang_selftest" >"$tmp/b.log" 2>&1
rc=$? el=$(( $(date +%s) - t0 ))
sed 's/^/    /' "$tmp/b.log"
result "no test timeouts: the binary's bound kills it (exit $rc, $el s)" \
	"$([ $rc -eq 1 ] && [ $el -lt 60 ] && echo 0 || echo 1)"
result "and says so" "$(grep -q 'hang_selftest: killed after 5 s' "$tmp/b.log" && echo 0 || echo 1)"
exit $bad
