/* layer_conv2d.c - 2-D convolution (cross-correlation, like torch) by
 * im2col and small products read in place (tensor/smallmm.h).
 *
 * Input [C, H, W], F filters of k x k, stride s, zero padding p; output
 * [F, Ho, Wo] with Ho = (H + 2p - k) / s + 1 (floor), Wo likewise.
 * Parameters: weight (F, C, k, k), then bias (F) when spec->bias. Default
 * init is torch's: weight and bias U(+-1/sqrt(C k k)); an explicit init kind
 * applies to the weight (fan_in C k k, fan_out F k k) and zeroes the bias.
 *
 * Per sample, the forward unrolls x into col (C k k, Ho Wo), each row
 * zero-padded to whole vectors (hwp = akk_smm_pad(Ho Wo) floats), and
 * computes y (F, Ho Wo) = bias + W (F, C k k) col. col is kept in aux
 * (C k k hwp floats a sample, counted in the gate's plan) so the backward
 * does not unroll x again: it copies dy into a padded scratch, adds
 * dy col^T into dW, then computes dcol = W^T dy in the scratch and folds it
 * back into dx (col2im). An evaluation forward (train 0, or no aux) unrolls
 * into the scratch instead. A 1x1, stride 1, unpadded convolution skips the
 * unrolling: col is x itself, no aux is kept, and the products go through
 * akk_sgemm. With act_out (akk_layers_fuse) each sample's output gets the
 * activation after the layer in place, and the backward turns each
 * sample's dy into dz through it first. */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

#include "base/checked.h"
#include "tensor/smallmm.h"

struct geom {
	int C, H, W, F, k, s, p, Ho, Wo;
	int ld;		/* floats a row of col takes: Ho Wo padded */
};

static struct geom geom_of(const struct akk_layer *l)
{
	const struct akk_layer_spec *sp = l->spec;

	return (struct geom){ l->in.d[0], l->in.d[1], l->in.d[2], sp->filters,
			      sp->kernel, sp->stride, sp->padding,
			      l->out.d[1], l->out.d[2],
			      akk_smm_pad(l->out.d[1] * l->out.d[2]) };
}

static int is_pointwise(const struct geom *g)
{
	return g->k == 1 && g->s == 1 && g->p == 0;
}

/* The output columns [lo, hi) whose input column ow*s - p + kj lies in
 * [0, W): everything outside reads padding. */
static void valid_range(int *lo, int *hi, int W, int Wo, int s, int p, int kj)
{
	/* long: b + s - 1 may pass INT_MAX for a huge stride */
	long a = (long)p - kj, b = (long)W + p - kj;

	*lo = a <= 0 ? 0 : (int)((a + s - 1) / s);
	*hi = b <= 0 ? 0 : (int)((b + s - 1) / s);
	if (*hi > Wo)
		*hi = Wo;
	if (*lo > *hi)
		*lo = *hi;
}

/* Copies n floats, n small (a row of an image): 4 at a time through a
 * 16-byte vector, so the compiler keeps it inline instead of turning the
 * loop into a memcpy call, whose overhead dominates at these lengths. */
typedef float akk_v4 __attribute__((vector_size(16)));

static inline void copy_short(float *d, const float *s, int n)
{
	int i = 0;

	for (; i + 4 <= n; i += 4) {
		akk_v4 t;
		memcpy(&t, s + i, sizeof(t));
		memcpy(d + i, &t, sizeof(t));
	}
	switch (n - i) {
	case 3: d[i + 2] = s[i + 2]; /* fall through */
	case 2: d[i + 1] = s[i + 1]; /* fall through */
	case 1: d[i] = s[i]; /* fall through */
	default: break;
	}
}

/* col[(c k + ki) k + kj][oh Wo + ow] = x[c][oh s - p + ki][ow s - p + kj],
 * 0 in the padding; rows ld floats apart, zero from Ho Wo to ld. */
