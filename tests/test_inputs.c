/* test_inputs.c - several named inputs (network.inputs): the errors the
 * spec reports at FILE:LINE:COL, the gates each getting their own slice
 * of every sample (a perturbed column moves the gate that reads it and no
 * other), one input over the whole sample training bit for bit as
 * network.input, flip-flop equal to the sequential reference on a
 * two-input graph, wheels and pipeline running it, and a CLI run: check's
 * table, train, eval, predict, libakk and a resume refused when the
 * inputs change. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/akk.h"
#include "config/spec.h"
#include "io/graph_svg.h"
#include "model/flow.h"
#include "model/model.h"
#include "model/profile.h"
#include "model/reference.h"
#include "runtime/run_internal.h"
#include "tensor/tensor.h"
#include "testutil.h"

/* 8x8 images read as two inputs: the first 24 pixels (top) and the other
 * 40 as [5, 8] (rest), each on a gate of its own, joined by concat. %s:
 * the inputs' lines, then mode, epochs. */
#define NET "data: {train: {images: x, labels: y}}\n"			\
	"network:\n"							/* 2 */  \
	"%s"								/* 3- */ \
	"  gates:\n"							\
	"%s"								\
	"optimizer: {type: adam, lr: 0.01}\n"				\
	"schedule: {mode: %s, epochs: %d, batch_size: 16, concurrency: {train: 3, validation: 2}}\n"

#define TWO "  inputs: [{name: top, shape: [24]}, {name: rest, shape: [5, 8]}]\n"
#define TWO_GATES "    - {name: a, from: top, layers: [{dense: 8}, relu]}\n"	\
	"    - {name: b, from: rest, layers: [flatten, {dense: 8}, tanh]}\n"	\
	"    - {from: [a, b], join: concat, layers: [{dense: 4}]}\n"

/* Three inputs: a gate reading two of them and a gate's output (one
 * message of the sentinel fills both), the last gate an input and a
 * gate. */
#define THREE "  inputs: [{name: top, shape: [24]}, {name: mid, shape: [16]}, {name: low, shape: [24]}]\n"
#define THREE_GATES "    - {name: a, from: top, layers: [{dense: 8}, relu]}\n"	\
	"    - {name: b, from: [low, a, mid], join: concat, layers: [{dense: 8}, tanh]}\n" \
	"    - {from: [b, top], join: concat, layers: [{dense: 4}]}\n"

static char text[8192];

static int nwrong;	/* bad() calls that did not get their error */

/* Parsing (and planning) fails with exactly want: a mismatch is printed
 * and counted, a success fails at once. */
static void bad(const char *t, const char *want)
{
	char buf[1200];

	if (tu_plan_error(t, buf, sizeof(buf)))
		fail_msg("no error, want: %s", want);
	if (strcmp(buf, want)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", buf, want);
		nwrong++;
	}
}

static const char *net(const char *inputs)
{
	snprintf(text, sizeof(text), NET, inputs, TWO_GATES, "flip-flop", 1);
	return text;
}

/* A network of its own: the inputs' lines, then the gates'. */
static const char *raw(const char *inputs, const char *gates)
{
	snprintf(text, sizeof(text),
		 "data: {train: {images: x, labels: y}}\nnetwork:\n%s  gates:\n%s"
		 "optimizer: {type: adam, lr: 0.01}\n", inputs, gates);
	return text;
}

