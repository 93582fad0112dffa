/* test_generators.c - the layers that make images larger: conv_transpose2d
 * and upsample2d.
 *
 * Three kinds of evidence. Finite differences: the objective
 * L = sum(y r) for a fixed random r, each input and parameter nudged by
 * +-eps, (L+ - L-) / (2 eps) against the backward's gradient, with
 * test_layers.c's tolerance rationale (both kinds are linear in x, and
 * conv_transpose2d in its parameters: no truncation error, only rounding).
 * References: tests/ref/generators.txt, written by
 * tests/ref/gen_generators.py from torch's nn.ConvTranspose2d and
 * nn.Upsample, holds inputs, parameters and output gradients with torch's
 * outputs and gradients; ours must match within 1e-5 (relative above 1).
 * The adjoint: with conv2d's weights, the forward is conv2d's input
 * gradient. Plans: the output sizes of torch's formulas, the parameter views, and
 * the errors for what the kinds cannot take. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "nn/layer.h"
#include "tensor/tensor.h"

#define GRAD_EPS 1e-2f
#define GRAD_TOL 2e-3
#define REF_TOL 1e-5

static struct akk_shape shape3(int c, int h, int w)
{
	return (struct akk_shape){ 3, { c, h, w } };
}

static struct akk_layer_spec convt_of(int F, int k, int s, int p, int q,
				      int bias)
{
	struct akk_layer_spec sp = { .ops = &akk_layer_conv_transpose2d,
				     .filters = F, .kernel = k, .stride = s,
				     .padding = p, .bias = bias };
	sp.iopt[0] = q;
	return sp;
}

static struct akk_layer_spec upsample_of(int scale, int mode)
{
	struct akk_layer_spec sp = { .ops = &akk_layer_upsample2d };

	sp.iopt[0] = scale;
	sp.iopt[1] = mode;
	return sp;
}

/* The plan error message, or NULL when the plan succeeded (then *l is
 * the planned layer). */
static const char *plan(struct akk_layer *l, const struct akk_layer_spec *sp,
			struct akk_shape in)
{
	static struct akk_err e;

	memset(&e, 0, sizeof(e));
	memset(l, 0, sizeof(*l));
	l->ops = sp->ops;
	l->spec = sp;
	l->in = in;
	return sp->ops->plan(l, &e) ? e.msg : NULL;
}

static float *alloc_nan(size_t n)
{
	float *p = akk_alloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = NAN;
	return p;
}

/* A planned layer, its buffers, and B samples. */
struct rig {
	struct akk_layer l;
	int B;
	size_t nx, ny;
	float *p, *x, *y, *work, *r, *dx, *dp;
};

static void rig_open(struct rig *g, const struct akk_layer_spec *sp,
		     struct akk_shape in, int B)
{
	const char *m = plan(&g->l, sp, in);

	if (m)
		fail_msg("%s plan failed: %s", sp->ops->name, m);
	if (sp->ops != &akk_layer_conv2d)	/* the generators keep only x */
		assert_int_equal(g->l.aux, 0);
	g->B = B;
	g->nx = (size_t)B * akk_shape_size(g->l.in);
	g->ny = (size_t)B * akk_shape_size(g->l.out);
	g->p = alloc_nan(g->l.nparams);
	g->dp = alloc_nan(g->l.nparams);
	g->x = alloc_nan(g->nx);
	g->dx = alloc_nan(g->nx);
	g->y = alloc_nan(g->ny);
	g->r = alloc_nan(g->ny);
	g->work = alloc_nan(g->l.work);	/* per call, whatever B */
}

static void rig_close(struct rig *g)
{
	akk_free(g->p);
	akk_free(g->dp);
	akk_free(g->x);
	akk_free(g->dx);
	akk_free(g->y);
	akk_free(g->r);
	akk_free(g->work);
}

static void forward(struct rig *g)
{
	g->l.ops->forward(&g->l, g->y, NULL, NULL, g->work, g->x, g->p, g->B,
			  1, NULL);
}

/* dx written, dp accumulated from 0. */
static void backward(struct rig *g)
{
	memset(g->dp, 0, g->l.nparams * sizeof(float));
	g->l.ops->backward(&g->l, g->dx, g->dp, g->work, g->r, g->x, g->y,
			   NULL, g->p, g->B);
}

static double loss(struct rig *g)
{
	double L = 0;

	forward(g);
	for (size_t i = 0; i < g->ny; i++)
		L += (double)g->y[i] * g->r[i];
	return L;
}

