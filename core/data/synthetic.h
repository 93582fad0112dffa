/* synthetic.h - a learnable dataset made up in memory.
 *
 * For `akkctl bench` on a machine without the data files: n uint8 images of
 * h x w x c values and their labels, each class lighting up its own stripe of
 * values over uniform noise, so a network trains on it as on real data and
 * the benchmark measures the same work. Seeded: the same on every run. */
#ifndef AKK_SYNTHETIC_H
#define AKK_SYNTHETIC_H

#include "base/err.h"
#include "data/dataset.h"

/* item values per sample (e.g. 784 for [1, 28, 28]); labels 0..classes-1. */
int akk_dataset_synthetic(struct akk_dataset *d, size_t n, size_t item,
			  int classes, uint64_t seed, struct akk_err *e);

#endif