static void im2col(float *col, const float *x, const struct geom *g, int ld)
{
	int k = g->k, s = g->s, p = g->p, Wo = g->Wo, hw = g->Ho * Wo;

	for (int c = 0; c < g->C; c++)
		for (int ki = 0; ki < k; ki++)
			for (int kj = 0; kj < k; kj++, col += ld - hw) {
				int lo, hi, off = kj - p;
				for (int j = hw; j < ld; j++)
					col[j] = 0;
				valid_range(&lo, &hi, g->W, Wo, s, p, kj);
				for (int oh = 0; oh < g->Ho; oh++, col += Wo) {
					int ih = oh * s - p + ki;
					if (ih < 0 || ih >= g->H) {
						for (int ow = 0; ow < Wo; ow++)
							col[ow] = 0;
						continue;
					}
					const float *xr = x + ((size_t)c * g->H + ih) * g->W;
					for (int ow = 0; ow < lo; ow++)
						col[ow] = 0;
					if (s == 1 && hi > lo)
						copy_short(col + lo, xr + lo + off,
							   hi - lo);
					else
						for (int ow = lo; ow < hi; ow++)
							col[ow] = xr[ow * s + off];
					for (int ow = hi; ow < Wo; ow++)
						col[ow] = 0;
				}
			}
}

/* The adjoint of im2col (col's rows ld floats apart): dx = 0, then every
 * col entry adds into the input element it was read from; padding entries
 * are dropped. */
static void col2im(float *dx, const float *col, const struct geom *g, int ld)
{
	int k = g->k, s = g->s, p = g->p, Wo = g->Wo, hw = g->Ho * Wo;

	memset(dx, 0, (size_t)g->C * g->H * g->W * sizeof(*dx));
	for (int c = 0; c < g->C; c++)
		for (int ki = 0; ki < k; ki++)
			for (int kj = 0; kj < k; kj++, col += ld - hw) {
				int lo, hi, off = kj - p;
				valid_range(&lo, &hi, g->W, Wo, s, p, kj);
				for (int oh = 0; oh < g->Ho; oh++, col += Wo) {
					int ih = oh * s - p + ki;
					if (ih < 0 || ih >= g->H)
						continue;
					float *xr = dx + ((size_t)c * g->H + ih) * g->W;
					if (s == 1)	/* unit stride: vectorises */
						for (int ow = lo; ow < hi; ow++)
							xr[ow + off] += col[ow];
					else
						for (int ow = lo; ow < hi; ow++)
							xr[ow * s + off] += col[ow];
				}
			}
}

/* The sum of r[0..n): eight running sums (lane q adds r[8i + q]), which
 * the compiler keeps in vector registers, then the tail, then the lanes
 * pairwise. A fixed order, whatever the thread: the same bits every run. */
static float row_sum(const float *r, int n)
{
	float a[8] = { 0 }, t;
	int j = 0;

	for (; j + 8 <= n; j += 8)
		for (int q = 0; q < 8; q++)
			a[q] += r[j + q];
	for (int q = 0; j < n; j++, q++)
		a[q] += r[j];
	t = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
	return t;
}

