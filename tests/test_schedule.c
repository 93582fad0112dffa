/* test_schedule.c - the schedule room: every schedule's plan, field by
 * field, and that an unknown mode is refused rather than run as some other
 * schedule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/schedule.h"

static const struct akk_schedule_spec spec = {
	.conc_train = 4, .conc_val = 2, .stashing = 1,
};

static void flipflop_plan(void **state)
{
	struct akk_schedule p;
	struct akk_err e = { 0 };

	(void)state;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_FLIPFLOP, &spec, 3, 0, 2, &e), 0);
	assert_int_equal(p.mode, AKK_MODE_FLIPFLOP);
	assert_int_equal(p.K, 1);
	assert_int_equal(p.V, 2);
	assert_int_equal(p.validate_during, 0);
	assert_int_equal(p.final_pass, 0);
	assert_int_equal(p.strict_states, 1);
	assert_int_equal(p.stash, 0);
	assert_int_equal(p.compute_threads, 2);	/* every core */
	assert_int_equal(p.mailbox_cap, 2 * 1 + 2 + 4 + 3);
}

static void wheels_plan(void **state)
{
	struct akk_schedule p;
	struct akk_schedule_spec nostash = spec;
	struct akk_err e = { 0 };

	(void)state;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_WHEELS, &spec, 3, 0, 2, &e), 0);
	assert_int_equal(p.K, 4);
	assert_int_equal(p.V, 2);
	assert_int_equal(p.validate_during, 1);
	assert_int_equal(p.final_pass, 1);
	assert_int_equal(p.strict_states, 0);
	assert_int_equal(p.stash, 1);
	assert_int_equal(p.compute_threads, 1);	/* pipelined gates share the cores */
	assert_int_equal(p.mailbox_cap, 2 * 4 + 2 + 4 + 3);
	/* nothing to stash with one batch in flight or stashing off */
	nostash.conc_train = 1;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_WHEELS, &nostash, 3, 0, 2, &e), 0);
	assert_int_equal(p.stash, 0);
	nostash = spec;
	nostash.stashing = 0;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_WHEELS, &nostash, 3, 0, 2, &e), 0);
	assert_int_equal(p.stash, 0);
}

static void threads_asked_for_win(void **state)
{
	struct akk_schedule p;
	struct akk_err e = { 0 };

	(void)state;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_WHEELS, &spec, 2, 3, 2, &e), 0);
	assert_int_equal(p.compute_threads, 3);
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_FLIPFLOP, &spec, 2, 1, 8, &e), 0);
	assert_int_equal(p.compute_threads, 1);
	/* never zero, whatever the core count says */
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_FLIPFLOP, &spec, 2, 0, 0, &e), 0);
	assert_int_equal(p.compute_threads, 1);
}

static void unknown_mode_refused(void **state)
{
	struct akk_schedule p;
	struct akk_err e = { 0 };

	(void)state;
	assert_int_equal(akk_schedule_plan(&p, (enum akk_mode)7, &spec, 2, 0, 2, &e), -1);
	assert_string_equal(e.msg, "unknown schedule mode 7");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flipflop_plan),
		cmocka_unit_test(wheels_plan),
		cmocka_unit_test(threads_asked_for_win),
		cmocka_unit_test(unknown_mode_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
