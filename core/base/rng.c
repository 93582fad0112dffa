/* rng.c - xoshiro256** (Blackman & Vigna) with splitmix64 seeding. */
#include "base/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void akk_rng_seed(struct akk_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t akk_rng_next(struct akk_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

float akk_rng_uniform(struct akk_rng *r)
{
	return (float)(akk_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

float akk_rng_normal(struct akk_rng *r)
{
	/* Box-Muller on (0,1] x [0,1): u1 never 0, so log is finite. */
	double u1 = ((double)(akk_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double u2 = (double)(akk_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);

	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t akk_rng_below(struct akk_rng *r, uint32_t n)
{
	/* Lemire's nearly-divisionless method. */
	uint64_t m = (uint64_t)(uint32_t)(akk_rng_next(r) >> 32) * n;
	uint32_t lo = (uint32_t)m;

	if (lo < n) {
		uint32_t t = -n % n;
		while (lo < t) {
			m = (uint64_t)(uint32_t)(akk_rng_next(r) >> 32) * n;
			lo = (uint32_t)m;
		}
	}
	return (uint32_t)(m >> 32);
}
