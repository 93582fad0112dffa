/* layer_activation.c - the elementwise activations: relu, leaky_relu,
 * sigmoid, tanh and softplus.
 *
 * One concept, five entries of the kind table: the output has the input's
 * shape, there are no parameters, no aux and no scratch. Backward uses the
 * output y where it determines the derivative (relu, sigmoid, tanh,
 * softplus) and the input x for leaky_relu, whose slope alpha may be of
 * either sign. NaN inputs propagate, as in torch. */
#include "nn/layer.h"
#include "nn/export.h"

#include <math.h>

static int act_plan(struct akk_layer *l, struct akk_err *e)
{
	long n = akk_shape_size(l->in);

	if (n <= 0)
		return akk_err_set(e, "expects a non-empty input, got %ld "
				   "elements", n);
	l->out = l->in;
	l->nparams = l->nstate = 0;
	l->aux = l->work = 0;
	l->flops = (double)n;
	l->nviews = 0;
	return 0;
}

#define ACT_FORWARD(name, expr)						\
static void name(const struct akk_layer *l, float *y, float *aux,	\
		 float *s, float *work, const float *x, const float *p,	\
		 int B, int train, struct akk_rng *rng)			\
{									\
	size_t n = (size_t)B * (size_t)akk_shape_size(l->in);		\
	float alpha = l->spec->alpha;					\
									\
	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng; \
	(void)alpha;							\
	for (size_t i = 0; i < n; i++) {				\
		float v = x[i];						\
		y[i] = (expr);						\
	}								\
}

/* dx = dy f'(x), with f' written in terms of v = x[i] and u = y[i]. */
#define ACT_BACKWARD(name, expr)					\
static void name(const struct akk_layer *l, float *dx, float *dp,	\
		 float *work, const float *dy, const float *x,		\
		 const float *y, const float *aux, const float *p, int B) \
{									\
	size_t n = (size_t)B * (size_t)akk_shape_size(l->in);		\
	float alpha = l->spec->alpha;					\
									\
	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;	\
	(void)alpha;							\
	if (!dx)							\
		return;							\
	for (size_t i = 0; i < n; i++) {				\
		float v = x[i], u = y[i];				\
		(void)v, (void)u;					\
		dx[i] = dy[i] * (expr);					\
	}								\
}

/* The same for a derivative of 0 or 1: a select, not a multiply, so the
 * loop vectorizes into a blend instead of a branch per element. */
#define ACT_BACKWARD_STEP(name, cond)					\
static void name(const struct akk_layer *l, float *dx, float *dp,	\
		 float *work, const float *dy, const float *x,		\
		 const float *y, const float *aux, const float *p, int B) \
{									\
	size_t n = (size_t)B * (size_t)akk_shape_size(l->in);		\
									\
	(void)dp, (void)work, (void)x, (void)aux, (void)p;		\
	if (!dx)							\
		return;							\
	for (size_t i = 0; i < n; i++) {				\
		float u = y[i], d = dy[i];	/* both loaded: no branch */ \
		dx[i] = (cond) ? d : 0.0f;				\
	}								\
}

/* sigmoid without overflow: exp of a non-positive number only. */
static inline float sigmoid(float v)
{
	float e = expf(-fabsf(v));

	return v >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

ACT_FORWARD(relu_forward, v < 0 ? 0.0f : v)
ACT_BACKWARD_STEP(relu_backward, u > 0)
ACT_FORWARD(leaky_forward, v < 0 ? alpha * v : v)
ACT_BACKWARD(leaky_backward, v > 0 ? 1.0f : alpha)
ACT_FORWARD(sigmoid_forward, sigmoid(v))
ACT_BACKWARD(sigmoid_backward, u * (1.0f - u))
ACT_FORWARD(tanh_forward, tanhf(v))
ACT_BACKWARD(tanh_backward, 1.0f - u * u)
/* softplus(v) = log(1 + e^v) = max(v, 0) + log1p(e^-|v|), which never
 * overflows; its derivative sigmoid(v) = 1 - e^-y = -expm1(-y). */
ACT_FORWARD(softplus_forward, fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v))))
ACT_BACKWARD(softplus_backward, -expm1f(-u))

