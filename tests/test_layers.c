/* test_layers.c - every layer kind against finite differences, plus forward
 * references (naive convolution, hand-computed batchnorm), dropout
 * statistics, initialiser statistics and plan errors.
 *
 * The gradient checks are gradcheck.h's: L = sum(y r), central
 * differences, tolerance GRAD_TOL (its rationale is there). */
#include "testutil.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/layer.h"
#include "base/rng.h"
#include "config/spec.h"
#include "model/gate.h"
#include "model/model.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

static struct akk_layer_spec spec_of(const struct akk_layer_ops *ops)
{
	return (struct akk_layer_spec){
		.ops = ops, .units = 5, .filters = 3, .kernel = 3, .stride = 1,
		.padding = 0, .bias = 1, .rate = 0.5f, .alpha = 0.01f,
		.momentum = 0.1f, .eps = 1e-5f, .init = AKK_INIT_DEFAULT,
	};
}

static struct akk_shape shape1(int d)
{
	return (struct akk_shape){ 1, { d, 0, 0 } };
}

static struct akk_shape shape2(int t, int f)
{
	return (struct akk_shape){ 2, { t, f, 0 } };
}

static struct akk_shape shape3(int c, int h, int w)
{
	return (struct akk_shape){ 3, { c, h, w } };
}


/* ---- gradient checks ---- */

static void t_grad_dense(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_dense);

	(void)state;
	grad_check(&sp, shape1(7), 3, X_PLAIN);
	grad_check(&sp, shape1(1), 1, X_PLAIN);
	sp.units = 1;
	grad_check(&sp, shape1(9), 4, X_PLAIN);
	sp.bias = 0;
	sp.units = 6;
	grad_check(&sp, shape1(7), 3, X_PLAIN);
	/* on a sequence [T, F]: the same weights at every step */
	grad_check(&sp, shape2(4, 3), 2, X_PLAIN);
	sp.bias = 1;
	grad_check(&sp, shape2(1, 5), 3, X_PLAIN);
	grad_check(&sp, shape2(5, 2), 1, X_PLAIN);
}

static void t_grad_conv2d(void **state)
{
	static const struct {
		int C, H, W, F, k, s, p, bias;
	} cases[] = {
		{ 2, 5, 7, 3, 3, 1, 0, 1 },	/* plain, H != W */
		{ 3, 6, 7, 4, 3, 1, 1, 1 },	/* stride 1, pad 1: a wide fold through the padded input */
		{ 3, 6, 5, 2, 3, 2, 1, 1 },	/* stride 2, pad 1 */
		{ 2, 7, 6, 4, 3, 2, 1, 0 },	/* same, no bias */
		{ 1, 5, 8, 2, 2, 3, 1, 1 },	/* stride > kernel: skipped rows */
		{ 2, 4, 3, 3, 5, 1, 2, 1 },	/* kernel > input, padded */
		{ 3, 4, 5, 2, 1, 1, 0, 1 },	/* pointwise fast path */
		{ 2, 5, 5, 3, 1, 2, 0, 1 },	/* 1x1 with stride: unrolled */
		{ 1, 3, 3, 1, 3, 1, 0, 0 },	/* one output pixel */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct akk_layer_spec sp = spec_of(&akk_layer_conv2d);
		sp.filters = cases[i].F;
		sp.kernel = cases[i].k;
		sp.stride = cases[i].s;
		sp.padding = cases[i].p;
		sp.bias = cases[i].bias;
		grad_check(&sp, shape3(cases[i].C, cases[i].H, cases[i].W), 3,
			   X_PLAIN);
	}
}

static const struct {
	int C, H, W, k, s, p;
} pool_cases[] = {
	{ 2, 4, 6, 2, 2, 0 },	/* the usual 2x2/2 */
	{ 3, 5, 7, 2, 2, 0 },	/* odd size: last row/column dropped */
	{ 2, 6, 5, 3, 2, 1 },	/* overlapping, padded */
	{ 1, 5, 4, 2, 1, 1 },	/* stride 1, pad 1 */
	{ 2, 7, 7, 2, 3, 0 },	/* stride > kernel */
	{ 2, 4, 4, 3, 0, 0 },	/* stride 0 means stride = kernel */
	{ 2, 4, 19, 2, 2, 0 },	/* 2x2/2 wide enough for the vector path */
};

static void pool_grad(const struct akk_layer_ops *ops, enum xmode mode)
{
	for (size_t i = 0; i < sizeof(pool_cases) / sizeof(pool_cases[0]); i++) {
		struct akk_layer_spec sp = spec_of(ops);
		sp.kernel = pool_cases[i].k;
		sp.stride = pool_cases[i].s;
		sp.padding = pool_cases[i].p;
		grad_check(&sp, shape3(pool_cases[i].C, pool_cases[i].H,
				       pool_cases[i].W), 3, mode);
	}
}

static void t_grad_maxpool2d(void **state)
{
	(void)state;
	pool_grad(&akk_layer_maxpool2d, X_DISTINCT);
}

static void t_grad_avgpool2d(void **state)
{
	(void)state;
	pool_grad(&akk_layer_avgpool2d, X_PLAIN);
}

static void t_grad_flatten(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_flatten);

	(void)state;
	grad_check(&sp, shape3(2, 3, 4), 3, X_PLAIN);
	grad_check(&sp, shape1(5), 2, X_PLAIN);
}

static void t_grad_dropout(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_dropout);

	(void)state;
	grad_check(&sp, shape1(40), 3, X_PLAIN);
	sp.rate = 0;
	grad_check(&sp, shape3(2, 3, 3), 2, X_PLAIN);
}

static void t_grad_batchnorm(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_batchnorm);

	(void)state;
	grad_check(&sp, shape1(7), 3, X_PLAIN);
	grad_check(&sp, shape3(3, 2, 5), 3, X_PLAIN);
	grad_check(&sp, shape3(2, 4, 3), 1, X_PLAIN);	/* one sample */
	grad_check(&sp, shape1(4), 8, X_PLAIN);
}

static void t_grad_activations(void **state)
{
	const struct akk_layer_ops *smooth[] = {
		&akk_layer_sigmoid, &akk_layer_tanh, &akk_layer_softplus,
	};

	(void)state;
	for (int i = 0; i < 3; i++) {
		struct akk_layer_spec sp = spec_of(smooth[i]);
		grad_check(&sp, shape1(7), 3, X_PLAIN);
		grad_check(&sp, shape3(2, 3, 2), 2, X_PLAIN);
	}
	struct akk_layer_spec sp = spec_of(&akk_layer_relu);
	grad_check(&sp, shape1(7), 3, X_AWAY0);
	grad_check(&sp, shape3(2, 3, 2), 2, X_AWAY0);
	sp = spec_of(&akk_layer_leaky_relu);
	grad_check(&sp, shape1(7), 3, X_AWAY0);
	sp.alpha = 0.3f;
	grad_check(&sp, shape3(2, 3, 2), 2, X_AWAY0);
	sp.alpha = -0.5f;	/* negative slope: backward must use x, not y */
	grad_check(&sp, shape1(9), 3, X_AWAY0);
}

/* A dense or conv2d layer fused with the activation after it
 * (akk_layers_fuse) against finite differences: y is the activation's
 * output, dy the gradient there. Smooth activations only: with random
 * parameters a relu kink may lie within eps (the bit-equality test below
 * covers relu and leaky_relu). */
static void t_grad_fused(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_dense);
	struct akk_layer_spec th = spec_of(&akk_layer_tanh);
	struct akk_layer_spec sg = spec_of(&akk_layer_sigmoid);
	struct akk_layer_spec sf = spec_of(&akk_layer_softplus);

	(void)state;
	grad_check_fused(&sp, &th, shape1(7), 3, X_PLAIN);
	grad_check_fused(&sp, &sg, shape1(4), 2, X_PLAIN);
	sp.bias = 0;
	grad_check_fused(&sp, &sf, shape1(6), 3, X_PLAIN);
	grad_check_fused(&sp, &th, shape2(3, 4), 2, X_PLAIN);
	sp = spec_of(&akk_layer_conv2d);
	grad_check_fused(&sp, &th, shape3(2, 5, 6), 3, X_PLAIN);
	sp.stride = 2;
	sp.padding = 1;
	grad_check_fused(&sp, &sf, shape3(3, 6, 5), 2, X_PLAIN);
	sp.kernel = 1;
	sp.stride = 1;
	sp.padding = 0;
	sp.bias = 0;
	grad_check_fused(&sp, &sg, shape3(3, 4, 5), 3, X_PLAIN);
}

