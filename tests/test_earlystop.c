/* test_earlystop.c - early stopping and the plateau lr schedule: the
 * decisions (nn/monitor.c) against Keras' EarlyStopping and
 * ReduceLROnPlateau, then `akkctl train` end to end on a small synthetic
 * IDX set: where it stops, the run directory's result (last.bin a copy of
 * best.bin, eval scoring best.bin), the lr columns of metrics.csv, the
 * watch surviving a resume bit for bit, and the same under mpirun
 * (pipeline and data parallel; skipped without MPI).
 *
 * A validation loss is forced to plateau with a step schedule whose gamma
 * is 1e-30: after epoch 3 the weights no longer change, so the validation
 * loss repeats exactly. A min_delta larger than any change makes every
 * epoch after the first "no improvement", whatever the data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/checkpoint.h"
#include "nn/monitor.h"
#include "nn/optim.h"
#include "runtime/world.h"
#include "testutil.h"

static char g_dir[512];
static char g_out[1 << 16], g_err[1 << 16];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

/* ---- the decisions --------------------------------------------------------- */

static void early_stop_counts_patience(void **state)
{
	struct akk_early_stop_spec s = { .on = 1, .monitor = AKK_MON_VAL_LOSS,
					 .patience = 2, .min_delta = 0.01f };
	struct akk_watch w = { 0 };
	/* epoch 1 best; 2 improves; 3 by less than min_delta; 4 worse: stop */
	const double v[] = { 1.0, 0.9, 0.895, 0.95 };
	const int stop[] = { 0, 0, 0, 1 };

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(akk_early_stop_update(&w, &s, i + 1, v[i]), stop[i]);
	assert_int_equal(w.stopped_epoch, 4);
	assert_int_equal(w.stop.best_epoch, 2);
	assert_true(w.stop.best == 0.9);
	/* accuracy: higher is better */
	s.monitor = AKK_MON_VAL_ACCURACY;
	s.patience = 1;
	memset(&w, 0, sizeof(w));
	assert_int_equal(akk_early_stop_update(&w, &s, 1, 0.5), 0);
	assert_int_equal(akk_early_stop_update(&w, &s, 2, 0.6), 0);
	assert_int_equal(akk_early_stop_update(&w, &s, 3, 0.605), 1);
	assert_int_equal(w.stop.best_epoch, 2);
}

/* Keras' ReduceLROnPlateau(patience=2, cooldown=1) on a loss that never
 * improves after epoch 1: reductions after epochs 3 and 5 (the cooldown
 * epoch 4 resets the wait, then counts it), none once at the floor. */
static void plateau_follows_keras(void **state)
{
	struct akk_watch w = { 0 };
	const int reduced[] = { 0, 0, 1, 0, 1, 0, 1 };

	(void)state;
	for (int i = 0; i < 7; i++)
		assert_int_equal(akk_plateau_update(&w, AKK_MON_VAL_LOSS, 1e-4, 2, 1, 0,
						    i + 1, 1.0), reduced[i]);
	assert_int_equal(w.reductions, 3);
	/* at the floor: the wait grows, nothing is reduced */
	memset(&w, 0, sizeof(w));
	for (int i = 0; i < 5; i++)
		assert_int_equal(akk_plateau_update(&w, AKK_MON_VAL_LOSS, 0, 1, 0, 1,
						    i + 1, 1.0), 0);
	assert_int_equal(w.plateau.wait, 4);
	/* an improvement resets the wait */
	memset(&w, 0, sizeof(w));
	akk_plateau_update(&w, AKK_MON_VAL_ACCURACY, 0, 2, 0, 0, 1, 0.5);
	akk_plateau_update(&w, AKK_MON_VAL_ACCURACY, 0, 2, 0, 0, 2, 0.4);
	assert_int_equal(w.plateau.wait, 1);
	akk_plateau_update(&w, AKK_MON_VAL_ACCURACY, 0, 2, 0, 0, 3, 0.7);
	assert_int_equal(w.plateau.wait, 0);
	assert_int_equal(w.reductions, 0);
}