static void spec_errors(void **state)
{
	(void)state;
	bad(net("  input: [64]\n" TWO),
	    "t.yaml:4:3: 'input' and 'inputs' both given: network.inputs lays out the input as named slices; drop 'input'");
	bad(net("  inputs: [{name: top, shape: [24]}, {name: top, shape: [5, 8]}]\n"),
	    "t.yaml:3:38: input name 'top' is used twice (first at line 3)");
	bad(net("  inputs: [{name: top, shape: [24]}, {name: rest, shape: [40]}, {name: more, shape: [2]}]\n"),
	    "t.yaml:3:65: input 'more' is read by no gate: name it in a gate's 'from'");
	bad(net("  inputs: [{name: top, shape: [24]}, {name: rst, shape: [5, 8]}]\n"),
	    "t.yaml:6:23: unknown gate or input 'rest' in 'from' (did you mean 'rst'?)");
	bad(net("  inputs: [{name: top, shape: [24]}, {name: input, shape: [5, 8]}]\n"),
	    "t.yaml:3:45: 'input' names the whole network input: give the input another name");
	bad(net("  inputs: [{name: top, shape: [24]}, {name: a, shape: [5, 8]}]\n"),
	    "t.yaml:5:14: 'a' names a network input, not a gate");
	bad(net("  inputs: [{name: top, shape: [24]}, {name: rest, shape: [5, 8], size: 3}]\n"),
	    "t.yaml:3:66: unknown key 'size' in input 2");
	bad(net("  inputs: [{name: top}, {name: rest, shape: [5, 8]}]\n"),
	    "t.yaml:3:12: missing required key 'shape' in input 1");
	bad(net("  inputs: []\n"), "t.yaml:3:11: 'inputs' needs at least one input");
	bad(raw(TWO, "    - {from: input, layers: [{dense: 4}]}\n"),
	    "t.yaml:5:14: with network.inputs, 'from' names one of them (top, rest), not 'input'");
	bad(raw(TWO, "    - {from: [top, rest], join: concat, layers: [{dense: 4}]}\n"),
	    "t.yaml:5:14: join: concat joins on the first dimension (channels of [C, H, W], features of [F]) and needs the others equal, but input 'top' outputs [24] and input 'rest' outputs [5, 8]");
	bad(raw(TWO, "    - {from: [top, top], join: concat, layers: [{dense: 4}]}\n"),
	    "t.yaml:5:20: 'from' names 'top' twice");
	/* the first gate without from reads the first input */
	bad(raw(TWO, "    - {layers: [{dense: 4}]}\n"),
	    "t.yaml:3:38: input 'rest' is read by no gate: name it in a gate's 'from'");
	/* a gate sees its input's shape: [5, 8] into a dense that wants flat */
	bad(raw(TWO, "    - {name: a, from: top, layers: [{dense: 4}]}\n"
		"    - {name: b, from: rest, layers: [{conv2d: {filters: 2, kernel: 3}}]}\n"
		"    - {from: [a, b], join: concat, layers: [{dense: 4}]}\n"),
	    "t.yaml:6:38: layer 'conv2d' (gate 2, layer 1) cannot take the output of input 'rest': expects an image input [channels, height, width], got [5, 8]");
	bad(raw("", "    - {layers: [{dense: 4}]}\n"),
	    "t.yaml:3:3: missing required key 'input' in network");
	assert_int_equal(nwrong, 0);
}

/* --- the plan and the slices ------------------------------------------------ */

static void setup(struct tu_net *f, const char *inputs, const char *gates, const char *mode,
		  int epochs)
{
	char t[8192];

	snprintf(t, sizeof(t), NET, inputs, gates, mode, epochs);
	tu_net_setup(f, t);
}

/* The plan: each input's slice and shape, the input the sum. */
static void plan_slices(void **state)
{
	struct tu_net f;
	const struct akk_gate_plan *a, *b;

	(void)state;
	setup(&f, TWO, TWO_GATES, "flip-flop", 1);
	assert_int_equal(f.spec.ninputs, 2);
	assert_int_equal(f.spec.input.rank, 1);
	assert_int_equal(f.spec.input.d[0], 64);
	a = &f.model.gates[0];
	b = &f.model.gates[1];
	assert_true(a->src[0] == AKK_GATE_INPUT && a->src_in[0] == 0);
	assert_true(a->src_at[0] == 0 && a->src_n[0] == 24 && a->src_row[0] == 64);
	assert_true(b->src[0] == AKK_GATE_INPUT && b->src_in[0] == 1);
	assert_true(b->src_at[0] == 24 && b->src_n[0] == 40 && b->src_row[0] == 64);
	assert_true(b->in.rank == 2 && b->in.d[0] == 5 && b->in.d[1] == 8);
	assert_true(akk_gate_gathers(a) && akk_gate_gathers(b));
	assert_false(akk_gate_gathers(&f.model.gates[2]) && f.model.gates[2].nsrc == 1);
	tu_net_release(&f);
}

