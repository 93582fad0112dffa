/* split.c - holding out a stratified validation split, or one of K folds. */
#include "data/split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* The split's own random stream (beside base/rng.h's). */
#define SPLIT_STREAM (7u << 20)

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Shuffle v[0..n) with r (Fisher-Yates). */
static void shuffle(uint32_t *v, size_t n, struct akk_rng *r)
{
	for (size_t i = n; i > 1; i--) {
		uint32_t j = akk_rng_below(r, (uint32_t)i), t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* The samples of d grouped by class (one group without class labels),
 * each group shuffled by one stream seeded by seed alone, in class order:
 * *orderp (d->n indices) and *startp (groups + 1 offsets), owned by the
 * caller; *groupsp their number. */
static int grouped(uint32_t **orderp, size_t **startp, int *groupsp,
		   const struct akk_dataset *d, uint64_t seed, struct akk_err *e)
{
	int groups = d->labels && d->classes > 0 ? d->classes : 1;
	uint32_t *order = NULL;
	size_t *start = NULL;
	struct akk_rng r;

	*orderp = NULL;
	*startp = NULL;
	if (d->n > UINT32_MAX)
		return akk_err_set(e, "%zu samples are too many to split", d->n);
	order = malloc((d->n ? d->n : 1) * sizeof(*order));
	start = calloc((size_t)groups + 1, sizeof(*start));
	if (!order || !start) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	/* the samples grouped by class, each group in file order */
	for (size_t i = 0; i < d->n; i++) {
		if (groups > 1 && (d->labels[i] < 0 || d->labels[i] >= groups)) {
			akk_err_set(e, "label %d of sample %zu is not a class (0 to %d)",
				    (int)d->labels[i], i + 1, groups - 1);
			goto fail;
		}
		start[(groups > 1 ? d->labels[i] : 0) + 1]++;
	}
	for (int c = 0; c < groups; c++)
		start[c + 1] += start[c];
	{
		size_t *at = calloc((size_t)groups, sizeof(*at));
		if (!at) {
			akk_err_set(e, "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < d->n; i++) {
			int c = groups > 1 ? d->labels[i] : 0;
			order[start[c] + at[c]++] = (uint32_t)i;
		}
		free(at);
	}
	akk_rng_seed(&r, seed, SPLIT_STREAM);
	for (int c = 0; c < groups; c++)
		shuffle(order + start[c], start[c + 1] - start[c], &r);
	*orderp = order;
	*startp = start;
	*groupsp = groups;
	return 0;
fail:
	free(order);
	free(start);
	return -1;
}

int akk_split_heldout(uint32_t **idx, size_t *n, const struct akk_dataset *d,
		      double fraction, uint64_t seed, struct akk_err *e)
{
	uint32_t *order = NULL, *out = NULL;
	size_t *start = NULL, k = 0;
	int groups;

	*idx = NULL;
	*n = 0;
	if (!(fraction > 0 && fraction < 1))
		return akk_err_set(e, "validation split %g is not between 0 and 1", fraction);
	if (grouped(&order, &start, &groups, d, seed, e))
		return -1;
	if (!(out = malloc((d->n ? d->n : 1) * sizeof(*out)))) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	/* of each group, the first round(F * n_c) of a seeded shuffle */
	for (int c = 0; c < groups; c++) {
		size_t nc = start[c + 1] - start[c];
		size_t take = (size_t)floor(fraction * (double)nc + 0.5);

		memcpy(out + k, order + start[c], take * sizeof(*out));
		k += take;
	}
	if (!k || k == d->n) {
		akk_err_set(e, "validation split %g of %zu samples holds out %s",
			    fraction, d->n, k ? "all of them" : "none");
		goto fail;
	}
	qsort(out, k, sizeof(*out), cmp_u32);
	free(order);
	free(start);
	*idx = out;
	*n = k;
	return 0;
fail:
	free(order);
	free(out);
	free(start);
	return -1;
}

int akk_split_fold(uint32_t **idx, size_t *n, const struct akk_dataset *d,
		   int folds, int fold, uint64_t seed, struct akk_err *e)
{
	uint32_t *order = NULL, *out = NULL;
	size_t *start = NULL, k = 0, dealt = 0;
	int groups;

	*idx = NULL;
	*n = 0;
	if (folds < 2 || fold < 1 || fold > folds)
		return akk_err_set(e, "fold %d of %d folds does not exist", fold, folds);
	if ((size_t)folds > d->n)
		return akk_err_set(e, "%d folds need at least %d samples, but the training data has %zu",
				   folds, folds, d->n);
	if (grouped(&order, &start, &groups, d, seed, e))
		return -1;
	for (int c = 0; groups > 1 && c < groups; c++)
		if (start[c + 1] - start[c] < (size_t)folds) {
			akk_err_set(e, "class %d has %zu sample%s, fewer than the %d folds (stratified: every fold holds each class)",
				    c, start[c + 1] - start[c],
				    start[c + 1] - start[c] == 1 ? "" : "s", folds);
			goto fail;
		}
	if (!(out = malloc((d->n ? d->n : 1) * sizeof(*out)))) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	/* each group's shuffled samples dealt to the folds in turn, the deal
	 * going on from class to class: every fold holds n_c / K of each
	 * class, rounded either way, and the folds' sizes differ by one at
	 * most */
	for (int c = 0; c < groups; c++)
		for (size_t j = start[c]; j < start[c + 1]; j++, dealt++)
			if (dealt % (size_t)folds == (size_t)(fold - 1))
				out[k++] = order[j];
	qsort(out, k, sizeof(*out), cmp_u32);
	free(order);
	free(start);
	*idx = out;
	*n = k;
	return 0;
fail:
	free(order);
	free(out);
	free(start);
	return -1;
}

int akk_dataset_subset(struct akk_dataset *out, const struct akk_dataset *d,
		       const uint32_t *idx, size_t n, int complement,
		       struct akk_err *e)
{
	size_t m = complement ? d->n - n : n, row = 0, j = 0;
	size_t isz = d->xtype == AKK_X_U8 ? 1 : sizeof(float);
	size_t L = (size_t)akk_dataset_steps(d);	/* labels per sample */

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (idx[i] >= d->n || (i && idx[i] <= idx[i - 1]))
			return akk_err_set(e, "held-out index %u (number %zu) is %s",
					   idx[i], i + 1, idx[i] >= d->n ?
					   "beyond the data" : "out of order");
	out->n = m;
	out->in = d->in;
	out->c = d->c;
	out->h = d->h;
	out->w = d->w;
	out->xtype = d->xtype;
	out->classes = d->classes;
	out->targets = d->targets;
	out->series_span = d->series_span;
	out->series_stride = d->series_stride;
	out->series_targets = d->series_targets;
	out->label_steps = d->label_steps;
	out->text_len = d->text_len;
	out->text_stride = d->text_stride;
	if (d->xtype == AKK_X_U8)
		out->x8 = malloc(m * d->in + 1);
	else
		out->xf = malloc(m * d->in * sizeof(float) + 1);
	if (d->labels)
		out->labels = malloc(m * L * sizeof(int32_t) + 1);
	if (d->y)
		out->y = malloc(m * (size_t)d->targets * sizeof(float) + 1);
	if (d->class_names)
		out->class_names = calloc((size_t)d->classes, sizeof(char *));
	if ((d->xtype == AKK_X_U8 ? !out->x8 : !out->xf) ||
	    (d->labels && !out->labels) || (d->y && !out->y) ||
	    (d->class_names && !out->class_names))
		goto oom;
	for (int c = 0; d->class_names && c < d->classes; c++)
		if (!(out->class_names[c] = strdup(d->class_names[c])))
			goto oom;
	for (size_t i = 0; i < d->n; i++) {
		int held = j < n && idx[j] == i;

		j += held;
		if (held == complement)
			continue;
		if (d->xtype == AKK_X_U8)
			memcpy(out->x8 + row * d->in, d->x8 + i * d->in, d->in * isz);
		else
			memcpy(out->xf + row * d->in, d->xf + i * d->in, d->in * isz);
		if (d->labels)
			memcpy(out->labels + row * L, d->labels + i * L, L * sizeof(int32_t));
		if (d->y)
			memcpy(out->y + row * d->targets, d->y + i * d->targets,
			       (size_t)d->targets * sizeof(float));
		row++;
	}
	return 0;
oom:
	akk_dataset_release(out);
	return akk_err_set(e, "out of memory");
}
