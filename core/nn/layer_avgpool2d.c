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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static int avgpool_plan(struct akk_layer *l, struct akk_err *e)
{
	return akk_pool2d_plan(l, e);
}

/* The usual case, k = s = 2 without padding, one output row: each window
 * summed in the general loop's order, ((a + b) + c) + d with a, b above
 * and c, d below, then + 0 (the general loop's sum starts from +0, so a
 * window of four -0 sums to +0, not -0), then scaled, so the result is the
 * same to the bit. */
static void avg2x2_row(float *y, const float *r0, const float *r1, int Wo,
		       float scale)
{
	int ow = 0;

#ifdef __SSE2__
	const __m128 sc = _mm_set1_ps(scale);
	for (; ow + 4 <= Wo; ow += 4) {
		__m128 u0 = _mm_loadu_ps(r0 + 2 * ow), u1 = _mm_loadu_ps(r0 + 2 * ow + 4);
		__m128 v0 = _mm_loadu_ps(r1 + 2 * ow), v1 = _mm_loadu_ps(r1 + 2 * ow + 4);
		__m128 t = _mm_add_ps(_mm_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
				      _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
		t = _mm_add_ps(t, _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0)));
		t = _mm_add_ps(t, _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1)));
		t = _mm_add_ps(t, _mm_setzero_ps());
		_mm_storeu_ps(y + ow, _mm_mul_ps(t, sc));
	}
#endif
	for (; ow < Wo; ow++)
		y[ow] = ((((r0[2 * ow] + r0[2 * ow + 1]) + r1[2 * ow]) +
			  r1[2 * ow + 1]) + 0.0f) * scale;
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
			if (k == 2 && st == 2 && pad == 0) {
				const float *r0 = xc + 2 * oh * W;
				avg2x2_row(y, r0, r0 + W, Wo, scale);
				y += Wo;
				continue;
			}
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
			if (k == 2 && st == 2 && pad == 0) {
				/* disjoint windows: each element gets one g,
				 * stored as 0 + g (as the general loop adds it
				 * to the zeroed dx: -0 becomes +0) */
				float *r0 = dc + 2 * oh * W, *r1 = r0 + W;
				for (int ow = 0; ow < Wo; ow++) {
					float g = 0.0f + dy[ow] * scale;
					r0[2 * ow] = r0[2 * ow + 1] = g;
					r1[2 * ow] = r1[2 * ow + 1] = g;
				}
				dy += Wo;
				continue;
			}
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
