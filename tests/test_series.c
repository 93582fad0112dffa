/* test_series.c - a CSV table read as a time series (data/series.h):
 * data.series: {window, horizon, stride} cuts the rows into windows whose
 * input is each row's features and targets and whose targets are the
 * rows after them; csv.ignore drops a column (a date); the validation
 * split holds out the end of the series and trains only on windows that
 * share no row with it; akkctl eval prints the naive last-value forecast
 * beside the network's figures, and predict forecasts from every window
 * of a file; the keys that contradict a series are refused at
 * FILE:LINE:COL. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "data/open.h"
#include "data/series.h"

static char g_dir[512];
static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* The series of the end-to-end test: a sine of period 16 with a slow
 * drift, one value an hour. */
#define NSINE 600
static double sine_at(int t)
{
	return 10.0 * sin(2 * M_PI * t / 16.0) + 0.01 * t;
}

/* A table of n rows "day N,a,v": a = 100 + row, v = row * row. */
static const char *write_table(const char *name, int n)
{
	const char *path = tu_path(g_dir, name);
	char *text = malloc((size_t)n * 48 + 32);
	size_t len;

	assert_non_null(text);
	len = (size_t)sprintf(text, "date,a,v\n");
	for (int r = 0; r < n; r++)
		len += (size_t)sprintf(text + len, "day %d,%d,%d\n", r, 100 + r, r * r);
	assert_int_equal(tu_write_file(path, text, len), 0);
	free(text);
	return path;
}

/* The config text for the table at path and the series keys. */
static void config(char *buf, size_t size, const char *path, const char *series,
		   const char *input, const char *extra)
{
	snprintf(buf, size,
		 "data:\n  format: csv\n  train: {file: %s}\n"
		 "  csv: {header: true, targets: [v], ignore: [date]}\n"
		 "  task: regression\n  series: %s\n%s"
		 "network:\n  input: %s\n  gates:\n    - layers: [flatten, {dense: 2}]\n"
		 "  loss: mse\noptimizer: {type: sgd, lr: 0.01}\n",
		 path, series, extra, input);
}

static void open_windows(struct akk_dataset *d, const char *text)
{
	struct akk_spec s;
	struct akk_err e = { 0 };

	if (akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e) ||
	    akk_data_open(d, &s.data, AKK_DATA_TRAIN, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	akk_spec_release(&s);
}

/* Window i of stride 2 reads rows 2i .. 2i+2 (a and v of each, the date
 * ignored) and predicts v of rows 2i+3 and 2i+4: 10 rows make
 * (10 - 5) / 2 + 1 = 3 windows. */
static void windows_hold_rows_then_the_targets_after(void **state)
{
	char text[2048];
	struct akk_dataset d;

	(void)state;
	config(text, sizeof(text), write_table("t.csv", 10),
	       "{window: 3, horizon: 2, stride: 2}", "[3, 2]", "");
	open_windows(&d, text);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.in, 6);
	assert_int_equal(d.targets, 2);
	assert_true(akk_series_is(&d));
	for (size_t i = 0; i < d.n; i++) {
		for (int t = 0; t < 3; t++) {
			int r = 2 * (int)i + t;
			assert_float_equal(akk_dataset_x(&d, i * 6 + 2 * t), 100 + r, 0);
			assert_float_equal(akk_dataset_x(&d, i * 6 + 2 * t + 1), r * r, 0);
		}
		for (int h = 0; h < 2; h++) {
			int r = 2 * (int)i + 3 + h;
			assert_float_equal(d.y[i * 2 + h], r * r, 0);
		}
	}
	/* the naive forecast: the window's last v, for both steps */
	float guess[2];
	akk_series_naive(&d, 1, guess);
	assert_float_equal(guess[0], 16, 0);
	assert_float_equal(guess[1], 16, 0);
	akk_dataset_release(&d);
}

/* The split of a series: its last windows held out, and the training
 * windows end before the first held-out one begins; for every stride. */
