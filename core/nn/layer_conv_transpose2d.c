/* layer_conv_transpose2d.c - 2-D transposed convolution (the gradient of
 * conv2d with respect to its input, as a layer), like torch's
 * nn.ConvTranspose2d.
 *
 * Input [C, H, W], F filters of k x k, stride s, padding p, output
 * padding q < s (as torch requires: extra rows and columns at the bottom
 * and right); output [F, Ho, Wo] with Ho = (H - 1) s - 2p + k + q, Wo
 * likewise. Every input element x[c][ih][iw] adds x W[c][f][ki][kj] into
 * y[f][ih s - p + ki][iw s - p + kj]; what falls outside the output is
 * dropped. Parameters: weight (C, F, k, k) as torch stores it, then bias
 * (F) when spec->bias. Default init is torch's: weight and bias
 * U(+-1/sqrt(F k k)) (torch takes the fan-in from the weight's second
 * dimension); an explicit init kind applies to the weight (fan_in F k k,
 * fan_out C k k) and zeroes the bias.
 *
 * Per sample, the forward computes col (F k k, H W) = W^T x by one
 * akk_sgemm and folds col into y (col2im) over the bias; the backward
 * unrolls dy the other way (im2col: row (f k + ki) k + kj, column
 * ih W + iw holds dy[f][ih s - p + ki][iw s - p + kj], or 0 outside), then
 * dx (C, H W) = W dcol and dW (C, F k k) += x dcol^T, two more products.
 * col is the layer's scratch (work: F k k H W floats); nothing is kept for
 * the backward but x (aux is empty). */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

#include "base/checked.h"
#include "nn/col2im.h"

#define OUTPAD(sp) ((sp)->iopt[0])

struct geom {
	int C, H, W, F, k, s, p, Ho, Wo;
};

static struct geom geom_of(const struct akk_layer *l)
{
	const struct akk_layer_spec *sp = l->spec;

	return (struct geom){ l->in.d[0], l->in.d[1], l->in.d[2], sp->filters,
			      sp->kernel, sp->stride, sp->padding,
			      l->out.d[1], l->out.d[2] };
}

/* The output size along an axis of n inputs, in long (no overflow). */
static long out_size(int n, int k, int s, int p, int q)
{
	return ((long)n - 1) * s - 2L * p + k + q;
}

static int convt_check(const struct akk_layer_spec *sp, struct akk_err *e)
{
	if (sp->filters <= 0)
		return akk_err_set(e, "expects filters > 0, got %d", sp->filters);
	if (sp->kernel <= 0)
		return akk_err_set(e, "expects kernel > 0, got %d", sp->kernel);
	if (sp->stride <= 0)
		return akk_err_set(e, "expects stride > 0, got %d", sp->stride);
	if (sp->padding < 0)
		return akk_err_set(e, "expects padding >= 0, got %d", sp->padding);
	if (OUTPAD(sp) < 0 || OUTPAD(sp) >= sp->stride)
		return akk_err_set(e, "expects output_padding between 0 and "
				   "stride - 1 = %d, got %d", sp->stride - 1,
				   OUTPAD(sp));
	return 0;
}

