/* test_gates.c - gates that fork and join: the config's edges and their
 * errors, the sequential reference's gradient through a fork and a join
 * against finite differences, and the actors against the reference.
 *
 * Synthetic data only (tu_dataset: class patterns in 8x8 images). The
 * graph: a stem gate, two branch gates reading it, a head gate joining
 * them (concat or add). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "config/spec.h"
#include "io/graph_svg.h"
#include "model/flow.h"
#include "model/model.h"
#include "model/reference.h"
#include "runtime/run_internal.h"

#define SIDE 8
#define CLASSES 4

/* %s the join, %d the right branch's width (16 for add), %s the
 * optimizer, %s the schedule. */
static const char *dag_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	"    - {name: stem, layers: [{dense: 24}, relu]}\n"
	"    - {name: left, from: stem, layers: [{dense: 16}, %s]}\n"
	"    - {name: right, from: stem, layers: [{dense: %d}, %s]}\n"
	"    - {name: head, from: [left, right], join: %s, layers: [{dense: 4}]}\n"
	"optimizer: %s\n"
	"schedule: %s\n";

struct fixture {
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train, val;
};

/* plain: no batchnorm and no dropout (evaluation equals training, and
 * micro-batches equal whole batches), and smooth branches (no kink near
 * a finite difference's steps) */
