/* split.h - a validation split held out of the training data.
 *
 * `validation: {split: F}` holds out a seeded, stratified fraction F of
 * the training set: of each class's n_c samples, round(F * n_c), chosen by
 * a shuffle seeded by the config's seed alone (for data without class
 * labels, regression: round(F * n) of one shuffle of all samples). The
 * held-out indices are computed once, before any thread starts, stored in
 * the checkpoint and taken from it on resume and by eval, so they never
 * change during a run.
 *
 * `validation: {folds: K}` is K-fold cross-validation as
 * scikit-learn's cross_val_score does it with a shuffled StratifiedKFold:
 * the same seeded per-class shuffle, each class's samples then dealt to
 * the K folds in turn; akkctl train trains one model per fold, each
 * validated on its fold and trained on the other K - 1. */
#ifndef AKK_SPLIT_H
#define AKK_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/dataset.h"

/* *idx = the held-out indices of d (*n of them, increasing, owned by the
 * caller). Fails when the fraction holds out no sample or all of them. */
int akk_split_heldout(uint32_t **idx, size_t *n, const struct akk_dataset *d,
		      double fraction, uint64_t seed, struct akk_err *e);
/* *idx = the indices of fold (1..folds) of folds, as for
 * akk_split_heldout. Fails when a class (stratified) or the data (without
 * class labels) has fewer samples than folds. */
int akk_split_fold(uint32_t **idx, size_t *n, const struct akk_dataset *d,
		   int folds, int fold, uint64_t seed, struct akk_err *e);
/* out = the samples of d at idx (n increasing indices below d->n), or with
 * complement all the others, in file order; a copy (values, labels,
 * targets, class names). Fails on an index out of range or out of order. */
int akk_dataset_subset(struct akk_dataset *out, const struct akk_dataset *d,
		       const uint32_t *idx, size_t n, int complement,
		       struct akk_err *e);

#endif
