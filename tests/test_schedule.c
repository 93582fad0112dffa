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
	assert_int_equal(p.flush, 1);
	assert_int_equal(p.busy_gates, 1);	/* one gate computes at a time */
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
	/* the next batch enters whenever a credit is free: no flush */
	assert_int_equal(p.flush, 0);
	assert_int_equal(p.busy_gates, 3);	/* 4 batches, 3 gates */
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

/* Pipeline: as many micro-batches in flight as gates (1F1B), whatever
 * micro_batches is; never more than there are chunks in a step group;
 * tapes of one micro-batch; micro_batches clamped to the batch (a --mode
 * override of a config written for another schedule). */
static void pipeline_plan(void **state)
{
	struct akk_schedule p;
	struct akk_schedule_spec s = spec;
	struct akk_err e = { 0 };

	(void)state;
	s.batch_size = 27;
	s.micro_batches = 7;
	s.accumulate = 1;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_PIPELINE, &s, 3, 0, 2, &e), 0);
	assert_int_equal(p.mode, AKK_MODE_PIPELINE);
	assert_int_equal(p.K, 3);
	assert_int_equal(p.micro, 7);
	assert_int_equal(p.accumulate, 1);
	assert_int_equal(p.flush, 1);	/* every gate steps once per group */
	assert_int_equal(p.busy_gates, 3);
	assert_int_equal(p.chunk_max, 4);
	assert_int_equal(p.validate_during, 0);
	assert_int_equal(p.final_pass, 0);
	assert_int_equal(p.strict_states, 0);
	assert_int_equal(p.stash, 0);
	assert_int_equal(p.compute_threads, 1);
	s.micro_batches = 2;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_PIPELINE, &s, 3, 0, 2, &e), 0);
	assert_int_equal(p.K, 2);
	assert_int_equal(p.chunk_max, 14);
	s.micro_batches = 64;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_PIPELINE, &s, 3, 0, 2, &e), 0);
	assert_int_equal(p.micro, 27);
	assert_int_equal(p.chunk_max, 1);
	/* one gate: every core for it */
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_PIPELINE, &s, 1, 0, 2, &e), 0);
	assert_int_equal(p.compute_threads, 2);
	/* accumulation: flip-flop keeps one batch in flight; wheels ignores it */
	s.accumulate = 4;
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_FLIPFLOP, &s, 3, 0, 2, &e), 0);
	assert_int_equal(p.K, 1);
	assert_int_equal(p.micro, 1);
	assert_int_equal(p.accumulate, 4);
	assert_int_equal(p.chunk_max, 27);
	assert_int_equal(akk_schedule_plan(&p, AKK_MODE_WHEELS, &s, 3, 0, 2, &e), 0);
	assert_int_equal(p.accumulate, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flipflop_plan),
		cmocka_unit_test(wheels_plan),
		cmocka_unit_test(threads_asked_for_win),
		cmocka_unit_test(unknown_mode_refused),
		cmocka_unit_test(pipeline_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
