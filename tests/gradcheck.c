/* gradcheck.c - a layer kind against finite differences (gradcheck.h). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "base/rng.h"
#include "tensor/tensor.h"

void plan_ok(struct akk_layer *l, const struct akk_layer_spec *sp,
		    struct akk_shape in)
{
	struct akk_err e = { 0 };

	memset(l, 0, sizeof(*l));
	l->ops = sp->ops;
	l->spec = sp;
	l->in = in;
	if (sp->ops->plan(l, &e))
		fail_msg("%s plan failed: %s", sp->ops->name, e.msg);
}

/* The plan error message, or NULL when the plan succeeded. */
const char *plan_err(const struct akk_layer_spec *sp,
			    struct akk_shape in)
{
	static struct akk_err e;
	struct akk_layer l = { .ops = sp->ops, .spec = sp, .in = in };

	memset(&e, 0, sizeof(e));
	return sp->ops->plan(&l, &e) ? e.msg : NULL;
}

float *alloc_nan(size_t n)
{
	float *p = akk_alloc(n);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = NAN;
	return p;
}

void fill_x(float *x, size_t n, enum xmode mode, uint32_t seed)
{
	tu_fill(x, n, -1, 1, seed);
	if (mode == X_AWAY0) {
		for (size_t i = 0; i < n; i++)
			x[i] = x[i] < 0 ? x[i] - 0.1f : x[i] + 0.1f;
	} else if (mode == X_DISTINCT) {
		uint32_t s = seed * 747796405u + 1;
		for (size_t i = 0; i < n; i++)
			x[i] = 0.05f * (float)i - 0.025f * (float)n;
		for (size_t i = n - 1; i > 0; i--) {
			s = s * 1664525u + 1013904223u;
			size_t j = (s >> 8) % (i + 1);
			float t = x[i];
			x[i] = x[j];
			x[j] = t;
		}
	}
}

void rig_open(struct rig *g, const struct akk_layer_spec *sp,
		     struct akk_shape in, int B, enum xmode mode)
{
	plan_ok(&g->l, sp, in);
	g->act_dy = NULL;
	g->B = B;
	g->nin = (size_t)akk_shape_size(g->l.in);
	g->nout = (size_t)akk_shape_size(g->l.out);
	g->p = alloc_nan(g->l.nparams);
	g->s = alloc_nan(g->l.nstate);
	g->dp = alloc_nan(g->l.nparams);
	g->x = alloc_nan(B * g->nin);
	g->dx = alloc_nan(B * g->nin);
	g->y = alloc_nan(B * g->nout);
	g->r = alloc_nan(B * g->nout);
	g->aux = alloc_nan(B * g->l.aux);
	g->work = alloc_nan(g->l.work + (size_t)B * g->l.work_sample);
	akk_rng_seed(&g->rng, 7, AKK_STREAM_INIT);
	sp->ops->init(&g->l, g->p, g->s, &g->rng);
	/* Random parameters rather than the init: batchnorm's gamma = 1,
	 * beta = 0 would hide a swapped gamma/beta gradient. */
	tu_fill(g->p, g->l.nparams, -1, 1, 11);
	fill_x(g->x, B * g->nin, mode, 23);
	tu_fill(g->r, B * g->nout, -1, 1, 37);
}

void rig_close(struct rig *g)
{
	akk_free(g->p);
	akk_free(g->s);
	akk_free(g->dp);
	akk_free(g->x);
	akk_free(g->dx);
	akk_free(g->y);
	akk_free(g->r);
	akk_free(g->aux);
	akk_free(g->work);
	akk_free(g->act_dy);
	akk_layer_release(&g->l);	/* a composite's sub-layers */
}

/* Fuse the activation act_sp into the rig's layer, as akk_layers_fuse
 * would in a gate: l->y becomes the activation's output. */
void rig_fuse(struct rig *g, const struct akk_layer_spec *act_sp)
{
	plan_ok(&g->act, act_sp, g->l.out);
	g->act_dy = alloc_nan(g->B * g->nout);
	g->l.act_out = &g->act;
	g->l.act_dy = g->act_dy;
}

