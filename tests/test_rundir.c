/* test_rundir.c - train's run directory and terminal: one run per
 * directory (refusal, --force), resume in the run's own directory, a run
 * directory that stays consistent after a crash (metrics cut back to the
 * checkpoint, stray temporary files, checkpoints of another network), the
 * progress line's width, the closing summary, long paths and the per-gate
 * lr columns.
 *
 * The group setup writes small synthetic IDX files (tests/testutil.c) and
 * configs into one temp directory; every run writes into a subdirectory
 * of it. The progress line's formatting is tested directly (cli/progress.c
 * is compiled in) and end to end under a pseudo-terminal. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "testutil.h"
#include "../cli/progress.c"

#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

static char g_dir[512];
static char g_cfg[600];		/* 64-16-4, flip-flop, 600 samples */
static char g_wide[600];	/* 64-24-4: another network */
static char g_pergate[600];	/* gate 2 with its own lr */
static char g_long[600];	/* 100000 epochs: only a signal ends it */
static char g_out[1 << 16], g_err[1 << 16];

/* ---- helpers -------------------------------------------------------------- */

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

static const char *subdir(const char *name)
{
	const char *p = tu_path(g_dir, name);

	assert_int_equal(mkdir(p, 0777), 0);
	return p;
}

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* The metrics file holds the plain header, then epochs 1..n, each one
 * train and one validation row, nothing else. */
static void check_rows(const char *path, int n)
{
	char *s = tu_slurp(path, NULL), *line, *save = NULL;
	int rows = 0;

	assert_non_null(s);
	line = strtok_r(s, "\n", &save);
	assert_non_null(line);
	assert_string_equal(line, HEADER);
	while ((line = strtok_r(NULL, "\n", &save))) {
		int epoch;
		char phase[32];
		assert_int_equal(sscanf(line, "%d,%31[^,],", &epoch, phase), 2);
		if (epoch != rows / 2 + 1 || strcmp(phase, rows % 2 ? "validation" : "train")) {
			print_error("row %d of %s: '%s', expected epoch %d %s\n", rows + 1, path,
				    line, rows / 2 + 1, rows % 2 ? "validation" : "train");
			fail();
		}
		rows++;
	}
	assert_int_equal(rows, 2 * n);
	free(s);
}

static void copy_file(const char *from, const char *to)
{
	size_t n;
	char *b = tu_slurp(from, &n);

	assert_non_null(b);
	assert_int_equal(tu_write_file(to, b, n), 0);
	free(b);
}

static void write_cfg(char *path, const char *file, int hidden, const char *mode,
		      int epochs, const char *gate2)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: synth\n"
		"seed: 7\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"  validation: {images: val-images, labels: val-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: %d}, relu]\n"
		"    - layers: [{dense: 4}]%s\n"
		"  loss: softmax_cross_entropy\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule:\n"
		"  mode: %s\n"
		"  epochs: %d\n"
		"  batch_size: 32\n"
		"output: {dir: out-%s, checkpoint_every: 1, keep: 5}\n",
		hidden, gate2, mode, epochs, file);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, 600, "%s/%s", g_dir, file);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();
	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "train", 600, 8, 4, 1);
	tu_write_set(g_dir, "val", 200, 8, 4, 2);
	write_cfg(g_cfg, "synth.yaml", 16, "flip-flop", 2, "");
	write_cfg(g_wide, "wide.yaml", 24, "flip-flop", 2, "");
	write_cfg(g_pergate, "pergate.yaml", 16, "flip-flop", 2,
		  "\n      optimizer: {lr: 0.01}");
	write_cfg(g_long, "long.yaml", 16, "flip-flop", 100000, "");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- 1. one run per directory ---------------------------------------------- */

