/* layer_maxpool1d.c - max pooling over the steps of a sequence.
 *
 * Input [T, C], window of k steps, stride s (0 means s = k, the default),
 * padding p <= k / 2 (as torch requires); output [To, C] with
 * To = (T + 2p - k) / s + 1 (floor, torch's ceil_mode=False), each
 * feature pooled on its own. Padding acts as -inf, so it is never the
 * maximum. Ties go to the earliest step of the window, and a NaN wins (the
 * first NaN propagates, as in torch).
 *
 * aux, per sample, is [To, C]: the step of each maximum, stored as a
 * float (exact: plan rejects 2^24 steps or more). An evaluation forward
 * may pass aux NULL, and then no step is stored. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static int maxpool1d_plan(struct akk_layer *l, struct akk_err *e)
{
	if (akk_pool1d_plan(l, e))
		return -1;
	if (l->in.d[0] >= 1 << 24)
		return akk_err_set(e, "input has %d steps, 2^24 or more",
				   l->in.d[0]);
	l->aux = akk_shape_size(l->out);
	return 0;
}

/* Each output row: the first real step of its window, then a step
 * replaces the maximum when larger, or when NaN over a number. */
static void maxpool1d_forward(const struct akk_layer *l, float *y, float *aux,
			      float *s, float *work, const float *x,
			      const float *p, int B, int train,
			      struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	int T = l->in.d[0], C = l->in.d[1], To = l->out.d[0];
	int k = sp->kernel, st = akk_pool2d_stride(sp), pad = sp->padding;

	(void)s, (void)work, (void)p, (void)train, (void)rng;
	for (int b = 0; b < B; b++, x += (size_t)T * C) {
		for (int o = 0; o < To; o++, y += C) {
			/* p <= k/2: every window holds a real step */
			int t0 = o * st - pad, t1 = t0 + k;
			t0 = t0 < 0 ? 0 : t0;
			t1 = t1 > T ? T : t1;
			akk_max_steps(y, aux, x, C, t0, t1);
			aux = aux ? aux + C : NULL;
		}
	}
}

/* dx = 0, then each output's gradient goes to its maximum's step. */
static void maxpool1d_backward(const struct akk_layer *l, float *dx, float *dp,
			       float *work, const float *dy, const float *x,
			       const float *y, const float *aux, const float *p,
			       int B)
{
	int T = l->in.d[0], C = l->in.d[1], To = l->out.d[0];

	(void)dp, (void)work, (void)x, (void)y, (void)p;
	if (!dx)
		return;
	memset(dx, 0, (size_t)B * T * C * sizeof(*dx));
	for (int b = 0; b < B; b++, dx += (size_t)T * C)
		for (int o = 0; o < To; o++, dy += C, aux += C)
			for (int c = 0; c < C; c++)
				dx[(size_t)aux[c] * C + c] += dy[c];
}

/* MaxPool over (N, C, T); ONNX pads are ignored by the max, as -inf here. */
static int maxpool1d_export(const struct akk_layer *l, struct akk_graph_sink *g,
			    const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int64_t k = sp->kernel, s = akk_pool2d_stride(sp), p = sp->padding;
	int64_t pads[2] = { p, p };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", &k, 1),
				 AKK_ATTR_IS("strides", &s, 1),
				 AKK_ATTR_IS("pads", pads, 2) };

	return akk_export_over_time(g, io, "MaxPool", NULL, 0, at, 3, e);
}

const struct akk_layer_ops akk_layer_maxpool1d = {
	.name = "maxpool1d",
	.options = akk_pool2d_options,
	.shorthand = "kernel",
	.plan = maxpool1d_plan,
	.init = akk_layer_init_none,
	.forward = maxpool1d_forward,
	.backward = maxpool1d_backward,
	.export = maxpool1d_export,
};
