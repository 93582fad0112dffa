/* test_outputs.c - what eval --predictions and inspect say about a
 * checkpoint's outputs: class names where the checkpoint has them, the
 * probability predict gives (a sigmoid for sigmoid cross-entropy), and a
 * regression network's outputs called outputs, not classes.
 *
 * Small CSV tables written by the test (2 features; three named classes,
 * one of them with a comma in its name, or a regression target), each
 * trained for a few epochs with `akkctl train`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define N 300

static char g_dir[512], g_out[1 << 16], g_err[1 << 14];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)
#define assert_rc(call, want) do { int rc_ = (call); \
	if (rc_ != (want)) fail_msg("exit %d, want %d; stderr:\n%s", rc_, (want), g_err); } while (0)

/* The class names, sorted as the CSV reader numbers them (strcmp order),
 * as a CSV cell holds them. */
static const char *const g_cells[3] = { "alpha", "bravo", "\"delta, echo\"" };

static float g_x[N][2];

static int group_setup(void **state)
{
	uint32_t r = 11;

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	/* class k: a blob around a corner of its own */
	for (int i = 0; i < N; i++)
		for (int j = 0; j < 2; j++) {
			int k = i % 3;
			r = r * 1664525u + 1013904223u;
			g_x[i][j] = (float)((k == j ? 3 : 0) + (k == 2 ? -3 : 0) +
					    (double)(r >> 8) / (1 << 24) - 0.5);
		}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

/* The n-th line of text (0-based) into buf, without its newline. */
static const char *line_of(const char *text, long n, char *buf, size_t size)
{
	for (; n > 0 && text; n--)
		if ((text = strchr(text, '\n')))
			text++;
	if (!text || !*text)
		return NULL;
	snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
	return buf;
}

/* The table (x, y, kind) of the named classes at g_dir/name, rows from
 * first on (validation: a different half of the noise). */
static const char *write_table(const char *name, int first)
{
	const char *path = tu_path(g_dir, name);
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "x,y,kind\n");
	for (int i = first; i < N; i += 2)
		fprintf(f, "%.9g,%.9g,%s\n", g_x[i][0], g_x[i][1], g_cells[i % 3]);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* Train a classifier of the named classes with loss into g_dir/run. */
static const char *train_named(const char *run, const char *loss)
{
	const char *cfg = tu_path(g_dir, "named.yaml"), *dir = tu_path(g_dir, run);
	char text[1024];

	snprintf(text, sizeof(text),
		 "name: named\nseed: 3\ndata:\n  format: csv\n  csv: {header: true, label: kind}\n"
		 "  train: {file: %s}\n  validation: {file: %s}\n"
		 "network:\n  input: [2]\n  gates:\n    - layers: [{dense: 16}, relu, {dense: 3}]\n"
		 "  loss: %s\noptimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 10, batch_size: 16}\noutput: {dir: %s}\n",
		 write_table("train.csv", 0), write_table("val.csv", 1), loss, dir);
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	return dir;
}

/* eval --predictions of a checkpoint with class names writes the names,
 * label and predicted class, as predict writes them. */
static void predictions_name_the_classes(void **state)
{
	const char *run = train_named("softmax", "softmax_cross_entropy");
	const char *csv = tu_path(g_dir, "pred.csv");
	char line[256], want[64];
	char *text;
	long right = 0;

	(void)state;
	assert_rc(ak("eval", run, "--predictions", csv, NULL), 0);
	text = tu_slurp(csv, NULL);
	assert_non_null(text);
	tu_assert_prefix(text, "index,label,predicted,probability\n");
	for (int i = 1, row = 0; i < N; i += 2, row++) {
		const char *p = line_of(text, row + 1, line, sizeof(line));
		int k = i % 3, predicted = -1;

		assert_non_null(p);
		/* index, then the label's name */
		snprintf(want, sizeof(want), "%d,%s,", row, g_cells[k]);
		tu_assert_prefix(p, want);
		p += strlen(want);
		for (int c = 0; c < 3; c++)
			if (!strncmp(p, g_cells[c], strlen(g_cells[c])) &&
			    p[strlen(g_cells[c])] == ',')
				predicted = c;
		if (predicted < 0)
			fail_msg("row %d: '%s' names no class", row, line);
		right += predicted == k;
	}
	assert_null(line_of(text, N / 2 + 1, line, sizeof(line)));
	if (right < N / 2 * 9 / 10)
		fail_msg("eval predicts %ld of %d rows right", right, N / 2);
	free(text);
}

/* The probabilities of a predict row "index,c1,p1,c2,p2,c3,p3" into p,
 * a class cell possibly quoted with a comma inside. */
static void predict_row(const char *line, long index, float p[3])
{
	const char *q = line;

	assert_int_equal(strtol(q, (char **)&q, 10), index);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(*q++, ',');
		if (*q == '"') {
			assert_non_null(q = strchr(q + 1, '"'));
			q++;
		} else {
			q += strcspn(q, ",");
		}
		assert_int_equal(*q++, ',');
		p[k] = strtof(q, (char **)&q);
	}
	assert_int_equal(*q, '\0');
}