/* ---- forward references ---- */

/* Direct convolution, the definition. */
static void conv_naive(float *y, const float *x, const float *w,
		       const float *b, int C, int H, int W, int F, int k,
		       int s, int p, int Ho, int Wo)
{
	for (int f = 0; f < F; f++)
		for (int oh = 0; oh < Ho; oh++)
			for (int ow = 0; ow < Wo; ow++) {
				double t = b ? b[f] : 0;
				for (int c = 0; c < C; c++)
					for (int i = 0; i < k; i++)
						for (int j = 0; j < k; j++) {
							int ih = oh * s - p + i;
							int iw = ow * s - p + j;
							if (ih < 0 || ih >= H || iw < 0 || iw >= W)
								continue;
							t += (double)w[((f * C + c) * k + i) * k + j] *
								x[(c * H + ih) * W + iw];
						}
				y[(f * Ho + oh) * Wo + ow] = (float)t;
			}
}

static void t_conv2d_vs_naive(void **state)
{
	static const struct {
		int C, H, W, F, k, s, p, bias;
	} cases[] = {
		{ 3, 12, 9, 4, 3, 1, 1, 1 },
		{ 2, 11, 13, 5, 5, 2, 2, 1 },
		{ 4, 8, 8, 6, 1, 1, 0, 0 },
		{ 1, 28, 28, 6, 5, 1, 0, 1 },
		{ 2, 9, 7, 3, 4, 3, 1, 0 },
	};

	(void)state;
	for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
		struct akk_layer_spec sp = spec_of(&akk_layer_conv2d);
		struct rig g;
		sp.filters = cases[n].F;
		sp.kernel = cases[n].k;
		sp.stride = cases[n].s;
		sp.padding = cases[n].p;
		sp.bias = cases[n].bias;
		rig_open(&g, &sp, shape3(cases[n].C, cases[n].H, cases[n].W), 2,
			 X_PLAIN);
		int Ho = g.l.out.d[1], Wo = g.l.out.d[2];
		assert_int_equal(Ho, (cases[n].H + 2 * sp.padding - sp.kernel) /
				 sp.stride + 1);
		assert_int_equal(Wo, (cases[n].W + 2 * sp.padding - sp.kernel) /
				 sp.stride + 1);
		float *ref = alloc_nan(g.nout);
		size_t nw = (size_t)sp.filters * cases[n].C * sp.kernel * sp.kernel;
		g.l.ops->forward(&g.l, g.y, g.aux, g.s, g.work, g.x, g.p, 2, 0,
				 NULL);
		for (int b = 0; b < 2; b++) {
			conv_naive(ref, g.x + b * g.nin, g.p,
				   sp.bias ? g.p + nw : NULL, cases[n].C,
				   cases[n].H, cases[n].W, sp.filters, sp.kernel,
				   sp.stride, sp.padding, Ho, Wo);
			assert_true(tu_max_rel_err(g.y + b * g.nout, ref, g.nout,
						   1.0) < 1e-5);
		}
		/* A padded input is kept in aux, padded (the backward
		 * reads x itself when there is no padding); an evaluation
		 * forward without aux gives the same bits. */
		int pw = sp.kernel == 1 && sp.stride == 1 && sp.padding == 0;
		int P = sp.padding;
		assert_int_equal(g.l.aux, pw || !P ? 0 : (size_t)cases[n].C *
				 (cases[n].H + 2 * P) * (cases[n].W + 2 * P));
		float *y0 = alloc_nan(2 * g.nout);
		memcpy(y0, g.y, 2 * g.nout * sizeof(*y0));
		g.l.ops->forward(&g.l, g.y, NULL, g.s, g.work, g.x, g.p, 2, 0,
				 NULL);
		assert_memory_equal(g.y, y0, 2 * g.nout * sizeof(*y0));
		akk_free(y0);
		akk_free(ref);
		rig_close(&g);
	}
}

/* Backward takes the unrolled input from aux, as the training forward left
 * it, and does not unroll x again: with x spoilt after the forward, the
 * weight gradient is still the one computed from the intact x. */
static void t_conv2d_backward_uses_aux(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_conv2d);
	struct rig g;

	(void)state;
	sp.filters = 4;
	sp.kernel = 3;
	sp.padding = 1;
	rig_open(&g, &sp, shape3(2, 7, 6), 2, X_PLAIN);
	size_t np = g.l.nparams, nin = 2 * g.nin;
	float *dp0 = alloc_nan(np), *x0 = alloc_nan(nin);
	memcpy(x0, g.x, nin * sizeof(*x0));
	g.l.ops->forward(&g.l, g.y, g.aux, g.s, g.work, g.x, g.p, 2, 1, NULL);
	memset(g.dp, 0, np * sizeof(*g.dp));
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, 2);
	memcpy(dp0, g.dp, np * sizeof(*dp0));
	for (size_t i = 0; i < nin; i++)
		g.x[i] = NAN;
	memset(g.dp, 0, np * sizeof(*g.dp));
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, 2);
	assert_memory_equal(g.dp, dp0, np * sizeof(*dp0));
	memcpy(g.x, x0, nin * sizeof(*x0));
	akk_free(dp0);
	akk_free(x0);
	rig_close(&g);
}

