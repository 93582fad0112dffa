/* layer_upsample2d.c - 2-D up-sampling by a whole factor, as torch's
 * nn.Upsample(scale_factor=s) does.
 *
 * Input [C, H, W], output [C, s H, s W]. mode nearest: every output
 * element copies x[oh / s][ow / s]. mode bilinear (torch's
 * align_corners=False): the output element (oh, ow) reads the input at
 * the source coordinate (1/s) (oh + 0.5) - 0.5 (clamped below at 0), the
 * weighted mean of its two neighbours along each axis (the upper one
 * clamped at the last row or column), so the border rows repeat and the
 * inner ones interpolate. No parameters, no aux; bilinear's scratch
 * (work) holds the width axis' taps, computed once a call. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

#include "base/checked.h"

enum { MODE_NEAREST, MODE_BILINEAR };

static const char *const mode_names[] = { "nearest", "bilinear", NULL };

#define SCALE(sp) ((sp)->iopt[0])
#define MODE(sp) ((sp)->iopt[1])

static int upsample_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int s = SCALE(sp);
	size_t Ho, Wo, outn;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 3)
		return akk_err_set(e, "expects an image input [channels, height, "
				   "width], got %s", buf);
	if (s < 1)
		return akk_err_set(e, "expects scale >= 1, got %d", s);
	if (MODE(sp) != MODE_NEAREST && MODE(sp) != MODE_BILINEAR)
		return akk_err_set(e, "expects mode nearest or bilinear");
	Ho = (size_t)l->in.d[1] * (size_t)s;
	Wo = (size_t)l->in.d[2] * (size_t)s;
	if (Ho > AKK_MAX_DIM || Wo > AKK_MAX_DIM ||
	    !akk_mul3_ok((size_t)l->in.d[0], Ho, Wo, &outn) ||
	    outn > AKK_MAX_DIM)
		return akk_err_set(e, "scale %d makes the output of input %s "
				   "more than %zu values", s, buf, AKK_MAX_DIM);
	l->out = (struct akk_shape){ 3, { l->in.d[0], (int)Ho, (int)Wo } };
	l->nparams = l->nstate = 0;
	l->aux = 0;
	l->work = MODE(sp) == MODE_BILINEAR ? 4 * Wo : 0;	/* struct cols */
	/* bilinear: four products and three sums an output; nearest copies */
	l->flops = MODE(sp) == MODE_BILINEAR ? 7.0 * (double)outn : 0;
	l->nviews = 0;
	return 0;
}

/* Along one axis of n inputs, output index o of scale s reads inputs i0
 * and i1 with weights w0 and w1 (torch's area_pixel_compute_source_index
 * with align_corners=False, in float as torch computes it). */
static void taps(int o, int s, int n, int *i0, int *i1, float *w0, float *w1)
{
	float src = (1.0f / (float)s) * ((float)o + 0.5f) - 0.5f;

	if (src < 0)
		src = 0;
	*i0 = (int)src;
	*i1 = *i0 + (*i0 < n - 1);
	*w1 = src - (float)*i0;
	*w0 = 1.0f - *w1;
}

/* The width axis' taps of every output column, in the scratch: inputs
 * i0, i1 (ints) and weights w0, w1, Wo each. */
struct cols {
	int *i0, *i1;
	float *w0, *w1;
};

static struct cols cols_of(float *work, int s, int W, int Wo)
{
	struct cols c = { (int *)work, (int *)work + Wo, work + 2 * Wo,
			  work + 3 * Wo };

	for (int o = 0; o < Wo; o++)
		taps(o, s, W, &c.i0[o], &c.i1[o], &c.w0[o], &c.w1[o]);
	return c;
}

