/* checked.h - overflow-safe size arithmetic, and the limits on sizes.
 *
 * Every size, shape and count computed from untrusted input (a config, a
 * data file, a checkpoint) goes through these: each returns 1 and stores the
 * result when it fits, 0 (leaving *out alone) when it overflows, so a
 * caller can report the overflow instead of allocating a wrapped-around
 * size. The limits are documented in akkctl(5), LIMITS. */
#ifndef AKK_CHECKED_H
#define AKK_CHECKED_H

#include <limits.h>
#include <stddef.h>

/* A tensor dimension, and the elements of one sample's tensor (a layer's
 * output, its kept values or its scratch): at most INT_MAX, since kernels
 * and BLAS index them with int. */
#define AKK_MAX_DIM ((size_t)INT_MAX)
/* Parameters (and, separately, running state) of the whole network, and a
 * gate's activations or kept values per sample: at most 2^31 floats. */
#define AKK_MAX_FLOATS ((size_t)1 << 31)

static inline int akk_mul_ok(size_t a, size_t b, size_t *out)
{
	size_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return 0;
	*out = r;
	return 1;
}

static inline int akk_add_ok(size_t a, size_t b, size_t *out)
{
	size_t r;

	if (__builtin_add_overflow(a, b, &r))
		return 0;
	*out = r;
	return 1;
}

/* a * b * c */
static inline int akk_mul3_ok(size_t a, size_t b, size_t c, size_t *out)
{
	size_t ab;

	return akk_mul_ok(a, b, &ab) && akk_mul_ok(ab, c, out);
}

/* a * b + c, as a parameter count (weights plus bias) is */
static inline int akk_muladd_ok(size_t a, size_t b, size_t c, size_t *out)
{
	size_t ab;

	return akk_mul_ok(a, b, &ab) && akk_add_ok(ab, c, out);
}

/* *acc += v, only when the sum stays at most max. */
static inline int akk_add_max(size_t *acc, size_t v, size_t max)
{
	size_t r;

	if (!akk_add_ok(*acc, v, &r) || r > max)
		return 0;
	*acc = r;
	return 1;
}

#endif
