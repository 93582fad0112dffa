/* test_runtime.c - the actor schedules against the sequential reference.
 *
 * Synthetic data only (learnable class patterns in 8x8 images), so the tests
 * need no download. Nothing here depends on timing: interrupts are raised
 * from the sentinel's own progress callback. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "model/model.h"
#include "runtime/provider.h"
#include "model/reference.h"
#include "runtime/run_internal.h"
#include "config/spec.h"
#include "data/text.h"

#define SIDE 8
#define CLASSES 4

static const char *net_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	"    - layers: [{dense: 24}, relu, {dropout: 0.1}]\n"
	"    - layers: [{dense: 16}, batchnorm, tanh]\n"
	"    - layers: [{dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, concurrency: {train: %d, validation: 2}, weight_stashing: %s}\n";

struct fixture {
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train, val;
};

static void setup_net(struct fixture *f, const char *mode, int epochs, int K,
		      int stash, const char *extra)
{
	char text[2048];
	struct akk_err e = { 0 };
	int n = snprintf(text, sizeof(text), net_yaml, mode, epochs, K,
			 stash ? "true" : "false");

	if (extra)
		snprintf(text + n, sizeof(text) - n, "%s", extra);
	memset(f, 0, sizeof(*f));
	if (akk_spec_parse(&f->spec, text, strlen(text), "test.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&f->train, 1000, SIDE, CLASSES, 7);	/* 63 batches, the last of 8 */
	tu_dataset(&f->val, 200, SIDE, CLASSES, 9);
}

static void teardown_net(struct fixture *f)
{
	akk_model_release(&f->model);
	akk_spec_release(&f->spec);
	akk_dataset_release(&f->train);
	akk_dataset_release(&f->val);
}

static int run_actors(struct fixture *f, struct akk_run *r, struct akk_observer obs,
		      struct akk_err *e)
{
	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = f->spec.sched.epochs,
		.blas_threads = 1, .obs = obs,
	};

	if (akk_run_init(r, &f->model, &f->train, &f->val, &cfg, e))
		return -1;
	return akk_run_train(r, e);
}

static void assert_same_params(const struct akk_gate *a, const struct akk_gate *b)
{
	size_t n = a->plan->nparams, ns = a->plan->nstate;

	assert_int_equal(a->step, b->step);
	assert_memory_equal(a->params, b->params, n * sizeof(float));
	if (ns)
		assert_memory_equal(a->state, b->state, ns * sizeof(float));
}

/* Flip-flop is bit-for-bit the sequential reference: 5 epochs, 315 steps. */
static void flipflop_equals_reference(void **unused)
{
	struct fixture f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };

	(void)unused;
	setup_net(&f, "flip-flop", 5, 1, 0, NULL);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 5 * 63; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	assert_int_equal(run_actors(&f, &r, (struct akk_observer){ 0 }, &e), 0);
	assert_null(r.pool);	/* one compute thread: every product alone */
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 315);
		for (int i = 0; i < f.model.gates[g].nlayers; i++)
			assert_null(r.gates[g].gate.layers[i].pool);
		assert_same_params(&r.gates[g].gate, &ref.gates[g]);
	}
	akk_run_release(&r);
	akk_reference_release(&ref);
	teardown_net(&f);
}

/* A language model's network: token ids [16], an lstm returning every
 * step in gate 1, a dense layer per step in gate 2 (the loss gradient of
 * every step crosses the gates): a label per step. The text: 1200 bytes of
 * a pattern with noise, windows of 16 every 5 (237 of them). */
static const char *seq_yaml =
	"data: {format: text, train: {file: x}}\n"
	"network:\n"
	"  input: [16]\n"
	"  gates:\n"
	"    - layers: [{embedding: {vocab: 7, units: 6}}, "
	"{lstm: {units: 10, return_sequences: true}}]\n"
	"    - layers: [{dense: 7}]\n"
	"optimizer: {type: adam, lr: 0.01, clip_norm: 1.0}\n"
	"schedule: %s\n";

