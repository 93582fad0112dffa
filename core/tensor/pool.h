/* pool.h - the workers share one gate's large matrix products.
 *
 * OpenBLAS runs single-threaded in akkctl: its threaded driver mallocs a
 * job array on every product (level3_thread.c), and pipelined gates want
 * one core each anyway. When a schedule has one busy gate at a time
 * (flip-flop), that gate may use every core: the run creates one pool, the
 * gate hands it to its layers (struct akk_layer's pool), and each layer
 * passes it to akk_sgemm, which splits a large product by rows of C across
 * it. The parts run on the actors' workers (base/workers.h): idle ones
 * take them, the caller computes the rest itself, and a product allocates
 * nothing. One product at a time per pool: a second caller computes alone
 * instead of waiting. */
#ifndef AKK_POOL_H
#define AKK_POOL_H

#include "base/err.h"
#include "base/workers.h"

struct akk_pool;

/* A pool for products split `parts` ways on the actors' workers w (lent
 * until destroy): the run's, so threads never outnumber the cores. */
struct akk_pool *akk_pool_on(struct akk_workers *w, int parts, struct akk_err *e);
void akk_pool_destroy(struct akk_pool *p);

/* C = alpha * op(A) op(B) + beta * C, row-major; op(X) = X or X^T.
 * op(A) is M x K, op(B) is K x N, C is M x N. With a pool, a large product
 * is split by rows of C across it (one that finds the pool busy computes
 * the same row parts in turn on the calling thread, so its bits never
 * depend on timing; a small one runs whole there); with NULL it runs on
 * the calling thread alone (akk_sgemm_here). Allocates nothing, whichever
 * kernels OpenBLAS picked for the CPU. */
void akk_sgemm(struct akk_pool *pool, int trans_a, int trans_b, int M, int N,
	       int K, float alpha, const float *A, int lda, const float *B,
	       int ldb, float beta, float *C, int ldc);

/* Any work split in parts: fn(arg, i, n) for i in 0..n-1, n parts across p
 * as a product's rows are, returning when every part is done; when p is
 * on another split, the same n parts in turn on the calling thread; with
 * NULL, fn(arg, 0, 1). Returns n. A part must give the same result
 * whoever runs it. */
int akk_pool_for(struct akk_pool *p, void (*fn)(void *arg, int part, int n),
		 void *arg);

/* Splits p has made so far (products and akk_pool_for): where work ran,
 * for tests. */
long akk_pool_products(struct akk_pool *p);

#endif
