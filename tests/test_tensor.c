/* test_tensor.c - akk_sgemm against a double-precision reference on many
 * shapes (alone and split across a compute pool), akk_cores against the
 * CPU affinity mask, and OpenBLAS's server threads stopped at one thread.
 *
 * Tolerance rationale. Each element of C is a dot product of length K in
 * float; whatever the order of the sums (OpenBLAS's kernels, akk_sgemm's
 * slices of K, the pool's rows), its rounding error is at most about
 * (K + 2) 2^-24 S, where S = |alpha| sum_k |a_ik b_kj| + |beta c_ij| (the
 * classic gamma_K bound, +2 for alpha and beta). We require
 *   |c - ref| <= (K + 2) 2^-24 S     for every element,
 * which real rounding meets with room (the worst ratio is printed), while
 * a dropped or doubled slice of K, beta applied twice or a wrong offset is
 * off by O(S). */
#include "testutil.h"

#include <cblas.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/gemm_xsmm.h"
#include "tensor/pool.h"
#include "tensor/smallmm.h"
#include "tensor/tensor.h"

/* Worst |c - ref| / bound seen, printed by the tests. */
static double worst;

/* C = alpha op(A) op(B) + beta C through akk_sgemm given pool (or NULL),
 * checked element by element against the same product in double. Leading dimensions are
 * padded by `pad` so that offsets into A, B and C are exercised; with
 * beta == 0, C starts as NaN, which the product must not read. */
static void check_product(struct akk_pool *pool, int ta, int tb, int M,
			  int N, int K, float alpha, float beta, int pad,
			  uint32_t seed)
{
	int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	int lda = ac + pad, ldb = bc + pad, ldc = N + pad;
	float *A = akk_alloc((size_t)ar * lda), *B = akk_alloc((size_t)br * ldb);
	float *C = akk_alloc((size_t)M * ldc), *C0 = akk_alloc((size_t)M * ldc);

	assert_non_null(A), assert_non_null(B), assert_non_null(C), assert_non_null(C0);
	tu_fill(A, (size_t)ar * lda, -1, 1, seed);
	tu_fill(B, (size_t)br * ldb, -1, 1, seed + 1);
	tu_fill(C0, (size_t)M * ldc, -1, 1, seed + 2);
	if (beta == 0)
		for (size_t i = 0; i < (size_t)M * ldc; i++)
			C0[i] = NAN;
	memcpy(C, C0, (size_t)M * ldc * sizeof(*C));
	akk_sgemm(pool, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double ref = 0, s = 0, err, bound;
			for (int k = 0; k < K; k++) {
				double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
				double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
				ref += a * b;
				s += fabs(a * b);
			}
			ref *= alpha;
			s *= fabs(alpha);
			if (beta != 0) {
				ref += (double)beta * C0[(size_t)i * ldc + j];
				s += fabs(beta * C0[(size_t)i * ldc + j]);
			}
			err = fabs(C[(size_t)i * ldc + j] - ref);
			bound = (K + 2) * 0x1p-24 * s;
			if (!(err <= bound))
				fail_msg("ta=%d tb=%d M=%d N=%d K=%d alpha=%g beta=%g: "
					 "C[%d][%d] = %.9g, reference %.9g (bound %.3g)",
					 ta, tb, M, N, K, alpha, beta, i, j,
					 C[(size_t)i * ldc + j], ref, bound);
			if (bound > 0 && err / bound > worst)
				worst = err / bound;
		}
	/* the padding of C is untouched */
	for (int i = 0; i < M; i++)
		for (int j = N; j < ldc; j++)
			assert_memory_equal(&C[(size_t)i * ldc + j],
					    &C0[(size_t)i * ldc + j], sizeof(*C));
	akk_free(A), akk_free(B), akk_free(C), akk_free(C0);
}

/* Shapes around every boundary the BLAS wrapper and OpenBLAS's small-matrix
 * kernels care about: N mod 16 (0, 1..8, 9..15), K below, at and above 32
 * (several slices of 31), M*N*K around 1e6, and the products the layers
 * issue (LeNet's second convolution 16 x 100 x 150, its dense dx
 * 64 x 120 x 84, the test nets' 6 x 4 x 36). */
