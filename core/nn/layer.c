/* layer.c - the table of layer kinds, keyed by the name used in configs. */
#include "nn/layer.h"

#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "tensor/tensor.h"

/* The kinds: one line each, X(name) for akk_layer_<name> in
 * core/nn/layer_<name>.c, whose ops->name is "name". */
#define KINDS(X)                                                             \
	X(dense)                                                             \
	X(conv2d)                                                            \
	X(maxpool2d)                                                         \
	X(avgpool2d)                                                         \
	X(flatten)                                                           \
	X(dropout)                                                           \
	X(batchnorm)                                                         \
	X(relu)                                                              \
	X(leaky_relu)                                                        \
	X(sigmoid)                                                           \
	X(tanh)                                                              \
	X(softplus)                                                          \
	X(residual)                                                          \
	X(global_avgpool)                                                    \
	X(conv_transpose2d)                                                  \
	X(upsample2d)                                                        \
	X(embedding)                                                         \
	X(conv1d)                                                            \
	X(maxpool1d)                                                         \
	X(avgpool1d)                                                         \
	X(global_maxpool1d)                                                  \
	X(global_avgpool1d)                                                  \
	X(lstm)                                                              \
	X(gru)                                                               \
	X(rnn)                                                               \
	X(graph)                                                             \
	X(reshape)                                                           \
	/* a new kind: one line above */

#define DECLARE(k) extern const struct akk_layer_ops akk_layer_##k;
#define ENTRY(k) &akk_layer_##k,
#define NAME(k) #k,

KINDS(DECLARE)

static const struct akk_layer_ops *const kinds[] = { KINDS(ENTRY) };

const char *const akk_layer_names[] = { KINDS(NAME) NULL };

const char *const akk_init_names[] = {
	"default", "xavier_uniform", "xavier_normal", "he_uniform",
	"he_normal", "lecun_uniform", "zeros", "constant", NULL,
};

void akk_layers_fuse(struct akk_layer *layers, int n)
{
	for (int i = 0; i < n; i++) {
		layers[i].relu_in = 0;
		layers[i].act_out = NULL;
	}
	for (int i = 1; i + 1 < n; i++)
		layers[i + 1].relu_in = layers[i].ops == &akk_layer_relu &&
			layers[i + 1].ops == &akk_layer_maxpool2d;
	/* then dense/conv2d + activation, where the activation is still run
	 * by itself (relu then maxpool2d keeps the cheaper pool fusion) */
	for (int i = 0; i + 1 < n; i++) {
		const struct akk_layer *a = &layers[i + 1];
		if ((layers[i].ops == &akk_layer_dense ||
		     layers[i].ops == &akk_layer_conv2d) &&
		    akk_layer_is_activation(a->ops) &&
		    !(a->ops == &akk_layer_leaky_relu && !(a->spec->alpha >= 0)) &&
		    !(i + 2 < n && layers[i + 2].relu_in))
			layers[i].act_out = a;
	}
}

const struct akk_layer_ops *akk_layer_find(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i]->name, name))
			return kinds[i];
	return NULL;
}

void akk_layer_release(struct akk_layer *l)
{
	for (int i = 0; i < l->nsub; i++)
		akk_layer_release(&l->sub[i]);
	free(l->sub);
	l->sub = NULL;
	l->nsub = 0;
}

void akk_layer_init_none(const struct akk_layer *l, float *p, float *s,
			 struct akk_rng *rng)
{
	(void)l, (void)p, (void)s, (void)rng;
}

