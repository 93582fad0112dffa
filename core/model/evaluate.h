/* evaluate.h - evaluating gates on a dataset, outside the actor runtime.
 *
 * Used by `akkctl eval`: evaluation-mode forwards through every gate in
 * order, the loss, and a confusion matrix; an optional callback sees every
 * sample's prediction. */
#ifndef AKK_EVALUATE_H
#define AKK_EVALUATE_H

#include "data/batch.h"
#include "data/noise.h"
#include "model/gate.h"
#include "model/model.h"

struct akk_eval_result {
	double loss;		/* mean over samples (and over their steps) */
	double accuracy;	/* share of samples (or steps) predicted right */
	long n;			/* samples */
	int steps;		/* labels per sample (the model's steps) */
	long *confusion;	/* (classes, classes): [label][predicted], owned,
				 * counting every step; NULL for regression */
	int classes;
	/* data.task regression: accuracy is 0, and these hold
	 * the RMSE and R^2 over all targets pooled */
	int regression;
	double rmse, r2;
	/* data.targets input or files: the mean PSNR per sample of the
	 * outputs against the targets at peak (data/targets.h), and of the
	 * network's input, back in the data's units, against them (the
	 * baseline a denoiser must beat; 0 when their sizes differ) */
	int psnr_on;
	float peak;
	double psnr, psnr_input;
	int noisy;		/* the inputs had evaluation noise */
	/* network.outputs: each head's sums (model/heads.h), nheads of them;
	 * the fields above hold the first labels head's accuracy and
	 * confusion and the first float head's RMSE and R^2 */
	int nheads;
	struct akk_head_sums heads[AKK_MAX_HEADS];
	/* set when akk_evaluate fails on a value that is not finite (an
	 * output or the loss: weights that overflow), not on memory or the
	 * callback: the checkpoint is at fault, not the run */
	int not_finite;
};

/* Called for every sample (every step of every sample, index * steps +
 * step, for a sequence) in order: its index in the dataset, label,
 * predicted class and that class's probability, as predict gives it
 * (nn/loss.h, akk_output_row; classification only: not called for
 * regression). */
typedef int (*akk_prediction_fn)(void *ctx, long index, int label,
				 int predicted, float prob);

/* Gates must have been initialised with max_batch >= bs and one evaluation
 * tape. pre maps d's values to the network's input (the checkpoint's). */
int akk_evaluate(struct akk_gate *const *gates, const struct akk_model *m,
		 const struct akk_dataset *d, const struct akk_preprocess *pre,
		 int bs, struct akk_eval_result *res, akk_prediction_fn fn, void *ctx,
		 struct akk_err *e);
/* The same with noise (data/noise.h; NULL or off: none) on the inputs, at
 * its evaluation epoch when noise->eval is set. */
int akk_evaluate_noisy(struct akk_gate *const *gates, const struct akk_model *m,
		       const struct akk_dataset *d, const struct akk_preprocess *pre,
		       const struct akk_noise *noise, int bs, struct akk_eval_result *res,
		       akk_prediction_fn fn, void *ctx, struct akk_err *e);
void akk_eval_result_release(struct akk_eval_result *res);

/* The first count samples of d (count <= the gates' max_batch) as the
 * network sees them: clean (count, in) in the data's scaled units, noisy
 * (count, in) the same with evaluation noise (noise NULL or off: a copy),
 * and out (count, outputs) the network's outputs. For pictures. */
int akk_evaluate_rows(struct akk_gate *const *gates, const struct akk_model *m,
		      const struct akk_dataset *d, const struct akk_preprocess *pre,
		      const struct akk_noise *noise, int count, float *clean,
		      float *noisy, float *out, struct akk_err *e);

/* The naive forecast of the series windows d (data/series.h) scored as
 * akk_evaluate scores a network on them: the loss of spec s, the RMSE and
 * R^2. Fails when d is not a series. */
int akk_evaluate_naive(const struct akk_spec *s, const struct akk_dataset *d,
		       struct akk_eval_result *res, struct akk_err *e);

#endif
