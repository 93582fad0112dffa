/* monitor.h - a validation metric watched for improvement, epoch by epoch:
 * what early stopping (schedule.early_stopping) and the plateau learning-rate
 * schedule (optimizer.schedule: plateau) decide from.
 *
 * An epoch improves on the best so far when its value beats the best by
 * more than min_delta: val_loss < best - min_delta, val_accuracy > best +
 * min_delta (Keras' convention). The first epoch seen always improves. The
 * state is plain numbers, stored in checkpoints (akkctl-checkpoint(5)), so
 * a resumed run decides exactly as an uninterrupted one. */
#ifndef AKK_MONITOR_H
#define AKK_MONITOR_H

#include "nn/layer.h"

enum akk_monitor_metric { AKK_MON_VAL_LOSS, AKK_MON_VAL_ACCURACY };
extern const char *const akk_monitor_names[];	/* NULL-terminated */

/* schedule.early_stopping: stop after `patience` epochs without
 * improvement (Keras' EarlyStopping, restore_best_weights). */
struct akk_early_stop_spec {
	int on;			/* the key is present */
	int monitor;		/* enum akk_monitor_metric, default val_loss */
	int patience;		/* default 3, at least 1 */
	float min_delta;	/* default 0 */
	struct akk_mark mark;
};

/* Where a watched metric stands. */
struct akk_monitor {
	double best;		/* the best value so far */
	int best_epoch;		/* 1-based epoch of it; 0: none seen */
	int wait;		/* epochs since then without improvement */
};

/* The whole training-loop watch of a run: early stopping, and the plateau
 * schedule's own monitor, cooldown and reductions so far. */
struct akk_watch {
	struct akk_monitor stop;	/* early stopping */
	int stopped_epoch;		/* 1-based epoch it stopped after; 0: not */
	struct akk_monitor plateau;	/* lr reduce on plateau */
	int cooldown;			/* plateau epochs of cooldown left */
	int reductions;			/* times the lr was reduced */
};

/* The metric's value from an epoch's validation loss and accuracy. */
double akk_monitor_value(int metric, double val_loss, double val_acc);
/* Whether v improves on m's best by more than min_delta. */
int akk_monitor_improves(const struct akk_monitor *m, int metric,
			 double min_delta, double v);

/* Early stopping after epoch (1-based) with value v: updates w->stop;
 * returns 1 when training should stop now (w->stopped_epoch set). */
int akk_early_stop_update(struct akk_watch *w, const struct akk_early_stop_spec *s,
			  int epoch, double v);

/* Keras' ReduceLROnPlateau after epoch (1-based) with value v: within the
 * cooldown the wait stays 0; an improvement resets the wait; otherwise,
 * outside the cooldown, after `patience` epochs without improvement the
 * lr is reduced (w->reductions + 1, the cooldown starts, the wait resets)
 * unless it is already at its floor (at_floor: lr <= min_lr). Returns 1
 * when it reduced the lr. */
int akk_plateau_update(struct akk_watch *w, int metric, double min_delta,
		       int patience, int cooldown, int at_floor, int epoch,
		       double v);

#endif
