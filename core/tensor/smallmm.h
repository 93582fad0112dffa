/* smallmm.h - small matrix products read in place, for the convolutions.
 *
 * A convolution of a small image is a product of a few filters (up to
 * ~64) and the windows of a few hundred pixels. OpenBLAS packs both
 * operands on every such call, and the packing costs as much as the
 * product; these kernels read the operands where they are (the input's
 * windows through offset tables, akk_smm_ab_gather), in register blocks of
 * up to 6 rows by 16 columns (8-float vectors: AVX2 with FMA where the CPU has
 * both, the SSE2 baseline otherwise; akk_smm_isa says which).
 *
 * The arithmetic is fixed for a CPU: every output element is its start
 * value plus the products added one by one in k order (fused multiply-adds
 * in the AVX2 version, a multiply then an add in the baseline, so the two
 * differ in the last bits, as OpenBLAS's kernels do): the same bits on
 * every run and every thread of one machine. Nothing is read outside the
 * M x K and K x N operands, nothing allocated. */
#ifndef AKK_SMALLMM_H
#define AKK_SMALLMM_H

/* The rounding of n up to whole vectors (a row length that keeps the
 * next row aligned to the vector). */
static inline int akk_smm_pad(int n)
{
	return (n + 7) & ~7;
}

/* C (M x N, row stride ldc) = start + A B, where A's element (m, k) is
 * A[m * am + k * ak] (am = lda, ak = 1 for A; am = 1, ak = lda for A^T)
 * and B is K x N with row stride ldb. The start is C itself when add is 1
 * (C += A B), else bias[m] for row m, or 0 when bias is NULL. Only N
 * columns of C are read and written, only N of B's are read. */
void akk_smm_ab(float *C, int ldc, const float *A, long am, long ak,
		const float *B, int ldb, const float *bias, int add, int M,
		int N, int K);

/* akk_smm_ab (no bias) with A's element (m, k) at A[mo[m] + ko[k]]: a
 * matrix gathered in place, as a convolution reads its input (row m an
 * output pixel, column k a filter tap, or the other way round). With
 * split, where the columns fit one vector (N <= 8, and the last 8 or fewer
 * of wider ones) each element's sum runs as two chains, k even and k odd,
 * added together before an odd K's last k: twice the FMAs in flight where
 * a single chain waits on each FMA's latency (a convolution's weight
 * gradient for few filters: long K, 6 rows a block), rounded differently
 * from split 0, which sums each element in k order. */
void akk_smm_ab_gather(float *C, int ldc, const float *A, const int *mo,
		       const int *ko, const float *B, int ldb, int add, int M,
		       int N, int K, int split);

/* A convolution of stride 1 with the output pixels across the vector
 * lanes, for few filters (a gathered product would leave lanes empty):
 * Y's row f (F rows, ldy apart) holds the Ho x Wo outputs of filter f,
 * Y[f][oh Wo + ow] = start + sum over k of W[f K + k] X[oh wq + ow + ko[k]]
 * in k order, the start bias[f] (0 when bias is NULL). X is the (padded)
 * input with rows wq floats long, xn floats in all, nothing read outside
 * it; ko the taps' offsets in a window. The same arithmetic per output as
 * akk_smm_ab_gather's with the filters across the lanes, so the same bits. */
void akk_smm_conv_rows(float *Y, long ldy, const float *X, long xn,
		       const int *ko, const float *W, const float *bias, int F,
		       int K, int Ho, int Wo, int wq);

/* A stride-1 convolution's weight gradient with the output pixels across
 * the lanes, the transpose of akk_smm_conv_rows, for few filters:
 * C[k ldc + f] += sum over p < n of X[ko[k] + p] D[f ldd + p] for the K
 * taps k and the F filters f. D's rows are dy's, with its output rows wq
 * apart and zeros between them (n = (Ho - 1) wq + Wo), so that pixel p
 * reads the input at ko[k] + p; each sum runs in 8 lanes of partial sums
 * over the whole vectors of p, then across them, then over the last p
 * one at a time. Nothing is read past X[ko[k] + n) or a row of D's n
 * floats. */
void akk_smm_conv_rows_dw(float *C, int ldc, const float *X, const int *ko,
			  int K, const float *D, long ldd, int F, int n);

/* T = A^T between a product's layout and an image's: A is M x Np (row
 * stride lda; its rows M..Mp-1 count as zeros), and T's rows 0..N-1 (N <=
 * Np), columns 0..Mp-1 (row stride ldt) get A's columns 0..N-1. In blocks
 * of 8 x 8 in registers: the Np - N columns past N are read (they must be
 * there), never written. The values are moved, not computed. */
void akk_smm_transpose(float *T, int ldt, const float *A, int lda, int M,
		       int N, int Mp, int Np);

/* Which instructions the kernels use on this CPU: "avx2" or "sse2". */
const char *akk_smm_isa(void);

#endif
