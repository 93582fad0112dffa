/* test_pipeline.c - the pipeline schedule (micro-batches in 1F1B order,
 * one optimizer step per batch) and gradient accumulation, against
 * flip-flop at the same (or the accumulated) batch size.
 *
 * Synthetic data only (8x8 class patterns); nothing depends on timing:
 * interrupts are raised from the sentinel's own progress callback. The
 * equality nets have no batchnorm and no dropout (batchnorm computes its
 * statistics per micro-batch, as GPipe does: a different function). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "model/model.h"
#include "runtime/run_internal.h"
#include "config/spec.h"
#include "io/checkpoint.h"
#include "runtime/world.h"

#define SIDE 8
#define CLASSES 4
#define NTRAIN 1000
#define TOL 1e-5

/* 1, 2 and 3 gates; the widths are the same network split differently */
static const char *const nets[] = {
	"    - layers: [{dense: 24}, relu, {dense: 16}, tanh, {dense: 4}]\n",
	"    - layers: [{dense: 24}, relu]\n"
	"    - layers: [{dense: 16}, tanh, {dense: 4}]\n",
	"    - layers: [{dense: 24}, relu]\n"
	"    - layers: [{dense: 16}, tanh]\n"
	"    - layers: [{dense: 4}]\n",
};

struct fixture {
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train, val;
};