static void setup_seq(struct fixture *f, const char *sched)
{
	char text[1024];
	uint8_t bytes[1200];
	struct akk_err e = { 0 };
	const struct akk_text t = { 16, 5 };
	uint32_t r = 12345;

	snprintf(text, sizeof(text), seq_yaml, sched);
	memset(f, 0, sizeof(*f));
	if (akk_spec_parse(&f->spec, text, strlen(text), "seq.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("plan: %s", e.msg);
	for (int i = 0; i < 1200; i++) {
		r = r * 1103515245u + 12345u;
		bytes[i] = (uint8_t)("abcdefg"[(i % 5 + (r >> 28 == 0)) % 7]);
	}
	assert_int_equal(akk_text_windows(&f->train, bytes, 1000, &t, "x", &e), 0);
	assert_int_equal(akk_text_windows(&f->val, bytes + 1000, 200, &t, "x", &e), 0);
	assert_int_equal(f->train.n, 197);
}

/* An epoch_end observer keeping the last report. */
static int keep_report(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		       struct akk_err *e)
{
	(void)r;
	(void)e;
	*(struct akk_epoch_report *)ctx = *rep;
	return 0;
}

/* Flip-flop with a label per step is bit-for-bit the sequential
 * reference: 3 epochs of 13 batches (the last of 5 samples). */
static void per_step_flipflop_equals_reference(void **unused)
{
	struct fixture f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };
	double loss = 0, vloss, vacc;
	long correct = 0;
	struct akk_epoch_report last = { 0 };

	(void)unused;
	setup_seq(&f, "{mode: flip-flop, epochs: 3, batch_size: 16}");
	assert_int_equal(f.model.steps, 16);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 3 * 13; i++)
		assert_int_equal(akk_reference_step(&ref, i >= 2 * 13 ? &loss : NULL,
						    i >= 2 * 13 ? &correct : NULL, &e), 0);
	assert_int_equal(run_actors(&f, &r, (struct akk_observer){ .ctx = &last,
								   .epoch_end = keep_report }, &e), 0);
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 3 * 13);
		assert_same_params(&r.gates[g].gate, &ref.gates[g]);
	}
	/* the last epoch's mean loss over its samples' steps, and the
	 * accuracy over the steps, as the run reports them */
	assert_true(last.samples == 197);
	assert_float_equal(last.train_loss, loss / 197, 1e-12);
	assert_float_equal(last.train_acc, (double)correct / (197.0 * 16), 1e-12);
	assert_int_equal(akk_reference_evaluate(&ref, &f.val, &vloss, &vacc, &e), 0);
	assert_float_equal(last.val_loss, vloss, 1e-9);
	assert_float_equal(last.val_acc, vacc, 1e-12);
	assert_true(vacc > 0 && vacc < 1);
	akk_run_release(&r);
	akk_reference_release(&ref);
	teardown_net(&f);
}

/* The pipeline's micro-batches carry their share of the labels: 16 per
 * sample (27 samples in 4 chunks, the last batch of 8 samples). */
static void per_step_pipeline_equals_flipflop(void **unused)
{
	struct fixture a, b;
	struct akk_run ra, rb;
	struct akk_err e = { 0 };
	struct akk_epoch_report la = { 0 }, lb = { 0 };

	(void)unused;
	akk_blas_threads(1);
	setup_seq(&a, "{mode: flip-flop, epochs: 1, batch_size: 27}");
	setup_seq(&b, "{mode: pipeline, micro_batches: 4, epochs: 1, batch_size: 27}");
	assert_int_equal(run_actors(&a, &ra, (struct akk_observer){ .ctx = &la,
								     .epoch_end = keep_report }, &e), 0);
	assert_int_equal(run_actors(&b, &rb, (struct akk_observer){ .ctx = &lb,
								     .epoch_end = keep_report }, &e), 0);
	for (int g = 0; g < a.model.ngates; g++) {
		const struct akk_gate *x = &ra.gates[g].gate, *y = &rb.gates[g].gate;
		assert_int_equal(y->step, 8);
		assert_true(tu_max_rel_err(x->params, y->params, x->plan->nparams, 1e-3) < 1e-4);
	}
	assert_float_equal(la.train_loss, lb.train_loss, 1e-5);
	assert_float_equal(la.val_acc, lb.val_acc, 1e-12);
	assert_true(la.val_loss > 0);
	akk_run_release(&ra);
	akk_run_release(&rb);
	teardown_net(&a);
	teardown_net(&b);
}

