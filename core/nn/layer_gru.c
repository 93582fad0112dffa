/* layer_gru.c - gated recurrent unit, torch's nn.GRU.
 *
 * Per step, with the gate blocks in torch's order r, z, n:
 *   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
 *   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
 *   n = tanh(W_in x + b_in + r (W_hn h + b_hn))
 *   h' = (1 - z) n + z h
 * from h = 0. The reset gate multiplies the hidden side's product with its
 * bias, so the hidden products stay apart from the input ones (the cell's
 * hh_apart). Shapes, options, parameters (weight_ih (3H, F), weight_hh
 * (3H, H), bias_ih, bias_hh, per direction) and the time loop are
 * recurrent.c's; aux keeps r, z, n, h and W_hn h + b_hn of every step. */
#include "nn/layer.h"
#include "nn/export.h"
#include "nn/recurrent.h"

#include <string.h>

/* gates[t] holds x W_ih^T + b_ih, hh the hidden side b_hh + hprev W_hh^T:
 * r, z, n replace the gates; W_hn h + b_hn goes to extra[t], h' to h[t]. */
static void gru_step_forward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			     int t, const float *hprev, const float *hh, int B)
{
	int H = r->H;
	size_t gh = (size_t)3 * H;
	float *g = ps->gates + (size_t)t * B * gh;
	float *hn = ps->extra + (size_t)t * B * H, *h = ps->h + (size_t)t * B * H;

	for (int b = 0; b < B; b++, g += gh, hh += gh, hn += H, h += H) {
		const float *hp = hprev ? hprev + (size_t)b * H : NULL;
		for (int j = 0; j < 2 * H; j++)	/* r, z: both sides */
			g[j] += hh[j];
		akk_rec_sigmoid(g, 2 * (size_t)H);
		for (int j = 0; j < H; j++) {	/* n: r on the hidden side */
			hn[j] = hh[2 * H + j];
			g[2 * H + j] += g[j] * hn[j];
		}
		akk_rec_tanh(g + 2 * H, H);
		for (int j = 0; j < H; j++)	/* h' = (1 - z) n + z h */
			h[j] = (1 - g[H + j]) * g[2 * H + j];
		for (int j = 0; hp && j < H; j++)
			h[j] += g[H + j] * hp[j];
	}
}

/* dn = dh (1-z) (1-n^2) at n's pre-activation; dz = dh (hprev - n)
 * z (1-z); dr = dn (W_hn h + b_hn) r (1-r). The input side gets
 * (dr, dz, dn), the hidden side (dr, dz, dn r); dh z reaches hprev
 * directly. */
static void gru_step_backward(const struct akk_rec *r, const struct akk_rec_pass *ps,
			      int t, const float *hprev, const float *dh,
			      float *dgi, float *dgh, float *dhprev,
			      float *carry, int B)
{
	int H = r->H;
	size_t gh = (size_t)3 * H;
	const float *g = ps->gates + (size_t)t * B * gh;
	const float *hn = ps->extra + (size_t)t * B * H;

	(void)carry;
	for (int b = 0; b < B; b++, g += gh, hn += H, dh += H, dgi += gh,
	     dgh += gh, dhprev += H) {
		/* hprev (0 at the first step) into dhprev's place first */
		if (hprev)
			memcpy(dhprev, hprev + (size_t)b * H, H * sizeof(*dhprev));
		else
			memset(dhprev, 0, H * sizeof(*dhprev));
		for (int j = 0; j < H; j++) {
			float rv = g[j], z = g[H + j], n = g[2 * H + j];
			float dn = dh[j] * (1 - z) * (1 - n * n);
			float dz = dh[j] * (dhprev[j] - n) * z * (1 - z);
			float dr = dn * hn[j] * rv * (1 - rv);
			dgi[j] = dgh[j] = dr;
			dgi[H + j] = dgh[H + j] = dz;
			dgi[2 * H + j] = dn;
			dgh[2 * H + j] = dn * rv;
			dhprev[j] = dh[j] * z;
		}
	}
}

/* per unit and step: 2 sigmoids and their adds (4), n (3), h' (4) */
static const struct akk_rec_cell gru_cell = {
	.G = 3, .E = 1, .hh_apart = 1, .step_flops = 11,
	.forward = gru_step_forward, .backward = gru_step_backward,
};

static int gru_plan(struct akk_layer *l, struct akk_err *e)
{
	return akk_rec_plan(l, &gru_cell, e);
}

static void gru_init(const struct akk_layer *l, float *p, float *s,
		     struct akk_rng *rng)
{
	akk_rec_init(l, &gru_cell, p, s, rng);
}

static void gru_forward(const struct akk_layer *l, float *y, float *aux,
			float *s, float *work, const float *x, const float *p,
			int B, int train, struct akk_rng *rng)
{
	(void)rng;
	akk_rec_forward(l, &gru_cell, y, aux, s, work, x, p, B, train);
}

static void gru_backward(const struct akk_layer *l, float *dx, float *dp,
			 float *work, const float *dy, const float *x,
			 const float *y, const float *aux, const float *p, int B)
{
	(void)y;
	akk_rec_backward(l, &gru_cell, dx, dp, work, dy, x, aux, p, B);
}

/* ONNX's GRU: gates z, r, h (torch's 1, 0, 2); linear_before_reset 1
 * applies r to R_h h + Rb_h, as torch does. */
static int gru_export(const struct akk_layer *l, struct akk_graph_sink *g,
		      const struct akk_export_io *io, struct akk_err *e)
{
	static const int perm[3] = { 1, 0, 2 };
	struct akk_attr at[] = { AKK_ATTR_I("linear_before_reset", 1) };

	return akk_rec_export(l, &gru_cell, "GRU", perm, at, 1, g, io, e);
}

static const struct akk_layer_option gru_options[] = {
	AKK_REC_OPTIONS,
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_gru = {
	.name = "gru",
	.options = gru_options,
	.shorthand = "units",
	.plan = gru_plan,
	.init = gru_init,
	.forward = gru_forward,
	.backward = gru_backward,
	.export = gru_export,
	.grad_reads_params = 1,
};
