/* test_heads.c - several outputs (network.outputs): the errors the spec
 * reports at FILE:LINE:COL, the combined loss and its weighted gradient
 * (against each head's own loss and against finite differences, at the
 * output and through a two-head graph on the shared rig), the input
 * target taken before normalize, one head equal to network.loss bit
 * for bit, flip-flop equal to the sequential reference on a two-head
 * graph, and a CLI run: check, train, eval, predict and export. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/akk.h"
#include "config/spec.h"
#include "data/batch.h"
#include "data/preprocess.h"
#include "model/heads.h"
#include "model/model.h"
#include "model/reference.h"
#include "runtime/run_internal.h"
#include "tensor/tensor.h"
#include "gradcheck.h"
#include "testutil.h"

/* A two-head network on 1x8x8 images: a graph that branches into 4
 * class logits and a 64-pixel decoder, joined by concat. %s: the
 * network's tail (outputs or loss), then mode, epochs, K. */
#define NET "data: {train: {images: x, labels: y}%s}\n"			\
	"network:\n  input: [1, 8, 8]\n  gates:\n"			/* 2-4 */ \
	"    - layers: [flatten, {dense: 16}, tanh]\n"			/* 5 */   \
	"    - layers:\n"						/* 6 */   \
	"        - graph:\n"						/* 7 */   \
	"            nodes:\n"						/* 8 */   \
	"              - {name: cls, dense: 4, from: input}\n"		/* 9 */   \
	"              - {name: dec, dense: 64, from: input}\n"		/* 10 */  \
	"              - {name: rec, sigmoid}\n"			/* 11 */  \
	"              - {concat: [cls, rec]}\n"			/* 12 */  \
	"%s"								/* 13- */ \
	"optimizer: {type: adam, lr: 0.01}\n"				\
	"schedule: {mode: %s, epochs: %d, batch_size: 16, concurrency: {train: %d, validation: 2}}\n"

#define TWO_HEADS "  outputs:\n"					/* 13 */  \
	"    - {name: class, size: 4, loss: softmax_cross_entropy, weight: 1.0, target: labels}\n" \
	"    - {name: image, size: 64, loss: mse, weight: 0.5, target: input}\n"

static char text[8192];

static const char *net(const char *data, const char *tail)
{
	snprintf(text, sizeof(text), NET, data, tail, "flip-flop", 1, 1);
	return text;
}

static int nwrong;	/* bad() calls that did not get their error */

/* Parsing (and, when it parses, planning) fails with exactly want; a
 * mismatch is printed and counted (every case is shown), a success fails
 * at once. */
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

#define OUT "  outputs:\n"
#define CLS(rest) "    - {name: class, size: 4, loss: softmax_cross_entropy" rest "}\n"
#define IMG(rest) "    - {name: image, size: 64, loss: mse, target: input" rest "}\n"