static int conv_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 3)
		return akk_err_set(e, "expects an image input [channels, height, "
				   "width], got %s", buf);
	if (sp->filters <= 0)
		return akk_err_set(e, "expects filters > 0, got %d", sp->filters);
	if (sp->kernel <= 0)
		return akk_err_set(e, "expects kernel > 0, got %d", sp->kernel);
	if (sp->stride <= 0)
		return akk_err_set(e, "expects stride > 0, got %d", sp->stride);
	if (sp->padding < 0)
		return akk_err_set(e, "expects padding >= 0, got %d", sp->padding);
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	int k = sp->kernel, s = sp->stride, p = sp->padding;
	/* In size_t: H + 2p overflows int for a large padding. */
	size_t Hp = (size_t)H + 2 * (size_t)p, Wp = (size_t)W + 2 * (size_t)p;
	if (Hp > AKK_MAX_DIM || Wp > AKK_MAX_DIM)
		return akk_err_set(e, "padding %d makes the padded input %zux%zu "
				   "(input %s), more than %zu per side", p, Hp,
				   Wp, buf, AKK_MAX_DIM);
	if ((size_t)k > Hp || (size_t)k > Wp)
		return akk_err_set(e, "kernel %d is larger than the padded input "
				   "%zux%zu (input %s, padding %d)", k, Hp, Wp,
				   buf, p);
	int Ho = (int)((Hp - k) / s + 1), Wo = (int)((Wp - k) / s + 1);
	size_t ckk, hw, hwp, outn, work, np;
	if (!akk_mul3_ok((size_t)C, (size_t)k, (size_t)k, &ckk) ||
	    ckk > AKK_MAX_DIM)
		return akk_err_set(e, "kernel %d over %d channels makes a window "
				   "of more than %zu values", k, C, AKK_MAX_DIM);
	hw = (size_t)Ho * Wo;
	if (!akk_mul_ok((size_t)sp->filters, hw, &outn) || outn > AKK_MAX_DIM)
		return akk_err_set(e, "output [%d, %d, %d] would have more than "
				   "%zu values", sp->filters, Ho, Wo,
				   AKK_MAX_DIM);
	hwp = (size_t)akk_smm_pad((int)(hw < AKK_MAX_DIM ? hw : AKK_MAX_DIM));
	if (!akk_mul_ok(ckk, hwp, &work) || work > AKK_MAX_DIM)
		return akk_err_set(e, "its unrolled input (%zu x %zu) would have "
				   "more than %zu values", ckk, hw, AKK_MAX_DIM);
	if (!akk_muladd_ok((size_t)sp->filters, ckk,
			   sp->bias ? (size_t)sp->filters : 0, &np) ||
	    np > AKK_MAX_FLOATS)
		return akk_err_set(e, "%d filters of %zu weights would be more "
				   "than %zu parameters", sp->filters, ckk,
				   AKK_MAX_FLOATS);

	long F = sp->filters;
	l->out.rank = 3;
	l->out.d[0] = sp->filters;
	l->out.d[1] = Ho;
	l->out.d[2] = Wo;
	l->nparams = np;
	l->nstate = 0;
	/* col is kept for backward (aux); the scratch holds dcol, or col in
	 * an evaluation forward without aux, then struct bwd_scratch. */
	l->aux = (k == 1 && s == 1 && p == 0) ? 0 : work;
	l->work = l->aux ? work + (size_t)F * hwp + (hw + ckk) *
		  (size_t)akk_smm_pad(sp->filters) : 0;
	l->flops = 2.0 * F * ckk * hw + (sp->bias ? (double)F * hw : 0);
	l->nviews = 1;
	l->views[0] = (struct akk_view){ "weight", 0, 0, 4,
					 { sp->filters, C, k, k } };
	if (sp->bias) {
		l->nviews = 2;
		l->views[1] = (struct akk_view){ "bias", 0, (size_t)F * ckk, 1,
						 { sp->filters, 0, 0, 0 } };
	}
	return 0;
}

static void conv_init(const struct akk_layer *l, float *p, float *s,
		      struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	struct geom g = geom_of(l);
	int kk = g.k * g.k, fan_in = g.C * kk, fan_out = g.F * kk;
	size_t nw = (size_t)g.F * fan_in;
	enum akk_init kind = sp->init == AKK_INIT_DEFAULT ?
		AKK_INIT_LECUN_UNIFORM : sp->init;

	(void)s;
	akk_init_fill(p, nw, fan_in, fan_out, kind, sp->init_value, rng);
	if (!sp->bias)
		return;
	if (sp->init == AKK_INIT_DEFAULT)
		akk_init_fill(p + nw, g.F, fan_in, fan_out,
			      AKK_INIT_LECUN_UNIFORM, 0, rng);
	else
		memset(p + nw, 0, g.F * sizeof(*p));
}

