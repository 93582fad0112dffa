/* gemm_xsmm.h - the libxsmm path of akk_sgemm_here (for tensor.c, and for
 * the benchmark and the tests that compare the two libraries).
 *
 * libxsmm JIT-compiles a kernel per product shape; akk_sgemm_here offers
 * each product here first and falls back to OpenBLAS when it is declined.
 * Built only with `make XSMM=1`; in the default build (XSMM=0) every
 * product is declined. */
#ifndef AKK_GEMM_XSMM_H
#define AKK_GEMM_XSMM_H

#include "tensor/kernels.h"

/* C = alpha op(A) op(B) + beta C, row-major, as akk_sgemm_here. Computes
 * it with libxsmm and returns 1, or returns 0 and touches nothing: when
 * libxsmm 1.17 cannot (trans_b: its TRANS_A in column-major terms; alpha
 * other than 1; beta other than 0 or 1), or when `rule` is set and the
 * shape is outside the measured rule (gemm_xsmm.c). rule 0 is for the
 * benchmark and the tests: every product libxsmm can do. The first
 * product of a shape JIT-compiles its kernel, later ones look it up in
 * libxsmm's registry; neither calls malloc. Thread-safe. */
int akk_xsmm_sgemm(int rule, int trans_a, int trans_b, int M, int N, int K,
		   float alpha, const float *A, int lda, const float *B,
		   int ldb, float beta, float *C, int ldc);

/* 1 when akk_sgemm_here gives this product to libxsmm (the rule, and
 * what libxsmm 1.17 can do), 0 when OpenBLAS serves it. */
int akk_xsmm_rule(int trans_a, int trans_b, int M, int N, int K,
		  float alpha, float beta);

/* The OpenBLAS path of akk_sgemm_here (tensor.c), whatever the shape: for
 * the benchmark and the tests that compare the two. */
void akk_sgemm_openblas(int trans_a, int trans_b, int M, int N, int K,
			float alpha, const float *A, int lda, const float *B,
			int ldb, float beta, float *C, int ldc);

/* Write into buf which library serves akk_sgemm_here: "OpenBLAS 0.3.21
 * (SkylakeX kernels) + libxsmm 1.17 (cpx)", or the OpenBLAS part alone in
 * a build without libxsmm; with k, the OpenBLAS part says why those
 * kernels run (akk_kernels_describe). */
void akk_gemm_library(char *buf, int size, const struct akk_kernels *k);

#endif