static void setup(struct fixture *f, const char *gates, const char *optim,
		  const char *sched)
{
	char text[2048];
	struct akk_err e = { 0 };

	snprintf(text, sizeof(text),
		 "data: {train: {images: x, labels: y}}\n"
		 "network:\n"
		 "  input: [64]\n"
		 "  gates:\n%s"
		 "optimizer: %s\n"
		 "schedule: %s\n", gates, optim, sched);
	memset(f, 0, sizeof(*f));
	if (akk_spec_parse(&f->spec, text, strlen(text), "test.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&f->train, NTRAIN, SIDE, CLASSES, 7);
	tu_dataset(&f->val, 200, SIDE, CLASSES, 9);
}

static void teardown(struct fixture *f)
{
	akk_model_release(&f->model);
	akk_spec_release(&f->spec);
	akk_dataset_release(&f->train);
	akk_dataset_release(&f->val);
}

static int run(struct fixture *f, struct akk_run *r, struct akk_observer obs,
	       struct akk_position start, int epochs, struct akk_err *e)
{
	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = epochs,
		.blas_threads = 1, .obs = obs, .start = start,
	};

	if (akk_run_init(r, &f->model, &f->train, &f->val, &cfg, e))
		return -1;
	return akk_run_train(r, e);
}

static void train(struct fixture *f, struct akk_run *r, int epochs)
{
	struct akk_err e = { 0 };

	if (run(f, r, (struct akk_observer){ 0 }, (struct akk_position){ 0 },
		epochs, &e))
		fail_msg("run: %s", e.msg);
}

/* Both runs took the same steps and their weights agree within tol
 * relative, gate by gate: |a - b| / |b| over the gate's weight vector.
 * (Element by element, weights near zero differ by float rounding of the
 * summed chunk gradients, ~1e-7 absolute after 38 steps.) */
static void assert_close(const struct akk_run *a, const struct akk_run *b,
			 double tol, const char *what)
{
	for (int g = 0; g < a->model->ngates; g++) {
		const struct akk_gate *x = &a->gates[g].gate, *y = &b->gates[g].gate;
		double d2 = 0, n2 = 0, err;

		for (size_t i = 0; i < x->plan->nparams; i++) {
			double d = (double)x->params[i] - y->params[i];
			d2 += d * d;
			n2 += (double)y->params[i] * y->params[i];
		}
		err = sqrt(d2 / n2);
		if (x->step != y->step)
			fail_msg("%s: gate %d took %ld steps, not %ld", what,
				 g + 1, x->step, y->step);
		if (!(err <= tol))
			fail_msg("%s: gate %d's weights differ by %g relative",
				 what, g + 1, err);
	}
}

static void assert_same(const struct akk_run *a, const struct akk_run *b)
{
	for (int g = 0; g < a->model->ngates; g++) {
		const struct akk_gate *x = &a->gates[g].gate, *y = &b->gates[g].gate;
		size_t per = akk_optim_state_per_param(x->plan->optim->kind);

		assert_int_equal(x->step, y->step);
		assert_memory_equal(x->params, y->params, x->plan->nparams * sizeof(float));
		assert_memory_equal(x->opt, y->opt, x->plan->nparams * per * sizeof(float));
	}
}

/* Pipeline with M micro-batches equals flip-flop at the same batch size,
 * for 1, 2 and 3 gates and M = 1, 2, 4, 7; batch size 27, which 2, 4
 * and 7 do not divide, and whose epoch ends in a batch of one sample
 * (fewer samples than micro-batches). One epoch: 38 steps. */
static void pipeline_equals_flipflop(void **unused)
{
	static const int Ms[] = { 1, 2, 4, 7 };
	static const char *const optims[] = {
		"{type: momentum, lr: 0.05}",
		"{type: adam, lr: 0.003}",
	};

	(void)unused;
	akk_blas_threads(1);
	for (int o = 0; o < 2; o++)
		for (int n = 0; n < 3; n++) {
			struct fixture ff;
			struct akk_run ref;

			setup(&ff, nets[n], optims[o],
			      "{mode: flip-flop, epochs: 1, batch_size: 27}");
			train(&ff, &ref, 1);
			assert_int_equal(ref.gates[0].gate.step, 38);
			for (int k = 0; k < 4; k++) {
				struct fixture fp;
				struct akk_run r;
				char sched[128], what[128];

				snprintf(sched, sizeof(sched),
					 "{mode: pipeline, micro_batches: %d, epochs: 1, batch_size: 27}",
					 Ms[k]);
				snprintf(what, sizeof(what), "%s, %d gates, M=%d",
					 optims[o], n + 1, Ms[k]);
				setup(&fp, nets[n], optims[o], sched);
				train(&fp, &r, 1);
				assert_int_equal(r.sched.micro, Ms[k]);
				assert_true(r.sched.K <= n + 1);	/* the 1F1B bound */
				for (int g = 0; g <= n; g++)
					assert_true(r.gates[g].forwards ==
						    r.gates[g].backwards);
				/* every chunk went through: 37 batches of 27
				 * in M chunks, then one of 1 sample */
				assert_int_equal(r.gates[0].forwards, 37L * Ms[k] + 1);
				assert_close(&r, &ref, TOL, what);
				akk_run_release(&r);
				teardown(&fp);
			}
			akk_run_release(&ref);
			teardown(&ff);
		}
}

/* schedule.accumulate: N flip-flop batches of 20 step once, like one
 * flip-flop batch of 20 * N (the epoch's last group is shorter: 1000
 * samples are 50 batches of 20, 17 groups of 3, the last of 2). The
 * pipeline accumulates the same way. */
static void accumulate_equals_bigger_batch(void **unused)
{
	static const char *const modes[] = {
		"{mode: flip-flop, accumulate: 3, epochs: 2, batch_size: 20}",
		"{mode: pipeline, micro_batches: 3, accumulate: 3, epochs: 2, batch_size: 20}",
	};
	struct fixture ff;
	struct akk_run ref;

	(void)unused;
	akk_blas_threads(1);
	setup(&ff, nets[1], "{type: momentum, lr: 0.05, schedule: {type: cosine}}",
	      "{mode: flip-flop, epochs: 2, batch_size: 60}");
	train(&ff, &ref, 2);
	assert_int_equal(ref.gates[0].gate.step, 2 * 17);
	for (int k = 0; k < 2; k++) {
		struct fixture f;
		struct akk_run r;

		setup(&f, nets[1], "{type: momentum, lr: 0.05, schedule: {type: cosine}}",
		      modes[k]);
		train(&f, &r, 2);
		assert_close(&r, &ref, TOL, modes[k]);
		/* the lr schedule counts optimizer steps, not batches */
		assert_true(fabsf(r.gates[0].gate.last_lr - ref.gates[0].gate.last_lr) <=
			    1e-7f * fabsf(ref.gates[0].gate.last_lr) + 1e-12f);
		akk_run_release(&r);
		teardown(&f);
	}
	akk_run_release(&ref);
	teardown(&ff);
}

static int record_acc(void *ctx, struct akk_run *r,
		      const struct akk_epoch_report *rep, struct akk_err *e)
{
	double *acc = ctx;

	(void)r;
	(void)e;
	acc[rep->epoch - 1] = rep->val_acc;
	return 0;
}

/* batchnorm computes its statistics per micro-batch (GPipe): not equal
 * to flip-flop, but it trains. */
static void batchnorm_trains(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	double acc[3] = { 0 };

	(void)unused;
	setup(&f, "    - layers: [{dense: 24}, batchnorm, relu]\n"
		  "    - layers: [{dense: 4}]\n",
	      "{type: adam, lr: 0.01}",
	      "{mode: pipeline, micro_batches: 4, epochs: 3, batch_size: 32}");
	if (run(&f, &r, (struct akk_observer){ .epoch_end = record_acc, .ctx = acc },
		(struct akk_position){ 0 }, 3, &e))
		fail_msg("%s", e.msg);
	/* the class patterns are easy: far above chance (25%) */
	assert_int_equal(r.epochs_done, 3);
	if (acc[2] < 0.9)
		fail_msg("validation accuracy %g after 3 epochs", acc[2]);
	akk_run_release(&r);
	teardown(&f);
}

struct stop_at {
	struct akk_run *r;
	int epoch;
	long batch;
};

static void interrupt_at(void *ctx, const struct akk_progress *p)
{
	struct stop_at *s = ctx;

	if (p->epoch == s->epoch && p->batch == s->batch)
		akk_run_interrupt(s->r);
}

/* Ctrl-C in the middle of a step group: the run finishes the group (the
 * gradients are zero at every stop), and a run resumed from where it
 * stopped with the gates' state ends bit for bit where an uninterrupted
 * run ends. */
static void interrupt_and_resume_bit_for_bit(void **unused)
{
	static const char *const scheds[] = {
		"{mode: pipeline, micro_batches: 4, epochs: 2, batch_size: 27}",
		"{mode: pipeline, micro_batches: 3, accumulate: 4, epochs: 2, batch_size: 20}",
		"{mode: flip-flop, accumulate: 4, epochs: 2, batch_size: 20}",
	};

	(void)unused;
	akk_blas_threads(1);
	for (int k = 0; k < 3; k++) {
		struct fixture f;
		struct akk_run full, cut, rest;
		struct akk_err e = { 0 };
		struct stop_at at = { &cut, 1, 10 };
		int acc;

		setup(&f, nets[2], "{type: adam, lr: 0.003}", scheds[k]);
		acc = f.spec.sched.accumulate;
		train(&f, &full, 2);
		if (run(&f, &cut, (struct akk_observer){ .progress = interrupt_at, .ctx = &at },
			(struct akk_position){ 0 }, 2, &e))
			fail_msg("%s", e.msg);
		assert_true(atomic_load(&cut.interrupted));
		assert_int_equal(cut.pos.epoch, 0);
		/* stopped at a group boundary at or after batch 10 */
		assert_true(cut.pos.index >= 10);
		assert_int_equal(cut.pos.index % acc, 0);
		assert_true(cut.pos.index < 10 + acc);
		struct akk_run_config cfg = {
			.mode = f.spec.sched.mode, .epochs = 2,
			.blas_threads = 1, .start = cut.pos,
		};
		/* through a checkpoint, whose position counts optimizer
		 * steps (it refused an accumulating run's as corrupt) */
		struct akk_ckpt_metrics met = { 0 };
		struct akk_checkpoint ck;
		const char *path = tu_path(tu_tmpdir(), "cut.bin");
		assert_int_equal(cut.pos.id, cut.gates[0].gate.step);
		if (akk_run_write_checkpoint(&cut, path, &f.spec, ".", &met, &e))
			fail_msg("%s", e.msg);
		if (akk_checkpoint_read(&ck, path, &e))
			fail_msg("%s: %s", scheds[k], e.msg);
		cfg.start = ck.pos;
		assert_int_equal(akk_run_init(&rest, &f.model, &f.train, &f.val, &cfg, &e), 0);
		if (akk_run_restore(&rest, &ck, path, &e))
			fail_msg("%s", e.msg);
		akk_checkpoint_release(&ck);
		if (akk_run_train(&rest, &e))
			fail_msg("%s", e.msg);
		assert_false(atomic_load(&rest.interrupted));
		assert_same(&rest, &full);
		assert_int_equal(rest.pos.id, full.pos.id);
		akk_run_release(&rest);
		akk_run_release(&cut);
		akk_run_release(&full);
		teardown(&f);
	}
}

/* With more micro-batches, the tapes a gate holds stay bounded by the
 * gates (1F1B), never by M, and each is the size of a micro-batch: the
 * activation memory is gates x micro-batch. */
static void tapes_bounded_by_gates(void **unused)
{
	struct fixture f;
	struct akk_run r;

	(void)unused;
	setup(&f, nets[1], "{type: momentum, lr: 0.05}",
	      "{mode: pipeline, micro_batches: 16, epochs: 1, batch_size: 32}");
	train(&f, &r, 1);
	assert_int_equal(r.sched.K, 2);
	for (int g = 0; g < 2; g++) {
		assert_int_equal(r.gates[g].gate.ntapes, 2);
		/* and each holds one micro-batch, not the batch */
		assert_int_equal(r.gates[g].gate.tape_batch, 2);
	}
	akk_run_release(&r);
	teardown(&f);
}

/* The run builds every gate as akk_schedule_gate_config says, which is
 * what `akkctl check` reports the memory of: wheels' K tapes with the
 * weights stashed where a gate needs them (not the first gate, whose only
 * layer with weights is the network's first), the pipeline's tapes of a
 * micro-batch. */
static void gates_built_as_check_counts(void **unused)
{
	static const char *const scheds[] = {
		"{mode: wheels, concurrency: {train: 3, validation: 2}, weight_stashing: true, epochs: 1, batch_size: 32}",
		"{mode: pipeline, micro_batches: 4, epochs: 1, batch_size: 30}",
	};

	(void)unused;
	for (int k = 0; k < 2; k++) {
		struct fixture f;
		struct akk_run r;
		struct akk_err e = { 0 };
		struct akk_run_config cfg = { .epochs = 1, .blas_threads = 1 };

		setup(&f, nets[2], "{type: momentum, lr: 0.05}", scheds[k]);
		cfg.mode = f.spec.sched.mode;
		if (akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e))
			fail_msg("run: %s", e.msg);
		for (int g = 0; g < 3; g++) {
			const struct akk_gate *gt = &r.gates[g].gate;
			struct akk_gate_config gc = akk_schedule_gate_config(
				&r.sched, &f.model.gates[g], f.spec.sched.batch_size);
			assert_int_equal(gt->ntapes, gc.ntapes);
			assert_int_equal(gt->nevals, gc.nevals);
			assert_int_equal(gt->tape_batch, gc.tape_batch);
			assert_int_equal(gt->wbuf != NULL, gc.stash);
			assert_int_equal(gc.stash, k == 0 && g > 0);
		}
		assert_int_equal(r.gates[0].gate.ntapes, 3);	/* K: 3 credits, 3 gates */
		assert_int_equal(r.gates[0].gate.tape_batch, k == 0 ? 32 : 8);
		akk_run_release(&r);
		teardown(&f);
	}
}