static void plateau_lr_has_a_floor(void **state)
{
	struct akk_optim_spec o = { .kind = AKK_OPT_SGD, .lr = 0.1f };

	(void)state;
	o.sched.kind = AKK_LR_PLATEAU;
	o.sched.factor = 0.1f;
	o.sched.min_lr = 0.0005f;
	assert_true(akk_lr_reduced(&o, 0.1f, 0) == 0.1f);
	assert_true(akk_lr_reduced(&o, 0.1f, 1) == (float)(0.1f * (double)0.1f));
	assert_true(akk_lr_reduced(&o, 0.1f, 2) == (float)(0.1f * pow(0.1f, 2)));
	assert_true(akk_lr_reduced(&o, 0.1f, 3) == 0.0005f);
	o.sched.kind = AKK_LR_COSINE;	/* other schedules: untouched */
	assert_true(akk_lr_reduced(&o, 0.1f, 3) == 0.1f);
}

/* ---- end to end -------------------------------------------------------------- */

/* A config in g_dir/NAME.yaml writing to g_dir/out-NAME; optim and
 * sched are the optimizer mapping and extra schedule lines. */
static const char *write_cfg(const char *name, const char *mode, int epochs,
			     const char *optim, const char *sched)
{
	static char path[700];
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"seed: 7\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"  validation: {images: val-images, labels: val-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 16}, relu]\n"
		"    - layers: [{dense: 4}]\n"
		"optimizer: %s\n"
		"schedule:\n"
		"  mode: %s\n"
		"  epochs: %d\n"
		"  batch_size: 40\n"
		"%s"
		"output: {dir: out-%s, keep: 100}\n",
		name, optim, mode, epochs, sched, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, sizeof(path), "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
	return path;
}

static const char *out_file(const char *name, const char *file)
{
	static char p[4][800];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/out-%s/%s", g_dir, name, file);
	return p[i];
}

/* Two files with the same bytes. */
static void assert_same_file(const char *a, const char *b)
{
	size_t na, nb;
	char *x = tu_slurp(a, &na), *y = tu_slurp(b, &nb);

	if (!x || !y || na != nb || memcmp(x, y, na))
		fail_msg("'%s' and '%s' differ", a, b);
	free(x);
	free(y);
}

/* Every tensor of two checkpoints, within rel (0: bit for bit). */
static void assert_same_weights(const char *a, const char *b, double rel)
{
	struct akk_checkpoint x, y;
	struct akk_err e;

	if (akk_checkpoint_read(&x, a, &e))
		fail_msg("%s: %s", a, e.msg);
	if (akk_checkpoint_read(&y, b, &e))
		fail_msg("%s: %s", b, e.msg);
	assert_int_equal(x.ngates, y.ngates);
	assert_int_equal(x.pos.id, y.pos.id);
	for (int g = 0; g < x.ngates; g++) {
		assert_int_equal(x.gates[g].ntensors, y.gates[g].ntensors);
		for (int t = 0; t < x.gates[g].ntensors; t++) {
			const struct akk_ckpt_tensor *p = &x.gates[g].tensors[t];
			const struct akk_ckpt_tensor *q = &y.gates[g].tensors[t];
			assert_string_equal(p->name, q->name);
			assert_int_equal(p->count, q->count);
			if (!rel)
				assert_memory_equal(p->data, q->data, p->count * sizeof(float));
			else if (tu_max_rel_err(p->data, q->data, p->count, 1e-3) > rel)
				fail_msg("%s: '%s' differs by %g relative", b, p->name,
					 tu_max_rel_err(p->data, q->data, p->count, 1e-3));
		}
	}
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
}