static void sgemm_matches_reference(void **unused)
{
	static const int Ms[] = { 1, 6, 16, 17, 64 };
	static const int Ns[] = { 1, 4, 7, 8, 9, 15, 16, 20, 24, 36, 100 };
	static const int Ks[] = { 1, 9, 31, 32, 36, 62, 63, 84, 150 };
	static const struct { int ta, tb, M, N, K; } extra[] = {
		{ 0, 0, 16, 100, 150 }, { 0, 0, 64, 120, 84 }, { 0, 0, 6, 4, 36 },
		{ 0, 0, 100, 100, 100 }, { 0, 0, 100, 100, 101 }, { 0, 0, 64, 24, 512 },
		{ 0, 0, 1000, 4, 250 }, { 0, 0, 999, 5, 200 }, { 0, 1, 16, 150, 100 },
		{ 1, 0, 150, 100, 16 }, { 0, 1, 64, 120, 84 }, { 1, 0, 120, 84, 64 },
	};
	uint32_t seed = 1;
	long n = 0;

	(void)unused;
	akk_blas_threads(1);
	worst = 0;
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (size_t m = 0; m < sizeof(Ms) / sizeof(*Ms); m++)
				for (size_t j = 0; j < sizeof(Ns) / sizeof(*Ns); j++)
					for (size_t k = 0; k < sizeof(Ks) / sizeof(*Ks); k++, n++) {
						float beta = n % 3 == 0 ? 0 : n % 3 == 1 ? 1 : 0.25f;
						float alpha = n % 2 ? 1 : -0.5f;
						check_product(NULL, ta, tb, Ms[m], Ns[j], Ks[k], alpha,
							      beta, (int)(n % 3), seed += 3);
					}
	for (size_t i = 0; i < sizeof(extra) / sizeof(*extra); i++)
		for (int b = 0; b < 2; b++, n++)
			check_product(NULL, extra[i].ta, extra[i].tb, extra[i].M,
				      extra[i].N, extra[i].K, 1, b ? 1.0f : 0.0f, b,
				      seed += 3);
	fprintf(stderr, "# %ld products, worst error %.3f of the bound\n", n, worst);
}

/* Products large enough for a pool of 3 (M*N*K >= 2^23) whose row parts,
 * about 1/3 of M each, are small again: the parts take the same path. */
static void pool_sgemm_matches_reference(void **unused)
{
	struct akk_pool *p;
	struct tu_pool tp;

	(void)unused;
	akk_blas_threads(1);
	p = tu_pool_new(&tp, 3);
	assert_non_null(p);
	worst = 0;
	check_product(p, 0, 0, 2048, 20, 256, 1, 0, 0, 11);
	check_product(p, 0, 0, 2048, 20, 256, -0.5f, 1, 1, 12);
	check_product(p, 0, 0, 1500, 36, 160, 1, 0.25f, 2, 13);
	check_product(p, 0, 1, 2048, 20, 256, 1, 1, 0, 14);
	check_product(p, 1, 0, 2048, 20, 256, 1, 0, 0, 15);
	check_product(p, 0, 0, 256, 512, 64, 1, 1, 0, 16);
	assert_int_equal(akk_pool_products(p), 6);	/* every one was split */
	tu_pool_free(&tp);
	fprintf(stderr, "# pooled: worst error %.3f of the bound\n", worst);
}

/* Where a product runs is said by its first argument and nothing else: a
 * large product given a pool is split across it (the pool counts it), the
 * same product given NULL runs on the calling thread alone, a small one
 * given the pool is not worth splitting, and a thread that never met the
 * pool splits across it when given it. (Before, akk_sgemm read a pool
 * attached to the calling thread, which this API cannot express.) */
static void *product_on_other_thread(void *arg)
{
	check_product(arg, 0, 0, 2048, 20, 256, 1, 0, 0, 24);
	return NULL;
}

