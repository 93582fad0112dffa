/* test_recurrent.c - the recurrent kinds: lstm, gru, rnn.
 *
 * Finite differences (gradcheck.h) for every kind, return_sequences and
 * direction, with T = 1 and B = 1 among the cases. References:
 * tests/ref/recurrent.txt, written by tests/ref/gen_recurrent.py, an
 * independent numpy implementation of torch's documented nn.LSTM, nn.GRU
 * and nn.RNN equations (per sample and step, batch-major, nothing shared
 * with the C kernels' time-major batched layout), holds inputs,
 * parameters and output gradients with the outputs and gradients; ours
 * must match within 1e-5 (relative above 1). Plans: shapes, parameter
 * counts and views, the errors for what the kinds cannot take. End to end:
 * a small sequence config trained by `akkctl train`, whose loss falls. */
#include "testutil.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "model/model.h"
#include "model/reference.h"
#include "nn/layer.h"
#include "nn/recurrent.h"
#include "runtime/run_internal.h"
#include "tensor/tensor.h"

#define REF_TOL 1e-5

static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static struct akk_shape seq_shape(int T, int F)
{
	return (struct akk_shape){ 2, { T, F, 0 } };
}

static struct akk_layer_spec rec_of(const struct akk_layer_ops *ops, int H,
				    int seq, int dir, int relu)
{
	struct akk_layer_spec sp = { .ops = ops, .units = H };

	sp.AKK_REC_SEQ = seq;
	sp.AKK_REC_DIR = dir;
	sp.AKK_REC_ACT = relu;
	return sp;
}

/* ---- finite differences ---- */

