/* batch.c - filling batches: shuffling and the input map. */
#include "data/batch.h"

#include <string.h>

#include "base/checked.h"
#include "base/rng.h"
#include "tensor/tensor.h"

int akk_batch_alloc(struct akk_batch *b, int max_batch, size_t in,
		    int outputs, int steps)
{
	size_t nx, nd, nl;

	memset(b, 0, sizeof(*b));
	if (max_batch < 1 || outputs < 1 || steps < 1 ||
	    !akk_mul_ok(in, (size_t)max_batch, &nx) ||
	    !akk_mul_ok((size_t)outputs, (size_t)max_batch, &nd) ||
	    !akk_mul_ok((size_t)steps, (size_t)max_batch, &nl))
		return -1;
	b->steps = steps;
	b->x = akk_alloc(nx);
	/* int32 labels in a float-sized, aligned block */
	b->labels = (int32_t *)akk_alloc(nl);
	b->dlogits = akk_alloc(nd);
	b->targets = akk_alloc(nd);
	if (!b->x || !b->labels || !b->dlogits || !b->targets) {
		akk_batch_release(b);
		return -1;
	}
	return 0;
}

void akk_batch_release(struct akk_batch *b)
{
	akk_free(b->x);
	akk_free(b->labels);
	akk_free(b->dlogits);
	akk_free(b->targets);
	memset(b, 0, sizeof(*b));
}

long akk_batches_per_epoch(size_t n, int bs)
{
	return (long)((n + bs - 1) / bs);
}

void akk_shuffle(uint32_t *perm, size_t n, uint64_t seed, int epoch)
{
	struct akk_rng r;

	akk_rng_seed(&r, seed, AKK_STREAM_SHUFFLE + (uint64_t)epoch);
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		uint32_t j = akk_rng_below(&r, (uint32_t)(i + 1));
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

void akk_streams_order(uint32_t *perm, size_t n, int bs)
{
	size_t P = (n + (size_t)bs - 1) / (size_t)bs, L = n - (P - 1) * (size_t)bs;

	for (size_t b = 0; b < (size_t)bs && b < n; b++) {
		size_t start = b * P - (b > L ? b - L : 0), len = b < L ? P : P - 1;
		for (size_t k = 0; k < len; k++)
			perm[k * bs + b] = (uint32_t)(start + k);
	}
}

void akk_train_order(uint32_t *perm, size_t n, enum akk_order order, int bs,
		     uint64_t seed, int epoch)
{
	if (order == AKK_ORDER_STREAMS)
		akk_streams_order(perm, n, bs);
	else
		akk_shuffle(perm, n, seed, epoch);
}

/* A shuffled epoch reads its samples from random places, each a cache
 * miss the hardware prefetcher cannot foresee. So the fill asks for them
 * ahead: the sample L2_AHEAD on into the second-level cache, whose queue
 * of misses is the longer, and the one L1_AHEAD on into the first, while
 * it converts one (the seed's net: 8 and 2 took 0.986x the time of 2
 * alone; 16 instead of 8, or 4 instead of 2, changed nothing). */
enum { L1_AHEAD = 2, L2_AHEAD = 8 };

/* The bytes of the sample at place j of the batch's order. */
static inline const char *sample_at(const struct akk_dataset *d, const uint32_t *perm,
				    size_t start, int j)
{
	size_t n = perm ? perm[start + j] : start + j;

	return d->xtype == AKK_X_U8 ? (const char *)(d->x8 + n * d->in) :
				      (const char *)(d->xf + n * d->in);
}

/* The labels or targets of the batch's samples. In a loop of their own
 * their loads are independent and overlap: in the loop of the inputs
 * each waited for its own miss behind a sample's conversion, and the
 * label loads took most of the fill (the seed's net: this order took
 * 0.98x the time of the one loop, 9 interleaved pairs). */
static void fill_targets(struct akk_batch *b, const struct akk_dataset *d,
			 const uint32_t *perm, size_t start, int count)
{
	size_t L = (size_t)b->steps;

	for (int j = 0; j < count; j++) {
		size_t s = perm ? perm[start + j] : start + j;

		for (size_t t = 0; t < L; t++)
			b->labels[j * L + t] = d->labels ? d->labels[s * L + t] : 0;
		/* regression: the sample's targets (the run checked that
		 * they are as many as the network's outputs) */
		if (b->tmap)
			akk_target_map_fill(b->tmap, b->targets + (size_t)j * b->tmap->stride,
					    d, s);
		else if (d->y)
			memcpy(b->targets + (size_t)j * d->targets,
			       d->y + s * (size_t)d->targets,
			       (size_t)d->targets * sizeof(float));
	}
}

/* The batch's inputs, converted by pre, with the prefetches above. */
static void fill_inputs(struct akk_batch *b, const struct akk_dataset *d,
			const uint32_t *perm, size_t start, int count,
			const struct akk_preprocess *pre)
{
	size_t item = d->in;
	size_t bytes = item * (d->xtype == AKK_X_U8 ? 1 : sizeof(float));

	for (int j = 0; j < count; j++) {
		size_t s = perm ? perm[start + j] : start + j;
		float *x = b->x + (size_t)j * item;

		/* the prefetches are written here: as a function of their
		 * own, GCC took the loop of them for a pure call and dropped
		 * it */
		if (j + L2_AHEAD < count) {
			const char *p = sample_at(d, perm, start, j + L2_AHEAD);

			for (size_t o = 0; o < bytes; o += 64)
				__builtin_prefetch(p + o, 0, 1);
		}
		if (j + L1_AHEAD < count) {
			const char *p = sample_at(d, perm, start, j + L1_AHEAD);

			for (size_t o = 0; o < bytes; o += 64)
				__builtin_prefetch(p + o);
		}

		if (d->xtype == AKK_X_U8)
			akk_preprocess_u8(x, d->x8 + s * item, pre);
		else
			akk_preprocess_f32(x, d->xf + s * item, pre);
	}
}

void akk_batch_fill_range(struct akk_batch *b, const struct akk_dataset *d,
			  const uint32_t *perm, size_t start, int count,
			  int last, const struct akk_preprocess *pre)
{
	fill_targets(b, d, perm, start, count);
	fill_inputs(b, d, perm, start, count, pre);
	b->B = count;
	b->last = last;
}

void akk_batch_fill(struct akk_batch *b, const struct akk_dataset *d,
		    const uint32_t *perm, long index, int bs,
		    const struct akk_preprocess *pre)
{
	size_t start = (size_t)index * bs;
	int B = start + bs <= d->n ? bs : (int)(d->n - start);

	akk_batch_fill_range(b, d, perm, start, B, start + B >= d->n, pre);
	b->index = index;
}