static void sgemm_splits_only_across_the_pool_given(void **unused)
{
	struct akk_pool *p;
	struct tu_pool tp;
	pthread_t t;

	(void)unused;
	akk_blas_threads(1);
	p = tu_pool_new(&tp, 2);
	assert_non_null(p);
	assert_int_equal(akk_pool_products(p), 0);
	check_product(NULL, 0, 0, 2048, 20, 256, 1, 0, 0, 21);
	assert_int_equal(akk_pool_products(p), 0);
	check_product(p, 0, 0, 2048, 20, 256, 1, 0, 0, 22);
	assert_int_equal(akk_pool_products(p), 1);
	check_product(p, 0, 0, 16, 20, 64, 1, 0, 0, 23);	/* 2^14.3 < 2^23 */
	assert_int_equal(akk_pool_products(p), 1);
	/* the seed's net's first product (batch 64, 784 -> 50: 2^21.3) is
	 * not worth waking another worker for */
	check_product(p, 0, 1, 64, 50, 784, 1, 0, 0, 26);
	assert_int_equal(akk_pool_products(p), 1);
	assert_int_equal(pthread_create(&t, NULL, product_on_other_thread, p), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(akk_pool_products(p), 2);
	check_product(NULL, 1, 0, 2048, 20, 256, 1, 1, 0, 25);
	assert_int_equal(akk_pool_products(p), 2);
	tu_pool_free(&tp);
}

/* A split that holds the pool: part 0 (on the thread that split) waits
 * until released, the other parts return at once. */
struct hold {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int holding, release;
};

static void hold_part(void *arg, int part, int n)
{
	struct hold *h = arg;

	(void)n;
	if (part)
		return;
	pthread_mutex_lock(&h->mu);
	h->holding = 1;
	pthread_cond_broadcast(&h->cv);
	while (!h->release)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

static void *hold_pool(void *arg)
{
	void **a = arg;

	akk_pool_for(a[0], hold_part, a[1]);
	return NULL;
}

/* Whether the pool is free is a matter of timing (in flip-flop, another
 * gate's optimizer step holds it while this gate's backward runs its
 * products), so it must not change a product's bits: one that finds the
 * pool busy computes the same row parts in turn. Each size here rounds
 * differently whole and split with OpenBLAS's kernels on some CPUs; the
 * busy product equals the split one, bit for bit, and the pool counts
 * no split for it. (A busy pool used to mean the product whole.) */
static void busy_pool_gives_the_split_bits(void **unused)
{
	static const int dims[][3] = { { 2047, 67, 131 }, { 1023, 129, 259 }, { 2048, 20, 256 } };
	struct tu_pool tp;
	struct akk_pool *p;
	struct hold h = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	void *args[2];
	pthread_t t;

	(void)unused;
	akk_blas_threads(1);
	p = tu_pool_new(&tp, 2);
	for (size_t d = 0; d < sizeof(dims) / sizeof(*dims); d++) {
		int M = dims[d][0], N = dims[d][1], K = dims[d][2];
		float *A = akk_alloc((size_t)M * K), *B = akk_alloc((size_t)K * N);
		float *split = akk_alloc((size_t)M * N), *busy = akk_alloc((size_t)M * N);
		long before;

		tu_fill(A, (size_t)M * K, -1, 1, (uint32_t)(31 + d));
		tu_fill(B, (size_t)K * N, -1, 1, (uint32_t)(41 + d));
		akk_sgemm(p, 0, 0, M, N, K, 1, A, K, B, N, 0, split, N);
		h.holding = h.release = 0;
		args[0] = p;
		args[1] = &h;
		assert_int_equal(pthread_create(&t, NULL, hold_pool, args), 0);
		pthread_mutex_lock(&h.mu);
		while (!h.holding)
			pthread_cond_wait(&h.cv, &h.mu);
		pthread_mutex_unlock(&h.mu);
		before = akk_pool_products(p);
		akk_sgemm(p, 0, 0, M, N, K, 1, A, K, B, N, 0, busy, N);
		assert_int_equal(akk_pool_products(p), before);	/* not split */
		pthread_mutex_lock(&h.mu);
		h.release = 1;
		pthread_cond_broadcast(&h.cv);
		pthread_mutex_unlock(&h.mu);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_memory_equal(busy, split, (size_t)M * N * sizeof(float));
		akk_free(A);
		akk_free(B);
		akk_free(split);
		akk_free(busy);
	}
	tu_pool_free(&tp);
}

/* akk_cores counts the CPUs of the affinity mask (taskset -c 0 means one
 * compute thread), and follows it when it changes. */
static void cores_follow_affinity(void **unused)
{
	cpu_set_t all, one;
	int first = -1;

	(void)unused;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(akk_cores(), CPU_COUNT(&all));
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	assert_true(first >= 0);
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	assert_int_equal(akk_cores(), 1);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(akk_cores(), CPU_COUNT(&all));
	if (CPU_COUNT(&all) < 2)
		fprintf(stderr, "# one CPU only: the mask cannot shrink here\n");
}

/* The libxsmm path (tensor/gemm_xsmm.h) on every shape class and
 * transpose: each product libxsmm 1.17 can do (trans_b 0, alpha 1, beta 0
 * or 1) within the bound of the double reference, C's padding untouched,
 * and with beta 0 the NaNs in C never read; what it cannot do (trans_b,
 * alpha != 1, beta 0.25) declined with C untouched. akk_sgemm_here gives
 * libxsmm exactly the products akk_xsmm_rule names: its result is, bit for
 * bit, that of the path the rule picks. Built with XSMM=0, every product
 * is declined. */
static void xsmm_one(int ta, int tb, int M, int N, int K, float alpha,
		     float beta, int pad, uint32_t seed, long *served)
{
	int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	int lda = ac + pad, ldb = bc + pad, ldc = N + pad, can;
	size_t nc = (size_t)M * ldc;
	float *A = akk_alloc((size_t)ar * lda), *B = akk_alloc((size_t)br * ldb);
	float *C = akk_alloc(nc), *C0 = akk_alloc(nc), *H = akk_alloc(nc);

	assert_non_null(A), assert_non_null(B), assert_non_null(C);
	assert_non_null(C0), assert_non_null(H);
	tu_fill(A, (size_t)ar * lda, -1, 1, seed);
	tu_fill(B, (size_t)br * ldb, -1, 1, seed + 1);
	tu_fill(C0, nc, -1, 1, seed + 2);
	if (beta == 0)
		for (size_t i = 0; i < nc; i++)
			C0[i] = NAN;
	memcpy(C, C0, nc * sizeof(*C));
	can = akk_xsmm_sgemm(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#ifdef AKK_XSMM
	assert_int_equal(can, !tb && alpha == 1 && (beta == 0 || beta == 1));
#else
	assert_int_equal(can, 0);
#endif
	if (!can) {
		assert_memory_equal(C, C0, nc * sizeof(*C));
		assert_int_equal(akk_xsmm_rule(ta, tb, M, N, K, alpha, beta), 0);
	}
	*served += can;
	for (int i = 0; i < M && can; i++)
		for (int j = 0; j < ldc; j++) {
			double ref = 0, s = 0;
			if (j >= N) {	/* the padding */
				assert_memory_equal(&C[(size_t)i * ldc + j],
						    &C0[(size_t)i * ldc + j], sizeof(*C));
				continue;
			}
			for (int k = 0; k < K; k++) {
				double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
				double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
				ref += a * b;
				s += fabs(a * b);
			}
			if (beta != 0) {
				ref += C0[(size_t)i * ldc + j];
				s += fabs(C0[(size_t)i * ldc + j]);
			}
			if (!(fabs(C[(size_t)i * ldc + j] - ref) <= (K + 2) * 0x1p-24 * s))
				fail_msg("libxsmm ta=%d tb=%d M=%d N=%d K=%d beta=%g: "
					 "C[%d][%d] = %.9g, reference %.9g", ta, tb, M,
					 N, K, beta, i, j, C[(size_t)i * ldc + j], ref);
		}
	/* akk_sgemm_here: bit for bit the path the rule picks */
	memcpy(H, C0, nc * sizeof(*H));
	akk_sgemm_here(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, H, ldc);
	memcpy(C, C0, nc * sizeof(*C));
	if (akk_xsmm_rule(ta, tb, M, N, K, alpha, beta))
		assert_true(akk_xsmm_sgemm(0, ta, tb, M, N, K, alpha, A, lda, B,
					   ldb, beta, C, ldc));
	else
		akk_sgemm_openblas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta,
				   C, ldc);
	if (memcmp(H, C, nc * sizeof(*C)))
		fail_msg("akk_sgemm_here ta=%d tb=%d M=%d N=%d K=%d alpha=%g beta=%g "
			 "is not %s's result", ta, tb, M, N, K, alpha, beta,
			 akk_xsmm_rule(ta, tb, M, N, K, alpha, beta) ? "libxsmm" : "OpenBLAS");
	akk_free(A), akk_free(B), akk_free(C), akk_free(C0), akk_free(H);
}

static void xsmm_matches_reference(void **unused)
{
	static const int Ms[] = { 1, 6, 16, 17, 64 };
	static const int Ns[] = { 1, 7, 16, 20, 100 };
	static const int Ks[] = { 1, 9, 32, 84, 150 };
	/* the shipped configs' products (cli/bench_gemm.c) */
	static const struct { int ta, tb, M, N, K; } layers[] = {
		{ 0, 1, 64, 50, 784 }, { 1, 0, 50, 784, 64 }, { 1, 0, 20, 50, 64 },
		{ 0, 0, 64, 50, 20 }, { 1, 0, 10, 20, 64 }, { 0, 0, 64, 20, 10 },
		{ 1, 0, 400, 784, 128 }, { 1, 0, 100, 400, 128 }, { 0, 0, 128, 400, 100 },
		{ 1, 0, 10, 100, 128 }, { 0, 0, 128, 100, 10 }, { 0, 0, 6, 784, 25 },
		{ 0, 1, 6, 25, 784 }, { 0, 0, 16, 100, 150 }, { 1, 0, 150, 100, 16 },
		{ 1, 0, 120, 400, 64 }, { 0, 0, 64, 400, 120 }, { 1, 0, 84, 120, 64 },
		{ 0, 0, 64, 120, 84 }, { 1, 0, 10, 84, 64 }, { 0, 0, 64, 84, 10 },
	};
	static const float betas[] = { 0, 1, 0.25f };
	uint32_t seed = 101;
	long n = 0, served = 0;

	(void)unused;
	akk_blas_threads(1);
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (size_t m = 0; m < sizeof(Ms) / sizeof(*Ms); m++)
				for (size_t j = 0; j < sizeof(Ns) / sizeof(*Ns); j++)
					for (size_t k = 0; k < sizeof(Ks) / sizeof(*Ks); k++, n++)
						xsmm_one(ta, tb, Ms[m], Ns[j], Ks[k],
							 n % 7 == 3 ? 2.0f : 1.0f, betas[n % 3],
							 (int)(n % 3), seed += 3, &served);
	for (size_t i = 0; i < sizeof(layers) / sizeof(*layers); i++)
		for (int b = 0; b < 2; b++, n++)
			xsmm_one(layers[i].ta, layers[i].tb, layers[i].M, layers[i].N,
				 layers[i].K, 1, (float)b, b, seed += 3, &served);
#ifdef AKK_XSMM
	assert_true(served > 0);
	fprintf(stderr, "# %ld products, %ld through libxsmm\n", n, served);
#else
	fprintf(stderr, "# built without libxsmm (XSMM=0): %ld products, every one declined\n", n);
#endif
}

/* Threads of this process: the entries of /proc/self/task. */
static int process_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* OpenBLAS starts a server thread per further core when it loads, and each
 * spins for its first 0.1 s, taking a core from the run. akk_blas_stop_idle
 * stops them, and a later call that may use two threads gets them back
 * with the same bits; at one thread a call akk_blas_threads stops them.
 * This test runs first, before any other calls akk_blas_threads. */
static void blas_server_threads_stop(void **unused)
{
	const int n = 384;
	/* OpenBLAS's own: one per thread a call after the first (a runtime,
	 * such as ThreadSanitizer's, may have threads of its own) */
	int before = process_threads(), servers = openblas_get_num_threads() - 1;
	float *A = akk_alloc((size_t)n * n), *B = akk_alloc((size_t)n * n);
	float *C1 = akk_alloc((size_t)n * n), *C2 = akk_alloc((size_t)n * n);

	(void)unused;
	if (servers < 1) {
		fprintf(stderr, "# OpenBLAS started no server thread here (%d core(s), "
			"OPENBLAS_NUM_THREADS=%s): nothing to stop\n", akk_cores(),
			getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "unset");
		skip();
	}
	assert_non_null(A), assert_non_null(B), assert_non_null(C1), assert_non_null(C2);
	tu_fill(A, (size_t)n * n, -1, 1, 3);
	tu_fill(B, (size_t)n * n, -1, 1, 4);
	/* OpenBLAS's threaded driver, then its threads stopped */
	akk_blas_threads(2);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, B, n, 0, C1, n);
	akk_blas_stop_idle();
	assert_int_equal(process_threads(), before - servers);
	/* the next threaded call starts them again: the same bits */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, B, n, 0, C2, n);
	assert_int_equal(process_threads(), before);
	assert_memory_equal(C1, C2, (size_t)n * n * sizeof(float));
	/* one thread a call: none left */
	akk_blas_threads(1);
	assert_int_equal(process_threads(), before - servers);
	check_product(NULL, 1, 0, 300, 200, 100, 1, 0.5f, 1, 11);
	fprintf(stderr, "# %d threads at load, %d of them OpenBLAS's, gone after akk_blas_stop_idle and akk_blas_threads(1)\n",
		before, servers);
	akk_free(A), akk_free(B), akk_free(C1), akk_free(C2);
}