/* Every return_sequences x direction on [T, F] with B samples. */
static void grad_all(const struct akk_layer_ops *ops, int relu)
{
	static const int cases[][4] = {	/* T, F, H, B */
		{ 4, 3, 3, 2 }, { 1, 3, 2, 2 }, { 3, 2, 4, 1 }, { 5, 2, 2, 3 },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (int seq = 0; seq <= 1; seq++)
			for (int dir = 0; dir <= AKK_REC_BIDIRECTIONAL; dir++) {
				struct akk_layer_spec sp = rec_of(ops, cases[c][2], seq,
								  dir, relu);
				grad_check(&sp, seq_shape(cases[c][0], cases[c][1]),
					   cases[c][3], relu ? X_AWAY0 : X_PLAIN);
			}
}

static void t_grad_lstm(void **state)
{
	(void)state;
	grad_all(&akk_layer_lstm, 0);
}

/* Inside a residual block (y = lstm(x) + x, then a gru over the sum in
 * the inner chain's second layer): the composite lends its sub-layers
 * their aux and scratch per call (work_sample included). */
static void t_grad_in_residual(void **state)
{
	struct akk_layer_spec inner[2] = {
		rec_of(&akk_layer_lstm, 3, 1, AKK_REC_BIDIRECTIONAL, 0),
		rec_of(&akk_layer_gru, 3, 1, AKK_REC_REVERSE, 0),
	};
	struct akk_layer_spec sp = { .ops = &akk_layer_residual, .inner = inner,
				     .ninner = 2 };

	(void)state;
	grad_check(&sp, seq_shape(4, 3), 2, X_PLAIN);
}

/* ---- the vectorized activations ---- */

/* akk_rec_sigmoid and akk_rec_tanh against double precision over
 * [-30, 30] in steps that cross every branch (tanh's 0.625, the exp
 * clamps at -87 and 88 through 2x and -x), tiny values, +-0 and huge
 * ones, at a length with a tail: within 4 ulp of the exact value. */
static void t_activations(void **state)
{
	enum { N = 120011 };	/* not a multiple of 8 */
	float *v = alloc_nan(N), *x = alloc_nan(N);
	double worst_s = 0, worst_t = 0;

	(void)state;
	for (int i = 0; i < N; i++)
		x[i] = -30.0f + 60.0f * (float)i / (N - 1);
	x[0] = 0.0f;
	x[1] = -0.0f;
	x[2] = 1e-30f;
	x[3] = -3e-8f;
	x[4] = 100.0f;
	x[5] = -100.0f;
	x[6] = 0.625f;
	x[7] = -0.62499994f;
	for (int pass = 0; pass < 2; pass++) {
		memcpy(v, x, N * sizeof(float));
		if (pass)
			akk_rec_tanh(v, N);
		else
			akk_rec_sigmoid(v, N);
		for (int i = 0; i < N; i++) {
			double want = pass ? tanh(x[i]) : 1 / (1 + exp(-(double)x[i]));
			/* ulps of the float nearest to want; below the
			 * smallest normal (sigmoid(-100), 3.7e-44) the clamp
			 * gives 6e-39: within that normal, absolute */
			double ulp = fabs(want) * 0x1p-23;
			double err = fabs(v[i] - want) < 0x1p-126 &&
				     fabs(want) < 0x1p-126 ? 0 : fabs(v[i] - want) / ulp;
			if (pass)
				worst_t = fmax(worst_t, err);
			else
				worst_s = fmax(worst_s, err);
			if (!(err <= 4))
				fail_msg("%s(%.9g) = %.9g, want %.9g (%.1f ulp)",
					 pass ? "tanh" : "sigmoid", x[i], v[i], want, err);
		}
	}
	print_message("sigmoid within %.2f ulp, tanh within %.2f ulp\n", worst_s, worst_t);
	/* the baseline body (4-float vectors) gives the best body's bits */
	for (int pass = 0; pass < 2; pass++) {
		float *b = alloc_nan(N);

		memcpy(v, x, N * sizeof(float));
		memcpy(b, x, N * sizeof(float));
		(pass ? akk_rec_tanh : akk_rec_sigmoid)(v, N);
		akk_rec_vmath_baseline(1);
		(pass ? akk_rec_tanh : akk_rec_sigmoid)(b, N);
		akk_rec_vmath_baseline(0);
		assert_memory_equal(b, v, N * sizeof(float));
		akk_free(b);
	}
	akk_free(v);
	akk_free(x);
}

/* ---- the numpy reference ---- */

static const struct akk_layer_ops *kind_of(const char *name)
{
	const struct akk_layer_ops *ops = akk_layer_find(name);

	if (!ops)
		fail_msg("unknown kind '%s' in the fixture", name);
	return ops;
}

static void expect_close(const char *what, int ncase, const float *got,
			 const float *want, size_t n)
{
	double err = tu_max_rel_err(got, want, n, 1.0);

	if (!(err <= REF_TOL))
		fail_msg("case %d: %s off by %g from the reference", ncase, what,
			 err);
}

/* One case of the fixture against our kernels: forward, then backward
 * with dx written and dp accumulated from zero; 0 at the end of the file. */
static int reference_case(FILE *f, int ncase)
{
	char kind[16];
	int T, F, H, B, seq, dir, act;
	struct akk_layer_spec sp;
	struct rig g;
	size_t n, ny;
	float *x, *pv, *dy, *y, *dx, *dp;

	if (fscanf(f, " case %15s %d %d %d %d %d %d %d", kind, &T, &F, &H, &B,
		   &seq, &dir, &act) != 8)
		return 0;
	sp = rec_of(kind_of(kind), H, seq, dir, act);
	rig_open(&g, &sp, seq_shape(T, F), B, X_PLAIN);
	ny = (size_t)B * g.nout;
	x = read_values(f, "x", &n);
	assert_int_equal(n, (size_t)B * g.nin);
	pv = read_values(f, "p", &n);
	assert_int_equal(n, g.l.nparams);
	dy = read_values(f, "dy", &n);
	assert_int_equal(n, ny);
	y = read_values(f, "y", &n);
	dx = read_values(f, "dx", &n);
	dp = read_values(f, "dp", &n);
	memcpy(g.x, x, (size_t)B * g.nin * sizeof(float));
	memcpy(g.p, pv, g.l.nparams * sizeof(float));
	memcpy(g.r, dy, ny * sizeof(float));
	g.l.ops->forward(&g.l, g.y, g.aux, g.s, g.work, g.x, g.p, B, 1, NULL);
	expect_close("y", ncase, g.y, y, ny);
	memset(g.dp, 0, g.l.nparams * sizeof(float));
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, B);
	expect_close("dx", ncase, g.dx, dx, (size_t)B * g.nin);
	expect_close("dp", ncase, g.dp, dp, g.l.nparams);
	/* the evaluation forward computes the same */
	for (size_t i = 0; i < ny; i++)
		g.y[i] = NAN;
	g.l.ops->forward(&g.l, g.y, g.aux, g.s, g.work, g.x, g.p, B, 0, NULL);
	expect_close("y (evaluation)", ncase, g.y, y, ny);
	akk_free(x);
	akk_free(pv);
	akk_free(dy);
	akk_free(y);
	akk_free(dx);
	akk_free(dp);
	rig_close(&g);
	return 1;
}

