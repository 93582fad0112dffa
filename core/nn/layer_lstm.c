/* layer_lstm.c - long short-term memory, torch's nn.LSTM.
 *
 * Per step, with the gate blocks in torch's order i, f, g, o:
 *   i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)    f likewise
 *   g = tanh(W_ig x + b_ig + W_hg h + b_hg)       o = sigmoid(...)
 *   c' = f c + i g        h' = o tanh(c')
 * from h = c = 0. Shapes, options, parameters (weight_ih (4H, F),
 * weight_hh (4H, H), bias_ih, bias_hh, per direction) and the time loop
 * are recurrent.c's; aux keeps the four activations, c and h of every
 * step; tanh(c) is recomputed by the backward. */
#include "nn/layer.h"
#include "nn/export.h"
#include "nn/recurrent.h"

#include <math.h>

/* gates[t] holds the pre-activations (input and hidden products, both
 * biases): the activations replace them; c[t] and h[t] follow. */
static void lstm_step_forward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			      int t, const float *hprev, const float *hh, int B)
{
	int H = r->H;
	size_t gh = (size_t)4 * H;
	float *g = ps->gates + (size_t)t * B * gh;
	float *c = ps->extra + (size_t)t * B * H, *h = ps->h + (size_t)t * B * H;
	const float *cprev = hprev ? ps->extra + (size_t)akk_rec_prev(ps, t) * B * H
				   : NULL;

	(void)hh;
	for (int b = 0; b < B; b++, g += gh, c += H, h += H) {
		const float *cp = cprev ? cprev + (size_t)b * H : NULL;
		for (int j = 0; j < H; j++) {
			float i = akk_sigmoidf(g[j]), f = akk_sigmoidf(g[H + j]);
			float gg = tanhf(g[2 * H + j]), o = akk_sigmoidf(g[3 * H + j]);
			float cv = (cp ? f * cp[j] : 0) + i * gg;
			g[j] = i;
			g[H + j] = f;
			g[2 * H + j] = gg;
			g[3 * H + j] = o;
			c[j] = cv;
			h[j] = o * tanhf(cv);
		}
	}
}

/* dc = carry + dh o (1 - tanh(c)^2); the gate gradients at the
 * pre-activations: di = dc g i (1-i), df = dc cprev f (1-f),
 * dg = dc i (1-g^2), do = dh tanh(c) o (1-o); carry = dc f for the step
 * before. The gradient at hprev is all dG W_hh (the loop's). */
static void lstm_step_backward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			       int t, const float *hprev, const float *dh,
			       float *dgi, float *dgh, float *dhprev,
			       float *carry, int B)
{
	int H = r->H;
	size_t gh = (size_t)4 * H;
	const float *g = ps->gates + (size_t)t * B * gh;
	const float *c = ps->extra + (size_t)t * B * H;
	const float *cprev = hprev ? ps->extra + (size_t)akk_rec_prev(ps, t) * B * H
				   : NULL;

	(void)dgh, (void)dhprev;
	for (int b = 0; b < B; b++, g += gh, c += H, dh += H, dgi += gh,
	     carry += H) {
		const float *cp = cprev ? cprev + (size_t)b * H : NULL;
		for (int j = 0; j < H; j++) {
			float i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
			float tc = tanhf(c[j]);
			float dc = carry[j] + dh[j] * o * (1 - tc * tc);
			dgi[j] = dc * gg * i * (1 - i);
			dgi[H + j] = cp ? dc * cp[j] * f * (1 - f) : 0;
			dgi[2 * H + j] = dc * i * (1 - gg * gg);
			dgi[3 * H + j] = dh[j] * tc * o * (1 - o);
			carry[j] = dc * f;
		}
	}
}

/* per unit and step: 3 sigmoids, 2 tanh, c' (3), h' (1) */
static const struct akk_rec_cell lstm_cell = {
	.G = 4, .E = 1, .hh_apart = 0, .step_flops = 9,
	.forward = lstm_step_forward, .backward = lstm_step_backward,
};

static int lstm_plan(struct akk_layer *l, struct akk_err *e)
{
	return akk_rec_plan(l, &lstm_cell, e);
}

static void lstm_init(const struct akk_layer *l, float *p, float *s,
		      struct akk_rng *rng)
{
	(void)s;
	akk_rec_init(l, &lstm_cell, p, rng);
}

static void lstm_forward(const struct akk_layer *l, float *y, float *aux,
			 float *s, float *work, const float *x, const float *p,
			 int B, int train, struct akk_rng *rng)
{
	(void)s, (void)train, (void)rng;
	akk_rec_forward(l, &lstm_cell, y, aux, work, x, p, B);
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
};