static void split_holds_out_the_end_with_no_shared_row(void **state)
{
	(void)state;
	for (int stride = 1; stride <= 4; stride++) {
		struct akk_dataset d = { .n = 40, .series_span = 7, .series_stride = stride,
					 .series_targets = 1 };
		uint32_t *held, *train;
		size_t nh, nt;
		struct akk_err e = { 0 };

		if (akk_series_split(&held, &nh, &train, &nt, &d, 0.25, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(nh, 10);
		for (size_t i = 0; i < nh; i++)
			assert_int_equal(held[i], 30 + i);
		/* window j covers rows [j S, j S + 7) */
		size_t first_row = (size_t)held[0] * (size_t)stride;
		assert_true(nt > 0);
		for (size_t j = 0; j < nt; j++) {
			assert_int_equal(train[j], j);
			assert_true((size_t)train[j] * (size_t)stride + 7 <= first_row);
		}
		/* and no window that could be kept is dropped */
		assert_true((size_t)nt * (size_t)stride + 7 > first_row);
		free(held);
		free(train);
	}
}

/* Refused: too few rows, and keys that contradict a series. */
static void contradictions_are_refused(void **state)
{
	static const struct {
		const char *series, *input, *extra, *msg;
	} cases[] = {
		{ "{window: 8, horizon: 3}", "[8, 2]", "", "4 rows make no window: a series window of 8 rows and its horizon of 3 need 11" },
		{ "{window: 3}", "[4, 2]", "", "t.yaml:8:10: a series window of 3 rows needs network.input [3, F] (F: the features and targets of a row)" },
		{ "{window: 3}", "[6]", "", "t.yaml:8:10: a series window of 3 rows needs network.input [3, F] (F: the features and targets of a row)" },
		{ "{window: 3}", "[3, 2]", "  validation: {folds: 3}\n", "t.yaml:7:3: 'folds' would train on the future of a series: use 'split', which holds out its end" },
		{ "{window: 0}", "[3, 2]", "", "t.yaml:6:20: 'window' must be at least 1, got 0" },
		{ "{horizon: 2}", "[3, 2]", "", "t.yaml:6:11: missing required key 'window' in data.series" },
	};
	const char *path = write_table("short.csv", 4);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[2048], got[1400];
		struct akk_spec s;
		struct akk_dataset d;
		struct akk_err e = { 0 };

		config(text, sizeof(text), path, cases[i].series, cases[i].input, cases[i].extra);
		if (!akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e)) {
			assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), -1);
			akk_spec_release(&s);
		}
		akk_err_format(&e, got, sizeof(got));
		if (!strstr(got, cases[i].msg))
			fail_msg("case %zu: got '%s', expected '%s'", i, got, cases[i].msg);
	}
}

/* A series with a format or a task it cannot take, and csv.ignore naming
 * the target. */
static void other_keys_are_refused(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "data:\n  format: npy\n  train: {features: f, labels: l}\n  task: regression\n"
		  "  series: {window: 3}\nnetwork: {input: [3, 1], loss: mse, gates: [{layers: [{dense: 1}]}]}\n"
		  "optimizer: {type: sgd, lr: 0.1}\n",
		  "t.yaml:5:3: 'series' reads a CSV table, but data format is 'npy'" },
		{ "data:\n  format: csv\n  train: {file: f}\n"
		  "  series: {window: 3}\nnetwork: {input: [3, 1], loss: mse, gates: [{layers: [{dense: 1}]}]}\n"
		  "optimizer: {type: sgd, lr: 0.1}\n",
		  "t.yaml:4:3: 'series' predicts values: set data.task: regression" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct akk_spec s;
		struct akk_err e = { 0 };
		char got[1400];

		assert_int_equal(akk_spec_parse(&s, cases[i].text, strlen(cases[i].text), "t.yaml",
						NULL, NULL, 0, &e), -1);
		akk_err_format(&e, got, sizeof(got));
		assert_string_equal(got, cases[i].msg);
	}
	/* ignore naming the target column */
	char text[2048], got[1400];
	struct akk_spec s;
	struct akk_dataset d;
	struct akk_err e = { 0 };
	const char *path = write_table("t.csv", 10);

	snprintf(text, sizeof(text),
		 "data:\n  format: csv\n  train: {file: %s}\n"
		 "  csv: {header: true, targets: [v], ignore: [date, v]}\n  task: regression\n"
		 "network: {input: [1], loss: mse, gates: [{layers: [{dense: 1}]}]}\n"
		 "optimizer: {type: sgd, lr: 0.1}\n", path);
	if (akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), -1);
	akk_err_format(&e, got, sizeof(got));
	if (!strstr(got, "t.csv:1:3: data.csv.ignore names column 2, a target"))
		fail_msg("got '%s'", got);
	akk_spec_release(&s);
}

/* predict on the series' file: every window of W rows, the last ending at
 * the last row (the forecast past the data), NSINE - W + 1 rows; those of
 * the held-out windows score as eval scored them. */
