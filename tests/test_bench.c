/* test_bench.c - akkctl bench's output files: a write error on --csv or
 * --trace fails the command with the file's name, and the other file is
 * still closed and complete. Synthetic data (no data files), three steps.
 * Several modes take turns epoch by epoch, and time the gates alone. A
 * training set of 4 MiB or more is moved to huge pages. --gemm times one
 * thread. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const char *cfg_yaml =
	"data: {train: {images: nope, labels: nope}}\n"
	"network:\n"
	"  input: [16]\n"
	"  gates:\n"
	"    - layers: [{dense: 8}, relu]\n"
	"    - layers: [{dense: 4}]\n"
	"optimizer: {type: sgd, lr: 0.1}\n"
	"schedule: {mode: flip-flop, epochs: 1, batch_size: 8}\n";

static int bench(const char *cfg, const char *csv, const char *trace,
		 char *err, size_t errsz)
{
	const char *argv[] = { tu_akkctl(), "bench", "--config", cfg, "--steps", "3",
			       "--mode", "flip-flop", "--csv", csv, "--trace", trace, NULL };
	return tu_run(argv, NULL, 0, err, errsz);
}

static void csv_write_error_names_the_file(void **state)
{
	char cfg[4096], trace[4096], err[4096];
	const char *dir = tu_tmpdir();
	char *text;
	size_t len;

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s/c.yaml", dir);
	snprintf(trace, sizeof(trace), "%s/t.json", dir);
	assert_int_equal(tu_write_file(cfg, cfg_yaml, strlen(cfg_yaml)), 0);
	assert_int_equal(bench(cfg, "/dev/full", trace, err, sizeof(err)), 1);
	assert_string_equal(err, "akkctl: cannot write '/dev/full': No space left on device\n");
	/* the trace was closed all the same: whole JSON */
	text = tu_slurp(trace, &len);
	assert_non_null(text);
	assert_true(len > 4);
	assert_string_equal(text + len - 4, "\n]}\n");
	free(text);
	/* and the other way round */
	assert_int_equal(bench(cfg, trace, "/dev/full", err, sizeof(err)), 1);
	assert_string_equal(err, "akkctl: cannot write '/dev/full': No space left on device\n");
	tu_rm_tree(dir);
}

/* bench --layers: an activation its dense layer applies (akk_layers_fuse)
 * costs nothing of its own; its time is in the dense row, never counted
 * twice. */
static void layers_fused_activation_counted_once(void **state)
{
	static const char *yaml =
		"data: {train: {images: nope, labels: nope}}\n"
		"network:\n"
		"  input: [256]\n"
		"  gates:\n"
		"    - layers: [{dense: 4096}, relu, {dense: 4}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 64}\n";
	char cfg[4096], out[16384], err[4096], kind[32];
	const char *dir = tu_tmpdir();
	const char *argv[] = { tu_akkctl(), "bench", "--config", cfg, "--steps", "1",
			       "--layers", NULL };
	int gate, layer, rows = 0;
	double fwd, bwd;

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s/fused.yaml", dir);
	assert_int_equal(tu_write_file(cfg, yaml, strlen(yaml)), 0);
	assert_int_equal(tu_run(argv, out, sizeof(out), err, sizeof(err)), 0);
	for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (sscanf(l, "%d %d %31s [%*[^]]] %lf %lf", &gate, &layer, kind,
			   &fwd, &bwd) != 5)
			continue;
		rows++;
		if (!strcmp(kind, "relu")) {
			assert_true(fwd == 0 && bwd == 0);
		} else {
			assert_true(fwd > 0);
		}
	}
	assert_int_equal(rows, 3);
}

/* Two gates on 64 inputs: the config of the tests of several modes. */
static const char *two_gates_yaml =
	"data: {train: {images: nope, labels: nope}}\n"
	"network:\n  input: [64]\n  gates:\n"
	"    - layers: [{dense: 64}, relu]\n    - layers: [{dense: 4}]\n"
	"optimizer: {type: sgd, lr: 0.1}\n"
	"schedule: {mode: flip-flop, epochs: 1, batch_size: 8}\n";

