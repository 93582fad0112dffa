/* tensor.c - aligned buffers, cblas wrapper, FTZ/DAZ. */
#include "tensor.h"
#include "pool.h"

#include <cblas.h>
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

void akk_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha,
	       const float *A, int lda, const float *B, int ldb, float beta,
	       float *C, int ldc)
{
	if (!akk_pool_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb,
			    beta, C, ldc))
		return;
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
		    B, ldb, beta, C, ldc);
}

void akk_float_mode(void)
{
#if defined(__x86_64__) || defined(__i386__)
	_MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
	_MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

void akk_blas_threads(int n)
{
	openblas_set_num_threads(n < 1 ? 1 : n);
}

int akk_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (int)n;
}