/* Counts the cases of kind (NULL: all) that match. */
static int reference(const char *only)
{
	FILE *f = fopen("tests/ref/recurrent.txt", "r");
	char line[256];
	int ncase = 0, nkind = 0;

	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));	/* the header */
	assert_int_equal(line[0], '#');
	for (;;) {
		long at = ftell(f);
		char kind[16];
		if (fscanf(f, " case %15s", kind) != 1)
			break;
		if (only && strcmp(kind, only)) {	/* skip the rest of the
							 * case line and 6 more */
			int ch, lines = 0;
			while (lines < 7 && (ch = fgetc(f)) != EOF)
				lines += ch == '\n';
			ncase++;
			continue;
		}
		fseek(f, at, SEEK_SET);
		assert_true(reference_case(f, ++ncase));
		nkind++;
	}
	fclose(f);
	assert_int_equal(ncase, 18);	/* every case was read */
	return nkind;
}

static void t_reference_lstm(void **state)
{
	(void)state;
	assert_int_equal(reference("lstm"), 6);
}

static void t_reference_gru(void **state)
{
	(void)state;
	assert_int_equal(reference("gru"), 6);
}

static void t_reference_rnn(void **state)
{
	(void)state;
	assert_int_equal(reference("rnn"), 6);
}

/* ---- plans ---- */