const struct akk_layer_option akk_pool2d_options[] = {
	AKK_OPTION("kernel", INT, kernel, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("stride", INT, stride, AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("padding", INT, padding, AKK_OPTION_LO, 0, 0, 0),
	AKK_OPTIONS_END,
};

/* The one place the default stride of a pool is decided. */
int akk_pool2d_stride(const struct akk_layer_spec *sp)
{
	return sp->stride ? sp->stride : sp->kernel;
}

/* Shared by maxpool2d and avgpool2d: square kernel k, stride s (0 means
 * k), padding p at most k/2; out = [C, (H+2p-k)/s+1, (W+2p-k)/s+1]. */
int akk_pool2d_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int k = sp->kernel, s = akk_pool2d_stride(sp);
	int p = sp->padding;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 3)
		return akk_err_set(e, "expects an image input [channels, height, "
				   "width], got %s", buf);
	if (k <= 0)
		return akk_err_set(e, "expects kernel > 0, got %d", k);
	if (s < 0)
		return akk_err_set(e, "expects stride > 0, got %d", s);
	if (p < 0 || p > k / 2)
		return akk_err_set(e, "expects padding between 0 and kernel/2 = %d, "
				   "got %d", k / 2, p);
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	/* In size_t: H + 2p and k k overflow int for large values. */
	size_t Hp = (size_t)H + 2 * (size_t)p, Wp = (size_t)W + 2 * (size_t)p;
	size_t kk = (size_t)k * (size_t)k, outn;
	if (Hp > AKK_MAX_DIM || Wp > AKK_MAX_DIM)
		return akk_err_set(e, "padding %d makes the padded input %zux%zu "
				   "(input %s), more than %zu per side", p, Hp,
				   Wp, buf, AKK_MAX_DIM);
	if ((size_t)k > Hp || (size_t)k > Wp)
		return akk_err_set(e, "kernel %d is larger than the padded input "
				   "%zux%zu (input %s, padding %d)", k, Hp, Wp,
				   buf, p);
	if (kk > AKK_MAX_DIM)
		return akk_err_set(e, "kernel %d makes a window of %zu values, "
				   "more than %zu", k, kk, AKK_MAX_DIM);

	int Ho = (int)((Hp - k) / s + 1), Wo = (int)((Wp - k) / s + 1);
	if (!akk_mul3_ok((size_t)C, (size_t)Ho, (size_t)Wo, &outn) ||
	    outn > AKK_MAX_DIM)
		return akk_err_set(e, "output [%d, %d, %d] would have more than "
				   "%zu values", C, Ho, Wo, AKK_MAX_DIM);
	l->out = (struct akk_shape){ 3, { C, Ho, Wo } };
	l->nparams = l->nstate = 0;
	l->aux = 0;
	l->work = 0;
	l->flops = (double)C * Ho * Wo * k * k;
	l->nviews = 0;
	return 0;
}


/* Shared by maxpool1d and avgpool1d: the pools' options (kernel, stride 0
 * meaning kernel, padding at most kernel/2) over the steps of a sequence
 * [T, C]; out = [(T + 2p - k)/s + 1, C]. No parameters, no aux. */
int akk_pool1d_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int k = sp->kernel, s = akk_pool2d_stride(sp), p = sp->padding;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 2)
		return akk_err_set(e, "expects a sequence [T, features], got %s", buf);
	if (k <= 0)
		return akk_err_set(e, "expects kernel > 0, got %d", k);
	if (s < 0)
		return akk_err_set(e, "expects stride > 0, got %d", s);
	if (p < 0 || p > k / 2)
		return akk_err_set(e, "expects padding between 0 and kernel/2 = %d, "
				   "got %d", k / 2, p);
	/* In size_t: T + 2p overflows int for a large padding. */
	size_t Tp = (size_t)l->in.d[0] + 2 * (size_t)p;
	if ((size_t)k > Tp)
		return akk_err_set(e, "kernel %d is longer than the padded input of "
				   "%zu steps (input %s, padding %d)", k, Tp, buf, p);
	int To = (int)((Tp - k) / s + 1), C = l->in.d[1];
	l->out = (struct akk_shape){ 2, { To, C, 0 } };
	l->nparams = l->nstate = 0;
	l->aux = 0;
	l->work = l->work_sample = 0;
	l->flops = (double)To * C * k;
	l->nviews = 0;
	return 0;
}

void akk_max_steps(float *y, float *aux, const float *x, int C, int t0, int t1)
{
	memcpy(y, x + (size_t)t0 * C, C * sizeof(*y));
	if (aux)
		for (int c = 0; c < C; c++)
			aux[c] = (float)t0;
	for (int t = t0 + 1; t < t1; t++) {
		const float *r = x + (size_t)t * C;
		for (int c = 0; c < C; c++) {
			float v = r[c];
			if (v > y[c] || (v != v && y[c] == y[c])) {
				y[c] = v;
				if (aux)
					aux[c] = (float)t;
			}
		}
	}
}

void akk_layer_composite_views(struct akk_layer *l)
{
	if (l->nparams)
		l->views[l->nviews++] = (struct akk_view){
			"params", 0, 0, 1, { (int)l->nparams } };
	if (l->nstate)
		l->views[l->nviews++] = (struct akk_view){
			"state", 1, 0, 1, { (int)l->nstate } };
}

void akk_layer_composite_add(struct akk_layer *l, const struct akk_layer *s)
{
	if (s->work > l->work)
		l->work = s->work;
	if (s->work_sample > l->work_sample)
		l->work_sample = s->work_sample;
	l->flops += s->flops;
}