static void spec_errors(void **state)
{
	(void)state;
	bad(net("", OUT CLS("") "    - {name: image, size: 60, loss: mse, target: input}\n"),
	    "t.yaml:15:27: output 'image' compares with the input, which has 64 values, but its size is 60");
	bad(net("", OUT "    - {name: class, size: 5, loss: softmax_cross_entropy}\n" IMG("")),
	    "t.yaml:14:5: the outputs' sizes add up to 69, but the network's last layer outputs 68");
	bad(net("", OUT CLS("") "    - {name: image, size: 64, loss: mse2, target: input}\n"),
	    "t.yaml:15:37: unknown loss 'mse2' (did you mean 'mse'?)");
	bad(net("", OUT CLS(", weight: 0") IMG("")),
	    "t.yaml:14:67: 'weight' must be greater than 0, got 0");
	bad(net("", OUT CLS(", weight: -1") IMG("")),
	    "t.yaml:14:67: 'weight' must be greater than 0, got -1");
	bad(net("", OUT CLS(", weight: .inf") IMG("")),
	    "t.yaml:14:67: 'weight' must be a number, got '.inf'");
	bad(net("", OUT CLS(", weight: 1e31") IMG("")),
	    "t.yaml:14:67: 'weight' must be at most 1e+30, got 1e31");
	bad(net("", OUT CLS("") "    - {name: image, size: 64, loss: mse, target: targets}\n"),
	    "t.yaml:15:50: output 'image' compares with targets, but the data has them only with data.task: regression");
	bad(net("", OUT CLS("") "    - {name: image, size: 64, loss: softmax_cross_entropy, target: input}\n"),
	    "t.yaml:15:37: output 'image' compares with float input: its loss must be mse, mae or huber, not 'softmax_cross_entropy'");
	bad(net("", OUT CLS("") "    - {name: class, size: 64, loss: mse, target: input}\n"),
	    "t.yaml:15:7: output name 'class' is used twice (first at line 14)");
	bad(net("", OUT CLS("") "    - {name: 'im,age', size: 64, loss: mse, target: input}\n"),
	    "t.yaml:15:7: output name 'im,age' is not a name: letters, digits, '_' and '-' only (it names metrics columns)");
	bad(net("", OUT "    - {name: class, loss: softmax_cross_entropy}\n" IMG("")),
	    "t.yaml:14:7: output 'class' needs a size: with several outputs each is a slice of the network's output");
	bad(net("", OUT CLS("") IMG(", delta: 2")),
	    "t.yaml:15:57: 'delta' does not apply to loss 'mse'");
	bad(net("", OUT CLS("") IMG(", colour: red")),
	    "t.yaml:15:57: unknown key 'colour' in output 2");
	bad(net("", "  loss: mse\n" OUT CLS("") IMG("")),
	    "t.yaml:13:9: network.loss and network.outputs both given: each output names its own loss");
	bad(net(", augment: {flip: true}", OUT CLS("") IMG("")),
	    "t.yaml:15:50: output 'image' compares with the input, which data.augment changes after it is read; drop one of them");
	bad(net("", "  outputs: []\n"),
	    "t.yaml:13:12: 'outputs' needs at least one head");
	bad(net("", OUT "    - {name: class, size: 1, loss: mse}\n" IMG("")),
	    "t.yaml:14:27: output 'class' compares with class labels: it needs at least 2 outputs, not 1");
	/* with data.task regression a head compares with the targets unless
	 * told otherwise */
	bad(net(", task: regression", OUT CLS("") IMG("")),
	    "t.yaml:14:36: output 'class' compares with float targets: its loss must be mse, mae or huber, not 'softmax_cross_entropy'");
	bad(net(", task: regression", OUT CLS(", target: labels") IMG("")),
	    "t.yaml:14:67: output 'class' compares with labels, but data.task regression has none");
	assert_int_equal(nwrong, 0);
}

/* check prints the heads as a table. */
static void check_prints_heads(void **state)
{
	static char out[1 << 16], err[1 << 14];
	const char *dir = tu_tmpdir();
	char path[600];

	(void)state;
	tu_write_set(dir, "t", 20, 8, 4, 1);
	snprintf(text, sizeof(text), NET, "", TWO_HEADS, "flip-flop", 1, 1);
	snprintf(path, sizeof(path), "%s/h.yaml", dir);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	/* the data files: x and y beside the config */
	rename(tu_path(dir, "t-images"), tu_path(dir, "x"));
	rename(tu_path(dir, "t-labels"), tu_path(dir, "y"));
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "check", path, NULL), 0);
	tu_assert_contains(out, "loss per output (below)");
	tu_assert_contains(out,
		"output       slice              size  loss                     weight  target\n"
		"class        [0, 4)                4  softmax_cross_entropy         1  labels\n"
		"image        [4, 68)              64  mse                         0.5  input\n");
	tu_rm_tree(dir);
}

/* --- the combined loss ----------------------------------------------------- */

/* A spec with two heads over D = 3 + 4 outputs: a classifier (softmax CE,
 * weight wc) and a regression head (mse against targets, weight wr). */