static void t_plans(void **state)
{
	struct akk_layer l;
	struct akk_layer_spec sp = rec_of(&akk_layer_lstm, 8, 0, 0, 0);
	const char *m;

	(void)state;
	plan_ok(&l, &sp, seq_shape(6, 3));
	assert_int_equal(l.out.rank, 1);
	assert_int_equal(l.out.d[0], 8);
	assert_int_equal(l.nparams, 32 * 3 + 32 * 8 + 64);
	assert_int_equal(l.nviews, 4);
	assert_string_equal(l.views[0].name, "weight_ih");
	assert_int_equal(l.views[0].dims[0], 32);
	assert_int_equal(l.views[0].dims[1], 3);
	assert_string_equal(l.views[1].name, "weight_hh");
	assert_int_equal(l.views[1].off, 32 * 3);
	assert_int_equal(l.views[1].dims[1], 8);
	assert_string_equal(l.views[3].name, "bias_hh");
	assert_int_equal(l.views[3].off, 32 * 3 + 32 * 8 + 32);
	/* input products, recurrent ones from step 2, biases, the cell */
	assert_true(l.flops == 2.0 * 6 * 3 * 32 + 2.0 * 5 * 8 * 32 + 2.0 * 6 * 32 +
		    6 * 8 * 9);
	assert_int_equal(l.aux, 6 * 8 * (4 + 1 + 1));

	sp = rec_of(&akk_layer_lstm, 8, 1, AKK_REC_BIDIRECTIONAL, 0);
	plan_ok(&l, &sp, seq_shape(6, 3));
	assert_int_equal(l.out.rank, 2);
	assert_int_equal(l.out.d[0], 6);
	assert_int_equal(l.out.d[1], 16);
	assert_int_equal(l.nparams, 2 * (32 * 3 + 32 * 8 + 64));
	assert_int_equal(l.nviews, 8);
	assert_string_equal(l.views[4].name, "weight_ih_reverse");
	assert_int_equal(l.views[4].off, 32 * 3 + 32 * 8 + 64);
	assert_string_equal(l.views[7].name, "bias_hh_reverse");

	sp = rec_of(&akk_layer_lstm, 8, 0, 0, 0);
	assert_non_null(m = plan_err(&sp, (struct akk_shape){ 1, { 12 } }));
	assert_string_equal(m, "expects a sequence [T, features], got [12] "
			    "(network.input: [T, F] is one)");
	assert_non_null(m = plan_err(&sp, (struct akk_shape){ 3, { 1, 4, 4 } }));
	tu_assert_prefix(m, "expects a sequence [T, features], got [1, 4, 4]");
	sp.units = 0;
	assert_non_null(m = plan_err(&sp, seq_shape(6, 3)));
	assert_string_equal(m, "expects units > 0, got 0");
	sp = rec_of(&akk_layer_lstm, 1 << 20, 0, 0, 0);
	assert_non_null(m = plan_err(&sp, seq_shape(6, 3)));
	tu_assert_contains(m, "parameters, more than");

	/* the others: G = 3 and 1, the same checks */
	sp = rec_of(&akk_layer_gru, 5, 1, AKK_REC_REVERSE, 0);
	plan_ok(&l, &sp, seq_shape(4, 2));
	assert_int_equal(l.out.d[0], 4);
	assert_int_equal(l.out.d[1], 5);
	assert_int_equal(l.nparams, 15 * 2 + 15 * 5 + 30);
	assert_int_equal(l.views[0].dims[0], 15);
	assert_int_equal(l.aux, 4 * 5 * (3 + 1 + 1));
	sp = rec_of(&akk_layer_rnn, 5, 0, AKK_REC_BIDIRECTIONAL, 1);
	plan_ok(&l, &sp, seq_shape(4, 2));
	assert_int_equal(l.out.rank, 1);
	assert_int_equal(l.out.d[0], 10);
	assert_int_equal(l.nparams, 2 * (5 * 2 + 5 * 5 + 10));
	assert_int_equal(l.aux, 2 * 4 * 5 * 2);
	for (int k = 0; k < 2; k++) {
		sp = rec_of(k ? &akk_layer_rnn : &akk_layer_gru, 0, 0, 0, 0);
		assert_non_null(m = plan_err(&sp, seq_shape(6, 3)));
		assert_string_equal(m, "expects units > 0, got 0");
		sp.units = 3;
		assert_non_null(m = plan_err(&sp, (struct akk_shape){ 1, { 18 } }));
		tu_assert_prefix(m, "expects a sequence [T, features], got [18]");
	}
}

/* What a config says wrong about a recurrent layer: exit status 2 and the
 * place in the file. */