static void new_run_refuses_a_used_directory(void **state)
{
	const char *d = subdir("used");
	char want[2048], *before, *after;
	size_t n1, n2;

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	before = tu_slurp(tu_path(d, "metrics.csv"), &n1);
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 2);
	snprintf(want, sizeof(want),
		 "akkctl: '%s' already holds a run ('best.bin', 'epoch-0001.bin', 'last.bin', "
		 "'metrics.csv'): --resume %s continues it, --force starts over\n", d, d);
	assert_string_equal(g_err, want);
	after = tu_slurp(tu_path(d, "metrics.csv"), &n2);
	assert_true(n1 == n2 && !memcmp(before, after, n1));
	free(before);
	free(after);
	/* a metrics file alone is a run too; other files are not */
	d = subdir("used-metrics");
	assert_int_equal(tu_write_file(tu_path(d, "metrics.csv"), HEADER "\n", sizeof(HEADER)), 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 2);
	tu_assert_contains(g_err, "already holds a run ('metrics.csv')");
	d = subdir("used-other");
	assert_int_equal(tu_write_file(tu_path(d, "notes.txt"), "x", 1), 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	check_rows(tu_path(d, "metrics.csv"), 1);
}

static void force_starts_over(void **state)
{
	const char *d = subdir("force");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "2", "--out", d, NULL), 0);
	assert_int_equal(tu_write_file(tu_path(d, "notes.txt"), "x", 1), 0);
	copy_file(tu_path(d, "last.bin"), tu_path(d, "last.bin.tmp.4242"));
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, "--force", NULL), 0);
	assert_string_equal(g_err, "");
	check_rows(tu_path(d, "metrics.csv"), 1);
	assert_true(tu_exists(tu_path(d, "epoch-0001.bin")));
	assert_false(tu_exists(tu_path(d, "epoch-0002.bin")));
	assert_false(tu_exists(tu_path(d, "last.bin.tmp.4242")));
	assert_true(tu_exists(tu_path(d, "notes.txt")));	/* only the run's files go */
	{
		struct akk_checkpoint c;
		struct akk_err e = { 0 };
		assert_int_equal(akk_checkpoint_read(&c, tu_path(d, "last.bin"), &e), 0);
		assert_int_equal(c.pos.epoch, 1);
		akk_checkpoint_release(&c);
	}
	/* --force cannot remove the run --resume continues */
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "2", "--resume", d, "--force", NULL), 2);
	tu_assert_contains(g_err, "--force");
}

/* train's first line says which OpenBLAS kernels run (tensor/kernels.h);
 * the text after it. */
static const char *after_kernels_line(const char *err)
{
	tu_assert_prefix(err, "matrix products: OpenBLAS ");
	return strchr(err, '\n') + 1;
}

static void resume_stays_in_its_directory(void **state)
{
	const char *d = subdir("own");
	char want[2048];

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	/* no --out: the checkpoint's directory, not output.dir */
	assert_rc(ak("train", g_cfg, "--resume", tu_path(d, "epoch-0001.bin"), "--epochs", "2", NULL), 0);
	assert_false(tu_exists(tu_path(g_dir, "out-synth.yaml")));
	check_rows(tu_path(d, "metrics.csv"), 2);
	snprintf(want, sizeof(want), "resuming from '%s/epoch-0001.bin' at epoch 2, batch 0 (step 19)\n", d);
	tu_assert_prefix(after_kernels_line(g_err), want);
	/* --out elsewhere: a new directory gets the rest */
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "3", "--out",
		     tu_path(g_dir, "own-branch"), NULL), 0);
	assert_true(tu_exists(tu_path(tu_path(g_dir, "own-branch"), "last.bin")));
	/* no rewinding in place past a newer checkpoint (its rows would go) */
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", tu_path(d, "epoch-0001.bin"), "--epochs",
		     "3", NULL), 2);
	snprintf(want, sizeof(want), "akkctl: '%s' holds a newer checkpoint of this run than "
		 "'%s/epoch-0001.bin' ('%s/last.bin', step 38): --resume %s continues from it, "
		 "--out NEWDIR continues '%s/epoch-0001.bin' elsewhere\n", d, d, d, d, d);
	assert_string_equal(g_err, want);
	check_rows(tu_path(d, "metrics.csv"), 2);
	/* but not one that holds another run */
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "3", "--out",
		     tu_path(g_dir, "own-branch"), NULL), 2);
	tu_assert_contains(g_err, "already holds a run");
}

/* ---- 2. crash consistency ---------------------------------------------------- */

/* Killed while writing epoch 2's checkpoint: epoch 2's rows are in the
 * metrics file, its checkpoint only as a complete temporary file. */
