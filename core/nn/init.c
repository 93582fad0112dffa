/* init.c - weight initialisers, drawn from a caller-owned struct akk_rng.
 *
 * The scales follow torch.nn.init with the gains it uses by default:
 * xavier/glorot a = sqrt(6 / (fan_in + fan_out)), std = sqrt(2 / (fan_in +
 * fan_out)); he/kaiming (ReLU gain sqrt 2) a = sqrt(6 / fan_in), std =
 * sqrt(2 / fan_in); lecun_uniform a = 1 / sqrt(fan_in), which is what
 * nn.Linear and nn.Conv2d use by default. Uniform draws are U[-a, a). The
 * values are a pure function of the rng state, so one seed gives one set of
 * weights. AKK_INIT_DEFAULT is not a distribution; callers resolve it, and
 * should one slip through it is treated as lecun_uniform. */
#include "nn/layer.h"

#include <math.h>
#include <string.h>

static void fill_uniform(float *w, size_t n, float a, struct akk_rng *rng)
{
	for (size_t i = 0; i < n; i++)
		w[i] = a * (2.0f * akk_rng_uniform(rng) - 1.0f);
}

static void fill_normal(float *w, size_t n, float std, struct akk_rng *rng)
{
	for (size_t i = 0; i < n; i++)
		w[i] = std * akk_rng_normal(rng);
}

void akk_init_fill(float *w, size_t n, int fan_in, int fan_out,
		   enum akk_init kind, float value, struct akk_rng *rng)
{
	double fi = fan_in > 0 ? fan_in : 1;
	double fo = fan_out > 0 ? fan_out : 1;

	switch (kind) {
	case AKK_INIT_XAVIER_UNIFORM:
		fill_uniform(w, n, (float)sqrt(6.0 / (fi + fo)), rng);
		break;
	case AKK_INIT_XAVIER_NORMAL:
		fill_normal(w, n, (float)sqrt(2.0 / (fi + fo)), rng);
		break;
	case AKK_INIT_HE_UNIFORM:
		fill_uniform(w, n, (float)sqrt(6.0 / fi), rng);
		break;
	case AKK_INIT_HE_NORMAL:
		fill_normal(w, n, (float)sqrt(2.0 / fi), rng);
		break;
	case AKK_INIT_ZEROS:
		memset(w, 0, n * sizeof(*w));
		break;
	case AKK_INIT_CONSTANT:
		for (size_t i = 0; i < n; i++)
			w[i] = value;
		break;
	case AKK_INIT_DEFAULT:
	case AKK_INIT_LECUN_UNIFORM:
	default:
		fill_uniform(w, n, (float)(1.0 / sqrt(fi)), rng);
		break;
	}
}

void akk_init_weights_bias(float *p, size_t nw, size_t nb, int fan_in,
			   int fan_out, const struct akk_layer_spec *sp,
			   struct akk_rng *rng)
{
	enum akk_init kind = sp->init == AKK_INIT_DEFAULT ?
		AKK_INIT_LECUN_UNIFORM : sp->init;

	akk_init_fill(p, nw, fan_in, fan_out, kind, sp->init_value, rng);
	if (!sp->bias)
		return;
	if (sp->init == AKK_INIT_DEFAULT)
		akk_init_fill(p + nw, nb, fan_in, fan_out, AKK_INIT_LECUN_UNIFORM, 0, rng);
	else
		memset(p + nw, 0, nb * sizeof(*p));
}