static void setup(struct fixture *f, const char *join, int plain, const char *optim,
		  const char *sched)
{
	char text[2048];
	struct akk_err e = { 0 };

	snprintf(text, sizeof(text), dag_yaml, plain ? "tanh" : "batchnorm, tanh",
		 strcmp(join, "add") ? 8 : 16, plain ? "sigmoid" : "relu, {dropout: 0.1}", join,
		 optim, sched);
	memset(f, 0, sizeof(*f));
	if (akk_spec_parse(&f->spec, text, strlen(text), "dag.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&f->train, 1000, SIDE, CLASSES, 7);	/* 63 batches, the last of 8 */
	tu_dataset(&f->val, 200, SIDE, CLASSES, 9);
}

static void teardown(struct fixture *f)
{
	akk_model_release(&f->model);
	akk_spec_release(&f->spec);
	akk_dataset_release(&f->train);
	akk_dataset_release(&f->val);
}

static int run_actors(struct fixture *f, struct akk_run *r, struct akk_observer obs,
		      int threads, struct akk_err *e)
{
	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = f->spec.sched.epochs,
		.blas_threads = threads, .obs = obs,
	};

	if (akk_run_init(r, &f->model, &f->train, &f->val, &cfg, e))
		return -1;
	return akk_run_train(r, e);
}

/* ---- the config ----------------------------------------------------- */

static void plan_error(const char *gates, const char *want, int line, int col)
{
	char text[2048];
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e = { 0 };
	int rc;

	snprintf(text, sizeof(text),
		 "data: {train: {images: x, labels: y}}\n"
		 "optimizer: {type: sgd, lr: 0.1}\n"
		 "network:\n"
		 "  input: [1, 8, 8]\n"
		 "  gates:\n%s", gates);
	rc = akk_spec_parse(&s, text, strlen(text), "g.yaml", ".", NULL, 0, &e);
	if (!rc) {
		rc = akk_model_plan(&m, &s, &e);
		if (!rc)
			akk_model_release(&m);
		akk_spec_release(&s);
	}
	assert_int_equal(rc, -1);
	if (!strstr(e.msg, want) || e.line != line || e.col != col)
		fail_msg("got %s:%d:%d: %s; want %d:%d: ...%s...", e.file, e.line, e.col,
			 e.msg, line, col, want);
	assert_string_equal(e.file, "g.yaml");
}

static void config_errors_name_the_place(void **unused)
{
	(void)unused;
	plan_error("    - {name: a, layers: [flatten]}\n"
		   "    - {from: b, layers: [{dense: 4}]}\n",
		   "unknown gate 'b' in 'from'", 7, 14);
	plan_error("    - {name: a, layers: [flatten]}\n"
		   "    - {name: b, from: a, layers: [{dense: 4}]}\n"
		   "    - {from: a, layers: [{dense: 4}]}\n",
		   "gate 'b' is read by no gate: only the last gate (3)", 7, 7);
	plan_error("    - {name: a, layers: [flatten]}\n"
		   "    - {name: b, from: a, layers: [{dense: 4}]}\n"
		   "    - {name: c, from: a, layers: [{dense: 4}]}\n"
		   "    - {from: [b, c], layers: [{dense: 4}]}\n",
		   "reads 2 gates: say how they join", 9, 14);
	plan_error("    - {name: a, layers: [flatten]}\n"
		   "    - {join: add, layers: [{dense: 4}]}\n",
		   "'join' applies to a gate that reads 2 or more gates", 7, 14);
	plan_error("    - {name: a, from: b, layers: [flatten]}\n"
		   "    - {name: b, layers: [{dense: 4}]}\n",
		   "gate 1 reads 'b', which is not before it", 6, 23);
	plan_error("    - {name: a, layers: [flatten]}\n"
		   "    - {name: a, layers: [{dense: 4}]}\n",
		   "gate name 'a' is taken by gate 1", 7, 14);
	plan_error("    - {name: a, layers: [{conv2d: {filters: 2, kernel: 3, padding: 1}}]}\n"
		   "    - {name: b, from: a, layers: [{maxpool2d: 2}]}\n"
		   "    - {name: c, from: a, layers: [{conv2d: {filters: 3, kernel: 1}}]}\n"
		   "    - {from: [b, c], join: concat, layers: [flatten, {dense: 4}]}\n",
		   "concat joins on the first dimension (channels of [C, H, W], features of [F]) and needs the others equal, but gate 'b' outputs [2, 4, 4] and gate 'c' outputs [3, 8, 8]", 9, 14);
	plan_error("    - {name: a, layers: [{conv2d: {filters: 2, kernel: 3, padding: 1}}]}\n"
		   "    - {name: b, from: a, layers: [relu]}\n"
		   "    - {name: c, from: a, layers: [{conv2d: {filters: 3, kernel: 1}}]}\n"
		   "    - {from: [b, c], join: add, layers: [flatten, {dense: 4}]}\n",
		   "join: add needs equal shapes, but gate 'b' outputs [2, 8, 8] and gate 'c' outputs [3, 8, 8]", 9, 14);
	plan_error("    - {name: a, layers: [flatten]}\n"
		   "    - {name: b, from: [a, a], join: add, layers: [{dense: 4}]}\n",
		   "'from' names 'a' twice", 7, 27);
}

/* Concat puts the sources' channels side by side: [2, 8, 8] and [3, 8, 8]
 * make [5, 8, 8]; the readers know where each source's part lies. */
static void concat_plans_channels_and_readers(void **unused)
{
	const char *text =
		"data: {train: {images: x, labels: y}}\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"network:\n"
		"  input: [1, 8, 8]\n"
		"  gates:\n"
		"    - {name: a, layers: [{conv2d: {filters: 2, kernel: 3, padding: 1}}]}\n"
		"    - {name: b, from: a, layers: [relu]}\n"
		"    - {name: c, from: a, layers: [{conv2d: {filters: 3, kernel: 1}}]}\n"
		"    - {from: [b, c], join: concat, layers: [flatten, {dense: 4}]}\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e = { 0 };

	(void)unused;
	assert_int_equal(akk_spec_parse(&s, text, strlen(text), "g.yaml", ".", NULL, 0, &e), 0);
	assert_int_equal(akk_model_plan(&m, &s, &e), 0);
	assert_false(akk_model_is_chain(&m));
	assert_int_equal(m.gates[3].in.rank, 3);
	assert_int_equal(m.gates[3].in.d[0], 5);
	assert_int_equal(m.gates[3].src_off[1], 2 * 64);
	assert_int_equal(m.gates[0].nread, 2);
	assert_int_equal(m.gates[0].readers[0], 1);
	assert_int_equal(m.gates[0].readers[1], 2);
	assert_int_equal(m.gates[2].rd_off[0], 2 * 64);
	assert_int_equal(m.gates[2].rd_in[0], 5 * 64);
	assert_int_equal(m.gates[2].rd_whole[0], 0);
	assert_int_equal(m.gates[3].nread, 0);
	/* what check counts: a join's inputs per tape and slot, a fork's sum */
	assert_true(akk_flow_memory(&m.gates[3], 2, 1, 16) == 3.0 * 16 * 5 * 64 * 4);
	assert_true(akk_flow_memory(&m.gates[0], 2, 1, 16) == 16.0 * 2 * 64 * 4);
	assert_true(akk_flow_memory(&m.gates[2], 2, 1, 16) == 16.0 * 3 * 64 * 4);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* check --graph: the join is a box of the joining gate that reads the
 * last layers of both branch gates, which both read the stem's last. */
static void picture_forks_and_joins(void **unused)
{
	struct fixture f;
	struct akk_graph_layout gl;
	struct akk_err e = { 0 };
	int join = -1, from[2] = { 0 }, n = 0;

	(void)unused;
	setup(&f, "concat", 1, "{type: sgd, lr: 1}", "{mode: flip-flop, epochs: 1, batch_size: 16}");
	assert_int_equal(akk_graph_layout(&gl, &f.model, &e), 0);
	for (int i = 0; i < gl.nv; i++)
		if (!strcmp(gl.v[i].kind, "concat"))
			join = i;
	assert_true(join >= 0);
	assert_int_equal(gl.v[join].gate, 4);
	for (int k = 0; k < gl.ne; k++)
		if (gl.ed[k].to == join && n < 2)
			from[n++] = gl.ed[k].from;
	assert_int_equal(n, 2);
	assert_int_equal(gl.v[from[0]].gate, 2);
	assert_int_equal(gl.v[from[1]].gate, 3);
	/* the stem's last layer feeds both branches */
	n = 0;
	for (int k = 0; k < gl.ne; k++)
		n += gl.v[gl.ed[k].from].gate == 1 && gl.v[gl.ed[k].to].gate > 1;
	assert_int_equal(n, 2);
	akk_graph_layout_release(&gl);
	teardown(&f);
}

/* akkctl check prints what each gate reads, its join and its input, and
 * a config error exits 2 at its place. */
static void check_prints_the_sources(void **unused)
{
	static char out[65536], err[4096];
	const char *good = "tests/configs/onnx-gates.yaml";
	const char *bad = "tests/configs/bad/gates-read-by-nobody.yaml";

	/* check also asks the data files to exist (a clean clone has no
	 * MNIST): empty ones found through --data-dir */
	const char *tmp = tu_tmpdir();
	static const char *const files[] = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
					     "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte" };
	char dir[600], path[700];

	(void)unused;
	assert_non_null(tmp);
	snprintf(dir, sizeof(dir), "%s/datasets", tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/datasets/mnist", tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		assert_int_equal(tu_write_file(path, "", 0), 0);
	}
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "check", good,
			       "--data-dir", tmp, NULL), 0);
	tu_rm_tree(tmp);
	tu_assert_contains(out, "gate  name             reads                                join    input\n");
	tu_assert_contains(out, "2     narrow           stem                                         [6, 14, 14]\n");
	tu_assert_contains(out, "4     cat              narrow, wide                         concat  [10, 14, 14]\n");
	tu_assert_contains(out, "7     -                a, b                                 add     [24]  (the output)\n");
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "check", bad, NULL), 2);
	tu_assert_contains(err, "gates-read-by-nobody.yaml:9:7: gate 'right' is read by no gate");
}