/* akk_smm_transpose moves A^T into T: every value of T's N rows and Mp
 * columns (zeros for A's rows past M), whole 8 x 8 blocks and the edges,
 * and nothing else (T's other rows and columns, the columns of A past N
 * never copied). */
static void smm_transpose_moves_every_value(void **unused)
{
	static const int Ms[] = { 1, 5, 6, 8, 13, 16, 100, 784 };
	static const int NNp[][2] = { { 1, 8 }, { 3, 8 }, { 6, 8 }, { 8, 8 }, { 13, 16 },
				      { 16, 16 }, { 100, 100 }, { 100, 104 } };

	(void)unused;
	for (size_t a = 0; a < sizeof(Ms) / sizeof(Ms[0]); a++)
		for (size_t b = 0; b < sizeof(NNp) / sizeof(NNp[0]); b++)
			for (int padded = 0; padded < 2; padded++) {
				int M = Ms[a], N = NNp[b][0], Np = NNp[b][1];
				int Mp = padded ? (M + 7) & ~7 : M;
				int lda = Np + 3, ldt = Mp + 5, rows = N + 2;
				float *A = malloc((size_t)M * lda * sizeof(float));
				float *T = malloc((size_t)rows * ldt * sizeof(float));

				assert_non_null(A);
				assert_non_null(T);
				for (int i = 0; i < M * lda; i++)
					A[i] = (float)(i + 1);
				for (int i = 0; i < rows * ldt; i++)
					T[i] = -7.0f;
				akk_smm_transpose(T, ldt, A, lda, M, N, Mp, Np);
				for (int j = 0; j < rows; j++)
					for (int i = 0; i < ldt; i++) {
						float want = j >= N || i >= Mp ? -7.0f :
							     i < M ? A[(size_t)i * lda + j] : 0.0f;
						if (T[(size_t)j * ldt + i] != want)
							fail_msg("M %d N %d Mp %d Np %d: T[%d][%d] = %g, "
								 "want %g", M, N, Mp, Np, j, i,
								 T[(size_t)j * ldt + i], want);
					}
				free(A);
				free(T);
			}
}

