/* layer_conv2d.c - 2-D convolution (cross-correlation, like torch) by
 * small products that read the input in place (tensor/smallmm.h).
 *
 * Input [C, H, W], F filters of k x k, stride s, zero padding p; output
 * [F, Ho, Wo] with Ho = (H + 2p - k) / s + 1 (floor), Wo likewise.
 * Parameters: weight (F, C, k, k), then bias (F) when spec->bias. Default
 * init is torch's: weight and bias U(+-1/sqrt(C k k)); an explicit init kind
 * applies to the weight (fan_in C k k, fan_out F k k) and zeroes the bias.
 *
 * Nothing is unrolled: the forward computes each sample's y^T (Ho Wo, F)
 * = bias + X (Ho Wo, C k k) W^T, where X's element (pixel, tap) is read
 * straight from the input through two offset tables (akk_smm_ab_gather:
 * where the pixel's window starts, where the tap sits in it), the filters
 * across the vector lanes; then transposes it into y. With stride 1 and
 * few filters (fewer than an output row fills lanes: LeNet's first layer)
 * the output pixels go across the lanes instead and y is written as it is
 * (akk_smm_conv_rows), with the same bits. With padding the
 * sample is first copied into a zero-bordered (C, H + 2p, W + 2p), kept
 * in aux for the backward (C (H + 2p) (W + 2p) floats a sample); without,
 * the products read x itself and aux is empty. The backward adds
 * X^T dy^T into dW^T (the same tables, roles swapped; accumulated over
 * the batch, added into dW at the end; where the forward put the pixels
 * across the lanes, as dot products of the input's rows with dy's,
 * akk_smm_conv_rows_dw), sums dy's rows into db, and with
 * dx computes dcol = W^T dy and folds it back into dx (col2im). A 1x1,
 * stride 1, unpadded convolution is a plain product: it goes through
 * akk_sgemm. With act_out (akk_layers_fuse) each sample's output gets the
 * activation after the layer in place, and the backward turns each
 * sample's dy into dz through it first. */
#include "nn/layer.h"
#include "nn/export.h"
#include "base/clones.h"

#include <string.h>

#include "base/checked.h"
#include "nn/col2im.h"
#include "tensor/smallmm.h"

struct geom {
	int C, H, W, F, k, s, p, Ho, Wo;
	int ld;		/* floats a row of col takes: col_row, padded */
};

/* The floats of a row of dcol (the input gradient unrolled) and of dy laid
 * out for it. With stride 1 an output row starts Wq = W + 2p floats after
 * the one before, as the padded input's rows do, so that a row of dcol
 * folds into the padded input as one run (the Wq - Wo floats between hold
 * zeros); otherwise the rows follow one another, Ho Wo in all. */
static size_t col_row(size_t Ho, size_t Wo, size_t Wq, int s)
{
	return s == 1 ? (Ho - 1) * Wq + Wo : Ho * Wo;
}

static struct geom geom_of(const struct akk_layer *l)
{
	const struct akk_layer_spec *sp = l->spec;
	int Ho = l->out.d[1], Wo = l->out.d[2];
	size_t wq = (size_t)l->in.d[2] + 2 * (size_t)sp->padding;

	return (struct geom){ l->in.d[0], l->in.d[1], l->in.d[2], sp->filters,
			      sp->kernel, sp->stride, sp->padding, Ho, Wo,
			      akk_smm_pad((int)col_row(Ho, Wo, wq, sp->stride)) };
}

static int is_pointwise(const struct geom *g)
{
	return g->k == 1 && g->s == 1 && g->p == 0;
}

/* dx from the unrolled gradient col (rows ld floats apart): dx = 0, then
 * every col entry adds into the input element it belongs to. With stride
 * 1 (col's rows laid out as col_row says) row (c, ki, kj) adds into the
 * padded input from (c, ki, kj) on as one run, in the same order per
 * element as the general fold, and dx is the padded input's interior
 * (without padding, dx itself); the zeros between the output rows add
 * nothing (a sum from +0 is never -0). Two bodies (base/clones.h): AVX2
 * adds 8 floats of a run at a time, with the same bits. */
