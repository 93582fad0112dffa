/* layer_conv1d.c - 1-D convolution over the steps of a sequence
 * (cross-correlation, like torch's nn.Conv1d).
 *
 * Input [T, C] (time-major: step t's C features contiguous), F filters
 * of k steps, stride s, zero padding p at both ends; output [To, F] with
 * To = (T + 2p - k) / s + 1 (floor). Parameters: weight (F, C, k) as
 * torch's Conv1d stores it, then bias (F) when spec->bias. torch keeps a
 * sequence channels-first (C, T); the convolution over time is the same.
 * Default init is torch's: weight and bias U(+-1/sqrt(C k)); an explicit
 * init kind applies to the weight (fan_in C k, fan_out F k) and zeroes
 * the bias.
 *
 * In the time-major layout the window of output step o is the k C floats
 * from step o s - p on, in (tap, channel) order. The forward is one
 * product for the whole batch: y (B To, F) = bias + P (B To, k C) W'^T,
 * with W' the weight reordered to (F, k, C) and P the windows, one row
 * each. Where the windows tile the input exactly (s = k, no padding,
 * T = To k: pointwise and disjoint windows) P is x itself, read in place.
 * Otherwise P is copied (work_sample: To k C floats a sample): with
 * overlapping windows (s < k) x could be read with row stride s C, but
 * the BLAS refuses a leading dimension below the row length k C. The
 * backward rebuilds P, adds P^T dy into dW' (reordered into dW at the
 * end), sums dy's rows into db, and for dx computes dP = dy W' and adds
 * each window back where it came from (the padding's share dropped). */
#include "nn/layer.h"
#include "nn/export.h"

#include <string.h>

#include "base/checked.h"

struct geom {
	int T, C, F, k, s, p, To;
	int kc;		/* k C: a window's floats */
};

static struct geom geom_of(const struct akk_layer *l)
{
	const struct akk_layer_spec *sp = l->spec;

	return (struct geom){ l->in.d[0], l->in.d[1], sp->filters, sp->kernel,
			      sp->stride, sp->padding, l->out.d[0],
			      sp->kernel * l->in.d[1] };
}

/* x is its own window matrix: windows side by side, covering every step. */
static int in_place(const struct geom *g)
{
	return g->s == g->k && g->p == 0 && g->T == g->To * g->k;
}

static int conv1d_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 2)
		return akk_err_set(e, "expects a sequence [T, features], got %s",
				   buf);
	if (sp->filters <= 0)
		return akk_err_set(e, "expects filters > 0, got %d", sp->filters);
	if (sp->kernel <= 0)
		return akk_err_set(e, "expects kernel > 0, got %d", sp->kernel);
	if (sp->stride <= 0)
		return akk_err_set(e, "expects stride > 0, got %d", sp->stride);
	if (sp->padding < 0)
		return akk_err_set(e, "expects padding >= 0, got %d", sp->padding);
	int T = l->in.d[0], C = l->in.d[1], F = sp->filters, k = sp->kernel;
	size_t Tp = (size_t)T + 2 * (size_t)sp->padding, kc, np, outn, win;
	if (Tp > AKK_MAX_DIM)
		return akk_err_set(e, "padding %d makes the padded input %zu steps "
				   "(input %s), more than %zu", sp->padding, Tp,
				   buf, AKK_MAX_DIM);
	if ((size_t)k > Tp)
		return akk_err_set(e, "kernel %d is longer than the padded input of "
				   "%zu steps (input %s, padding %d)", k, Tp, buf,
				   sp->padding);
	int To = (int)((Tp - k) / sp->stride + 1);
	if (!akk_mul_ok((size_t)k, (size_t)C, &kc) || kc > AKK_MAX_DIM ||
	    !akk_mul_ok(kc, (size_t)To, &win) || win > AKK_MAX_DIM)
		return akk_err_set(e, "kernel %d over %d features makes windows of "
				   "more than %zu values", k, C, AKK_MAX_DIM);
	if (!akk_mul_ok((size_t)To, (size_t)F, &outn) || outn > AKK_MAX_DIM)
		return akk_err_set(e, "output [%d, %d] would have more than %zu "
				   "values", To, F, AKK_MAX_DIM);
	if (!akk_muladd_ok((size_t)F, kc, sp->bias ? (size_t)F : 0, &np) ||
	    np > AKK_MAX_FLOATS)
		return akk_err_set(e, "%d filters of %zu weights would be more "
				   "than %zu parameters", F, kc, AKK_MAX_FLOATS);

	l->out = (struct akk_shape){ 2, { To, F, 0 } };
	l->nparams = np;
	l->nstate = 0;
	l->aux = 0;
	struct geom g = geom_of(l);
	/* W' and dW' (F k C each); the windows, a sample's share */
	l->work = 2 * (size_t)F * kc;
	l->work_sample = in_place(&g) ? 0 : win;
	l->flops = 2.0 * F * (double)kc * To + (sp->bias ? (double)F * To : 0);
	l->nviews = 1;
	l->views[0] = (struct akk_view){ "weight", 0, 0, 3, { F, C, k, 0 } };
	if (sp->bias) {
		l->nviews = 2;
		l->views[1] = (struct akk_view){ "bias", 0, (size_t)F * kc, 1,
						 { F, 0, 0, 0 } };
	}
	return 0;
}