/* Convolutions of stride 1 for the kernels with the output pixels across
 * the lanes: C, Hq, Wq (the padded input), k, F; whole and partial
 * vectors of a row, filter groups of every size, odd and even taps. */
static const int rows_cases[][5] = {
	{ 1, 32, 32, 5, 6 }, { 1, 32, 32, 5, 1 }, { 2, 9, 12, 3, 7 },
	{ 3, 6, 20, 3, 13 }, { 1, 5, 9, 2, 2 }, { 2, 4, 4, 3, 5 },
	{ 1, 3, 26, 3, 8 }, { 1, 2, 17, 1, 3 },
};

/* akk_smm_conv_rows (output pixels across the lanes) gives the bits of
 * akk_smm_ab_gather (filters across the lanes) started from the bias, for
 * whole and partial vectors of a row and filter groups of every size,
 * reads nothing past the input (exactly xn floats: ASan sees a read past
 * them) and writes only the outputs. */
static void smm_conv_rows_matches_gathered(void **unused)
{
	(void)unused;
	for (size_t c = 0; c < sizeof(rows_cases) / sizeof(rows_cases[0]); c++) {
		int C = rows_cases[c][0], hq = rows_cases[c][1], wq = rows_cases[c][2];
		int k = rows_cases[c][3], F = rows_cases[c][4];
		int Ho = hq - k + 1, Wo = wq - k + 1, K = C * k * k;
		int hw = Ho * Wo, fp = akk_smm_pad(F), ldy = hw + 3, n = 0;
		long xn = (long)C * hq * wq;
		float *X = malloc(xn * sizeof(float)), *W = malloc((size_t)F * K * sizeof(float));
		float *Wt = calloc((size_t)K * fp, sizeof(float)), *bias = malloc(F * sizeof(float));
		float *Y = malloc((size_t)F * ldy * sizeof(float));
		float *Yt = malloc((size_t)hw * fp * sizeof(float));
		int *mo = malloc(hw * sizeof(int)), *ko = malloc(K * sizeof(int));

		assert_true(X && W && Wt && bias && Y && Yt && mo && ko);
		for (long i = 0; i < xn; i++)
			X[i] = (float)((i * 7919) % 1013) / 97.0f - 5;
		for (int i = 0; i < F * K; i++)
			W[i] = (float)((i * 104729) % 331) / 53.0f - 3;
		for (int f = 0; f < F; f++) {
			bias[f] = 0.25f * f - 1;
			for (int t = 0; t < K; t++)
				Wt[(size_t)t * fp + f] = W[(size_t)f * K + t];
		}
		for (int oh = 0; oh < Ho; oh++)
			for (int ow = 0; ow < Wo; ow++)
				mo[n++] = oh * wq + ow;
		n = 0;
		for (int ch = 0; ch < C; ch++)
			for (int ki = 0; ki < k; ki++)
				for (int kj = 0; kj < k; kj++)
					ko[n++] = (ch * hq + ki) * wq + kj;
		for (int j = 0; j < hw; j++)
			for (int f = 0; f < fp; f++)
				Yt[(size_t)j * fp + f] = f < F ? bias[f] : 0;
		akk_smm_ab_gather(Yt, fp, X, mo, ko, Wt, fp, 1, hw, fp, K, 0);
		for (int i = 0; i < F * ldy; i++)
			Y[i] = -7.0f;
		akk_smm_conv_rows(Y, ldy, X, xn, ko, W, bias, F, K, Ho, Wo, wq);
		for (int f = 0; f < F; f++)
			for (int j = 0; j < ldy; j++) {
				float got = Y[(size_t)f * ldy + j];
				float want = j < hw ? Yt[(size_t)j * fp + f] : -7.0f;
				if (memcmp(&got, &want, sizeof(got)))
					fail_msg("case %zu: filter %d output %d: %.9g, want %.9g",
						 c, f, j, got, want);
			}
		free(X), free(W), free(Wt), free(bias), free(Y), free(Yt), free(mo), free(ko);
	}
}