static void conv_forward(const struct akk_layer *l, float *y, float *aux,
			 float *s, float *work, const float *x, const float *p,
			 int B, int train, struct akk_rng *rng)
{
	struct geom g = geom_of(l);
	int ckk = g.C * g.k * g.k, hw = g.Ho * g.Wo;
	size_t xs = (size_t)g.C * g.H * g.W, ys = (size_t)g.F * hw;
	const float *w = p, *b = l->spec->bias ? p + (size_t)g.F * ckk : NULL;

	(void)s, (void)rng;
	for (int i = 0; i < B; i++) {
		const float *xi = x + i * xs;
		float *yi = y + i * ys;
		if (is_pointwise(&g)) {
			/* y rows start at the bias; the sgemm adds W x */
			for (int f = 0; b && f < g.F; f++)
				for (int j = 0; j < hw; j++)
					yi[(size_t)f * hw + j] = b[f];
			akk_sgemm(l->pool, 0, 0, g.F, hw, ckk, 1, w, ckk, xi,
				  hw, b ? 1.0f : 0.0f, yi, hw);
		} else {
			/* evaluation unrolls into the scratch: no page of
			 * an evaluation tape's aux is ever touched */
			float *c = aux && train ? aux + (size_t)i * l->aux : work;
			im2col(c, xi, &g, g.ld);
			akk_smm_ab(yi, hw, w, ckk, 1, c, g.ld, b, 0, g.F, hw, ckk);
		}
		if (l->act_out)	/* the activation after, while yi is warm */
			akk_act_fused_forward(l->act_out, yi, 1, train);
	}
}

/* The backward's scratch, after dcol (C k k rows of ld floats): a
 * sample's dy with rows padded to ld, the same transposed (Ho Wo rows of
 * fp = F padded to whole vectors), and the batch's dW transposed (C k k
 * rows of fp), added into dW at the end. */
struct bwd_scratch {
	float *dcol, *dyp, *dyt, *dwt;
	int fp;
};

static struct bwd_scratch bwd_scratch(const struct geom *g, float *work)
{
	int ckk = g->C * g->k * g->k, fp = akk_smm_pad(g->F);
	struct bwd_scratch s = { work, work + (size_t)ckk * g->ld, NULL, NULL, fp };

	s.dyt = s.dyp + (size_t)g->F * g->ld;
	s.dwt = s.dyt + (size_t)g->Ho * g->Wo * fp;
	return s;
}

/* One sample's gradients through the unrolled input col (ld floats a
 * row): db += the rows of dy, dW^T += col dy^T (a product whose rows are
 * long: C k k by F, over Ho Wo), and, with dx, dcol = W^T dy folded into
 * dx. */
static void unrolled_backward(const struct geom *g, float *dx, float *db,
			      const struct bwd_scratch *s, const float *dy,
			      const float *col, const float *w)
{
	int ckk = g->C * g->k * g->k, hw = g->Ho * g->Wo, ld = g->ld;

	for (int f = 0; f < g->F; f++) {
		const float *d = dy + (size_t)f * hw;
		float *r = s->dyp + (size_t)f * ld;
		memcpy(r, d, hw * sizeof(*r));
		for (int j = hw; j < ld; j++)
			r[j] = 0;
		for (int j = 0; j < hw; j++)
			s->dyt[(size_t)j * s->fp + f] = d[j];
		if (db)
			db[f] += row_sum(r, hw);
	}
	akk_smm_ab(s->dwt, s->fp, col, ld, 1, s->dyt, s->fp, NULL, 1, ckk,
		   s->fp, hw);
	if (!dx)
		return;
	akk_smm_ab(s->dcol, ld, w, 1, ckk, s->dyp, ld, NULL, 0, ckk, hw, g->F);
	col2im(dx, s->dcol, g, ld);
}