static int convt_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 3)
		return akk_err_set(e, "expects an image input [channels, height, "
				   "width], got %s", buf);
	if (convt_check(sp, e))
		return -1;
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	int k = sp->kernel, s = sp->stride, p = sp->padding, q = OUTPAD(sp);
	long Ho = out_size(H, k, s, p, q), Wo = out_size(W, k, s, p, q);
	size_t fkk, hw = (size_t)H * W, outn, work, np;
	if (Ho <= 0 || Wo <= 0)
		return akk_err_set(e, "padding %d leaves no output for input %s "
				   "(output %ldx%ld)", p, buf, Ho, Wo);
	if (Ho > (long)AKK_MAX_DIM || Wo > (long)AKK_MAX_DIM ||
	    !akk_mul3_ok((size_t)sp->filters, (size_t)Ho, (size_t)Wo, &outn) ||
	    outn > AKK_MAX_DIM)
		return akk_err_set(e, "output [%d, %ld, %ld] would have more than "
				   "%zu values", sp->filters, Ho, Wo, AKK_MAX_DIM);
	if (!akk_mul3_ok((size_t)sp->filters, (size_t)k, (size_t)k, &fkk) ||
	    fkk > AKK_MAX_DIM || !akk_mul_ok(fkk, hw, &work) ||
	    work > AKK_MAX_DIM)
		return akk_err_set(e, "kernel %d over %d filters and input %s "
				   "make an unrolled output of more than %zu "
				   "values", k, sp->filters, buf, AKK_MAX_DIM);
	if (!akk_muladd_ok((size_t)C, fkk, sp->bias ? (size_t)sp->filters : 0,
			   &np) || np > AKK_MAX_FLOATS)
		return akk_err_set(e, "%d input channels of %zu weights would be "
				   "more than %zu parameters", C, fkk,
				   AKK_MAX_FLOATS);
	l->out = (struct akk_shape){ 3, { sp->filters, (int)Ho, (int)Wo } };
	l->nparams = np;
	l->nstate = 0;
	l->aux = 0;
	l->work = work;
	l->flops = 2.0 * C * (double)fkk * hw +
		   (sp->bias ? (double)outn : 0);
	l->nviews = 1;
	l->views[0] = (struct akk_view){ "weight", 0, 0, 4,
					 { C, sp->filters, k, k } };
	if (sp->bias) {
		l->nviews = 2;
		l->views[1] = (struct akk_view){ "bias", 0, (size_t)C * fkk, 1,
						 { sp->filters, 0, 0, 0 } };
	}
	return 0;
}

static void convt_init(const struct akk_layer *l, float *p, float *s,
		       struct akk_rng *rng)
{
	struct geom g = geom_of(l);
	int kk = g.k * g.k, fan_in = g.F * kk, fan_out = g.C * kk;

	(void)s;
	akk_init_weights_bias(p, (size_t)g.C * fan_in, g.F, fan_in, fan_out, l->spec, rng);
}

/* The fold of this layer is conv2d's input-gradient fold with the roles
 * swapped: the output (F, Ho, Wo) is the image, the input's H W the
 * unrolled columns. */
static struct akk_fold fold_of(const struct geom *g)
{
	return (struct akk_fold){ g->F, g->Ho, g->Wo, g->k, g->s, g->p, g->H, g->W };
}

/* col (F k k, H W) from dy (F, Ho, Wo): what col2im would have added
 * each entry into, 0 where it fell outside. */
static void im2col(float *col, const float *dy, const struct geom *g)
{
	int k = g->k, s = g->s, p = g->p, hw = g->H * g->W;

	for (int f = 0; f < g->F; f++)
		for (int ki = 0; ki < k; ki++)
			for (int kj = 0; kj < k; kj++, col += hw) {
				int lo, hi, off = kj - p;
				akk_fold_range(&lo, &hi, g->Wo, g->W, s, p, kj);
				for (int ih = 0; ih < g->H; ih++) {
					int oh = ih * s - p + ki;
					float *cr = col + (size_t)ih * g->W;
					if (oh < 0 || oh >= g->Ho) {
						memset(cr, 0, g->W * sizeof(*cr));
						continue;
					}
					const float *dr = dy + ((size_t)f * g->Ho + oh) * g->Wo;
					for (int iw = 0; iw < lo; iw++)
						cr[iw] = 0;
					for (int iw = lo; iw < hi; iw++)
						cr[iw] = dr[iw * s + off];
					for (int iw = hi; iw < g->W; iw++)
						cr[iw] = 0;
				}
			}
}

static void convt_forward(const struct akk_layer *l, float *y, float *aux,
			  float *st, float *work, const float *x,
			  const float *p, int B, int train, struct akk_rng *rng)
{
	struct geom g = geom_of(l);
	int fkk = g.F * g.k * g.k, hw = g.H * g.W, ohw = g.Ho * g.Wo;
	size_t xs = (size_t)g.C * hw, ys = (size_t)g.F * ohw;
	const float *b = l->spec->bias ? p + (size_t)g.C * fkk : NULL;
	struct akk_fold fold = fold_of(&g);

	(void)aux, (void)st, (void)train, (void)rng;
	for (int i = 0; i < B; i++) {
		float *yi = y + i * ys;
		/* col (F k k, H W) = W^T (F k k, C) x (C, H W) */
		akk_sgemm(l->pool, 1, 0, fkk, hw, g.C, 1, p, fkk, x + i * xs,
			  hw, 0, work, hw);
		for (int f = 0; f < g.F; f++)
			for (int j = 0; j < ohw; j++)
				yi[(size_t)f * ohw + j] = b ? b[f] : 0;
		akk_col2im_add(yi, work, &fold, hw);
	}
}