/* Training FLOPs (bench's GFLOP/s, the FLOP split of gates: {auto: N}):
 * no gate reading the inputs alone computes its first layer's input
 * gradient, so neither counts it; a gate that also reads a gate does. */
static void training_flops_of_input_gates(void **state)
{
	static const char *gates =
		"    - {name: a, from: top, layers: [{dense: 8}, relu]}\n"
		"    - {name: b, from: rest, layers: [{dense: 8}, tanh, flatten]}\n"
		"    - {from: [a, b, top], join: concat, layers: [{dense: 4}]}\n";
	struct tu_net f;
	const struct akk_gate_plan *a, *b, *c;

	(void)state;
	setup(&f, TWO, gates, "flip-flop", 1);
	a = &f.model.gates[0];
	b = &f.model.gates[1];
	c = &f.model.gates[2];
	assert_true(a->layers[0].flops > 0 && b->layers[0].flops > 0);
	assert_true(f.model.train_flops == 3 * f.model.flops - a->layers[0].flops -
		    b->layers[0].flops);
	assert_true(akk_layer_train_flops(a, 0, 16) == 2.0 * 16 * a->layers[0].flops);
	assert_true(akk_layer_train_flops(b, 0, 16) == 2.0 * 16 * b->layers[0].flops);
	assert_true(akk_layer_train_flops(b, 1, 16) == 3.0 * 16 * b->layers[1].flops);
	assert_true(akk_layer_train_flops(c, 0, 16) == 3.0 * 16 * c->layers[0].flops);
	tu_net_release(&f);
}

/* Each gate reading an input computes on its own slice of every sample:
 * changing one pixel moves the outputs of the gate that reads it, and
 * not the other's; and the gate's output equals the gate run on the
 * slice copied out by hand. Feeding every gate the whole sample, or the
 * same slice, fails here. */
static void gates_get_their_slices(void **state)
{
	struct tu_net f;
	struct akk_reference r;
	struct akk_err e = { 0 };
	struct akk_gate *gp[3];
	const float *outs[3];
	static float x[16 * 64], y[16 * 64], base[3][16 * 8], slice[16 * 40];
	const int B = 16;

	(void)state;
	setup(&f, TWO, TWO_GATES, "flip-flop", 1);
	assert_int_equal(akk_reference_init(&r, &f.model, &f.train, &e), 0);
	for (int i = 0; i < 3; i++)
		gp[i] = &r.gates[i];
	for (int i = 0; i < B * 64; i++)
		x[i] = (float)((i * 37) % 101) / 50.0f - 1;
	akk_flows_eval(&f.model, gp, r.flows, 0, x, B, outs);
	for (int g = 0; g < 2; g++)
		memcpy(base[g], outs[g], sizeof(float) * B * 8);
	/* pixel 5 of sample 3 is top's; pixel 30 is rest's */
	for (int which = 0; which < 2; which++) {
		int pix = which ? 30 : 5;
		memcpy(y, x, sizeof(x));
		y[3 * 64 + pix] += 0.75f;
		akk_flows_eval(&f.model, gp, r.flows, 0, y, B, outs);
		for (int g = 0; g < 2; g++) {
			int moved = memcmp(base[g], outs[g], sizeof(float) * B * 8) != 0;
			assert_int_equal(moved, g == which);
			/* other samples never move */
			assert_memory_equal(base[g], outs[g], sizeof(float) * 3 * 8);
		}
	}
	/* gate b on the slice copied by hand */
	for (int s = 0; s < B; s++)
		memcpy(slice + s * 40, x + s * 64 + 24, 40 * sizeof(float));
	const float *hand = akk_gate_eval(gp[1], 0, slice, B);
	assert_memory_equal(hand, base[1], sizeof(float) * B * 8);
	akk_reference_release(&r);
	tu_net_release(&f);
}

