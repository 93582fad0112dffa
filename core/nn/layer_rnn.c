/* layer_rnn.c - the plain (Elman) recurrent layer, torch's nn.RNN.
 *
 * Per step h' = act(W_ih x + b_ih + W_hh h + b_hh) from h = 0, act tanh
 * (the default) or relu (option activation). Shapes, options, parameters
 * (weight_ih (H, F), weight_hh (H, H), bias_ih, bias_hh, per direction)
 * and the time loop are recurrent.c's; aux keeps h of every step (twice:
 * as the gates' activations and as the states), and the backward takes
 * act' from h: 1 - h^2 for tanh, h > 0 for relu. */
#include "nn/layer.h"
#include "nn/export.h"
#include "nn/recurrent.h"

#include <string.h>

static const char *const rnn_activations[] = { "tanh", "relu", NULL };

static void rnn_step_forward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			     int t, const float *hprev, const float *hh, int B)
{
	size_t n = (size_t)B * r->H;
	float *g = ps->gates + (size_t)t * n, *h = ps->h + (size_t)t * n;

	(void)hprev, (void)hh;
	if (r->relu)
		for (size_t i = 0; i < n; i++)
			g[i] = g[i] > 0 ? g[i] : 0;
	else
		akk_rec_tanh(g, n);
	memcpy(h, g, n * sizeof(*h));
}

static void rnn_step_backward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			      int t, const float *hprev, const float *dh,
			      float *dgi, float *dgh, float *dhprev,
			      float *carry, int B)
{
	size_t n = (size_t)B * r->H;
	const float *h = ps->h + (size_t)t * n;

	(void)hprev, (void)dgh, (void)dhprev, (void)carry;
	for (size_t i = 0; i < n; i++)
		dgi[i] = r->relu ? (h[i] > 0 ? dh[i] : 0) : dh[i] * (1 - h[i] * h[i]);
}

/* per unit and step: the activation */
static const struct akk_rec_cell rnn_cell = {
	.G = 1, .E = 0, .hh_apart = 0, .step_flops = 1,
	.forward = rnn_step_forward, .backward = rnn_step_backward,
};

static int rnn_plan(struct akk_layer *l, struct akk_err *e)
{
	return akk_rec_plan(l, &rnn_cell, e);
}

static void rnn_init(const struct akk_layer *l, float *p, float *s,
		     struct akk_rng *rng)
{
	akk_rec_init(l, &rnn_cell, p, s, rng);
}

static void rnn_forward(const struct akk_layer *l, float *y, float *aux,
			float *s, float *work, const float *x, const float *p,
			int B, int train, struct akk_rng *rng)
{
	(void)rng;
	akk_rec_forward(l, &rnn_cell, y, aux, s, work, x, p, B, train);
}

static void rnn_backward(const struct akk_layer *l, float *dx, float *dp,
			 float *work, const float *dy, const float *x,
			 const float *y, const float *aux, const float *p, int B)
{
	(void)y;
	akk_rec_backward(l, &rnn_cell, dx, dp, work, dy, x, aux, p, B);
}

/* ONNX's RNN, activation Tanh (its default) or Relu, one per direction. */
static int rnn_export(const struct akk_layer *l, struct akk_graph_sink *g,
		      const struct akk_export_io *io, struct akk_err *e)
{
	static const int perm[1] = { 0 };
	static const char *const relu[2] = { "Relu", "Relu" };
	struct akk_rec r = akk_rec_of(l, &rnn_cell);
	struct akk_attr at[] = { AKK_ATTR_SS("activations", relu, r.dirs) };

	return akk_rec_export(l, &rnn_cell, "RNN", perm, at, r.relu, g, io, e);
}

static const struct akk_layer_option rnn_options[] = {
	AKK_REC_OPTIONS,
	AKK_OPTION_NAMES("activation", AKK_REC_ACT, rnn_activations, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_rnn = {
	.name = "rnn",
	.options = rnn_options,
	.shorthand = "units",
	.plan = rnn_plan,
	.init = rnn_init,
	.forward = rnn_forward,
	.backward = rnn_backward,
	.export = rnn_export,
	.grad_reads_params = 1,
};