static void t_pool_forward(void **state)
{
	/* 1 x 4 x 4 input 0..15; k 3, stride 2, pad 1 gives 2 x 2. */
	struct akk_layer_spec sp = spec_of(&akk_layer_maxpool2d);
	struct akk_layer l;
	float x[16], y[4], aux[4];

	(void)state;
	for (int i = 0; i < 16; i++)
		x[i] = (float)i;
	sp.kernel = 3;
	sp.stride = 2;
	sp.padding = 1;
	plan_ok(&l, &sp, shape3(1, 4, 4));
	assert_int_equal(l.out.d[1], 2);
	assert_int_equal(l.out.d[2], 2);
	l.ops->forward(&l, y, aux, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_true(y[0] == 5 && y[1] == 7 && y[2] == 13 && y[3] == 15);
	assert_true(aux[0] == 5 && aux[3] == 15);
	/* Evaluation may pass no aux. */
	memset(y, 0, sizeof(y));
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 0, NULL);
	assert_true(y[0] == 5 && y[3] == 15);
	/* All-negative input: padding (-inf) never wins. */
	for (int i = 0; i < 16; i++)
		x[i] = -100.0f - i;
	l.ops->forward(&l, y, aux, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_true(y[0] == -100 && y[1] == -101 && y[2] == -104 && y[3] == -105);

	/* Ties go to the first element of the window; NaN propagates. */
	for (int i = 0; i < 16; i++)
		x[i] = 1;
	x[10] = NAN;
	l.ops->forward(&l, y, aux, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_true(aux[0] == 0 && aux[1] == 1 && aux[2] == 4);
	assert_true(isnan(y[3]) && aux[3] == 10);

	/* Avg pool counts padding as zeros (count_include_pad = True). */
	sp = spec_of(&akk_layer_avgpool2d);
	sp.kernel = 3;
	sp.stride = 2;
	sp.padding = 1;
	for (int i = 0; i < 16; i++)
		x[i] = (float)i;
	plan_ok(&l, &sp, shape3(1, 4, 4));
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_float_equal(y[0], (0 + 1 + 4 + 5) / 9.0f, 1e-6);
	assert_float_equal(y[1], (1 + 2 + 3 + 5 + 6 + 7) / 9.0f, 1e-6);
	assert_float_equal(y[3], (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0f,
			   1e-6);
}

/* The pooling kernels against a naive scan of each window, bit for bit:
 * forward values, max-pool argmax indices and the input gradients of
 * both, on the vectorised 2x2/2 shape (rows of 1, 5 and 7 windows: 4 at a
 * time and a tail; 8 and 16: 8 at a time; 9, 14 and 21: a last block of 8
 * overlapping the one before; odd and even widths) and general ones.
 * Values come from a small set so that ties are frequent, with -0 and
 * NaNs among them. */
static void naive_pool(int is_max, float *y, float *aux, float *dx,
		       const float *dy, const float *x, int B, int C, int H,
		       int W, int k, int s, int p, int Ho, int Wo)
{
	float scale = 1.0f / (float)(k * k);

	memset(dx, 0, (size_t)B * C * H * W * sizeof(*dx));
	for (int bc = 0; bc < B * C; bc++)
		for (int oh = 0; oh < Ho; oh++)
			for (int ow = 0; ow < Wo; ow++) {
				float m = 0, t = 0, g = *dy * scale;
				int best = -1;
				for (int ih = oh * s - p; ih < oh * s - p + k; ih++)
					for (int iw = ow * s - p; iw < ow * s - p + k; iw++) {
						if (ih < 0 || ih >= H || iw < 0 || iw >= W)
							continue;
						int j = ih * W + iw;
						float v = x[(size_t)bc * H * W + j];
						t += v;
						if (!is_max)
							dx[(size_t)bc * H * W + j] += g;
						if (best < 0 || (m == m && (v > m || v != v))) {
							best = j;
							m = v;
						}
					}
				*y++ = is_max ? m : t * scale;
				*aux++ = (float)((bc % C) * H * W + best);
				if (is_max)
					dx[(size_t)bc * H * W + best] += *dy;
				dy++;
			}
}

static void t_pool_vs_naive(void **state)
{
	static const struct { int C, H, W, k, s, p; } cases[] = {
		{ 3, 9, 19, 2, 2, 0 }, { 2, 8, 16, 2, 2, 0 }, { 1, 4, 2, 2, 2, 0 },
		{ 2, 10, 10, 2, 2, 0 }, { 1, 6, 15, 2, 2, 0 }, { 2, 28, 28, 2, 2, 0 },
		{ 1, 4, 43, 2, 2, 0 }, { 1, 4, 32, 2, 2, 0 },
		{ 2, 5, 11, 3, 2, 1 }, { 2, 6, 13, 2, 1, 0 },
	};
	static const float vals[] = { -2, -1, -0.0f, 0, 1, 2, NAN };
	uint32_t r = 12345;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (int is_max = 0; is_max < 2; is_max++) {
			struct akk_layer_spec sp = spec_of(is_max ? &akk_layer_maxpool2d
							   : &akk_layer_avgpool2d);
			struct akk_layer l;
			int B = 2;
			sp.kernel = cases[c].k;
			sp.stride = cases[c].s;
			sp.padding = cases[c].p;
			plan_ok(&l, &sp, shape3(cases[c].C, cases[c].H, cases[c].W));
			size_t n = (size_t)B * akk_shape_size(l.in);
			size_t m = (size_t)B * akk_shape_size(l.out);
			float *x = malloc(n * sizeof(*x)), *dx = malloc(n * sizeof(*x));
			float *rdx = malloc(n * sizeof(*x)), *dy = malloc(m * sizeof(*x));
			float *y = malloc(m * sizeof(*x)), *ry = malloc(m * sizeof(*x));
			float *aux = malloc(m * sizeof(*x)), *raux = malloc(m * sizeof(*x));
			assert_true(x && dx && rdx && dy && y && ry && aux && raux);
			for (size_t i = 0; i < n; i++) {
				r = r * 1664525u + 1013904223u;
				/* NaN rarely: one element in 64 */
				x[i] = (r >> 26) == 0 ? NAN : vals[(r >> 16) % 6];
			}
			for (size_t i = 0; i < m; i++) {
				r = r * 1664525u + 1013904223u;
				dy[i] = vals[(r >> 16) % 6];
			}
			naive_pool(is_max, ry, raux, rdx, dy, x, B, cases[c].C,
				   cases[c].H, cases[c].W, cases[c].k, cases[c].s,
				   cases[c].p, l.out.d[1], l.out.d[2]);
			l.ops->forward(&l, y, is_max ? aux : NULL, NULL, NULL, x,
				       NULL, B, 1, NULL);
			assert_memory_equal(y, ry, m * sizeof(*y));
			if (is_max) {
				assert_memory_equal(aux, raux, m * sizeof(*aux));
				/* the same values without aux (evaluation) */
				l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, B,
					       0, NULL);
				assert_memory_equal(y, ry, m * sizeof(*y));
			}
			l.ops->backward(&l, dx, NULL, NULL, dy, x, y, is_max ? aux : NULL,
					NULL, B);
			assert_memory_equal(dx, rdx, n * sizeof(*dx));
			free(x), free(dx), free(rdx), free(dy);
			free(y), free(ry), free(aux), free(raux);
		}
}

/* A max-pool with relu_in computes relu then max-pool to the bit, forward
 * (values and indices) and backward, with zeros of both signs, negative
 * windows, ties and NaNs; and akk_layers_fuse marks exactly a relu then a
 * maxpool2d, never at a gate's first layer. */
static void t_relu_maxpool_fused(void **state)
{
	static const struct { int C, H, W, k, s, p; } cases[] = {
		{ 3, 8, 19, 2, 2, 0 }, { 2, 7, 9, 3, 2, 1 }, { 2, 5, 6, 2, 1, 0 },
	};
	static const float vals[] = { -2, -1, -0.0f, 0, 1, 2, -3, NAN };
	uint32_t r = 777;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct akk_layer_spec rs = spec_of(&akk_layer_relu);
		struct akk_layer_spec ps = spec_of(&akk_layer_maxpool2d);
		struct akk_layer rl, pl, fl;
		int B = 2;
		ps.kernel = cases[c].k;
		ps.stride = cases[c].s;
		ps.padding = cases[c].p;
		struct akk_shape in = shape3(cases[c].C, cases[c].H, cases[c].W);
		plan_ok(&rl, &rs, in);
		plan_ok(&pl, &ps, in);
		fl = pl;
		fl.relu_in = 1;
		size_t n = (size_t)B * akk_shape_size(in);
		size_t m = (size_t)B * akk_shape_size(pl.out);
		float *x = malloc(n * sizeof(float)), *h = malloc(n * sizeof(float));
		float *dh = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float));
		float *fdx = malloc(n * sizeof(float)), *y = malloc(m * sizeof(float));
		float *fy = malloc(m * sizeof(float)), *dy = malloc(m * sizeof(float));
		float *aux = malloc(m * sizeof(float)), *faux = malloc(m * sizeof(float));
		assert_true(x && h && dh && dx && fdx && y && fy && dy && aux && faux);
		for (int rep = 0; rep < 2; rep++) {
			/* rep 0: mostly non-positive windows; rep 1: mixed */
			for (size_t i = 0; i < n; i++) {
				r = r * 1664525u + 1013904223u;
				x[i] = (r >> 26) == 0 ? NAN :
				       vals[(r >> 16) % (rep ? 7 : 4)];
			}
			for (size_t i = 0; i < m; i++) {
				r = r * 1664525u + 1013904223u;
				dy[i] = vals[(r >> 16) % 7];
			}
			rl.ops->forward(&rl, h, NULL, NULL, NULL, x, NULL, B, 1, NULL);
			pl.ops->forward(&pl, y, aux, NULL, NULL, h, NULL, B, 1, NULL);
			pl.ops->backward(&pl, dh, NULL, NULL, dy, h, y, aux, NULL, B);
			rl.ops->backward(&rl, dx, NULL, NULL, dh, x, h, NULL, NULL, B);
			fl.ops->forward(&fl, fy, faux, NULL, NULL, x, NULL, B, 1, NULL);
			fl.ops->backward(&fl, fdx, NULL, NULL, dy, NULL, fy, faux,
					 NULL, B);
			assert_memory_equal(fy, y, m * sizeof(*y));
			assert_memory_equal(faux, aux, m * sizeof(*aux));
			assert_memory_equal(fdx, dx, n * sizeof(*dx));
		}
		free(x), free(h), free(dh), free(dx), free(fdx);
		free(y), free(fy), free(dy), free(aux), free(faux);
	}

	struct akk_layer ls[5] = { 0 };
	const struct akk_layer_ops *kinds[][5] = {
		{ &akk_layer_conv2d, &akk_layer_relu, &akk_layer_maxpool2d,
		  &akk_layer_relu, &akk_layer_maxpool2d },
		{ &akk_layer_relu, &akk_layer_maxpool2d, &akk_layer_relu,
		  &akk_layer_avgpool2d, &akk_layer_maxpool2d },
	};
	static const int want[][5] = { { 0, 0, 1, 0, 1 }, { 0, 0, 0, 0, 0 } };
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 5; i++)
			ls[i].ops = kinds[k][i];
		akk_layers_fuse(ls, 5);
		for (int i = 0; i < 5; i++)
			assert_int_equal(ls[i].relu_in, want[k][i]);
	}
}