/* A network trained with sigmoid cross-entropy: eval's probability is
 * the predicted class's own sigmoid, the one predict prints, and
 * predict's three probabilities do not sum to 1 as a softmax's would. */
static void predictions_sigmoid_probability(void **state)
{
	const char *run = train_named("sigmoid", "sigmoid_cross_entropy");
	const char *csv = tu_path(g_dir, "sig.csv"), *feat = tu_path(g_dir, "feat.csv");
	char line[256], eline[256];
	char *pred, *ev;
	long off_one = 0;
	FILE *f = fopen(feat, "w");

	(void)state;
	assert_non_null(f);
	fprintf(f, "x,y\n");
	for (int i = 1; i < N; i += 2)
		fprintf(f, "%.9g,%.9g\n", g_x[i][0], g_x[i][1]);
	assert_int_equal(fclose(f), 0);
	assert_rc(ak("eval", run, "--predictions", csv, NULL), 0);
	assert_rc(ak("predict", run, feat, "--top", "3", NULL), 0);
	pred = strdup(g_out);
	ev = tu_slurp(csv, NULL);
	assert_non_null(pred);
	assert_non_null(ev);
	for (int row = 0; row < N / 2; row++) {
		const char *c;
		float p[3];

		assert_non_null(line_of(pred, row + 1, line, sizeof(line)));
		assert_non_null(line_of(ev, row + 1, eline, sizeof(eline)));
		predict_row(line, row, p);
		off_one += fabs((double)p[0] + p[1] + p[2] - 1) > 0.05;
		/* eval's last cell, with %.6f */
		assert_non_null(c = strrchr(eline, ','));
		if (fabs(strtod(c + 1, NULL) - p[0]) > 5e-7 + 1e-6)
			fail_msg("row %d: eval's probability %s, predict's %.9g", row, c + 1, p[0]);
	}
	if (off_one < N / 2 / 4)
		fail_msg("only %ld of %d rows of sigmoid probabilities do not sum to 1: a softmax?",
			 off_one, N / 2);
	free(pred);
	free(ev);
}

/* inspect names a regression network's outputs as outputs. */
static void inspect_says_outputs(void **state)
{
	const char *tab = tu_path(g_dir, "reg.csv"), *cfg = tu_path(g_dir, "reg.yaml");
	const char *dir = tu_path(g_dir, "reg");
	char text[1024];
	FILE *f = fopen(tab, "w");

	(void)state;
	assert_non_null(f);
	for (int i = 0; i < N; i++)
		fprintf(f, "%.9g,%.9g,%.9g\n", g_x[i][0], g_x[i][1], 2 * g_x[i][0] - g_x[i][1]);
	assert_int_equal(fclose(f), 0);
	snprintf(text, sizeof(text),
		 "name: reg\nseed: 3\ndata:\n  format: csv\n  task: regression\n"
		 "  train: {file: %s}\n  validation: {split: 0.2}\n"
		 "network:\n  input: [2]\n  gates:\n    - layers: [{dense: 1}]\n  loss: mse\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 1, batch_size: 16}\noutput: {dir: %s}\n",
		 tab, dir);
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	assert_rc(ak("inspect", tu_path(dir, "last.bin"), NULL), 0);
	tu_assert_line(g_out, "network      reg: 1 gate, 3 parameters, 1 regression output");
	tu_assert_not_contains(g_out, "classes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(predictions_name_the_classes),
		cmocka_unit_test(predictions_sigmoid_probability),
		cmocka_unit_test(inspect_says_outputs),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