static const struct akk_layer_option leaky_options[] = {
	AKK_OPTION("alpha", FLOAT, alpha, AKK_OPTION_LO, 0, 0, 0.01),
	AKK_OPTIONS_END,
};

/* One ONNX op each; leaky_relu carries its slope. */
static int act_export(const struct akk_layer *l, struct akk_graph_sink *g,
		      const struct akk_export_io *io, const char *op, int alpha,
		      struct akk_err *e)
{
	struct akk_attr at[] = { AKK_ATTR_F("alpha", l->spec->alpha) };

	return akk_export_unary(g, io, op, at, alpha, e);
}

#define ACT_EXPORT(name, op, alpha)					\
static int name(const struct akk_layer *l, struct akk_graph_sink *g,	\
		const struct akk_export_io *io, struct akk_err *e)	\
{									\
	return act_export(l, g, io, op, alpha, e);			\
}

ACT_EXPORT(relu_export, "Relu", 0)
ACT_EXPORT(leaky_export, "LeakyRelu", 1)
ACT_EXPORT(sigmoid_export, "Sigmoid", 0)
ACT_EXPORT(tanh_export, "Tanh", 0)
ACT_EXPORT(softplus_export, "Softplus", 0)

#define ACT_OPS(sym, str, opts, sh, fw, bw, ex)				\
const struct akk_layer_ops sym = {					\
	.name = str,							\
	.options = opts,						\
	.shorthand = sh,						\
	.plan = act_plan,						\
	.init = akk_layer_init_none,						\
	.forward = fw,							\
	.backward = bw,							\
	.export = ex,							\
};

ACT_OPS(akk_layer_relu, "relu", NULL, NULL,
	relu_forward, relu_backward, relu_export)
ACT_OPS(akk_layer_leaky_relu, "leaky_relu", leaky_options, "alpha",
	leaky_forward, leaky_backward, leaky_export)
ACT_OPS(akk_layer_sigmoid, "sigmoid", NULL, NULL,
	sigmoid_forward, sigmoid_backward, sigmoid_export)
ACT_OPS(akk_layer_tanh, "tanh", NULL, NULL,
	tanh_forward, tanh_backward, tanh_export)
ACT_OPS(akk_layer_softplus, "softplus", NULL, NULL,
	softplus_forward, softplus_backward, softplus_export)

/* ---- fused into the dense or conv2d layer before (akk_layers_fuse) ---- */

int akk_layer_is_activation(const struct akk_layer_ops *ops)
{
	return ops == &akk_layer_relu || ops == &akk_layer_leaky_relu ||
	       ops == &akk_layer_sigmoid || ops == &akk_layer_tanh ||
	       ops == &akk_layer_softplus;
}

/* The kind's own forward with x = y: elementwise, each element is read
 * before it is written, so in place is the same computation. */
void akk_act_fused_forward(const struct akk_layer *act, float *y, int B,
			   int train)
{
	act->ops->forward(act, y, NULL, NULL, NULL, y, NULL, B, train, NULL);
}

/* One row of relu_backward's select and the dense bias loop, in one
 * pass. restrict: the four rows are distinct buffers, which lets the
 * compiler vectorise without a run-time overlap check (without it, this
 * loop ran slower than the two it replaces). */
static void relu_bias_row(float *restrict z, float *restrict db,
			  const float *restrict u, const float *restrict d,
			  int n)
{
	for (int j = 0; j < n; j++) {
		float a = u[j], b = d[j];	/* both loaded: no branch */
		float v = a > 0 ? b : 0.0f;
		z[j] = v;
		db[j] += v;
	}
}

const float *akk_act_fused_backward(const struct akk_layer *act, float *dz,
				    const float *dy, const float *y, int B,
				    float *db, int dout, int *db_done)
{
	*db_done = 0;
	if (act->ops == &akk_layer_relu && db) {
		size_t rows = (size_t)B * (size_t)akk_shape_size(act->in) / (size_t)dout;

		for (size_t i = 0; i < rows; i++)
			relu_bias_row(dz + (size_t)i * dout, db,
				      y + (size_t)i * dout,
				      dy + (size_t)i * dout, dout);
		*db_done = 1;
		return dz;
	}
	act->ops->backward(act, dz, NULL, NULL, dy, y, y, NULL, NULL, B);
	return dz;
}
