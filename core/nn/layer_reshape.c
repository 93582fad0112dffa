/* layer_reshape.c - the sample's values in another shape: [784] to
 * [1, 28, 28] before a transposed convolution, [C, H, W] to [T, F] for a
 * recurrent layer, a slice of a graph's input read as an image.
 *
 * Row-major order is kept, as numpy's reshape and ONNX's Reshape keep it,
 * so forward and backward are copies (y never aliases x, by the layer
 * contract). The shape must hold exactly the input's values. */
#include "nn/layer.h"
#include "nn/export.h"

#include <stdio.h>
#include <string.h>

#include "tensor/tensor.h"

#define SHAPE(sp) (*(const struct akk_shape *)(sp)->iopt)

_Static_assert(sizeof(struct akk_shape) <= sizeof(((struct akk_layer_spec *)0)->iopt),
	       "a shape fits the int options of a layer spec");

static int reshape_plan(struct akk_layer *l, struct akk_err *e)
{
	struct akk_shape to = SHAPE(l->spec);
	char a[64], b[64];

	akk_shape_format(to, a, sizeof(a));
	akk_shape_format(l->in, b, sizeof(b));
	if (akk_shape_size(to) != akk_shape_size(l->in))
		return akk_err_set(e, "shape %s holds %ld values, but its input %s "
				   "holds %ld", a, akk_shape_size(to), b,
				   akk_shape_size(l->in));
	l->out = to;
	l->nparams = l->nstate = 0;
	l->aux = l->work = 0;
	l->flops = 0;
	l->nviews = 0;
	return 0;
}

static void reshape_forward(const struct akk_layer *l, float *y, float *aux,
			    float *s, float *work, const float *x,
			    const float *p, int B, int train,
			    struct akk_rng *rng)
{
	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng;
	memcpy(y, x, (size_t)B * (size_t)akk_shape_size(l->out) * sizeof(*y));
}

static void reshape_backward(const struct akk_layer *l, float *dx, float *dp,
			     float *work, const float *dy, const float *x,
			     const float *y, const float *aux, const float *p,
			     int B)
{
	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;
	if (dx)
		memcpy(dx, dy, (size_t)B * (size_t)akk_shape_size(l->out) * sizeof(*dx));
}

/* Reshape to [0, shape...] (ONNX's 0 keeps the batch dimension), the
 * shape from a Constant node: an int64 tensor, which the sink's
 * initializers (float32) cannot hold. */
static int reshape_export(const struct akk_layer *l, struct akk_graph_sink *g,
			  const struct akk_export_io *io, struct akk_err *e)
{
	int64_t shape[4] = { 0 };
	struct akk_attr a = AKK_ATTR_IS("value_ints", shape, l->out.rank + 1);
	char name[256];
	const char *ins[2] = { io->x, akk_export_name(name, sizeof(name),
						      io->prefix, "shape") };

	for (int i = 0; i < l->out.rank; i++)
		shape[i + 1] = l->out.d[i];
	if (g->node(g, "Constant", NULL, 0, &ins[1], 1, &a, 1, e))
		return -1;
	return g->node(g, "Reshape", ins, 2, &io->y, 1, NULL, 0, e);
}

static const struct akk_layer_option reshape_options[] = {
	AKK_OPTION("shape", SHAPE, iopt[0], AKK_OPTION_REQ, 0, 0, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_reshape = {
	.name = "reshape",
	.options = reshape_options,
	.shorthand = "shape",
	.plan = reshape_plan,
	.init = akk_layer_init_none,
	.forward = reshape_forward,
	.backward = reshape_backward,
	.export = reshape_export,
};