static char g_out[16384], g_err[4096];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* akkctl check prints the pipeline's plan and its activation memory, and
 * names the mode (it printed "(null)"). */
static void check_prints_the_plan(void **unused)
{
	static const char *cfg =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 24}, relu]\n"
		"    - layers: [{dense: 16}, tanh, {dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.05}\n"
		"schedule: {mode: pipeline, micro_batches: 7, batch_size: 27, threads: 1}\n";
	const char *dir = tu_tmpdir(), *path = tu_path(dir, "pipe.yaml");

	(void)unused;
	assert_string_equal(akk_mode_name(AKK_MODE_PIPELINE), "pipeline");
	assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
	/* check looks for the data files: empty ones do */
	assert_int_equal(tu_write_file(tu_path(dir, "x"), "", 0), 0);
	assert_int_equal(tu_write_file(tu_path(dir, "y"), "", 0), 0);
	assert_int_equal(ak("check", path, NULL), 0);
	/* tapes of 4 samples (27 in 7 micro-batches), 2 per gate, each its
	 * activations and input gradient: gate 1 (24 + 24 + 64) * 4 * 2
	 * floats, gate 2 (16 + 16 + 4 + 24) * 4 * 2: 5504 bytes */
	if (!tu_check_line(g_out, "pipeline: batch 27 in 7 micro-batches of up to 4 samples, 2 in flight (1F1B, bounded by the gates), one optimizer step per 1 batch after the flush: 5.4 KB of training activations"))
		fail_msg("%s", g_out);
	if (!tu_check_prefix(strstr(g_out, "schedule pipeline"), "schedule pipeline: validation after the epoch, free gate states"))
		fail_msg("%s", g_out);
	assert_int_equal(ak("check", path, "--set", "schedule.mode=flip-flop",
			    "--set", "schedule.accumulate=3", NULL), 0);
	if (!tu_check_line(g_out, "accumulation: one optimizer step per 3 batches of 27 (81 samples)"))
		fail_msg("%s", g_out);
}

