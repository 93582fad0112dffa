/* layer_flatten.c - [C, H, W] (or any shape) to [C*H*W], row-major.
 *
 * The memory layout does not change, so forward and backward are copies
 * (y never aliases x, by the layer contract). */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static int flatten_plan(struct akk_layer *l, struct akk_err *e)
{
	long n = akk_shape_size(l->in);

	if (n <= 0 || n > 0x7fffffff)
		return akk_err_set(e, "expects a non-empty input, got %ld "
				   "elements", n);
	l->out = (struct akk_shape){ 1, { (int)n, 0, 0 } };
	l->nparams = l->nstate = 0;
	l->aux = l->work = 0;
	l->flops = 0;
	l->nviews = 0;
	return 0;
}

static void flatten_forward(const struct akk_layer *l, float *y, float *aux,
			    float *s, float *work, const float *x,
			    const float *p, int B, int train,
			    struct akk_rng *rng)
{
	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng;
	memcpy(y, x, (size_t)B * l->out.d[0] * sizeof(*y));
}

static void flatten_backward(const struct akk_layer *l, float *dx, float *dp,
			     float *work, const float *dy, const float *x,
			     const float *y, const float *aux, const float *p,
			     int B)
{
	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;
	if (dx)
		memcpy(dx, dy, (size_t)B * l->out.d[0] * sizeof(*dx));
}

/* Flatten at axis 1: [N, ...] to [N, the rest], row-major as here. */
static int flatten_export(const struct akk_layer *l, struct akk_graph_sink *g,
			  const struct akk_export_io *io, struct akk_err *e)
{
	struct akk_attr at[] = { AKK_ATTR_I("axis", 1) };

	(void)l;
	return akk_export_unary(g, io, "Flatten", at, 1, e);
}

const struct akk_layer_ops akk_layer_flatten = {
	.name = "flatten",
	.plan = flatten_plan,
	.init = akk_layer_init_none,
	.forward = flatten_forward,
	.backward = flatten_backward,
	.export = flatten_export,
};