static void conv1d_init(const struct akk_layer *l, float *p, float *s,
			struct akk_rng *rng)
{
	struct geom g = geom_of(l);

	(void)s;
	akk_init_weights_bias(p, (size_t)g.F * g.kc, g.F, g.kc, g.F * g.k,
			      l->spec, rng);
}

/* P (B To, k C): row o of sample b is the window of output step o, zeros
 * where it reaches into the padding. */
static void windows(float *P, const float *x, const struct geom *g, int B)
{
	size_t C = g->C;

	for (int b = 0; b < B; b++) {
		const float *xb = x + (size_t)b * g->T * C;
		for (int o = 0; o < g->To; o++, P += g->kc) {
			int t0 = o * g->s - g->p;	/* the window's first step */
			/* taps [lo, hi) fall on real steps: 0 <= lo <= hi <= k */
			int lo = t0 < 0 ? -t0 : 0, hi = g->T - t0;
			lo = lo > g->k ? g->k : lo;
			hi = hi > g->k ? g->k : hi < lo ? lo : hi;
			memset(P, 0, (size_t)lo * C * sizeof(*P));
			if (hi > lo)
				memcpy(P + (size_t)lo * C, xb + (size_t)(t0 + lo) * C,
				       (size_t)(hi - lo) * C * sizeof(*P));
			memset(P + (size_t)hi * C, 0,
			       (size_t)(g->k - hi) * C * sizeof(*P));
		}
	}
}

/* dx = 0, then row o of dP (B To, k C) adds into the steps its window
 * read; taps in the padding are dropped. */
static void fold(float *dx, const float *dP, const struct geom *g, int B)
{
	size_t C = g->C;

	memset(dx, 0, (size_t)B * g->T * C * sizeof(*dx));
	for (int b = 0; b < B; b++) {
		float *db = dx + (size_t)b * g->T * C;
		for (int o = 0; o < g->To; o++, dP += g->kc) {
			int t0 = o * g->s - g->p;
			for (int j = 0; j < g->k; j++) {
				int t = t0 + j;
				if (t < 0 || t >= g->T)
					continue;
				float *d = db + (size_t)t * C;
				const float *r = dP + (size_t)j * C;
				for (size_t c = 0; c < C; c++)
					d[c] += r[c];
			}
		}
	}
}

/* W' (F, k, C) from W (F, C, k). */
static void reorder(float *wt, const float *w, const struct geom *g)
{
	for (int f = 0; f < g->F; f++)
		for (int c = 0; c < g->C; c++)
			for (int j = 0; j < g->k; j++)
				wt[((size_t)f * g->k + j) * g->C + c] =
					w[((size_t)f * g->C + c) * g->k + j];
}