static void upsample_forward(const struct akk_layer *l, float *y, float *aux,
			     float *st, float *work, const float *x,
			     const float *p, int B, int train,
			     struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	int H = l->in.d[1], W = l->in.d[2], s = SCALE(sp);
	int Ho = l->out.d[1], Wo = l->out.d[2];

	struct cols c = { 0 };

	(void)aux, (void)st, (void)p, (void)train, (void)rng;
	if (MODE(sp) == MODE_BILINEAR)
		c = cols_of(work, s, W, Wo);
	for (long bc = 0; bc < (long)B * l->in.d[0]; bc++) {
		const float *xc = x + bc * H * W;
		for (int oh = 0; oh < Ho; oh++) {
			if (MODE(sp) == MODE_NEAREST) {
				const float *xr = xc + (size_t)(oh / s) * W;
				for (int ow = 0; ow < Wo; ow++)
					*y++ = xr[ow / s];
				continue;
			}
			int h0, h1;
			float a0, a1;
			taps(oh, s, H, &h0, &h1, &a0, &a1);
			const float *r0 = xc + (size_t)h0 * W, *r1 = xc + (size_t)h1 * W;
			for (int ow = 0; ow < Wo; ow++) {
				int w0 = c.i0[ow], w1 = c.i1[ow];
				float b0 = c.w0[ow], b1 = c.w1[ow];
				*y++ = a0 * (b0 * r0[w0] + b1 * r0[w1]) +
				       a1 * (b0 * r1[w0] + b1 * r1[w1]);
			}
		}
	}
}

/* dx = 0, then each output's gradient goes back to the inputs it read,
 * with the weights it read them with. */
static void upsample_backward(const struct akk_layer *l, float *dx, float *dp,
			      float *work, const float *dy, const float *x,
			      const float *y, const float *aux, const float *p,
			      int B)
{
	const struct akk_layer_spec *sp = l->spec;
	int H = l->in.d[1], W = l->in.d[2], s = SCALE(sp);
	int Ho = l->out.d[1], Wo = l->out.d[2];

	struct cols c = { 0 };

	(void)dp, (void)x, (void)y, (void)aux, (void)p;
	if (!dx)
		return;
	if (MODE(sp) == MODE_BILINEAR)
		c = cols_of(work, s, W, Wo);
	memset(dx, 0, (size_t)B * l->in.d[0] * H * W * sizeof(*dx));
	for (long bc = 0; bc < (long)B * l->in.d[0]; bc++) {
		float *dc = dx + bc * H * W;
		for (int oh = 0; oh < Ho; oh++) {
			if (MODE(sp) == MODE_NEAREST) {
				float *dr = dc + (size_t)(oh / s) * W;
				for (int ow = 0; ow < Wo; ow++)
					dr[ow / s] += *dy++;
				continue;
			}
			int h0, h1;
			float a0, a1;
			taps(oh, s, H, &h0, &h1, &a0, &a1);
			float *r0 = dc + (size_t)h0 * W, *r1 = dc + (size_t)h1 * W;
			for (int ow = 0; ow < Wo; ow++) {
				float g = *dy++;
				int w0 = c.i0[ow], w1 = c.i1[ow];
				float b0 = c.w0[ow], b1 = c.w1[ow];
				r0[w0] += a0 * b0 * g;
				r0[w1] += a0 * b1 * g;
				r1[w0] += a1 * b0 * g;
				r1[w1] += a1 * b1 * g;
			}
		}
	}
}

/* Resize by scales [1, 1, s, s]: nearest with asymmetric coordinates and
 * floor (x[o / s]), or linear with half_pixel coordinates (torch's
 * align_corners=False; onnxruntime clamps the source at the border as
 * torch does). */
static int upsample_export(const struct akk_layer *l, struct akk_graph_sink *g,
			   const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	float sc[4] = { 1, 1, (float)SCALE(sp), (float)SCALE(sp) };
	int64_t dims[1] = { 4 };
	char name[256];
	const char *ins[3] = { io->x, "",
			       akk_export_name(name, sizeof(name), io->prefix,
					       "scales") };
	int nearest = MODE(sp) == MODE_NEAREST;
	struct akk_attr at[] = {
		AKK_ATTR_S("mode", nearest ? "nearest" : "linear"),
		AKK_ATTR_S("coordinate_transformation_mode",
			   nearest ? "asymmetric" : "half_pixel"),
		AKK_ATTR_S("nearest_mode", "floor"),
	};

	if (g->tensor(g, name, dims, 1, sc, e))
		return -1;
	return g->node(g, "Resize", ins, 3, &io->y, 1, at, nearest ? 3 : 2, e);
}

static const struct akk_layer_option upsample_options[] = {
	AKK_OPTION("scale", INT, iopt[0], AKK_OPTION_LO, 1, 0, 2),
	AKK_OPTION_NAMES("mode", iopt[1], mode_names, MODE_NEAREST),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_upsample2d = {
	.name = "upsample2d",
	.options = upsample_options,
	.shorthand = "scale",
	.plan = upsample_plan,
	.init = akk_layer_init_none,
	.forward = upsample_forward,
	.backward = upsample_backward,
	.export = upsample_export,
};
