/* test_checkpoint_compat.c - checkpoints written by an older akkctl.
 *
 * tests/fixtures holds a checkpoint made by an akkctl from before graph
 * layers, with the config it was trained from and that akkctl's
 * predictions on the validation set; today's must read, evaluate and
 * resume it as that one did. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
#include "testutil.h"

static char g_dir[512];

/* A checkpoint written before graph layers existed still loads: the
 * fixture tests/fixtures/old-residual.bin was trained (2 epochs) from
 * tests/fixtures/old-residual.yaml by the akkctl of commit 2107117, the
 * last before the graph kind, on tu_write_set's sets (train: 96 samples,
 * seed 11; val: 48, seed 12), and old-residual-predictions.csv is that
 * akkctl's `eval --images val-images --labels val-labels --predictions`.
 * Today's reads it whole, names its residual block's flat tensors as
 * then, predicts the same classes with the same probabilities, and
 * resumes it for a third epoch alone, whose losses are those of the old
 * akkctl's run of 3 epochs (training 0.000161, validation 0.075384). */
static void old_checkpoint_still_loads(void **unused)
{
	static char out[1 << 14], err[1 << 14];
	const char *fix = "tests/fixtures/old-residual.bin";
	char *dir = g_dir, *want, *got, *row;
	size_t len;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	const char *pred;

	(void)unused;
	if (akk_checkpoint_read(&c, fix, &e))
		fail_msg("%s: %s", fix, e.msg);
	assert_int_equal(c.version, 2);
	assert_int_equal(c.ngates, 2);
	akk_checkpoint_release(&c);
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "inspect", fix, NULL), 0);
	tu_assert_contains(out, "g1.l4.residual.params                [152]");
	tu_assert_contains(out, "g1.l4.residual.state                 [8]");
	tu_write_set(dir, "val", 48, 8, 4, 12);
	pred = tu_path(dir, "pred.csv");
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "eval", fix, "--images",
			       tu_path(dir, "val-images"), "--labels", tu_path(dir, "val-labels"),
			       "--predictions", pred, NULL), 0);
	tu_assert_line(out, "samples 48  loss 0.4376  accuracy 100.00%");
	assert_non_null(want = tu_slurp("tests/fixtures/old-residual-predictions.csv", NULL));
	assert_non_null(got = tu_slurp(pred, NULL));
	/* the same rows; each probability within 1e-5 (other kernels and
	 * optimisation levels round the last bits otherwise) */
	for (char *a = want, *b = got; *a || *b;) {
		long ia, la, pa, ib, lb, pb;
		double qa, qb;
		if (!strncmp(a, "index,", 6)) {
			tu_assert_prefix(b, "index,label,predicted,probability\n");
		} else {
			assert_int_equal(sscanf(a, "%ld,%ld,%ld,%lf", &ia, &la, &pa, &qa), 4);
			assert_int_equal(sscanf(b, "%ld,%ld,%ld,%lf", &ib, &lb, &pb, &qb), 4);
			assert_true(ia == ib && la == lb && pa == pb);
			assert_true(fabs(qa - qb) <= 1e-5);
		}
		a = strchr(a, '\n');
		b = strchr(b, '\n');
		assert_true(a && b);
		a++;
		b++;
	}
	free(want);
	free(got);
	/* resumed for a third epoch */
	tu_write_set(dir, "train", 96, 8, 4, 11);
	assert_non_null(want = tu_slurp("tests/fixtures/old-residual.yaml", &len));
	assert_int_equal(tu_write_file(tu_path(dir, "old-residual.yaml"), want, len), 0);
	free(want);
	assert_int_equal(mkdir(tu_path(dir, "run"), 0777), 0);
	assert_non_null(want = tu_slurp(fix, &len));
	assert_int_equal(tu_write_file(tu_path(dir, "run/last.bin"), want, len), 0);
	free(want);
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "train",
			       tu_path(dir, "old-residual.yaml"), "--resume", tu_path(dir, "run"),
			       "--set", "schedule.epochs=3", NULL), 0);
	/* only epoch 3 ran (the run did start from the checkpoint), to the
	 * old losses: equal in the build and kernels of the fixture, within
	 * 5% elsewhere (an epoch of Adam carries the last bits' rounding
	 * into the losses: 0.075449 at -O1); new weights would give the
	 * first epoch's 0.62 and 1.06 */
	assert_non_null(got = tu_slurp(tu_path(dir, "run/metrics.csv"), NULL));
	tu_assert_prefix(got, "epoch,phase,");
	tu_assert_prefix(strchr(got, '\n') + 1, "3,train,96,");
	row = strchr(got, '\n') + 1 + strlen("3,train,96,");
	assert_true(fabs(strtod(row, NULL) - 0.000161) <= 0.05 * 0.000161 + 1e-6);
	assert_non_null(row = strstr(got, "\n3,validation,48,"));
	assert_true(fabs(strtod(row + strlen("\n3,validation,48,"), NULL) - 0.075384) <=
		    0.05 * 0.075384);
	tu_assert_not_contains(got, "\n1,");
	free(got);
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(old_checkpoint_still_loads),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
