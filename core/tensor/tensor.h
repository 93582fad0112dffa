/* tensor.h - float buffers, the BLAS wrapper and per-thread float mode.
 *
 * Buffers are plain float arrays, 64-byte aligned and zeroed, released with
 * akk_free. Shapes live beside them (struct akk_shape); a buffer never owns
 * its shape. All matrices are row-major. */
#ifndef AKK_TENSOR_H
#define AKK_TENSOR_H

#include <stddef.h>

/* Shape of one sample: rank 1 is [features] (or [T] token ids), rank 2 is
 * a sequence [T, F] (time-major: step t's F features are contiguous),
 * rank 3 is [C, H, W]. */
struct akk_shape {
	int rank;
	int d[3];
};

static inline long akk_shape_size(struct akk_shape s)
{
	long n = 1;
	for (int i = 0; i < s.rank; i++)
		n *= s.d[i];
	return n;
}

/* Whether a and b are the same shape. */
static inline int akk_shape_equal(struct akk_shape a, struct akk_shape b)
{
	if (a.rank != b.rank)
		return 0;
	for (int i = 0; i < a.rank; i++)
		if (a.d[i] != b.d[i])
			return 0;
	return 1;
}

/* The channels a per-channel normalisation and the pixel map see in a
 * sample of shape s: C of [C, H, W], each feature of [F], and one for a
 * sequence [T, F] (its values are normalised alike). */
static inline int akk_shape_channels(struct akk_shape s)
{
	return s.rank == 2 ? 1 : s.d[0];
}

/* Format "[784]" or "[1, 28, 28]" into buf. */
void akk_shape_format(struct akk_shape s, char *buf, int size);

/* n floats, 64-byte aligned, zeroed; NULL when out of memory. */
float *akk_alloc(size_t n);
void akk_free(void *p);

/* C = alpha * op(A) op(B) + beta * C, row-major; op(X) = X or X^T.
 * op(A) is M x K, op(B) is K x N, C is M x N. On the calling thread alone:
 * the kernel of akk_sgemm (pool.h), which layers call, and of each part of
 * a product it splits across a compute pool. Allocates nothing, whichever
 * kernels OpenBLAS picked for the CPU. */
void akk_sgemm_here(int trans_a, int trans_b, int M, int N, int K,
		    float alpha, const float *A, int lda, const float *B,
		    int ldb, float beta, float *C, int ldc);

/* Set flush-to-zero and denormals-are-zero on the calling thread. Every
 * compute thread calls it first. */
void akk_float_mode(void);
/* Number of threads OpenBLAS may use for one call (global to the process);
 * akkctl keeps it at 1 and parallelises through pool.h. At 1 it also stops
 * OpenBLAS's idle server threads (akk_blas_stop_idle). */
void akk_blas_threads(int n);
/* Stop OpenBLAS's server threads, which spin for their first 0.1 s after
 * it loads (and after each threaded call) before they sleep; OpenBLAS
 * starts them again for a call that may use more than one thread, so the
 * number of threads a call uses, and its bits, do not change. */
void akk_blas_stop_idle(void);
/* Number of cores the process may run on (its CPU affinity mask). */
int akk_cores(void);

#endif
