/* evaluate.c - loss, accuracy and confusion matrix of a set of gates. */
#include "model/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/series.h"
#include "nn/loss.h"

int akk_evaluate(struct akk_gate *const *gates, const struct akk_model *m,
		 const struct akk_dataset *d, const struct akk_preprocess *pre,
		 int bs, struct akk_eval_result *res, akk_prediction_fn fn, void *ctx,
		 struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	/* with heads, the confusion is the first labels head's: C of the
	 * O outputs from coff on */
	int fl = s->nheads ? akk_heads_first(s, 1) : -1;
	int C = fl >= 0 ? akk_head_size(s, fl, akk_model_outputs(m)) : m->classes;
	int coff = fl >= 0 ? akk_head_offset(s, fl, akk_model_outputs(m)) : 0;
	int L = m->steps, O = akk_model_outputs(m);
	enum akk_output_kind ok = fl >= 0 ? akk_head_output(s, fl) : akk_loss_output(s->loss, 0);
	long nb = akk_batches_per_epoch(d->n, bs), correct = 0;
	struct akk_batch b;
	float *prob = malloc(C * sizeof(float));
	double sum = 0;
	int rc = -1, reg = s->data.task == AKK_TASK_REGRESSION || (s->nheads && fl < 0);
	struct akk_reg_sums rs = { 0 };

	memset(res, 0, sizeof(*res));
	res->classes = C;
	res->regression = reg;
	res->nheads = s->nheads;
	if (!reg)
		res->confusion = calloc((size_t)C * C, sizeof(long));
	if (!prob || (!reg && !res->confusion) ||
	    akk_batch_alloc(&b, bs, akk_shape_size(s->input), O, L)) {
		free(prob);
		akk_eval_result_release(res);
		return akk_err_set(e, "out of memory");
	}
	b.tmap = m->tmap.n ? &m->tmap : NULL;
	for (long i = 0; i < nb; i++) {
		const float *h = b.x;
		double loss;

		akk_batch_fill(&b, d, NULL, i, bs, pre);
		for (int g = 0; g < m->ngates; g++) {
			const float *y = akk_gate_eval(gates[g], 0, h, b.B);
			size_t n = (size_t)b.B * akk_shape_size(m->gates[g].out);
			/* finite weights can still overflow: name where */
			for (size_t k = 0; k < n; k++)
				if (!isfinite(y[k])) {
					akk_err_set(e, "non-finite output of gate %d on sample %ld: the weights overflow",
						    g + 1, i * bs + (long)(k / (n / b.B)) + 1);
					res->not_finite = 1;
					goto out;
				}
			h = y;
		}
		loss = akk_model_loss_heads(m, NULL, h, b.labels, b.targets, b.B, &correct,
					    &rs, res->heads);
		if (!isfinite(loss)) {
			akk_err_set(e, "non-finite loss on samples %ld to %ld", i * bs + 1,
				    i * bs + b.B);
			res->not_finite = 1;
			goto out;
		}
		sum += loss * b.B;
		/* a sequence: every step is a prediction of its own */
		for (int j = 0; !reg && j < b.B * L; j++) {
			const float *row = h + (size_t)j * (s->nheads ? O : C) + coff;
			int best = 0;
			for (int k = 1; k < C; k++)
				if (row[k] > row[best])
					best = k;
			res->confusion[(size_t)b.labels[j] * C + best]++;
			if (fn) {
				akk_output_row(ok, prob, row, C);
				if (fn(ctx, i * bs * L + j, b.labels[j], best, prob[best])) {
					akk_err_set(e, "cannot write the predictions");
					goto out;
				}
			}
		}
	}
	res->n = (long)d->n;
	res->steps = L;
	res->loss = d->n ? sum / d->n : 0;
	res->accuracy = d->n ? (double)correct / ((double)d->n * L) : 0;
	res->rmse = akk_reg_rmse(&rs);
	res->r2 = akk_reg_r2(&rs);
	rc = 0;
out:
	free(prob);
	akk_batch_release(&b);
	if (rc)
		akk_eval_result_release(res);
	return rc;
}

void akk_eval_result_release(struct akk_eval_result *res)
{
	free(res->confusion);
	res->confusion = NULL;
}

int akk_evaluate_naive(const struct akk_spec *s, const struct akk_dataset *d,
		       struct akk_eval_result *res, struct akk_err *e)
{
	struct akk_reg_sums rs = { 0 };
	double sum = 0;
	float *guess;

	memset(res, 0, sizeof(*res));
	if (!akk_series_is(d) || !d->y)
		return akk_err_set(e, "the naive forecast needs the windows of a series");
	if (!(guess = malloc((size_t)d->targets * sizeof(*guess))))
		return akk_err_set(e, "out of memory");
	for (size_t i = 0; i < d->n; i++) {
		akk_series_naive(d, i, guess);
		sum += akk_loss_targets(s->loss, s->huber_delta, NULL, guess,
					d->y + i * (size_t)d->targets, 1, d->targets, &rs);
	}
	free(guess);
	res->regression = 1;
	res->n = (long)d->n;
	res->loss = d->n ? sum / (double)d->n : 0;
	res->rmse = akk_reg_rmse(&rs);
	res->r2 = akk_reg_r2(&rs);
	return 0;
}
