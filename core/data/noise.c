/* noise.c - seeded Gaussian noise on mapped samples. */
#include "data/noise.h"

#include "base/rng.h"
#include "data/targets.h"

/* Apart from rng.h's streams and augment's (from 2^48): one per sample
 * index, the epoch folded into the seed. */
#define STREAM_BASE ((uint64_t)2 << 48)
#define EPOCH_MIX 0x9e3779b97f4a7c15ULL

void akk_noise_init(struct akk_noise *n, const struct akk_data_spec *ds,
		    const struct akk_preprocess *pre, enum akk_xtype t,
		    uint64_t seed)
{
	*n = (struct akk_noise){ 0 };
	if (!ds)
		return;
	n->peak = akk_targets_peak(ds, t);
	n->scale = akk_preprocess_scale(ds, t);
	n->seed = seed;
	n->pre = pre;
	if (!ds->augment || !(ds->noise > 0))
		return;
	n->std = ds->noise;
	n->clip = ds->noise_clip;
	n->eval = ds->noise_eval;
}

void akk_noise_sample(const struct akk_noise *n, float *x, int epoch,
		      size_t index)
{
	struct akk_rng r;

	if (!(n->std > 0))
		return;
	akk_rng_seed(&r, n->seed ^ ((uint64_t)(epoch + 1) * EPOCH_MIX),
		     STREAM_BASE + index);
	for (size_t k = 0; k < n->pre->in; k++) {
		/* x = u * scale * a + b: u back, noise, clip, mapped again */
		float m = n->scale * n->pre->a[k];
		float u = (x[k] - n->pre->b[k]) / m + n->std * akk_rng_normal(&r);
		if (n->clip)
			u = u < 0 ? 0 : u > n->peak ? n->peak : u;
		x[k] = u * m + n->pre->b[k];
	}
}

void akk_noise_batch(const struct akk_noise *n, float *x, int count,
		     const uint32_t *perm, size_t start, int epoch)
{
	for (int j = 0; n->std > 0 && j < count; j++)
		akk_noise_sample(n, x + (size_t)j * n->pre->in, epoch,
				 perm ? perm[start + j] : start + j);
}

void akk_noise_unmap(const struct akk_noise *n, float *u, const float *x)
{
	for (size_t k = 0; k < n->pre->in; k++)
		u[k] = (x[k] - n->pre->b[k]) / (n->scale * n->pre->a[k]);
}