/* A gate's large products split across a compute pool (two threads):
 * OpenBLAS computes the row blocks with other edge kernels, so the last
 * bits may differ from one thread's product, but a pooled run is still
 * reproducible bit for bit, and it stays within float rounding of the
 * reference. The widths make the products big enough to be split. */
static void pool_reproducible(void **unused)
{
	static const char *wide =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 1024}, relu]\n"
		"    - layers: [{dense: 512}, tanh, {dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 64}\n";
	struct fixture f;
	struct akk_reference ref;
	struct akk_run r, r2;
	struct akk_err e = { 0 };
	struct akk_run_config cfg = { .mode = AKK_MODE_FLIPFLOP, .epochs = 1,
				      .blas_threads = 2 };

	(void)unused;
	memset(&f, 0, sizeof(f));
	assert_int_equal(akk_spec_parse(&f.spec, wide, strlen(wide), "wide.yaml", ".",
					NULL, 0, &e), 0);
	assert_int_equal(akk_model_plan(&f.model, &f.spec, &e), 0);
	tu_dataset(&f.train, 1000, SIDE, CLASSES, 7);
	tu_dataset(&f.val, 200, SIDE, CLASSES, 9);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 16; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
	assert_non_null(r.pool);
	assert_int_equal(akk_run_train(&r, &e), 0);
	/* the gates lent the run's pool to their layers, whose products went
	 * to it (more than 2 of them a step are wide enough to split) */
	for (int g = 0; g < f.model.ngates; g++)
		for (int i = 0; i < f.model.gates[g].nlayers; i++)
			assert_ptr_equal(r.gates[g].gate.layers[i].pool, r.pool);
	assert_true(akk_pool_products(r.pool) >= 2 * 16);
	assert_int_equal(akk_run_init(&r2, &f.model, &f.train, &f.val, &cfg, &e), 0);
	assert_int_equal(akk_run_train(&r2, &e), 0);
	for (int g = 0; g < f.model.ngates; g++) {
		const struct akk_gate *a = &r.gates[g].gate, *b = &ref.gates[g];
		assert_same_params(a, &r2.gates[g].gate);
		/* 16 momentum steps from the same start: rounding stays small
		 * (Adam would magnify it where gradients are near zero) */
		assert_true(tu_max_rel_err(a->params, b->params, a->plan->nparams, 1e-3) < 1e-5);
	}
	akk_run_release(&r);
	akk_run_release(&r2);
	akk_reference_release(&ref);
	teardown_net(&f);
}

/* With automatic threads, a gate splits its products only over the
 * cores that the gates computing at once leave it: flip-flop's one busy
 * gate over every core, wheels' two busy gates over none on fewer than 4
 * cores (a part handed to the other gate's worker waits for that gate);
 * threads asked for are honoured. */
static void automatic_threads_split_only_spare_cores(void **unused)
{
	static const char *wide =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 1024}, relu]\n"
		"    - layers: [{dense: 512}, tanh, {dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.01}\n"
		"schedule: {mode: wheels, epochs: 1, batch_size: 64, concurrency: {train: 4}}\n";
	struct {
		enum akk_mode mode;
		int threads, pool;
	} cases[] = {
		{ AKK_MODE_FLIPFLOP, 0, akk_cores() >= 2 },
		{ AKK_MODE_WHEELS, 0, akk_cores() >= 4 },
		{ AKK_MODE_WHEELS, 2, 1 },
	};
	struct fixture f;
	struct akk_err e = { 0 };

	(void)unused;
	memset(&f, 0, sizeof(f));
	assert_int_equal(akk_spec_parse(&f.spec, wide, strlen(wide), "wide.yaml", ".",
					NULL, 0, &e), 0);
	assert_int_equal(akk_model_plan(&f.model, &f.spec, &e), 0);
	tu_dataset(&f.train, 256, SIDE, CLASSES, 7);
	tu_dataset(&f.val, 64, SIDE, CLASSES, 9);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct akk_run r;
		struct akk_run_config cfg = { .mode = cases[i].mode, .epochs = 1,
					      .blas_threads = cases[i].threads };

		assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
		if ((r.pool != NULL) != cases[i].pool)
			fail_msg("case %zu (%s, threads %d, %d cores): pool %s", i,
				 akk_mode_name(cases[i].mode), cases[i].threads, akk_cores(),
				 r.pool ? "made" : "not made");
		akk_run_release(&r);
	}
	teardown_net(&f);
}

