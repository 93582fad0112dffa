/* series.c - a table read as a time series, cut into windows (series.h). */
#include "data/series.h"

#include "base/hugemem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"

/* The windows' sizes, for `after` rows needed after each window (the
 * horizon; 0 for prediction): m windows of `in` values and `out`
 * targets; -1 with e set when they do not fit. */
static int plan(const struct akk_dataset *d, const struct akk_series *s, const char *path,
		size_t after, size_t *m, size_t *in, size_t *out, struct akk_err *e)
{
	size_t span = (size_t)s->window + after, row, total;

	if (!d->y || d->targets < 1)
		return akk_err_at(e, path, 0, 0, "a series needs targets (data.csv.targets or the label column)");
	if (d->n < span && after)
		return akk_err_at(e, path, 0, 0,
				  "%zu rows make no window: a series window of %d rows and its horizon of %zu need %zu",
				  d->n, s->window, after, span);
	if (d->n < span)
		return akk_err_at(e, path, 0, 0, "%zu rows make no window of %d rows", d->n,
				  s->window);
	*m = (d->n - span) / (size_t)s->stride + 1;
	row = d->in + (size_t)d->targets;
	if (!akk_mul_ok(row, (size_t)s->window, in) || *in > AKK_MAX_DIM ||
	    !akk_mul_ok((size_t)d->targets, (size_t)s->horizon, out) || *out > INT_MAX ||
	    !akk_mul_ok(*m, *in, &total) || total > AKK_MAX_FLOATS)
		return akk_err_at(e, path, 0, 0,
				  "%zu windows of %d rows of %zu values would pass %zu values",
				  *m, s->window, row, AKK_MAX_FLOATS);
	return 0;
}

/* The input of m windows of d into x (in floats each): each row's
 * features, then its targets. */
static void fill_inputs(float *x, const struct akk_dataset *d, const struct akk_series *s,
			size_t m, size_t in)
{
	size_t F = d->in, K = (size_t)d->targets;

	for (size_t i = 0; i < m; i++) {
		size_t first = i * (size_t)s->stride;
		float *xi = x + i * in;

		for (size_t t = 0; t < (size_t)s->window; t++, xi += F + K) {
			for (size_t f = 0; f < F; f++)
				xi[f] = akk_dataset_x(d, (first + t) * F + f);
			memcpy(xi + F, d->y + (first + t) * K, K * sizeof(*xi));
		}
	}
}

/* d's table replaced by m windows x of in values, targets y (out each, or
 * NULL). */
static void replace(struct akk_dataset *d, const struct akk_series *s, size_t m, size_t in,
		    float *x, float *y, size_t out)
{
	int K = d->targets, F = (int)d->in;

	akk_hugemem_free(d->x8, d->x_mapped);
	akk_hugemem_free(d->xf, d->x_mapped);
	free(d->y);
	d->x_mapped = 0;
	d->x8 = NULL;
	d->xf = x;
	d->y = y;
	d->xtype = AKK_X_F32;
	d->n = m;
	d->in = in;
	d->c = 1;
	d->h = s->window;
	d->w = F + K;
	d->targets = y ? (int)out : 0;
	d->series_span = s->window + s->horizon;
	d->series_stride = s->stride;
	d->series_targets = K;
}

int akk_series_windows(struct akk_dataset *d, const struct akk_series *s,
		       const char *path, struct akk_err *e)
{
	size_t m = 0, in = 0, out = 0, K = (size_t)d->targets;
	float *x, *y;

	if (plan(d, s, path, (size_t)s->horizon, &m, &in, &out, e))
		return -1;
	x = malloc(m * in * sizeof(*x) + 1);
	y = malloc(m * out * sizeof(*y) + 1);
	if (!x || !y) {
		free(x);
		free(y);
		return akk_err_at(e, path, 0, 0, "out of memory for %zu windows", m);
	}
	fill_inputs(x, d, s, m, in);
	for (size_t i = 0; i < m; i++)
		memcpy(y + i * out, d->y + (i * (size_t)s->stride + (size_t)s->window) * K,
		       out * sizeof(*y));
	replace(d, s, m, in, x, y, out);
	return 0;
}

int akk_series_inputs(struct akk_dataset *d, const struct akk_series *s,
		      const char *path, struct akk_err *e)
{
	size_t m = 0, in = 0, out = 0;
	float *x;

	if (plan(d, s, path, 0, &m, &in, &out, e))
		return -1;
	if (!(x = malloc(m * in * sizeof(*x) + 1)))
		return akk_err_at(e, path, 0, 0, "out of memory for %zu windows", m);
	fill_inputs(x, d, s, m, in);
	replace(d, s, m, in, x, NULL, out);
	return 0;
}

int akk_windows_split(uint32_t **held, size_t *nheld, uint32_t **train, size_t *ntrain,
		      size_t n, int span, int stride, double fraction, const char *of,
		      struct akk_err *e)
{
	size_t k = (size_t)llround(fraction * (double)n), first, gap;

	*held = *train = NULL;
	*nheld = *ntrain = 0;
	if (k < 1)
		k = 1;
	if (k >= n)
		return akk_err_set(e, "a split of %g holds out all %zu windows of the %s",
				   fraction, n, of);
	first = n - k;
	/* window j ends at step j S + span; the first held-out one begins at
	 * step first S: j S + span <= first S */
	gap = ((size_t)span + (size_t)stride - 1) / (size_t)stride;
	if (first < gap)
		return akk_err_set(e, "a split of %g leaves no training window that ends before the %zu held-out ones begin",
				   fraction, k);
	*nheld = k;
	*ntrain = first - gap + 1;
	*held = malloc(*nheld * sizeof(**held));
	*train = malloc(*ntrain * sizeof(**train));
	if (!*held || !*train) {
		free(*held);
		free(*train);
		*held = *train = NULL;
		return akk_err_set(e, "out of memory");
	}
	for (size_t i = 0; i < k; i++)
		(*held)[i] = (uint32_t)(first + i);
	for (size_t i = 0; i < *ntrain; i++)
		(*train)[i] = (uint32_t)i;
	return 0;
}

int akk_series_split(uint32_t **held, size_t *nheld, uint32_t **train, size_t *ntrain,
		     const struct akk_dataset *d, double fraction, struct akk_err *e)
{
	return akk_windows_split(held, nheld, train, ntrain, d->n, d->series_span,
				 d->series_stride, fraction, "series", e);
}

void akk_series_naive(const struct akk_dataset *d, size_t i, float *out)
{
	size_t K = (size_t)d->series_targets, H = (size_t)d->targets / K;
	const float *last = d->xf + (i + 1) * d->in - K;	/* the window's last row's targets */

	for (size_t h = 0; h < H; h++)
		memcpy(out + h * K, last, K * sizeof(*out));
}