static void crash_during_checkpoint_keeps_one_row_per_epoch(void **state)
{
	const char *d = subdir("crash");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "2", "--out", d, NULL), 0);
	assert_int_equal(rename(tu_path(d, "epoch-0002.bin"), tu_path(d, "epoch-0002.bin.tmp.4242")), 0);
	assert_int_equal(unlink(tu_path(d, "last.bin")), 0);
	copy_file(tu_path(d, "metrics.csv"), tu_path(d, "metrics.csv.tmp.4243"));	/* a cut killed */
	assert_int_equal(tu_write_file(tu_path(d, "notes.tmp.77"), "x", 1), 0);	/* not ours */
	check_rows(tu_path(d, "metrics.csv"), 2);
	assert_rc(ak("train", g_cfg, "--resume", d, "--epochs", "3", NULL), 0);
	assert_false(tu_exists(tu_path(d, "metrics.csv.tmp.4243")));
	assert_true(tu_exists(tu_path(d, "notes.tmp.77")));
	tu_assert_contains(g_err, "resuming from '");
	tu_assert_contains(g_err, "/epoch-0001.bin' at epoch 2, batch 0");
	check_rows(tu_path(d, "metrics.csv"), 3);
	assert_false(tu_exists(tu_path(d, "epoch-0002.bin.tmp.4242")));
	assert_true(tu_exists(tu_path(d, "epoch-0002.bin")));
}

/* Killed during the first checkpoint's fsync: no checkpoint, one complete
 * temporary file; the run starts over in its directory. */
static void crash_before_the_first_checkpoint(void **state)
{
	const char *d = subdir("crash-first");
	char want[2048];

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	assert_int_equal(rename(tu_path(d, "epoch-0001.bin"), tu_path(d, "epoch-0001.bin.tmp.4242")), 0);
	assert_int_equal(unlink(tu_path(d, "last.bin")), 0);
	assert_int_equal(unlink(tu_path(d, "best.bin")), 0);
	assert_rc(ak("train", g_cfg, "--resume", d, "--epochs", "1", NULL), 0);
	snprintf(want, sizeof(want), "no checkpoint in '%s' yet: starting over from epoch 1\n", d);
	tu_assert_prefix(after_kernels_line(g_err), want);
	check_rows(tu_path(d, "metrics.csv"), 1);
	assert_false(tu_exists(tu_path(d, "epoch-0001.bin.tmp.4242")));
	assert_true(tu_exists(tu_path(d, "last.bin")));
}

/* Killed in epoch 3 of a run that checkpoints only at its end: best.bin
 * (epoch 2) belongs to epochs the resume redoes and goes too, so that a
 * worse model never replaces it under the old name. */
static void resume_drops_a_later_best(void **state)
{
	const char *d = subdir("later-best");
	char want[2048];
	struct akk_checkpoint c;
	struct akk_err e = { 0 };

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "2", "--out", d, "--set",
		     "output.checkpoint_every=0", NULL), 0);
	assert_int_equal(unlink(tu_path(d, "last.bin")), 0);
	assert_rc(ak("train", g_cfg, "--resume", d, "--epochs", "1", "--set",
		     "output.checkpoint_every=0", NULL), 0);
	snprintf(want, sizeof(want), "no checkpoint in '%s' yet: starting over from epoch 1\n"
		 "removed '%s/best.bin': saved after the point this run resumes from\n", d, d);
	tu_assert_prefix(after_kernels_line(g_err), want);
	check_rows(tu_path(d, "metrics.csv"), 1);
	assert_int_equal(akk_checkpoint_read(&c, tu_path(d, "best.bin"), &e), 0);
	assert_int_equal(c.pos.epoch, 1);
	akk_checkpoint_release(&c);
}

/* A run trained in wheels resumes in wheels: under the flip-flop config
 * alone it is refused, with the way on. */