AKK_CLONES
static void col2im(float *dx, const float *col, const struct geom *g,
		   float *xpad)
{
	int hq = g->H + 2 * g->p, wq = g->W + 2 * g->p;
	int n = (g->Ho - 1) * wq + g->Wo;
	float *t = g->p ? xpad : dx;

	if (g->s != 1) {
		struct akk_fold f = { g->C, g->H, g->W, g->k, g->s, g->p, g->Ho, g->Wo };
		memset(dx, 0, (size_t)g->C * g->H * g->W * sizeof(*dx));
		akk_col2im_add(dx, col, &f, g->ld);
		return;
	}
	memset(t, 0, (size_t)g->C * hq * wq * sizeof(*t));
	for (int c = 0; c < g->C; c++)
		for (int ki = 0; ki < g->k; ki++)
			for (int kj = 0; kj < g->k; kj++, col += g->ld) {
				float *restrict to = t + ((size_t)c * hq + ki) * wq + kj;
				const float *restrict from = col;
				for (int j = 0; j < n; j++)
					to[j] += from[j];
			}
	for (int c = 0; g->p && c < g->C; c++)
		for (int h = 0; h < g->H; h++)
			memcpy(dx + ((size_t)c * g->H + h) * g->W,
			       t + ((size_t)c * hq + h + g->p) * wq + g->p,
			       g->W * sizeof(*dx));
}

/* The sum of r[0..n): four sets of eight running sums (set s, lane q
 * adds r[32i + 8s + q]: four chains of vector adds, not one waiting on
 * each add), the blocks of 8 left into set 0, then the tail into its
 * lanes, then the sets lane by lane, then the lanes pairwise. A fixed
 * order, whatever the thread and the body (the compiler keeps each set
 * in a vector register; base/clones.h): the same bits every run. */
AKK_CLONES
static float row_sum(const float *r, int n)
{
	float a[8] = { 0 }, b[8] = { 0 }, c[8] = { 0 }, d[8] = { 0 }, t;
	int j = 0;

	for (; j + 32 <= n; j += 32)
		for (int q = 0; q < 8; q++) {
			a[q] += r[j + q];
			b[q] += r[j + 8 + q];
			c[q] += r[j + 16 + q];
			d[q] += r[j + 24 + q];
		}
	for (; j + 8 <= n; j += 8)
		for (int q = 0; q < 8; q++)
			a[q] += r[j + q];
	for (int q = 0; j < n; j++, q++)
		a[q] += r[j];
	for (int q = 0; q < 8; q++)
		a[q] = (a[q] + b[q]) + (c[q] + d[q]);
	t = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
	return t;
}

/* The scratch of a call (struct akk_layer's work), in this order, in
 * floats: a sample's dy transposed (Ho Wo rows of fp = F padded to whole
 * vectors), the batch's dW transposed (C k k rows of fp; added into dW at
 * the end), W transposed (C k k rows of fp), a sample's y transposed (Ho
 * Wo rows of fp), the bias as one row of y^T (fp), a padded input (C Hq
 * Wq: an evaluation's input; with stride 1 and padding, where dx is
 * folded), dcol (C k k rows of ld), a sample's dy laid out for it (F rows
 * of ld), then the offset tables of the gathered products: mo (Ho Wo:
 * where an output pixel's window starts in the padded input) and ko (C k
 * k: where a filter tap sits in the window). */
struct scratch {
	float *dcol, *dyp, *dyt, *dwt, *wt, *yt, *brow, *xpad;
	int *mo, *ko;
	int fp;
};