/* One gate's forward, backward (with the input gradient) and eval of B
 * samples; out, dx and grads receive the output, the input gradient and
 * the parameter gradient. fused 0: akk_layers_fuse's dense/conv2d +
 * activation pairs undone, so every layer runs by itself. */
static void gate_pass(const struct akk_gate_plan *p, int fused, int B,
		      const float *x, const float *dy, float *out, float *ev,
		      float *dx, float *grads, int *nfused)
{
	struct akk_gate g;
	struct akk_err e = { 0 };
	const float *y, *d;
	size_t no = (size_t)B * akk_shape_size(p->out);

	if (akk_gate_init(&g, p, &(struct akk_gate_config){ .max_batch = B, .ntapes = 1,
			  .nevals = 1, .steps_per_epoch = 10, .epochs = 1, .seed = 5 }, &e))
		fail_msg("gate: %s", e.msg);
	*nfused = 0;
	for (int i = 0; i < p->nlayers; i++) {
		*nfused += g.layers[i].act_out != NULL;
		if (!fused)
			g.layers[i].act_out = NULL;
	}
	/* two batches: the second runs on stepped weights */
	for (int rep = 0; rep < 2; rep++) {
		if (!(y = akk_gate_forward(&g, x, B, rep, &e)))
			fail_msg("forward: %s", e.msg);
		memcpy(out + rep * no, y, no * sizeof(float));
		if (!(d = akk_gate_backward(&g, dy, B, rep, 1, &e)))
			fail_msg("backward: %s", e.msg);
		memcpy(dx, d, (size_t)B * akk_shape_size(p->in) * sizeof(float));
		memcpy(grads, g.grads, p->nparams * sizeof(float));
		if (!rep && akk_gate_step(&g, &e))
			fail_msg("step: %s", e.msg);
	}
	memcpy(ev, akk_gate_eval(&g, 0, x, B), no * sizeof(float));
	akk_gate_release(&g);
}

/* A dense or conv2d layer fused with the activation after it computes the
 * two layers to the bit: the output, the input gradient and the parameter
 * gradients of whole gates, fused and not, with every activation kind,
 * with and without bias, a pointwise convolution, the fusion at the first
 * and at the last layer, and relu before a maxpool2d left to the pool
 * fusion. Inputs hold exact zeros (relu's kink) and NaN-free randoms. */
static void t_fused_gate_equals_unfused(void **state)
{
	static const struct { const char *input, *layers; int nfused; } nets[] = {
		{ "7", "[{dense: 6}, relu, {dense: 5}, {leaky_relu: 0.1},"
		  " {dense: {units: 4, bias: false}}, sigmoid, {dense: 5}, tanh,"
		  " {dense: 3}, softplus, {dense: 4}, relu]", 6 },
		{ "2, 7, 7", "[{conv2d: {filters: 3, kernel: 3, padding: 1}}, relu,"
		  " {conv2d: {filters: 2, kernel: 2, stride: 2, bias: false}}, tanh,"
		  " {conv2d: {filters: 3, kernel: 1}}, {leaky_relu: 0.2},"
		  " {conv2d: {filters: 2, kernel: 3, padding: 1}}, relu, {maxpool2d: 2},"
		  " flatten, {dense: 3}, sigmoid]", 4 },
		/* dense step by step over a sequence: relu's bias sums run over
		 * every step's row */
		{ "4, 6", "[{dense: 5}, relu, {dense: 3}, tanh, {dense: 4}, relu,"
		  " flatten, {dense: 2}]", 3 },
	};
	char text[1024];

	(void)state;
	for (size_t k = 0; k < sizeof(nets) / sizeof(nets[0]); k++) {
		struct akk_spec s;
		struct akk_model m;
		struct akk_err e = { 0 };
		int B = 5, nf0, nf1;

		snprintf(text, sizeof(text),
			 "data:\n  train: {images: ti, labels: tl}\n"
			 "optimizer: {type: adam, lr: 0.01}\n"
			 "network:\n  input: [%s]\n  gates:\n    - layers: %s\n",
			 nets[k].input, nets[k].layers);
		if (akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e) ||
		    akk_model_plan(&m, &s, &e))
			fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
		const struct akk_gate_plan *p = &m.gates[0];
		size_t ni = (size_t)B * akk_shape_size(p->in);
		size_t no = (size_t)B * akk_shape_size(p->out), np = p->nparams;
		float *x = alloc_nan(ni), *dy = alloc_nan(no);
		float *o[2], *ev[2], *dx[2], *gr[2];
		tu_fill(x, ni, -1, 1, 3);
		for (size_t i = 0; i < ni; i += 3)
			x[i] = 0;
		tu_fill(dy, no, -1, 1, 4);
		for (int f = 0; f < 2; f++) {
			o[f] = alloc_nan(2 * no);
			ev[f] = alloc_nan(no);
			dx[f] = alloc_nan(ni);
			gr[f] = alloc_nan(np);
			gate_pass(p, f, B, x, dy, o[f], ev[f], dx[f], gr[f],
				  f ? &nf1 : &nf0);
		}
		assert_int_equal(nf1, nets[k].nfused);
		assert_memory_equal(o[1], o[0], 2 * no * sizeof(float));
		assert_memory_equal(ev[1], ev[0], no * sizeof(float));
		assert_memory_equal(dx[1], dx[0], ni * sizeof(float));
		assert_memory_equal(gr[1], gr[0], np * sizeof(float));
		for (int f = 0; f < 2; f++)
			akk_free(o[f]), akk_free(ev[f]), akk_free(dx[f]), akk_free(gr[f]);
		akk_free(x), akk_free(dy);
		akk_model_release(&m);
		akk_spec_release(&s);
	}
}

/* A gate of 2^17 parameters or more shares its optimizer step with its
 * pool (akk_pool_for, model/gate.c): the weights after three steps of Adam
 * with clipping are the same bits with a pool of 2 and of 3 as without,
 * and the pools did split the steps. */
