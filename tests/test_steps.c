/* test_steps.c - per-step metrics: output.log_every_steps: N writes
 * steps.csv (a row every N optimizer steps) beside an unchanged
 * metrics.csv, a resume cuts the rows past its checkpoint, akkctl plot
 * draws steps.svg, and the reader refuses damaged files at FILE:LINE:COL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/metrics.h"
#include "io/steps.h"
#include "testutil.h"

static char g_dir[512], g_cfg[700];
static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

/* 60 samples in batches of 4: 15 steps an epoch (flip-flop). */
static void write_cfg(void)
{
	char text[1024];
	int n = snprintf(text, sizeof(text),
		"name: steps\nseed: 3\n"
		"data:\n  train: {images: set-images, labels: set-labels}\n"
		"  validation: {images: set-images, labels: set-labels}\n"
		"network:\n  input: [1, 6, 6]\n  gates:\n"
		"    - layers: [flatten, {dense: 8}, relu]\n"
		"    - layers: [{dense: 3}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 2, batch_size: 4}\n"
		"output: {dir: run, log_every_steps: 4}\n");

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(g_cfg, sizeof(g_cfg), "%s/steps.yaml", g_dir);
	assert_int_equal(tu_write_file(g_cfg, text, (size_t)n), 0);
}

/* A row every 4 steps, with the epoch, the samples since the previous row
 * (of the epoch) and a finite loss; metrics.csv as before. */
static void rows_every_n_steps(void **state)
{
	struct akk_step_rows r;
	struct akk_err e = { 0 };
	char *text, *header;

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", NULL), 0);
	if (akk_steps_load(&r, tu_path(g_dir, "run/steps.csv"), &e))
		fail_msg("%s", e.msg);
	assert_int_equal(r.n, 7);	/* steps 4, 8, ..., 28 of 30 */
	for (size_t i = 0; i < r.n; i++) {
		const struct akk_step_row *w = &r.rows[i];
		long first = i ? r.rows[i - 1].step : 0;

		assert_int_equal(w->step, 4 * (long)(i + 1));
		assert_int_equal(w->epoch, w->step <= 15 ? 1 : 2);
		/* 4 batches of 4 since the last row; after the epoch's
		 * start, only the batches of the new epoch */
		assert_int_equal(w->samples, 4 * (w->epoch == 2 && first < 15 ? w->step - 15 : 4));
		assert_true(isfinite(w->loss) && w->loss > 0);
	}
	akk_steps_release(&r);
	/* the per-epoch file keeps its header and its rows */
	text = tu_slurp(tu_path(g_dir, "run/metrics.csv"), NULL);
	header = akk_metrics_header(0);
	assert_non_null(text);
	assert_non_null(header);
	assert_memory_equal(text, header, strlen(header));
	assert_int_equal(text[strlen(header)], '\n');
	free(text);
	free(header);
}

/* A run killed after epoch 1's checkpoint (its later checkpoints gone,
 * its steps.csv holding rows past it): the resume cuts the rows past step
 * 15, then writes its own, steps strictly increasing (the reader checks). */
static void resume_cuts_the_rows_past_the_checkpoint(void **state)
{
	static const char *const later[] = { "last.bin", "best.bin", "epoch-0002.bin" };
	struct akk_step_rows r;
	struct akk_err e = { 0 };

	(void)state;
	for (int i = 0; i < 3; i++) {
		char name[64];

		snprintf(name, sizeof(name), "run/%s", later[i]);
		unlink(tu_path(g_dir, name));
	}
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", tu_path(g_dir, "run/epoch-0001.bin"),
		     NULL), 0);
	if (akk_steps_load(&r, tu_path(g_dir, "run/steps.csv"), &e))
		fail_msg("%s", e.msg);
	assert_int_equal(r.n, 7);
	assert_int_equal(r.rows[3].step, 16);
	assert_int_equal(r.rows[3].epoch, 2);
	akk_steps_release(&r);
}

/* The resume's cut keeps what the reader reads: rows whose numbers are
 * spelled otherwise than akkctl writes them ("2.0", "0x3", "4e0") are rows
 * to both, so a cut at step 5 keeps all three and drops step 6; a file
 * with another header starts over. */