static void assert_same_gates(const struct akk_gate *a, const struct akk_gate *b)
{
	assert_int_equal(a->plan->nparams, b->plan->nparams);
	assert_int_equal(a->step, b->step);
	assert_memory_equal(a->params, b->params, a->plan->nparams * sizeof(float));
}

/* One named input over the whole sample trains bit for bit as
 * network.input of the same size. */
static void one_input_equals_input(void **state)
{
	static const char *const ins[2] = { "  input: [64]\n",
					    "  inputs: [{name: top, shape: [64]}]\n" };
	static const char *const gates =
		"    - {name: a, from: %s, layers: [{dense: 8}, relu]}\n"
		"    - {from: a, layers: [{dense: 4}]}\n";
	struct akk_spec s[2];
	struct akk_model m[2];
	struct akk_reference r[2];
	struct akk_dataset d;
	struct akk_err e = { 0 };
	char g[512], t[4096];

	(void)state;
	tu_dataset(&d, 400, 8, 4, 7);
	for (int i = 0; i < 2; i++) {
		snprintf(g, sizeof(g), gates, i ? "top" : "input");
		snprintf(t, sizeof(t), "data: {train: {images: x, labels: y}}\nnetwork:\n%s  gates:\n%s"
			 "optimizer: {type: adam, lr: 0.01}\nschedule: {batch_size: 16}\n", ins[i], g);
		assert_int_equal(akk_spec_parse(&s[i], t, strlen(t), "t.yaml", ".", NULL, 0, &e), 0);
		assert_int_equal(akk_model_plan(&m[i], &s[i], &e), 0);
		assert_int_equal(akk_reference_init(&r[i], &m[i], &d, &e), 0);
		for (int step = 0; step < 50; step++)
			assert_int_equal(akk_reference_step(&r[i], NULL, NULL, &e), 0);
	}
	for (int k = 0; k < 2; k++)
		assert_same_gates(&r[0].gates[k], &r[1].gates[k]);
	for (int i = 0; i < 2; i++) {
		akk_reference_release(&r[i]);
		akk_model_release(&m[i]);
		akk_spec_release(&s[i]);
	}
	akk_dataset_release(&d);
}

static int on_epoch(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		    struct akk_err *e)
{
	(void)r, (void)e;
	*(double *)ctx = rep->val_loss;
	return 0;
}

/* The actors' run; *val_loss (unless NULL) the last epoch's validation
 * loss. */
static int run_actors(struct tu_net *f, struct akk_run *r, double *val_loss,
		      struct akk_err *e)
{
	static double sink;
	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = f->spec.sched.epochs,
		.blas_threads = 1,
		.obs = { val_loss ? val_loss : &sink, NULL, on_epoch },
	};

	if (akk_run_init(r, &f->model, &f->train, &f->val, &cfg, e))
		return -1;
	return akk_run_train(r, e);
}

/* Flip-flop on the graph (inputs, gates) is bit for bit the sequential
 * reference; wheels and pipeline train it to a lower loss. */
static void equal_and_learning(const char *inputs, const char *gates)
{
	struct tu_net f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };
	double loss0, acc0, loss, acc;

	setup(&f, inputs, gates, "flip-flop", 3);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	assert_int_equal(akk_reference_evaluate(&ref, &f.val, &loss0, &acc0, &e), 0);
	for (long i = 0; i < 3 * 25; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	assert_int_equal(akk_reference_evaluate(&ref, &f.val, &loss, &acc, &e), 0);
	assert_true(loss < 0.7 * loss0 && acc > 0.9);
	if (run_actors(&f, &r, NULL, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 3 * 25);
		assert_same_gates(&r.gates[g].gate, &ref.gates[g]);
	}
	akk_run_release(&r);
	akk_reference_release(&ref);
	tu_net_release(&f);
	for (int mode = 0; mode < 2; mode++) {
		setup(&f, inputs, gates, mode ? "pipeline" : "wheels", 3);
		if (run_actors(&f, &r, &loss, &e))
			fail_msg("%s", e.msg);
		for (int g = 0; g < f.model.ngates; g++)
			assert_int_equal(r.gates[g].gate.step, 3 * 25);
		assert_true(loss < 0.7 * loss0);
		akk_run_release(&r);
		tu_net_release(&f);
	}
}