static void t_config_errors(void **state)
{
	static const struct {
		const char *layer;
		int rank;	/* of network.input */
		const char *err;	/* after "akkctl: FILE:" */
	} cases[] = {
		{ "{lstm: {units: 4, direction: sideways}}", 2,
		  "8:45: unknown direction 'sideways'" },
		{ "{lstm: 0}", 2, "8:23: 'units' must be at least 1, got 0" },
		{ "{gru: {return_sequences: true}}", 2, "8:22: missing required key 'units' in layer 'gru'" },
		{ "{rnn: {units: 3, activation: sigmoid}}", 2,
		  "8:45: unknown activation 'sigmoid'" },
		{ "{gru: 5}", 1,
		  "8:16: layer 'gru' (gate 1, layer 1) cannot take the output of "
		  "network.input: expects a sequence [T, features], got [18] "
		  "(network.input: [T, F] is one)" },
	};
	const char *dir = tu_tmpdir();
	char cfg[1024], want[1400];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = tu_path(dir, "bad.yaml");
		snprintf(cfg, sizeof(cfg),
			 "name: x\ndata:\n  format: csv\n  train: {file: a.csv}\n"
			 "network:\n  input: %s\n  gates:\n"
			 "    - layers: [%s, {dense: 3}]\n"
			 "  loss: softmax_cross_entropy\noptimizer: {type: sgd, lr: 0.1}\n",
			 cases[i].rank == 2 ? "[6, 3]" : "[18]", cases[i].layer);
		assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
		assert_int_equal(ak("check", path, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s:%s", path, cases[i].err);
		tu_assert_line(g_err, want);
	}
	tu_rm_tree(dir);
}

/* torch's default: every parameter U(+-1/sqrt(H)); an explicit init
 * fills the weights and zeroes the biases. */
static void t_init(void **state)
{
	struct akk_layer_spec sp = rec_of(&akk_layer_lstm, 16, 0, 2, 0);
	struct akk_layer l;
	struct akk_rng r;
	double a = 1 / sqrt(16.0), vmax = 0;

	(void)state;
	plan_ok(&l, &sp, seq_shape(5, 7));
	float *p = alloc_nan(l.nparams);
	akk_rng_seed(&r, 5, AKK_STREAM_INIT);
	sp.ops->init(&l, p, NULL, &r);
	for (size_t i = 0; i < l.nparams; i++)
		vmax = fmax(vmax, fabs(p[i]));
	assert_true(vmax <= a && vmax > 0.95 * a);
	for (int k = 0; k < 2; k++) {	/* the biases of both directions */
		double bmax = 0;
		for (size_t i = l.views[4 * k + 2].off; i < l.views[4 * k + 3].off + 64; i++)
			bmax = fmax(bmax, fabs(p[i]));
		assert_true(bmax > 0.5 * a);
	}
	sp.init = AKK_INIT_HE_NORMAL;
	sp.ops->init(&l, p, NULL, &r);
	for (int k = 0; k < 2; k++)
		for (size_t i = l.views[4 * k + 2].off; i < l.views[4 * k + 3].off + 64; i++)
			assert_true(p[i] == 0);
	akk_free(p);
}

static void t_grad_gru(void **state)
{
	(void)state;
	grad_all(&akk_layer_gru, 0);
}

static void t_grad_rnn(void **state)
{
	(void)state;
	grad_all(&akk_layer_rnn, 0);
}

/* relu: fixed data whose pre-activations stay off the kink by more than
 * eps (one within eps of 0 would fail the check, not pass silently) */
static void t_grad_rnn_relu(void **state)
{
	(void)state;
	grad_all(&akk_layer_rnn, 1);
}

/* ---- end to end ---- */

/* A task that needs memory: [6, 3] sequences whose class (0..2) is the
 * largest feature of step 0, every later step noise of the same scale.
 * A layer whose state did not carry step 0 to the end sees noise only
 * (a third right). */
static void write_memory_task(const char *path, int n, uint32_t seed)
{
	FILE *f = fopen(path, "w");
	float *v = malloc((size_t)n * 18 * sizeof(*v));

	assert_non_null(f);
	assert_non_null(v);
	tu_fill(v, (size_t)n * 18, -1, 1, seed);
	for (int i = 0; i < n; i++) {
		const float *x = v + (size_t)i * 18;
		int c = x[1] > x[0] ? 1 : 0;
		c = x[2] > x[c] ? 2 : c;
		for (int j = 0; j < 18; j++)
			fprintf(f, "%.9g,", x[j]);
		fprintf(f, "%d\n", c);
	}
	free(v);
	assert_int_equal(fclose(f), 0);
}

/* The first and last train loss and the last validation accuracy in a
 * run's metrics.csv. */
static void read_metrics(const char *path, double *first, double *last,
			 double *acc)
{
	char *text = tu_slurp(path, NULL), *line, *save = NULL;
	int rows = 0;

	assert_non_null(text);
	line = strtok_r(text, "\n", &save);
	tu_assert_prefix(line, "epoch,phase,samples,loss,accuracy,");
	*first = *last = *acc = NAN;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char phase[32];
		int epoch;
		long samples;
		double loss, a;
		assert_int_equal(sscanf(line, "%d,%31[^,],%ld,%lf,%lf", &epoch,
					phase, &samples, &loss, &a), 5);
		if (!strcmp(phase, "train")) {
			if (isnan(*first))
				*first = loss;
			*last = loss;
			rows++;
		} else {
			*acc = a;
		}
	}
	free(text);
	assert_true(rows >= 2);
}