/* ---- the reference ---------------------------------------------------- */

/* The loss of the reference's current batch with its gates' current
 * weights, evaluated through the graph. */
static double batch_loss(struct akk_reference *r)
{
	struct akk_gate *gp[AKK_MAX_GATES];
	const struct akk_model *m = r->model;

	for (int g = 0; g < m->ngates; g++)
		gp[g] = &r->gates[g];
	akk_flows_eval(m, gp, r->flows, 0, r->batch.x, r->batch.B, r->outs);
	return akk_model_loss(m, NULL, r->outs[m->ngates - 1], r->batch.labels,
			      r->batch.targets, r->batch.B, NULL, NULL);
}

/* With sgd at lr 1 one step moves each weight by its gradient: the
 * reference's gradient of every gate, the stem (a fork: the sum of two
 * readers' gradients) and each branch (its part of the join's), is the
 * loss's central difference for the weights with the largest gradients. */
static void gradient_check(struct fixture *fx, const char *join)
{
	struct fixture f = *fx;
	struct akk_reference ref;
	struct akk_err e = { 0 };
	float *before[4], *grad[4];

	assert_int_equal(f.model.ngates, 4);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (int g = 0; g < 4; g++) {
		size_t n = f.model.gates[g].nparams;
		before[g] = malloc(n * sizeof(float));
		memcpy(before[g], ref.gates[g].params, n * sizeof(float));
	}
	assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	/* every gate's gradient, then every gate back at its weights */
	for (int g = 0; g < 4; g++) {
		struct akk_gate *gt = &ref.gates[g];
		size_t n = gt->plan->nparams;
		assert_int_equal(gt->step, 1);
		grad[g] = malloc(n * sizeof(float));
		for (size_t i = 0; i < n; i++)
			grad[g][i] = before[g][i] - gt->params[i];
		memcpy(gt->params, before[g], n * sizeof(float));
	}
	for (int g = 0; g < 4; g++) {
		struct akk_gate *gt = &ref.gates[g];
		size_t n = gt->plan->nparams;
		/* the 5 largest gradients: well above the differences' noise */
		for (int t = 0; t < 5; t++) {
			size_t best = 0;
			for (size_t i = 1; i < n; i++)
				if (fabsf(grad[g][i]) > fabsf(grad[g][best]))
					best = i;
			float w = gt->params[best], h = 1e-3f;
			gt->params[best] = w + h;
			double lp = batch_loss(&ref);
			gt->params[best] = w - h;
			double lm = batch_loss(&ref);
			gt->params[best] = w;
			double fd = (lp - lm) / (2 * h);
			if (fabs(fd - grad[g][best]) > 1e-4 + 1e-2 * fabs(fd))
				fail_msg("%s: gate %d weight %zu: gradient %g, central difference %g",
					 join, g + 1, best, grad[g][best], fd);
			grad[g][best] = 0;
		}
	}
	for (int g = 0; g < 4; g++) {
		free(before[g]);
		free(grad[g]);
	}
	akk_reference_release(&ref);
}

