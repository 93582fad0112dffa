/* test_forge.c - forged checkpoints against the command line.
 *
 * A valid mid-epoch checkpoint of a tiny network is written with the
 * library; tests/forge.h then sets every field of it, one at a time, to
 * 0, -1, INT_MAX (LONG_MAX for 64-bit fields), NaN (its bit pattern for an
 * integer field) and a huge value, recomputes the CRC, and runs
 * `akkctl eval`, `akkctl inspect` and `akkctl train --resume` on each file.
 * Each child runs under a memory limit (RLIMIT_AS of 1 GB; under ASan,
 * whose shadow memory needs more address space, ASan's own 1 GB allocation
 * limit) and a time limit (SIGALRM after 60 s). Every run must end with
 * exit status 1 or 2 and a message starting "akkctl: ", or with 0 where
 * the forged value is legitimately valid (see valid_value); never with a
 * signal. The counts are printed with AKK_TEST_VERBOSE set. Also: resuming
 * at another batch size continues or refuses (it used to hang), and
 * schedule.max_loss stops a diverging run with exit 1. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "forge.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "model/reference.h"
#include "config/spec.h"

#define NTRAIN 96
#define NVAL 32
#define BATCH 16	/* 6 batches per epoch */
#define CHILD_SECONDS 60
#define CHILD_BYTES (1024L << 20)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static char g_dir[512], g_cfg[600], g_base[600], g_ck[600], g_out[600];
static char g_err[1 << 16];

static const char *cfg_text =
	"seed: 3\n"
	"data:\n"
	"  train: {images: train-images, labels: train-labels}\n"
	"  validation: {images: val-images, labels: val-labels}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	/* room to forge a huge width in place */
	"    - layers: [{dense: {units: 8        , bias: false}}, batchnorm, tanh]\n"
	"    - layers: [{dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\n"
	"output: {dir: out}\n";

/* Run akkctl with argv (NULL-terminated, without the program) under the
 * limits; stderr into g_err. Returns the exit status, 128 + signal when
 * killed. */