static void flipflop_equals_reference(void **state)
{
	(void)state;
	equal_and_learning(TWO, TWO_GATES);
}

/* A gate reading two inputs and a gate: the sentinel sends it one
 * message, which fills both inputs' places, and takes one credit back. */
static void gate_reads_two_inputs(void **state)
{
	struct tu_net f;
	struct akk_reference r;
	struct akk_err e = { 0 };
	struct akk_gate *gp[3];
	const float *outs[3];
	static float x[16 * 64], want[16 * 48], got[16 * 8];
	const int B = 16;

	(void)state;
	setup(&f, THREE, THREE_GATES, "flip-flop", 1);
	assert_int_equal(akk_model_inputs(&f.model), 3);
	assert_int_equal(f.model.gates[1].in.d[0], 48);
	assert_int_equal(akk_reference_init(&r, &f.model, &f.train, &e), 0);
	for (int i = 0; i < 3; i++)
		gp[i] = &r.gates[i];
	for (int i = 0; i < B * 64; i++)
		x[i] = (float)((i * 53) % 97) / 40.0f - 1;
	akk_flows_eval(&f.model, gp, r.flows, 0, x, B, outs);
	memcpy(got, outs[1], sizeof(got));	/* the gate's buffer, reused below */
	/* gate b's input: low (pixels 40-63), a's output, mid (24-39) */
	for (int s = 0; s < B; s++) {
		memcpy(want + s * 48, x + s * 64 + 40, 24 * sizeof(float));
		memcpy(want + s * 48 + 24, outs[0] + s * 8, 8 * sizeof(float));
		memcpy(want + s * 48 + 32, x + s * 64 + 24, 16 * sizeof(float));
	}
	const float *hand = akk_gate_eval(gp[1], 0, want, B);
	assert_memory_equal(hand, got, sizeof(got));
	akk_reference_release(&r);
	tu_net_release(&f);
	equal_and_learning(THREE, THREE_GATES);
}

/* An embedding on a named input checks the ids of its slice only: the
 * other input's values need not be ids, and a bad id of the slice is
 * named by its step in the slice. */
static void embedding_checks_its_slice(void **state)
{
	static const char *const yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  inputs: [{name: ids, shape: [3]}, {name: feat, shape: [5]}]\n"
		"  gates:\n"
		"    - {name: a, from: ids, layers: [{embedding: {vocab: 10, units: 4}}, flatten, {dense: 2}]}\n"
		"    - {name: b, from: feat, layers: [{dense: 2}]}\n"
		"    - {from: [a, b], join: concat, layers: [{dense: 2}]}\n"
		"optimizer: {type: adam, lr: 0.01}\n";
	float x[2 * 8] = { 1, 2, 3, 0.5f, -7.25f, 12, 100, 0.1f,
			   4, 9, 0, 3.5f, 2, 1, 0, -1 };
	struct akk_dataset d = { .n = 2, .in = 8, .c = 1, .h = 1, .w = 8, .xtype = AKK_X_F32,
				 .xf = x };
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e;
	char buf[600];

	(void)state;
	assert_int_equal(tu_parse(&s, yaml, &e), 0);
	assert_int_equal(akk_model_plan(&m, &s, &e), 0);
	assert_int_equal(akk_model_check_ids(&m, &d, "x.npy", &e), 0);
	x[8 + 1] = 10;	/* sample 2's second id: past the vocabulary */
	assert_int_equal(akk_model_check_ids(&m, &d, "x.npy", &e), -1);
	akk_err_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "x.npy: sample 2, step 2: 10 is not a token id of the first layer's vocabulary (integers 0 to 9)");
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* check --graph: a vertex per named input, side by side on the top row
 * in lanes of their own, each with an edge to the gate that reads it. */