static void predict_windows(int W, int nwin, int held, double eval_loss)
{
	char *line;
	double sse = 0;
	int rows = 0;

	if (ak("predict", tu_path(g_dir, "sine-run"), tu_path(g_dir, "sine.csv"), NULL))
		fail_msg("predict: %s", g_err);
	tu_assert_prefix(g_out, "index,value1\n");
	line = strchr(g_out, '\n') + 1;
	for (; *line; line = strchr(line, '\n') + 1, rows++) {
		int i;
		double v;
		char a[32];

		assert_int_equal(sscanf(line, "%d,%lf", &i, &v), 2);
		assert_int_equal(i, rows);
		if (i >= nwin - held && i < nwin) {
			snprintf(a, sizeof(a), "%.6f", sine_at(i + W));
			sse += (v - (double)(float)atof(a)) * (v - (double)(float)atof(a));
		}
	}
	assert_int_equal(rows, NSINE - W + 1);
	assert_true(fabs(sse / held - eval_loss) <= 1e-4 + 1e-3 * eval_loss);
}

/* End to end: a drifting sine, one column and no feature but its own
 * past, trained by akkctl train; eval prints the network's figures and
 * the naive forecast's, whose loss the test computes from the series
 * itself on the held-out end (the last 20% of the windows), and the
 * network beats it. */
static void train_and_eval_against_the_naive_forecast(void **state)
{
	char *text = malloc(NSINE * 32 + 64), cfg[2048], line[256];
	size_t len = (size_t)sprintf(text, "t,value\n");
	int W = 8, nwin = NSINE - W - 1 + 1, held = (int)lround(0.2 * nwin);
	double want = 0, naive_loss, net_loss;
	const char *p;

	(void)state;
	assert_non_null(text);
	for (int t = 0; t < NSINE; t++)
		len += (size_t)sprintf(text + len, "%d,%.6f\n", t, sine_at(t));
	assert_int_equal(tu_write_file(tu_path(g_dir, "sine.csv"), text, len), 0);
	free(text);
	/* the expected naive loss (mse), from the values as the file holds them */
	for (int i = nwin - held; i < nwin; i++) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "%.6f", sine_at(i + W));
		snprintf(b, sizeof(b), "%.6f", sine_at(i + W - 1));
		double dv = (double)(float)atof(a) - (double)(float)atof(b);
		want += dv * dv;
	}
	want /= held;
	snprintf(cfg, sizeof(cfg),
		 "name: sine\nseed: 5\ndata:\n  format: csv\n  train: {file: sine.csv}\n"
		 "  csv: {header: true, targets: [value], ignore: [t]}\n  task: regression\n"
		 "  series: {window: %d}\n  validation: {split: 0.2}\n"
		 "network:\n  input: [%d, 1]\n  gates:\n"
		 "    - layers: [flatten, {dense: 32}, tanh, {dense: 1}]\n  loss: mse\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 30, batch_size: 16}\n"
		 "output: {dir: sine-run}\n", W, W);
	assert_int_equal(tu_write_file(tu_path(g_dir, "sine.yaml"), cfg, strlen(cfg)), 0);
	if (ak("train", tu_path(g_dir, "sine.yaml"), "--quiet", NULL))
		fail_msg("train: %s", g_err);
	if (ak("eval", tu_path(g_dir, "sine-run"), NULL))
		fail_msg("eval: %s", g_err);
	snprintf(line, sizeof(line), "samples %d ", held);
	tu_assert_contains(g_out, line);
	assert_non_null(p = strstr(g_out, "naive    loss "));
	assert_int_equal(sscanf(p, "naive    loss %lf", &naive_loss), 1);
	assert_true(fabs(naive_loss - want) <= 1e-3 * want);
	assert_non_null(p = strstr(g_out, "loss "));
	assert_int_equal(sscanf(p, "loss %lf", &net_loss), 1);
	if (!(net_loss < 0.5 * naive_loss))
		fail_msg("the network's loss %g does not beat the naive %g:\n%s", net_loss,
			 naive_loss, g_out);
	predict_windows(W, nwin, held, net_loss);
}

static int setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(windows_hold_rows_then_the_targets_after),
		cmocka_unit_test(split_holds_out_the_end_with_no_shared_row),
		cmocka_unit_test(contradictions_are_refused),
		cmocka_unit_test(other_keys_are_refused),
		cmocka_unit_test(train_and_eval_against_the_naive_forecast),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