static void resume_keeps_the_schedule(void **state)
{
	const char *d = subdir("wheels-resume");
	char want[2048], *before, *after;

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--mode", "wheels", "--out", d, NULL), 0);
	before = tu_slurp(tu_path(d, "metrics.csv"), NULL);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", NULL), 2);
	snprintf(want, sizeof(want), "akkctl: '%s/last.bin' was trained in wheels mode, and this "
		 "run is flip-flop: resume it with --mode wheels, or start over elsewhere with --out\n", d);
	assert_string_equal(g_err, want);
	after = tu_slurp(tu_path(d, "metrics.csv"), NULL);
	assert_string_equal(before, after);
	free(after);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", "--mode", "wheels",
		     NULL), 0);
	after = tu_slurp(tu_path(d, "metrics.csv"), NULL);
	tu_assert_contains(after, "\n2,train,");
	free(before);
	free(after);
}

/* A torn last row (killed mid-write) and rows past the checkpoint go. */
static void torn_metrics_row(void **state)
{
	const char *d = subdir("torn");
	FILE *f;

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	f = fopen(tu_path(d, "metrics.csv"), "a");
	assert_non_null(f);
	fputs("2,train,600,0.1", f);
	fclose(f);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", NULL), 0);
	check_rows(tu_path(d, "metrics.csv"), 2);
}

/* Another network's checkpoint, further into training, in the directory. */
static void resume_takes_only_its_network(void **state)
{
	const char *d = subdir("mixed"), *w = subdir("mixed-wide");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	assert_rc(ak("train", g_wide, "--quiet", "--epochs", "2", "--out", w, NULL), 0);
	copy_file(tu_path(w, "last.bin"), tu_path(d, "epoch-0009.bin"));
	assert_int_equal(tu_write_file(tu_path(d, "epoch-0010.bin"), "junk", 4), 0);
	assert_rc(ak("train", g_cfg, "--resume", d, "--epochs", "2", NULL), 0);
	tu_assert_contains(g_err, "resuming from '");
	tu_assert_contains(g_err, "/last.bin' at epoch 2, batch 0 (step 19)\n");
	tu_assert_contains(g_err, "passed over ");
	tu_assert_contains(g_err, "/epoch-0009.bin: checkpoint does not match the network");
	tu_assert_contains(g_err, "/epoch-0010.bin: ");
	check_rows(tu_path(d, "metrics.csv"), 2);
}

/* A mismatch is reported as one whatever the epoch (10.7). */
static void mismatch_before_already_trained(void **state)
{
	const char *d = subdir("mismatch");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	assert_rc(ak("train", g_wide, "--epochs", "1", "--resume", tu_path(d, "last.bin"), NULL), 2);
	tu_assert_contains(g_err, "does not match the network");
	assert_rc(ak("train", g_wide, "--epochs", "1", "--resume", d, NULL), 2);
	tu_assert_contains(g_err, "no checkpoint of this network in '");
	tu_assert_contains(g_err, ": checkpoint does not match the network");
	/* the same network: already trained */
	assert_rc(ak("train", g_cfg, "--epochs", "1", "--resume", d, NULL), 0);
	tu_assert_contains(g_err, "has already trained 1 of 1 epochs");
}

/* A graph whose two branches are swapped at the join keeps every
 * tensor's name and size, so the tensors alone match; resuming it would
 * load each branch's weights into the other. It is refused, naming the
 * node; a change that holds no weights (a dropout rate) is not. */