/* Under mpirun the gates of a pipeline run on two ranks (contiguous: gates
 * 1 and 2 on rank 0, gate 3 on rank 1) and end bit for bit where one
 * process ends. Skipped without Open MPI; `timeout` is the deadline. */
static void mpi_placement_bit_for_bit(void **unused)
{
	const char *d = tu_tmpdir();
	const char *probe[] = { "mpirun", "--version", NULL };
	struct akk_checkpoint x, y;
	struct akk_err e = { 0 };
	char cfg[600], err[8192], a[700], b[700];
	char text[1024];
	int n;

	(void)unused;
#if defined(__SANITIZE_THREAD__)
	/* Open MPI's own locks trip ThreadSanitizer (test_mpi is not in
	 * TSAN_TESTS for that); the actors' threads are checked above */
	skip();
#endif
	if (!akk_world_available() || tu_run(probe, NULL, 0, NULL, 0) != 0)
		skip();
	tu_write_set(d, "mpi", 300, SIDE, CLASSES, 3);
	n = snprintf(text, sizeof(text),
		     "data: {train: {images: mpi-images, labels: mpi-labels}}\n"
		     "network:\n"
		     "  input: [64]\n"
		     "  placement: contiguous\n"
		     "  gates:\n%s"
		     "optimizer: {type: adam, lr: 0.003}\n"
		     "schedule: {mode: pipeline, micro_batches: 3, accumulate: 2, epochs: 2, batch_size: 25, threads: 1}\n",
		     nets[2]);
	snprintf(cfg, sizeof(cfg), "%s/mpi.yaml", d);
	assert_int_equal(tu_write_file(cfg, text, (size_t)n), 0);
	snprintf(a, sizeof(a), "%s/mpi-one", d);
	snprintf(b, sizeof(b), "%s/mpi-np2", d);
	{
		const char *one[] = { tu_akkctl(), "train", cfg, "--out", a, "--quiet", NULL };
		/* Open MPI keeps memory until exit in components that
		 * LeakSanitizer cannot name (as in test_mpi): the ranks run
		 * under ASan without the leak check */
		const char *two[] = { "timeout", "120", "env", "ASAN_OPTIONS=detect_leaks=0",
				      "mpirun", "--oversubscribe",
				      "--allow-run-as-root", "-np", "2", tu_akkctl(),
				      "train", cfg, "--out", b, "--quiet", NULL };
		if (tu_run(one, NULL, 0, err, sizeof(err)))
			fail_msg("one process: %s", err);
		if (tu_run(two, NULL, 0, err, sizeof(err)))
			fail_msg("mpirun -np 2: %s", err);
	}
	snprintf(a + strlen(a), sizeof(a) - strlen(a), "/last.bin");
	snprintf(b + strlen(b), sizeof(b) - strlen(b), "/last.bin");
	if (akk_checkpoint_read(&x, a, &e) || akk_checkpoint_read(&y, b, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(x.pos.id, 2 * 6);	/* 12 batches an epoch, 6 steps */
	assert_int_equal(x.pos.id, y.pos.id);
	for (int g = 0; g < x.ngates; g++) {
		assert_int_equal(x.gates[g].step, y.gates[g].step);
		for (int t = 0; t < x.gates[g].ntensors; t++)
			assert_memory_equal(x.gates[g].tensors[t].data, y.gates[g].tensors[t].data,
					    x.gates[g].tensors[t].count * sizeof(float));
	}
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pipeline_equals_flipflop),
		cmocka_unit_test(accumulate_equals_bigger_batch),
		cmocka_unit_test(batchnorm_trains),
		cmocka_unit_test(interrupt_and_resume_bit_for_bit),
		cmocka_unit_test(tapes_bounded_by_gates),
		cmocka_unit_test(gates_built_as_check_counts),
		cmocka_unit_test(check_prints_the_plan),
		cmocka_unit_test(mpi_placement_bit_for_bit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
