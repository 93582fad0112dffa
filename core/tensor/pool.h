/* pool.h - a few threads that share one gate's large matrix products.
 *
 * OpenBLAS runs single-threaded in akkctl: its threaded driver mallocs a
 * job array on every product (level3_thread.c), and pipelined gates want
 * one core each anyway. When a schedule has one busy gate at a time
 * (flip-flop), that gate may use every core: akk_sgemm then splits a large
 * product by rows of C across the pool attached to the calling thread.
 * The pool's threads are started at init and take work through one mutex
 * and two condition variables; a product allocates nothing. One product
 * at a time per pool: a second caller computes alone instead of waiting. */
#ifndef AKK_POOL_H
#define AKK_POOL_H

#include "base/err.h"

struct akk_pool;

/* A pool for products split `threads` ways (the caller plus threads-1
 * workers). threads >= 2. */
struct akk_pool *akk_pool_create(int threads, struct akk_err *e);
void akk_pool_destroy(struct akk_pool *p);
/* Let the calling thread's akk_sgemm use p (NULL: compute alone). */
void akk_pool_attach(struct akk_pool *p);

/* For akk_sgemm: compute C = alpha op(A) op(B) + beta C split across the
 * calling thread's pool. Returns 0 when done, -1 when the caller should
 * compute it alone (no pool, too small, or the pool is busy). */
int akk_pool_sgemm(int trans_a, int trans_b, int M, int N, int K,
		   float alpha, const float *A, int lda, const float *B,
		   int ldb, float beta, float *C, int ldc);

#endif
