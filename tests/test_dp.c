/* test_dp.c - data parallelism's pieces that need no MPI: lr_scaling's
 * learning rate (Goyal et al.: R lr, warmed up from lr) and its config
 * key. The runs themselves are in test_mpi.c (under mpirun). */
#include "testutil.h"
#include "config/spec.h"
#include "nn/optim.h"

#include <math.h>
#include <string.h>

static const char cfg[] =
	"data:\n"
	"  train: {images: a, labels: b}\n"
	"network:\n"
	"  input: [4]\n"
	"  gates:\n"
	"    - layers: [{dense: 3}]\n"
	"    - layers: [{dense: 2}]\n"
	"      optimizer: {lr: 0.5}\n"
	"optimizer: {type: sgd, lr: 0.1, schedule: {warmup_epochs: 2}}\n"
	"schedule: {parallel: data, lr_scaling: linear}\n";

/* With 4 replicas: 0.1 at the start, 0.25 half way, 0.4 after the warm-up;
 * every gate's optimizer, its own lr included. */
static void linear_warmup_from_base(void **unused)
{
	struct akk_spec s;
	struct akk_err e;

	(void)unused;
	if (akk_spec_parse(&s, cfg, sizeof(cfg) - 1, "dp.yaml", ".", NULL, 0, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(s.sched.lr_scaling, 1);
	akk_spec_scale_lr(&s, 4);
	assert_float_equal(akk_lr_at(&s.optim, 0, 10), 0.1, 1e-7);
	assert_float_equal(akk_lr_at(&s.optim, 1, 10), 0.25, 1e-7);
	assert_float_equal(akk_lr_at(&s.optim, 2, 10), 0.4, 1e-7);
	assert_float_equal(akk_lr_at(&s.optim, 7, 10), 0.4, 1e-7);
	assert_float_equal(akk_lr_at(&s.gates[1].optim, 2, 10), 2.0, 1e-6);
	akk_spec_release(&s);
}

/* Without lr_scaling (or one process) nothing changes: the warm-up starts
 * from 0 as before. */
static void none_keeps_lr(void **unused)
{
	struct akk_spec s;
	struct akk_err e;
	const char *sets[] = { "schedule.lr_scaling=none" };

	(void)unused;
	if (akk_spec_parse(&s, cfg, sizeof(cfg) - 1, "dp.yaml", ".", sets, 1, &e))
		fail_msg("%s", e.msg);
	akk_spec_scale_lr(&s, 4);
	assert_float_equal(akk_lr_at(&s.optim, 0, 10), 0, 1e-9);
	assert_float_equal(akk_lr_at(&s.optim, 2, 10), 0.1, 1e-7);
	akk_spec_release(&s);
}

static void unknown_scaling(void **unused)
{
	struct akk_spec s;
	struct akk_err e;
	const char *sets[] = { "schedule.lr_scaling=sqrt" };

	(void)unused;
	assert_int_equal(akk_spec_parse(&s, cfg, sizeof(cfg) - 1, "dp.yaml", ".",
					sets, 1, &e), -1);
	assert_string_equal(e.msg, "unknown lr scaling 'sqrt'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(linear_warmup_from_base),
		cmocka_unit_test(none_keeps_lr),
		cmocka_unit_test(unknown_scaling),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
