/* layer_avgpool2d.c - 2-D average pooling.
 *
 * Input [C, H, W], window k x k, stride s (0 means s = k, the default),
 * padding p <= k / 2 (as torch requires); output [C, Ho, Wo] with
 * Ho = (H + 2p - k) / s + 1 (floor, torch's ceil_mode=False). Like torch's
 * default count_include_pad=True, padding counts as zeros: every output is
 * the window's sum of real elements divided by k*k, even at the border.
 * No parameters, no aux, no scratch. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

static int avgpool_plan(struct akk_layer *l, struct akk_err *e)
{
	return akk_pool2d_plan(l, e);
}

static void avgpool_forward(const struct akk_layer *l, float *y, float *aux,
			    float *s, float *work, const float *x,
			    const float *p, int B, int train,
			    struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	int Ho = l->out.d[1], Wo = l->out.d[2];
	int k = sp->kernel, st = akk_pool2d_stride(sp), pad = sp->padding;
	float scale = 1.0f / (float)(k * k);

	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng;
	for (long bc = 0; bc < (long)B * C; bc++) {
		const float *xc = x + bc * H * W;
		for (int oh = 0; oh < Ho; oh++) {
			int h0 = oh * st - pad, h1 = h0 + k;
			h0 = h0 < 0 ? 0 : h0;
			h1 = h1 > H ? H : h1;
			for (int ow = 0; ow < Wo; ow++) {
				int w0 = ow * st - pad, w1 = w0 + k;
				w0 = w0 < 0 ? 0 : w0;
				w1 = w1 > W ? W : w1;
				float t = 0;
				for (int ih = h0; ih < h1; ih++)
					for (int iw = w0; iw < w1; iw++)
						t += xc[ih * W + iw];
				*y++ = t * scale;
			}
		}
	}
}

/* dx = 0, then each output spreads dy / k^2 over the real elements of its
 * window. */
static void avgpool_backward(const struct akk_layer *l, float *dx, float *dp,
			     float *work, const float *dy, const float *x,
			     const float *y, const float *aux, const float *p,
			     int B)
{
	const struct akk_layer_spec *sp = l->spec;
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	int Ho = l->out.d[1], Wo = l->out.d[2];
	int k = sp->kernel, st = akk_pool2d_stride(sp), pad = sp->padding;
	float scale = 1.0f / (float)(k * k);

	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;
	if (!dx)
		return;
	memset(dx, 0, (size_t)B * C * H * W * sizeof(*dx));
	for (long bc = 0; bc < (long)B * C; bc++) {
		float *dc = dx + bc * H * W;
		for (int oh = 0; oh < Ho; oh++) {
			int h0 = oh * st - pad, h1 = h0 + k;
			h0 = h0 < 0 ? 0 : h0;
			h1 = h1 > H ? H : h1;
			for (int ow = 0; ow < Wo; ow++) {
				int w0 = ow * st - pad, w1 = w0 + k;
				w0 = w0 < 0 ? 0 : w0;
				w1 = w1 > W ? W : w1;
				float g = *dy++ * scale;
				for (int ih = h0; ih < h1; ih++)
					for (int iw = w0; iw < w1; iw++)
						dc[ih * W + iw] += g;
			}
		}
	}
}

/* AveragePool with count_include_pad: padding counts as zeros, as here. */
static int avgpool_export(const struct akk_layer *l, struct akk_graph_sink *g,
			  const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int64_t k = sp->kernel, s = akk_pool2d_stride(sp), p = sp->padding;
	int64_t ks[2] = { k, k }, st[2] = { s, s }, pads[4] = { p, p, p, p };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", ks, 2),
				 AKK_ATTR_IS("strides", st, 2),
				 AKK_ATTR_IS("pads", pads, 4),
				 AKK_ATTR_I("count_include_pad", 1) };

	return akk_export_unary(g, io, "AveragePool", at, 4, e);
}

const struct akk_layer_ops akk_layer_avgpool2d = {
	.name = "avgpool2d",
	.options = akk_pool2d_options,
	.shorthand = "kernel",
	.plan = avgpool_plan,
	.init = akk_layer_init_none,
	.forward = avgpool_forward,
	.backward = avgpool_backward,
	.export = avgpool_export,
};