static void conv_backward(const struct akk_layer *l, float *dx, float *dp,
			  float *work, const float *dy, const float *x,
			  const float *y, const float *aux, const float *p,
			  int B)
{
	struct geom g = geom_of(l);
	int ckk = g.C * g.k * g.k, hw = g.Ho * g.Wo;
	size_t xs = (size_t)g.C * g.H * g.W, ys = (size_t)g.F * hw;
	float *dw = dp, *db = l->spec->bias ? dp + (size_t)g.F * ckk : NULL;
	int pw = is_pointwise(&g);
	struct bwd_scratch sc = bwd_scratch(&g, work);

	if (!pw) {	/* dW^T from 0; dy^T's padding columns stay 0 */
		memset(sc.dwt, 0, (size_t)ckk * sc.fp * sizeof(float));
		memset(sc.dyt, 0, (size_t)hw * sc.fp * sizeof(float));
	}
	for (int i = 0; i < B; i++) {
		const float *xi = x + i * xs, *dyi = dy + i * ys;
		float *dxi = dx ? dx + i * xs : NULL;
		int unused;
		/* act_out: dy and y are the activation's; dz of one sample
		 * at a time, in act_dy's first row (stays in cache) */
		if (l->act_out)
			dyi = akk_act_fused_backward(l->act_out, l->act_dy, dyi,
						     y + i * ys, 1, NULL, 0,
						     &unused);
		if (!pw) {	/* col: unrolled by forward */
			unrolled_backward(&g, dxi, db, &sc, dyi,
					  aux + (size_t)i * l->aux, p);
			continue;
		}
		/* dW (F, C) += dy (F, HoWo) x^T (HoWo, C) */
		akk_sgemm(l->pool, 0, 1, g.F, ckk, hw, 1, dyi, hw, xi, hw, 1,
			  dw, ckk);
		for (int f = 0; db && f < g.F; f++)
			db[f] += row_sum(dyi + (size_t)f * hw, hw);
		/* dx (C, HoWo) = W^T (C, F) dy (F, HoWo) */
		if (dxi)
			akk_sgemm(l->pool, 1, 0, ckk, hw, g.F, 1, p, ckk, dyi,
				  hw, 0, dxi, hw);
	}
	for (int f = 0; !pw && f < g.F; f++)
		for (int j = 0; j < ckk; j++)
			dw[(size_t)f * ckk + j] += sc.dwt[(size_t)j * sc.fp + f];
}

/* Conv with weight (F, C, k, k) and bias (F), as stored. */
static int conv_export(const struct akk_layer *l, struct akk_graph_sink *g,
		       const struct akk_export_io *io, struct akk_err *e)
{
	struct geom gm = geom_of(l);
	int bias = l->spec->bias;
	char w[256], b[256];
	int64_t wd[4] = { gm.F, gm.C, gm.k, gm.k }, bd[1] = { gm.F };
	int64_t ks[2] = { gm.k, gm.k }, st[2] = { gm.s, gm.s };
	int64_t pads[4] = { gm.p, gm.p, gm.p, gm.p };
	const char *ins[3] = { io->x,
			       akk_export_name(w, sizeof(w), io->prefix, "weight"),
			       akk_export_name(b, sizeof(b), io->prefix, "bias") };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", ks, 2),
				 AKK_ATTR_IS("strides", st, 2),
				 AKK_ATTR_IS("pads", pads, 4) };

	if (g->tensor(g, w, wd, 4, io->p, e) ||
	    (bias && g->tensor(g, b, bd, 1,
			       io->p + (size_t)gm.F * gm.C * gm.k * gm.k, e)))
		return -1;
	return g->node(g, "Conv", ins, bias ? 3 : 2, &io->y, 1, at, 3, e);
}

static const struct akk_layer_option conv_options[] = {
	AKK_OPTION("filters", INT, filters, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0,
		   0),
	AKK_OPTION("kernel", INT, kernel, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("stride", INT, stride, AKK_OPTION_LO, 1, 0, 1),
	AKK_OPTION("padding", INT, padding, AKK_OPTION_LO, 0, 0, 0),
	AKK_OPTION("bias", BOOL, bias, 0, 0, 0, 1),
	AKK_OPTION("init", INIT, init, 0, 0, 0, AKK_INIT_DEFAULT),
	AKK_OPTION("init_value", FLOAT, init_value, 0, 0, 0, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_conv2d = {
	.name = "conv2d",
	.options = conv_options,
	.plan = conv_plan,
	.init = conv_init,
	.forward = conv_forward,
	.backward = conv_backward,
	.export = conv_export,
};