/* One sum of akk_smm_conv_rows_dw, as it is defined: lane l of 8 takes
 * the pixels p = l mod 8 of the whole vectors in order, the lanes are
 * added as ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), then the last pixels
 * (fewer than 8) one at a time, and that onto start. Each step is a fused
 * multiply-add or a product then a sum: in the lanes as bit 0 of fused
 * says (GCC's contraction, as split_sum below), in the last pixels as
 * bit 1 says (the AVX2 body fuses them, the baseline's cannot). */
static float rows_dw_sum(float start, const float *x, const float *d, int n, int fused)
{
	float l[8] = { 0 }, s;
	int n8 = n / 8 * 8, fl = fused & 1, ft = fused & 2;

	for (int p = 0; p < n8; p++)
		l[p % 8] = fl ? fmaf(x[p], d[p], l[p % 8]) : l[p % 8] + x[p] * d[p];
	s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
	for (int p = n8; p < n; p++)
		s = ft ? fmaf(x[p], d[p], s) : s + x[p] * d[p];
	return start + s;
}

/* akk_smm_conv_rows_dw: each C[k][f] is its sum (rows_dw_sum, fused or
 * not) added to what C held, for taps in pairs and an odd last one,
 * filter groups of every size and pixels past the last whole vector;
 * the columns past F are not written, and nothing is read past X's xn
 * floats or past a row of D's n (they hold NaN, and X and D end there:
 * ASan sees a read past them). */
