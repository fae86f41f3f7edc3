#!/usr/bin/env bash
# Runs criterion unit test binaries; prints one summary line per binary and
# appends "passed failed" counts to $SFS_RESULTS when set.
# A hang fails, never stalls: each test has a timeout (tests/unit/timeout.c:
# SFS_TEST_TIMEOUT, 120 s, unless it sets its own) and each binary as a
# whole SFS_UNIT_TIMEOUT seconds (900; then it is killed and counted failed).
set -u
build=$1; shift
fail=0
limit=${SFS_UNIT_TIMEOUT:-900}
for t in "$@"; do
	out=$(timeout -k 10 "$limit" "$t" --jobs 2 2>&1); rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		out="$out
$(basename "$t"): killed after $limit s (SFS_UNIT_TIMEOUT): a test hung past its own timeout, or the tests together took too long"
	fi
	syn=$(printf '%s\n' "$out" | grep -a 'Synthesis:' | tail -n1)
	pass=$(printf '%s' "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	failing=$(printf '%s' "$syn" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
	crash=$(printf '%s' "$syn" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
	pass=${pass:-0}; failing=$(( ${failing:-0} + ${crash:-0} ))
	if [ $rc -ne 0 ] || [ -z "$syn" ]; then
		printf '%s\n' "$out" | grep -av '^\[----\]' | tail -n 40
		[ "$failing" -eq 0 ] && failing=1
		fail=1
		[ -n "${SFS_FAILURES:-}" ] && printf '%s\n' "$out" | grep -a '\[FAIL\]\|CRASH\|Assertion\|signal\|killed after' |
			sed "s|^|[unit $build] $(basename "$t"): |" | head -n 10 >> "$SFS_FAILURES"
	fi
	# a skipped test is neither passed nor failed: say so, with its reason
	skipped=$(printf '%s\n' "$out" | grep -ac '\[SKIP\]')
	printf '[unit %s] %-28s passed %s, failed %s%s\n' "$build" "$(basename "$t")" "$pass" "$failing" \
		"$([ "$skipped" -gt 0 ] && echo ", skipped $skipped")"
	[ "$skipped" -gt 0 ] && printf '%s\n' "$out" | grep -a '\[SKIP\]' | sed 's/^/    /'

	[ -n "${SFS_RESULTS:-}" ] && echo "$pass $failing" >> "$SFS_RESULTS"
done
exit $fail
