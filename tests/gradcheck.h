/* gradcheck.h - a layer kind against finite differences: a planned layer
 * with its buffers (struct rig) and the check of its backward against
 * central differences, shared by the layer tests.
 *
 * The check uses the scalar objective L = sum(y r) with a fixed
 * random r, so dL/dy = r is what backward receives; each input and
 * parameter element is nudged by +-eps and (L+ - L-) / (2 eps) is compared
 * with the analytic gradient. L is summed in double from float y.
 *
 * Tolerance rationale. Forward rounding perturbs L by roughly
 * sqrt(n) |y r| 2^-24, at most ~1e-5 for the sizes here; divided by
 * 2 eps = 2e-2 that is ~5e-4 absolute. Central differences have a
 * truncation error of eps^2 f''' / 6, zero for the piecewise-linear layers
 * (dense, conv, pools, flatten, dropout, relu) as long as no kink is
 * crossed, and ~2e-5 for the smooth ones (sigmoid, tanh, softplus,
 * batchnorm) at eps = 1e-2. So we ask for
 *   max |num - ana| / max(|num|, |ana|, 1) <= 2e-3     (GRAD_TOL)
 * (relative for large gradients, absolute below 1): several times the
 * noise (the worst observed is 3e-4, batchnorm's dx), while a wrong term (a
 * missed bias, a transposed index, a dropped 1/N) is off by O(1). Inputs of
 * the kinked layers keep their kinks out of reach of +-eps: relu inputs are
 * at least 0.1 from 0, max-pool inputs are distinct values 0.05 apart. */
#ifndef AKK_TESTS_GRADCHECK_H
#define AKK_TESTS_GRADCHECK_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "nn/layer.h"

#define GRAD_EPS 1e-2f
#define GRAD_TOL 2e-3

/* How the gradient check fills x. */
enum xmode {
	X_PLAIN,	/* U(-1, 1) */
	X_AWAY0,	/* |x| in [0.1, 1.1): no relu kink within eps */
	X_DISTINCT,	/* a shuffle of values 0.05 apart: no max-pool ties */
};

/* A planned layer with all its buffers. */
struct rig {
	struct akk_layer l;
	int B;
	size_t nin, nout;
	float *p, *s, *x, *y, *aux, *work, *r, *dx, *dp;
	struct akk_rng rng;
	struct akk_layer act;	/* rig_fuse: the activation l applies */
	float *act_dy;		/* (B, nout) l's act_dy, or NULL */
};

/* Plan l for sp on input in; fails the test when the plan fails. */
void plan_ok(struct akk_layer *l, const struct akk_layer_spec *sp,
	     struct akk_shape in);
/* The plan error message, or NULL when the plan succeeded. */
const char *plan_err(const struct akk_layer_spec *sp, struct akk_shape in);
/* n floats, all NaN (what a kernel must overwrite). */
float *alloc_nan(size_t n);
void fill_x(float *x, size_t n, enum xmode mode, uint32_t seed);

/* The layer sp on input in with B samples: random parameters, x by mode,
 * the objective's r; rig_close frees. */
void rig_open(struct rig *g, const struct akk_layer_spec *sp,
	      struct akk_shape in, int B, enum xmode mode);
void rig_close(struct rig *g);
/* Fuse the activation act_sp into the rig's layer (akk_layers_fuse). */
void rig_fuse(struct rig *g, const struct akk_layer_spec *act_sp);
/* The training forward; returns L = sum(y r). */
double rig_loss(struct rig *g);
/* Central differences of L over v[0..n) into num. */
void numeric_grad(struct rig *g, float *num, float *v, size_t n, float eps);
/* Fails the test when num and ana differ by more than tol (relative above
 * 1, absolute below). */
void check_close(const char *what, const char *name, const float *num,
		 const float *ana, size_t n, double tol);
/* The full check of sp (fused with act_sp unless NULL) on B samples of
 * shape in: dx and dp against central differences, dx written, dp
 * accumulated, dx NULL allowed. */
void grad_check_fused(const struct akk_layer_spec *sp,
		      const struct akk_layer_spec *act_sp, struct akk_shape in,
		      int B, enum xmode mode);
void grad_check(const struct akk_layer_spec *sp, struct akk_shape in, int B,
		enum xmode mode);

/* A reference fixture's line "NAME N v...": N floats in a fresh array
 * (akk_free), *n = N; fails the test on another name or a short line. */
float *read_values(FILE *f, const char *name, size_t *n);

#endif