/* Several modes over several epochs take turns: each turn's window holds
 * one epoch of every mode, the windows follow one another, and each
 * mode's row gives the median and range of its turns' epochs. */
static void modes_take_turns_epoch_by_epoch(void **state)
{
	static char out[1 << 16], err[4096];
	char cfg[4096];
	double end = 0;

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s/turns.yaml", tu_tmpdir());
	assert_int_equal(tu_write_file(cfg, two_gates_yaml, strlen(two_gates_yaml)), 0);
	const char *argv[] = { tu_akkctl(), "bench", "--config", cfg, "--mode", "both",
			       "--epochs", "3", "--no-validation", NULL };
	assert_int_equal(tu_run(argv, out, sizeof(out), err, sizeof(err)), 0);
	tu_assert_contains(out, "the modes take turns: one epoch of each, 3 times\n");
	for (int t = 1; t <= 3; t++) {
		char head[32];
		double from, to, ff, wh, pp, ratio;
		const char *line;

		snprintf(head, sizeof(head), "\nturn %d (", t);
		assert_non_null(line = strstr(out, head));
		assert_int_equal(sscanf(line + strlen(head), "%lf-%lf s): flip-flop %lf s, "
					"wheels %lf s, pipeline %lf s; wheels / flip-flop %lfx",
					&from, &to, &ff, &wh, &pp, &ratio), 6);
		/* after the turn before, and long enough for its three epochs */
		assert_true(from >= end);
		assert_true(to - from >= ff + wh + pp - 3e-3);	/* printed to 1 ms */
		end = to;
	}
}

/* With wheels and flip-flop on one compute thread per gate and a core per
 * gate, every turn also times the gates alone, in turn and at once
 * (model/overlap.h), and the bench reports their medians beside wheels /
 * flip-flop and writes them as CSV rows; with products split over the
 * cores it says why it did not. */
static void turns_time_the_gates_alone(void **state)
{
	static char out[1 << 16], err[4096];
	char cfg[4096], csv[4096];
	const char *dir = tu_tmpdir(), *line;
	cpu_set_t set;
	size_t len;
	char *text;
	double seq, conc, bound, reached;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	snprintf(cfg, sizeof(cfg), "%s/alone.yaml", dir);
	snprintf(csv, sizeof(csv), "%s/alone.csv", dir);
	assert_int_equal(tu_write_file(cfg, two_gates_yaml, strlen(two_gates_yaml)), 0);
	const char *argv[] = { tu_akkctl(), "bench", "--config", cfg, "--mode", "both",
			       "--epochs", "2", "--no-validation", "--csv", csv,
			       "--set", "schedule.threads=1", NULL };
	assert_int_equal(tu_run(argv, out, sizeof(out), err, sizeof(err)), 0);
	if (CPU_COUNT(&set) < 2) {	/* a core per gate: not here */
		tu_assert_contains(out, "the gates alone at once: not measured");
		tu_rm_tree(dir);
		return;
	}
	for (int t = 1; t <= 2; t++) {
		char head[32];
		double ratio, alone;

		snprintf(head, sizeof(head), "\nturn %d (", t);
		assert_non_null(line = strstr(out, head));
		assert_non_null(line = strstr(line, "; wheels / flip-flop "));
		assert_int_equal(sscanf(line, "; wheels / flip-flop %lfx; the gates alone at once %lfx",
					&ratio, &alone), 2);
		assert_true(alone > 0);
	}
	assert_non_null(line = strstr(out, "\nthe gates alone (300 batches each a turn, "
				      "no messages, loss or data): in turn "));
	line = strstr(line, "in turn ");
	assert_int_equal(sscanf(line, "in turn %lf s/epoch (%*f-%*f), at once %lf (%*f-%*f): "
				"overlap can give at most %lfx now; wheels / flip-flop reached %lf%%",
				&seq, &conc, &bound, &reached), 4);
	assert_true(seq > 0 && conc > 0);
	/* the bound is the medians' ratio, within the rounding of the three
	 * printed figures (3 decimals; 2 for the bound): on a fast machine
	 * 0.027 / 0.024 s may stand for a ratio of 1.10 */
	assert_true(fabs(bound - seq / conc) <=
		    seq / conc * (0.0005 / seq + 0.0005 / conc) + 0.005 + 1e-9);
	text = tu_slurp(csv, &len);
	assert_non_null(text);
	tu_assert_contains(text, "\ngates-in-turn,all,,");
	tu_assert_contains(text, "\ngates-at-once,all,,");
	free(text);
	/* products split over the cores: flip-flop is not one thread */
	argv[12] = "schedule.threads=0";
	assert_int_equal(tu_run(argv, out, sizeof(out), err, sizeof(err)), 0);
	tu_assert_contains(out, "the gates alone at once: not measured (it needs one compute "
			   "thread per gate, schedule.threads: 1, and a core per gate)\n");
	assert_null(strstr(out, "; the gates alone at once "));
	tu_rm_tree(dir);
}

