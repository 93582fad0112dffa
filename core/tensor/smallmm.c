/* smallmm.c - small matrix products without packing (see smallmm.h).
 *
 * Each public function has two bodies from one inline source: one
 * compiled for AVX2 with FMA, one for the x86-64 baseline, and picks by
 * what the CPU has (__builtin_cpu_supports, a test of a word the runtime
 * filled when the program loaded; a build with -DAKK_BASELINE has the
 * baseline alone, see base/clones.h). The vectors are GCC's generic 8-float
 * vectors. The Makefile compiles this file with -ffp-contract=fast: in the
 * AVX2 body a multiply and the add after it become one FMA. */
#include "tensor/smallmm.h"

#include <stddef.h>

/* The 32-byte vectors never cross a call (every helper is inlined), so
 * the baseline body's ABI note does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8 __attribute__((vector_size(32)));
/* The same vector at any float's address, for loads and stores. */
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AKK_BASELINE)
#define HAVE_AVX2 1
#define AVX2 __attribute__((target("avx2,fma")))
static int avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#define HAVE_AVX2 0
#endif

#define INLINE static inline __attribute__((always_inline))
/* Rows of C a block of akk_smm_ab keeps in registers at most: 6 rows of
 * two vectors, with the two rows of B and the broadcast, fill 15 of AVX2's
 * 16 registers; the baseline's 16 half-width registers take 2 rows. */
#define MR 6

INLINE v8 ld(const float *p)
{
	return *(const v8u *)p;
}

/* n (1..8) floats from p, the other lanes 0. */
INLINE v8 ldn(const float *p, int n)
{
	v8 v = { 0 };

	if (n == 8)
		return ld(p);
	for (int i = 0; i < n; i++)
		v[i] = p[i];
	return v;
}

/* The first n (1..8) lanes of v into p. */
INLINE void st(float *p, v8 v, int n)
{
	if (n == 8)
		*(v8u *)p = v;
	else
		for (int i = 0; i < n; i++)
			p[i] = v[i];
}

/* Rows [0, R) and columns [0, 8 NV) of C's block at (C, B): R, NV and P
 * are constants at every call, and the accumulators are named variables
 * (an array of them GCC keeps on the stack). ncols of the block's columns
 * are read and written: all 8 NV unless P (a partial block at the end).
 * G: 0 A plain, 1 gathered (mo, ko), 2 gathered with the sums split
 * (akk_smm_ab_gather). */
#define AB_INIT(r)							\
	v8 c##r##0 = (v8){ 0 } + (R > r && bias ? bias[r] : 0.0f);	\
	v8 c##r##1 = c##r##0;						\
	if (R > r && add) {						\
		c##r##0 = ldn(C + (long)r * ldc, ncols < 8 ? ncols : 8); \
		if (NV == 2)						\
			c##r##1 = ldn(C + (long)r * ldc + 8, ncols - 8); \
	}
#define AB_ROW(r)							\
	const float *a##r = G ? A + (R > r ? mo[r] : 0) : A + r * am;
#define AB_FMA(r)							\
	if (R > r) {							\
		float a = G ? a##r[ko[k]] : a##r[k * ak];		\
		c##r##0 += b0 * a;					\
		if (NV == 2)						\
			c##r##1 += b1 * a;				\
	}
/* G 2 (split), one vector of columns: k even into c, k odd into e. */
#define AB_FMA2(r)							\
	if (R > r) {							\
		c##r##0 += b0 * a##r[ko[k]];				\
		e##r += b1 * a##r[ko[k + 1]];				\
	}