/* Training forward with a fixed dropout stream; returns L = sum(y r). */
double rig_loss(struct rig *g)
{
	double L = 0;

	akk_rng_seed(&g->rng, 99, AKK_STREAM_DROPOUT);
	g->l.ops->forward(&g->l, g->y, g->aux, g->s, g->work, g->x, g->p,
			  g->B, 1, &g->rng);
	for (size_t i = 0; i < g->B * g->nout; i++)
		L += (double)g->y[i] * g->r[i];
	return L;
}

/* Central differences of L over v[0..n). */
void numeric_grad(struct rig *g, float *num, float *v, size_t n,
			 float eps)
{
	for (size_t i = 0; i < n; i++) {
		float keep = v[i];
		v[i] = keep + eps;
		double lp = rig_loss(g);
		v[i] = keep - eps;
		double lm = rig_loss(g);
		v[i] = keep;
		num[i] = (float)((lp - lm) / (2.0 * eps));
	}
}

void check_close(const char *what, const char *name, const float *num,
			const float *ana, size_t n, double tol)
{
	double err = tu_max_rel_err(num, ana, n, 1.0);

	if (!(err <= tol)) {
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  %s[%zu] numeric %g analytic %g\n",
				what, i, num[i], ana[i]);
		fail_msg("%s: %s gradient off by %g (tolerance %g)", name, what,
			 err, tol);
	}
}

/* The full check: numeric vs analytic gradients of x and p; backward
 * writes dx (it starts as NaN) and accumulates dp (a second call doubles
 * it; a call with dx NULL still accumulates). */
void grad_check_fused(const struct akk_layer_spec *sp,
			     const struct akk_layer_spec *act_sp,
			     struct akk_shape in, int B, enum xmode mode)
{
	struct rig g = { 0 };
	size_t np, nx;

	rig_open(&g, sp, in, B, mode);
	if (act_sp)
		rig_fuse(&g, act_sp);
	np = g.l.nparams;
	nx = B * g.nin;
	float *num = alloc_nan(nx > np ? nx : np);
	float *dx1 = alloc_nan(nx), *dp1 = alloc_nan(np);

	memset(g.dp, 0, np * sizeof(float));
	rig_loss(&g);
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux,
			  g.p, B);
	memcpy(dx1, g.dx, nx * sizeof(float));
	memcpy(dp1, g.dp, np * sizeof(float));

	numeric_grad(&g, num, g.x, nx, GRAD_EPS);
	check_close("dx", sp->ops->name, num, dx1, nx, GRAD_TOL);
	numeric_grad(&g, num, g.p, np, GRAD_EPS);
	check_close("dp", sp->ops->name, num, dp1, np, GRAD_TOL);

	/* Accumulate, write: run again on the same batch. */
	rig_loss(&g);
	for (size_t i = 0; i < nx; i++)
		g.dx[i] = NAN;
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux,
			  g.p, B);
	assert_true(tu_max_rel_err(g.dx, dx1, nx, 1e-6) <= 1e-6);
	for (size_t i = 0; i < np; i++)
		num[i] = 2 * dp1[i];
	assert_true(tu_max_rel_err(g.dp, num, np, 1.0) <= 1e-5);
	g.l.ops->backward(&g.l, NULL, g.dp, g.work, g.r, g.x, g.y, g.aux,
			  g.p, B);
	for (size_t i = 0; i < np; i++)
		num[i] = 3 * dp1[i];
	assert_true(tu_max_rel_err(g.dp, num, np, 1.0) <= 1e-5);

	akk_free(num);
	akk_free(dx1);
	akk_free(dp1);
	rig_close(&g);
}

void grad_check(const struct akk_layer_spec *sp, struct akk_shape in,
		       int B, enum xmode mode)
{
	grad_check_fused(sp, NULL, in, B, mode);
}

/* One "NAME N v..." line into a fresh array of N floats (*n). */
float *read_values(FILE *f, const char *name, size_t *n)
{
	char got[8];
	float *v;

	assert_int_equal(fscanf(f, "%7s %zu", got, n), 2);
	assert_string_equal(got, name);
	v = alloc_nan(*n ? *n : 1);
	for (size_t i = 0; i < *n; i++)
		assert_int_equal(fscanf(f, "%f", &v[i]), 1);
	return v;
}