static void train_kind(const char *dir, const char *layer)
{
	char cfg[4096], train[700], val[700], run[700];
	double first, last, acc;

	snprintf(train, sizeof(train), "%s/mem-train.csv", dir);
	snprintf(val, sizeof(val), "%s/mem-val.csv", dir);
	static int nrun;

	snprintf(run, sizeof(run), "%s/run-%d", dir, ++nrun);
	snprintf(cfg, sizeof(cfg),
		 "name: memory\nseed: 3\n"
		 "data:\n  format: csv\n  train: {file: %s}\n  validation: {file: %s}\n"
		 "network:\n  input: [6, 3]\n"
		 "  gates:\n    - layers: [%s, {dense: 3}]\n"
		 "  loss: softmax_cross_entropy\n"
		 "optimizer: {type: adam, lr: 0.02}\n"
		 "schedule: {mode: flip-flop, epochs: 12, batch_size: 16}\n",
		 train, val, layer);
	assert_int_equal(tu_write_file(tu_path(dir, "mem.yaml"), cfg, strlen(cfg)), 0);
	if (ak("train", tu_path(dir, "mem.yaml"), "--out", run, "--quiet", NULL))
		fail_msg("akkctl train failed:\n%s%s", g_out, g_err);
	read_metrics(tu_path(run, "metrics.csv"), &first, &last, &acc);
	print_message("%s: train loss %.4f -> %.4f, validation accuracy %.3f\n",
		      layer, first, last, acc);
	assert_true(last < 0.5 * first);
	assert_true(acc > 0.8);
}

/* lstm 8 then dense 3 on the memory task through `akkctl train`: the
 * loss falls and step 0 reaches the output; gru, rnn and a bidirectional
 * lstm returning every step (then flattened) likewise. */
static void t_train_end_to_end(void **state)
{
	const char *dir = tu_tmpdir();

	(void)state;
	write_memory_task(tu_path(dir, "mem-train.csv"), 1200, 41);
	write_memory_task(tu_path(dir, "mem-val.csv"), 300, 42);
	train_kind(dir, "{lstm: 8}");
	train_kind(dir, "{gru: 8}");
	train_kind(dir, "{rnn: 16}");
	train_kind(dir, "{lstm: {units: 4, return_sequences: true, "
		   "direction: bidirectional}}, flatten");
	tu_rm_tree(dir);
}

/* ---- the schedules ---- */

/* Flip-flop through the actors equals the sequential reference trainer bit
 * for bit with recurrent gates: 8x8 images read as 8 steps of 8 features,
 * a bidirectional lstm returning every step in gate 1 (its input gradient
 * is gate 2's business: none), a gru and an rnn after it in gate 2 (the
 * input gradient crosses the gates), dense after. 3 epochs of 63 steps. */