#define AB_STORE(r)							\
	if (R > r) {							\
		float *c = C + (long)r * ldc;				\
		st(c, c##r##0, ncols < 8 ? ncols : 8);			\
		if (NV == 2)						\
			st(c + 8, c##r##1, ncols - 8);			\
	}

INLINE void ab_block(float *C, int ldc, const float *A, long am, long ak,
		     const int *mo, const int *ko, const int G,
		     const float *B, int ldb, const float *bias, int add,
		     int K, const int R, const int NV, const int P, int ncols)
{
	AB_INIT(0) AB_INIT(1) AB_INIT(2) AB_INIT(3) AB_INIT(4) AB_INIT(5)
	AB_ROW(0) AB_ROW(1) AB_ROW(2) AB_ROW(3) AB_ROW(4) AB_ROW(5)
	int k = 0;

	if (G == 2 && NV == 1) {
		/* two chains a row, joined at the end (akk_smm_ab_gather's
		 * split): one would wait on each FMA's latency */
		v8 e0 = { 0 }, e1 = { 0 }, e2 = { 0 }, e3 = { 0 }, e4 = { 0 }, e5 = { 0 };
		for (; k + 2 <= K; k += 2) {
			const float *b = B + (long)k * ldb;
			v8 b0 = P ? ldn(b, ncols) : ld(b);
			v8 b1 = P ? ldn(b + ldb, ncols) : ld(b + ldb);
			AB_FMA2(0) AB_FMA2(1) AB_FMA2(2) AB_FMA2(3) AB_FMA2(4) AB_FMA2(5)
		}
		c00 += e0, c10 += e1, c20 += e2, c30 += e3, c40 += e4, c50 += e5;
	}	/* an odd K's last k: below */
	for (; k < K; k++) {
		const float *b = B + (long)k * ldb;
		v8 b0 = P && NV == 1 ? ldn(b, ncols) : ld(b);
		v8 b1 = NV == 1 ? b0 : P ? ldn(b + 8, ncols - 8) : ld(b + 8);
		AB_FMA(0) AB_FMA(1) AB_FMA(2) AB_FMA(3) AB_FMA(4) AB_FMA(5)
	}
	AB_STORE(0) AB_STORE(1) AB_STORE(2) AB_STORE(3) AB_STORE(4) AB_STORE(5)
}

/* One strip of R rows across all N columns: 16 at a time, then 8. */
INLINE void ab_rows(float *C, int ldc, const float *A, long am, long ak,
		    const int *mo, const int *ko, const int G,
		    const float *B, int ldb, const float *bias, int add, int N,
		    int K, const int R)
{
	int j = 0, n;

	for (; j + 16 <= N; j += 16)
		ab_block(C + j, ldc, A, am, ak, mo, ko, G, B + j, ldb, bias, add, K, R, 2,
			 0, 16);
	C += j, B += j, n = N - j;
	if (n > 8)
		ab_block(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, K, R, 2, 1, n);
	else if (n == 8)
		ab_block(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, K, R, 1, 0, n);
	else if (n > 0)
		ab_block(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, K, R, 1, 1, n);
}

/* akk_smm_ab in strips of mr rows (6 or 2), then the rows left. */
INLINE void ab_all(float *C, int ldc, const float *A, long am, long ak,
		   const int *mo, const int *ko, const int G,
		   const float *B, int ldb, const float *bias, int add, int M,
		   int N, int K, const int mr)
{
	int m = 0;

	for (; m + mr <= M; m += mr)
		ab_rows(C + (long)m * ldc, ldc, G ? A : A + m * am, am, ak,
			G ? mo + m : mo, ko, G, B, ldb,
			bias ? bias + m : NULL, add, N, K, mr);
	C += (long)m * ldc;
	if (G)
		mo += m;
	else
		A += m * am;
	bias = bias ? bias + m : NULL;
	switch (M - m) {
	case 5: ab_rows(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, N, K, 5); break;
	case 4: ab_rows(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, N, K, 4); break;
	case 3: ab_rows(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, N, K, 3); break;
	case 2: ab_rows(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, N, K, 2); break;
	case 1: ab_rows(C, ldc, A, am, ak, mo, ko, G, B, ldb, bias, add, N, K, 1); break;
	default: break;
	}
}

/* Filters [0, NF) of a block of NV vectors of output pixels in one row,
 * starting at window x (n of its 8 NV pixels are outputs; a partial block,
 * P, loads a vector that would pass the input's end lane by lane). NF and
 * NV are constants at every call; the accumulators are named variables. */
#define CR_INIT(f)							\
	v8 c##f##0 = (v8){ 0 } + (NF > f && bias ? bias[f] : 0.0f);	\
	v8 c##f##1 = c##f##0;
#define CR_FMA(f)							\
	if (NF > f) {							\
		float w = W[(long)(f) * K + k];				\
		c##f##0 += x0 * w;					\
		if (NV == 2)						\
			c##f##1 += x1 * w;				\
	}
#define CR_STORE(f)							\
	if (NF > f) {							\
		st(Y + (f) * ldy, c##f##0, n < 8 ? n : 8);		\
		if (NV == 2)						\
			st(Y + (f) * ldy + 8, c##f##1, n - 8);		\
	}

/* A vector of input at p: whole, unless it is a partial block's (P) and
 * would pass end, then its n (1..8) floats lane by lane, the rest 0. */
INLINE v8 ld_in(const float *p, const float *end, int n, const int P)
{
	return P && p + 8 > end ? ldn(p, n < 8 ? n : 8) : ld(p);
}

INLINE void cr_block(float *Y, long ldy, const float *x, const float *end,
		     const int *ko, const float *W, const float *bias, int K,
		     const int NF, const int NV, const int P, int n)
{
	CR_INIT(0) CR_INIT(1) CR_INIT(2) CR_INIT(3) CR_INIT(4) CR_INIT(5)
	for (int k = 0; k < K; k++) {
		const float *xk = x + ko[k];
		v8 x0 = ld_in(xk, end, NV == 1 ? n : 8, P && NV == 1);
		v8 x1 = NV == 2 ? ld_in(xk + 8, end, n - 8, P) : x0;
		CR_FMA(0) CR_FMA(1) CR_FMA(2) CR_FMA(3) CR_FMA(4) CR_FMA(5)
	}
	CR_STORE(0) CR_STORE(1) CR_STORE(2) CR_STORE(3) CR_STORE(4) CR_STORE(5)
}

/* NF filters over every output row: 16 pixels at a time, then the rest. */
INLINE void cr_filters(float *Y, long ldy, const float *X, const float *end,
		       const int *ko, const float *W, const float *bias, int K,
		       int Ho, int Wo, int wq, const int NF)
{
	for (int oh = 0; oh < Ho; oh++) {
		float *y = Y + (long)oh * Wo;
		const float *x = X + (long)oh * wq;
		int ow = 0, n;

		for (; ow + 16 <= Wo; ow += 16)
			cr_block(y + ow, ldy, x + ow, end, ko, W, bias, K, NF, 2, 0, 16);
		n = Wo - ow;
		if (n > 8)
			cr_block(y + ow, ldy, x + ow, end, ko, W, bias, K, NF, 2, 1, n);
		else if (n == 8)
			cr_block(y + ow, ldy, x + ow, end, ko, W, bias, K, NF, 1, 0, 8);
		else if (n > 0)
			cr_block(y + ow, ldy, x + ow, end, ko, W, bias, K, NF, 1, 1, n);
	}
}

/* Every filter in groups of nf (6, or 2 for the baseline's registers),
 * then the ones left. */
INLINE void cr_all(float *Y, long ldy, const float *X, long xn, const int *ko,
		   const float *W, const float *bias, int F, int K, int Ho,
		   int Wo, int wq, const int nf)
{
	const float *end = X + xn;
	int f = 0;

	for (; f + nf <= F; f += nf)
		cr_filters(Y + f * ldy, ldy, X, end, ko, W + (long)f * K,
			   bias ? bias + f : NULL, K, Ho, Wo, wq, nf);
	Y += f * ldy, W += (long)f * K, bias = bias ? bias + f : NULL;
	switch (F - f) {
	case 5: cr_filters(Y, ldy, X, end, ko, W, bias, K, Ho, Wo, wq, 5); break;
	case 4: cr_filters(Y, ldy, X, end, ko, W, bias, K, Ho, Wo, wq, 4); break;
	case 3: cr_filters(Y, ldy, X, end, ko, W, bias, K, Ho, Wo, wq, 3); break;
	case 2: cr_filters(Y, ldy, X, end, ko, W, bias, K, Ho, Wo, wq, 2); break;
	case 1: cr_filters(Y, ldy, X, end, ko, W, bias, K, Ho, Wo, wq, 1); break;
	default: break;
	}
}

#if HAVE_AVX2
AVX2 static void cr_avx2(float *Y, long ldy, const float *X, long xn,
			 const int *ko, const float *W, const float *bias,
			 int F, int K, int Ho, int Wo, int wq)
{
	cr_all(Y, ldy, X, xn, ko, W, bias, F, K, Ho, Wo, wq, MR);
}
#endif

void akk_smm_conv_rows(float *Y, long ldy, const float *X, long xn,
		       const int *ko, const float *W, const float *bias, int F,
		       int K, int Ho, int Wo, int wq)
{
#if HAVE_AVX2
	if (avx2()) {
		cr_avx2(Y, ldy, X, xn, ko, W, bias, F, K, Ho, Wo, wq);
		return;
	}
#endif
	cr_all(Y, ldy, X, xn, ko, W, bias, F, K, Ho, Wo, wq, 2);
}

/* The sum of v's lanes, in one fixed order. */
INLINE float hsum(v8 v)
{
	v = v + __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3);
	v = v + __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5);
	v = v + __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6);
	return v[0];
}

/* s plus the products x[p] d[p] from p to n, one at a time: fused
 * multiply-adds in the AVX2 body (FMA 1), products then sums in the
 * baseline's, whatever GCC would contract (it did in some blocks and
 * not in others). */
INLINE float tail(float s, const float *x, const float *d, int p, int n,
		  const int FMA)
{
	for (; p < n; p++)
		s = FMA ? __builtin_fmaf(x[p], d[p], s) : s + x[p] * d[p];
	return s;
}

/* Taps [0, T) and filters [0, NF) of akk_smm_conv_rows_dw: T and NF are
 * constants at every call, each of their sums a named vector of partial
 * sums over the whole vectors of pixels, added across its lanes, then
 * the last pixels (fewer than 8) one at a time: nothing past X's or D's
 * n floats is read, and no vector is put together lane by lane (a store
 * the load after it cannot forward from). */
#define CD_INIT(f) v8 d##f##0 = { 0 }, d##f##1 = { 0 };
#define CD_FMA(f)							\
	if (NF > f) {							\
		v8 y = ld(D + (f) * ldd + p);				\
		d##f##0 += x0 * y;					\
		if (T == 2)						\
			d##f##1 += x1 * y;				\
	}
#define CD_STORE(f)							\
	if (NF > f) {							\
		C[f] += tail(hsum(d##f##0), x0p, D + (f) * ldd, p, n, FMA);	\
		if (T == 2)						\
			C[ldc + f] += tail(hsum(d##f##1), x1p, D + (f) * ldd, p, n, FMA); \
	}

INLINE void cd_block(float *C, int ldc, const float *X, const int *ko,
		     const float *D, long ldd, int n, const int T, const int NF,
		     const int FMA)
{
	const float *x0p = X + ko[0], *x1p = X + ko[T - 1];
	int p = 0;

	CD_INIT(0) CD_INIT(1) CD_INIT(2) CD_INIT(3) CD_INIT(4) CD_INIT(5)
	for (; p + 8 <= n; p += 8) {
		v8 x0 = ld(x0p + p), x1 = T == 2 ? ld(x1p + p) : x0;
		CD_FMA(0) CD_FMA(1) CD_FMA(2) CD_FMA(3) CD_FMA(4) CD_FMA(5)
	}
	CD_STORE(0) CD_STORE(1) CD_STORE(2) CD_STORE(3) CD_STORE(4) CD_STORE(5)
}

/* NF filters: the taps two at a time, then an odd K's last. */
INLINE void cd_taps(float *C, int ldc, const float *X, const int *ko, int K,
		    const float *D, long ldd, int n, const int NF, const int FMA)
{
	int k = 0;

	for (; k + 2 <= K; k += 2)
		cd_block(C + (long)k * ldc, ldc, X, ko + k, D, ldd, n, 2, NF, FMA);
	if (k < K)
		cd_block(C + (long)k * ldc, ldc, X, ko + k, D, ldd, n, 1, NF, FMA);
}

/* akk_smm_conv_rows_dw: the filters in groups of nf (6, or 2 for the
 * baseline's registers), then the ones left. */
INLINE void cd_all(float *C, int ldc, const float *X, const int *ko, int K,
		   const float *D, long ldd, int F, int n, const int nf,
		   const int FMA)
{
	int f = 0;

	for (; f + nf <= F; f += nf)
		cd_taps(C + f, ldc, X, ko, K, D + f * ldd, ldd, n, nf, FMA);
	C += f, D += f * ldd;
	switch (F - f) {
	case 5: cd_taps(C, ldc, X, ko, K, D, ldd, n, 5, FMA); break;
	case 4: cd_taps(C, ldc, X, ko, K, D, ldd, n, 4, FMA); break;
	case 3: cd_taps(C, ldc, X, ko, K, D, ldd, n, 3, FMA); break;
	case 2: cd_taps(C, ldc, X, ko, K, D, ldd, n, 2, FMA); break;
	case 1: cd_taps(C, ldc, X, ko, K, D, ldd, n, 1, FMA); break;
	default: break;
	}
}

#if HAVE_AVX2
AVX2 static void cd_avx2(float *C, int ldc, const float *X, const int *ko,
			 int K, const float *D, long ldd, int F, int n)
{
	cd_all(C, ldc, X, ko, K, D, ldd, F, n, MR, 1);
}
#endif

void akk_smm_conv_rows_dw(float *C, int ldc, const float *X, const int *ko,
			  int K, const float *D, long ldd, int F, int n)
{
#if HAVE_AVX2
	if (avx2()) {
		cd_avx2(C, ldc, X, ko, K, D, ldd, F, n);
		return;
	}
#endif
	cd_all(C, ldc, X, ko, K, D, ldd, F, n, 2, 0);
}

/* Rows i0..i0+7 of A (zeros past row M), columns j0..j0+7, transposed
 * into T's rows j0..j0+7 but the ones at N or past: unpack pairs of rows,
 * then pairs of pairs, then the 128-bit halves. Named variables, not
 * arrays: GCC keeps arrays of vectors on the stack. */
#define UNPACKLO(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 4, 12, 5, 13)
#define UNPACKHI(a, b) __builtin_shufflevector(a, b, 2, 10, 3, 11, 6, 14, 7, 15)
#define PAIRSLO(a, b) __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13)
#define PAIRSHI(a, b) __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15)
#define HALVESLO(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11)
#define HALVESHI(a, b) __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15)
#define TR_ROW(q) (i0 + (q) < M ? ld(A + (long)(i0 + (q)) * lda + j0) : (v8){ 0 })
#define TR_STORE(q, v)							\
	if (j0 + (q) < N)						\
		*(v8u *)(T + (long)(j0 + (q)) * ldt + i0) = (v);

INLINE void tr8x8(float *T, int ldt, const float *A, int lda, int M, int N,
		  int i0, int j0)
{
	v8 r0 = TR_ROW(0), r1 = TR_ROW(1), r2 = TR_ROW(2), r3 = TR_ROW(3);
	v8 r4 = TR_ROW(4), r5 = TR_ROW(5), r6 = TR_ROW(6), r7 = TR_ROW(7);
	v8 t0 = UNPACKLO(r0, r1), t1 = UNPACKHI(r0, r1);
	v8 t2 = UNPACKLO(r2, r3), t3 = UNPACKHI(r2, r3);
	v8 t4 = UNPACKLO(r4, r5), t5 = UNPACKHI(r4, r5);
	v8 t6 = UNPACKLO(r6, r7), t7 = UNPACKHI(r6, r7);
	v8 u0 = PAIRSLO(t0, t2), u1 = PAIRSHI(t0, t2);
	v8 u2 = PAIRSLO(t1, t3), u3 = PAIRSHI(t1, t3);
	v8 u4 = PAIRSLO(t4, t6), u5 = PAIRSHI(t4, t6);
	v8 u6 = PAIRSLO(t5, t7), u7 = PAIRSHI(t5, t7);

	TR_STORE(0, HALVESLO(u0, u4)) TR_STORE(1, HALVESLO(u1, u5))
	TR_STORE(2, HALVESLO(u2, u6)) TR_STORE(3, HALVESLO(u3, u7))
	TR_STORE(4, HALVESHI(u0, u4)) TR_STORE(5, HALVESHI(u1, u5))
	TR_STORE(6, HALVESHI(u2, u6)) TR_STORE(7, HALVESHI(u3, u7))
}

/* akk_smm_transpose: whole 8 x 8 blocks, then the columns and the rows
 * left one value at a time. */
INLINE void tr_all(float *T, int ldt, const float *A, int lda, int M, int N,
		   int Mp, int Np)
{
	int i0 = 0;

	for (; i0 + 8 <= Mp; i0 += 8) {
		int j0 = 0;
		for (; j0 + 8 <= Np && j0 < N; j0 += 8)
			tr8x8(T, ldt, A, lda, M, N, i0, j0);
		for (int j = j0; j < N; j++)
			for (int i = i0; i < i0 + 8; i++)
				T[(long)j * ldt + i] = i < M ? A[(long)i * lda + j] : 0;
	}
	for (int j = 0; j < N; j++)
		for (int i = i0; i < Mp; i++)
			T[(long)j * ldt + i] = i < M ? A[(long)i * lda + j] : 0;
}

#if HAVE_AVX2
AVX2 static void tr_avx2(float *T, int ldt, const float *A, int lda, int M,
			 int N, int Mp, int Np)
{
	tr_all(T, ldt, A, lda, M, N, Mp, Np);
}
#endif

void akk_smm_transpose(float *T, int ldt, const float *A, int lda, int M,
		       int N, int Mp, int Np)
{
#if HAVE_AVX2
	if (avx2()) {
		tr_avx2(T, ldt, A, lda, M, N, Mp, Np);
		return;
	}
#endif
	tr_all(T, ldt, A, lda, M, N, Mp, Np);
}

#if HAVE_AVX2
AVX2 static void ab_avx2(float *C, int ldc, const float *A, long am, long ak,
			 const float *B, int ldb, const float *bias, int add,
			 int M, int N, int K)
{
	ab_all(C, ldc, A, am, ak, NULL, NULL, 0, B, ldb, bias, add, M, N, K, MR);
}

AVX2 static void abg_avx2(float *C, int ldc, const float *A, const int *mo,
			  const int *ko, const float *B, int ldb, int add,
			  int M, int N, int K, int split)
{
	if (split)
		ab_all(C, ldc, A, 0, 0, mo, ko, 2, B, ldb, NULL, add, M, N, K, MR);
	else
		ab_all(C, ldc, A, 0, 0, mo, ko, 1, B, ldb, NULL, add, M, N, K, MR);
}
#endif

void akk_smm_ab(float *C, int ldc, const float *A, long am, long ak,
		const float *B, int ldb, const float *bias, int add, int M,
		int N, int K)
{
#if HAVE_AVX2
	if (avx2()) {
		ab_avx2(C, ldc, A, am, ak, B, ldb, bias, add, M, N, K);
		return;
	}
#endif
	ab_all(C, ldc, A, am, ak, NULL, NULL, 0, B, ldb, bias, add, M, N, K, 2);
}

void akk_smm_ab_gather(float *C, int ldc, const float *A, const int *mo,
		       const int *ko, const float *B, int ldb, int add, int M,
		       int N, int K, int split)
{
#if HAVE_AVX2
	if (avx2()) {
		abg_avx2(C, ldc, A, mo, ko, B, ldb, add, M, N, K, split);
		return;
	}
#endif
	if (split)
		ab_all(C, ldc, A, 0, 0, mo, ko, 2, B, ldb, NULL, add, M, N, K, 2);
	else
		ab_all(C, ldc, A, 0, 0, mo, ko, 1, B, ldb, NULL, add, M, N, K, 2);
}

const char *akk_smm_isa(void)
{
#if HAVE_AVX2
	return avx2() ? "avx2+fma" : "sse2";
#elif defined(__x86_64__)
	return "sse2";	/* AKK_BASELINE */
#else
	return "generic";
#endif
}