static void smm_conv_rows_dw_sums(void **unused)
{
	(void)unused;
	for (size_t c = 0; c < sizeof(rows_cases) / sizeof(rows_cases[0]); c++) {
		int C = rows_cases[c][0], hq = rows_cases[c][1], wq = rows_cases[c][2];
		int k = rows_cases[c][3], F = rows_cases[c][4];
		int Ho = hq - k + 1, Wo = wq - k + 1, K = C * k * k;
		int n = (Ho - 1) * wq + Wo, ldd = n + 3, ldc = F + 2, t = 0;
		long xn = (long)C * hq * wq, dn = (long)(F - 1) * ldd + n;
		float *X = malloc(xn * sizeof(float)), *D = malloc(dn * sizeof(float));
		float *Cm = malloc((size_t)K * ldc * sizeof(float));
		int *ko = malloc(K * sizeof(int));

		assert_true(X && D && Cm && ko);
		for (long i = 0; i < xn; i++)
			X[i] = (float)((i * 7919) % 1013) / 97.0f - 5;
		for (long i = 0; i < dn; i++)
			D[i] = i % ldd >= n ? NAN : (float)((i * 104729) % 331) / 53.0f - 3;
		for (int ch = 0; ch < C; ch++)
			for (int ki = 0; ki < k; ki++)
				for (int kj = 0; kj < k; kj++)
					ko[t++] = (ch * hq + ki) * wq + kj;
		for (long i = 0; i < (long)K * ldc; i++)
			Cm[i] = (float)(i % 13) - 6;
		akk_smm_conv_rows_dw(Cm, ldc, X, ko, K, D, ldd, F, n);
		for (int kk = 0; kk < K; kk++)
			for (int j = 0; j < ldc; j++) {
				float start = (float)(((long)kk * ldc + j) % 13) - 6;
				float got = Cm[(size_t)kk * ldc + j], want[4];
				int ok = 0;

				for (int fused = 0; fused < 4; fused++) {
					want[fused] = j < F ? rows_dw_sum(start, X + ko[kk],
									  D + (size_t)j * ldd,
									  n, fused) : start;
					ok |= !memcmp(&got, &want[fused], sizeof(got));
				}
				if (!ok)	/* past F: not written */
					fail_msg("case %zu: C[%d][%d] = %.9g, want %.9g (n %d)",
						 c, kk, j, got, want[3], n);
			}
		free(X), free(D), free(Cm), free(ko);
	}
}

/* One element of akk_smm_ab_gather with split, as it is defined: from
 * start, the even k into one chain and the odd k into another, the two
 * added, then an odd K's last k; each step a fused multiply-add (the AVX2
 * body as GCC builds it at -O2) or a product then a sum (the baseline's,
 * and any body built without contraction: the ASan build's -O1). */