static void t_gate_step_split(void **state)
{
	static const char *text =
		"data:\n  train: {images: ti, labels: tl}\n"
		"optimizer: {type: adamw, lr: 0.01, weight_decay: 0.1, clip_norm: 0.5}\n"
		"network:\n  input: [300]\n  gates:\n"
		"    - layers: [{dense: 500}, relu, {dense: 7}]\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e = { 0 };
	float *w[3] = { 0 };
	int B = 4;

	(void)state;
	if (akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	const struct akk_gate_plan *p = &m.gates[0];
	size_t ni = (size_t)B * akk_shape_size(p->in);
	size_t no = (size_t)B * akk_shape_size(p->out);
	float *x = alloc_nan(ni), *dy = alloc_nan(no);

	assert_true(p->nparams >= (1u << 17));
	tu_fill(x, ni, -1, 1, 3);
	tu_fill(dy, no, -1, 1, 4);
	for (int k = 0; k < 3; k++) {
		struct tu_pool tp = { 0 };
		struct akk_pool *pool = k ? tu_pool_new(&tp, k + 1) : NULL;
		struct akk_gate g;

		assert_true(!k || pool);
		if (akk_gate_init(&g, p, &(struct akk_gate_config){ .max_batch = B, .ntapes = 1,
				  .nevals = 1, .steps_per_epoch = 10, .epochs = 1, .seed = 5 }, &e))
			fail_msg("gate: %s", e.msg);
		akk_gate_use_pool(&g, pool);
		for (int rep = 0; rep < 3; rep++) {
			if (!akk_gate_forward(&g, x, B, rep, &e) ||
			    !akk_gate_backward(&g, dy, B, rep, 1, &e) ||
			    akk_gate_step(&g, &e))
				fail_msg("step: %s", e.msg);
		}
		/* the products are too small to split: the 3 splits are steps */
		if (pool)
			assert_int_equal(akk_pool_products(pool), 3);
		w[k] = alloc_nan(p->nparams);
		memcpy(w[k], g.params, p->nparams * sizeof(float));
		akk_gate_release(&g);
		tu_pool_free(&tp);
	}
	assert_memory_equal(w[1], w[0], p->nparams * sizeof(float));
	assert_memory_equal(w[2], w[0], p->nparams * sizeof(float));
	for (int k = 0; k < 3; k++)
		akk_free(w[k]);
	akk_free(x), akk_free(dy);
	akk_model_release(&m);
	akk_spec_release(&s);
}

static void t_activation_values(void **state)
{
	float x[6] = { -100, -2, -0.0f, 0.5f, 3, 100 }, y[6];
	struct akk_layer_spec sp;
	struct akk_layer l;

	(void)state;
	sp = spec_of(&akk_layer_softplus);
	plan_ok(&l, &sp, shape1(6));
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_float_equal(y[0], 0, 1e-30);
	assert_float_equal(y[1], log1p(exp(-2.0)), 1e-6);
	assert_float_equal(y[2], log(2.0), 1e-6);
	assert_float_equal(y[5], 100, 1e-5);
	sp = spec_of(&akk_layer_sigmoid);
	plan_ok(&l, &sp, shape1(6));
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_float_equal(y[0], 0, 1e-30);
	assert_float_equal(y[3], 1 / (1 + exp(-0.5)), 1e-6);
	assert_float_equal(y[5], 1, 0);
	sp = spec_of(&akk_layer_leaky_relu);
	sp.alpha = 0.1f;
	plan_ok(&l, &sp, shape1(6));
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_float_equal(y[1], -0.2f, 1e-7);
	assert_float_equal(y[4], 3, 0);
	sp = spec_of(&akk_layer_relu);
	plan_ok(&l, &sp, shape1(6));
	x[0] = NAN;
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_true(isnan(y[0]));
	assert_true(y[1] == 0 && y[4] == 3);
}

/* ---- batchnorm ---- */

static void t_batchnorm_hand(void **state)
{
	/* Two features over a batch of four:
	 *   f0 = 1 2 3 4: mean 2.5, biased var 1.25, unbiased 5/3
	 *   f1 = 2 2 2 6: mean 3,   biased var 3,    unbiased 4 */
	float x[8] = { 1, 2, 2, 2, 3, 2, 4, 6 }, y[8], ye[8];
	float p[4] = { 2, 0.5f, 1, -1 };	/* gamma, beta */
	float s[4], aux[4 * (2 + 2)], work[4 * 4];
	struct akk_layer_spec sp = spec_of(&akk_layer_batchnorm);
	struct akk_layer l;
	double mean[2] = { 2.5, 3 }, var[2] = { 1.25, 3 }, unb[2] = { 5.0 / 3, 4 };

	(void)state;
	plan_ok(&l, &sp, shape1(2));
	assert_int_equal(l.nparams, 4);
	assert_int_equal(l.nstate, 4);
	l.ops->init(&l, p, s, NULL);
	assert_true(p[0] == 1 && p[1] == 1 && p[2] == 0 && p[3] == 0);
	assert_true(s[0] == 0 && s[1] == 0 && s[2] == 1 && s[3] == 1);
	p[0] = 2, p[1] = 0.5f, p[2] = 1, p[3] = -1;

	l.ops->forward(&l, y, aux, s, work, x, p, 4, 1, NULL);
	for (int b = 0; b < 4; b++)
		for (int c = 0; c < 2; c++) {
			double h = (x[b * 2 + c] - mean[c]) / sqrt(var[c] + 1e-5);
			assert_float_equal(y[b * 2 + c], p[c] * h + p[2 + c], 1e-5);
		}
	for (int c = 0; c < 2; c++) {
		assert_float_equal(s[c], 0.1 * mean[c], 1e-6);
		assert_float_equal(s[2 + c], 0.9 + 0.1 * unb[c], 1e-6);
	}
	/* A second training step moves the running stats again. */
	l.ops->forward(&l, y, aux, s, work, x, p, 4, 1, NULL);
	for (int c = 0; c < 2; c++) {
		assert_float_equal(s[c], 0.19 * mean[c], 1e-6);
		assert_float_equal(s[2 + c], 0.81 + 0.19 * unb[c], 1e-6);
	}
	/* Eval uses the running stats and leaves them and aux alone. */
	float s0[4], aux0[16];
	memcpy(s0, s, sizeof(s));
	memcpy(aux0, aux, sizeof(aux));
	l.ops->forward(&l, ye, NULL, s, work, x, p, 4, 0, NULL);
	assert_memory_equal(s, s0, sizeof(s));
	assert_memory_equal(aux, aux0, sizeof(aux));
	for (int b = 0; b < 4; b++)
		for (int c = 0; c < 2; c++) {
			double h = (x[b * 2 + c] - s[c]) / sqrt(s[2 + c] + 1e-5);
			assert_float_equal(ye[b * 2 + c], p[c] * h + p[2 + c], 1e-5);
		}
}

static void t_batchnorm_channels(void **state)
{
	/* [2, 1, 3] input, batch 2: channel 0 sees 0 1 2 6 7 8, channel 1
	 * sees 10 10 10 10 10 10 (variance 0). */
	float x[12] = { 0, 1, 2, 10, 10, 10, 6, 7, 8, 10, 10, 10 }, y[12];
	float p[4] = { 1, 1, 0, 0 }, s[4] = { 0, 0, 1, 1 };
	float aux[2 * (6 + 2)], work[2 * 4];
	struct akk_layer_spec sp = spec_of(&akk_layer_batchnorm);
	struct akk_layer l;

	(void)state;
	sp.momentum = 0.5f;
	plan_ok(&l, &sp, shape3(2, 1, 3));
	assert_int_equal(l.views[2].state, 1);
	assert_int_equal(l.views[3].off, 2);
	l.ops->forward(&l, y, aux, s, work, x, p, 2, 1, NULL);
	/* channel 0: mean 4, biased var (16 + 9 + 4 + 4 + 9 + 16) / 6 */
	double v0 = (16 + 9 + 4 + 4 + 9 + 16) / 6.0;
	assert_float_equal(s[0], 2, 1e-6);
	assert_float_equal(s[1], 5, 1e-6);
	assert_float_equal(s[2], 0.5 + 0.5 * v0 * 6 / 5, 1e-5);
	assert_float_equal(s[3], 0.5, 1e-6);
	assert_float_equal(y[0], -4 / sqrt(v0 + 1e-5), 1e-5);
	assert_float_equal(y[8], 4 / sqrt(v0 + 1e-5), 1e-5);
	for (int i = 3; i < 6; i++)
		assert_float_equal(y[i], 0, 0);
}

/* ---- dropout ---- */

static void t_dropout(void **state)
{
	enum { N = 200000 };
	struct akk_layer_spec sp = spec_of(&akk_layer_dropout);
	struct akk_layer l;
	struct akk_rng r1, r2;
	float *x = alloc_nan(N), *y = alloc_nan(N), *m1 = alloc_nan(N);
	float *m2 = alloc_nan(N), *dx = alloc_nan(N);

	(void)state;
	sp.rate = 0.3f;
	plan_ok(&l, &sp, shape1(1000));
	tu_fill(x, N, 0.5f, 2, 3);
	/* Eval: identity, rng untouched. */
	akk_rng_seed(&r1, 1, AKK_STREAM_DROPOUT);
	r2 = r1;
	l.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, N / 1000, 0, &r1);
	assert_memory_equal(y, x, N * sizeof(float));
	assert_memory_equal(&r1, &r2, sizeof(r1));
	/* Train: about 30% zeros, the rest x / 0.7 exactly. */
	l.ops->forward(&l, y, m1, NULL, NULL, x, NULL, N / 1000, 1, &r1);
	long zeros = 0;
	float keep = 1.0f / (1.0f - 0.3f);
	for (long i = 0; i < N; i++) {
		if (m1[i] == 0) {
			zeros++;
			assert_true(y[i] == 0);
		} else {
			assert_true(m1[i] == keep);
			assert_true(y[i] == x[i] * keep);
		}
	}
	/* sigma = sqrt(0.3 0.7 / N) ~ 0.001; allow 5 sigma. */
	double frac = (double)zeros / N;
	if (fabs(frac - 0.3) > 5 * sqrt(0.21 / N))
		fail_msg("dropout rate %g, expected 0.3", frac);
	/* Same seed, same mask; another seed, another mask. */
	l.ops->forward(&l, y, m2, NULL, NULL, x, NULL, N / 1000, 1, &r2);
	assert_memory_equal(m1, m2, N * sizeof(float));
	akk_rng_seed(&r2, 2, AKK_STREAM_DROPOUT);
	l.ops->forward(&l, y, m2, NULL, NULL, x, NULL, N / 1000, 1, &r2);
	assert_true(memcmp(m1, m2, N * sizeof(float)) != 0);
	/* Backward: dx = dy mask. */
	l.ops->backward(&l, dx, NULL, NULL, x, x, y, m2, NULL, N / 1000);
	for (long i = 0; i < N; i++)
		assert_true(dx[i] == x[i] * m2[i]);
	akk_free(x);
	akk_free(y);
	akk_free(m1);
	akk_free(m2);
	akk_free(dx);
}

