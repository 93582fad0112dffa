/* test_lrfind.c - akkctl lr-find: its CSV and suggestion, the stop when the
 * loss explodes, bad flags (exit 2 and the exact message), no run directory
 * unless --out, reproducibility, and that its first steps train exactly as
 * `akkctl train` does at the same rate. Small synthetic IDX files in a
 * temp directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "../cli/lr_suggest.c"

static char g_dir[512], g_cfg[700];
static char g_out[1 << 17], g_err[1 << 16];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

static void write_cfg(char *path, const char *name, const char *train)
{
	char text[1024];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"seed: 3\n"
		"data:\n"
		"  train: {images: %s-images, labels: %s-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 16}, relu]\n"
		"    - layers: [{dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.1}\n"
		"schedule: {mode: wheels, epochs: 3, batch_size: 20}\n"
		"output: {dir: out-%s}\n", name, train, train, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, 700, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

/* The CSV rows of out (after the header), as lr, loss, smoothed. */
static int rows(const char *out, double (*r)[3], int max)
{
	const char *p = strchr(out, '\n');
	int n = 0;

	assert_non_null(p);
	assert_memory_equal(out, "lr,loss,smoothed_loss\n", 22);
	for (p++; *p && n < max; n++) {
		assert_int_equal(sscanf(p, "%lf,%lf,%lf", &r[n][0], &r[n][1], &r[n][2]), 3);
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	return n;
}

static void prints_csv_and_a_suggestion(void **state)
{
	static double r[64][3];
	char csv[800], *first;

	(void)state;
	assert_rc(ak("lr-find", g_cfg, "--min", "1e-4", "--max", "10", "--steps", "30", NULL), 0);
	assert_int_equal(rows(g_out, r, 64), 30);
	assert_true(fabs(r[0][0] - 1e-4) < 1e-10);
	assert_true(fabs(r[29][0] - 10) < 1e-4);
	for (int i = 1; i < 30; i++) {
		/* a geometric sweep: the same ratio at every step */
		assert_true(fabs(r[i][0] / r[i - 1][0] - pow(1e5, 1.0 / 29)) < 1e-4);
		assert_true(isfinite(r[i][1]) && isfinite(r[i][2]));
	}
	assert_true(r[0][1] == r[0][2]);	/* the first smoothed loss is the loss */
	tu_assert_prefix(g_err, "lr-find: lrf, 30 steps of batch 20, lr from 0.0001 to 10\n");
	tu_assert_contains(g_err, "\nsuggested lr: ");
	tu_assert_contains(g_err, " (the smaller of the steepest descent before the smoothed minimum, at lr ");
	/* nothing written, unless --out */
	assert_false(tu_exists(tu_path(g_dir, "out-lrf")));
	first = strdup(g_out);
	snprintf(csv, sizeof(csv), "%s/sweep.csv", g_dir);
	assert_rc(ak("lr-find", g_cfg, "--min", "1e-4", "--max", "10", "--steps", "30",
		     "--out", csv, NULL), 0);
	assert_false(tu_exists(tu_path(g_dir, "out-lrf")));
	/* reproducible, and --out holds what stdout shows */
	assert_string_equal(g_out, first);
	{
		char *f = tu_slurp(csv, NULL);
		assert_non_null(f);
		assert_string_equal(f, first);
		free(f);
	}
	free(first);
	/* more steps than the set has batches: whole epochs, cut at N */
	assert_rc(ak("lr-find", g_cfg, "--min", "1e-4", "--max", "1e-2", "--steps", "45", NULL), 0);
	assert_int_equal(rows(g_out, r, 64), 45);
	assert_true(fabs(r[44][0] - 1e-2) < 1e-7);
}

static void stops_when_the_loss_explodes(void **state)
{
	static double r[200][3];
	int n;
	double best;
	char want[256];

	(void)state;
	assert_rc(ak("lr-find", g_cfg, "--min", "1e-3", "--max", "1e9", "--steps", "200",
		     "--set", "schedule.batch_size=2", NULL), 0);
	n = rows(g_out, r, 200);
	assert_true(n > 10 && n < 200);
	snprintf(want, sizeof(want), "lr-find: stopped after step %d of 200: ", n);
	tu_assert_contains(g_err, want);
	best = r[0][2];
	for (int i = 0; i < n - 1; i++) {
		if (r[i][2] < best)
			best = r[i][2];
		assert_true(r[i][2] <= 4 * best);	/* no earlier row exploded */
	}
	assert_true(!isfinite(r[n - 1][2]) || r[n - 1][2] > 4 * best);
}

/* Two steps from --min a: the first batch trains at a, so the two losses
 * are those of `akkctl train` at constant lr a on the same two batches
 * (the same flip-flop path, the same shuffle). */
static void first_steps_train_as_train(void **state)
{
	static double r[4][3];
	char cfg[700], *p;
	double loss;

	(void)state;
	assert_rc(ak("lr-find", g_cfg, "--min", "0.05", "--max", "3", "--steps", "2", NULL), 0);
	assert_int_equal(rows(g_out, r, 4), 2);
	tu_assert_line(g_err, "no suggested lr after 2 steps: too few steps (the first tenth and the last 5 are left out)");
	write_cfg(cfg, "two", "two");
	assert_rc(ak("train", cfg, "--mode", "flip-flop", "--epochs", "1", "--set",
		     "optimizer.lr=0.05", NULL), 0);
	p = strstr(g_err, "epoch 1/1: train loss ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "epoch 1/1: train loss %lf", &loss), 1);
	if (fabs(loss - (r[0][1] + r[1][1]) / 2) > 1e-4)
		fail_msg("train: %g, lr-find's two steps: %g and %g", loss, r[0][1], r[1][1]);
}

/* A sweep of n rates from 1e-7 to 10 (lr-find's defaults). */
static void sweep_rates(double *lr, int n)
{
	for (int i = 0; i < n; i++)
		lr[i] = 1e-7 * pow(1e8, (double)i / (n - 1));
}

/* The shape lr-find shows on MNIST with Adam: flat, a descent to a
 * minimum, then a divergence whose spike the smoothing spreads over the
 * later points, which fall back fastest of all. The suggestion comes from
 * the descent (at most a tenth of the minimum's rate), never from the
 * fall after the spike. */
static void suggestion_comes_from_the_descent(void **state)
{
	enum { N = 95 };
	double lr[N], sm[N];
	struct lr_suggestion s;

	(void)state;
	sweep_rates(lr, N);
	for (int i = 0; i < N; i++) {
		if (i < 50)
			sm[i] = 2.30;
		else if (i <= 72)	/* steepest near 60 */
			sm[i] = 2.30 - 1.3 / (1 + exp(-(i - 60) / 3.0));
		else if (i <= 76)
			sm[i] = sm[72] + (i - 72) * 1.4;	/* the spike */
		else
			sm[i] = sm[76] - (i - 76) * 0.2;	/* falling back */
	}
	assert_int_equal(lr_suggest(lr, sm, sm, N, &s), 1);
	assert_true(s.minimum == lr[72]);
	assert_true(s.steep >= lr[57] && s.steep <= lr[61]);
	assert_true(s.lr == fmin(s.steep, s.minimum / 10));
	assert_true(s.lr < lr[72]);
	assert_null(s.why);
}

/* A loss that wanders from batch to batch before the rate moves anything
 * (diabetes' mean squared error, far from its targets) has dips steeper
 * than the real descent: the descent starts where the loss leaves its
 * start for good, so a dip before is never the suggestion. */
static void noise_before_the_descent_is_not_a_descent(void **state)
{
	enum { N = 100 };
	double lr[N], sm[N];
	struct lr_suggestion s;

	(void)state;
	sweep_rates(lr, N);
	for (int i = 0; i < N; i++) {
		if (i < 60)
			sm[i] = 29000 + 600 * sin(i * 1.7);	/* the wandering */
		else if (i <= 85)	/* the descent, steepest near 72 */
			sm[i] = 29000 - 20000 / (1 + exp(-(i - 72) / 3.0));
		else
			sm[i] = sm[85] + (i - 85) * 3000;	/* the divergence */
	}
	sm[14] = 25000;	/* one dip, steeper than the descent */
	assert_int_equal(lr_suggest(lr, sm, sm, N, &s), 1);
	assert_true(s.minimum == lr[85]);
	assert_true(s.steep >= lr[66] && s.steep <= lr[76]);
	assert_true(s.lr == fmin(s.steep, s.minimum / 10));
}

/* When the sweep shows no working range it says so, and why. */
static void no_suggestion_without_a_range(void **state)
{
	enum { N = 100 };
	double lr[N], sm[N];
	struct lr_suggestion s;

	(void)state;
	sweep_rates(lr, N);
	for (int i = 0; i < N; i++)	/* a loss that barely moves */
		sm[i] = 2.30 - 0.001 * i / N;
	assert_int_equal(lr_suggest(lr, sm, sm, N, &s), 0);
	assert_string_equal(s.why, "the smoothed loss falls by less than 2% before its minimum: try more --steps, or another --min and --max");
	/* still falling at --max: the rates that train best lie past the
	 * sweep (a regression far from its targets), so no suggestion */
	for (int i = 0; i < N; i++)
		sm[i] = 2.30 - 2.0 * i / N;
	assert_int_equal(lr_suggest(lr, sm, sm, N, &s), 0);
	assert_string_equal(s.why, "the loss is still falling at the end of the sweep (its minimum is past --max): try a larger --max");
	/* falling to the last kept point, then rising in the last 5 (a run
	 * stopped by its explosion): a minimum, so a suggestion */
	for (int i = N - 5; i < N; i++)
		sm[i] = sm[N - 6] + 0.5 * (i - N + 6);
	assert_int_equal(lr_suggest(lr, sm, sm, N, &s), 1);
	assert_true(s.minimum == lr[N - 6] && s.lr <= lr[N - 6] / 10);
	/* the smoothing still lagging down to a raw loss at its floor (an
	 * easy set learnt whole): a minimum all the same */
	{
		double raw[N];

		for (int i = 0; i < N; i++) {
			raw[i] = i < 70 ? 2.30 - 2.0 * i / 70 : 0.0;
			sm[i] = 2.30 - 2.0 * i / N;
		}
		assert_int_equal(lr_suggest(lr, raw, sm, N, &s), 1);
		assert_true(s.minimum == lr[N - 6]);
	}
	assert_int_equal(lr_suggest(lr, sm, sm, 6, &s), 0);
	assert_string_equal(s.why, "too few steps (the first tenth and the last 5 are left out)");
}

/* A descent that runs into the divergence (the U-Net's sweep: steepest
 * at 0.00705, the minimum at 0.0085, whose tenth trained 1.7 points of
 * R^2 below the config's own rate): the two rules disagree tenfold and
 * neither is safe, so no suggestion, with both rates kept to print. */
static void descent_into_the_divergence_suggests_nothing(void **state)
{
	enum { N = 100 };
	double lr[N], sm[N];
	struct lr_suggestion s;

	(void)state;
	sweep_rates(lr, N);
	for (int i = 0; i < N; i++) {
		if (i < 60)
			sm[i] = 0.20;
		else if (i <= 80)	/* falling faster and faster */
			sm[i] = 0.20 - 0.15 * pow((i - 60) / 20.0, 3);
		else
			sm[i] = sm[80] + (i - 80) * 0.05;	/* the divergence */
	}
	assert_int_equal(lr_suggest(lr, sm, sm, N, &s), 0);
	assert_string_equal(s.why, "the loss falls steepest right before its minimum, where it turns: "
			    "no rate stands out (keep the config's rate, or one below the steepest)");
	assert_true(s.minimum == lr[80]);
	assert_true(s.steep > s.minimum / LR_SUGGEST_NEAR && s.steep < s.minimum);
}

/* The last validation accuracy of the run in dir (metrics.csv). */
static double final_accuracy(const char *dir)
{
	char path[800], *text, *p, *last = NULL;
	double acc = -1;

	snprintf(path, sizeof(path), "%s/metrics.csv", dir);
	text = tu_slurp(path, NULL);
	assert_non_null(text);
	for (p = text; (p = strstr(p, ",validation,")); p++)
		last = p;
	assert_non_null(last);
	assert_int_equal(sscanf(last, ",validation,%*[^,],%*[^,],%lf", &acc), 1);
	free(text);
	return acc;
}

/* lr-find's suggestion trains at least as well over 2 epochs as the
 * config's own rate, less 1 point, for three optimizers; both in
 * flip-flop, so that the comparison is reproducible (wheels' staleness
 * depends on the threads' timing). */
static void suggestion_trains_as_well(void **state)
{
	static const char *const opt[3] = {
		"optimizer={type: momentum, lr: 0.1}",
		"optimizer={type: adam, lr: 0.001}",
		"optimizer={type: sgd, lr: 0.05}",
	};

	(void)state;
	for (int k = 0; k < 3; k++) {
		char own[700], sug[700], set[64];
		const char *p;
		double lr, a, b;

		assert_rc(ak("lr-find", g_cfg, "--set", opt[k], NULL), 0);
		p = strstr(g_err, "suggested lr: ");
		if (!p || sscanf(p, "suggested lr: %lf", &lr) != 1)
			fail_msg("%s: no suggestion:\n%s", opt[k], g_err);
		snprintf(own, sizeof(own), "%s/own-%d", g_dir, k);
		snprintf(sug, sizeof(sug), "%s/sug-%d", g_dir, k);
		snprintf(set, sizeof(set), "optimizer.lr=%.9g", lr);
		assert_rc(ak("train", g_cfg, "--quiet", "--mode", "flip-flop", "--epochs", "2",
			     "--set", opt[k], "--set", "data.validation={split: 0.2}", "--out", own,
			     NULL), 0);
		assert_rc(ak("train", g_cfg, "--quiet", "--mode", "flip-flop", "--epochs", "2",
			     "--set", opt[k], "--set", "data.validation={split: 0.2}", "--set", set,
			     "--out", sug, NULL), 0);
		a = final_accuracy(own);
		b = final_accuracy(sug);
		if (b < a - 0.01)
			fail_msg("%s: the suggested lr %g ends at %.4f, the own rate at %.4f", opt[k], lr, b, a);
	}
}

/* The mean R^2 of a cross-validated regression run in dir (folds.csv). */
static double mean_r2(const char *dir)
{
	char path[800], *text, *p;
	double r2 = -1e9;

	snprintf(path, sizeof(path), "%s/folds.csv", dir);
	text = tu_slurp(path, NULL);
	assert_non_null(text);
	p = strstr(text, "\nmean,");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "\nmean,,,%*[^,],%lf", &r2), 1);
	free(text);
	return r2;
}