static void graph_picture(void **state)
{
	struct tu_net f;
	struct akk_graph_layout gl;
	struct akk_err e = { 0 };
	int top = -1, rest = -1, gate_of[2] = { 0, 0 };

	(void)state;
	setup(&f, TWO, TWO_GATES, "flip-flop", 1);
	assert_int_equal(akk_graph_layout(&gl, &f.model, &e), 0);
	for (int i = 0; i < gl.nv; i++) {
		if (!strcmp(gl.v[i].kind, "input"))
			assert_true(!strcmp(gl.v[i].name, "top") || !strcmp(gl.v[i].name, "rest"));
		if (!strcmp(gl.v[i].kind, "input") && !strcmp(gl.v[i].name, "top"))
			top = i;
		if (!strcmp(gl.v[i].kind, "input") && !strcmp(gl.v[i].name, "rest"))
			rest = i;
	}
	assert_true(top >= 0 && rest >= 0);
	assert_int_equal(gl.v[top].row, gl.v[rest].row);
	assert_int_not_equal(gl.v[top].lane, gl.v[rest].lane);
	assert_string_equal(gl.v[rest].shape, "[5, 8]");
	for (int k = 0; k < gl.ne; k++) {
		if (gl.ed[k].from == top)
			gate_of[0] = gl.v[gl.ed[k].to].gate;
		if (gl.ed[k].from == rest)
			gate_of[1] = gl.v[gl.ed[k].to].gate;
	}
	assert_true(gate_of[0] == 1 && gate_of[1] == 2);
	akk_graph_layout_release(&gl);
	tu_net_release(&f);
}

/* The data must have the inputs' sizes' sum a sample: said at the inputs. */
static void data_must_fit(void **state)
{
	struct tu_net f;
	struct akk_run r;
	struct akk_err e = { 0 };
	char buf[600];

	(void)state;
	setup(&f, "  inputs: [{name: top, shape: [24]}, {name: rest, shape: [4, 8]}]\n",
	      TWO_GATES, "flip-flop", 1);
	assert_int_equal(run_actors(&f, &r, NULL, &e), -1);
	akk_err_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "test.yaml:3:11: the inputs' sizes add up to 56 (top [24] + rest [4, 8]), but the training data has 64 values a sample");
	tu_net_release(&f);
}

/* --- the command line ------------------------------------------------------ */

