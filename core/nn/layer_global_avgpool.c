/* layer_global_avgpool.c - the mean of each channel: [C, H, W] to [C].
 *
 * y[c] = sum over h, w of x[c, h, w] / (H W); backward spreads dy[c] / (H W)
 * over the channel. The usual head of a residual network (before its last
 * dense layer). No parameters, no aux, no scratch. */
#include "nn/layer.h"
#include "nn/export.h"

static int gap_plan(struct akk_layer *l, struct akk_err *e)
{
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 3)
		return akk_err_set(e, "expects an image input [channels, height, "
				   "width], got %s", buf);
	l->out = (struct akk_shape){ 1, { l->in.d[0], 0, 0 } };
	l->nparams = l->nstate = 0;
	l->aux = l->work = 0;
	l->flops = (double)akk_shape_size(l->in);
	l->nviews = 0;
	return 0;
}

static void gap_forward(const struct akk_layer *l, float *y, float *aux,
			float *s, float *work, const float *x, const float *p,
			int B, int train, struct akk_rng *rng)
{
	long C = l->in.d[0], HW = (long)l->in.d[1] * l->in.d[2];
	float scale = 1.0f / (float)HW;

	(void)aux, (void)s, (void)work, (void)p, (void)train, (void)rng;
	for (long bc = 0; bc < B * C; bc++) {
		const float *xc = x + bc * HW;
		float t = 0;
		for (long i = 0; i < HW; i++)
			t += xc[i];
		y[bc] = t * scale;
	}
}

static void gap_backward(const struct akk_layer *l, float *dx, float *dp,
			 float *work, const float *dy, const float *x,
			 const float *y, const float *aux, const float *p,
			 int B)
{
	long C = l->in.d[0], HW = (long)l->in.d[1] * l->in.d[2];
	float scale = 1.0f / (float)HW;

	(void)dp, (void)work, (void)x, (void)y, (void)aux, (void)p;
	if (!dx)
		return;
	for (long bc = 0; bc < B * C; bc++) {
		float g = dy[bc] * scale;
		float *dc = dx + bc * HW;
		for (long i = 0; i < HW; i++)
			dc[i] = g;
	}
}

/* GlobalAveragePool gives [N, C, 1, 1]; Flatten at axis 1 makes it [N, C]. */
static int gap_export(const struct akk_layer *l, struct akk_graph_sink *g,
		      const struct akk_export_io *io, struct akk_err *e)
{
	char mid[256];
	const char *pooled = akk_export_name(mid, sizeof(mid), io->prefix,
					     "pooled");
	struct akk_attr axis = AKK_ATTR_I("axis", 1);

	(void)l;
	return g->node(g, "GlobalAveragePool", &io->x, 1, &pooled, 1, NULL, 0,
		       e) ||
	       g->node(g, "Flatten", &pooled, 1, &io->y, 1, &axis, 1, e) ?
		-1 : 0;
}

const struct akk_layer_ops akk_layer_global_avgpool = {
	.name = "global_avgpool",
	.plan = gap_plan,
	.init = akk_layer_init_none,
	.forward = gap_forward,
	.backward = gap_backward,
	.export = gap_export,
};