static float split_sum(float start, const float *A, int mo, const int *ko,
		       const float *B, int ldb, int col, int K, int fused)
{
	float c = start, e = 0;
	int k = 0;

	for (; k + 2 <= K; k += 2) {
		float a0 = A[mo + ko[k]], b0 = B[(size_t)k * ldb + col];
		float a1 = A[mo + ko[k + 1]], b1 = B[(size_t)(k + 1) * ldb + col];

		c = fused ? fmaf(b0, a0, c) : c + b0 * a0;
		e = fused ? fmaf(b1, a1, e) : e + b1 * a1;
	}
	c += e;
	if (k < K) {
		float a = A[mo + ko[k]], b = B[(size_t)k * ldb + col];
		c = fused ? fmaf(b, a, c) : c + b * a;
	}
	return c;
}

/* akk_smm_ab_gather with split: where a block's columns fit one vector
 * (N <= 8, or the last 8 or fewer of more) each element is the two
 * chains' sum, bit for bit (split_sum, fused or not), for even and odd K,
 * rows in whole and partial blocks, from 0 or C (add); the columns of
 * 16-wide blocks are the same bits as without split. */
static void smm_gather_split_sums(void **unused)
{
	static const int cases[][4] = {	/* M, N, K, add */
		{ 25, 8, 784, 1 }, { 7, 5, 9, 0 }, { 13, 20, 100, 1 }, { 6, 16, 33, 0 },
		{ 1, 3, 1, 1 }, { 9, 24, 2, 0 },
	};
	(void)unused;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int M = cases[c][0], N = cases[c][1], K = cases[c][2], add = cases[c][3];
		int ldc = N + 3, ldb = N + 1, wide = N / 16 * 16;
		long an = (long)M * 3 + (long)K * 5 + 8;
		float *A = malloc(an * sizeof(float)), *B = malloc((size_t)K * ldb * sizeof(float));
		float *C0 = malloc((size_t)M * ldc * sizeof(float));
		float *C1 = malloc((size_t)M * ldc * sizeof(float));
		int *mo = malloc(M * sizeof(int)), *ko = malloc(K * sizeof(int));

		assert_true(A && B && C0 && C1 && mo && ko);
		for (long i = 0; i < an; i++)
			A[i] = (float)((i * 7919) % 1013) / 97.0f - 5;
		for (long i = 0; i < (long)K * ldb; i++)
			B[i] = (float)((i * 104729) % 331) / 53.0f - 3;
		for (int m = 0; m < M; m++)
			mo[m] = 3 * m;
		for (int k = 0; k < K; k++)
			ko[k] = 5 * k;
		for (long i = 0; i < (long)M * ldc; i++)
			C0[i] = C1[i] = (float)(i % 13) - 6;
		akk_smm_ab_gather(C0, ldc, A, mo, ko, B, ldb, add, M, N, K, 0);
		akk_smm_ab_gather(C1, ldc, A, mo, ko, B, ldb, add, M, N, K, 1);
		for (int m = 0; m < M; m++)
			for (int j = 0; j < ldc; j++) {
				float start = (float)(((long)m * ldc + j) % 13) - 6;
				float got = C1[(size_t)m * ldc + j], want, alt;

				if (j >= N)
					want = alt = start;	/* not written */
				else if (j < wide)
					want = alt = C0[(size_t)m * ldc + j];
				else {
					want = split_sum(add ? start : 0, A, mo[m], ko, B, ldb, j,
							 K, 1);
					alt = split_sum(add ? start : 0, A, mo[m], ko, B, ldb, j,
							K, 0);
				}
				if (memcmp(&got, &want, sizeof(got)) && memcmp(&got, &alt, sizeof(got)))
					fail_msg("case %zu: C[%d][%d] = %.9g, want %.9g",
						 c, m, j, got, want);
			}
		free(A), free(B), free(C0), free(C1), free(mo), free(ko);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(blas_server_threads_stop),
		cmocka_unit_test(sgemm_matches_reference),
		cmocka_unit_test(pool_sgemm_matches_reference),
		cmocka_unit_test(busy_pool_gives_the_split_bits),
		cmocka_unit_test(sgemm_splits_only_across_the_pool_given),
		cmocka_unit_test(cores_follow_affinity),
		cmocka_unit_test(xsmm_matches_reference),
		cmocka_unit_test(smm_transpose_moves_every_value),
		cmocka_unit_test(smm_conv_rows_matches_gathered),
		cmocka_unit_test(smm_gather_split_sums),
		cmocka_unit_test(smm_conv_rows_dw_sums),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
