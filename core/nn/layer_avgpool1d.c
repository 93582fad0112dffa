/* layer_avgpool1d.c - average pooling over the steps of a sequence.
 *
 * Input [T, C], window of k steps, stride s (0 means s = k, the default),
 * padding p <= k / 2 (as torch requires); output [To, C] with
 * To = (T + 2p - k) / s + 1 (floor), each feature pooled on its own. Like
 * torch's default count_include_pad=True (and avgpool2d), padding counts
 * as zeros: every output is its window's sum of real steps divided by k.
 * No parameters, no aux, no scratch. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static void avgpool1d_forward(const struct akk_layer *l, float *y, float *aux,
			      float *s, float *work, const float *x,
			      const float *p, int B, int train,
			      struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	int T = l->in.d[0], C = l->in.d[1], To = l->out.d[0];
	int k = sp->kernel, st = akk_pool2d_stride(sp), pad = sp->padding;
	float scale = 1.0f / (float)k;

	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng;
	for (int b = 0; b < B; b++, x += (size_t)T * C) {
		for (int o = 0; o < To; o++, y += C) {
			int t0 = o * st - pad, t1 = t0 + k;
			t0 = t0 < 0 ? 0 : t0;
			t1 = t1 > T ? T : t1;
			memset(y, 0, C * sizeof(*y));
			for (int t = t0; t < t1; t++) {
				const float *r = x + (size_t)t * C;
				for (int c = 0; c < C; c++)
					y[c] += r[c];
			}
			for (int c = 0; c < C; c++)
				y[c] *= scale;
		}
	}
}

/* dx = 0, then each output's gradient / k to every real step it read. */
static void avgpool1d_backward(const struct akk_layer *l, float *dx, float *dp,
			       float *work, const float *dy, const float *x,
			       const float *y, const float *aux, const float *p,
			       int B)
{
	const struct akk_layer_spec *sp = l->spec;
	int T = l->in.d[0], C = l->in.d[1], To = l->out.d[0];
	int k = sp->kernel, st = akk_pool2d_stride(sp), pad = sp->padding;
	float scale = 1.0f / (float)k;

	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;
	if (!dx)
		return;
	memset(dx, 0, (size_t)B * T * C * sizeof(*dx));
	for (int b = 0; b < B; b++, dx += (size_t)T * C) {
		for (int o = 0; o < To; o++, dy += C) {
			int t0 = o * st - pad, t1 = t0 + k;
			t0 = t0 < 0 ? 0 : t0;
			t1 = t1 > T ? T : t1;
			for (int t = t0; t < t1; t++) {
				float *r = dx + (size_t)t * C;
				for (int c = 0; c < C; c++)
					r[c] += dy[c] * scale;
			}
		}
	}
}

/* AveragePool over (N, C, T) with count_include_pad, as here. */
static int avgpool1d_export(const struct akk_layer *l, struct akk_graph_sink *g,
			    const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int64_t k = sp->kernel, s = akk_pool2d_stride(sp), p = sp->padding;
	int64_t pads[2] = { p, p };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", &k, 1),
				 AKK_ATTR_IS("strides", &s, 1),
				 AKK_ATTR_IS("pads", pads, 2),
				 AKK_ATTR_I("count_include_pad", 1) };

	return akk_export_over_time(g, io, "AveragePool", NULL, 0, at, 4, e);
}

const struct akk_layer_ops akk_layer_avgpool1d = {
	.name = "avgpool1d",
	.options = akk_pool2d_options,
	.shorthand = "kernel",
	.plan = akk_pool1d_plan,
	.init = akk_layer_init_none,
	.forward = avgpool1d_forward,
	.backward = avgpool1d_backward,
	.export = avgpool1d_export,
};
