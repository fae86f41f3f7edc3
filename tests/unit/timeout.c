/*
 * timeout.c - linked into every unit test binary (Makefile): each test that
 * sets no timeout of its own (nor its suite) gets SFS_TEST_TIMEOUT seconds
 * (default 120), so a test that hangs fails alone, reported "Timed out",
 * and the binary goes on, instead of stalling `make test`.  Criterion's own
 * --timeout cannot do it: it only shortens timeouts tests already have.
 * tests/run_unit.sh bounds each binary as a whole besides.
 *
 * Not for: tests that need longer (they say so with .timeout = N).
 *
 * Criterion 2.4.1's runner leaks 48 bytes now and then when tests with
 * timeouts run two at a time (a calloc of its own in the runner process,
 * which fails an ASan build's binary: test_pickle showed it).  So the hook
 * below, which runs in the runner only, also tells LeakSanitizer to count
 * none of that process's later allocations (criterion's bookkeeping):
 * the tests run in processes of their own (workers criterion executes
 * afresh), whose leaks are still reported.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/internal/ordered-set.h>
#include <criterion/options.h>
#include <stdlib.h>

#define DEFAULT_TIMEOUT_S 120.0

static void *node_item(struct criterion_ordered_set_node *n)
{
	return n + 1;	/* FOREACH_SET's layout: the item follows its node */
}

/* LeakSanitizer's, in ASan builds only (weak: absent elsewhere) */
void __lsan_disable(void) __attribute__((weak));

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	const char *env = getenv("SFS_TEST_TIMEOUT");
	double t = env && *env ? atof(env) : DEFAULT_TIMEOUT_S;
	struct criterion_ordered_set_node *sn, *tn;

	if (__lsan_disable)
		__lsan_disable();
	/* 0 turns it off; a debugger session has no timeouts, as criterion's */
	if (!(t > 0) || criterion_options.debug != CR_DBG_NONE)
		return;
	for (sn = set->suites->first; sn; sn = sn->next) {
		struct criterion_suite_set *s = node_item(sn);

		if (s->suite.data && s->suite.data->timeout > 0)
			continue;
		for (tn = s->tests ? s->tests->first : NULL; tn; tn = tn->next) {
			struct criterion_test *test = node_item(tn);

			if (test->data && !(test->data->timeout > 0))
				test->data->timeout = t;
		}
	}
}