/* The lr column of metrics.csv's training rows, one per epoch. */
static int lr_column(const char *csv, double *lr, int max)
{
	char *s = tu_slurp(csv, NULL), *line, *save = NULL;
	int n = 0;

	assert_non_null(s);
	line = strtok_r(s, "\n", &save);	/* header */
	while ((line = strtok_r(NULL, "\n", &save)) && n < max) {
		int epoch;
		char phase[32];
		double samples, loss, acc;
		if (sscanf(line, "%d,%31[^,],%lf,%lf,%lf,%lf", &epoch, phase, &samples,
			   &loss, &acc, &lr[n]) == 6 && !strcmp(phase, "train"))
			n++;
	}
	free(s);
	return n;
}

/* The epoch of a checkpoint's position (epochs done). */
static int ckpt_epoch(const char *path)
{
	struct akk_checkpoint c;
	struct akk_err e;
	int epoch;

	if (akk_checkpoint_read(&c, path, &e))
		fail_msg("%s: %s", path, e.msg);
	epoch = c.pos.epoch;
	akk_checkpoint_release(&c);
	return epoch;
}

#define FROZEN "{type: sgd, lr: 0.1, schedule: {type: step, step_epochs: 3, gamma: 1e-30}}"

/* The validation loss improves for 3 epochs, then repeats: patience 2
 * stops after epoch 5; the result is epoch 3's checkpoint. */
static void stops_at_the_right_epoch(void **state)
{
	const char *cfg = write_cfg("frozen", "flip-flop", 20, FROZEN,
				    "  early_stopping: {patience: 2}\n");
	char want[2048], *line;

	(void)state;
	assert_rc(ak("train", cfg, NULL), 0);
	line = strstr(g_err, "summary: ");
	assert_non_null(line);
	snprintf(want, sizeof(want), "summary: stopped early after epoch 5 of 20 in ");
	tu_assert_prefix(line, want);
	tu_assert_contains(line, "(val_loss did not improve for 2 epochs); best epoch 3 (val_loss ");
	tu_assert_contains(line, "), restored as last.bin;");
	tu_assert_contains(g_err, "epoch 5/20:");
	tu_assert_not_contains(g_err, "epoch 6/20:");
	assert_true(tu_exists(out_file("frozen", "epoch-0005.bin")));
	assert_false(tu_exists(out_file("frozen", "epoch-0006.bin")));
	/* the result: last.bin is best.bin, epoch 3's */
	assert_same_file(out_file("frozen", "best.bin"), out_file("frozen", "last.bin"));
	assert_int_equal(ckpt_epoch(out_file("frozen", "best.bin")), 3);
	assert_same_weights(out_file("frozen", "epoch-0003.bin"),
			    out_file("frozen", "last.bin"), 0);
	/* eval of the run directory scores the best weights */
	snprintf(want, sizeof(want), "%s/out-frozen", g_dir);
	assert_rc(ak("eval", want, NULL), 0);
	snprintf(want, sizeof(want), "using '%s/out-frozen/best.bin'", g_dir);
	tu_assert_line(g_err, want);
}

/* min_delta beyond any change: after epoch 1 nothing improves. */
static void accuracy_monitor_and_shorthand(void **state)
{
	const char *cfg = write_cfg("acc", "flip-flop", 9, "{type: sgd, lr: 0.1}",
				    "  early_stopping: {monitor: val_accuracy, patience: 3, min_delta: 2}\n");

	(void)state;
	assert_rc(ak("train", cfg, NULL), 0);
	tu_assert_contains(g_err, "summary: stopped early after epoch 4 of 9 in ");
	tu_assert_contains(g_err, "(val_accuracy did not improve for 3 epochs); best epoch 1 (val_accuracy ");
	assert_same_file(out_file("acc", "best.bin"), out_file("acc", "last.bin"));
	assert_int_equal(ckpt_epoch(out_file("acc", "last.bin")), 1);
	/* early_stopping: N is the patience */
	cfg = write_cfg("short", "flip-flop", 9, FROZEN, "  early_stopping: 1\n");
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	assert_false(tu_exists(out_file("short", "epoch-0005.bin")));
	assert_true(tu_exists(out_file("short", "epoch-0004.bin")));
	/* no improvement within the epochs: it just ends, last.bin is the end */
	cfg = write_cfg("never", "flip-flop", 3, FROZEN, "  early_stopping: 5\n");
	assert_rc(ak("train", cfg, NULL), 0);
	tu_assert_contains(g_err, "summary: 3 of 3 epochs done in ");
	assert_int_equal(ckpt_epoch(out_file("never", "last.bin")), 3);
}

