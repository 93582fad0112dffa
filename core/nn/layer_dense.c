/* layer_dense.c - fully connected layer, y = x W^T + b.
 *
 * Input [Din], output [Dout]; on a sequence [T, Din], [T, Dout], the same
 * weights at every step (rows B T). Parameters, in this order in the layer's slice
 * of the gate block: weight (Dout, Din), stored like torch's nn.Linear, then
 * bias (Dout) when spec->bias. The default init is torch's: weight and bias
 * both U(+-1/sqrt(Din)); with an explicit init kind the weight uses it and
 * the bias starts at zero. No aux, no scratch: forward and backward are one
 * sgemm each (plus one for dx). With act_out (akk_layers_fuse) the
 * activation after the layer runs in place on y, and backward takes the
 * activation's dy and output. */
#include "nn/layer.h"
#include "nn/export.h"

#include <stdlib.h>
#include <string.h>

#include "base/checked.h"

/* Of a flat input [F], or of a sequence [T, F], which the layer maps step
 * by step (the same weights at every step, as Keras' Dense on a
 * sequence): the features F and the rows per sample (1 or T). */
static long features(struct akk_shape in)
{
	return in.d[in.rank - 1];
}

static long steps(struct akk_shape in)
{
	return in.rank == 2 ? in.d[0] : 1;
}

static int dense_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char buf[64];

	if (l->in.rank != 1 && l->in.rank != 2) {
		akk_shape_format(l->in, buf, sizeof(buf));
		return akk_err_set(e, "expects a flat input [features] or a sequence "
				   "[T, features], got %s; add a flatten layer", buf);
	}
	if (sp->units <= 0)
		return akk_err_set(e, "expects units > 0, got %d", sp->units);
	long din = features(l->in), dout = sp->units, T = steps(l->in);
	size_t np = 0;

	/* din, dout <= INT_MAX: the product fits size_t, the limit may not */
	if (!akk_muladd_ok((size_t)dout, (size_t)din,
			   sp->bias ? (size_t)dout : 0, &np) ||
	    np > AKK_MAX_FLOATS)
		return akk_err_set(e, "%d units over %ld inputs would be %zu "
				   "parameters, more than %zu", sp->units, din,
				   np, AKK_MAX_FLOATS);

	l->out = l->in.rank == 2 ? (struct akk_shape){ 2, { (int)T, sp->units, 0 } }
				 : (struct akk_shape){ 1, { sp->units, 0, 0 } };
	l->nparams = np;
	l->nstate = 0;
	l->aux = 0;
	l->work = 0;
	l->flops = (2.0 * din * dout + (sp->bias ? dout : 0)) * T;
	l->nviews = 1;
	l->views[0] = (struct akk_view){ "weight", 0, 0, 2,
					 { (int)dout, (int)din, 0, 0 } };
	if (sp->bias) {
		l->nviews = 2;
		l->views[1] = (struct akk_view){ "bias", 0, (size_t)(dout * din),
						 1, { (int)dout, 0, 0, 0 } };
	}
	return 0;
}

static void dense_init(const struct akk_layer *l, float *p, float *s,
		       struct akk_rng *rng)
{
	int din = (int)features(l->in), dout = l->spec->units;

	(void)s;
	akk_init_weights_bias(p, (size_t)din * dout, dout, din, dout, l->spec, rng);
}

/* y (R, Dout) = x (R, Din) W^T (Din, Dout) + b, R = B rows (B T on a
 * sequence): rows of y start as b and the sgemm adds onto them (beta 1),
 * so the bias costs no extra pass. */
static void dense_forward(const struct akk_layer *l, float *y, float *aux,
			  float *s, float *work, const float *x, const float *p,
			  int B, int train, struct akk_rng *rng)
{
	int din = (int)features(l->in), dout = l->spec->units;
	int R = B * (int)steps(l->in);
	const float *w = p, *b = p + (size_t)din * dout;
	float beta = 0;

	(void)aux, (void)s, (void)work, (void)train, (void)rng;
	if (l->spec->bias) {
		for (int i = 0; i < R; i++)
			memcpy(y + (size_t)i * dout, b, dout * sizeof(*y));
		beta = 1;
	}
	akk_sgemm(l->pool, 0, 1, R, dout, din, 1, x, din, w, din, beta, y,
		  dout);
	if (l->act_out)	/* the activation after, in place while y is warm */
		akk_act_fused_forward(l->act_out, y, B, train);
}

/* dW (Dout, Din) += dy^T x; db += column sums of dy; dx (R, Din) = dy W.
 * With act_out, dy and y are the activation's: dy becomes dz (the
 * gradient at this layer's output) in act_dy first, relu's mask and the
 * bias sums in one pass. */
