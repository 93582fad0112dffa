/* loss.h - losses over a batch of logits and integer class labels.
 *
 * Every loss returns the MEAN over the B samples of the batch and writes the
 * gradient of that mean into dlogits, so a partial last batch is weighted by
 * its own size; callers that average over an epoch weight each batch by B.
 * Regression-style losses (mse, mae, huber) and sigmoid cross-entropy compare
 * against the one-hot encoding of the label; akk_loss_targets compares mse,
 * mae and huber against float targets instead (data.task: regression). */
#ifndef AKK_LOSS_H
#define AKK_LOSS_H

#include <stddef.h>
#include <stdint.h>

enum akk_loss_kind {
	AKK_LOSS_SOFTMAX_CE,	/* log-sum-exp stable */
	AKK_LOSS_SIGMOID_CE,	/* per output, mean over outputs and samples */
	AKK_LOSS_MSE,		/* mean over outputs and samples of (y - t)^2 */
	AKK_LOSS_MAE,		/* mean of |y - t| (subgradient 0 at 0) */
	AKK_LOSS_HUBER,		/* mean of huber_delta(y - t) */
};

/* Name as written in the config ("softmax_cross_entropy", ...); NULL if none. */
const char *akk_loss_name(enum akk_loss_kind k);
/* Kind from its config name; -1 when unknown. */
int akk_loss_find(const char *name);
extern const char *const akk_loss_names[];	/* NULL-terminated */

/* Mean loss of logits (B x D) against labels (B, each < D); writes
 * dlogits (B x D) unless it is NULL. delta is Huber's delta. If correct is
 * not NULL, adds the number of samples whose argmax equals the label. */
double akk_loss(enum akk_loss_kind k, float delta, float *dlogits,
		const float *logits, const int32_t *labels, int B, int D,
		long *correct);

/* Regression: the running sums an epoch's RMSE and R^2 come
 * from, over all target values pooled, and its PSNR, per sample. */
struct akk_reg_sums {
	double sse;		/* sum of (output - target)^2 */
	double sy, syy;		/* sum of targets, of their squares */
	long n;			/* target values (samples * targets) */
	double psnr;		/* sum over samples of akk_psnr at peak 1 */
	long samples;
};

/* The PSNR of one sample of n values x against its target t: 10
 * log10(peak^2 / mse), the mse floored at 1e-10 peak^2 (a perfect copy
 * gives 100 dB). */
double akk_psnr(const float *x, const float *t, size_t n, float peak);
/* The mean PSNR per sample of the sums at peak: the mean at peak 1 plus
 * 20 log10(peak) (the floor scales with the peak); 0 for no samples. */
double akk_reg_psnr(const struct akk_reg_sums *s, float peak);

/* Mean over the B x D elements of mse, mae or huber (only) of outputs
 * against float targets (B x D, row-major), with its gradient in dout
 * (unless NULL), as akk_loss. Adds to sums when not NULL. */
double akk_loss_targets(enum akk_loss_kind k, float delta, float *dout,
			const float *out, const float *targets, int B, int D,
			struct akk_reg_sums *sums);
/* Both of the above over a slice: D outputs of each row of a wider output
 * whose rows are ld >= D floats apart (out, dout and targets alike), with
 * the gradient scaled by w as well (w = 1: the same bits as akk_loss or
 * akk_loss_targets). Against labels when labels is not NULL (any loss;
 * counts correct), else against targets (mse, mae or huber; adds to
 * sums). Returns the unweighted mean. */
double akk_loss_slice(enum akk_loss_kind k, float delta, double w, float *dout,
		      const float *out, const int32_t *labels, const float *targets,
		      int ld, int B, int D, long *correct, struct akk_reg_sums *sums);
/* sqrt(sse / n), and R^2 = 1 - sse / sst with sst = syy - sy^2 / n (1 or
 * 0 for constant targets); 0 for no values. */
double akk_reg_rmse(const struct akk_reg_sums *s);
double akk_reg_r2(const struct akk_reg_sums *s);

/* Softmax probabilities of one row (for eval's predictions). */
void akk_softmax_row(float *p, const float *logits, int D);

/* What a trained network's outputs are turned into for its users
 * (predict, libakk, eval's predictions and the ONNX export all follow
 * this one rule): a regression network's outputs are its predicted
 * values, as they are; a network trained with sigmoid cross-entropy
 * gives each output's own probability, sigmoid(z); every other
 * classifier (softmax cross-entropy, or mse, mae or huber against the
 * one-hot label) the softmax over its outputs. */
enum akk_output_kind {
	AKK_OUTPUT_VALUES,
	AKK_OUTPUT_SIGMOID,
	AKK_OUTPUT_SOFTMAX,
};

/* The output kind of a network trained with loss k; regression: its
 * data.task is regression. */
enum akk_output_kind akk_loss_output(enum akk_loss_kind k, int regression);

/* One row of D outputs turned into p (D) as kind says. */
void akk_output_row(enum akk_output_kind kind, float *p, const float *logits,
		    int D);

#endif