/* ---- initialisers ---- */

static void t_init_stats(void **state)
{
	enum { N = 100000, FI = 50, FO = 30 };
	static const struct {
		enum akk_init kind;
		double bound;	/* 0: normal */
		double std;
	} cases[] = {
		{ AKK_INIT_XAVIER_UNIFORM, 0.2738612788, 0.2738612788 / 1.7320508 },
		{ AKK_INIT_XAVIER_NORMAL, 0, 0.1581138830 },
		{ AKK_INIT_HE_UNIFORM, 0.3464101615, 0.2 },
		{ AKK_INIT_HE_NORMAL, 0, 0.2 },
		{ AKK_INIT_LECUN_UNIFORM, 0.1414213562, 0.1414213562 / 1.7320508 },
	};
	float *w = alloc_nan(N), *w2 = alloc_nan(N);
	struct akk_rng r;

	(void)state;
	for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
		double sum = 0, sq = 0, amax = 0;
		akk_rng_seed(&r, 42, AKK_STREAM_INIT);
		akk_init_fill(w, N, FI, FO, cases[n].kind, 0, &r);
		for (int i = 0; i < N; i++) {
			sum += w[i];
			sq += (double)w[i] * w[i];
			amax = fmax(amax, fabs(w[i]));
		}
		double mean = sum / N, std = sqrt(sq / N - mean * mean);
		/* mean: 5 standard errors; std: within 2% (its standard
		 * error is ~0.3% for these sizes). */
		if (fabs(mean) > 5 * cases[n].std / sqrt(N) ||
		    fabs(std / cases[n].std - 1) > 0.02)
			fail_msg("init %d: mean %g std %g, expected 0 and %g",
				 cases[n].kind, mean, std, cases[n].std);
		if (cases[n].bound) {
			assert_true(amax <= cases[n].bound * (1 + 1e-6));
			assert_true(amax > cases[n].bound * 0.999);
		} else {
			assert_true(amax > 3 * cases[n].std);
		}
		/* Reproducible for the same seed, different for another. */
		akk_rng_seed(&r, 42, AKK_STREAM_INIT);
		akk_init_fill(w2, N, FI, FO, cases[n].kind, 0, &r);
		assert_memory_equal(w, w2, N * sizeof(float));
		akk_rng_seed(&r, 43, AKK_STREAM_INIT);
		akk_init_fill(w2, N, FI, FO, cases[n].kind, 0, &r);
		assert_true(memcmp(w, w2, N * sizeof(float)) != 0);
	}
	akk_init_fill(w, N, FI, FO, AKK_INIT_ZEROS, 3, &r);
	for (int i = 0; i < N; i++)
		assert_true(w[i] == 0);
	akk_init_fill(w, N, FI, FO, AKK_INIT_CONSTANT, 0.25f, &r);
	for (int i = 0; i < N; i++)
		assert_true(w[i] == 0.25f);
	akk_free(w);
	akk_free(w2);
}

/* Default init: weight and bias U(+-1/sqrt(fan_in)); explicit: zero bias. */
static void check_layer_init(const struct akk_layer_ops *ops,
			     struct akk_shape in, int fan_in)
{
	struct akk_layer_spec sp = spec_of(ops);
	struct akk_layer l;
	struct akk_rng r;
	double a = 1 / sqrt(fan_in);

	sp.units = 64;
	sp.filters = 64;
	plan_ok(&l, &sp, in);
	float *p = alloc_nan(l.nparams);
	size_t nb = l.views[1].dims[0], nw = l.nparams - nb;
	assert_int_equal(l.views[1].off, nw);
	akk_rng_seed(&r, 5, AKK_STREAM_INIT);
	ops->init(&l, p, NULL, &r);
	double wmax = 0, bmax = 0;
	for (size_t i = 0; i < nw; i++)
		wmax = fmax(wmax, fabs(p[i]));
	for (size_t i = 0; i < nb; i++)
		bmax = fmax(bmax, fabs(p[nw + i]));
	assert_true(wmax <= a && wmax > 0.9 * a);
	assert_true(bmax <= a && bmax > 0.5 * a);

	sp.init = AKK_INIT_HE_NORMAL;
	ops->init(&l, p, NULL, &r);
	for (size_t i = 0; i < nb; i++)
		assert_true(p[nw + i] == 0);
	wmax = 0;
	for (size_t i = 0; i < nw; i++)
		wmax = fmax(wmax, fabs(p[i]));
	assert_true(wmax > a);	/* he normal is wider than lecun uniform */
	akk_free(p);
}

static void t_layer_init(void **state)
{
	(void)state;
	check_layer_init(&akk_layer_dense, shape1(30), 30);
	check_layer_init(&akk_layer_conv2d, shape3(3, 8, 8), 3 * 3 * 3);
}

/* ---- plans ---- */

