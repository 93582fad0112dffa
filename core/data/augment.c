/* augment.c - crop, translate and flip of training samples, in place. */
#include "data/augment.h"

#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* The augmentation streams: apart from every stream rng.h lists (those
 * are below 2^24), one per sample index, the epoch folded into the seed. */
#define STREAM_BASE ((uint64_t)1 << 48)
#define EPOCH_MIX 0x9e3779b97f4a7c15ULL

int akk_augment_init(struct akk_augment *a, const struct akk_data_spec *s,
		     int c, int h, int w, uint64_t seed, struct akk_err *e)
{
	memset(a, 0, sizeof(*a));
	a->crop_padding = s->augment ? s->crop_padding : 0;
	a->translate = s->augment ? s->translate : 0;
	a->flip = s->augment ? s->flip : 0;
	a->on = a->crop_padding > 0 || a->translate > 0 || a->flip;
	a->c = c;
	a->h = h;
	a->w = w;
	a->seed = seed;
	if (!a->on)
		return 0;
	a->tmp = malloc((size_t)c * h * w * sizeof(float));
	a->col = malloc((size_t)w * sizeof(int));
	if (!a->tmp || !a->col) {
		free(a->tmp);
		free(a->col);
		memset(a, 0, sizeof(*a));
		return akk_err_set(e, "out of memory for augmentation");
	}
	return 0;
}

void akk_augment_release(struct akk_augment *a)
{
	free(a->tmp);
	free(a->col);
	memset(a, 0, sizeof(*a));
}

/* A shift in [-m, m]. */
static int shift(struct akk_rng *r, int m)
{
	return m > 0 ? (int)akk_rng_below(r, 2u * (uint32_t)m + 1) - m : 0;
}

static int clamp(int v, int hi)
{
	return v < 0 ? 0 : v > hi ? hi : v;
}

void akk_augment_sample(struct akk_augment *a, float *x, int epoch,
			size_t index)
{
	struct akk_rng r;
	int dy, dx, ty, tx, flip, H = a->h, W = a->w;
	size_t hw = (size_t)H * W;

	if (!a->on)
		return;
	akk_rng_seed(&r, a->seed + EPOCH_MIX * (uint64_t)(epoch + 1),
		     STREAM_BASE + index);
	dy = shift(&r, a->crop_padding);
	dx = shift(&r, a->crop_padding);
	ty = shift(&r, a->translate);
	tx = shift(&r, a->translate);
	flip = a->flip ? (int)(akk_rng_next(&r) >> 63) : 0;
	if (!dy && !dx && !ty && !tx && !flip)
		return;
	memcpy(a->tmp, x, (size_t)a->c * hw * sizeof(float));
	/* out(y, x) = in(clamp(y + ty) + dy, clamp(x' + tx) + dx), x' the
	 * flipped column; 0 outside the image */
	/* the source column of each output column, -1 outside */
	for (int xo = 0; xo < W; xo++) {
		int sx = clamp((flip ? W - 1 - xo : xo) + tx, W - 1) + dx;
		a->col[xo] = sx >= 0 && sx < W ? sx : -1;
	}
	for (int ch = 0; ch < a->c; ch++) {
		const float *in = a->tmp + (size_t)ch * hw;
		float *out = x + (size_t)ch * hw;
		for (int y = 0; y < H; y++) {
			int sy = clamp(y + ty, H - 1) + dy;
			float *o = out + (size_t)y * W;
			if (sy < 0 || sy >= H) {
				memset(o, 0, (size_t)W * sizeof(float));
				continue;
			}
			const float *row = in + (size_t)sy * W;
			for (int xo = 0; xo < W; xo++)
				o[xo] = a->col[xo] >= 0 ? row[a->col[xo]] : 0.0f;
		}
	}
}

void akk_augment_batch(struct akk_augment *a, float *x, int count,
		       const uint32_t *perm, size_t start, int epoch)
{
	size_t in = (size_t)a->c * a->h * a->w;

	if (!a->on)
		return;
	for (int j = 0; j < count; j++)
		akk_augment_sample(a, x + (size_t)j * in, epoch,
				   perm ? perm[start + (size_t)j] : start + (size_t)j);
}