/* Wheels with one training batch in flight equals flip-flop, even with
 * validation running concurrently. */
static void wheels_one_equals_flipflop(void **unused)
{
	struct fixture a, b;
	struct akk_run ra, rb;
	struct akk_err e = { 0 };
	struct akk_epoch_report la = { 0 }, lb = { 0 };

	(void)unused;
	setup_net(&a, "flip-flop", 3, 1, 0, NULL);
	setup_net(&b, "wheels", 3, 1, 1, NULL);
	assert_int_equal(run_actors(&a, &ra, (struct akk_observer){ .ctx = &la,
								     .epoch_end = keep_report }, &e), 0);
	assert_int_equal(run_actors(&b, &rb, (struct akk_observer){ .ctx = &lb,
								     .epoch_end = keep_report }, &e), 0);
	for (int g = 0; g < a.model.ngates; g++)
		assert_same_params(&ra.gates[g].gate, &rb.gates[g].gate);
	akk_run_release(&ra);
	akk_run_release(&rb);
	teardown_net(&a);
	teardown_net(&b);
}

struct reports {
	int n;
	long samples[16], val_samples[16];
	double loss[16], val_acc[16];
	long vmin[16], vmax[16];
	int finals;
	double final_acc;
};

static int collect(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		   struct akk_err *e)
{
	struct reports *c = ctx;

	(void)r;
	(void)e;
	if (!strcmp(rep->phase, "final")) {
		c->finals++;
		c->final_acc = rep->val_acc;
		return 0;
	}
	c->samples[c->n] = rep->samples;
	c->val_samples[c->n] = rep->val_samples;
	c->loss[c->n] = rep->train_loss;
	c->val_acc[c->n] = rep->val_acc;
	c->vmin[c->n] = rep->vmin;
	c->vmax[c->n] = rep->vmax;
	c->n++;
	return 0;
}

static void wheels_learns(int stash)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct reports c = { 0 };

	setup_net(&f, "wheels", 4, 4, stash, NULL);
	assert_int_equal(run_actors(&f, &r, (struct akk_observer){ &c, NULL, collect }, &e), 0);
	assert_int_equal(c.n, 4);
	for (int i = 0; i < c.n; i++) {
		/* exactly one pass per epoch: no batch lost or duplicated */
		assert_int_equal(c.samples[i], 1000);
		assert_int_equal(c.val_samples[i], 200);
		/* validation saw weights from within its epoch */
		assert_true(c.vmin[i] >= i * 63 && c.vmax[i] <= (i + 1) * 63);
	}
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].forwards, 4 * 63);
		assert_int_equal(r.gates[g].backwards, 4 * 63);
		assert_int_equal(r.gates[g].gate.step, 4 * 63);
		/* gate 1's only weights are the first layer's, which no
		 * backward reads: nothing to stash there */
		assert_int_equal(akk_gate_stash_bytes(&r.gates[g].gate) > 0, stash && g > 0);
	}
	assert_true(c.loss[3] < 0.5 * c.loss[0]);
	assert_int_equal(c.finals, 1);
	assert_true(c.final_acc > 0.9);
	akk_run_release(&r);
	teardown_net(&f);
}

static void wheels_learns_stashing(void **unused)
{
	(void)unused;
	wheels_learns(1);
}

static void wheels_learns_without_stashing(void **unused)
{
	(void)unused;
	wheels_learns(0);
}