static void t_plans(void **state)
{
	struct akk_layer_spec sp;
	struct akk_layer l;
	const char *m;

	(void)state;
	sp = spec_of(&akk_layer_dense);
	m = plan_err(&sp, shape3(6, 12, 12));
	assert_non_null(m);
	assert_string_equal(m, "expects a flat input [features] or a sequence "
			    "[T, features], got [6, 12, 12]; add a flatten layer");
	sp.units = 0;
	assert_non_null(plan_err(&sp, shape1(4)));
	sp.units = 10;
	plan_ok(&l, &sp, shape1(4));
	assert_int_equal(l.nparams, 50);
	assert_int_equal(l.nviews, 2);
	assert_string_equal(l.views[0].name, "weight");
	assert_int_equal(l.views[0].dims[0], 10);
	assert_int_equal(l.views[0].dims[1], 4);
	assert_string_equal(l.views[1].name, "bias");
	assert_int_equal(l.views[1].off, 40);
	sp.bias = 0;
	plan_ok(&l, &sp, shape1(4));
	assert_int_equal(l.nparams, 40);
	assert_int_equal(l.nviews, 1);

	sp = spec_of(&akk_layer_conv2d);
	assert_non_null(m = plan_err(&sp, shape1(784)));
	assert_non_null(strstr(m, "[784]"));
	sp.kernel = 5;
	assert_non_null(m = plan_err(&sp, shape3(1, 4, 9)));
	assert_non_null(strstr(m, "kernel 5"));
	sp.padding = 1;
	assert_null(plan_err(&sp, shape3(1, 4, 9)));	/* 6x11 padded */
	sp.stride = 0;
	assert_non_null(plan_err(&sp, shape3(1, 8, 8)));
	sp.stride = 2;
	sp.filters = 6;
	plan_ok(&l, &sp, shape3(3, 28, 26));
	assert_int_equal(l.out.rank, 3);
	assert_int_equal(l.out.d[0], 6);
	assert_int_equal(l.out.d[1], 13);
	assert_int_equal(l.out.d[2], 12);
	assert_int_equal(l.nparams, 6 * 3 * 25 + 6);
	assert_string_equal(l.views[0].name, "weight");
	assert_int_equal(l.views[0].rank, 4);
	assert_int_equal(l.views[0].dims[3], 5);
	assert_true(l.flops == 2.0 * 6 * 75 * 13 * 12 + 6 * 13 * 12);

	const struct akk_layer_ops *pools[] = {
		&akk_layer_maxpool2d, &akk_layer_avgpool2d,
	};
	for (int i = 0; i < 2; i++) {
		sp = spec_of(pools[i]);
		sp.kernel = 2;
		sp.stride = 0;
		plan_ok(&l, &sp, shape3(4, 7, 9));
		assert_int_equal(l.out.d[0], 4);
		assert_int_equal(l.out.d[1], 3);
		assert_int_equal(l.out.d[2], 4);
		assert_int_equal(l.nparams, 0);
		assert_non_null(plan_err(&sp, shape1(10)));
		sp.padding = 2;	/* more than kernel / 2 */
		assert_non_null(plan_err(&sp, shape3(1, 8, 8)));
		sp.padding = 0;
		sp.kernel = 9;
		assert_non_null(plan_err(&sp, shape3(1, 8, 8)));
	}

	sp = spec_of(&akk_layer_flatten);
	plan_ok(&l, &sp, shape3(6, 4, 5));
	assert_int_equal(l.out.rank, 1);
	assert_int_equal(l.out.d[0], 120);

	sp = spec_of(&akk_layer_dropout);
	sp.rate = 1;
	assert_non_null(plan_err(&sp, shape1(3)));
	sp.rate = -0.1f;
	assert_non_null(plan_err(&sp, shape1(3)));
	sp.rate = 0.99f;
	assert_null(plan_err(&sp, shape1(3)));

	sp = spec_of(&akk_layer_batchnorm);
	plan_ok(&l, &sp, shape3(5, 3, 3));
	assert_int_equal(l.nviews, 4);
	assert_string_equal(l.views[1].name, "beta");
	assert_int_equal(l.views[1].off, 5);
	assert_string_equal(l.views[3].name, "running_var");
	assert_int_equal(l.views[3].state, 1);
	assert_int_equal(l.views[3].off, 5);
	struct akk_shape bad = { 2, { 3, 4, 0 } };
	assert_non_null(plan_err(&sp, bad));

	for (int i = 0; akk_layer_names[i]; i++) {
		const struct akk_layer_ops *ops = akk_layer_find(akk_layer_names[i]);
		assert_non_null(ops);
		assert_string_equal(ops->name, akk_layer_names[i]);
	}
	sp = spec_of(&akk_layer_relu);
	plan_ok(&l, &sp, shape3(2, 3, 4));
	assert_memory_equal(&l.out, &l.in, sizeof(l.in));
}

/* Every kind's option table is well formed: fields inside the spec, no
 * name twice, the shorthand one of them, every default inside its range;
 * and the pools' stride default is the kernel, decided in one place. */
static void t_option_tables(void **state)
{
	int nkinds = 0;

	(void)state;
	for (int i = 0; akk_layer_names[i]; i++, nkinds++) {
		const struct akk_layer_ops *ops = akk_layer_find(akk_layer_names[i]);
		const struct akk_layer_option *o = ops->options;
		int n = 0, shorthand = ops->shorthand == NULL;

		for (; o && o->name; o++, n++) {
			assert_true(o->off < sizeof(struct akk_layer_spec));
			for (const struct akk_layer_option *p = ops->options;
			     p < o; p++)
				assert_string_not_equal(p->name, o->name);
			if (ops->shorthand && !strcmp(ops->shorthand, o->name))
				shorthand = 1;
			/* Required: no default. A pool's stride: 0 = the
			 * kernel (akk_pool2d_stride). */
			if ((o->flags & AKK_OPTION_REQ) ||
			    (o->off == offsetof(struct akk_layer_spec, stride) &&
			     ops->options == akk_pool2d_options))
				continue;
			if (o->flags & AKK_OPTION_LO)
				assert_true(o->flags & AKK_OPTION_LO_OPEN ?
					    o->def > o->lo : o->def >= o->lo);
			if (o->flags & AKK_OPTION_HI)
				assert_true(o->flags & AKK_OPTION_HI_OPEN ?
					    o->def < o->hi : o->def <= o->hi);
		}
		assert_true(n <= AKK_MAX_OPTIONS);
		assert_true(shorthand);
	}
	assert_true(nkinds >= 12);	/* a new kind needs no edit here */
	assert_ptr_equal(akk_layer_maxpool2d.options, akk_pool2d_options);
	assert_ptr_equal(akk_layer_avgpool2d.options, akk_pool2d_options);
	struct akk_layer_spec sp = spec_of(&akk_layer_maxpool2d);
	sp.kernel = 3;
	sp.stride = 0;
	assert_int_equal(akk_pool2d_stride(&sp), 3);
	sp.stride = 2;
	assert_int_equal(akk_pool2d_stride(&sp), 2);
	assert_string_equal(akk_init_names[AKK_INIT_CONSTANT], "constant");
	assert_null(akk_init_names[AKK_INIT_CONSTANT + 1]);
}

/* ---- residual blocks and global average pooling ---- */

static struct akk_layer_spec dense_of(int units)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_dense);
	sp.units = units;
	return sp;
}

static struct akk_layer_spec conv_of(int filters, int kernel, int stride,
				     int padding)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_conv2d);
	sp.filters = filters;
	sp.kernel = kernel;
	sp.stride = stride;
	sp.padding = padding;
	return sp;
}

static struct akk_layer_spec residual_of(struct akk_layer_spec *inner,
					 int ninner,
					 struct akk_layer_spec *shortcut,
					 int nshort)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_residual);
	sp.inner = inner;
	sp.ninner = ninner;
	sp.shortcut = shortcut;
	sp.nshort = nshort;
	return sp;
}

/* Smooth activations inside (tanh, sigmoid): no kink within eps of the
 * values the inner layers make; batchnorm in training mode inside. */
static void t_grad_residual_identity(void **state)
{
	struct akk_layer_spec vec[] = { dense_of(6), spec_of(&akk_layer_batchnorm),
					spec_of(&akk_layer_tanh), dense_of(6) };
	struct akk_layer_spec img[] = { conv_of(2, 3, 1, 1),
					spec_of(&akk_layer_batchnorm),
					spec_of(&akk_layer_tanh),
					conv_of(2, 3, 1, 1) };
	struct akk_layer_spec sp;

	(void)state;
	sp = residual_of(vec, 4, NULL, 0);
	grad_check(&sp, shape1(6), 4, X_PLAIN);
	sp = residual_of(img, 4, NULL, 0);
	grad_check(&sp, shape3(2, 5, 4), 3, X_PLAIN);
}

