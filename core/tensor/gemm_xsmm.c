/* gemm_xsmm.c - small products through libxsmm, chosen by shape.
 *
 * libxsmm 1.17 is column-major; a row-major C = op(A) op(B) is computed as
 * the column-major C^T = op(B)^T op(A)^T, so akk's trans_a becomes libxsmm's
 * TRANS_B (supported) and akk's trans_b its TRANS_A (not supported by the
 * 1.17 JIT: declined, OpenBLAS serves it). alpha must be 1, beta 0 or 1:
 * what every layer passes.
 *
 * Only `make XSMM=1` builds it; the default build declines every product
 * (AKK_XSMM undefined): the rule below gave no measurable gain end to end
 * on the shipped configs (README, Performance), so it is not the default.
 *
 * The rule (in_rule) comes from measurements on a 2-core AVX-512 Xeon
 * (libxsmm JITs for Cooper Lake; OpenBLAS picks its SkylakeX kernels).
 * `akkctl bench --gemm` (cli/bench_gemm.c), the shipped configs' 30
 * products, median of 7 interleaved rounds: libxsmm ran the products of 50
 * to 400 rows at 140-195 GFLOP/s where the SkylakeX kernels ran them at
 * 65-165 (1.0-2.9x), and it beat OpenBLAS's Haswell kernels on every
 * product (1.4-6x). Against the SkylakeX kernels it lost on TN products
 * with fewer than 32 rows of C (the 10- and 20-unit layers' dW, 0.71-1.0x)
 * or a short K (LeNet's conv2 dx, 150x100x16: 0.95-0.98x), and on the
 * smallest product, 64x20x10 NN (2^13.6 multiply-adds, 0.84-0.88x), where
 * its dispatch (a registry lookup per call) weighs. `akkctl bench
 * --layers` (best of 10, median of 7 interleaved rounds) showed tinynn's
 * first weight gradient, 400x784x128 TN (2^25.3), 3% slower through
 * libxsmm (0.68-1.3x in the product benchmark): so OpenBLAS above 2^24.
 * The rule: libxsmm for NN and TN products of 2^15 to 2^24 multiply-adds,
 * TN only with M >= 32 and K >= 32; OpenBLAS for the rest.
 *
 * libxsmm keeps its kernels in its own registry, created when the library
 * loads: the first product of a shape JIT-compiles its kernel into pages
 * libxsmm maps itself, a later one finds it by a lookup. Neither calls
 * malloc (counted in tests/test_alloc.c), so a training step allocates
 * nothing whichever library serves a product. */
#include "tensor/gemm_xsmm.h"

#include <cblas.h>
#include <stdio.h>
#include <string.h>

#ifdef AKK_XSMM
#include <libxsmm.h>

/* The products akk_sgemm_here gives libxsmm (measured: above). */
#define RULE_MIN_MNK (1L << 15)
#define RULE_MAX_MNK (1L << 24)
#define RULE_MIN_TN 32		/* TN: rows of C and K at least this */

static int in_rule(int trans_a, int M, int N, int K)
{
	long mnk = (long)M * N * K;

	return mnk >= RULE_MIN_MNK && mnk <= RULE_MAX_MNK &&
	       (!trans_a || (M >= RULE_MIN_TN && K >= RULE_MIN_TN));
}

int akk_xsmm_rule(int trans_a, int trans_b, int M, int N, int K,
		  float alpha, float beta)
{
	return !trans_b && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
	       M >= 1 && N >= 1 && K >= 1 && in_rule(trans_a, M, N, K);
}

int akk_xsmm_sgemm(int rule, int trans_a, int trans_b, int M, int N, int K,
		   float alpha, const float *A, int lda, const float *B,
		   int ldb, float beta, float *C, int ldc)
{
	libxsmm_blasint m = N, n = M, k = K, la = ldb, lb = lda, lc = ldc;
	int flags = trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
	libxsmm_smmfunction f;

	if (trans_b || alpha != 1.0f || (beta != 0.0f && beta != 1.0f) ||
	    M < 1 || N < 1 || K < 1 || (rule && !in_rule(trans_a, M, N, K)))
		return 0;
	/* column-major: C^T (N x M) = op(B)^T (N x K) op(A)^T (K x M) */
	f = libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &alpha, &beta, &flags, NULL);
	if (!f)
		return 0;
	f(B, A, C);
	return 1;
}
#else
int akk_xsmm_rule(int trans_a, int trans_b, int M, int N, int K,
		  float alpha, float beta)
{
	(void)trans_a, (void)trans_b, (void)M, (void)N, (void)K;
	(void)alpha, (void)beta;
	return 0;
}

int akk_xsmm_sgemm(int rule, int trans_a, int trans_b, int M, int N, int K,
		   float alpha, const float *A, int lda, const float *B,
		   int ldb, float beta, float *C, int ldc)
{
	(void)rule, (void)trans_a, (void)trans_b, (void)M, (void)N, (void)K;
	(void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
	(void)C, (void)ldc;
	return 0;
}
#endif

void akk_gemm_library(char *buf, int size, const struct akk_kernels *k)
{
	const char *v = OPENBLAS_VERSION;	/* " OpenBLAS 0.3.21 " */
	char blas[640];
	int n;

	while (*v == ' ')
		v++;
	for (n = (int)strlen(v); n > 0 && v[n - 1] == ' '; n--)
		;
	if (k)
		akk_kernels_describe(k, blas, sizeof(blas));
	else
		snprintf(blas, sizeof(blas), "%.*s (%s kernels)", n, v, openblas_get_corename());
#ifdef AKK_XSMM
	snprintf(buf, size, "%s + libxsmm %d.%d (%s)", blas, LIBXSMM_VERSION_MAJOR,
		 LIBXSMM_VERSION_MINOR, libxsmm_get_target_arch());
#else
	snprintf(buf, size, "%s", blas);
#endif
}