static size_t scratch_floats(const struct geom *g)
{
	size_t ckk = (size_t)g->C * g->k * g->k, hw = (size_t)g->Ho * g->Wo;
	size_t fp = (size_t)akk_smm_pad(g->F);
	size_t hq = (size_t)g->H + 2 * g->p, wq = (size_t)g->W + 2 * g->p;

	return ckk * g->ld + (size_t)g->F * g->ld + hw * fp * 2 + ckk * fp * 2 +
	       (size_t)g->C * hq * wq + hw + ckk + fp;
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
	size_t ckk, hw, hwp, outn, work, np, padded;
	if (!akk_mul3_ok((size_t)C, (size_t)k, (size_t)k, &ckk) ||
	    ckk > AKK_MAX_DIM)
		return akk_err_set(e, "kernel %d over %d channels makes a window "
				   "of more than %zu values", k, C, AKK_MAX_DIM);
	hw = (size_t)Ho * Wo;
	if (!akk_mul_ok((size_t)sp->filters, hw, &outn) || outn > AKK_MAX_DIM)
		return akk_err_set(e, "output [%d, %d, %d] would have more than "
				   "%zu values", sp->filters, Ho, Wo,
				   AKK_MAX_DIM);
	if (!akk_mul3_ok((size_t)C, Hp, Wp, &padded) || padded > AKK_MAX_DIM)
		return akk_err_set(e, "padded input %zux%zu over %d channels "
				   "would have more than %zu values", Hp, Wp,
				   C, AKK_MAX_DIM);
	hwp = (size_t)akk_smm_pad((int)(hw < AKK_MAX_DIM ? hw : AKK_MAX_DIM));
	if (s == 1)	/* col_row's wide rows, at most Hp Wp */
		hwp = (size_t)akk_smm_pad((int)col_row((size_t)Ho, (size_t)Wo, Wp, 1));
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
	/* the padded input is kept for backward (aux); the scratch is
	 * struct scratch's */
	struct geom g = geom_of(l);
	int pw = is_pointwise(&g);
	l->aux = !pw && p ? padded : 0;
	l->work = pw ? 0 : scratch_floats(&g);
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
	struct geom g = geom_of(l);
	int kk = g.k * g.k, fan_in = g.C * kk, fan_out = g.F * kk;

	(void)s;
	akk_init_weights_bias(p, (size_t)g.F * fan_in, g.F, fan_in, fan_out, l->spec, rng);
}

static struct scratch scratch_of(const struct geom *g, float *work)
{
	size_t ckk = (size_t)g->C * g->k * g->k, hw = (size_t)g->Ho * g->Wo;
	int fp = akk_smm_pad(g->F);
	struct scratch s = { .dyt = work, .fp = fp };

	s.dwt = s.dyt + hw * fp;
	s.wt = s.dwt + ckk * fp;
	s.yt = s.wt + ckk * fp;
	s.brow = s.yt + hw * fp;
	s.xpad = s.brow + fp;
	s.dcol = s.xpad + (size_t)g->C * (g->H + 2 * g->p) * (g->W + 2 * g->p);
	s.dyp = s.dcol + ckk * g->ld;
	s.mo = (int *)(s.dyp + (size_t)g->F * g->ld);
	s.ko = s.mo + hw;
	return s;
}

/* The offset tables for the padded input (Hq = H + 2p rows of Wq). */
static void offsets(const struct geom *g, const struct scratch *s)
{
	int wq = g->W + 2 * g->p, hq = g->H + 2 * g->p, n = 0;

	for (int oh = 0; oh < g->Ho; oh++)
		for (int ow = 0; ow < g->Wo; ow++)
			s->mo[n++] = (oh * wq + ow) * g->s;
	n = 0;
	for (int c = 0; c < g->C; c++)
		for (int ki = 0; ki < g->k; ki++)
			for (int kj = 0; kj < g->k; kj++)
				s->ko[n++] = (c * hq + ki) * wq + kj;
}

