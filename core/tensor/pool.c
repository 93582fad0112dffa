/* pool.c - row-split matrix products on a fixed set of threads. */
#include "tensor/pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "tensor/tensor.h"

/* Below this many multiply-adds a product is not worth splitting: the
 * hand-off costs a few microseconds (akkctl bench shows where it pays). */
#define MIN_MNK (1L << 21)

struct job {
	int ta, tb, M, N, K;
	float alpha, beta;
	const float *A, *B;
	float *C;
	int lda, ldb, ldc;
};

struct worker {
	struct akk_pool *pool;
	int part;
	pthread_t thread;
};

struct akk_pool {
	int n;			/* parts: the caller and n-1 workers */
	struct worker *workers;	/* n-1 */
	pthread_mutex_t mu;
	pthread_mutex_t busy;	/* held by the thread whose product runs */
	pthread_cond_t go, done;
	long gen;		/* bumped for every product */
	int remaining;		/* workers still on the current product */
	int stop;
	struct job job;
};

/* Rows [M*part/n, M*(part+1)/n) of C. */
static void run_part(const struct job *j, int part, int n)
{
	int r0 = (int)((long)j->M * part / n), r1 = (int)((long)j->M * (part + 1) / n);
	const float *A = j->ta ? j->A + r0 : j->A + (size_t)r0 * j->lda;

	if (r1 > r0)
		akk_sgemm_here(j->ta, j->tb, r1 - r0, j->N, j->K, j->alpha, A,
			       j->lda, j->B, j->ldb, j->beta,
			       j->C + (size_t)r0 * j->ldc, j->ldc);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct akk_pool *p = w->pool;
	long seen = 0;

	akk_float_mode();
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->stop)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		struct job j = p->job;
		pthread_mutex_unlock(&p->mu);
		run_part(&j, w->part, p->n);
		pthread_mutex_lock(&p->mu);
		if (--p->remaining == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct akk_pool *akk_pool_create(int threads, struct akk_err *e)
{
	struct akk_pool *p = calloc(1, sizeof(*p));

	if (!p || !(p->workers = calloc(threads - 1, sizeof(*p->workers)))) {
		free(p);
		akk_err_set(e, "out of memory");
		return NULL;
	}
	p->n = threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->busy, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (int i = 0; i < threads - 1; i++) {
		p->workers[i] = (struct worker){ p, i + 1, 0 };
		if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i])) {
			p->n = i + 1;	/* the workers started so far */
			akk_pool_destroy(p);
			akk_err_set(e, "cannot start a compute thread");
			return NULL;
		}
	}
	return p;
}

void akk_pool_destroy(struct akk_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n - 1; i++)
		pthread_join(p->workers[i].thread, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->busy);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	free(p->workers);
	free(p);
}

long akk_pool_products(struct akk_pool *p)
{
	long n;

	pthread_mutex_lock(&p->mu);
	n = p->gen;
	pthread_mutex_unlock(&p->mu);
	return n;
}

/* Split C = alpha op(A) op(B) + beta C across p. Returns 0 when done, -1
 * when the caller should compute it alone (no pool, too small, or the pool
 * is busy). */
static int split_sgemm(struct akk_pool *p, int trans_a, int trans_b, int M,
		       int N, int K, float alpha, const float *A, int lda,
		       const float *B, int ldb, float beta, float *C, int ldc)
{
	struct job j = { trans_a, trans_b, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc };

	if (!p || (long)M * N * K < MIN_MNK || M < 2 * p->n ||
	    pthread_mutex_trylock(&p->busy))
		return -1;
	pthread_mutex_lock(&p->mu);
	p->job = j;
	p->remaining = p->n - 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	run_part(&j, 0, p->n);
	pthread_mutex_lock(&p->mu);
	while (p->remaining)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->busy);
	return 0;
}

/* The product every layer calls lives beside the pool it may split
 * across, so tensor.c does not depend on pool.c. */
void akk_sgemm(struct akk_pool *pool, int trans_a, int trans_b, int M, int N,
	       int K, float alpha, const float *A, int lda, const float *B,
	       int ldb, float beta, float *C, int ldc)
{
	if (!split_sgemm(pool, trans_a, trans_b, M, N, K, alpha, A, lda, B,
			 ldb, beta, C, ldc))
		return;
	akk_sgemm_here(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta,
		       C, ldc);
}