static void two_head_spec(struct akk_spec *s, double wc, double wr)
{
	char t[2048];
	struct akk_err e;

	snprintf(t, sizeof(t),
		 "data: {train: {images: x, labels: y}}\n"
		 "network:\n  input: [4]\n  gates: [{layers: [{dense: 7}]}]\n"
		 "  outputs:\n"
		 "    - {name: c, size: 3, loss: softmax_cross_entropy, weight: %g}\n"
		 "    - {name: r, size: 4, loss: mse, weight: %g, target: input}\n"
		 "optimizer: {type: sgd, lr: 0.1}\n", wc, wr);
	if (tu_parse(s, t, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
}

/* The total is wc Lc + wr Lr, each head's own loss as the plain loss
 * gives it on its slice alone, and each slice of the gradient is its
 * head's plain gradient times its weight; the per-head sums hold each
 * head's own figures. */
static void loss_combination(void **state)
{
	enum { B = 5, D = 7 };
	struct akk_spec s;
	float out[B * D], tgt[B * D], d[B * D], zc[B * 3], zr[B * 4], tr[B * 4];
	float gc[B * 3], gr[B * 4];
	int32_t labels[B] = { 0, 2, 1, 1, 0 };
	struct akk_head_sums hs[2] = { 0 };
	long correct = 0, cc = 0;
	struct akk_reg_sums rs = { 0 }, rr = { 0 };

	(void)state;
	two_head_spec(&s, 2.0, 0.25);
	tu_fill(out, B * D, -2, 2, 11);
	tu_fill(tgt, B * D, 0, 1, 12);
	for (int b = 0; b < B; b++) {
		memcpy(zc + b * 3, out + b * D, 3 * sizeof(float));
		memcpy(zr + b * 4, out + b * D + 3, 4 * sizeof(float));
		memcpy(tr + b * 4, tgt + b * D + 3, 4 * sizeof(float));
	}
	double lc = akk_loss(AKK_LOSS_SOFTMAX_CE, 1, gc, zc, labels, B, 3, &cc);
	double lr = akk_loss_targets(AKK_LOSS_MSE, 1, gr, zr, tr, B, 4, &rr);
	double l = akk_heads_loss(&s, D, d, out, labels, tgt, B, &correct, &rs, hs);

	assert_true(fabs(l - (2.0 * lc + 0.25 * lr)) <= 1e-12 * fabs(l));
	assert_true(lc > 0.1 && lr > 0.1);
	for (int b = 0; b < B; b++) {
		for (int j = 0; j < 3; j++)
			assert_float_equal(d[b * D + j], 2.0f * gc[b * 3 + j], 1e-7);
		for (int j = 0; j < 4; j++)
			assert_float_equal(d[b * D + 3 + j], 0.25f * gr[b * 4 + j], 1e-7);
	}
	/* the model's accuracy is the classifier's, its RMSE the other's */
	assert_int_equal(correct, cc);
	assert_true(rs.sse == rr.sse && rs.n == rr.n && rs.n == B * 4);
	assert_true(fabs(hs[0].loss - lc * B) < 1e-12 && fabs(hs[1].loss - lr * B) < 1e-12);
	assert_int_equal(hs[0].samples, B);
	assert_int_equal(hs[0].correct, cc);
	assert_true(fabs(hs[1].reg.sse - rr.sse) < 1e-9 && hs[1].reg.n == rr.n);
	akk_spec_release(&s);
}

/* The gradient of the combined loss against central differences of the
 * combined loss itself, for weights far from 1 (a weight left out of the
 * gradient, or of the total, is off by a factor of 3 or more). */
static void loss_gradient(void **state)
{
	enum { B = 4, D = 7 };
	struct akk_spec s;
	float out[B * D], tgt[B * D], ana[B * D], num[B * D];
	int32_t labels[B] = { 2, 0, 1, 2 };

	(void)state;
	two_head_spec(&s, 3.0, 0.2);
	tu_fill(out, B * D, -1, 1, 21);
	tu_fill(tgt, B * D, 0, 1, 22);
	akk_heads_loss(&s, D, ana, out, labels, tgt, B, NULL, NULL, NULL);
	for (int k = 0; k < B * D; k++) {
		float v = out[k];
		out[k] = v + GRAD_EPS;
		double lp = akk_heads_loss(&s, D, NULL, out, labels, tgt, B, NULL, NULL, NULL);
		out[k] = v - GRAD_EPS;
		double lm = akk_heads_loss(&s, D, NULL, out, labels, tgt, B, NULL, NULL, NULL);
		out[k] = v;
		num[k] = (float)((lp - lm) / (2 * GRAD_EPS));
	}
	check_close("combined loss", "dout", num, ana, B * D, GRAD_TOL);
	akk_spec_release(&s);
}

/* The combined loss of the rig's output (the layer's forward as rig_loss
 * runs it) against labels and targets; its gradient into g->r when grad. */
static double rig_heads_loss(struct rig *g, const struct akk_spec *s, const int32_t *labels,
			     const float *targets, int grad)
{
	rig_loss(g);
	return akk_heads_loss(s, (int)g->nout, grad ? g->r : NULL, g->y, labels, targets,
			      g->B, NULL, NULL, NULL);
}

/* Through a two-head graph (a classifier and a sigmoid decoder of the
 * input, joined by concat) with weights 2 and 0.3: the parameters' and
 * the input's gradients of the combined loss against its central
 * differences, on the shared rig (gradcheck.h). */
static void graph_gradient(void **state)
{
	enum { B = 3, IN = 6, NOUT = 9 };
	struct akk_spec s;
	struct akk_err e;
	struct rig g = { 0 };
	int32_t labels[B] = { 1, 0, 2 };
	float targets[B * NOUT];
	const char *t =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n  input: [6]\n  gates:\n"
		"    - layers:\n        - graph:\n            nodes:\n"
		"              - {name: cls, dense: 3, from: input}\n"
		"              - {name: dec, dense: 6, from: input}\n"
		"              - {name: rec, sigmoid}\n"
		"              - {concat: [cls, rec]}\n"
		"  outputs:\n"
		"    - {name: c, size: 3, loss: softmax_cross_entropy, weight: 2}\n"
		"    - {name: r, size: 6, loss: mse, weight: 0.3, target: input}\n"
		"optimizer: {type: sgd, lr: 0.1}\n";

	(void)state;
	if (tu_parse(&s, t, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	rig_open(&g, &s.gates[0].layers[0], s.input, B, X_PLAIN);
	assert_int_equal(g.nout, NOUT);
	size_t np = g.l.nparams, nx = (size_t)B * IN;
	float *num = alloc_nan(np > nx ? np : nx), *dp = alloc_nan(np), *dx = alloc_nan(nx);
	/* the decoder's target: the input as it was, fixed while x moves */
	for (int b = 0; b < B; b++)
		for (int k = 0; k < IN; k++)
			targets[b * NOUT + 3 + k] = 0.5f + 0.4f * g.x[b * IN + k];
	memset(g.dp, 0, np * sizeof(float));
	rig_heads_loss(&g, &s, labels, targets, 1);
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, B);
	memcpy(dp, g.dp, np * sizeof(float));
	memcpy(dx, g.dx, nx * sizeof(float));
	for (size_t i = 0; i < np + nx; i++) {
		float *v = i < np ? &g.p[i] : &g.x[i - np], keep = *v;
		*v = keep + GRAD_EPS;
		double lp = rig_heads_loss(&g, &s, labels, targets, 0);
		*v = keep - GRAD_EPS;
		double lm = rig_heads_loss(&g, &s, labels, targets, 0);
		*v = keep;
		num[i < np ? i : i - np] = (float)((lp - lm) / (2.0 * GRAD_EPS));
		if (i + 1 == np)
			check_close("dp", "two heads", num, dp, np, GRAD_TOL);
	}
	check_close("dx", "two heads", num, dx, nx, GRAD_TOL);
	akk_free(num);
	akk_free(dp);
	akk_free(dx);
	rig_close(&g);
	akk_spec_release(&s);
}

/* A head compared with the input gets the stored values over data.scale,
 * not the normalized input the network reads; a classifier head's slice
 * of the targets row is left alone. */
static void input_target_before_normalize(void **state)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset d;
	struct akk_preprocess pre;
	struct akk_batch b;
	struct akk_err e;

	(void)state;
	snprintf(text, sizeof(text), NET, ", normalize: {mean: 0.5, std: 0.25}", TWO_HEADS,
		 "flip-flop", 1, 1);
	if (tu_parse(&s, text, &e) || akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	tu_dataset(&d, 10, 8, 4, 3);
	assert_int_equal(akk_preprocess_init(&pre, &s.data, 64, 1, &d, &e), 0);
	assert_int_equal(akk_batch_alloc(&b, 4, 64, 68, 1), 0);
	b.tmap = &m.tmap;
	assert_int_equal(m.tmap.n, 1);
	for (int i = 0; i < 4 * 68; i++)
		b.targets[i] = -7;
	akk_batch_fill(&b, &d, NULL, 1, 4, &pre);
	for (int j = 0; j < 4; j++) {
		for (int k = 0; k < 4; k++)
			assert_true(b.targets[j * 68 + k] == -7);
		for (int k = 0; k < 64; k++) {
			float raw = d.x8[(4 + j) * 64 + k];
			assert_true(b.targets[j * 68 + 4 + k] == raw / 255.0f);
			assert_float_equal(b.x[j * 64 + k], (raw / 255.0f - 0.5f) / 0.25f, 1e-5);
		}
	}
	akk_batch_release(&b);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* --- training --------------------------------------------------------------- */

static void setup(struct tu_net *f, const char *tail, const char *mode, int epochs)
{
	char t[8192];

	snprintf(t, sizeof(t), NET, "", tail, mode, epochs, 1);
	tu_net_setup(f, t);
}

static void assert_same_gates(const struct akk_gate *a, const struct akk_gate *b)
{
	assert_int_equal(a->plan->nparams, b->plan->nparams);
	assert_int_equal(a->step, b->step);
	assert_memory_equal(a->params, b->params, a->plan->nparams * sizeof(float));
	assert_memory_equal(a->state, b->state, a->plan->nstate * sizeof(float));
}

/* One head over the whole output, weight 1, trains bit for bit as
 * network.loss with the same loss, for a softmax classifier and for mse
 * against the one-hot label; and a weight of 2 does not. */
static void single_head_equals_loss(void **state)
{
	static const char *const pairs[][2] = {
		{ "  loss: softmax_cross_entropy\n",
		  "  outputs: [{name: all, loss: softmax_cross_entropy}]\n" },
		{ "  loss: mse\n", "  outputs: [{name: all, loss: mse, weight: 1}]\n" },
		{ "  loss: softmax_cross_entropy\n",
		  "  outputs: [{name: all, loss: softmax_cross_entropy, weight: 2}]\n" },
	};

	(void)state;
	for (int k = 0; k < 3; k++) {
		struct tu_net f[2];
		struct akk_reference r[2];
		struct akk_err e = { 0 };
		double loss[2], acc[2];

		for (int i = 0; i < 2; i++) {
			setup(&f[i], pairs[k][i], "flip-flop", 1);
			assert_int_equal(akk_reference_init(&r[i], &f[i].model, &f[i].train, &e), 0);
			for (int step = 0; step < 25; step++)
				assert_int_equal(akk_reference_step(&r[i], NULL, NULL, &e), 0);
			assert_int_equal(akk_reference_evaluate(&r[i], &f[i].val, &loss[i],
								&acc[i], &e), 0);
		}
		for (int g = 0; g < f[0].model.ngates; g++) {
			const struct akk_gate *a = &r[0].gates[g], *b = &r[1].gates[g];
			int same = !memcmp(a->params, b->params, a->plan->nparams * sizeof(float));
			assert_int_equal(same, k < 2);
		}
		if (k < 2) {
			assert_true(loss[0] == loss[1]);
			assert_true(acc[0] == acc[1]);
		}
		for (int i = 0; i < 2; i++) {
			akk_reference_release(&r[i]);
			tu_net_release(&f[i]);
		}
	}
}

static int run_actors(struct tu_net *f, struct akk_run *r,
		      struct akk_observer obs, struct akk_err *e)
{
	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = f->spec.sched.epochs,
		.blas_threads = 1, .obs = obs,
	};

	if (akk_run_init(r, &f->model, &f->train, &f->val, &cfg, e))
		return -1;
	return akk_run_train(r, e);
}

struct seen {
	int epochs;
	double first[2 * AKK_MAX_HEADS], last[2 * AKK_MAX_HEADS], val[2 * AKK_MAX_HEADS];
	double loss;
};

static int on_epoch(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		    struct akk_err *e)
{
	struct seen *c = ctx;

	(void)r, (void)e;
	assert_int_equal(rep->nheads, 2);
	if (!c->epochs++)
		memcpy(c->first, rep->train_heads, sizeof(c->first));
	memcpy(c->last, rep->train_heads, sizeof(c->last));
	memcpy(c->val, rep->val_heads, sizeof(c->val));
	c->loss = rep->val_loss;
	return 0;
}

/* Flip-flop on the two-head graph is bit for bit the sequential
 * reference, and both heads learn: the class accuracy rises, the
 * reconstruction RMSE falls; the epoch's validation loss is the weighted
 * sum of the heads' losses. */
static void flipflop_equals_reference(void **state)
{
	struct tu_net f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct seen c = { 0 };

	(void)state;
	setup(&f, TWO_HEADS, "flip-flop", 3);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 3 * 25; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	if (run_actors(&f, &r, (struct akk_observer){ &c, NULL, on_epoch }, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 3 * 25);
		assert_same_gates(&r.gates[g].gate, &ref.gates[g]);
	}
	assert_int_equal(c.epochs, 3);
	assert_true(c.last[1] > c.first[1] && c.val[1] > 0.9);
	assert_true(c.last[3] < 0.8 * c.first[3]);
	assert_true(fabs(c.loss - (c.val[0] + 0.5 * c.val[2])) < 1e-9);
	akk_run_release(&r);
	akk_reference_release(&ref);
	tu_net_release(&f);
}

/* --- the command line -------------------------------------------------------- */

static char g_out[1 << 17], g_err[1 << 14];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* The 40 test images of dir as raw floats in x (40 x 64). */
static void test_inputs(const char *dir, float *x)
{
	struct akk_dataset d;

	tu_dataset(&d, 40, 8, 4, 2);	/* what tu_write_set wrote as "test" */
	for (size_t i = 0; i < 40 * 64; i++)
		x[i] = d.x8[i];
	akk_dataset_release(&d);
	(void)dir;
}

/* predict writes every head (a classifier as its class and probability,
 * the decoder as its 64 values) or, with --head, one; libakk reports the
 * heads and gives the same rows; the ONNX export has one output per head,
 * and onnxruntime's outputs equal libakk's within 1e-5 (skipped without
 * onnxruntime-node). */
static void predict_and_export(const char *dir, const char *ck)
{
	static float x[40 * 64], lib[40 * 68];
	char want[2048], msg[512], model[700], f32[700], outs[700];
	const char *name;
	int n = 0, off, size, cls;
	akk_model *m;

	n += snprintf(want + n, sizeof(want) - n, "index,class,class_probability");
	for (int k = 1; k <= 64; k++)
		n += snprintf(want + n, sizeof(want) - n, ",image_%d", k);
	assert_int_equal(ak("predict", ck, tu_path(dir, "test-images"), NULL), 0);
	tu_assert_prefix(g_out, want);
	assert_int_equal(ak("predict", ck, tu_path(dir, "test-images"), "--head", "image", NULL), 0);
	tu_assert_prefix(g_out, "index,value1,value2,");
	tu_assert_not_contains(g_out, "value65");
	assert_int_equal(ak("predict", ck, tu_path(dir, "test-images"), "--head", "class",
			    "--top", "2", NULL), 0);
	tu_assert_prefix(g_out, "index,predicted,probability,top2,probability2\n");
	assert_int_equal(ak("predict", ck, tu_path(dir, "test-images"), "--head", "nope", NULL), 2);
	tu_assert_contains(g_err, "--head nope: the network has no output of that name\n");

	m = akk_open(ck, msg, sizeof(msg));
	assert_non_null(m);
	assert_int_equal(akk_heads(m), 2);
	assert_int_equal(akk_outputs(m), 68);
	assert_int_equal(akk_head(m, 1, &name, &off, &size, &cls), 0);
	assert_string_equal(name, "image");
	assert_int_equal(off, 4);
	assert_int_equal(size, 64);
	assert_int_equal(cls, 0);
	assert_int_equal(akk_head(m, 0, NULL, &off, &size, &cls), 0);
	assert_true(off == 0 && size == 4 && cls == 1);
	assert_int_equal(akk_head(m, 2, NULL, NULL, NULL, NULL), -1);
	test_inputs(dir, x);
	assert_int_equal(akk_predict(m, x, 40 * 64, lib, 40 * 68, msg, sizeof(msg)), 0);
	for (int i = 0; i < 40; i++) {
		double sum = 0;
		for (int k = 0; k < 4; k++)
			sum += lib[i * 68 + k];
		assert_true(fabs(sum - 1) < 1e-5);	/* a softmax over the class head alone */
	}
	akk_close(m);

	snprintf(model, sizeof(model), "%s/h.onnx", dir);
	assert_int_equal(ak("export", ck, "--onnx", model, NULL), 0);
	tu_assert_contains(g_out, "float32 raw values, outputs 'class' [N, 4], 'image' [N, 64]\n");
	/* python3-onnx's checker, and the operator that writes each output */
	const char *check[] = { "/usr/bin/python3", "tests/onnx/check.py", "--heads", "class,image",
				model, NULL };
	int crc = tu_run(check, g_out, sizeof(g_out), g_err, sizeof(g_err));
	if (crc == 3 || crc == 127 || crc < 0) {
		print_message("python3-onnx is not there: the ONNX model is not checked\n");
	} else {
		char line[800];
		assert_int_equal(crc, 0);
		snprintf(line, sizeof(line), "ok %s: last node class Softmax, image Identity", model);
		tu_assert_line(g_out, line);
	}
	snprintf(f32, sizeof(f32), "%s/x.f32", dir);
	snprintf(outs, sizeof(outs), "%s/y.f32", dir);
	assert_int_equal(tu_write_file(f32, x, sizeof(x)), 0);
	const char *argv[] = { "node", "tests/onnx/run.js", model, f32, "1,8,8", outs, NULL };
	int rc = tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err));
	if (rc == 3 || rc == 127 || rc < 0) {
		print_message("onnxruntime-node is not there: the ONNX outputs are not run\n");
		return;
	}
	assert_int_equal(rc, 0);
	tu_assert_line(g_out, "outputs class [40, 4], image [40, 64]");
	size_t len;
	float *ort = (float *)tu_slurp(outs, &len);
	assert_non_null(ort);
	assert_int_equal(len, sizeof(lib));
	double worst = 0;
	for (int i = 0; i < 40 * 68; i++)
		worst = fmax(worst, fabs((double)ort[i] - lib[i]) / fmax(1, fabs(lib[i])));
	print_message("two heads: max |onnxruntime - libakk| = %.3g\n", worst);
	assert_true(worst <= 1e-5);
	free(ort);
}

/* train, eval, predict and export a two-head model. */
static void cli_run(void **state)
{
	const char *dir = tu_tmpdir();
	char path[600], run[600], ck[700], line[256];
	char *csv;

	(void)state;
	tu_write_set(dir, "train", 200, 8, 4, 1);
	tu_write_set(dir, "test", 40, 8, 4, 2);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(text, sizeof(text),
		 "data:\n  train: {images: train-images, labels: train-labels}\n"
		 "  validation: {images: test-images, labels: test-labels}\n"
		 "network:\n  input: [1, 8, 8]\n  gates:\n"
		 "    - layers: [flatten, {dense: 16}, tanh]\n"
		 "    - layers:\n        - graph:\n            nodes:\n"
		 "              - {name: cls, dense: 4, from: input}\n"
		 "              - {name: dec, dense: 64, from: input}\n"
		 "              - {name: rec, sigmoid}\n"
		 "              - {concat: [cls, rec]}\n"
		 TWO_HEADS
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {epochs: 3, batch_size: 16}\n"
		 "output: {dir: %s}\n", run);
	snprintf(path, sizeof(path), "%s/h.yaml", dir);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	if (ak("train", path, NULL))
		fail_msg("train: %s", g_err);
	tu_assert_contains(g_err, "  train  class loss ");
	tu_assert_contains(g_err, "  final validation:  class loss ");
	csv = tu_slurp(tu_path(run, "metrics.csv"), NULL);
	assert_non_null(csv);
	tu_assert_prefix(csv, "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,"
			 "weight_version_min,weight_version_max,class_loss,class_acc,image_loss,image_rmse\n");
	free(csv);
	/* a resume checks the file's columns, the heads' included */
	if (ak("train", path, "--resume", run, "--epochs", "4", NULL))
		fail_msg("resume: %s", g_err);
	tu_assert_contains(g_err, "epoch 4/4: ");
	csv = tu_slurp(tu_path(run, "metrics.csv"), NULL);
	assert_non_null(csv);
	tu_assert_contains(csv, "\n4,validation,40,");
	free(csv);

	snprintf(ck, sizeof(ck), "%s/last.bin", run);
	assert_int_equal(ak("eval", ck, "--images", tu_path(dir, "test-images"), "--labels",
			    tu_path(dir, "test-labels"), NULL), 0);
	tu_assert_contains(g_out, "\noutput             loss  metrics\n");
	snprintf(line, sizeof(line), "class        ");
	tu_assert_contains(g_out, line);
	tu_assert_contains(g_out, "  accuracy ");
	tu_assert_contains(g_out, "image        ");
	tu_assert_contains(g_out, " dB\n");
	predict_and_export(dir, ck);
	tu_rm_tree(dir);
}

/* bench on synthetic data (the config's files are missing) labels its
 * samples for the classifier head: 4 classes, not the 68 outputs. */
static void bench_synthetic(void **state)
{
	const char *dir = tu_tmpdir();
	char path[600];

	(void)state;
	snprintf(text, sizeof(text), NET, "", TWO_HEADS, "flip-flop", 1, 1);
	snprintf(path, sizeof(path), "%s/h.yaml", dir);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	if (ak("bench", "--config", path, "--mode", "flip-flop", "--steps", "4", NULL))
		fail_msg("bench: %s", g_err);
	tu_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spec_errors),
		cmocka_unit_test(check_prints_heads),
		cmocka_unit_test(loss_combination),
		cmocka_unit_test(loss_gradient),
		cmocka_unit_test(graph_gradient),
		cmocka_unit_test(input_target_before_normalize),
		cmocka_unit_test(single_head_equals_loss),
		cmocka_unit_test(flipflop_equals_reference),
		cmocka_unit_test(cli_run),
		cmocka_unit_test(bench_synthetic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