/* x (C, H, W) into xp (C, H + 2p, W + 2p), zeros around. */
static void pad_input(float *xp, const float *x, const struct geom *g)
{
	int wq = g->W + 2 * g->p, hq = g->H + 2 * g->p;

	memset(xp, 0, (size_t)g->C * hq * wq * sizeof(*xp));
	for (int c = 0; c < g->C; c++)
		for (int h = 0; h < g->H; h++)
			memcpy(xp + ((size_t)c * hq + h + g->p) * wq + g->p,
			       x + ((size_t)c * g->H + h) * g->W,
			       g->W * sizeof(*x));
}

/* The input a sample's products read: x itself, or its padded copy, kept
 * in aux for the backward when training (an evaluation pads into the
 * scratch: no page of an evaluation tape's aux is touched). */
static const float *input_of(const struct akk_layer *l, const struct geom *g,
			     const struct scratch *s, const float *xi,
			     float *aux, int i, int train)
{
	float *xp;

	if (!g->p)
		return xi;
	xp = aux && train ? aux + (size_t)i * l->aux : s->xpad;
	pad_input(xp, xi, g);
	return xp;
}

/* Whether the forward puts the output pixels across the vector lanes
 * (akk_smm_conv_rows) rather than the filters: with stride 1, when an
 * output row fills a larger share of its vectors than the filters do of
 * theirs (LeNet's first layer: 28 pixels of 32 lanes against 6 filters of
 * 8). The same bits either way. */
static int rows_across_lanes(const struct geom *g)
{
	return g->s == 1 &&
	       (long)g->Wo * akk_smm_pad(g->F) > (long)g->F * akk_smm_pad(g->Wo);
}

/* y = bias + W x as y^T (Ho Wo, F) = x gathered (Ho Wo, C k k) W^T
 * (C k k, F): each output pixel's products in registers across the
 * filters, the input read in place through the offset tables, then y^T
 * transposed into y; or, rows_across_lanes, straight into y. */
static void gathered_forward(const struct akk_layer *l, float *y, float *aux,
			     float *work, const float *x, const float *p,
			     int B, int train)
{
	struct geom g = geom_of(l);
	int ckk = g.C * g.k * g.k, hw = g.Ho * g.Wo, rows = rows_across_lanes(&g);
	int wq = g.W + 2 * g.p;
	size_t xs = (size_t)g.C * g.H * g.W, ys = (size_t)g.F * hw;
	long xn = (long)g.C * (g.H + 2 * g.p) * wq;
	const float *b = l->spec->bias ? p + (size_t)g.F * ckk : NULL;
	struct scratch s = scratch_of(&g, work);

	offsets(&g, &s);
	if (!rows) {
		memset(s.wt, 0, (size_t)ckk * s.fp * sizeof(float));
		for (int f = 0; f < g.F; f++)
			for (int k = 0; k < ckk; k++)
				s.wt[(size_t)k * s.fp + f] = p[(size_t)f * ckk + k];
		for (int f = 0; f < s.fp; f++)
			s.brow[f] = b && f < g.F ? b[f] : 0;
	}
	for (int i = 0; i < B; i++) {
		const float *src = input_of(l, &g, &s, x + i * xs, aux, i, train);
		float *yi = y + i * ys;

		if (rows) {
			akk_smm_conv_rows(yi, hw, src, xn, s.ko, p, b, g.F, ckk,
					  g.Ho, g.Wo, wq);
		} else {
			const float *restrict brow = s.brow;
			float *restrict yt = s.yt;
			/* every row of y^T starts at the bias (a copy the
			 * compiler vectorises: the rows are whole vectors) */
			for (int j = 0; j < hw; j++)
				for (int f = 0; f < s.fp; f++)
					yt[(size_t)j * s.fp + f] = brow[f];
			akk_smm_ab_gather(s.yt, s.fp, src, s.mo, s.ko, s.wt, s.fp, 1,
					  hw, s.fp, ckk, 0);
			akk_smm_transpose(yi, hw, s.yt, s.fp, hw, g.F, hw, s.fp);
		}
		if (l->act_out)	/* the activation after, while yi is warm */
			akk_act_fused_forward(l->act_out, yi, 1, train);
	}
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
	if (!is_pointwise(&g)) {
		gathered_forward(l, y, aux, work, x, p, B, train);
		return;
	}
	for (int i = 0; i < B; i++) {
		const float *xi = x + i * xs;
		float *yi = y + i * ys;
		/* y rows start at the bias; the sgemm adds W x */
		for (int f = 0; b && f < g.F; f++)
			for (int j = 0; j < hw; j++)
				yi[(size_t)f * hw + j] = b[f];
		akk_sgemm(l->pool, 0, 0, g.F, hw, ckk, 1, w, ckk, xi, hw,
			  b ? 1.0f : 0.0f, yi, hw);
		if (l->act_out)	/* the activation after, while yi is warm */
			akk_act_fused_forward(l->act_out, yi, 1, train);
	}
}

