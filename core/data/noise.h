/* noise.h - Gaussian noise on the network's input (data.augment.noise).
 *
 * A denoiser learns to undo the noise: it is added to the input only,
 * after the input map (data/preprocess.h) but in the data's scaled units
 * (v / data.scale, before normalize): value u of a sample becomes u + std
 * z, z standard normal, clipped to the data's range [0, peak] unless
 * noise_clip is false (peak: data/targets.h), then mapped as u was. The
 * targets (data/targets.h) never see it. Each sample draws from its own
 * stream, seeded by (seed, epoch, its index in the data set) alone, so
 * training is reproducible whatever the batching; for evaluation
 * (validation passes and akkctl eval, only with noise_eval) the epoch is
 * AKK_NOISE_EVAL, so a sample's noisy input is the same on every pass and
 * the PSNR of the noisy input and of the output are comparable. Applying
 * it allocates nothing. */
#ifndef AKK_NOISE_H
#define AKK_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "config/spec.h"
#include "data/dataset.h"
#include "data/preprocess.h"

/* The epoch of evaluation's noise. */
#define AKK_NOISE_EVAL (-1)

struct akk_noise {
	float std;		/* in scaled units; 0: off */
	int clip;		/* 1: clip to [0, peak] */
	int eval;		/* 1: evaluation is noisy too (noise_eval) */
	float peak;		/* the scaled data's range */
	float scale;		/* data.scale for the data's type */
	uint64_t seed;
	const struct akk_preprocess *pre;	/* lent: the input map */
};

/* From ds's augment keys (ds NULL: off, and nothing else works) for data
 * of type t mapped by pre (lent for as long as n is used). */
void akk_noise_init(struct akk_noise *n, const struct akk_data_spec *ds,
		    const struct akk_preprocess *pre, enum akk_xtype t,
		    uint64_t seed);
/* Noise on one mapped sample x (pre->in values), data set index `index`
 * of epoch (AKK_NOISE_EVAL for evaluation). Nothing when off. */
void akk_noise_sample(const struct akk_noise *n, float *x, int epoch,
		      size_t index);
/* count samples x[j * in ...]; sample j is perm[start + j] (perm NULL:
 * start + j). */
void akk_noise_batch(const struct akk_noise *n, float *x, int count,
		     const uint32_t *perm, size_t start, int epoch);
/* u = a mapped sample x back in the data's scaled units (the inverse of
 * the input map, as the targets are); with or without noise. */
void akk_noise_unmap(const struct akk_noise *n, float *u, const float *x);

#endif
