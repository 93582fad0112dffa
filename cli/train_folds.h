/* train_folds.h - akkctl train of a config with validation: {folds: K}.
 *
 * K-fold cross-validation as scikit-learn's cross_val_score does it: K
 * models, each from a fresh init from the config's seed, each trained on
 * K - 1 folds and validated on the one held out (data/split.h), each run
 * in output.dir/fold-N; then the per-fold validation accuracy (R^2 for
 * regression), their mean, standard deviation (of the K, as numpy's
 * std()), minimum and maximum, on stderr and in output.dir/folds.csv. */
#ifndef AKK_TRAIN_FOLDS_H
#define AKK_TRAIN_FOLDS_H

#include <stddef.h>

#include "config/spec.h"

/* What one fold's run ends with. */
struct train_fold_result {
	size_t ntrain, nval;	/* samples trained on, validated on */
	double val_loss;	/* the final weights' validation loss */
	double val_score;	/* their accuracy (0..1), or R^2 */
	int have_val;		/* 0: the run ended before any validation */
};

/* Before the first fold (cmd_train.c runs them, one train run each,
 * holding out fold N and writing to the run directory's fold-N): EXIT_OK,
 * or the usage error that forbids folds here (--resume, mpirun). */
int train_folds_check(const struct akk_spec *s, const char *resume);
/* After the K folds' runs r: the per-fold scores, their mean, std, min
 * and max in dir/folds.csv, and on stderr unless quiet. Returns the exit
 * status. */
int train_folds_summary(const char *dir, const struct train_fold_result *r, int k,
			int regression, int quiet);

#endif
