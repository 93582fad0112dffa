/* evaluate.c - loss, accuracy and confusion matrix of a set of gates. */
#include "model/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/series.h"
#include "model/flow.h"
#include "nn/loss.h"

int akk_evaluate(struct akk_gate *const *gates, const struct akk_model *m,
		 const struct akk_dataset *d, const struct akk_preprocess *pre,
		 int bs, struct akk_eval_result *res, akk_prediction_fn fn, void *ctx,
		 struct akk_err *e)
{
	return akk_evaluate_noisy(gates, m, d, pre, NULL, bs, res, fn, ctx, e);
}

/* The PSNR of each of the batch's inputs (back in the data's units)
 * against its target, summed into *sum. */
static void input_psnr(const struct akk_noise *un, const struct akk_batch *b,
		       size_t in, float *u, double *sum)
{
	for (int j = 0; j < b->B; j++) {
		akk_noise_unmap(un, u, b->x + (size_t)j * in);
		*sum += akk_psnr(u, b->targets + (size_t)j * in, in, un->peak);
	}
}

/* Every gate's output of a batch of B samples from sample first on is
 * finite: finite weights can still overflow; e names the gate and the
 * sample where one does not. */
static int outputs_finite(const struct akk_model *m, const float *const *outs, int B,
			  long first, struct akk_err *e)
{
	for (int g = 0; g < m->ngates; g++) {
		size_t n = (size_t)B * akk_shape_size(m->gates[g].out);
		for (size_t k = 0; k < n; k++)
			if (!isfinite(outs[g][k]))
				return akk_err_set(e, "non-finite output of gate %d on sample %ld: the weights overflow",
						   g + 1, first + (long)(k / (n / B)) + 1);
	}
	return 0;
}

int akk_evaluate_noisy(struct akk_gate *const *gates, const struct akk_model *m,
		       const struct akk_dataset *d, const struct akk_preprocess *pre,
		       const struct akk_noise *noise, int bs, struct akk_eval_result *res,
		       akk_prediction_fn fn, void *ctx, struct akk_err *e)
{
	struct akk_noise un;	/* the input map's inverse, and the peak */
	size_t in = akk_shape_size(m->spec->input);
	int base;
	float *u = NULL;
	double isum = 0;
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
	akk_noise_init(&un, &s->data, pre, d->xtype, 0);
	res->psnr_on = s->data.targets != AKK_TARGETS_LABELS;
	res->peak = un.peak;
	res->noisy = noise && noise->std > 0 && noise->eval;
	base = res->psnr_on && (size_t)O == in;
	res->nheads = s->nheads;
	if (!reg)
		res->confusion = calloc((size_t)C * C, sizeof(long));
	if (base)
		u = malloc(in * sizeof(float));
	struct akk_flow *flows = calloc(m->ngates, sizeof(*flows));
	const float **outs = calloc(m->ngates, sizeof(*outs));
	if (!prob || (!reg && !res->confusion) || (base && !u) || !flows || !outs ||
	    akk_flows_init(flows, m, 0, 1, bs, e) ||
	    akk_batch_alloc(&b, bs, akk_shape_size(s->input), O, L)) {
		if (flows)
			akk_flows_release(flows, m->ngates);
		free(flows);
		free(outs);
		free(prob);
		akk_eval_result_release(res);
		return akk_err_set(e, "out of memory");
	}
	b.tmap = m->tmap.n ? &m->tmap : NULL;
	for (long i = 0; i < nb; i++) {
		const float *h = b.x;
		double loss;

		akk_batch_fill(&b, d, NULL, i, bs, pre);
		if (res->noisy)
			akk_noise_batch(noise, b.x, b.B, NULL, (size_t)i * bs, AKK_NOISE_EVAL);
		if (base)
			input_psnr(&un, &b, in, u, &isum);
		akk_flows_eval(m, gates, flows, 0, b.x, b.B, outs);
		if (outputs_finite(m, outs, b.B, i * bs, e)) {
			res->not_finite = 1;
			goto out;
		}
		h = outs[m->ngates - 1];
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
	res->psnr = res->psnr_on ? akk_reg_psnr(&rs, res->peak) : 0;
	res->psnr_input = base && d->n ? isum / (double)d->n : 0;
	rc = 0;
out:
	akk_flows_release(flows, m->ngates);
	free(flows);
	free(outs);
	free(u);
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

int akk_evaluate_rows(struct akk_gate *const *gates, const struct akk_model *m,
		      const struct akk_dataset *d, const struct akk_preprocess *pre,
		      const struct akk_noise *noise, int count, float *clean,
		      float *noisy, float *out, struct akk_err *e)
{
	size_t in = akk_shape_size(m->spec->input);
	struct akk_noise un;
	struct akk_batch b;
	const float *h;

	if (count < 1 || (size_t)count > d->n)
		return akk_err_set(e, "cannot show %d samples of %zu", count, d->n);
	if (akk_batch_alloc(&b, count, in, akk_model_outputs(m), m->steps))
		return akk_err_set(e, "out of memory");
	akk_noise_init(&un, &m->spec->data, pre, d->xtype, 0);
	akk_batch_fill_range(&b, d, NULL, 0, count, 0, pre);
	for (int j = 0; j < count; j++)
		akk_noise_unmap(&un, clean + (size_t)j * in, b.x + (size_t)j * in);
	if (noise && noise->std > 0)
		akk_noise_batch(noise, b.x, count, NULL, 0, AKK_NOISE_EVAL);
	for (int j = 0; j < count; j++)
		akk_noise_unmap(&un, noisy + (size_t)j * in, b.x + (size_t)j * in);
	struct akk_flow *flows = calloc(m->ngates, sizeof(*flows));
	const float **outs = calloc(m->ngates, sizeof(*outs));
	if (!flows || !outs || akk_flows_init(flows, m, 0, 1, count, e)) {
		free(flows);
		free(outs);
		akk_batch_release(&b);
		return akk_err_set(e, "out of memory");
	}
	akk_flows_eval(m, gates, flows, 0, b.x, count, outs);
	h = outs[m->ngates - 1];
	akk_flows_release(flows, m->ngates);
	free(flows);
	free(outs);
	memcpy(out, h, (size_t)count * akk_model_outputs(m) * sizeof(float));
	akk_batch_release(&b);
	return 0;
}