/* A shipped regression config: configs/diabetes.yaml, whose mean squared
 * error starts far from its targets (152 on average). Over the default
 * range its loss is still falling at --max 10: lr-find says it cannot
 * suggest (it suggested 7.7e-07 once, a rate that trains nothing); over a
 * range reaching past its minimum, the suggestion trains as well over 2
 * epochs as the config's own lr 2, less 1 point of R^2. */
static void regression_config_suggests_honestly(void **state)
{
	static const char *cfg = "configs/diabetes.yaml";
	char own[700], sug[700], set[64];
	const char *p;
	double lr, a, b;

	(void)state;
	if (!tu_exists("datasets/sklearn/diabetes_target.csv.gz"))
		skip();
	assert_rc(ak("lr-find", cfg, NULL), 0);
	tu_assert_line(g_err, "no suggested lr after 100 steps: the loss is still falling at the end of the sweep (its minimum is past --max): try a larger --max");
	assert_rc(ak("lr-find", cfg, "--max", "1000", NULL), 0);
	p = strstr(g_err, "suggested lr: ");
	if (!p || sscanf(p, "suggested lr: %lf", &lr) != 1)
		fail_msg("no suggestion up to --max 1000:\n%s", g_err);
	snprintf(own, sizeof(own), "%s/diabetes-own", g_dir);
	snprintf(sug, sizeof(sug), "%s/diabetes-sug", g_dir);
	snprintf(set, sizeof(set), "optimizer.lr=%.9g", lr);
	assert_rc(ak("train", cfg, "--quiet", "--epochs", "2", "--out", own, NULL), 0);
	assert_rc(ak("train", cfg, "--quiet", "--epochs", "2", "--set", set, "--out", sug, NULL), 0);
	a = mean_r2(own);
	b = mean_r2(sug);
	if (b < a - 0.01)
		fail_msg("the suggested lr %g ends at R^2 %.4f, the own rate at %.4f", lr, b, a);
}

