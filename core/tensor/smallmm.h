/* smallmm.h - small matrix products read in place, for the convolutions.
 *
 * A convolution of a small image multiplies a few filters (M <= ~64) by an
 * unrolled input of a few hundred columns. OpenBLAS packs both operands on
 * every such call, and the packing costs as much as the product; these
 * kernels read the operands where they are, in register blocks of 6 rows
 * by 16 columns (8-float vectors: AVX2 where the CPU has it, chosen once
 * when the program loads, SSE otherwise).
 *
 * The arithmetic is fixed: every output element is its start value plus
 * the products added one by one in k order, each a multiply then an add
 * (no fused multiply-add), so the AVX2 and SSE versions give the same bits
 * and so does every run. The dot product of akk_smm_abt sums eight lanes
 * and adds them pairwise at the end, in a fixed order too.
 *
 * Rows of the B operand (and of A in akk_smm_abt) are read in whole
 * vectors: N (K in akk_smm_abt) rounded up to a multiple of 8 floats must
 * be readable, and the padding must hold zeros where it is summed. */
#ifndef AKK_SMALLMM_H
#define AKK_SMALLMM_H

/* The rounding of n up to whole vectors: the row length the padded
 * operands need. */
static inline int akk_smm_pad(int n)
{
	return (n + 7) & ~7;
}

/* C (M x N, row stride ldc) = bias + A B, where A's element (m, k) is
 * A[m * am + k * ak] (am = lda, ak = 1 for A; am = 1, ak = lda for A^T),
 * B is K x N with row stride ldb, and bias is M values (row m starts at
 * bias[m]) or NULL (starts at 0). Only N columns of C are written. */
void akk_smm_ab(float *C, int ldc, const float *A, long am, long ak,
		const float *B, int ldb, const float *bias, int M, int N, int K);

/* C (M x N, row stride ldc) += A B^T, A M x K (row stride lda), B N x K
 * (row stride ldb): C[m][n] += dot(A row m, B row n) over K, both rows
 * zero-padded to akk_smm_pad(K). */
void akk_smm_abt(float *C, int ldc, const float *A, int lda, const float *B,
		 int ldb, int M, int N, int K);

/* Which instructions the kernels use on this CPU: "avx2" or "sse2". */
const char *akk_smm_isa(void);

#endif