/* A training set of 4 MiB or more is read from huge pages where the
 * system offers them, and bench says so; a smaller one is not moved. */
static void training_set_in_huge_pages(void **state)
{
	static char out[1 << 16], err[4096];
	static const size_t sizes[] = { 6000, 500 };	/* 4.7 MB, 392 kB */
	const char *dir = tu_tmpdir();
	char cfg[4096], text[1024];

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s/h.yaml", dir);
	snprintf(text, sizeof(text),
		 "data: {train: {images: %s, labels: %s}}\n"
		 "network:\n  input: [1, 28, 28]\n  gates:\n    - layers: [flatten, {dense: 10}]\n"
		 "optimizer: {type: sgd, lr: 0.1}\n"
		 "schedule: {mode: flip-flop, epochs: 1, batch_size: 64}\n",
		 tu_path(dir, "h-images"), tu_path(dir, "h-labels"));
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	for (int k = 0; k < 2; k++) {
		const char *argv[] = { tu_akkctl(), "bench", "--config", cfg, "--steps", "2",
				       "--mode", "flip-flop", "--no-validation", NULL };

		tu_write_set(dir, "h", sizes[k], 28, 10, 3);
		assert_int_equal(tu_run(argv, out, sizeof(out), err, sizeof(err)), 0);
		snprintf(text, sizeof(text), "data: %zu training, 0 validation samples%s\n",
			 sizes[k], k == 0 && tu_thp_offered() ? " (the training set in huge pages)" : "");
		tu_assert_contains(out, text);
	}
	tu_rm_tree(dir);
}

/* bench --gemm times one thread, as it says: a round's child (the
 * process the parent runs per kernel choice and round) takes about as
 * much CPU as wall time. Before it set OpenBLAS to one thread, the
 * library's default of a thread per core took 1.8x the wall time on two
 * cores. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void gemm_products_on_one_thread(void **state)
{
	static char out[1 << 16], err[4096];
	const char *argv[] = { tu_akkctl(), "bench", "--gemm", NULL };
	struct rusage r0, r1;
	double t, cpu;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	assert_int_equal(setenv("AKK_BENCH_GEMM_ROUND", "0", 1), 0);
	getrusage(RUSAGE_CHILDREN, &r0);
	t = now();
	assert_int_equal(tu_run(argv, out, sizeof(out), err, sizeof(err)), 0);
	t = now() - t;
	getrusage(RUSAGE_CHILDREN, &r1);
	unsetenv("AKK_BENCH_GEMM_ROUND");
	cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
	      1e-6 * (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
	      (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
	      1e-6 * (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
	tu_assert_contains(out, "library OpenBLAS");
	if (cpu > 1.3 * t)
		fail_msg("a round took %.2f s of CPU in %.2f s: more than one thread", cpu, t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(csv_write_error_names_the_file),
		cmocka_unit_test(layers_fused_activation_counted_once),
		cmocka_unit_test(modes_take_turns_epoch_by_epoch),
		cmocka_unit_test(turns_time_the_gates_alone),
		cmocka_unit_test(training_set_in_huge_pages),
		cmocka_unit_test(gemm_products_on_one_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