static void bad_flags_exit_2(void **state)
{
	static const struct {
		const char *args[6];
		const char *line;
	} cases[] = {
		{ { "--steps", "1" }, "akkctl: option '--steps' needs a whole number from 2 to 1000000, got '1'" },
		{ { "--min", "0" }, "akkctl: option '--min' needs a learning rate greater than 0, got '0'" },
		{ { "--max", "x" }, "akkctl: option '--max' needs a learning rate greater than 0, got 'x'" },
		{ { "--min", "1", "--max", "0.5" }, "akkctl: --max 0.5 must be greater than --min 1" },
		{ { "--bogus" }, "akkctl: unknown option '--bogus'" },
		{ { "--min", "1e-40", "--max", "1" }, "akkctl: the range --min 1e-40 to --max 1 over 100 steps does not fit a float schedule" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *const *a = cases[i].args;
		assert_rc(ak("lr-find", g_cfg, a[0], a[1], a[2], a[3], NULL), 2);
		tu_assert_prefix(g_err, cases[i].line);
		assert_string_equal(g_out, "");
	}
	assert_rc(ak("lr-find", NULL), 2);
	tu_assert_prefix(g_err, "akkctl: lr-find needs a CONFIG\nusage: akkctl lr-find CONFIG");
	assert_rc(ak("lr-find", g_cfg, "--set", "optimizer.lr=-1", NULL), 2);
	tu_assert_line(g_err, "akkctl: --set optimizer.lr=-1: 'lr' must be greater than 0, got -1");
	{
		char bad[700], want[900];
		snprintf(bad, sizeof(bad), "%s/bad.yaml", g_dir);
		assert_int_equal(tu_write_file(bad, "data: 3\n", 8), 0);
		assert_rc(ak("lr-find", bad, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s:1:1: missing required key 'optimizer'", bad);
		tu_assert_line(g_err, want);
	}
	assert_rc(ak("lr-find", "--help", NULL), 0);
	tu_assert_prefix(g_out, "usage: akkctl lr-find CONFIG [--min LR] [--max LR] [--steps N]");
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();
	struct akk_dataset t;

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_dataset(&t, 600, 8, 4, 1);
	tu_write_idx(tu_path(g_dir, "train-images"), &t, 1);
	tu_write_idx(tu_path(g_dir, "train-labels"), &t, 0);
	/* the first 40 samples: what lr-find's two steps of 20 cut the set to */
	t.n = 40;
	tu_write_idx(tu_path(g_dir, "two-images"), &t, 1);
	tu_write_idx(tu_path(g_dir, "two-labels"), &t, 0);
	akk_dataset_release(&t);
	write_cfg(g_cfg, "lrf", "train");
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
		cmocka_unit_test(prints_csv_and_a_suggestion),
		cmocka_unit_test(stops_when_the_loss_explodes),
		cmocka_unit_test(first_steps_train_as_train),
		cmocka_unit_test(bad_flags_exit_2),
		cmocka_unit_test(suggestion_comes_from_the_descent),
		cmocka_unit_test(no_suggestion_without_a_range),
		cmocka_unit_test(descent_into_the_divergence_suggests_nothing),
		cmocka_unit_test(suggestion_trains_as_well),
		cmocka_unit_test(noise_before_the_descent_is_not_a_descent),
		cmocka_unit_test(regression_config_suggests_honestly),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
