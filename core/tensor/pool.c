/* pool.c - row-split matrix products on the actors' worker threads.
 *
 * A split product posts its row parts as tasks on the workers (one
 * preallocated task per part but the caller's first); the caller computes
 * part 0, then claims and computes every part no idle worker has taken,
 * and waits (asleep) only for parts another worker is computing. So a
 * product never waits for a busy worker to become free, and rows
 * [M*part/n, M*(part+1)/n) are the same whoever computes them. */
#include "tensor/pool.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "base/workers.h"
#include "tensor/tensor.h"

/* Below this many multiply-adds a product is not worth splitting: the
 * other worker is usually asleep, and waking it costs tens of microseconds
 * on a VM whose idle cores halt (akkctl bench --hops, cross-worker). Measured
 * with `akkctl bench --mode flip-flop` on three networks, 2^21 / 2^23 /
 * 2^24: seed's net 0.205-0.210 / 0.162-0.165 / 0.155-0.160 s an epoch (the
 * sequential reference trainer: 0.16), tinynn 0.864 / 0.753-0.786 /
 * 0.784-0.829, LeNet (200 batches) 4.31-4.44 / 3.93-4.22 / 3.84-4.07. */
#define MIN_MNK (1L << 23)

struct job {
	int ta, tb, M, N, K;
	float alpha, beta;
	const float *A, *B;
	float *C;
	int lda, ldb, ldc;
};

struct part {
	struct akk_actor task;	/* first: the task is the part */
	struct akk_pool *pool;
	int index;
};

struct akk_pool {
	int n;			/* parts: the caller's and n-1 tasks */
	struct akk_workers *w;	/* where the parts run */
	struct part *parts;	/* n; parts[0] is the caller's, never posted */
	atomic_long *claim;	/* n: the product whose part i was taken */
	atomic_long gen;	/* products split so far; the current one */
	atomic_int remaining;	/* parts of it not finished */
	atomic_flag busy;	/* one product at a time */
	/* the split's work, written before gen is bumped: part i of n is
	 * fn(arg, i, n); a product's arg is job */
	void (*fn)(void *arg, int part, int n);
	void *arg;
	struct job job;
};

/* Rows [M*part/n, M*(part+1)/n) of C. */
static void run_part(void *arg, int part, int n)
{
	const struct job *j = arg;
	int r0 = (int)((long)j->M * part / n), r1 = (int)((long)j->M * (part + 1) / n);
	const float *A = j->ta ? j->A + r0 : j->A + (size_t)r0 * j->lda;

	if (r1 > r0)
		akk_sgemm_here(j->ta, j->tb, r1 - r0, j->N, j->K, j->alpha, A,
			       j->lda, j->B, j->ldb, j->beta,
			       j->C + (size_t)r0 * j->ldc, j->ldc);
}

/* Take part i of the current product: 1 when this thread computes it. A
 * successful claim holds the product open (it cannot end before the part
 * is done), so the job read afterwards is the claimed one's. */
static int claim(struct akk_pool *p, int i)
{
	long g = atomic_load(&p->gen), c = atomic_load(&p->claim[i]);

	return c < g && atomic_compare_exchange_strong(&p->claim[i], &c, g);
}

static void finish(struct akk_pool *p)
{
	if (atomic_fetch_sub(&p->remaining, 1) == 1)
		akk_workers_poke(p->w);
}

static int part_run(struct akk_actor *t)
{
	struct part *q = (struct part *)t;
	struct akk_pool *p = q->pool;

	if (claim(p, q->index)) {
		p->fn(p->arg, q->index, p->n);
		finish(p);
	}
	return 0;
}

static int parts_done(void *arg)
{
	struct akk_pool *p = arg;

	return atomic_load(&p->remaining) == 0;
}

struct akk_pool *akk_pool_on(struct akk_workers *w, int parts, struct akk_err *e)
{
	struct akk_pool *p = calloc(1, sizeof(*p));

	if (parts < 2)
		parts = 2;
	if (!p || !(p->parts = calloc(parts, sizeof(*p->parts))) ||
	    !(p->claim = calloc(parts, sizeof(*p->claim)))) {
		if (p)
			free(p->parts);
		free(p);
		akk_err_set(e, "out of memory");
		return NULL;
	}
	p->n = parts;
	p->w = w;
	atomic_init(&p->gen, 0);
	atomic_init(&p->remaining, 0);
	atomic_flag_clear(&p->busy);
	for (int i = 0; i < parts; i++) {
		atomic_init(&p->claim[i], 0);
		p->parts[i].pool = p;
		p->parts[i].index = i;
		akk_actor_init(&p->parts[i].task, w, part_run);
	}
	return p;
}

void akk_pool_destroy(struct akk_pool *p)
{
	if (!p)
		return;
	free(p->parts);
	free(p->claim);
	free(p);
}

long akk_pool_products(struct akk_pool *p)
{
	return atomic_load(&p->gen);
}

/* Run part i of n as fn(arg, i, n) for every i across p: posted for idle
 * workers, the caller computing part 0 and every part nobody took, then
 * sleeping only for parts being computed elsewhere. */
static void split(struct akk_pool *p, void (*fn)(void *, int, int), void *arg)
{
	long g;

	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->remaining, p->n);
	g = atomic_fetch_add(&p->gen, 1) + 1;
	atomic_store(&p->claim[0], g);
	for (int i = 1; i < p->n; i++)	/* for idle workers, not this one's slot */
		akk_actor_post(&p->parts[i].task);
	fn(arg, 0, p->n);
	finish(p);
	for (int i = 1; i < p->n; i++)
		if (claim(p, i)) {
			fn(arg, i, p->n);
			finish(p);
		}
	/* the parts left are being computed right now: sleep until done */
	akk_workers_wait(p->w, parts_done, p);
	atomic_flag_clear(&p->busy);
}

/* Every part of n in turn on the calling thread: what a split computes,
 * bit for bit, when the pool is on another split. Whether the pool is
 * free is a matter of timing (another gate's step, another product), so
 * the result must not depend on it: the parts are the same either way. */
static void in_turn(void (*fn)(void *, int, int), void *arg, int n)
{
	for (int i = 0; i < n; i++)
		fn(arg, i, n);
}

int akk_pool_for(struct akk_pool *p, void (*fn)(void *arg, int part, int n),
		 void *arg)
{
	if (!p) {
		fn(arg, 0, 1);
		return 1;
	}
	if (atomic_flag_test_and_set(&p->busy))
		in_turn(fn, arg, p->n);
	else
		split(p, fn, arg);
	return p->n;
}

/* Split C = alpha op(A) op(B) + beta C across p: its row parts, or, when
 * the pool is on another product, the same row parts in turn here (the
 * same bits: OpenBLAS may round a product of other sizes differently).
 * Returns 0 when done, -1 when the caller should compute it whole (no
 * pool, or too small: decided by the sizes alone). */
static int split_sgemm(struct akk_pool *p, int trans_a, int trans_b, int M,
		       int N, int K, float alpha, const float *A, int lda,
		       const float *B, int ldb, float beta, float *C, int ldc)
{
	struct job j = { trans_a, trans_b, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc };

	if (!p || (long)M * N * K < MIN_MNK || M < 2 * p->n)
		return -1;
	if (atomic_flag_test_and_set(&p->busy)) {
		in_turn(run_part, &j, p->n);
		return 0;
	}
	p->job = j;
	split(p, run_part, &p->job);
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
