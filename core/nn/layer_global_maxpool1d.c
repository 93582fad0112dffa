/* layer_global_maxpool1d.c - the maximum of each feature over every step
 * of a sequence: [T, C] to [C].
 *
 * Ties go to the earliest step, and a NaN wins (the first NaN propagates,
 * as torch's max). aux, per sample, is [C]: the step of each maximum as a
 * float (exact: plan rejects 2^24 steps or more); an evaluation forward
 * may pass aux NULL. Backward gives dy[c] to that step, zero elsewhere.
 * The usual head of a 1-D convolutional text or series model (Keras'
 * GlobalMaxPooling1D). */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static int gmp1d_plan(struct akk_layer *l, struct akk_err *e)
{
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 2)
		return akk_err_set(e, "expects a sequence [T, features], got %s", buf);
	if (l->in.d[0] >= 1 << 24)
		return akk_err_set(e, "input has %d steps, 2^24 or more", l->in.d[0]);
	l->out = (struct akk_shape){ 1, { l->in.d[1], 0, 0 } };
	l->nparams = l->nstate = 0;
	l->aux = (size_t)l->in.d[1];
	l->work = l->work_sample = 0;
	l->flops = (double)akk_shape_size(l->in);
	l->nviews = 0;
	return 0;
}

static void gmp1d_forward(const struct akk_layer *l, float *y, float *aux,
			  float *s, float *work, const float *x, const float *p,
			  int B, int train, struct akk_rng *rng)
{
	int T = l->in.d[0], C = l->in.d[1];

	(void)s, (void)work, (void)p, (void)train, (void)rng;
	for (int b = 0; b < B; b++, x += (size_t)T * C, y += C) {
		akk_max_steps(y, aux, x, C, 0, T);
		aux = aux ? aux + C : NULL;
	}
}

static void gmp1d_backward(const struct akk_layer *l, float *dx, float *dp,
			   float *work, const float *dy, const float *x,
			   const float *y, const float *aux, const float *p,
			   int B)
{
	int T = l->in.d[0], C = l->in.d[1];

	(void)dp, (void)work, (void)x, (void)y, (void)p;
	if (!dx)
		return;
	memset(dx, 0, (size_t)B * T * C * sizeof(*dx));
	for (int b = 0; b < B; b++, dx += (size_t)T * C, dy += C, aux += C)
		for (int c = 0; c < C; c++)
			dx[(size_t)aux[c] * C + c] = dy[c];
}

/* ReduceMax over the steps (axis 1 of (N, T, C)), to (N, C). */
static int gmp1d_export(const struct akk_layer *l, struct akk_graph_sink *g,
			const struct akk_export_io *io, struct akk_err *e)
{
	static const int64_t axes[1] = { 1 };
	struct akk_attr at[] = { AKK_ATTR_IS("axes", axes, 1),
				 AKK_ATTR_I("keepdims", 0) };

	(void)l;
	return akk_export_unary(g, io, "ReduceMax", at, 2, e);
}

const struct akk_layer_ops akk_layer_global_maxpool1d = {
	.name = "global_maxpool1d",
	.plan = gmp1d_plan,
	.init = akk_layer_init_none,
	.forward = gmp1d_forward,
	.backward = gmp1d_backward,
	.export = gmp1d_export,
};
