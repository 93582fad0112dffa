/* batch.h - one batch of samples as it travels through the network.
 *
 * A batch is filled from a dataset by index within an epoch: sample j of
 * batch i of epoch e is perm_e[i*B + j], where perm_e is a Fisher-Yates
 * permutation seeded by (seed, epoch) alone, so an epoch's order never
 * depends on the ones before it (resume needs only the epoch number) and is
 * fresh every epoch. The last batch of an epoch is partial. Stored values
 * become the network's floats through the data's preprocessing map
 * (data/preprocess.h). */
#ifndef AKK_BATCH_H
#define AKK_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/dataset.h"
#include "data/head_targets.h"
#include "data/preprocess.h"
#include "config/spec.h"

struct akk_batch {
	float *x;		/* (max_batch, in) network input */
	int32_t *labels;	/* (max_batch, steps) class indices: one per
				 * sample, or one per step of a sequence */
	float *dlogits;		/* (max_batch, outputs) loss gradient, lent to the
				 * last gate until this batch's backward returns */
	float *targets;		/* (max_batch, outputs) regression targets (the
				 * data's y; outputs = its targets), else 0;
				 * laid out by tmap when it is set */
	const struct akk_target_map *tmap;	/* a network with heads: where
				 * each head's target goes (data/head_targets.h);
				 * NULL: the data's y as it is. Not owned */
	int steps;		/* labels per sample */
	int B;			/* samples in this batch */
	int epoch;		/* 0-based epoch (training) or pass (validation) */
	long index;		/* batch index within the epoch or pass */
	int last;		/* 1 for the last batch of its epoch or pass */
};

/* Room for max_batch samples of `in` inputs, `outputs` network outputs
 * and `steps` labels each (the model's akk_model_outputs and steps). */
int akk_batch_alloc(struct akk_batch *b, int max_batch, size_t in,
		    int outputs, int steps);
void akk_batch_release(struct akk_batch *b);

/* Batches per epoch of n samples in batches of bs (the last may be partial). */
long akk_batches_per_epoch(size_t n, int bs);
/* perm = a fresh permutation of 0..n-1 for `epoch`, from seed alone. */
void akk_shuffle(uint32_t *perm, size_t n, uint64_t seed, int epoch);
/* perm = schedule.order streams for n samples (windows of one sequence,
 * in sequence order) in batches of bs: the sequence cut into bs
 * contiguous streams, batch k holding the k-th sample of each, so that
 * row b of batch k + 1 continues row b of batch k (char-rnn's layout).
 * With P = ceil(n / bs) batches, the last of L = n - (P - 1) bs rows,
 * streams 0..L-1 hold P samples and the others P - 1; stream b starts at
 * b P - max(0, b - L), and position k bs + b of perm is its k-th sample.
 * The same every epoch; every sample once. */
void akk_streams_order(uint32_t *perm, size_t n, int bs);
/* The training order of an epoch: streams (akk_streams_order, whatever
 * the epoch), or a fresh shuffle (akk_shuffle). */
void akk_train_order(uint32_t *perm, size_t n, enum akk_order order, int bs,
		     uint64_t seed, int epoch);
/* Fill the `count` samples at positions start.. of the order perm (NULL:
 * file order) into b; last marks the epoch's last batch. d's labels per
 * sample (akk_dataset_steps) must be b's steps (the run checks it). */
void akk_batch_fill_range(struct akk_batch *b, const struct akk_dataset *d,
			  const uint32_t *perm, size_t start, int count,
			  int last, const struct akk_preprocess *pre);
/* Fill batch `index` (batch size bs) of an epoch from d in the order perm
 * (NULL: in file order). */
void akk_batch_fill(struct akk_batch *b, const struct akk_dataset *d,
		    const uint32_t *perm, long index, int bs,
		    const struct akk_preprocess *pre);

#endif
