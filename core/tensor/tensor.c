/* tensor.c - aligned buffers, cblas wrapper, FTZ/DAZ. */
#include "tensor/tensor.h"

#include "tensor/gemm_xsmm.h"

#include <cblas.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

void akk_shape_format(struct akk_shape s, char *buf, int size)
{
	int n = snprintf(buf, size, "[");

	for (int i = 0; i < s.rank && n < size; i++)
		n += snprintf(buf + n, size - n, "%s%d", i ? ", " : "", s.d[i]);
	if (n < size)
		snprintf(buf + n, size - n, "]");
}

float *akk_alloc(size_t n)
{
	size_t bytes = (n ? n : 1) * sizeof(float);
	void *p;

	bytes = (bytes + 63) & ~(size_t)63;
	if (posix_memalign(&p, 64, bytes))
		return NULL;
	memset(p, 0, bytes);
	return p;
}

void akk_free(void *p)
{
	free(p);
}

/* OpenBLAS 0.3.21 on AVX-512 (its SkylakeX and Cooperlake kernels)
 * computes any product of at most 1e6 multiply-adds with small-
 * matrix kernels (sgemm_small_kernel_permit_skylakex.c; TN has further
 * limits). Of these only the column-major NN kernel allocates: it mallocs
 * a copy of the last M mod 16 rows of A when M mod 16 is 1..8 and K >= 32
 * (sgemm_small_kernel_nn_skylakex.c). cblas_sgemm RowMajor computes
 * C^T = B^T A^T column-major, so in row-major terms it is the case below;
 * checked shape by shape with an allocation counter on every kernel choice
 * (tests/test_alloc.c). Other kernels (Haswell, Zen...) never allocate. */
static int blas_would_allocate(int trans_a, int trans_b, int M, int N, int K)
{
	int r = N % 16;

	return !trans_a && !trans_b && K >= 32 && r >= 1 && r <= 8 &&
	       (double)M * N * K <= 1e6;
}

void akk_sgemm_openblas(int trans_a, int trans_b, int M, int N, int K,
			float alpha, const float *A, int lda, const float *B,
			int ldb, float beta, float *C, int ldc)
{
	if (blas_would_allocate(trans_a, trans_b, M, N, K)) {
		/* C = alpha A B + beta C as a sum over slices of K of at most
		 * 31: the same kernel's branch for K < 32, which copies nothing.
		 * (Splitting off only the last N mod 16 columns measured about
		 * the same on AVX-512 and 7-17% slower on Haswell.) */
		int parts = (K + 30) / 31, k0 = 0;

		for (int i = 0; i < parts; i++) {
			int k1 = (int)((long)K * (i + 1) / parts);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N,
				    k1 - k0, alpha, A + k0, lda, B + (size_t)k0 * ldb,
				    ldb, i ? 1.0f : beta, C, ldc);
			k0 = k1;
		}
		return;
	}
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
		    B, ldb, beta, C, ldc);
}

void akk_sgemm_here(int trans_a, int trans_b, int M, int N, int K,
		    float alpha, const float *A, int lda, const float *B,
		    int ldb, float beta, float *C, int ldc)
{
	if (!akk_xsmm_sgemm(1, trans_a, trans_b, M, N, K, alpha, A, lda, B,
			    ldb, beta, C, ldc))
		akk_sgemm_openblas(trans_a, trans_b, M, N, K, alpha, A, lda,
				   B, ldb, beta, C, ldc);
}

void akk_float_mode(void)
{
#if defined(__x86_64__) || defined(__i386__)
	_MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
	_MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

/* OpenBLAS starts a server thread per further core when it loads, and
 * each spins on sched_yield for about 2^28 cycles (0.1 s here) before it
 * sleeps: a core's worth of CPU taken from the run's first batches.
 * OpenBLAS starts them again by itself when a later call is given more
 * than one thread. Referenced weakly: an OpenBLAS without it keeps its
 * threads. */
int blas_thread_shutdown_(void) __attribute__((weak));

void akk_blas_stop_idle(void)
{
	if (blas_thread_shutdown_)
		blas_thread_shutdown_();
}

void akk_blas_threads(int n)
{
	openblas_set_num_threads(n < 1 ? 1 : n);
	if (n <= 1)	/* nothing for them to do */
		akk_blas_stop_idle();
}

int akk_cores(void)
{
	cpu_set_t set;
	long n;

	/* The cores this process may run on (taskset, cgroup cpusets), not
	 * every online core; sysconf only when the mask does not fit. */
	if (!sched_getaffinity(0, sizeof(set), &set))
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (int)n;
}
