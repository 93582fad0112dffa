/* optim.h - optimizers and learning-rate schedules.
 *
 * An optimizer updates one flat block of n parameters from the gradient block
 * of the same layout; its state (moments) is one flat block too, so a step is
 * a single loop over floats. Every gate runs its own optimizer on its own
 * blocks: nothing here is shared between threads.
 *
 * Conventions (those of torch.optim, which tests/ref checks against):
 *   sgd       w -= lr * g
 *   momentum  v = mu v + g;            w -= lr v
 *   nesterov  v = mu v + g;            w -= lr (g + mu v)
 *   rmsprop   s = rho s + (1-rho) g^2; w -= lr g / (sqrt(s) + eps)
 *   adam      bias-corrected moments;  w -= lr mhat / (sqrt(vhat) + eps)
 *   adamw     decoupled decay on the old weights first (w -= lr wd w), then adam
 *   radam     rectified adam (Liu et al. 2019), torch's form
 * weight_decay is L2 (g += wd w before the update) for every kind but adamw,
 * where it is decoupled. clip_norm > 0 scales the whole block's gradient so
 * its L2 norm is at most clip_norm, before everything else. */
#ifndef AKK_OPTIM_H
#define AKK_OPTIM_H

#include <stddef.h>

#include "nn/layer.h"

enum akk_optim_kind {
	AKK_OPT_SGD,
	AKK_OPT_MOMENTUM,
	AKK_OPT_NESTEROV,
	AKK_OPT_RMSPROP,
	AKK_OPT_ADAM,
	AKK_OPT_ADAMW,
	AKK_OPT_RADAM,
};

enum akk_lr_kind {
	AKK_LR_CONSTANT,
	AKK_LR_STEP,		/* lr * gamma^floor(epoch / step_epochs) */
	AKK_LR_EXPONENTIAL,	/* lr * gamma^epoch (epoch fractional) */
	AKK_LR_COSINE,		/* min_lr + (lr-min_lr)(1+cos(pi e/E))/2 */
	AKK_LR_PLATEAU,		/* max(lr * factor^k, min_lr), k the reductions
				 * so far (nn/monitor.h): reduce on plateau */
};

struct akk_lr_spec {
	enum akk_lr_kind kind;
	float gamma;		/* step, exponential (default 0.1 / 0.95) */
	float step_epochs;	/* step (default 1) */
	float min_lr;		/* cosine (default 0) */
	float warmup_epochs;	/* linear warm-up from 0 first (default 0) */
	/* plateau (Keras' ReduceLROnPlateau): watch `monitor` (enum
	 * akk_monitor_metric, default val_loss); after `patience` epochs
	 * (default 10) without an improvement of more than min_delta (1e-4),
	 * multiply the lr by factor (0.1), not below min_lr, then wait
	 * `cooldown` epochs (0) before watching again. */
	float factor, min_delta;
	int patience, cooldown, monitor;
	struct akk_mark mark;
};

struct akk_optim_spec {
	enum akk_optim_kind kind;
	float lr;		/* required > 0 */
	float momentum;		/* momentum, nesterov (default 0.9) */
	float beta1, beta2;	/* adam family (0.9, 0.999) */
	float rho;		/* rmsprop (0.99, as torch's alpha) */
	float eps;		/* rmsprop, adam family (1e-8) */
	float weight_decay;	/* default 0 */
	float clip_norm;	/* default 0 = off */
	/* Data parallelism's schedule.lr_scaling: linear sets it to the
	 * replicas R (akk_spec_scale_lr): the lr is then R lr, and a warm-up
	 * ramps up to it from lr instead of 0 (Goyal et al. 2017). 0: off. */
	float lr_scale;
	struct akk_lr_spec sched;
	struct akk_mark mark;
};

const char *akk_optim_name(enum akk_optim_kind k);
int akk_optim_find(const char *name);		/* -1 when unknown */
extern const char *const akk_optim_names[];	/* NULL-terminated */
const char *akk_lr_name(enum akk_lr_kind k);
int akk_lr_find(const char *name);
extern const char *const akk_lr_names[];

/* Floats of optimizer state per parameter: 0, 1 or 2. */
int akk_optim_state_per_param(enum akk_optim_kind k);

/* The learning rate at fractional epoch position `epoch` (0 = start of
 * training) of a run of `epochs` epochs. With warm-up W > 0 epochs the
 * rate ramps linearly from 0 to the configured lr over [0, W), and the
 * schedule then starts from lr at W, as a schedule of epochs - W epochs
 * whose epoch 0 is W (so the configured peak is reached).
 * A step covers [steps_done, steps_done + 1) / steps_per_epoch; callers
 * pass its midpoint, (steps_done + 0.5) / steps_per_epoch, so that the
 * first warm-up step never has rate 0 and no step sits exactly on a
 * step-schedule boundary. At integer epochs without warm-up the values
 * are torch's StepLR, ExponentialLR and CosineAnnealingLR (T_max =
 * epochs). */
float akk_lr_at(const struct akk_optim_spec *o, double epoch, int epochs);

/* The plateau schedule's lr after `reductions` reductions, from the lr
 * akk_lr_at gave: max(lr * factor^reductions, min_lr); lr itself for every
 * other schedule, or with no reduction yet. */
float akk_lr_reduced(const struct akk_optim_spec *o, float lr, int reductions);

/* One step on n parameters. t is the 1-based count of steps this block has
 * taken (bias correction). g may be modified (clipping, decay). state has
 * n * akk_optim_state_per_param(kind) floats, zero before the first step. */
void akk_optim_step(const struct akk_optim_spec *o, float *w, float *g,
		    float *state, size_t n, long t, float lr);

/* The same step in parts: c = akk_optim_clip(o, g, n) once (the clipping
 * scale from the whole gradient's norm, 1 when none), then
 * akk_optim_update on ranges [lo, hi) covering [0, n) in any order or at
 * once: each element's arithmetic is akk_optim_step's, bit for bit. */
double akk_optim_clip(const struct akk_optim_spec *o, const float *g, size_t n);
void akk_optim_update(const struct akk_optim_spec *o, float *w, float *g,
		      float *state, size_t n, size_t lo, size_t hi, long t,
		      float lr, double clip);

/* akk_optim_update on [lo, hi) that leaves g zero there instead of
 * clipped, ready for the next batch's gradients, in the same pass, and
 * reads the weights from `from` (w itself, or another buffer: the new
 * weights then go to w without a copy, and from is left as it was): w and
 * state get akk_optim_update's bits. Returns 1 when every gradient in the
 * range was finite, 0 when one was inf or NaN (w is then spoilt). */
int akk_optim_update_zero(const struct akk_optim_spec *o, const float *from,
			  float *w, float *g, float *state, size_t n, size_t lo,
			  size_t hi, long t, float lr, double clip);

/* L2 norm of g (double accumulation). */
double akk_norm2(const float *g, size_t n);

#endif
