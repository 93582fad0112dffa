/* augment.h - image augmentation of training batches.
 *
 * Applied by the training data provider to each float sample after
 * preprocessing (scale, normalize), never to validation or evaluation
 * data. Per sample, each enabled op draws its parameters from a stream
 * seeded by (seed, epoch, sample index in the data set) alone, so a run is
 * reproducible whatever the batching or threading and a resumed run sees
 * the same stream. The ops, out = flip(translate(crop(in))):
 *   crop_padding P: pad by P zeros on every side and crop back to the
 *     image size at a random offset: a shift by dy, dx in [-P, P], the
 *     uncovered border 0 (0 after preprocessing: the mean when normalized);
 *   translate T: a shift by ty, tx in [-T, T], the border pixels repeated;
 *   flip: mirror left-right with probability 1/2.
 * All channels move together. Memory is one sample (and one row) of scratch, allocated
 * by akk_augment_init: augmenting allocates nothing. */
#ifndef AKK_AUGMENT_H
#define AKK_AUGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "config/spec.h"

struct akk_augment {
	int on;			/* any op enabled */
	int crop_padding, translate, flip;
	int c, h, w;		/* sample shape, channels first */
	uint64_t seed;
	float *tmp;		/* (c, h, w) scratch, owned */
	int *col;		/* (w) source column per output column, owned */
};

/* From the spec's augment keys for samples of c x h x w. Off (and nothing
 * allocated) when no op is enabled. */
int akk_augment_init(struct akk_augment *a, const struct akk_data_spec *s,
		     int c, int h, int w, uint64_t seed, struct akk_err *e);
void akk_augment_release(struct akk_augment *a);
/* Augment count samples x[j * c*h*w ...] in place; sample j is data set
 * sample perm[start + j] (perm NULL: start + j) of epoch. */
void akk_augment_batch(struct akk_augment *a, float *x, int count,
		       const uint32_t *perm, size_t start, int epoch);
/* One sample, data set index `index` of epoch. */
void akk_augment_sample(struct akk_augment *a, float *x, int epoch,
			size_t index);

#endif