static int run_limited(const char *const *args)
{
	const char *argv[16];
	char errpath[700];
	int n = 0, status, fd;
	pid_t pid;

	argv[n++] = tu_akkctl();
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	snprintf(errpath, sizeof(errpath), "%s/child.err", g_dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { CHILD_BYTES, CHILD_BYTES };
		int devnull = open("/dev/null", O_RDWR);
		int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (devnull < 0 || err < 0)
			_exit(126);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(err, 2);
		if (UNDER_ASAN) {
			const char *old = getenv("ASAN_OPTIONS");
			char opts[1024];
			snprintf(opts, sizeof(opts), "%s%smax_allocation_size_mb=1024:allocator_may_return_null=1",
				 old ? old : "", old && *old ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
		} else {
			setrlimit(RLIMIT_AS, &rl);
		}
		alarm(CHILD_SECONDS);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		assert_int_equal(errno, EINTR);
	fd = open(errpath, O_RDONLY);
	g_err[0] = '\0';
	if (fd >= 0) {
		ssize_t k = read(fd, g_err, sizeof(g_err) - 1);
		g_err[k > 0 ? k : 0] = '\0';
		close(fd);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	       WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* The data, the config and a valid mid-epoch checkpoint of it: epoch 2,
 * batch 3 of 6, 8 steps done (a reference trainer's gates after 8
 * steps), with running sums and metrics. */
static int group_setup(void **state)
{
	struct akk_dataset tr, va;
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_reference ref;
	struct akk_err e = { 0 };
	const char *sets[] = { "schedule.epochs=2" };
	const struct akk_gate *gp[2];
	FILE *f;

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	tu_dataset(&tr, NTRAIN, 8, 4, 1);
	tu_dataset(&va, NVAL, 8, 4, 2);
	tu_write_idx(tu_path(g_dir, "train-images"), &tr, 1);
	tu_write_idx(tu_path(g_dir, "train-labels"), &tr, 0);
	tu_write_idx(tu_path(g_dir, "val-images"), &va, 1);
	tu_write_idx(tu_path(g_dir, "val-labels"), &va, 0);
	snprintf(g_cfg, sizeof(g_cfg), "%s", tu_path(g_dir, "forge.yaml"));
	snprintf(g_base, sizeof(g_base), "%s", tu_path(g_dir, "base.bin"));
	snprintf(g_ck, sizeof(g_ck), "%s", tu_path(g_dir, "forged.bin"));
	snprintf(g_out, sizeof(g_out), "%s", tu_path(g_dir, "out"));
	f = fopen(g_cfg, "w");
	if (!f || fputs(cfg_text, f) < 0 || fclose(f))
		return -1;
	if (akk_spec_load(&s, g_cfg, sets, 1, &e) || akk_model_plan(&m, &s, &e) ||
	    akk_reference_init(&ref, &m, &tr, &e))
		goto fail;
	akk_blas_threads(1);
	for (int i = 0; i < 8; i++)
		if (akk_reference_step(&ref, NULL, NULL, &e))
			goto fail;
	for (int g = 0; g < m.ngates; g++)
		gp[g] = &ref.gates[g];
	{
		struct akk_ckpt_source src = {
			.spec = &s, .base_dir = g_dir, .mode = AKK_MODE_FLIPFLOP,
			.gates = gp, .ngates = m.ngates,
			.pos = { 1, 2, 8, 2.5, 10, 32, 0.5 },
			.metrics = { 1, 1.25, 0.5, 1.125, 0.5625, 0.5625 },
		};
		if (akk_checkpoint_write(g_base, &src, &e))
			goto fail;
	}
	akk_reference_release(&ref);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_dataset_release(&tr);
	akk_dataset_release(&va);
	return 0;
fail:
	fprintf(stderr, "setup: %s\n", e.msg);
	return -1;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

enum { V_ZERO, V_MINUS1, V_MAX, V_NAN, V_HUGE, NVALUES };
static const char *const value_names[NVALUES] = { "0", "-1", "INT_MAX", "NaN", "huge" };

static void set_value(struct forge *fg, const struct forge_field *f, int v)
{
	switch (f->type) {
	case FORGE_U32: {
		static const uint64_t u[NVALUES] = { 0, 0xffffffffu, 0x7fffffffu,
						     0x7fc00000u, 1000000000u };
		forge_set_u(fg, f, u[v]);
		break;
	}
	case FORGE_U64: {
		static const uint64_t u[NVALUES] = { 0, ~0ull, 0x7fffffffffffffffull,
						     0x7ff8000000000000ull,
						     1000000000000000ull };
		forge_set_u(fg, f, u[v]);
		break;
	}
	case FORGE_F64: {
		const double d[NVALUES] = { 0, -1, 9223372036854775807.0, NAN, 1e300 };
		forge_set_f(fg, f, d[v]);
		break;
	}
	case FORGE_F32: {
		const double d[NVALUES] = { 0, -1, 2147483647.0, NAN, 3e38 };
		forge_set_f(fg, f, d[v]);
		break;
	}
	}
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && !strcmp(s + n - k, tail);
}

/* Whether a forged value is legitimately valid, so that exit 0 is
 * right. Everything else must be refused. */
static int valid_value(const char *field, enum forge_type t, int v)
{
	/* the dropout generator's state: any 64 bits (all four zero would
	 * be degenerate, which one edit cannot make) */
	if (strstr(field, ".rng"))
		return 1;
	/* weights, biases, running means, first moments: any finite float
	 * (huge ones overflow the outputs, which eval and training refuse
	 * with exit 1) */
	if (t == FORGE_F32 && v != V_NAN &&
	    (v != V_MINUS1 || !(ends_with(field, "running_var.value0") ||
				ends_with(field, "running_var.valueN") ||
				ends_with(field, "optimizer.adam.valueN"))))
		return 1;
	/* running sums and metrics that may be 0 or any finite loss */
	if (v == V_ZERO && (!strcmp(field, "position.loss_sum") ||
			    !strcmp(field, "position.seconds") ||
			    !strncmp(field, "metrics.", 8) ||
			    !strcmp(field, "mode") || !strcmp(field, "position.correct")))
		return 1;
	/* the lowest validation loss so far: -1 (none) or any finite loss
	 * (the data section) */
	if (!strcmp(field, "data.best_val_loss") && v != V_NAN)
		return 1;
	/* losses: any finite value, a diverging run's too */
	if ((v == V_MAX || v == V_HUGE) &&
	    (!strcmp(field, "metrics.train_loss") || !strcmp(field, "metrics.val_loss") ||
	     !strcmp(field, "position.loss_sum")))
		return 1;
	return 0;
}

/* Every field x every value x eval, inspect, train --resume. */
static void forged_fields_every_command(void **unused)
{
	struct forge base, fg;
	int counts[3][3] = { { 0 } };	/* command x {exit 0, 1, 2} */
	int runs = 0, fields;
	const char *cmds[3] = { "eval", "inspect", "train" };

	(void)unused;
	assert_int_equal(forge_load(&base, g_base), 0);
	fields = base.n;
	assert_true(fields > 60);
	/* the unforged file passes everywhere */
	{
		const char *a[][12] = {
			{ "eval", g_base, NULL },
			{ "inspect", g_base, NULL },
			{ "train", g_cfg, "--quiet", "--resume", g_base, "--out", g_out, "--force", NULL },
		};
		for (int c = 0; c < 3; c++)
			if (run_limited(a[c]))
				fail_msg("unforged %s: %s", cmds[c], g_err);
	}
	for (int i = 0; i < fields; i++) {
		const struct forge_field *f = &base.f[i];
		for (int v = 0; v < NVALUES; v++) {
			uint64_t before;
			int same;

			assert_int_equal(forge_load(&fg, g_base), 0);
			before = forge_get_u(&fg, &fg.f[i]);
			set_value(&fg, &fg.f[i], v);
			same = forge_get_u(&fg, &fg.f[i]) == before;
			assert_int_equal(forge_save(&fg, g_ck), 0);
			forge_release(&fg);
			for (int c = 0; c < 3; c++) {
				const char *a[][12] = {
					{ "eval", g_ck, NULL },
					{ "inspect", g_ck, NULL },
					{ "train", g_cfg, "--quiet", "--resume", g_ck, "--out", g_out, "--force", NULL },
				};
				int rc = run_limited(a[c]);
				runs++;
				if (rc < 0 || rc > 2)
					fail_msg("%s = %s: %s: exit %d\n%s", f->name,
						 value_names[v], cmds[c], rc, g_err);
				if (rc >= 0 && rc <= 2)
					counts[c][rc]++;
				if (rc == 0 && !same && !valid_value(f->name, f->type, v))
					fail_msg("%s = %s: %s accepted it", f->name,
						 value_names[v], cmds[c]);
				if (getenv("AKK_TEST_VERBOSE") && atoi(getenv("AKK_TEST_VERBOSE")) > 1)
					fprintf(stderr, "  %s = %s: %s exit %d%s\n", f->name,
						value_names[v], cmds[c], rc,
						same ? " (unchanged)" : "");
				if (rc && !tu_check_prefix(g_err, "akkctl: "))
					fail_msg("%s = %s: %s: exit %d without a message:\n%s",
						 f->name, value_names[v], cmds[c], rc, g_err);
				if (rc == 2 && c < 2 && !strstr(g_err, g_ck) &&
				    !strstr(g_err, "forge.yaml"))
					fail_msg("%s = %s: %s: the message names no file:\n%s",
						 f->name, value_names[v], cmds[c], g_err);
			}
		}
	}
	forge_release(&base);
	/* forged values that are legitimate (an RNG word, a finite weight)
	 * must get through every command: otherwise the command refused
	 * for another reason (say, a run directory it would not reuse) and
	 * the fields were never checked at all */
	for (int c = 0; c < 3; c++)
		if (!counts[c][0])
			fail_msg("%s accepted no forged value: did it read the checkpoint?",
				 cmds[c]);
	if (getenv("AKK_TEST_VERBOSE")) {
		fprintf(stderr, "  forged: %d fields x %d values x 3 commands = %d runs\n",
			fields, NVALUES, runs);
		for (int c = 0; c < 3; c++)
			fprintf(stderr, "  %-8s exit 0: %d, exit 1: %d, exit 2: %d\n",
				cmds[c], counts[c][0], counts[c][1], counts[c][2]);
	}
}

/* Resuming the mid-epoch checkpoint (32 samples into epoch 2 at batch
 * size 16) at batch size 32 goes on from sample 32; at 24, which does not
 * divide 32, it refuses with exit 2. Both used to wait forever. */
static void resume_at_another_batch_size(void **unused)
{
	const char *ok[] = { "train", g_cfg, "--quiet", "--resume", g_base, "--out", g_out,
			     "--force", "--set", "schedule.batch_size=32", NULL };
	const char *no[] = { "train", g_cfg, "--quiet", "--resume", g_base, "--out", g_out,
			     "--force", "--set", "schedule.batch_size=24", NULL };
	int rc;

	(void)unused;
	rc = run_limited(ok);
	if (rc)
		fail_msg("batch size 32: exit %d\n%s", rc, g_err);
	rc = run_limited(no);
	if (rc != 2)
		fail_msg("batch size 24: exit %d, expected 2\n%s", rc, g_err);
	tu_assert_contains(g_err, "akkctl: ");
	tu_assert_contains(g_err, g_base);
	tu_assert_contains(g_err, "cannot resume mid-epoch with schedule.batch_size 24: the checkpoint stopped after 32 samples of epoch 2 at batch size 16");
}

/* schedule.max_loss: a run whose loss is above it stops with exit 1 and
 * says so; eval refuses weights whose outputs overflow, with exit 2 and
 * the checkpoint's name. */
static void divergence_guard_and_overflowing_weights(void **unused)
{
	const char *guard[] = { "train", g_cfg, "--quiet", "--out", g_out, "--force",
				"--set", "schedule.max_loss=0.5", NULL };
	const char *bad[] = { "train", g_cfg, "--quiet", "--out", g_out, "--force",
			      "--set", "schedule.max_loss=-1", NULL };
	const char *eval[] = { "eval", g_ck, NULL };
	struct forge fg;
	int rc;

	(void)unused;
	rc = run_limited(guard);
	if (rc != 1)
		fail_msg("max_loss: exit %d, expected 1\n%s", rc, g_err);
	tu_assert_contains(g_err, "akkctl: training loss ");
	tu_assert_contains(g_err, "at epoch 1, batch 1 (step 1) is above schedule.max_loss 0.5: the run diverged");
	rc = run_limited(bad);
	if (rc != 2)
		fail_msg("max_loss -1: exit %d, expected 2\n%s", rc, g_err);
	tu_assert_contains(g_err, "max_loss");
	/* every weight of the last gate 3e38: finite, but the logits
	 * overflow */
	assert_int_equal(forge_load(&fg, g_base), 0);
	{
		const struct forge_field *w = forge_find(&fg, "g2.l1.dense.weight.value0");
		assert_non_null(w);
		for (int i = 0; i < 4 * 8; i++) {
			struct forge_field x = *w;
			x.off += 4 * i;
			forge_set_f(&fg, &x, 3e38);
		}
	}
	assert_int_equal(forge_save(&fg, g_ck), 0);
	forge_release(&fg);
	/* exit 2 naming the checkpoint, as the man page says */
	rc = run_limited(eval);
	if (rc != 2)
		fail_msg("eval of overflowing weights: exit %d, expected 2\n%s", rc, g_err);
	{
		char want[1200];

		snprintf(want, sizeof(want), "akkctl: %s: non-finite output of gate 2 on sample ", g_ck);
		tu_assert_contains(g_err, want);
	}
}

/* The stored config forged, in place, to plan a network of 7.7 GB of
 * weights (a first layer 3 x 10^7 wide, under the spec's parameter
 * limit) around the file's tensors: eval and
 * inspect refuse it with exit 2 under the 1 GB limit, before allocating
 * it (eval used to allocate the network first). */
static void stored_config_of_a_huge_network(void **unused)
{
	const char *eval[] = { "eval", g_ck, NULL };
	const char *inspect[] = { "inspect", g_ck, NULL };
	struct forge fg;
	unsigned char *at;

	(void)unused;
	assert_int_equal(forge_load(&fg, g_base), 0);
	at = memmem(fg.p, fg.len, "units: 8        ,", 17);
	assert_non_null(at);
	memcpy(at, "units: 30000000 ,", 17);
	assert_int_equal(forge_save(&fg, g_ck), 0);
	forge_release(&fg);
	for (int c = 0; c < 2; c++) {
		int rc = run_limited(c ? inspect : eval);
		if (rc != 2)
			fail_msg("%s: exit %d, expected 2\n%s", c ? "inspect" : "eval", rc, g_err);
		tu_assert_contains(g_err, "akkctl: ");
		tu_assert_contains(g_err, g_ck);
		tu_assert_contains(g_err, "checkpoint does not match the network: 'g1.l1.dense.weight' has shape 8x64, the network needs 30000000x64");
	}
}

/* A mode number no schedule has: the message names every schedule by its
 * number, from the schedules' own names (a new schedule joins the list). */
static void unknown_mode_lists_every_schedule(void **unused)
{
	const char *inspect[] = { "inspect", g_ck, NULL };
	struct forge fg;
	int rc;

	(void)unused;
	assert_int_equal(forge_load(&fg, g_base), 0);
	assert_non_null(forge_find(&fg, "mode"));
	forge_set_u(&fg, forge_find(&fg, "mode"), 3);
	assert_int_equal(forge_save(&fg, g_ck), 0);
	forge_release(&fg);
	rc = run_limited(inspect);
	if (rc != 2)
		fail_msg("inspect of mode 3: exit %d, expected 2\n%s", rc, g_err);
	tu_assert_contains(g_err, "corrupt checkpoint: mode is 3 (0 flip-flop, 1 wheels or 2 pipeline)");
}

/* Reading is bounded by what the file holds: /dev/zero is refused at its
 * magic (eval used to read about 2 GB of it first). */
static void endless_device_refused_at_once(void **unused)
{
	const char *eval[] = { "eval", "/dev/zero", NULL };
	const char *inspect[] = { "inspect", "/dev/zero", NULL };

	(void)unused;
	for (int c = 0; c < 2; c++) {
		int rc = run_limited(c ? inspect : eval);
		if (rc != 2)
			fail_msg("%s: exit %d, expected 2\n%s", c ? "inspect" : "eval", rc, g_err);
		tu_assert_line(g_err, "akkctl: /dev/zero: not an akkctl checkpoint (bad magic)");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forged_fields_every_command),
		cmocka_unit_test(resume_at_another_batch_size),
		cmocka_unit_test(divergence_guard_and_overflowing_weights),
		cmocka_unit_test(stored_config_of_a_huge_network),
		cmocka_unit_test(endless_device_refused_at_once),
		cmocka_unit_test(unknown_mode_lists_every_schedule),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