static void the_cut_keeps_what_the_reader_accepts(void **state)
{
	static const char text[] = AKK_STEPS_HEADER "\n2.0,1,4,0.5,0.1\n0x3,1,4,0.5,0.2\n"
		"4e0,1,4,0.5,0.3\n6,1,4,0.5,0.4\n";
	const char *path = tu_path(g_dir, "cut.csv");
	struct akk_step_rows r;
	struct akk_steps s;
	struct akk_err e = { 0 };
	char *back;

	(void)state;
	assert_int_equal(tu_write_file(path, text, sizeof(text) - 1), 0);
	assert_int_equal(akk_steps_open(&s, path, 1, 5, &e), 0);
	assert_int_equal(akk_steps_close(&s, &e), 0);
	if (akk_steps_load(&r, path, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.rows[2].step, 4);
	akk_steps_release(&r);

	assert_int_equal(tu_write_file(path, "step,loss\n1,2\n", 14), 0);
	assert_int_equal(akk_steps_open(&s, path, 1, 5, &e), 0);
	assert_int_equal(akk_steps_close(&s, &e), 0);
	back = tu_slurp(path, NULL);
	assert_non_null(back);
	assert_string_equal(back, AKK_STEPS_HEADER "\n");
	free(back);
}

/* plot draws steps.svg beside curves.svg: a polyline of the rows. */
static void plot_draws_the_steps(void **state)
{
	char *svg, *p;
	int points = 0;

	(void)state;
	assert_rc(ak("plot", tu_path(g_dir, "run"), NULL), 0);
	tu_assert_contains(g_err, "steps.svg'");
	svg = tu_slurp(tu_path(g_dir, "run/steps.svg"), NULL);
	assert_non_null(svg);
	p = strstr(svg, "class=\"step-loss\"");
	assert_non_null(p);
	p = strstr(p, "points=\"");
	assert_non_null(p);
	for (p += 8; *p && *p != '"'; p++)
		points += *p == ',';
	assert_int_equal(points, 7);
	free(svg);
}

/* Damaged files: refused with the file, the line and the column. */
static void damaged_files_are_refused(void **state)
{
	static const struct { const char *text, *msg; } cases[] = {
		{ "step,epoch,loss\n1,1,2\n", ":1:1: not a steps file: the header must be 'step,epoch,samples,loss,seconds'" },
		{ AKK_STEPS_HEADER "\n", ":2:1: no rows" },
		{ AKK_STEPS_HEADER "\n4,1,16,0.5,0.1", ":2:1: the last line has no newline: the file is cut short" },
		{ AKK_STEPS_HEADER "\n4,1,16,x,0.1\n", ":2:8: field 4 is not a number: 'x'" },
		{ AKK_STEPS_HEADER "\n4,1,16,0.5\n", ":2:11: 4 fields, expected 5 (step,epoch,samples,loss,seconds)" },
		{ AKK_STEPS_HEADER "\n4,1,16,0.5,0.1,9\n", ":2:16: more than 5 fields (step,epoch,samples,loss,seconds)" },
		{ AKK_STEPS_HEADER "\n4,1,16,0.5,0.1\n4,1,16,0.5,0.2\n", ":3:1: step 4 is not a step after 4" },
		{ AKK_STEPS_HEADER "\n4,0,16,0.5,0.1\n", ":2:1: epoch 0 is not an epoch (1 or more)" },
		{ AKK_STEPS_HEADER "\n4,1,inf,0.5,0.1\n", ":2:1: field 3 is not finite" },
	};
	const char *path = tu_path(g_dir, "bad.csv");

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct akk_step_rows r;
		struct akk_err e = { 0 };
		char got[1400], want[1400];

		assert_int_equal(tu_write_file(path, cases[i].text, strlen(cases[i].text)), 0);
		assert_int_equal(akk_steps_load(&r, path, &e), -1);
		akk_err_format(&e, got, sizeof(got));
		snprintf(want, sizeof(want), "%s%s", path, cases[i].msg);
		assert_string_equal(got, want);
		assert_null(r.rows);
	}
	/* a NUL byte inside a field: refused, not read as the digits before it
	 * (the resume's cut stops there too, and then found no rows) */
	static const char nul[] = AKK_STEPS_HEADER "\n8\0" "16,2,4,0.3,0.4\n";
	struct akk_step_rows r;
	struct akk_err e = { 0 };
	char got[1400], want[1400];

	assert_int_equal(tu_write_file(path, nul, sizeof(nul) - 1), 0);
	assert_int_equal(akk_steps_load(&r, path, &e), -1);
	akk_err_format(&e, got, sizeof(got));
	snprintf(want, sizeof(want), "%s:2:1: field 1 is not a number: '8'", path);
	assert_string_equal(got, want);
	/* and through plot: exit 2 naming the file */
	assert_int_equal(tu_write_file(tu_path(g_dir, "run/steps.csv"), "step\n", 5), 0);
	assert_rc(ak("plot", tu_path(g_dir, "run"), NULL), 2);
	tu_assert_contains(g_err, "run/steps.csv:1:1: not a steps file");
}

static int setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "set", 60, 6, 3, 1);
	write_cfg();
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
		cmocka_unit_test(rows_every_n_steps),
		cmocka_unit_test(resume_cuts_the_rows_past_the_checkpoint),
		cmocka_unit_test(the_cut_keeps_what_the_reader_accepts),
		cmocka_unit_test(plot_draws_the_steps),
		cmocka_unit_test(damaged_files_are_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