/* Central differences over v[0..n) against ana. */
static void check_numeric(struct rig *g, const char *what, float *v,
			  const float *ana, size_t n)
{
	float *num = alloc_nan(n);

	for (size_t i = 0; i < n; i++) {
		float keep = v[i];
		v[i] = keep + GRAD_EPS;
		double lp = loss(g);
		v[i] = keep - GRAD_EPS;
		double lm = loss(g);
		v[i] = keep;
		num[i] = (float)((lp - lm) / (2.0 * GRAD_EPS));
	}
	double err = tu_max_rel_err(num, ana, n, 1.0);
	if (!(err <= GRAD_TOL))
		fail_msg("%s: %s gradient off by %g", g->l.ops->name, what, err);
	akk_free(num);
}

/* Finite differences of dx and dp; then backward accumulates dp (a
 * second call doubles it) and takes dx NULL. */
static void grad_check(const struct akk_layer_spec *sp, struct akk_shape in,
		       int B)
{
	struct rig g;
	size_t np;

	rig_open(&g, sp, in, B);
	np = g.l.nparams;
	tu_fill(g.p, np, -1, 1, 11);
	tu_fill(g.x, g.nx, -1, 1, 23);
	tu_fill(g.r, g.ny, -1, 1, 37);
	forward(&g);
	backward(&g);
	float *dx1 = alloc_nan(g.nx), *dp1 = alloc_nan(np);
	memcpy(dx1, g.dx, g.nx * sizeof(float));
	memcpy(dp1, g.dp, np * sizeof(float));
	check_numeric(&g, "dx", g.x, dx1, g.nx);
	check_numeric(&g, "dp", g.p, dp1, np);

	g.l.ops->backward(&g.l, NULL, g.dp, g.work, g.r, g.x, g.y, NULL, g.p,
			  B);
	for (size_t i = 0; i < np; i++)
		dp1[i] *= 2;
	assert_true(tu_max_rel_err(g.dp, dp1, np, 1.0) <= 1e-5);
	akk_free(dx1);
	akk_free(dp1);
	rig_close(&g);
}

static void t_grad_conv_transpose2d(void **state)
{
	static const struct {
		int C, H, W, F, k, s, p, q, bias;
	} cases[] = {
		{ 2, 3, 4, 3, 3, 2, 1, 1, 1 },	/* doubling, output padding */
		{ 3, 4, 3, 2, 2, 2, 0, 0, 0 },	/* 2x2/2 without bias */
		{ 1, 5, 3, 2, 4, 1, 2, 0, 1 },	/* padding crops the border */
		{ 2, 2, 3, 2, 2, 3, 0, 2, 1 },	/* stride > kernel: gaps */
		{ 3, 2, 2, 4, 1, 1, 0, 0, 1 },	/* pointwise */
		{ 2, 3, 3, 1, 5, 2, 3, 1, 1 },	/* padding > stride */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct akk_layer_spec sp = convt_of(cases[i].F, cases[i].k,
						    cases[i].s, cases[i].p,
						    cases[i].q, cases[i].bias);
		grad_check(&sp, shape3(cases[i].C, cases[i].H, cases[i].W), 3);
	}
}

static void t_grad_upsample2d(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct akk_layer_spec sp = upsample_of(2, mode);
		grad_check(&sp, shape3(2, 3, 4), 2);
		sp = upsample_of(3, mode);
		grad_check(&sp, shape3(1, 4, 2), 3);
		sp = upsample_of(1, mode);
		grad_check(&sp, shape3(2, 1, 3), 2);
	}
}

/* What defines the kind: with conv2d's weights (F, C, k, k) read as its
 * own (in F, out C), conv_transpose2d without bias maps dy to exactly
 * the dx conv2d's backward gives, the output padding choosing which of
 * the input sizes that stride maps to Ho is meant. */