static void reference_gradient_is_the_loss_gradient(const char *join)
{
	struct fixture f;

	setup(&f, join, 1, "{type: sgd, lr: 1}", "{mode: flip-flop, epochs: 1, batch_size: 16}");
	gradient_check(&f, join);
	teardown(&f);
}

static void reference_gradient_concat(void **unused)
{
	(void)unused;
	reference_gradient_is_the_loss_gradient("concat");
}

static void reference_gradient_add(void **unused)
{
	(void)unused;
	reference_gradient_is_the_loss_gradient("add");
}

/* ---- the actors ------------------------------------------------------- */

static void assert_same_params(const struct akk_gate *a, const struct akk_gate *b)
{
	size_t n = a->plan->nparams, ns = a->plan->nstate;

	assert_int_equal(a->step, b->step);
	assert_memory_equal(a->params, b->params, n * sizeof(float));
	if (ns)
		assert_memory_equal(a->state, b->state, ns * sizeof(float));
}

/* Flip-flop on the graph is the topological-order reference bit for bit:
 * 3 epochs, 189 steps, batchnorm and dropout in the branches, the two
 * branches on two workers. */
static void flipflop_equals_reference(const char *join)
{
	struct fixture f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };

	setup(&f, join, 0, "{type: adam, lr: 0.01}", "{mode: flip-flop, epochs: 3, batch_size: 16}");
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 3 * 63; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	if (run_actors(&f, &r, (struct akk_observer){ 0 }, 1, &e))
		fail_msg("%s", e.msg);
	assert_true(r.workers.n >= 2);	/* the branches may compute at once */
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 3 * 63);
		assert_same_params(&r.gates[g].gate, &ref.gates[g]);
	}
	akk_run_release(&r);
	akk_reference_release(&ref);
	teardown(&f);
}

static void flipflop_equals_reference_concat(void **unused)
{
	(void)unused;
	flipflop_equals_reference("concat");
}

static void flipflop_equals_reference_add(void **unused)
{
	(void)unused;
	flipflop_equals_reference("add");
}