static void t_grad_residual_projection(void **state)
{
	struct akk_layer_spec img[] = { conv_of(3, 3, 2, 1),
					spec_of(&akk_layer_batchnorm),
					spec_of(&akk_layer_tanh) };
	struct akk_layer_spec img_short[] = { conv_of(3, 1, 2, 0) };
	struct akk_layer_spec vec[] = { dense_of(4), spec_of(&akk_layer_sigmoid),
					dense_of(3) };
	struct akk_layer_spec vec_short[] = { dense_of(3),
					      spec_of(&akk_layer_batchnorm) };
	struct akk_layer_spec sp;

	(void)state;
	sp = residual_of(img, 3, img_short, 1);
	grad_check(&sp, shape3(2, 5, 5), 3, X_PLAIN);
	sp = residual_of(vec, 3, vec_short, 2);
	grad_check(&sp, shape1(6), 4, X_PLAIN);
}

/* A block inside a block, and a block of one layer. */
static void t_grad_residual_nested(void **state)
{
	struct akk_layer_spec in2[] = { dense_of(5), spec_of(&akk_layer_tanh) };
	struct akk_layer_spec in1[2];
	struct akk_layer_spec one[] = { spec_of(&akk_layer_tanh) };
	struct akk_layer_spec sp;

	(void)state;
	in1[0] = residual_of(in2, 2, NULL, 0);
	in1[1] = dense_of(5);
	sp = residual_of(in1, 2, NULL, 0);
	grad_check(&sp, shape1(5), 3, X_PLAIN);
	sp = residual_of(one, 1, NULL, 0);
	grad_check(&sp, shape3(2, 3, 3), 2, X_PLAIN);
}

static void t_grad_global_avgpool(void **state)
{
	struct akk_layer_spec sp = spec_of(&akk_layer_global_avgpool);

	(void)state;
	grad_check(&sp, shape3(3, 4, 5), 3, X_PLAIN);
	grad_check(&sp, shape3(1, 1, 1), 2, X_PLAIN);
}

/* Shapes, sizes and views of a block; forward = inner + shortcut on a
 * hand-checkable case; the errors at plan time. */
static void t_residual_plan(void **state)
{
	struct akk_layer_spec inner[] = { conv_of(4, 3, 2, 1),
					  spec_of(&akk_layer_batchnorm) };
	struct akk_layer_spec proj[] = { conv_of(4, 1, 2, 0) };
	struct akk_layer_spec wrong[] = { conv_of(3, 1, 2, 0) };
	struct akk_layer_spec vec[] = { dense_of(4) };
	struct akk_layer_spec sp;
	struct akk_layer l;

	(void)state;
	sp = residual_of(inner, 2, proj, 1);
	plan_ok(&l, &sp, shape3(2, 6, 6));
	assert_int_equal(l.out.rank, 3);
	assert_int_equal(l.out.d[0], 4);
	assert_int_equal(l.out.d[1], 3);
	assert_int_equal(l.nsub, 3);
	/* conv 4*2*9+4, batchnorm gamma/beta 8, projection 4*2+4 */
	assert_int_equal(l.nparams, 76 + 8 + 12);
	assert_int_equal(l.nstate, 8);
	assert_int_equal(l.sub[1].poff, 76);
	assert_int_equal(l.sub[2].poff, 84);
	assert_int_equal(l.nviews, 2);
	assert_string_equal(l.views[0].name, "params");
	assert_int_equal(l.views[0].dims[0], 96);
	assert_string_equal(l.views[1].name, "state");
	assert_int_equal(l.views[1].state, 1);
	akk_layer_release(&l);
	assert_null(l.sub);

	sp = residual_of(inner, 2, NULL, 0);
	assert_string_equal(plan_err(&sp, shape3(2, 6, 6)),
			    "the inner layers output [4, 3, 3] but the identity "
			    "shortcut passes [2, 6, 6]: add a projection "
			    "(shortcut: [conv2d: {filters: 4, kernel: 1, "
			    "stride: 2}])");
	sp = residual_of(inner, 2, wrong, 1);
	assert_string_equal(plan_err(&sp, shape3(2, 6, 6)),
			    "the inner layers output [4, 3, 3] but the shortcut "
			    "outputs [3, 3, 3]");
	sp = residual_of(vec, 1, NULL, 0);
	assert_string_equal(plan_err(&sp, shape1(6)),
			    "the inner layers output [4] but the identity "
			    "shortcut passes [6]: add a projection (shortcut: "
			    "[dense: 4])");
	/* An inner layer that cannot take its input: named, at its place. */
	vec[0].mark = (struct akk_mark){ 12, 9 };
	sp = residual_of(vec, 1, NULL, 0);
	{
		struct akk_err e = { 0 };
		memset(&l, 0, sizeof(l));
		l.ops = sp.ops;
		l.spec = &sp;
		l.in = shape3(2, 6, 6);
		assert_int_equal(sp.ops->plan(&l, &e), -1);
		assert_null(l.sub);
		assert_int_equal(e.line, 12);
		assert_int_equal(e.col, 9);
		assert_non_null(strstr(e.msg, "inner layer 1 'dense': "));
	}
	sp = residual_of(vec, 0, NULL, 0);
	assert_string_equal(plan_err(&sp, shape1(6)),
			    "a residual block needs at least one layer");
	sp = spec_of(&akk_layer_global_avgpool);
	assert_string_equal(plan_err(&sp, shape1(6)),
			    "expects an image input [channels, height, width], "
			    "got [6]");
}

/* y = x + tanh(x) for the identity block of one tanh; the mean per
 * channel for global_avgpool. */
static void t_residual_forward(void **state)
{
	struct akk_layer_spec one[] = { spec_of(&akk_layer_tanh) };
	struct akk_layer_spec sp = residual_of(one, 1, NULL, 0);
	struct akk_layer l;
	float x[4] = { -1, 0, 0.5f, 2 }, y[4], aux[64];

	(void)state;
	plan_ok(&l, &sp, shape1(4));
	assert_true(l.aux * 1 <= 64);
	l.ops->forward(&l, y, aux, NULL, NULL, x, NULL, 1, 0, NULL);
	for (int i = 0; i < 4; i++)
		assert_float_equal(y[i], x[i] + tanhf(x[i]), 1e-6);
	akk_layer_release(&l);

	sp = spec_of(&akk_layer_global_avgpool);
	float img[2 * 2 * 3] = { 1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, 5 };
	plan_ok(&l, &sp, shape3(2, 2, 3));
	assert_int_equal(l.out.rank, 1);
	assert_int_equal(l.out.d[0], 2);
	l.ops->forward(&l, y, NULL, NULL, NULL, img, NULL, 1, 0, NULL);
	assert_float_equal(y[0], 3.5f, 1e-6);
	assert_float_equal(y[1], 0.0f, 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_grad_dense),
		cmocka_unit_test(t_grad_conv2d),
		cmocka_unit_test(t_grad_maxpool2d),
		cmocka_unit_test(t_grad_avgpool2d),
		cmocka_unit_test(t_grad_flatten),
		cmocka_unit_test(t_grad_dropout),
		cmocka_unit_test(t_grad_batchnorm),
		cmocka_unit_test(t_grad_activations),
		cmocka_unit_test(t_conv2d_vs_naive),
		cmocka_unit_test(t_conv2d_backward_uses_aux),
		cmocka_unit_test(t_pool_forward),
		cmocka_unit_test(t_pool_vs_naive),
		cmocka_unit_test(t_relu_maxpool_fused),
		cmocka_unit_test(t_grad_fused),
		cmocka_unit_test(t_fused_gate_equals_unfused),
		cmocka_unit_test(t_gate_step_split),
		cmocka_unit_test(t_activation_values),
		cmocka_unit_test(t_batchnorm_hand),
		cmocka_unit_test(t_batchnorm_channels),
		cmocka_unit_test(t_dropout),
		cmocka_unit_test(t_init_stats),
		cmocka_unit_test(t_layer_init),
		cmocka_unit_test(t_plans),
		cmocka_unit_test(t_option_tables),
		cmocka_unit_test(t_grad_residual_identity),
		cmocka_unit_test(t_grad_residual_projection),
		cmocka_unit_test(t_grad_residual_nested),
		cmocka_unit_test(t_grad_global_avgpool),
		cmocka_unit_test(t_residual_plan),
		cmocka_unit_test(t_residual_forward),
	};

	akk_blas_threads(1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