/* One sample's gradients through the input src the forward read (x, or
 * its padded copy): db += the rows of dy, dW^T += x gathered (C k k, Ho Wo)
 * dy^T (Ho Wo, F) (with few filters each sum over the Ho Wo pixels split
 * in two chains: akk_smm_ab_gather), and, with dx, dcol = W^T dy folded
 * into dx (col2im). When the forward put the output pixels across the
 * lanes (rows_across_lanes), so does dW^T's product
 * (akk_smm_conv_rows_dw), on dy's rows laid out as dcol's, with no
 * transpose (LeNet's first layer: its backward 0.83x the time, medians
 * of 9 interleaved `akkctl bench --layers`). */
static void gathered_backward(const struct geom *g, float *dx, float *db,
			      const struct scratch *s, const float *dy,
			      const float *src, const float *w)
{
	int ckk = g->C * g->k * g->k, hw = g->Ho * g->Wo, ld = g->ld;
	int rows = rows_across_lanes(g);

	/* dy^T, its columns past F zeros */
	if (!rows)
		akk_smm_transpose(s->dyt, s->fp, dy, hw, g->F, hw, s->fp, hw);
	for (int f = 0; f < g->F; f++) {
		const float *d = dy + (size_t)f * hw;
		if (db)
			db[f] += row_sum(d, hw);
		if (!dx && !rows)	/* dy's padded rows: for dcol and the rows' dW */
			continue;
		float *r = s->dyp + (size_t)f * ld;
		int wq = g->s == 1 ? g->W + 2 * g->p : g->Wo;
		memset(r, 0, ld * sizeof(*r));
		for (int oh = 0; oh < g->Ho; oh++)
			memcpy(r + (size_t)oh * wq, d + (size_t)oh * g->Wo,
			       g->Wo * sizeof(*r));
	}
	if (rows)	/* the sums stop at the last output (ld is padded) */
		akk_smm_conv_rows_dw(s->dwt, s->fp, src, s->ko, ckk, s->dyp, ld,
				     g->F, (int)col_row(g->Ho, g->Wo, g->W + 2 * g->p, 1));
	else
		akk_smm_ab_gather(s->dwt, s->fp, src, s->ko, s->mo, s->dyt, s->fp, 1,
				  ckk, s->fp, hw, 1);
	if (!dx)
		return;
	akk_smm_ab(s->dcol, ld, w, 1, ckk, s->dyp, ld, NULL, 0, ckk, ld, g->F);
	col2im(dx, s->dcol, g, s->xpad);
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
	struct scratch sc = scratch_of(&g, work);

	if (!pw) {	/* dW^T from 0 */
		offsets(&g, &sc);
		memset(sc.dwt, 0, (size_t)ckk * sc.fp * sizeof(float));
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
		if (!pw) {	/* the padded input: kept by the forward */
			gathered_backward(&g, dxi, db, &sc, dyi, g.p ?
					  aux + (size_t)i * l->aux : xi, p);
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

const struct akk_layer_option akk_conv_options[] = {
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
	.options = akk_conv_options,
	.plan = conv_plan,
	.init = conv_init,
	.forward = conv_forward,
	.backward = conv_backward,
	.export = conv_export,
};