/* A skip connection: the head concatenates the stem's output with the
 * gate after it, so the stem's gradient is the sum of its part of the
 * head's input gradient and the middle gate's; and a chain of two joins
 * (add of three sources). Flip-flop equals the reference bit for bit,
 * wheels runs every batch. */
static void skip_connections_equal_the_reference(void **unused)
{
	static const char *text =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - {name: stem, layers: [{dense: 24}, relu]}\n"
		"    - {name: mid, layers: [{dense: 24}, batchnorm, tanh]}\n"
		"    - {name: sum, from: [mid, stem], join: add, layers: [{dense: 12}, relu]}\n"
		"    - {name: side, from: mid, layers: [{dense: 12}, sigmoid]}\n"
		"    - {from: [stem, sum, side], join: concat, layers: [{dense: 4}]}\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: %s, epochs: 2, batch_size: 16, concurrency: {train: 3}}\n";
	const char *modes[] = { "flip-flop", "wheels" };
	struct akk_reference ref;

	(void)unused;
	akk_blas_threads(1);
	for (int k = 0; k < 2; k++) {
		struct fixture f;
		struct akk_run r;
		struct akk_err e = { 0 };
		char yaml[1024];

		memset(&f, 0, sizeof(f));
		snprintf(yaml, sizeof(yaml), text, modes[k]);
		if (akk_spec_parse(&f.spec, yaml, strlen(yaml), "skip.yaml", ".", NULL, 0, &e) ||
		    akk_model_plan(&f.model, &f.spec, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(f.model.gates[0].nread, 3);
		assert_int_equal(f.model.gates[4].in.d[0], 24 + 12 + 12);
		tu_dataset(&f.train, 1000, SIDE, CLASSES, 7);
		tu_dataset(&f.val, 200, SIDE, CLASSES, 9);
		if (k == 0) {
			assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
			for (long i = 0; i < 2 * 63; i++)
				assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
		}
		if (run_actors(&f, &r, (struct akk_observer){ 0 }, 1, &e))
			fail_msg("%s: %s", modes[k], e.msg);
		for (int g = 0; g < f.model.ngates; g++) {
			assert_int_equal(r.gates[g].gate.step, 2 * 63);
			if (k == 0)
				assert_same_params(&r.gates[g].gate, &ref.gates[g]);
		}
		if (k == 0)
			akk_reference_release(&ref);
		akk_run_release(&r);
		teardown(&f);
	}
}

/* Several gates read the network input: two towers, one of them joined
 * with the input itself. Each sends the sentinel its credit of a batch.
 * The reference's gradient is the loss's; flip-flop equals it bit for
 * bit; the pipeline's micro-batches are within 1e-5 of flip-flop; wheels
 * runs every batch. */
static const char *towers_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	"    - {name: a, layers: [{dense: 24}, tanh]}\n"
	"    - {name: b, from: input, layers: [{dense: 12}, tanh]}\n"
	"    - {name: c, from: [input, a], join: concat, layers: [{dense: 12}, sigmoid]}\n"
	"    - {from: [b, c], join: add, layers: [{dense: 4}]}\n"
	"optimizer: %s\n"
	"schedule: %s\n";

static void setup_towers(struct fixture *f, const char *optim, const char *sched)
{
	char yaml[1024];
	struct akk_err e = { 0 };

	memset(f, 0, sizeof(*f));
	snprintf(yaml, sizeof(yaml), towers_yaml, optim, sched);
	if (akk_spec_parse(&f->spec, yaml, strlen(yaml), "towers.yaml", ".", NULL, 0, &e) ||
	    akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("%s", e.msg);
	tu_dataset(&f->train, 1000, SIDE, CLASSES, 7);
	tu_dataset(&f->val, 200, SIDE, CLASSES, 9);
}

static void several_gates_read_the_input(void **unused)
{
	struct fixture f, p, w;
	struct akk_reference ref;
	struct akk_run r, rp, rw;
	struct akk_err e = { 0 };

	(void)unused;
	akk_blas_threads(1);
	setup_towers(&f, "{type: sgd, lr: 1}", "{mode: flip-flop, epochs: 1, batch_size: 16}");
	assert_int_equal(akk_model_inputs(&f.model), 3);
	gradient_check(&f, "towers");
	teardown(&f);
	setup_towers(&f, "{type: sgd, lr: 0.05}", "{mode: flip-flop, epochs: 2, batch_size: 16}");
	setup_towers(&p, "{type: sgd, lr: 0.05}", "{mode: pipeline, micro_batches: 4, epochs: 2, batch_size: 16}");
	setup_towers(&w, "{type: sgd, lr: 0.05}", "{mode: wheels, epochs: 2, batch_size: 16, concurrency: {train: 4}}");
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 2 * 63; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	if (run_actors(&f, &r, (struct akk_observer){ 0 }, 1, &e) ||
	    run_actors(&p, &rp, (struct akk_observer){ 0 }, 1, &e) ||
	    run_actors(&w, &rw, (struct akk_observer){ 0 }, 1, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < 4; g++) {
		const struct akk_gate *x = &r.gates[g].gate, *y = &rp.gates[g].gate;
		assert_same_params(x, &ref.gates[g]);
		for (size_t i = 0; i < x->plan->nparams; i++)
			if (fabs((double)x->params[i] - y->params[i]) > 1e-5)
				fail_msg("gate %d weight %zu: flip-flop %g, pipeline %g", g + 1, i,
					 x->params[i], y->params[i]);
		assert_int_equal(rw.gates[g].gate.step, 2 * 63);
		assert_int_equal(rw.gates[g].backwards, 2 * 63);
	}
	assert_int_equal(r.pos.id, 2 * 63);
	assert_int_equal(rw.pos.id, 2 * 63);
	akk_reference_release(&ref);
	akk_run_release(&r);
	akk_run_release(&rp);
	akk_run_release(&rw);
	teardown(&f);
	teardown(&p);
	teardown(&w);
}

struct reports {
	int n;
	long samples[8], val_samples[8], vmin[8], vmax[8];
	double loss[8];
	double final_acc;
};

static int collect(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		   struct akk_err *e)
{
	struct reports *c = ctx;

	(void)r;
	(void)e;
	if (!strcmp(rep->phase, "final")) {
		c->final_acc = rep->val_acc;
		return 0;
	}
	c->samples[c->n] = rep->samples;
	c->val_samples[c->n] = rep->val_samples;
	c->loss[c->n] = rep->train_loss;
	c->vmin[c->n] = rep->vmin;
	c->vmax[c->n] = rep->vmax;
	c->n++;
	return 0;
}

/* Wheels, four batches in flight with weight stashing: every batch once,
 * the validation's weight versions within its epoch, and it learns. */
static void wheels_learns_on_a_graph(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct reports c = { 0 };

	(void)unused;
	setup(&f, "concat", 0, "{type: adam, lr: 0.01}",
	      "{mode: wheels, epochs: 4, batch_size: 16, concurrency: {train: 4, validation: 2}, weight_stashing: true}");
	if (run_actors(&f, &r, (struct akk_observer){ &c, NULL, collect }, 1, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.n, 4);
	for (int i = 0; i < c.n; i++) {
		assert_int_equal(c.samples[i], 1000);
		assert_int_equal(c.val_samples[i], 200);
		assert_true(c.vmin[i] >= i * 63 && c.vmax[i] <= (i + 1) * 63);
	}
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].forwards, 4 * 63);
		assert_int_equal(r.gates[g].backwards, 4 * 63);
		assert_int_equal(r.gates[g].gate.step, 4 * 63);
	}
	assert_true(c.loss[3] < 0.5 * c.loss[0]);
	assert_true(c.final_acc > 0.9);
	akk_run_release(&r);
	teardown(&f);
}

/* The pipeline's micro-batches on the graph: within float rounding of
 * flip-flop's whole batches. */
static void pipeline_equals_flipflop(void **unused)
{
	struct fixture a, b;
	struct akk_run ra, rb;
	struct akk_err e = { 0 };

	(void)unused;
	akk_blas_threads(1);
	setup(&a, "concat", 1, "{type: sgd, lr: 0.05}", "{mode: flip-flop, epochs: 2, batch_size: 16}");
	setup(&b, "concat", 1, "{type: sgd, lr: 0.05}",
	      "{mode: pipeline, micro_batches: 4, epochs: 2, batch_size: 16}");
	if (run_actors(&a, &ra, (struct akk_observer){ 0 }, 1, &e) ||
	    run_actors(&b, &rb, (struct akk_observer){ 0 }, 1, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < a.model.ngates; g++) {
		const struct akk_gate *x = &ra.gates[g].gate, *y = &rb.gates[g].gate;
		assert_int_equal(y->step, 2 * 63);
		assert_int_equal(rb.gates[g].forwards, 2 * (62 * 4 + 4));
		double err = 0;
		for (size_t i = 0; i < x->plan->nparams; i++)
			if (fabs((double)x->params[i] - y->params[i]) > err)
				err = fabs((double)x->params[i] - y->params[i]);
		if (err > 1e-5)
			fail_msg("gate %d: largest difference %g", g + 1, err);
	}
	akk_run_release(&ra);
	akk_run_release(&rb);
	teardown(&a);
	teardown(&b);
}

/* A branch whose output overflows stops every actor, naming the branch. */
static void a_failing_branch_stops_the_run(void **unused)
{
	const char *modes[] = { "{mode: flip-flop, epochs: 1, batch_size: 16}",
				"{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: 4}}" };

	(void)unused;
	for (int k = 0; k < 2; k++) {
		struct fixture f;
		struct akk_run r;
		struct akk_err e = { 0 };
		struct akk_run_config cfg = { .epochs = 1, .blas_threads = 1 };

		setup(&f, "concat", 0, "{type: adam, lr: 0.01}", modes[k]);
		cfg.mode = f.spec.sched.mode;
		assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
		for (int i = 0; i < 24; i++)
			r.gates[2].gate.params[i] = 3e38f;
		assert_int_equal(akk_run_train(&r, &e), -1);
		if (!strstr(e.msg, "non-finite output of gate 3 at step 0 (training batch 1)"))
			fail_msg("%s", e.msg);
		akk_run_release(&r);
		teardown(&f);
	}
}

static void interrupt_at(void *ctx, const struct akk_progress *p)
{
	struct akk_run *r = ctx;

	if (p->epoch == 2 && p->batch == 10)
		akk_run_interrupt(r);
}

/* An interrupt drains the batches in flight through the fork and the
 * join and ends the run cleanly: every gate stepped as often. */
static void interrupt_stops_cleanly(void **unused)
{
	struct fixture f;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct akk_run_config cfg = { .mode = AKK_MODE_WHEELS, .epochs = 5, .blas_threads = 1 };

	(void)unused;
	setup(&f, "add", 0, "{type: adam, lr: 0.01}",
	      "{mode: wheels, epochs: 5, batch_size: 16, concurrency: {train: 4}}");
	assert_int_equal(akk_run_init(&r, &f.model, &f.train, &f.val, &cfg, &e), 0);
	r.cfg.obs = (struct akk_observer){ &r, interrupt_at, NULL };
	assert_int_equal(akk_run_train(&r, &e), 0);
	assert_int_equal(atomic_load(&r.interrupted), 1);
	assert_int_equal(r.pos.id, 63 + 13);
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 63 + 13);
		assert_int_equal(r.gates[g].backwards, 63 + 13);
	}
	akk_run_release(&r);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_errors_name_the_place),
		cmocka_unit_test(concat_plans_channels_and_readers),
		cmocka_unit_test(picture_forks_and_joins),
		cmocka_unit_test(check_prints_the_sources),
		cmocka_unit_test(reference_gradient_concat),
		cmocka_unit_test(reference_gradient_add),
		cmocka_unit_test(flipflop_equals_reference_concat),
		cmocka_unit_test(flipflop_equals_reference_add),
		cmocka_unit_test(skip_connections_equal_the_reference),
		cmocka_unit_test(several_gates_read_the_input),
		cmocka_unit_test(wheels_learns_on_a_graph),
		cmocka_unit_test(pipeline_equals_flipflop),
		cmocka_unit_test(a_failing_branch_stops_the_run),
		cmocka_unit_test(interrupt_stops_cleanly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
