/* layer_dropout.c - inverted dropout.
 *
 * Training: each element is dropped with probability rate (spec->rate, in
 * [0, 1)) and the kept ones are scaled by 1 / (1 - rate), so evaluation is
 * the identity. Each element's keep/drop comes from 24 bits of the gate's
 * rng (one 64-bit draw per two elements, none when rate is 0), so the same
 * rng state gives the same mask. aux, per sample, is the mask itself
 * (0 or 1 / (1 - rate), same shape as the input); backward is dx = dy mask.
 * An evaluation forward touches neither aux nor the rng. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static int dropout_plan(struct akk_layer *l, struct akk_err *e)
{
	float r = l->spec->rate;

	if (!(r >= 0 && r < 1))
		return akk_err_set(e, "expects rate in [0, 1), got %g", r);
	l->out = l->in;
	l->nparams = l->nstate = 0;
	l->aux = (size_t)akk_shape_size(l->in);
	l->work = 0;
	l->flops = (double)l->aux;
	l->nviews = 0;
	return 0;
}

static void dropout_forward(const struct akk_layer *l, float *y, float *aux,
			    float *s, float *work, const float *x,
			    const float *p, int B, int train,
			    struct akk_rng *rng)
{
	size_t n = (size_t)B * l->aux;
	float rate = l->spec->rate, keep = 1.0f / (1.0f - rate);

	(void)s, (void)work, (void)p;
	if (!train) {
		memcpy(y, x, n * sizeof(*y));
		return;
	}
	if (rate == 0) {
		for (size_t i = 0; i < n; i++)
			aux[i] = 1;
		memcpy(y, x, n * sizeof(*y));
		return;
	}
	/* Two 24-bit uniforms per 64-bit draw (bits 40..63, then 16..39; all
	 * bits of xoshiro256** are good), compared as integers, and a
	 * branch-free mask: the keep/drop decision is a coin flip that a
	 * branch predictor can only lose. */
	uint32_t thr = (uint32_t)((double)rate * 16777216.0);
	size_t i = 0;
	for (; i + 1 < n; i += 2) {
		uint64_t r = akk_rng_next(rng);
		float m0 = keep * (float)((uint32_t)(r >> 40) >= thr);
		float m1 = keep * (float)((uint32_t)(r >> 16 & 0xffffff) >= thr);
		aux[i] = m0;
		aux[i + 1] = m1;
		y[i] = x[i] * m0;
		y[i + 1] = x[i + 1] * m1;
	}
	if (i < n) {
		float m = keep * (float)((uint32_t)(akk_rng_next(rng) >> 40) >= thr);
		aux[i] = m;
		y[i] = x[i] * m;
	}
}

static void dropout_backward(const struct akk_layer *l, float *dx, float *dp,
			     float *work, const float *dy, const float *x,
			     const float *y, const float *aux, const float *p,
			     int B)
{
	size_t n = (size_t)B * l->aux;

	(void)dp, (void)work, (void)x, (void)y, (void)p;
	if (dx)
		for (size_t i = 0; i < n; i++)
			dx[i] = dy[i] * aux[i];
}

/* Evaluation is the identity. */
static int dropout_export(const struct akk_layer *l, struct akk_graph_sink *g,
			  const struct akk_export_io *io, struct akk_err *e)
{
	(void)l;
	return akk_export_unary(g, io, "Identity", NULL, 0, e);
}

static const struct akk_layer_option dropout_options[] = {
	AKK_OPTION("rate", FLOAT, rate, AKK_OPTION_REQ | AKK_OPTION_LO |
		   AKK_OPTION_HI | AKK_OPTION_HI_OPEN, 0, 1, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_dropout = {
	.name = "dropout",
	.options = dropout_options,
	.shorthand = "rate",
	.plan = dropout_plan,
	.init = akk_layer_init_none,
	.forward = dropout_forward,
	.backward = dropout_backward,
	.export = dropout_export,
};
