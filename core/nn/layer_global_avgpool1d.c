/* layer_global_avgpool1d.c - the mean of each feature over every step of
 * a sequence: [T, C] to [C].
 *
 * y[c] = sum over t of x[t, c] / T; backward spreads dy[c] / T over the
 * steps. Keras' GlobalAveragePooling1D. No parameters, no aux, no
 * scratch. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static int gap1d_plan(struct akk_layer *l, struct akk_err *e)
{
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 2)
		return akk_err_set(e, "expects a sequence [T, features], got %s", buf);
	l->out = (struct akk_shape){ 1, { l->in.d[1], 0, 0 } };
	l->nparams = l->nstate = 0;
	l->aux = l->work = l->work_sample = 0;
	l->flops = (double)akk_shape_size(l->in);
	l->nviews = 0;
	return 0;
}

static void gap1d_forward(const struct akk_layer *l, float *y, float *aux,
			  float *s, float *work, const float *x, const float *p,
			  int B, int train, struct akk_rng *rng)
{
	int T = l->in.d[0], C = l->in.d[1];
	float scale = 1.0f / (float)T;

	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng;
	for (int b = 0; b < B; b++, x += (size_t)T * C, y += C) {
		memset(y, 0, C * sizeof(*y));
		for (int t = 0; t < T; t++)
			for (int c = 0; c < C; c++)
				y[c] += x[(size_t)t * C + c];
		for (int c = 0; c < C; c++)
			y[c] *= scale;
	}
}

static void gap1d_backward(const struct akk_layer *l, float *dx, float *dp,
			   float *work, const float *dy, const float *x,
			   const float *y, const float *aux, const float *p,
			   int B)
{
	int T = l->in.d[0], C = l->in.d[1];
	float scale = 1.0f / (float)T;

	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;
	if (!dx)
		return;
	for (int b = 0; b < B; b++, dy += C)
		for (int t = 0; t < T; t++, dx += C)
			for (int c = 0; c < C; c++)
				dx[c] = dy[c] * scale;
}

/* ReduceMean over the steps (axis 1 of (N, T, C)), to (N, C). */
static int gap1d_export(const struct akk_layer *l, struct akk_graph_sink *g,
			const struct akk_export_io *io, struct akk_err *e)
{
	static const int64_t axes[1] = { 1 };
	struct akk_attr at[] = { AKK_ATTR_IS("axes", axes, 1),
				 AKK_ATTR_I("keepdims", 0) };

	(void)l;
	return akk_export_unary(g, io, "ReduceMean", at, 2, e);
}

const struct akk_layer_ops akk_layer_global_avgpool1d = {
	.name = "global_avgpool1d",
	.plan = gap1d_plan,
	.init = akk_layer_init_none,
	.forward = gap1d_forward,
	.backward = gap1d_backward,
	.export = gap1d_export,
};
