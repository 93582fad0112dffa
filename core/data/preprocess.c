/* preprocess.c - the per-feature affine map of the input. */
#include "data/preprocess.h"

#include "base/clones.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int alloc(struct akk_preprocess *p, size_t in, struct akk_err *e)
{
	memset(p, 0, sizeof(*p));
	if (!in)
		return akk_err_set(e, "the input has no values");
	p->in = in;
	p->a = malloc(in * sizeof(float));
	p->b = malloc(in * sizeof(float));
	if (!p->a || !p->b) {
		akk_preprocess_release(p);
		return akk_err_set(e, "out of memory");
	}
	return 0;
}

/* Fold standardisation into a, b: the per-feature mean of u = v * a + b
 * (as the batch computes it, in float), then the mean squared deviation
 * from it, summed in double row by row. */
static int standardize(struct akk_preprocess *p, const struct akk_dataset *d,
		       struct akk_err *e)
{
	size_t in = p->in;
	double *mu = calloc(in, sizeof(double)), *ss = calloc(in, sizeof(double));
	float *u = malloc(in * sizeof(float));

	if (!mu || !ss || !u) {
		free(mu);
		free(ss);
		free(u);
		return akk_err_set(e, "out of memory");
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < d->n; i++) {
			if (d->xtype == AKK_X_U8)
				akk_preprocess_u8(u, d->x8 + i * in, p);
			else
				akk_preprocess_f32(u, d->xf + i * in, p);
			for (size_t k = 0; k < in; k++) {
				double t = (double)u[k] - (pass ? mu[k] : 0);
				if (pass)
					ss[k] += t * t;
				else
					mu[k] += t;
			}
		}
		if (!pass)
			for (size_t k = 0; k < in; k++)
				mu[k] /= (double)d->n;
	}
	for (size_t k = 0; k < in; k++) {
		double sd = sqrt(ss[k] / (double)d->n);

		/* a constant feature: keep its scale, centre it on 0 */
		if (!(sd > 1e-12 * (fabs(mu[k]) + 1)) || !isfinite(sd))
			sd = 1;
		p->a[k] = (float)(p->a[k] / sd);
		p->b[k] = (float)((p->b[k] - mu[k]) / sd);
	}
	free(mu);
	free(ss);
	free(u);
	return 0;
}

float akk_preprocess_scale(const struct akk_data_spec *ds, enum akk_xtype t)
{
	return ds->scale_given || t == AKK_X_U8 || (ds->format && !strcmp(ds->format, "csv")) ?
	       ds->scale : 1;
}

int akk_preprocess_init(struct akk_preprocess *p, const struct akk_data_spec *ds,
			size_t in, int channels, const struct akk_dataset *train,
			struct akk_err *e)
{
	size_t per;
	double scale = akk_preprocess_scale(ds, train ? train->xtype : AKK_X_U8);

	if (channels < 1 || in % (size_t)channels)
		return akk_err_set(e, "%zu input values do not split into %d channels",
				   in, channels);
	if ((ds->mean_ch.n && ds->mean_ch.n != channels) ||
	    (ds->std_ch.n && ds->std_ch.n != channels))
		return akk_err_set(e, "normalize has %d values, but the input has %d channels",
				   ds->mean_ch.n ? ds->mean_ch.n : ds->std_ch.n, channels);
	if (ds->standardize && (!train || !train->n || train->in != in))
		return akk_err_set(e, "standardize needs the training data");
	if (alloc(p, in, e))
		return -1;
	per = in / (size_t)channels;
	for (size_t k = 0; k < in; k++) {
		size_t c = k / per;
		double mean = !ds->normalize ? 0 : ds->mean_ch.n ? ds->mean_ch.v[c] : ds->mean;
		double std = !ds->normalize ? 1 : ds->std_ch.n ? ds->std_ch.v[c] : ds->std;

		/* (v / scale - mean) / std as one multiply-add */
		p->a[k] = (float)(1.0 / (scale * std));
		p->b[k] = (float)(-mean / std);
	}
	if (ds->standardize && standardize(p, train, e)) {
		akk_preprocess_release(p);
		return -1;
	}
	for (size_t k = 0; k < in; k++)
		if (!isfinite(p->a[k]) || !isfinite(p->b[k])) {
			akk_preprocess_release(p);
			return akk_err_set(e, "the input map of feature %zu overflows a float",
					   k + 1);
		}
	return 0;
}

int akk_preprocess_set(struct akk_preprocess *p, size_t in, const float *a,
		       const float *b, struct akk_err *e)
{
	if (alloc(p, in, e))
		return -1;
	memcpy(p->a, a, in * sizeof(float));
	memcpy(p->b, b, in * sizeof(float));
	return 0;
}

void akk_preprocess_release(struct akk_preprocess *p)
{
	free(p->a);
	free(p->b);
	memset(p, 0, sizeof(*p));
}

/* Two bodies each (base/clones.h): AVX2 widens 8 bytes to floats at a
 * time, with the same bits. */
AKK_CLONES
void akk_preprocess_u8(float *restrict dst, const unsigned char *restrict src,
		       const struct akk_preprocess *p)
{
	const float *restrict a = p->a, *restrict b = p->b;

	for (size_t k = 0; k < p->in; k++)
		dst[k] = (float)src[k] * a[k] + b[k];
}

AKK_CLONES
void akk_preprocess_f32(float *restrict dst, const float *restrict src,
			const struct akk_preprocess *p)
{
	const float *restrict a = p->a, *restrict b = p->b;

	for (size_t k = 0; k < p->in; k++)
		dst[k] = src[k] * a[k] + b[k];
}