static void conv1d_forward(const struct akk_layer *l, float *y, float *aux,
			   float *s, float *work, const float *x,
			   const float *p, int B, int train, struct akk_rng *rng)
{
	struct geom g = geom_of(l);
	size_t R = (size_t)B * g.To;
	const float *b = l->spec->bias ? p + (size_t)g.F * g.kc : NULL;
	float *wt = work, *P = work + 2 * (size_t)g.F * g.kc;
	const float *A = x;

	(void)aux, (void)s, (void)train, (void)rng;
	reorder(wt, p, &g);
	if (!in_place(&g)) {
		windows(P, x, &g, B);
		A = P;
	}
	for (size_t i = 0; b && i < R; i++)
		memcpy(y + i * g.F, b, g.F * sizeof(*y));
	akk_sgemm(l->pool, 0, 1, (int)R, g.F, g.kc, 1, A, g.kc, wt, g.kc,
		  b ? 1.0f : 0.0f, y, g.F);
}

/* dW' (F, k C) = dy^T P, added into dW reordered; db += column sums of
 * dy; dP = dy W' folded into dx (in place: dP is dx). */
static void conv1d_backward(const struct akk_layer *l, float *dx, float *dp,
			    float *work, const float *dy, const float *x,
			    const float *y, const float *aux, const float *p,
			    int B)
{
	struct geom g = geom_of(l);
	size_t R = (size_t)B * g.To, fk = (size_t)g.F * g.kc;
	float *db = l->spec->bias ? dp + fk : NULL;
	float *wt = work, *dwt = work + fk, *P = work + 2 * fk;
	const float *A = x;
	int inplace = in_place(&g);

	(void)y, (void)aux;
	if (!inplace) {
		windows(P, x, &g, B);
		A = P;
	}
	akk_sgemm(l->pool, 1, 0, g.F, g.kc, (int)R, 1, dy, g.F, A, g.kc, 0,
		  dwt, g.kc);
	for (int f = 0; f < g.F; f++)
		for (int c = 0; c < g.C; c++)
			for (int j = 0; j < g.k; j++)
				dp[((size_t)f * g.C + c) * g.k + j] +=
					dwt[((size_t)f * g.k + j) * g.C + c];
	for (size_t i = 0; db && i < R; i++)
		for (int f = 0; f < g.F; f++)
			db[f] += dy[i * g.F + f];
	if (!dx)
		return;
	reorder(wt, p, &g);
	akk_sgemm(l->pool, 0, 0, (int)R, g.kc, g.F, 1, dy, g.F, wt, g.kc, 0,
		  inplace ? dx : P, g.kc);
	if (!inplace)
		fold(dx, P, &g, B);
}

/* Conv over (N, C, T) between two transposes (akk_export_over_time),
 * the weight (F, C, k) and bias (F) as stored. */
static int conv1d_export(const struct akk_layer *l, struct akk_graph_sink *g,
			 const struct akk_export_io *io, struct akk_err *e)
{
	struct geom gm = geom_of(l);
	int bias = l->spec->bias;
	char w[256], b[256];
	int64_t wd[3] = { gm.F, gm.C, gm.k }, bd[1] = { gm.F };
	int64_t ks[1] = { gm.k }, st[1] = { gm.s }, pads[2] = { gm.p, gm.p };
	const char *more[2] = { akk_export_name(w, sizeof(w), io->prefix, "weight"),
				akk_export_name(b, sizeof(b), io->prefix, "bias") };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", ks, 1),
				 AKK_ATTR_IS("strides", st, 1),
				 AKK_ATTR_IS("pads", pads, 2) };

	if (g->tensor(g, w, wd, 3, io->p, e) ||
	    (bias && g->tensor(g, b, bd, 1, io->p + (size_t)gm.F * gm.kc, e)))
		return -1;
	return akk_export_over_time(g, io, "Conv", more, bias ? 2 : 1, at, 3, e);
}


const struct akk_layer_ops akk_layer_conv1d = {
	.name = "conv1d",
	.options = akk_conv_options,
	.plan = conv1d_plan,
	.init = conv1d_init,
	.forward = conv1d_forward,
	.backward = conv1d_backward,
	.export = conv1d_export,
};