static void resume_refuses_a_rewired_graph(void **state)
{
	static const char *net =
		"name: wired\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers:\n"
		"        - graph:\n"
		"            - {name: a, dense: 12}\n"
		"            - {name: ra, relu}\n"
		"            - {name: b, dense: 12, from: input}\n"
		"            - {name: tb, tanh}\n"
		"            - {concat: [%s]}\n"
		"        - {dropout: %s}\n"
		"    - layers: [{dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.05}\n"
		"schedule: {mode: flip-flop, epochs: 2, batch_size: 32}\n";
	const char *d = subdir("rewired");
	char text[1024], a[700], b[700], c[700], *text_rows;

	(void)state;
	snprintf(a, sizeof(a), "%s/wired-a.yaml", g_dir);
	snprintf(b, sizeof(b), "%s/wired-b.yaml", g_dir);
	snprintf(c, sizeof(c), "%s/wired-c.yaml", g_dir);
	snprintf(text, sizeof(text), net, "ra, tb", "0.1");
	assert_int_equal(tu_write_file(a, text, strlen(text)), 0);
	snprintf(text, sizeof(text), net, "tb, ra", "0.1");
	assert_int_equal(tu_write_file(b, text, strlen(text)), 0);
	snprintf(text, sizeof(text), net, "ra, tb", "0.3");
	assert_int_equal(tu_write_file(c, text, strlen(text)), 0);
	assert_rc(ak("train", a, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	assert_rc(ak("train", b, "--quiet", "--resume", tu_path(d, "last.bin"), NULL), 2);
	tu_assert_contains(g_err, "checkpoint does not match the network: its layers are wired "
			   "otherwise: gate 1, layer 1 (graph), node 5: its inputs or its join differ");
	assert_rc(ak("train", c, "--quiet", "--resume", d, NULL), 0);
	text_rows = tu_slurp(tu_path(d, "metrics.csv"), NULL);
	tu_assert_contains(text_rows, "\n2,train,");
	free(text_rows);
}

/* The same for gates that join: a join reading its two sources the
 * other way round keeps every tensor, and is refused. */
static void resume_refuses_rewired_gates(void **state)
{
	static const char *net =
		"name: gwired\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - {name: stem, layers: [{dense: 12}, relu]}\n"
		"    - {name: left, from: stem, layers: [{dense: 6}, relu]}\n"
		"    - {name: right, from: stem, layers: [{dense: 6}, tanh]}\n"
		"    - {name: head, from: [%s], join: concat, layers: [{dense: 4}]}\n"
		"optimizer: {type: momentum, lr: 0.05}\n"
		"schedule: {mode: flip-flop, epochs: 2, batch_size: 32}\n";
	const char *d = subdir("gates-rewired");
	char text[1024], a[700], b[700];

	(void)state;
	snprintf(a, sizeof(a), "%s/gwired-a.yaml", g_dir);
	snprintf(b, sizeof(b), "%s/gwired-b.yaml", g_dir);
	snprintf(text, sizeof(text), net, "left, right");
	assert_int_equal(tu_write_file(a, text, strlen(text)), 0);
	snprintf(text, sizeof(text), net, "right, left");
	assert_int_equal(tu_write_file(b, text, strlen(text)), 0);
	assert_rc(ak("train", a, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	assert_rc(ak("train", b, "--quiet", "--resume", d, NULL), 2);
	tu_assert_contains(g_err, "its layers are wired otherwise: gate 4: the gates it reads "
			   "or its join differ");
	assert_rc(ak("train", a, "--quiet", "--resume", d, NULL), 0);
}

/* ---- 3. the terminal --------------------------------------------------------- */

static void progress_line_fits_the_width(void **state)
{
	struct akk_progress ps[] = {
		{ 3, 10, 412, 938, 0.0915, 87715, 4.2 },
		{ 10000, 100000, 999999, 1000000, 12345.678, 1e9, 1e7 },
		{ 1, 1, 0, 938, 0, 0, 0 },
	};
	char buf[600];

	(void)state;
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		for (int w = 1; w <= 300; w++) {
			int n = progress_format(buf, sizeof(buf), w, &ps[i], 3725.0, 1e5);
			assert_int_equal(n, (int)strlen(buf));
			if (n > w - 1 && n > 0) {
				print_error("width %d: %d characters: '%s'\n", w, n, buf);
				fail();
			}
			assert_null(strchr(buf, '\n'));
		}
	/* at 80 columns: everything, the run's time and ETA too */
	progress_format(buf, sizeof(buf), 80, &ps[0], 25, 70);
	assert_string_equal(buf, "epoch 3/10  412/938  loss 0.0915  epoch 4.2s ETA 5.4s  run 25.0s ETA 1:10");
	progress_format(buf, sizeof(buf), 120, &ps[0], 25, 70);
	assert_string_equal(buf, "epoch 3/10 [###########               ]  412/938  loss 0.0915"
			    "  87715 samples/s  epoch 4.2s ETA 5.4s  run 25.0s ETA 1:10");
	assert_int_equal(strlen(buf), 119);
	progress_format(buf, sizeof(buf), 40, &ps[0], 25, 70);
	assert_string_equal(buf, "epoch 3/10  412/938  loss 0.0915");
	/* the width: COLUMNS when not a terminal, else 80 */
	{
		int fd = open("/dev/null", O_RDONLY);
		setenv("COLUMNS", "57", 1);
		assert_int_equal(progress_width(fd), 57);
		unsetenv("COLUMNS");
		assert_int_equal(progress_width(fd), 80);
		assert_int_equal(progress_enabled(fd), 0);
		close(fd);
	}
}

/* Run akkctl with stdout and stderr on a pseudo-terminal of cols columns
 * and TERM term; its output in buf. Returns the exit status. */
static int run_on_pty(int cols, const char *term, char *buf, size_t size,
		      const char *const *args)
{
	struct winsize ws = { .ws_row = 24, .ws_col = (unsigned short)cols };
	int master, slave, status;
	size_t len = 0;
	pid_t pid;

	assert_int_equal(openpty(&master, &slave, NULL, NULL, &ws), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *argv[32];
		int n = 0, in = open("/dev/null", O_RDONLY);
		argv[n++] = tu_akkctl();
		while (*args && n < 31)
			argv[n++] = *args++;
		argv[n] = NULL;
		setsid();
		dup2(in, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		close(master);
		close(slave);
		setenv("TERM", term, 1);
		unsetenv("COLUMNS");
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(slave);
	for (;;) {
		struct pollfd p = { master, POLLIN, 0 };
		ssize_t n;
		if (poll(&p, 1, 60000) <= 0)
			break;
		n = read(master, buf + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == size - 1)
			break;
	}
	buf[len] = '\0';
	close(master);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Whether a pseudo-terminal can be opened here (not in a chroot or a
 * container without /dev/pts). */
static int have_pty(void)
{
	int master, slave;

	if (openpty(&master, &slave, NULL, NULL, NULL))
		return 0;
	close(master);
	close(slave);
	return 1;
}

static void progress_on_a_terminal(void **state)
{
	static char buf[1 << 16];
	const char *d = tu_path(g_dir, "pty");
	const char *args[] = { "train", g_cfg, "--epochs", "2", "--out", d, NULL };
	int lines = 0;

	(void)state;
	if (!have_pty()) {
		fprintf(stderr, "progress_on_a_terminal: skipped: no pseudo-terminal can be "
			"opened here (%s)\n", strerror(errno));
		skip();
	}
	assert_int_equal(run_on_pty(60, "xterm", buf, sizeof(buf), args), 0);
	/* every piece between \r and \n fits in 59 columns once ESC [K is
	 * taken out, and the progress lines were drawn */
	for (char *p = buf; *p; ) {
		size_t n = strcspn(p, "\r\n"), k = 0;
		char seg[4096];
		for (size_t i = 0; i < n && k < sizeof(seg) - 1; i++) {
			if (!strncmp(p + i, "\033[K", 3)) {
				i += 2;
				continue;
			}
			seg[k++] = p[i];
		}
		seg[k] = '\0';
		if (!strncmp(seg, "epoch 1/2  19/19", 16) || !strncmp(seg, "epoch 2/2 ", 10))
			lines++;
		/* the lines printed once (the header, summary, paths) may be
		 * longer; the redrawn one may not */
		int e1, e2;
		char after = 0;
		if (sscanf(seg, "epoch %d/%d%c", &e1, &e2, &after) == 3 && after != ':' &&
		    k > 59) {
			print_error("progress line of %zu characters at 60 columns: '%s'\n", k, seg);
			fail();
		}
		p += n;
		if (*p)
			p++;
	}
	assert_true(lines >= 1);
	/* TERM=dumb: no progress line, no escape codes */
	assert_int_equal(run_on_pty(60, "dumb", buf, sizeof(buf),
				    (const char *const[]){ "train", g_cfg, "--epochs", "1",
							   "--out", tu_path(g_dir, "pty-dumb"), NULL }), 0);
	assert_null(strchr(buf, '\033'));
	tu_assert_not_contains(buf, "\r\r");
	tu_assert_contains(buf, "epoch 1/1: train loss");
}

/* The closing summary, in both modes. */
static void summary_after_every_run(void **state)
{
	const char *modes[] = { "flip-flop", "wheels" };

	(void)state;
	for (int i = 0; i < 2; i++) {
		char name[32], want[4096];
		const char *d, *s;
		snprintf(name, sizeof(name), "summary-%s", modes[i]);
		d = subdir(name);
		assert_rc(ak("train", g_cfg, "--epochs", "2", "--mode", modes[i], "--out", d, NULL), 0);
		tu_assert_contains(g_err, "summary: 2 of 2 epochs done in ");
		s = strstr(g_err, "summary: 2 of 2 epochs done in ");
		tu_assert_contains(s, "; best validation accuracy ");
		tu_assert_contains(s, "; final validation accuracy ");
		snprintf(want, sizeof(want), "\n  metrics: %s/metrics.csv\n  best:    %s/best.bin\n"
			 "  last:    %s/last.bin\n", d, d, d);
		tu_assert_contains(s, want);
		assert_string_equal(s + strlen(s) - strlen(want), want);
	}
}

static int has_row(const char *path)
{
	char *s = tu_slurp(path, NULL);
	int n = 0;

	for (char *p = s; p && *p; p++)
		n += *p == '\n';
	free(s);
	return n >= 2;
}

/* Train g_long into d with stderr to errpath (a file, or /dev/full) and
 * the NULL-terminated extra arguments (up to 8), send SIGINT once the
 * first epoch's rows are in, and return the wait status. */
static int train_interrupted(const char *d, const char *errpath,
			     const char *const *extra)
{
	const char *argv[16] = { tu_akkctl(), "train", g_long, "--out", d };
	int n = 5, status, tries = 0;
	pid_t pid;

	for (; extra && *extra && n < 13; extra++)
		argv[n++] = *extra;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		dup2(fd, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (!has_row(tu_path(d, "metrics.csv")) && tries++ < 3000) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	return status;
}

static void interrupted_run_says_how_to_resume(void **state)
{
	static const char *const extra[] = { "--set", "output.keep=1", "--set",
					     "name=a b", NULL };
	const char *d = subdir("sigint");
	const char *errf = tu_path(g_dir, "sigint.err");
	char want[4096], *err;
	int status;

	(void)state;
	status = train_interrupted(d, errf, extra);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 130);
	err = tu_slurp(errf, NULL);
	assert_non_null(err);
	tu_assert_contains(err, "summary: interrupted in epoch ");
	/* the program as typed: the test's path to the binary */
	snprintf(want, sizeof(want), "to resume: %s train %s --resume %s --set output.keep=1 "
		 "--set 'name=a b'\n", tu_akkctl(), g_long, d);
	assert_string_equal(err + strlen(err) - strlen(want), want);
	free(err);
	/* Mid-epoch: last.bin is inside epoch E+1; a resumed run that ended
	 * epoch E+1 and was killed while checkpointing it left its rows.
	 * Resuming again drops them: one row per epoch and phase. */
	{
		struct akk_checkpoint c;
		struct akk_err e = { 0 };
		char epochs[16], *rows, *last;
		FILE *f;

		assert_int_equal(akk_checkpoint_read(&c, tu_path(d, "last.bin"), &e), 0);
		check_rows(tu_path(d, "metrics.csv"), c.pos.epoch);
		if (c.pos.index == 19) {
			/* stopped in flip-flop's validation, after the epoch's
			 * last batch: such a checkpoint does not resume before
			 * the fix that lets a checkpoint hold the end of an epoch's
			 * batches as its position */
			akk_checkpoint_release(&c);
			return;
		}
		rows = tu_slurp(tu_path(d, "metrics.csv"), NULL);
		last = rows + strlen(rows) - 1;
		while (last > rows && last[-1] != '\n')
			last--;
		f = fopen(tu_path(d, "metrics.csv"), "a");
		fprintf(f, "%d,train,600,0.5,0.5,0.05,1,600,0,0\n%d%s", c.pos.epoch + 1,
			c.pos.epoch + 1, strchr(last, ','));
		fclose(f);
		free(rows);
		check_rows(tu_path(d, "metrics.csv"), c.pos.epoch + 1);
		snprintf(epochs, sizeof(epochs), "%d", c.pos.epoch + 1);
		assert_rc(ak("train", g_long, "--quiet", "--resume", d, "--epochs", epochs, NULL), 0);
		check_rows(tu_path(d, "metrics.csv"), c.pos.epoch + 1);
		rows = tu_slurp(tu_path(d, "metrics.csv"), NULL);
		assert_non_null(rows);
		tu_assert_not_contains(rows, ",0.5,0.5,0.05,");
		free(rows);
		akk_checkpoint_release(&c);
	}
}

/* ---- 4. defects -------------------------------------------------------------- */

/* The command that resumes is the one thing an interrupted run must tell:
 * when stderr cannot take it (a full device), the exit status says so. */
static void resume_command_unwritable_fails(void **state)
{
	const char *d = subdir("sigint-full");
	int status;

	(void)state;
	status = train_interrupted(d, "/dev/full", NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_true(tu_exists(tu_path(d, "last.bin")));
}

static void long_out_paths(void **state)
{
	char path[8192], want[512];
	size_t n;

	(void)state;
	/* 1100 characters: created as given */
	n = (size_t)snprintf(path, sizeof(path), "%s", g_dir);
	while (n < 1100)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/%s",
				      "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
				      "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvw");
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", path, NULL), 0);
	check_rows(tu_path(path, "metrics.csv"), 1);
	assert_true(tu_exists(tu_path(path, "last.bin")));
	/* longer than the system takes: refused, exit 2 */
	while (n < 5000)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/%s", "x123456789");
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", path, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: --out: the run directory's path is too long "
		 "(%zu characters; at most %d)\n", n, PATH_MAX - 2 - 48);
	assert_string_equal(g_err, want);
}

static void every_gates_lr_in_the_metrics(void **state)
{
	const char *d = subdir("pergate");
	char *s, *row;
	double lr, seconds, sps, g1, g2;
	long vmin, vmax;

	(void)state;
	assert_rc(ak("train", g_pergate, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	s = tu_slurp(tu_path(d, "metrics.csv"), NULL);
	assert_non_null(s);
	tu_assert_prefix(s, HEADER ",lr_g1,lr_g2\n");
	row = strchr(s, '\n') + 1;
	assert_int_equal(sscanf(row, "1,train,600,%*f,%*f,%lf,%lf,%lf,%ld,%ld,%lf,%lf\n",
				&lr, &seconds, &sps, &vmin, &vmax, &g1, &g2), 7);
	assert_true(lr == g1);
	assert_true(g1 > 0.04 && g1 <= 0.05);
	assert_true(g2 > 0.008 && g2 <= 0.01);
	free(s);
	/* resumed with one optimizer for all: other columns, refused */
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", NULL), 2);
	tu_assert_contains(g_err, "/metrics.csv:1:1: its columns are not the ones this run writes");
	/* one optimizer for all: the header stays as it was */
	d = subdir("onelr");
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	check_rows(tu_path(d, "metrics.csv"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(new_run_refuses_a_used_directory),
		cmocka_unit_test(force_starts_over),
		cmocka_unit_test(resume_stays_in_its_directory),
		cmocka_unit_test(crash_during_checkpoint_keeps_one_row_per_epoch),
		cmocka_unit_test(crash_before_the_first_checkpoint),
		cmocka_unit_test(resume_drops_a_later_best),
		cmocka_unit_test(torn_metrics_row),
		cmocka_unit_test(resume_keeps_the_schedule),
		cmocka_unit_test(resume_takes_only_its_network),
		cmocka_unit_test(mismatch_before_already_trained),
		cmocka_unit_test(resume_refuses_a_rewired_graph),
		cmocka_unit_test(resume_refuses_rewired_gates),
		cmocka_unit_test(progress_line_fits_the_width),
		cmocka_unit_test(progress_on_a_terminal),
		cmocka_unit_test(summary_after_every_run),
		cmocka_unit_test(interrupted_run_says_how_to_resume),
		cmocka_unit_test(resume_command_unwritable_fails),
		cmocka_unit_test(long_out_paths),
		cmocka_unit_test(every_gates_lr_in_the_metrics),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
