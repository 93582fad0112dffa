/* layer_lstm.c - long short-term memory, torch's nn.LSTM.
 *
 * Per step, with the gate blocks in torch's order i, f, g, o:
 *   i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)    f likewise
 *   g = tanh(W_ig x + b_ig + W_hg h + b_hg)       o = sigmoid(...)
 *   c' = f c + i g        h' = o tanh(c')
 * from h = c = 0 (stateful: the carried state, recurrent.h). Shapes,
 * options, parameters (weight_ih (4H, F), weight_hh (4H, H), bias_ih,
 * bias_hh, per direction) and the time loop are recurrent.c's; aux keeps the four activations, c and h of every
 * step; tanh(c) is recomputed by the backward. */
#include "nn/layer.h"
#include "nn/export.h"
#include "nn/recurrent.h"

#include <string.h>

/* One sample's c' = f c + i g (c' = i g at the first step: cp NULL) and
 * h' = o tanh(c'), from the activations a = (i, f, g, o). */
static void cell_out(float *restrict c, float *restrict h,
		     const float *restrict a, const float *restrict cp, int H)
{
	for (int j = 0; j < H; j++)
		c[j] = a[j] * a[2 * H + j];
	for (int j = 0; cp && j < H; j++)
		c[j] += a[H + j] * cp[j];
	memcpy(h, c, H * sizeof(*h));
	akk_rec_tanh(h, H);
	for (int j = 0; j < H; j++)
		h[j] *= a[3 * H + j];
}

/* gates[t] holds the pre-activations (input and hidden products, both
 * biases): the activations replace them, block by block (i and f are
 * adjacent: one sigmoid pass); c[t] and h[t] follow. */
static void lstm_step_forward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			      int t, const float *hprev, const float *hh, int B)
{
	int H = r->H;
	size_t gh = (size_t)4 * H;
	float *g = ps->gates + (size_t)t * B * gh;
	float *c = ps->extra + (size_t)t * B * H, *h = ps->h + (size_t)t * B * H;
	const float *cprev = hprev ? ps->extra + (ptrdiff_t)akk_rec_prev(ps, t) * B * H
				   : NULL;

	(void)hh;
	for (int b = 0; b < B; b++, g += gh, c += H, h += H) {
		akk_rec_sigmoid(g, 2 * (size_t)H);
		akk_rec_tanh(g + 2 * H, H);
		akk_rec_sigmoid(g + 3 * H, H);
		cell_out(c, h, g, cprev ? cprev + (size_t)b * H : NULL, H);
	}
}

/* One sample's gate gradients d = (di, df, dg, do) at the pre-activations
 * from the activations a = (i, f, g, o), tanh(c) (in do's place on entry),
 * dh, cprev (NULL: zero) and the carried dc:
 *   dc = carry + dh o (1 - tanh(c)^2)
 *   di = dc g i (1-i)   df = dc cprev f (1-f)   dg = dc i (1-g^2)
 *   do = dh tanh(c) o (1-o)
 * and carry = dc f for the step before. */
static void cell_grad(float *restrict d, float *restrict carry,
		      const float *restrict a, const float *restrict dh,
		      const float *restrict cp, int H)
{
	for (int j = 0; j < H; j++) {
		float i = a[j], f = a[H + j], gg = a[2 * H + j], o = a[3 * H + j];
		float tc = d[3 * H + j];
		float dc = carry[j] + dh[j] * o * (1 - tc * tc);
		d[j] = dc * gg * i * (1 - i);
		d[H + j] = dc * f * (1 - f);	/* times cprev below */
		d[2 * H + j] = dc * i * (1 - gg * gg);
		d[3 * H + j] = dh[j] * tc * o * (1 - o);
		carry[j] = dc * f;
	}
	if (!cp) {
		memset(d + H, 0, H * sizeof(*d));
		return;
	}
	for (int j = 0; j < H; j++)
		d[H + j] *= cp[j];
}

/* The gradient at hprev is all dG W_hh (the loop's). */
static void lstm_step_backward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			       int t, const float *hprev, const float *dh,
			       float *dgi, float *dgh, float *dhprev,
			       float *carry, int B)
{
	int H = r->H;
	size_t gh = (size_t)4 * H;
	const float *g = ps->gates + (size_t)t * B * gh;
	const float *c = ps->extra + (size_t)t * B * H;
	const float *cprev = hprev ? ps->extra + (ptrdiff_t)akk_rec_prev(ps, t) * B * H
				   : NULL;

	(void)dgh, (void)dhprev;
	for (int b = 0; b < B; b++, g += gh, c += H, dh += H, dgi += gh,
	     carry += H) {
		memcpy(dgi + 3 * H, c, H * sizeof(*dgi));
		akk_rec_tanh(dgi + 3 * H, H);
		cell_grad(dgi, carry, g, dh, cprev ? cprev + (size_t)b * H : NULL, H);
	}
}

/* per unit and step: 3 sigmoids, 2 tanh, c' (3), h' (1) */
static const struct akk_rec_cell lstm_cell = {
	.G = 4, .E = 1, .C = 1, .hh_apart = 0, .step_flops = 9,
	.forward = lstm_step_forward, .backward = lstm_step_backward,
};

static int lstm_plan(struct akk_layer *l, struct akk_err *e)
{
	return akk_rec_plan(l, &lstm_cell, e);
}

static void lstm_init(const struct akk_layer *l, float *p, float *s,
		      struct akk_rng *rng)
{
	akk_rec_init(l, &lstm_cell, p, s, rng);
}

static void lstm_forward(const struct akk_layer *l, float *y, float *aux,
			 float *s, float *work, const float *x, const float *p,
			 int B, int train, struct akk_rng *rng)
{
	(void)rng;
	akk_rec_forward(l, &lstm_cell, y, aux, s, work, x, p, B, train);
}

static void lstm_backward(const struct akk_layer *l, float *dx, float *dp,
			  float *work, const float *dy, const float *x,
			  const float *y, const float *aux, const float *p,
			  int B)
{
	(void)y;
	akk_rec_backward(l, &lstm_cell, dx, dp, work, dy, x, aux, p, B);
}

/* ONNX's LSTM: gates i, o, f, c (torch's 0, 3, 1, 2), no peepholes. */
static int lstm_export(const struct akk_layer *l, struct akk_graph_sink *g,
		       const struct akk_export_io *io, struct akk_err *e)
{
	static const int perm[4] = { 0, 3, 1, 2 };

	return akk_rec_export(l, &lstm_cell, "LSTM", perm, NULL, 0, g, io, e);
}

static const struct akk_layer_option lstm_options[] = {
	AKK_REC_OPTIONS,
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_lstm = {
	.name = "lstm",
	.options = lstm_options,
	.shorthand = "units",
	.plan = lstm_plan,
	.init = lstm_init,
	.forward = lstm_forward,
	.backward = lstm_backward,
	.export = lstm_export,
	.grad_reads_params = 1,
};