static char g_out[1 << 17], g_err[1 << 14];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* The config of the CLI run: inputs named a and b... as given. */
static void write_config(const char *path, const char *run, const char *top)
{
	snprintf(text, sizeof(text),
		 "data:\n  train: {images: train-images, labels: train-labels}\n"
		 "  validation: {images: test-images, labels: test-labels}\n"
		 "network:\n  inputs: [{name: %s, shape: [24]}, {name: rest, shape: [5, 8]}]\n"
		 "  gates:\n"
		 "    - {name: a, from: %s, layers: [{dense: 8}, relu]}\n"
		 "    - {name: b, from: rest, layers: [flatten, {dense: 8}, tanh]}\n"
		 "    - {from: [a, b], join: concat, layers: [{dense: 4}]}\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {epochs: 2, batch_size: 16}\n"
		 "output: {dir: %s}\n", top, top, run);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

/* libakk on the checkpoint: the inputs described, and the predictions
 * the CLI wrote (40 test samples, 4 classes). */
static void library(const char *dir, const char *ck)
{
	static float x[40 * 64], y[40 * 4];
	struct akk_dataset d;
	char msg[512], *line;
	const char *name;
	int off, size, dims[4];
	akk_model *m = akk_open(ck, msg, sizeof(msg));

	assert_non_null(m);
	assert_int_equal(akk_inputs(m), 2);
	assert_int_equal(akk_input_size(m), 64);
	assert_int_equal(akk_input(m, 1, &name, &off, &size, dims), 2);
	assert_string_equal(name, "rest");
	assert_true(off == 24 && size == 40 && dims[0] == 5 && dims[1] == 8);
	assert_int_equal(akk_input(m, 0, NULL, &off, &size, NULL), 1);
	assert_true(off == 0 && size == 24);
	assert_int_equal(akk_input(m, 2, NULL, NULL, NULL, NULL), -1);
	assert_int_equal(akk_input(NULL, 0, NULL, NULL, NULL, NULL), -1);
	tu_dataset(&d, 40, 8, 4, 2);	/* what tu_write_set wrote as "test" */
	for (size_t i = 0; i < 40 * 64; i++)
		x[i] = d.x8[i];
	akk_dataset_release(&d);
	assert_int_equal(akk_predict(m, x, 40 * 64, y, 40 * 4, msg, sizeof(msg)), 0);
	assert_int_equal(ak("predict", ck, tu_path(dir, "test-images"), NULL), 0);
	line = strchr(g_out, '\n');
	for (int i = 0; i < 40; i++) {
		int best = 0, cls = -1, idx = -1;
		for (int k = 1; k < 4; k++)
			if (y[i * 4 + k] > y[i * 4 + best])
				best = k;
		assert_non_null(line);
		assert_int_equal(sscanf(line + 1, "%d,%d", &idx, &cls), 2);
		assert_int_equal(idx, i);
		assert_int_equal(cls, best);
		line = strchr(line + 1, '\n');
	}
	akk_close(m);
}

/* check's table of the inputs; train, eval, predict, libakk; a resume
 * with the inputs renamed is refused, one with the same inputs goes on. */
static void cli_run(void **state)
{
	const char *dir = tu_tmpdir();
	char path[600], other[600], run[600], ck[700];

	(void)state;
	tu_write_set(dir, "train", 200, 8, 4, 1);
	tu_write_set(dir, "test", 40, 8, 4, 2);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(path, sizeof(path), "%s/i.yaml", dir);
	snprintf(other, sizeof(other), "%s/renamed.yaml", dir);
	write_config(path, run, "top");
	assert_int_equal(ak("check", path, NULL), 0);
	tu_assert_contains(g_out, "\ninput name             shape            slice of the sample\n"
			   "1     top              [24]             [0:24]\n"
			   "2     rest             [5, 8]           [24:64]\n");
	tu_assert_contains(g_out, "\n2     b                rest  ");
	if (ak("train", path, NULL))
		fail_msg("train: %s", g_err);
	snprintf(ck, sizeof(ck), "%s/last.bin", run);
	assert_int_equal(ak("eval", ck, "--images", tu_path(dir, "test-images"), "--labels",
			    tu_path(dir, "test-labels"), NULL), 0);
	tu_assert_contains(g_out, "samples 40 ");
	library(dir, ck);
	write_config(other, run, "upper");
	assert_int_equal(ak("train", other, "--resume", run, "--epochs", "3", NULL), 2);
	tu_assert_contains(g_err, "checkpoint does not match the network: its layers are wired otherwise: input 1: 'top' [24] against 'upper' [24]\n");
	if (ak("train", path, "--resume", run, "--epochs", "3", NULL))
		fail_msg("resume: %s", g_err);
	tu_assert_contains(g_err, "epoch 3/3: ");
	tu_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spec_errors),
		cmocka_unit_test(plan_slices),
		cmocka_unit_test(training_flops_of_input_gates),
		cmocka_unit_test(gates_get_their_slices),
		cmocka_unit_test(one_input_equals_input),
		cmocka_unit_test(flipflop_equals_reference),
		cmocka_unit_test(gate_reads_two_inputs),
		cmocka_unit_test(data_must_fit),
		cmocka_unit_test(graph_picture),
		cmocka_unit_test(embedding_checks_its_slice),
		cmocka_unit_test(cli_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