static void t_adjoint_of_conv2d(void **state)
{
	static const struct {
		int C, H, W, F, k, s, p;
	} cases[] = {
		{ 2, 7, 7, 3, 3, 2, 1 },	/* odd: output padding 0 */
		{ 2, 6, 6, 3, 3, 2, 1 },	/* even: output padding 1 */
		{ 3, 5, 5, 2, 3, 1, 1 },
		{ 1, 8, 8, 2, 2, 2, 0 },
		{ 2, 11, 11, 2, 4, 3, 2 },	/* output padding 2 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int C = cases[i].C, F = cases[i].F, k = cases[i].k;
		int s = cases[i].s, p = cases[i].p;
		struct akk_layer_spec csp = { .ops = &akk_layer_conv2d,
					      .filters = F, .kernel = k,
					      .stride = s, .padding = p };
		struct rig c, t;
		rig_open(&c, &csp, shape3(C, cases[i].H, cases[i].W), 2);
		int Ho = c.l.out.d[1], Wo = c.l.out.d[2];
		int qh = cases[i].H - ((Ho - 1) * s - 2 * p + k);
		int qw = cases[i].W - ((Wo - 1) * s - 2 * p + k);
		assert_int_equal(qh, qw);	/* square images only */
		struct akk_layer_spec tsp = convt_of(C, k, s, p, qh, 0);
		rig_open(&t, &tsp, c.l.out, 2);
		assert_memory_equal(&t.l.out, &c.l.in, sizeof(c.l.in));
		assert_int_equal(t.l.nparams, c.l.nparams);
		tu_fill(c.p, c.l.nparams, -1, 1, 5);
		tu_fill(c.x, c.nx, -1, 1, 6);
		tu_fill(c.r, c.ny, -1, 1, 7);
		float *aux = alloc_nan(2 * c.l.aux);
		c.l.ops->forward(&c.l, c.y, aux, NULL, c.work, c.x, c.p, 2, 1,
				 NULL);
		memset(c.dp, 0, c.l.nparams * sizeof(float));
		c.l.ops->backward(&c.l, c.dx, c.dp, c.work, c.r, c.x, c.y, aux,
				  c.p, 2);
		memcpy(t.p, c.p, c.l.nparams * sizeof(float));
		memcpy(t.x, c.r, c.ny * sizeof(float));
		forward(&t);
		assert_true(tu_max_rel_err(t.y, c.dx, t.ny, 1.0) <= 1e-5);
		akk_free(aux);
		rig_close(&c);
		rig_close(&t);
	}
}

/* ---- torch references ---- */

/* One "NAME N v..." line into a fresh array of N floats (*n). */
static float *read_values(FILE *f, const char *name, size_t *n)
{
	char got[8];
	float *v;

	assert_int_equal(fscanf(f, "%7s %zu", got, n), 2);
	assert_string_equal(got, name);
	v = alloc_nan(*n);
	for (size_t i = 0; i < *n; i++)
		assert_int_equal(fscanf(f, "%f", &v[i]), 1);
	return v;
}

static void expect_close(const char *what, int ncase, const float *got,
			 const float *want, size_t n)
{
	double err = tu_max_rel_err(got, want, n, 1.0);

	if (!(err <= REF_TOL))
		fail_msg("case %d: %s off by %g from torch's", ncase, what, err);
}

/* One case of the fixture against our kernels; 0 at the end of the file. */
static int reference_case(FILE *f, int ncase)
{
	char kind[32];
	int C, H, W, B, F, k, s, p, q, bias, scale, mode;
	struct akk_layer_spec sp;
	struct rig g;
	size_t n;

	if (fscanf(f, " case %31s %d %d %d %d %d %d %d %d %d %d %d %d", kind,
		   &C, &H, &W, &B, &F, &k, &s, &p, &q, &bias, &scale, &mode) != 13)
		return 0;
	if (!strcmp(kind, "conv_transpose2d"))
		sp = convt_of(F, k, s, p, q, bias);
	else if (!strcmp(kind, "upsample2d"))
		sp = upsample_of(scale, mode);
	else
		fail_msg("unknown kind '%s' in the fixture", kind);
	rig_open(&g, &sp, shape3(C, H, W), B);
	float *x = read_values(f, "x", &n), *pv, *dy, *y, *dx, *dp;
	assert_int_equal(n, g.nx);
	pv = read_values(f, "p", &n);
	assert_int_equal(n, g.l.nparams);
	dy = read_values(f, "dy", &n);
	assert_int_equal(n, g.ny);
	y = read_values(f, "y", &n);
	dx = read_values(f, "dx", &n);
	dp = read_values(f, "dp", &n);
	memcpy(g.x, x, g.nx * sizeof(float));
	memcpy(g.p, pv, g.l.nparams * sizeof(float));
	memcpy(g.r, dy, g.ny * sizeof(float));
	forward(&g);
	expect_close("y", ncase, g.y, y, g.ny);
	backward(&g);
	expect_close("dx", ncase, g.dx, dx, g.nx);
	expect_close("dp", ncase, g.dp, dp, g.l.nparams);
	akk_free(x);
	akk_free(pv);
	akk_free(dy);
	akk_free(y);
	akk_free(dx);
	akk_free(dp);
	rig_close(&g);
	return 1;
}

static void t_torch_reference(void **state)
{
	FILE *f = fopen("tests/ref/generators.txt", "r");
	char line[256];
	int ncase = 0;

	(void)state;
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));	/* the header */
	assert_int_equal(line[0], '#');
	while (reference_case(f, ncase + 1))
		ncase++;
	fclose(f);
	assert_int_equal(ncase, 13);	/* every case was read */
}