/* Every sample exactly once per epoch, in a different order each epoch. */
static void provider_covers_every_sample(void **unused)
{
	struct fixture f;
	struct akk_provider p;
	struct akk_workers w;
	struct akk_preprocess pre;
	struct akk_err e = { 0 };
	int *seen = calloc(1000, sizeof(int));
	long first[2];

	(void)unused;
	setup_net(&f, "wheels", 2, 4, 1, "");
	f.spec.data.scale = 1;	/* floats equal the pixels */
	assert_int_equal(akk_preprocess_init(&pre, &f.spec.data, f.train.in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &f.train, &pre, &(struct akk_provider_config){
			.ds = NULL, .shuffle = 1, .seed = 42, .bs = 16, .in = 64, .classes = 4,
			.npool = 3, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&p, &w);
	for (int epoch = 0; epoch < 2; epoch++) {
		memset(seen, 0, 1000 * sizeof(int));
		for (long i = 0; i < 63; i++) {
			struct akk_batch *b = akk_provider_next(&p);
			assert_non_null(b);
			assert_int_equal(b->epoch, epoch);
			assert_int_equal(b->index, i);
			assert_int_equal(b->B, i == 62 ? 8 : 16);
			for (int j = 0; j < b->B; j++) {
				int id = (int)b->x[j * 64] + 256 * (int)b->x[j * 64 + 1];
				assert_true(id >= 0 && id < 1000);
				seen[id]++;
				if (i == 0 && j == 0)
					first[epoch] = id;
			}
			akk_provider_recycle(&p, b);
		}
		for (int i = 0; i < 1000; i++)
			assert_int_equal(seen[i], 1);
	}
	assert_int_not_equal(first[0], first[1]);
	akk_workers_stop(&w);
	akk_provider_release(&p);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	free(seen);
	teardown_net(&f);
}

static int threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* The process's threads named akk-worker (workers.c names its own). */
static int worker_threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		char path[300], name[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		if ((f = fopen(path, "r"))) {
			if (fgets(name, sizeof(name), f))
				n += !strcmp(name, "akk-worker\n");
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* A non-finite gradient stops every actor with an error naming it. */
static void nan_stops_the_run(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	int before = threads_now();

	(void)unused;
	setup_net(&f, "wheels", 3, 4, 1, NULL);
	f.spec.optim.lr = 1e30f;
	assert_int_equal(run_actors(&f, &r, (struct akk_observer){ 0 }, &e), -1);
	assert_non_null(strstr(e.msg, "non-finite"));
	/* no worker left; a library (OpenBLAS) may have started its own pool */
	assert_int_equal(worker_threads_now(), 0);
	assert_true(threads_now() <= before + 1);
	akk_run_release(&r);
	teardown_net(&f);
}

/* A finite weight so large that gate 2's output overflows: the run stops
 * naming gate 2 and its step (it used to name only the step, at the
 * sentinel's loss). */
static void nonfinite_output_names_the_gate(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct akk_run_config cfg;

	(void)unused;
	setup_net(&f, "flip-flop", 1, 1, 0, NULL);
	cfg = (struct akk_run_config){ .mode = AKK_MODE_FLIPFLOP, .epochs = 1,
				       .blas_threads = 1 };
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
	for (int i = 0; i < 24; i++)
		r.gates[1].gate.params[i] = 3e38f;
	assert_int_equal(akk_run_train(&r, &e), -1);
	if (!strstr(e.msg, "non-finite output of gate 2 at step 0 (training batch 1)"))
		fail_msg("%s", e.msg);
	akk_run_release(&r);
	teardown_net(&f);
}

/* schedule.max_loss stops a run whose loss is above it, finite or not,
 * naming the loss, where and the key (a run that diverged to a loss of
 * 2.2e6 used to finish with exit 0). */
static void max_loss_stops_a_diverging_run(void **unused)
{
	const char *modes[] = { "flip-flop", "wheels" };

	(void)unused;
	for (int k = 0; k < 2; k++) {
		struct fixture f;
		struct akk_run r;
		struct akk_err e = { 0 };

		setup_net(&f, modes[k], 2, 4, 1, NULL);
		f.spec.sched.max_loss = 0.5f;	/* below the first batches' ~1.4 */
		assert_int_equal(run_actors(&f, &r, (struct akk_observer){ 0 }, &e), -1);
		if (!strstr(e.msg, "at epoch 1, batch 1 (step 1) is above schedule.max_loss 0.5: the run diverged"))
			fail_msg("%s", e.msg);
		akk_run_release(&r);
		/* and a guard above the losses changes nothing */
		f.spec.sched.max_loss = 100;
		if (run_actors(&f, &r, (struct akk_observer){ 0 }, &e))
			fail_msg("%s", e.msg);
		akk_run_release(&r);
		teardown_net(&f);
	}
}

/* A start past the epoch's batches is refused at init: the sentinel used
 * to wait for batches the provider never made (a resume at a larger batch
 * size hung until killed). The end of the epoch itself is a valid start. */
static void start_past_the_epoch_refused(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct akk_run_config cfg;

	(void)unused;
	setup_net(&f, "flip-flop", 2, 1, 0, NULL);
	cfg = (struct akk_run_config){ .mode = AKK_MODE_FLIPFLOP, .epochs = 2,
				       .blas_threads = 1,
				       .start = { .epoch = 0, .index = 64, .id = 64 } };
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), -1);
	if (!strstr(e.msg, "cannot start at epoch 1, batch 64, step 64: an epoch has 63 batches"))
		fail_msg("%s", e.msg);
	cfg.start.index = 63;
	cfg.start.id = 63;
	cfg.start.samples = 1000;
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
	assert_int_equal(akk_run_train(&r, &e), 0);
	assert_int_equal(r.pos.epoch, 2);
	assert_int_equal(r.pos.id, 63 + 63);
	akk_run_release(&r);
	teardown_net(&f);
}

static void interrupt_at(void *ctx, const struct akk_progress *p)
{
	struct akk_run *r = ctx;

	if (p->epoch == 2 && p->batch == 10)
		akk_run_interrupt(r);
}

/* An interrupt drains the in-flight batches, which count in the position,
 * and ends the run cleanly. */
static void interrupt_stops_cleanly(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	int before = threads_now();

	(void)unused;
	setup_net(&f, "wheels", 5, 4, 1, NULL);
	struct akk_run_config cfg = { .mode = AKK_MODE_WHEELS, .epochs = 5,
				      .blas_threads = 1 };
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
	r.cfg.obs = (struct akk_observer){ &r, interrupt_at, NULL };
	assert_int_equal(akk_run_train(&r, &e), 0);
	assert_int_equal(atomic_load(&r.interrupted), 1);
	assert_int_equal(r.epochs_done, 1);
	/* every gate stepped exactly as often as batches came back */
	for (int g = 0; g < f.model.ngates; g++)
		assert_int_equal(r.gates[g].gate.step, r.gates[g].backwards);
	/* asked to stop when batch 10 of epoch 2 came back, with the next
	 * K - 1 = 3 already in flight: those drain and count, so the
	 * position (what a checkpoint resumes from) is batch 13 */
	assert_int_equal(r.pos.epoch, 1);
	assert_int_equal(r.pos.index, 13);
	assert_int_equal(r.pos.id, 63 + 13);
	/* what a caller sees of it, by value */
	struct akk_run_stats st = akk_run_stats(&r);
	assert_int_equal(st.interrupted, 1);
	assert_int_equal(st.epochs, 5);
	assert_int_equal(st.has_val, 1);
	assert_int_equal(st.compute_threads, 1);
	assert_int_equal(st.ngates, f.model.ngates);
	assert_int_equal(st.per_epoch, r.per_epoch);
	assert_int_equal(st.pos.epoch, r.pos.epoch);
	assert_int_equal(st.pos.index, r.pos.index);
	assert_int_equal(st.pos.id, r.pos.id);
	assert_int_equal(st.pos.id, r.gates[0].gate.step);
	for (int g = 0; g < f.model.ngates; g++)
		assert_true(st.busy[g] > 0);
	assert_ptr_equal(akk_run_trace(&r, 0), &r.sentinel_trace);
	assert_ptr_equal(akk_run_trace(&r, 2), &r.gates[1].trace);
	/* no worker left; a library (OpenBLAS) may have started its own pool */
	assert_int_equal(worker_threads_now(), 0);
	assert_true(threads_now() <= before + 1);
	akk_run_release(&r);
	teardown_net(&f);
}

static int most_threads;

static void count_threads(void *ctx, const struct akk_progress *p)
{
	int n = worker_threads_now();

	(void)ctx, (void)p;
	if (n > most_threads)
		most_threads = n;
}

/* The actors (three gates, two data providers, the sentinel) and the
 * split products run on the workers, one thread per worker: a run on two
 * compute threads starts one thread of its own (the caller is worker 0),
 * where it used to start a thread per gate and provider and the pool's.
 * Counted by name: a library's own helper threads (an OpenMP or OpenBLAS
 * pool, started when it first computes) are not the run's. */
static void threads_never_outnumber_the_workers(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	int before = threads_now();

	(void)unused;
	setup_net(&f, "wheels", 2, 4, 1, NULL);
	struct akk_run_config cfg = { .mode = AKK_MODE_WHEELS, .epochs = 2,
				      .blas_threads = 2 };
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
	r.cfg.obs = (struct akk_observer){ NULL, count_threads, NULL };
	most_threads = 0;
	assert_int_equal(akk_run_train(&r, &e), 0);
	assert_int_equal(r.workers.n, 2);
	assert_int_equal(most_threads, 1);
	assert_int_equal(worker_threads_now(), 0);
	assert_true(threads_now() <= before + 1);	/* a library's pool at most */
	akk_run_release(&r);
	teardown_net(&f);
}

/* Every message kind has its own name (the gate's protocol error names
 * the kind it got: a ninth kind once read past an eight-entry table). */
static void every_message_kind_named(void **state)
{
	(void)state;
	for (int k = 0; k < AKK_MSG_NKINDS; k++) {
		assert_string_not_equal(akk_msg_name(k), "unknown");
		for (int j = 0; j < k; j++)
			assert_string_not_equal(akk_msg_name(k), akk_msg_name(j));
	}
	assert_string_equal(akk_msg_name(AKK_MSG_REDUCED), "reduced");
	assert_string_equal(akk_msg_name(AKK_MSG_NKINDS), "unknown");
	assert_string_equal(akk_msg_name(-1), "unknown");
}

/* The transport reaches other ranks only through the hook a link
 * registers: a message for a remote actor goes to its post, release to
 * its release; without a hook such a send fails. */
static int fake_posts, fake_to, fake_releases;

static int fake_post(struct akk_transport *t, int to, const struct akk_msg *m)
{
	(void)t;
	(void)m;
	fake_posts++;
	fake_to = to;
	return 0;
}

static void fake_release(struct akk_transport *t)
{
	fake_releases++;
	t->ops = NULL;
}

static void transport_link_hook(void **state)
{
	static const struct akk_link_ops fake = { fake_post, fake_release };
	static const int ranks[3] = { 0, 1, 0 };	/* actor 1 on rank 1 */
	struct akk_transport t;
	struct akk_msg m = { .kind = AKK_MSG_SYNC }, got;

	(void)state;
	assert_int_equal(akk_transport_init(&t, 3, 4), 0);
	t.actor_rank = ranks;
	assert_int_equal(akk_send(&t, 1, &m), -1);	/* no link */
	t.ops = &fake;
	assert_int_equal(akk_send(&t, 1, &m), 0);
	assert_int_equal(fake_posts, 1);
	assert_int_equal(fake_to, 1);
	assert_int_equal(akk_send(&t, 2, &m), 0);	/* local: its mailbox */
	assert_int_equal(fake_posts, 1);
	assert_int_equal(akk_recv(&t, 2, &got), 0);
	assert_int_equal(got.kind, AKK_MSG_SYNC);
	akk_transport_release(&t);
	assert_int_equal(fake_releases, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(transport_link_hook),
		cmocka_unit_test(every_message_kind_named),
		cmocka_unit_test(flipflop_equals_reference),
		cmocka_unit_test(per_step_flipflop_equals_reference),
		cmocka_unit_test(per_step_pipeline_equals_flipflop),
		cmocka_unit_test(wheels_one_equals_flipflop),
		cmocka_unit_test(pool_reproducible),
		cmocka_unit_test(automatic_threads_split_only_spare_cores),
		cmocka_unit_test(wheels_learns_stashing),
		cmocka_unit_test(wheels_learns_without_stashing),
		cmocka_unit_test(provider_covers_every_sample),
		cmocka_unit_test(nan_stops_the_run),
		cmocka_unit_test(nonfinite_output_names_the_gate),
		cmocka_unit_test(max_loss_stops_a_diverging_run),
		cmocka_unit_test(start_past_the_epoch_refused),
		cmocka_unit_test(interrupt_stops_cleanly),
		cmocka_unit_test(threads_never_outnumber_the_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