/* The summary and the chart mark the epoch whose weights the run restored
 * (the monitor's best), not another epoch's better figure: here the
 * accuracy monitor with a min_delta no change reaches keeps epoch 1,
 * while later epochs score higher. */
static void summary_and_plot_mark_the_restored_epoch(void **state)
{
	const char *cfg = write_cfg("mark", "flip-flop", 9, "{type: sgd, lr: 0.1}",
				    "  early_stopping: {monitor: val_accuracy, patience: 3, min_delta: 2}\n");
	char dir[800], *line;

	(void)state;
	assert_rc(ak("train", cfg, NULL), 0);
	assert_int_equal(ckpt_epoch(out_file("mark", "last.bin")), 1);
	line = strstr(g_err, "summary: ");
	assert_non_null(line);
	tu_assert_contains(line, "best epoch 1 (val_accuracy ");
	tu_assert_contains(line, "; best validation accuracy ");
	tu_assert_contains(strstr(line, "; best validation accuracy "), "% at epoch 1;");
	snprintf(dir, sizeof(dir), "%s/out-mark", g_dir);
	assert_rc(ak("plot", dir, "-o", "-", NULL), 0);
	tu_assert_contains(g_out, "best: epoch 1, ");
	tu_assert_contains(g_out, "(early stopping&apos;s, restored)");
}

/* The same across a resume: the summary's best is the monitor's epoch
 * (1, before the resume), not the best figure in the metrics file. */
static void resumed_summary_marks_the_monitor_epoch(void **state)
{
	const char *cfg = write_cfg("markr", "flip-flop", 9, "{type: sgd, lr: 0.1}",
				    "  early_stopping: {monitor: val_accuracy, patience: 3, min_delta: 2}\n");
	char *line;

	(void)state;
	assert_rc(ak("train", cfg, "--epochs", "3", "--quiet", NULL), 0);
	assert_rc(ak("train", cfg, "--resume", out_file("markr", "last.bin"), NULL), 0);
	assert_int_equal(ckpt_epoch(out_file("markr", "last.bin")), 1);
	line = strstr(g_err, "summary: ");
	assert_non_null(line);
	tu_assert_contains(line, "best epoch 1 (val_accuracy ");
	tu_assert_contains(strstr(line, "; best validation accuracy "), "% at epoch 1;");
}

