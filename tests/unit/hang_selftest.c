/*
 * hang_selftest.c - not a unit test of samplefs: the planted hang that
 * tests/check_timeouts.sh runs through tests/run_unit.sh to show that a
 * test which never returns fails, alone, within its timeout
 * (tests/unit/timeout.c), while the binary's other tests still pass.
 * Named outside test_*.c so neither the Makefile nor run_all.sh runs it
 * as a unit test.
 */
#include <criterion/criterion.h>
#include <unistd.h>

Test(selftest, passes)
{
	cr_assert(1);
}

/* a read loop that never advances, as a span lookup that sends a read
 * at a span's start to the span before does (a copy of 0 bytes, forever) */
Test(selftest, never_returns)
{
	volatile unsigned long done = 0, k = 0;

	while (done < 1)
		done += k;
}

Test(selftest, sleeps_for_ever)
{
	for (;;)
		pause();
}