static void convt_backward(const struct akk_layer *l, float *dx, float *dp,
			   float *work, const float *dy, const float *x,
			   const float *y, const float *aux, const float *p,
			   int B)
{
	struct geom g = geom_of(l);
	int fkk = g.F * g.k * g.k, hw = g.H * g.W, ohw = g.Ho * g.Wo;
	size_t xs = (size_t)g.C * hw, ys = (size_t)g.F * ohw;
	float *db = l->spec->bias ? dp + (size_t)g.C * fkk : NULL;

	(void)y, (void)aux;
	for (int i = 0; i < B; i++) {
		const float *dyi = dy + i * ys;
		for (int f = 0; db && f < g.F; f++) {
			float t = 0;
			for (int j = 0; j < ohw; j++)
				t += dyi[(size_t)f * ohw + j];
			db[f] += t;
		}
		im2col(work, dyi, &g);
		/* dW (C, F k k) += x (C, H W) dcol^T (H W, F k k) */
		akk_sgemm(l->pool, 0, 1, g.C, fkk, hw, 1, x + i * xs, hw, work,
			  hw, 1, dp, fkk);
		/* dx (C, H W) = W (C, F k k) dcol (F k k, H W) */
		if (dx)
			akk_sgemm(l->pool, 0, 0, g.C, hw, fkk, 1, p, fkk, work,
				  hw, 0, dx + i * xs, hw);
	}
}

/* ConvTranspose with weight (C, F, k, k) and bias (F), as stored; the
 * output padding adds to the end of each axis, as here. */
static int convt_export(const struct akk_layer *l, struct akk_graph_sink *g,
			const struct akk_export_io *io, struct akk_err *e)
{
	struct geom gm = geom_of(l);
	int bias = l->spec->bias;
	char w[256], b[256];
	int64_t wd[4] = { gm.C, gm.F, gm.k, gm.k }, bd[1] = { gm.F };
	int64_t ks[2] = { gm.k, gm.k }, st[2] = { gm.s, gm.s };
	int64_t pads[4] = { gm.p, gm.p, gm.p, gm.p };
	int64_t op[2] = { OUTPAD(l->spec), OUTPAD(l->spec) };
	const char *ins[3] = { io->x,
			       akk_export_name(w, sizeof(w), io->prefix, "weight"),
			       akk_export_name(b, sizeof(b), io->prefix, "bias") };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", ks, 2),
				 AKK_ATTR_IS("strides", st, 2),
				 AKK_ATTR_IS("pads", pads, 4),
				 AKK_ATTR_IS("output_padding", op, 2) };

	if (g->tensor(g, w, wd, 4, io->p, e) ||
	    (bias && g->tensor(g, b, bd, 1,
			       io->p + (size_t)gm.C * gm.F * gm.k * gm.k, e)))
		return -1;
	return g->node(g, "ConvTranspose", ins, bias ? 3 : 2, &io->y, 1, at,
		       4, e);
}

static const struct akk_layer_option convt_options[] = {
	AKK_OPTION("filters", INT, filters, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0,
		   0),
	AKK_OPTION("kernel", INT, kernel, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("stride", INT, stride, AKK_OPTION_LO, 1, 0, 1),
	AKK_OPTION("padding", INT, padding, AKK_OPTION_LO, 0, 0, 0),
	AKK_OPTION("output_padding", INT, iopt[0], AKK_OPTION_LO, 0, 0, 0),
	AKK_OPTION("bias", BOOL, bias, 0, 0, 0, 1),
	AKK_OPTION("init", INIT, init, 0, 0, 0, AKK_INIT_DEFAULT),
	AKK_OPTION("init_value", FLOAT, init_value, 0, 0, 0, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_conv_transpose2d = {
	.name = "conv_transpose2d",
	.options = convt_options,
	.plan = convt_plan,
	.init = convt_init,
	.forward = convt_forward,
	.backward = convt_backward,
	.export = convt_export,
};