/* ---- plans ---- */

static void t_plans(void **state)
{
	struct akk_layer l;
	struct akk_layer_spec sp;
	const char *m;

	(void)state;
	/* torch: (H - 1) s - 2p + k + q */
	sp = convt_of(5, 3, 2, 1, 1, 1);
	assert_null(plan(&l, &sp, shape3(4, 14, 7)));
	assert_int_equal(l.out.d[0], 5);
	assert_int_equal(l.out.d[1], 28);
	assert_int_equal(l.out.d[2], 14);
	assert_int_equal(l.nparams, 4 * 5 * 9 + 5);
	assert_int_equal(l.nviews, 2);
	assert_string_equal(l.views[0].name, "weight");
	assert_int_equal(l.views[0].dims[0], 4);	/* (C, F, k, k) */
	assert_int_equal(l.views[0].dims[1], 5);
	assert_int_equal(l.views[1].off, 4 * 5 * 9);
	assert_true(l.flops == 2.0 * 4 * 45 * 14 * 7 + 5 * 28 * 14);
	assert_int_equal(l.work, 45 * 14 * 7);
	sp.bias = 0;
	assert_null(plan(&l, &sp, shape3(4, 14, 7)));
	assert_int_equal(l.nviews, 1);
	assert_int_equal(l.nparams, 4 * 5 * 9);

	sp = convt_of(2, 3, 2, 0, 2, 1);
	assert_non_null(m = plan(&l, &sp, shape3(1, 4, 4)));
	assert_string_equal(m, "expects output_padding between 0 and stride - 1 "
			    "= 1, got 2");
	sp = convt_of(2, 1, 1, 1, 0, 1);	/* 1x1 input, 1x1 kernel, pad 1 */
	assert_non_null(m = plan(&l, &sp, shape3(1, 1, 1)));
	assert_non_null(strstr(m, "leaves no output"));
	sp = convt_of(2, 3, 1, 0, 0, 1);
	assert_non_null(m = plan(&l, &sp, (struct akk_shape){ 1, { 16 } }));
	assert_non_null(strstr(m, "expects an image input"));

	sp = upsample_of(3, 1);
	assert_null(plan(&l, &sp, shape3(2, 5, 4)));
	assert_int_equal(l.out.d[0], 2);
	assert_int_equal(l.out.d[1], 15);
	assert_int_equal(l.out.d[2], 12);
	assert_int_equal(l.nparams, 0);
	assert_int_equal(l.work, 4 * 12);	/* bilinear: the width's taps */
	sp = upsample_of(3, 0);
	assert_null(plan(&l, &sp, shape3(2, 5, 4)));
	assert_int_equal(l.work, 0);
	sp = upsample_of(100000, 0);
	assert_non_null(m = plan(&l, &sp, shape3(1, 100000, 2)));
	assert_non_null(strstr(m, "scale 100000"));
	sp = upsample_of(2, 0);
	assert_non_null(plan(&l, &sp, (struct akk_shape){ 1, { 16 } }));
}

/* Defaults as torch's: weight and bias U(+-1/sqrt(F k k)), the fan-in of
 * torch's (C, F, k, k) weight; an explicit init zeroes the bias. */
static void t_init(void **state)
{
	struct akk_layer_spec sp = convt_of(16, 3, 2, 1, 1, 1);
	struct akk_layer l;
	struct akk_rng r;
	double a = 1 / sqrt(16 * 9), wmax = 0, bmax = 0;

	(void)state;
	assert_null(plan(&l, &sp, shape3(64, 4, 4)));
	float *p = alloc_nan(l.nparams);
	size_t nw = l.views[1].off;
	akk_rng_seed(&r, 5, AKK_STREAM_INIT);
	sp.ops->init(&l, p, NULL, &r);
	for (size_t i = 0; i < nw; i++)
		wmax = fmax(wmax, fabs(p[i]));
	for (size_t i = nw; i < l.nparams; i++)
		bmax = fmax(bmax, fabs(p[i]));
	assert_true(wmax <= a && wmax > 0.95 * a);
	assert_true(bmax <= a && bmax > 0.3 * a);
	sp.init = AKK_INIT_HE_NORMAL;
	sp.ops->init(&l, p, NULL, &r);
	for (size_t i = nw; i < l.nparams; i++)
		assert_true(p[i] == 0);
	akk_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_grad_conv_transpose2d),
		cmocka_unit_test(t_grad_upsample2d),
		cmocka_unit_test(t_adjoint_of_conv2d),
		cmocka_unit_test(t_torch_reference),
		cmocka_unit_test(t_plans),
		cmocka_unit_test(t_init),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