static void wheels_stops_early_too(void **state)
{
	const char *cfg = write_cfg("wheels", "wheels", 20, FROZEN,
				    "  early_stopping: {patience: 2}\n");
	struct akk_checkpoint c;
	struct akk_err e;
	char want[256];

	(void)state;
	assert_rc(ak("train", cfg, NULL), 0);
	tu_assert_contains(g_err, "summary: stopped early after epoch ");
	tu_assert_not_contains(g_err, "final: validation");
	assert_same_file(out_file("wheels", "best.bin"), out_file("wheels", "last.bin"));
	if (akk_checkpoint_read(&c, out_file("wheels", "last.bin"), &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.watch.stop.best_epoch, c.pos.epoch);
	snprintf(want, sizeof(want), "best epoch %d (val_loss ", c.pos.epoch);
	tu_assert_contains(g_err, want);
	akk_checkpoint_release(&c);
}

/* Resumed from epoch 4's checkpoint (one epoch of patience used), the run
 * stops after epoch 5 with the same result as the run never stopped:
 * the patience counter came back from the checkpoint. */
static void patience_survives_resume(void **state)
{
	const char *cfg = write_cfg("whole", "flip-flop", 20, FROZEN,
				    "  early_stopping: {patience: 2}\n");
	char dir[700];

	(void)state;
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	snprintf(dir, sizeof(dir), "%s/out-part", g_dir);
	assert_int_equal(mkdir(dir, 0777), 0);
	/* the run directory as it stood after epoch 4 */
	{
		const char *names[] = { "epoch-0004.bin", "best.bin", "metrics.csv" };
		for (int i = 0; i < 3; i++) {
			size_t n;
			char *b = tu_slurp(out_file("whole", names[i]), &n);
			assert_non_null(b);
			assert_int_equal(tu_write_file(out_file("part", names[i]), b, n), 0);
			free(b);
		}
	}
	assert_rc(ak("train", cfg, "--resume", out_file("part", "epoch-0004.bin"),
		     "--out", dir, NULL), 0);
	tu_assert_contains(g_err, "summary: stopped early after epoch 5 of 20 in ");
	tu_assert_not_contains(g_err, "epoch 6/20:");
	assert_same_file(out_file("whole", "last.bin"), out_file("part", "last.bin"));
	assert_same_file(out_file("whole", "epoch-0005.bin"), out_file("part", "epoch-0005.bin"));
}

#define PLATEAU "{type: sgd, lr: 0.1, schedule: {type: plateau, patience: 2, factor: 0.5, cooldown: 1, min_delta: 1000}}"

/* Reductions after epochs 3 and 5 (plateau_follows_keras): the lr
 * column shows each in the next epoch's rows. */
static void plateau_lr_in_metrics(void **state)
{
	const char *cfg = write_cfg("plateau", "flip-flop", 7, PLATEAU, "");
	const double want[] = { 0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025 };
	double lr[16];

	(void)state;
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	assert_int_equal(lr_column(out_file("plateau", "metrics.csv"), lr, 16), 7);
	for (int i = 0; i < 7; i++)
		if (fabs(lr[i] - want[i]) > 1e-7)
			fail_msg("epoch %d: lr %g, expected %g", i + 1, lr[i], want[i]);
}

/* The gates use the reduced lr: a plateau of patience 3 that sees no
 * improvement reduces after epoch 4 (its first reduction), and so trains
 * 7 epochs exactly as a step schedule of 4 epochs with the same factor. */
static void plateau_trains_as_step(void **state)
{
	const char *modes[] = { "flip-flop", "wheels" };

	(void)state;
	for (int m = 0; m < 2; m++) {
		char a[64], b[64];
		snprintf(a, sizeof(a), "pl-%s", modes[m]);
		snprintf(b, sizeof(b), "st-%s", modes[m]);
		assert_rc(ak("train", write_cfg(a, modes[m], 7, "{type: sgd, lr: 0.1, schedule: {type: plateau, patience: 3, factor: 0.5, min_delta: 1000}}", ""),
			     "--quiet", NULL), 0);
		assert_rc(ak("train", write_cfg(b, modes[m], 7, "{type: sgd, lr: 0.1, schedule: {type: step, step_epochs: 4, gamma: 0.5}}", ""),
			     "--quiet", NULL), 0);
		/* wheels interleaves by timing: bit for bit in flip-flop only */
		if (!m)
			assert_same_weights(out_file(a, "last.bin"), out_file(b, "last.bin"), 0);
	}
}

/* The plateau's state (wait, cooldown, reductions) survives a resume. */
static void plateau_survives_resume(void **state)
{
	const char *cfg = write_cfg("plw", "flip-flop", 7, PLATEAU, "");
	char dir[700];

	(void)state;
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	snprintf(dir, sizeof(dir), "%s/out-plr", g_dir);
	assert_rc(ak("train", cfg, "--quiet", "--resume", out_file("plw", "epoch-0004.bin"),
		     "--out", dir, NULL), 0);
	assert_same_weights(out_file("plw", "last.bin"), out_file("plr", "last.bin"), 0);
	{
		double a[16], b[16];
		assert_int_equal(lr_column(out_file("plr", "metrics.csv"), b, 16), 3);
		assert_int_equal(lr_column(out_file("plw", "metrics.csv"), a, 16), 7);
		assert_memory_equal(a + 4, b, 3 * sizeof(double));
	}
}

/* The watch block (akkctl-checkpoint(5)) is checked like every field: a
 * count beyond an int or a non-finite best is a corrupt checkpoint. */
static void forged_watch_is_refused(void **state)
{
	const char *cfg = write_cfg("forge", "flip-flop", 2, FROZEN, "  early_stopping: 4\n");
	const char *path = out_file("forge", "forged.bin");
	char want[1024];
	size_t n;
	unsigned char *b;

	(void)state;
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	b = (unsigned char *)tu_slurp(out_file("forge", "last.bin"), &n);
	assert_non_null(b);
	/* tag, best (f64), best_epoch, wait: at 12 from the tag, 48 before the CRC */
	assert_memory_equal(b + n - 52, "WTCH", 4);
	assert_int_equal(b[n - 52 + 12], 2);	/* best epoch 2 */
	for (int k = 0; k < 2; k++) {
		unsigned char *c = malloc(n);
		uLong crc;
		assert_non_null(c);
		memcpy(c, b, n);
		if (k == 0)
			c[n - 52 + 16 + 3] = 0x80;	/* wait = 2^31 */
		else
			memset(c + n - 52 + 4, 0xff, 8);	/* best = NaN */
		crc = crc32(0L, c, (uInt)(n - 4));
		for (int i = 0; i < 4; i++)
			c[n - 4 + i] = (unsigned char)(crc >> (8 * i));
		assert_int_equal(tu_write_file(path, c, n), 0);
		free(c);
		assert_rc(ak("inspect", path, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s: corrupt checkpoint: %s", path,
			 k ? "the watch block holds a non-finite best value" :
			     "the watch block holds 2147483648 (0 to 2147483647)");
		tu_assert_line(g_err, want);
	}
	free(b);
	/* unforged, it resumes */
	assert_rc(ak("inspect", out_file("forge", "last.bin"), NULL), 0);
}

/* ---- under mpirun ------------------------------------------------------------ */

static int have_mpi(void)
{
	const char *argv[] = { "mpirun", "--version", NULL };

	return akk_world_available() && tu_run(argv, NULL, 0, NULL, 0) == 0;
}

/* akkctl train under mpirun -np 2, bounded by timeout(1). */
static int mpi_train(const char *cfg, const char *set)
{
	const char *argv[] = { "timeout", "-k", "5", "120", "mpirun", "--oversubscribe",
			       "--allow-run-as-root", "-np", "2", tu_akkctl(), "train",
			       cfg, "--set", set, NULL };
	int rc;

#if defined(__SANITIZE_ADDRESS__)
	/* Open MPI keeps memory until exit that LeakSanitizer cannot name
	 * (test_mpi.c): the ranks run without the leak check */
	char *old = getenv("ASAN_OPTIONS") ? strdup(getenv("ASAN_OPTIONS")) : NULL;
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
	rc = tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err));
#if defined(__SANITIZE_ADDRESS__)
	if (old)
		setenv("ASAN_OPTIONS", old, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(old);
#endif
	return rc;
}

static void early_stop_and_plateau_under_mpi(void **state)
{
	const char *cfg;

	(void)state;
	/* Open MPI's own lock order (its TCP transport) trips
	 * ThreadSanitizer, which is why test_mpi is not under make tsan */
	if (!have_mpi() || getenv("TSAN_OPTIONS"))
		skip();
	/* pipeline: gate 2 on rank 1; the same weights as one process */
	cfg = write_cfg("m-es", "flip-flop", 20, FROZEN, "  early_stopping: {patience: 2}\n");
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	cfg = write_cfg("m-es2", "flip-flop", 20, FROZEN, "  early_stopping: {patience: 2}\n");
	assert_rc(mpi_train(cfg, "network.placement=contiguous"), 0);
	tu_assert_contains(g_err, "summary: stopped early after epoch 5 of 20 in ");
	assert_same_weights(out_file("m-es", "last.bin"), out_file("m-es2", "last.bin"), 0);
	cfg = write_cfg("m-pl", "flip-flop", 7, PLATEAU, "");
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	cfg = write_cfg("m-pl2", "flip-flop", 7, PLATEAU, "");
	assert_rc(mpi_train(cfg, "network.placement=contiguous"), 0);
	assert_same_weights(out_file("m-pl", "last.bin"), out_file("m-pl2", "last.bin"), 0);
	/* data parallel: 2 ranks at batch 20 train as one at batch 40 */
	cfg = write_cfg("m-dp", "flip-flop", 20, FROZEN, "  early_stopping: {patience: 2}\n  batch_size: 20\n");
	{
		/* batch_size appears twice otherwise: drop the first */
		size_t n;
		char *t = tu_slurp(cfg, &n), *p = strstr(t, "  batch_size: 40\n");
		assert_non_null(p);
		memmove(p, p + 17, strlen(p + 17) + 1);
		assert_int_equal(tu_write_file(cfg, t, strlen(t)), 0);
		free(t);
	}
	assert_rc(mpi_train(cfg, "schedule.parallel=data"), 0);
	tu_assert_contains(g_err, "summary: stopped early after epoch 5 of 20 in ");
	assert_same_weights(out_file("m-es", "last.bin"), out_file("m-dp", "last.bin"), 1e-4);
	cfg = write_cfg("m-dpl", "flip-flop", 7, PLATEAU, "  batch_size: 20\n");
	{
		size_t n;
		char *t = tu_slurp(cfg, &n), *p = strstr(t, "  batch_size: 40\n");
		assert_non_null(p);
		memmove(p, p + 17, strlen(p + 17) + 1);
		assert_int_equal(tu_write_file(cfg, t, strlen(t)), 0);
		free(t);
	}
	assert_rc(mpi_train(cfg, "schedule.parallel=data"), 0);
	{
		double lr[16];
		const double want[] = { 0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025 };
		assert_int_equal(lr_column(out_file("m-dpl", "metrics.csv"), lr, 16), 7);
		for (int i = 0; i < 7; i++)
			assert_true(fabs(lr[i] - want[i]) < 1e-7);
	}
	assert_same_weights(out_file("m-pl", "last.bin"), out_file("m-dpl", "last.bin"), 1e-4);
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();
	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "train", 400, 8, 4, 1);
	tu_write_set(g_dir, "val", 200, 8, 4, 2);
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
		cmocka_unit_test(early_stop_counts_patience),
		cmocka_unit_test(plateau_follows_keras),
		cmocka_unit_test(plateau_lr_has_a_floor),
		cmocka_unit_test(stops_at_the_right_epoch),
		cmocka_unit_test(accuracy_monitor_and_shorthand),
		cmocka_unit_test(summary_and_plot_mark_the_restored_epoch),
		cmocka_unit_test(resumed_summary_marks_the_monitor_epoch),
		cmocka_unit_test(wheels_stops_early_too),
		cmocka_unit_test(patience_survives_resume),
		cmocka_unit_test(plateau_lr_in_metrics),
		cmocka_unit_test(plateau_trains_as_step),
		cmocka_unit_test(plateau_survives_resume),
		cmocka_unit_test(forged_watch_is_refused),
		cmocka_unit_test(early_stop_and_plateau_under_mpi),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
