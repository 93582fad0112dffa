/* rng.h - a small, fast, serialisable random number generator.
 *
 * xoshiro256** seeded through splitmix64. Every consumer (weight init, each
 * gate's dropout, each data provider's shuffle) owns its own struct akk_rng,
 * so runs are reproducible whatever the thread interleaving. The state is
 * four uint64 words and is stored verbatim in checkpoints. */
#ifndef AKK_RNG_H
#define AKK_RNG_H

#include <stdint.h>

struct akk_rng {
	uint64_t s[4];
};

/* Seed from a 64-bit seed and a stream number, so that one config seed gives
 * independent streams ("init", "gate 2 dropout", "train shuffle", ...). */
void akk_rng_seed(struct akk_rng *r, uint64_t seed, uint64_t stream);
uint64_t akk_rng_next(struct akk_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float akk_rng_uniform(struct akk_rng *r);
/* Standard normal (Box-Muller; uses two draws per call, no cached value). */
float akk_rng_normal(struct akk_rng *r);
/* Uniform integer in [0, n), unbiased (rejection). n > 0. */
uint32_t akk_rng_below(struct akk_rng *r, uint32_t n);

/* Stream numbers used across the engine. */
enum {
	AKK_STREAM_INIT = 1,		/* + gate index * 64 + layer index */
	AKK_STREAM_DROPOUT = 1 << 20,	/* + gate index */
	AKK_STREAM_SHUFFLE = 2 << 20,
	AKK_STREAM_GENERATE = 3 << 20,	/* akkctl generate's draws */
};

#endif
