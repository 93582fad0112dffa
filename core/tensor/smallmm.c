/* smallmm.c - small matrix products without packing (see smallmm.h).
 *
 * Each public function is compiled twice (GCC's target_clones): for AVX2
 * and for the x86-64 baseline, the loader picking one for the CPU. The
 * vectors are GCC's generic 8-float vectors, so both versions run the
 * same operations in the same order. */
#include "tensor/smallmm.h"

#include <string.h>

/* The 32-byte vectors never cross a call (every helper is inlined), so
 * the baseline version's ABI note does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8 __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

#define INLINE static inline __attribute__((always_inline))
/* Rows of C a block of akk_smm_ab keeps in registers: 4 rows of two
 * vectors, with the two rows of B, the broadcast and the product, fill 12
 * of AVX2's 16 registers (6 rows spill: no fused multiply-add here). */
#define MR 4

INLINE v8 ld(const float *p)
{
	v8 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The first n (1..8) lanes of v into p. */
INLINE void st(float *p, v8 v, int n)
{
	if (n == 8)
		memcpy(p, &v, sizeof(v));
	else
		for (int i = 0; i < n; i++)
			p[i] = v[i];
}

/* Rows [0, R) and columns [0, 8 NV) of C's block at (C, B): R and NV are
 * constants at every call, and the accumulators are named variables (an
 * array of them GCC keeps on the stack). ncols of the block's columns are
 * written. */
#define AB_INIT(r)							\
	v8 c##r##0 = (v8){ 0 } + (R > r && bias ? bias[r] : 0.0f);	\
	v8 c##r##1 = c##r##0;
#define AB_FMA(r)							\
	if (R > r) {							\
		float a = A[r * am + k * ak];				\
		c##r##0 += b0 * a;					\
		if (NV == 2)						\
			c##r##1 += b1 * a;				\
	}
#define AB_STORE(r)							\
	if (R > r) {							\
		float *c = C + (long)r * ldc;				\
		st(c, c##r##0, ncols < 8 ? ncols : 8);			\
		if (NV == 2)						\
			st(c + 8, c##r##1, ncols - 8);			\
	}

INLINE void ab_block(float *C, int ldc, const float *A, long am, long ak,
		     const float *B, int ldb, const float *bias, int K,
		     const int R, const int NV, int ncols)
{
	AB_INIT(0) AB_INIT(1) AB_INIT(2) AB_INIT(3)
	for (int k = 0; k < K; k++) {
		const float *b = B + (long)k * ldb;
		v8 b0 = ld(b), b1 = NV == 2 ? ld(b + 8) : b0;
		AB_FMA(0) AB_FMA(1) AB_FMA(2) AB_FMA(3)
	}
	AB_STORE(0) AB_STORE(1) AB_STORE(2) AB_STORE(3)
}

/* One strip of R rows across all N columns: 16 at a time, then 8. */
INLINE void ab_rows(float *C, int ldc, const float *A, long am, long ak,
		    const float *B, int ldb, const float *bias, int N, int K,
		    const int R)
{
	int j = 0;

	for (; j + 8 < N; j += 16)
		ab_block(C + j, ldc, A, am, ak, B + j, ldb, bias, K, R, 2,
			 N - j < 16 ? N - j : 16);
	if (j < N)
		ab_block(C + j, ldc, A, am, ak, B + j, ldb, bias, K, R, 1, N - j);
}

CLONES
void akk_smm_ab(float *C, int ldc, const float *A, long am, long ak,
		const float *B, int ldb, const float *bias, int M, int N, int K)
{
	int m = 0;

	for (; m + MR <= M; m += MR)
		ab_rows(C + (long)m * ldc, ldc, A + m * am, am, ak, B, ldb,
			bias ? bias + m : NULL, N, K, MR);
	C += (long)m * ldc;
	A += m * am;
	bias = bias ? bias + m : NULL;
	switch (M - m) {
	case 3: ab_rows(C, ldc, A, am, ak, B, ldb, bias, N, K, 3); break;
	case 2: ab_rows(C, ldc, A, am, ak, B, ldb, bias, N, K, 2); break;
	case 1: ab_rows(C, ldc, A, am, ak, B, ldb, bias, N, K, 1); break;
	default: break;
	}
}

/* The eight lanes of v, pairwise: lanes q and q + 4 first. */
INLINE float hsum(v8 v)
{
	float t[8];

	memcpy(t, &v, sizeof(v));
	return ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
}

/* C += A B^T in blocks of 3 rows of A by 4 rows of B; a block at the edge
 * reads its last row again in place of the missing ones and writes only
 * the rows that exist. */
CLONES
void akk_smm_abt(float *C, int ldc, const float *A, int lda, const float *B,
		 int ldb, int M, int N, int K)
{
	int Kp = akk_smm_pad(K);

	for (int m = 0; m < M; m += 3) {
		const float *a[3];
		for (int r = 0; r < 3; r++)
			a[r] = A + (long)(m + r < M ? m + r : M - 1) * lda;
		for (int n = 0; n < N; n += 4) {
			const float *b0, *b1, *b2, *b3;
			v8 c00 = { 0 }, c01 = c00, c02 = c00, c03 = c00;
			v8 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
			v8 c20 = c00, c21 = c00, c22 = c00, c23 = c00;
#define ROW_B(q) B + (long)(n + q < N ? n + q : N - 1) * ldb
			b0 = ROW_B(0), b1 = ROW_B(1), b2 = ROW_B(2), b3 = ROW_B(3);
#undef ROW_B
			for (int k = 0; k < Kp; k += 8) {
				v8 x0 = ld(a[0] + k), x1 = ld(a[1] + k),
				   x2 = ld(a[2] + k), y;
#define ABT_COL(q)							\
				y = ld(b##q + k);			\
				c0##q += x0 * y;			\
				c1##q += x1 * y;			\
				c2##q += x2 * y;
				ABT_COL(0) ABT_COL(1) ABT_COL(2) ABT_COL(3)
#undef ABT_COL
			}
			v8 acc[3][4] = { { c00, c01, c02, c03 },
					 { c10, c11, c12, c13 },
					 { c20, c21, c22, c23 } };
			for (int r = 0; r < 3 && m + r < M; r++)
				for (int q = 0; q < 4 && n + q < N; q++)
					C[(long)(m + r) * ldc + n + q] +=
						hsum(acc[r][q]);
		}
	}
}

const char *akk_smm_isa(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	return __builtin_cpu_supports("avx2") ? "avx2" : "sse2";
#else
	return "generic";
#endif
}