static void dense_backward(const struct akk_layer *l, float *dx, float *dp,
			   float *work, const float *dy, const float *x,
			   const float *y, const float *aux, const float *p,
			   int B)
{
	int din = (int)features(l->in), dout = l->spec->units, db_done = 0;
	int R = B * (int)steps(l->in);
	float *dw = dp, *db = dp + (size_t)din * dout;

	(void)work, (void)aux;
	if (l->act_out)
		dy = akk_act_fused_backward(l->act_out, l->act_dy, dy, y, B,
					    l->spec->bias ? db : NULL, dout,
					    &db_done);
	akk_sgemm(l->pool, 1, 0, dout, din, R, 1, dy, dout, x, din, 1, dw, din);
	if (l->spec->bias && !db_done)
		for (int i = 0; i < R; i++) {
			const float *r = dy + (size_t)i * dout;
			for (int j = 0; j < dout; j++)
				db[j] += r[j];
		}
	if (dx)
		akk_sgemm(l->pool, 0, 0, R, din, dout, 1, dy, dout, p, din, 0,
			  dx, din);
}

static const struct akk_layer_option dense_options[] = {
	AKK_OPTION("units", INT, units, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("bias", BOOL, bias, 0, 0, 0, 1),
	AKK_OPTION("init", INIT, init, 0, 0, 0, AKK_INIT_DEFAULT),
	AKK_OPTION("init_value", FLOAT, init_value, 0, 0, 0, 0),
	AKK_OPTIONS_END,
};

/* On a sequence (N, T, Din): MatMul with W^T (Din, Dout), then Add b,
 * which broadcasts over N and T. */
static int dense_export_steps(const struct akk_layer *l, struct akk_graph_sink *g,
			      const struct akk_export_io *io, struct akk_err *e)
{
	int din = (int)features(l->in), dout = l->spec->units, bias = l->spec->bias;
	char w[256], b[256], mm[256];
	int64_t wd[2] = { din, dout }, bd[1] = { dout };
	const char *ins[2] = { io->x, akk_export_name(w, sizeof(w), io->prefix, "weight_t") };
	const char *sum[2] = { akk_export_name(mm, sizeof(mm), io->prefix, "matmul"),
			       akk_export_name(b, sizeof(b), io->prefix, "bias") };
	float *wt = malloc((size_t)din * dout * sizeof(*wt));
	int rc;

	if (!wt)
		return akk_err_set(e, "out of memory");
	for (int i = 0; i < dout; i++)
		for (int j = 0; j < din; j++)
			wt[(size_t)j * dout + i] = io->p[(size_t)i * din + j];
	rc = g->tensor(g, w, wd, 2, wt, e);
	free(wt);
	if (rc || (bias && g->tensor(g, b, bd, 1, io->p + (size_t)din * dout, e)))
		return -1;
	if (!bias)
		return g->node(g, "MatMul", ins, 2, &io->y, 1, NULL, 0, e);
	return g->node(g, "MatMul", ins, 2, &sum[0], 1, NULL, 0, e) ||
	       g->node(g, "Add", sum, 2, &io->y, 1, NULL, 0, e) ? -1 : 0;
}

/* Gemm(x, W, b) with transB: W is stored (Dout, Din) as ONNX wants it. */
static int dense_export(const struct akk_layer *l, struct akk_graph_sink *g,
			const struct akk_export_io *io, struct akk_err *e)
{
	int din = l->in.d[0], dout = l->out.d[0], bias = l->spec->bias;
	char w[256], b[256];
	int64_t wd[2] = { dout, din }, bd[1] = { dout };
	const char *ins[3] = { io->x,
			       akk_export_name(w, sizeof(w), io->prefix, "weight"),
			       akk_export_name(b, sizeof(b), io->prefix, "bias") };
	struct akk_attr at[] = { AKK_ATTR_I("transB", 1) };

	if (l->in.rank == 2)
		return dense_export_steps(l, g, io, e);
	if (g->tensor(g, w, wd, 2, io->p, e) ||
	    (bias && g->tensor(g, b, bd, 1, io->p + (size_t)din * dout, e)))
		return -1;
	return g->node(g, "Gemm", ins, bias ? 3 : 2, &io->y, 1, at, 1, e);
}

const struct akk_layer_ops akk_layer_dense = {
	.name = "dense",
	.options = dense_options,
	.shorthand = "units",
	.plan = dense_plan,
	.init = dense_init,
	.forward = dense_forward,
	.backward = dense_backward,
	.export = dense_export,
};