static void t_flipflop_equals_reference(void **state)
{
	static const char *yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [8, 8]\n"
		"  gates:\n"
		"    - layers: [{lstm: {units: 6, return_sequences: true, "
		"direction: bidirectional}}]\n"
		"    - layers: [{gru: {units: 5, return_sequences: true}}, "
		"{rnn: {units: 4, direction: reverse}}, {dense: 4}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 3, batch_size: 16}\n";
	struct akk_spec spec = { 0 };
	struct akk_model model = { 0 };
	struct akk_dataset train = { 0 }, val = { 0 };
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct akk_run_config cfg = { .mode = AKK_MODE_FLIPFLOP, .epochs = 3,
				      .blas_threads = 1 };

	(void)state;
	if (akk_spec_parse(&spec, yaml, strlen(yaml), "rec.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %d:%d: %s", e.line, e.col, e.msg);
	if (akk_model_plan(&model, &spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&train, 1000, 8, 4, 7);	/* 63 batches, the last of 8 */
	tu_dataset(&val, 200, 8, 4, 9);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &model, &train, &e), 0);
	for (long i = 0; i < 3 * 63; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	assert_int_equal(akk_run_init(&r, &model, &train, &val, &cfg, &e), 0);
	assert_int_equal(akk_run_train(&r, &e), 0);
	for (int g = 0; g < model.ngates; g++) {
		const struct akk_gate *a = &r.gates[g].gate, *b = &ref.gates[g];
		assert_int_equal(a->step, 3 * 63);
		assert_memory_equal(a->params, b->params,
				    a->plan->nparams * sizeof(float));
	}
	akk_run_release(&r);
	akk_reference_release(&ref);
	akk_model_release(&model);
	akk_spec_release(&spec);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
}

/* The parameter gradient of a recurrent layer reads the weights (W_hh
 * carries each step's gradient to the step before), even with dx NULL, as
 * the network's first layer runs: so its kinds say grad_reads_params, and
 * a first gate holding one stashes its weights in wheels, where a batch's
 * backward runs after later batches' steps changed them. */
static void t_first_gate_stashes(void **state)
{
	static const char *yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [8, 8]\n"
		"  gates:\n"
		"    - layers: [%s]\n"
		"    - layers: [flatten, {dense: 4}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	static const char *const layers[] = {
		"{lstm: 3}", "{gru: {units: 3, return_sequences: true}}",
		"{rnn: {units: 3, direction: bidirectional}}", "{dense: 3}",
	};
	const struct akk_layer_ops *kinds[] = { &akk_layer_lstm, &akk_layer_gru,
						&akk_layer_rnn };

	(void)state;
	for (int k = 0; k < 3; k++) {	/* dp with dx NULL moves with W_hh */
		struct akk_layer_spec sp = rec_of(kinds[k], 3, 0, 0, 0);
		struct rig g;
		float *dp1;
		rig_open(&g, &sp, seq_shape(4, 2), 2, X_PLAIN);
		assert_true(kinds[k]->grad_reads_params);
		dp1 = alloc_nan(g.l.nparams);
		rig_loss(&g);
		memset(dp1, 0, g.l.nparams * sizeof(float));
		g.l.ops->backward(&g.l, NULL, dp1, g.work, g.r, g.x, g.y, g.aux,
				  g.p, 2);
		memcpy(g.dp, g.p, g.l.nparams * sizeof(float));	/* W_hh halved */
		for (size_t i = g.l.views[1].off; i < g.l.views[2].off; i++)
			g.dp[i] *= 0.5f;
		float *p2 = g.dp;
		g.dp = alloc_nan(g.l.nparams);
		memset(g.dp, 0, g.l.nparams * sizeof(float));
		g.l.ops->backward(&g.l, NULL, g.dp, g.work, g.r, g.x, g.y, g.aux,
				  p2, 2);
		assert_true(tu_max_rel_err(g.dp, dp1, g.l.nparams, 1.0) > 1e-3);
		akk_free(p2);
		akk_free(dp1);
		rig_close(&g);
	}
	for (int i = 0; i < 4; i++) {
		struct akk_spec spec = { 0 };
		struct akk_model model = { 0 };
		struct akk_err e = { 0 };
		char text[1024];
		snprintf(text, sizeof(text), yaml, layers[i]);
		if (akk_spec_parse(&spec, text, strlen(text), "s.yaml", ".", NULL, 0, &e) ||
		    akk_model_plan(&model, &spec, &e))
			fail_msg("%s: %s", layers[i], e.msg);
		/* dense: its weights are read for dx only, which the first
		 * layer computes none of */
		assert_int_equal(akk_gate_needs_stash(&model.gates[0]), i < 3);
		akk_model_release(&model);
		akk_spec_release(&spec);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_activations),
		cmocka_unit_test(t_grad_lstm),
		cmocka_unit_test(t_grad_gru),
		cmocka_unit_test(t_grad_rnn),
		cmocka_unit_test(t_grad_rnn_relu),
		cmocka_unit_test(t_grad_in_residual),
		cmocka_unit_test(t_reference_lstm),
		cmocka_unit_test(t_reference_gru),
		cmocka_unit_test(t_reference_rnn),
		cmocka_unit_test(t_plans),
		cmocka_unit_test(t_init),
		cmocka_unit_test(t_config_errors),
		cmocka_unit_test(t_train_end_to_end),
		cmocka_unit_test(t_flipflop_equals_reference),
		cmocka_unit_test(t_first_gate_stashes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
