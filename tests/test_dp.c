/* test_dp.c - data parallelism's pieces that need no MPI: batchnorm's
 * sums over replicas (threads standing in for ranks, the sum hook a
 * barrier), lr_scaling's learning rate (Goyal et al.: R lr, warmed up from
 * lr) and its config key. The runs themselves are in test_mpi.c (under
 * mpirun). Runs under ThreadSanitizer too. */
#include "testutil.h"
#include "config/spec.h"
#include "nn/layer.h"
#include "nn/optim.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* --- batchnorm over replicas --------------------------------------------- */

#define R 3
#define BMAX 16

struct replica {
	struct akk_layer_sync sync;	/* first: the hook finds us from it */
	struct world *w;
	int r, B;
	struct akk_layer l;
	float *x, *y, *aux, *work, *dy, *dx, *dp, *p, s[64];
};

struct world {
	pthread_barrier_t bar;
	double slot[R][64];
	struct replica rep[R];
	int backward_calls, forward_calls;	/* replica 0's */
};

/* The sum over the replicas, in replica order, like an all-reduce. */
static int fake_sum(struct akk_layer_sync *s, double *buf, int n, int backward)
{
	struct replica *me = (struct replica *)s;
	struct world *w = me->w;
	double acc[64];

	assert_true(n <= 64);
	memcpy(w->slot[me->r], buf, n * sizeof(double));
	pthread_barrier_wait(&w->bar);
	for (int i = 0; i < n; i++) {
		acc[i] = 0;
		for (int r = 0; r < R; r++)
			acc[i] += w->slot[r][i];
	}
	pthread_barrier_wait(&w->bar);
	memcpy(buf, acc, n * sizeof(double));
	if (me->r == 0)
		backward ? w->backward_calls++ : w->forward_calls++;
	return 0;
}

static void *replica_main(void *arg)
{
	struct replica *q = arg;

	q->l.ops->forward(&q->l, q->y, q->aux, q->s, q->work, q->x, q->p, q->B, 1, NULL);
	q->l.ops->backward(&q->l, q->dx, q->dp, q->work, q->dy, q->x, q->y, q->aux, q->p, q->B);
	return NULL;
}

/* One layer at the combined batch of 16 against 3 replicas of 5, 5 and 6
 * samples each (dy: each its own slice's mean, as the loss gives). */
static void replicas_vs_one(struct akk_shape in, int syncbn)
{
	static const int Bs[R] = { 5, 5, 6 };
	struct akk_layer_spec sp = { .ops = &akk_layer_batchnorm, .momentum = 0.1f,
				     .eps = 1e-5f, .iopt = { syncbn } };
	struct akk_layer one = { .ops = sp.ops, .spec = &sp, .in = in };
	struct akk_err e = { 0 };
	struct world w = { .forward_calls = 0 };
	size_t n = akk_shape_size(in), B = 0;
	struct akk_rng rng;

	assert_int_equal(one.ops->plan(&one, &e), 0);
	int C = in.d[0];
	float *x = calloc(BMAX * n, 4), *g = calloc(BMAX * n, 4), *y = calloc(BMAX * n, 4);
	float *aux = calloc(BMAX * one.aux, 4), *work = calloc(one.work, 4);
	float *dy = calloc(BMAX * n, 4), *dx = calloc(BMAX * n, 4), *dp = calloc(2 * C, 4);
	float p[64], s[64];
	akk_rng_seed(&rng, 7, 1);
	for (size_t i = 0; i < BMAX * n; i++) {
		x[i] = 2 + 3 * (akk_rng_uniform(&rng) - 0.5f);
		g[i] = akk_rng_uniform(&rng) - 0.5f;
		dy[i] = g[i] / BMAX;
	}
	for (int c = 0; c < C; c++) {
		p[c] = 0.5f + c, p[C + c] = 0.1f * c;
		s[c] = 0, s[C + c] = 1;
	}
	one.ops->forward(&one, y, aux, s, work, x, p, BMAX, 1, NULL);
	one.ops->backward(&one, dx, dp, work, dy, x, y, aux, p, BMAX);

	pthread_barrier_init(&w.bar, NULL, R);
	for (int r = 0; r < R; r++) {
		struct replica *q = &w.rep[r];
		q->w = &w;
		q->r = r;
		q->B = Bs[r];
		q->sync = (struct akk_layer_sync){ fake_sum, calloc(one.nstate + 1, sizeof(double)), 0 };
		q->l = one;
		q->l.sync = &q->sync;
		q->x = x + B * n;
		q->y = calloc(q->B * n, 4);
		q->aux = calloc(q->B * one.aux, 4);
		q->work = calloc(one.work, 4);
		q->dy = calloc(q->B * n, 4);
		for (size_t i = 0; i < q->B * n; i++)
			q->dy[i] = g[B * n + i] / q->B;
		q->dx = calloc(q->B * n, 4);
		q->dp = calloc(2 * C, 4);
		q->p = p;
		for (int c = 0; c < C; c++)
			q->s[c] = 0, q->s[C + c] = 1;
		B += q->B;
	}
	assert_int_equal(B, BMAX);
	pthread_t t[R];
	for (int r = 0; r < R; r++)
		assert_int_equal(pthread_create(&t[r], NULL, replica_main, &w.rep[r]), 0);
	for (int r = 0; r < R; r++)
		pthread_join(t[r], NULL);
	pthread_barrier_destroy(&w.bar);
	assert_int_equal(w.forward_calls, 2);
	assert_int_equal(w.backward_calls, syncbn ? 1 : 0);

	/* running statistics: the combined batch's, on every replica */
	for (int r = 0; r < R; r++) {
		double err = tu_max_rel_err(w.rep[r].s, s, 2 * C, 1e-2);
		if (err > 1e-5)
			fail_msg("replica %d: running statistics off by %g", r, err);
	}
	/* SyncBN: y and dx (in each replica's scale) and the gradient as the
	 * reduction would combine it are the one process's */
	double dpsum[64] = { 0 };
	B = 0;
	for (int r = 0; r < R; r++) {
		struct replica *q = &w.rep[r];
		double err = tu_max_rel_err(q->y, y + B * n, q->B * n, 1e-2);
		if (syncbn && err > 1e-5)
			fail_msg("replica %d: y off by %g", r, err);
		if (!syncbn && err < 1e-3)
			fail_msg("replica %d: y is the combined batch's without sync", r);
		for (size_t i = 0; i < q->B * n; i++)
			q->dx[i] *= (float)q->B / BMAX;
		err = tu_max_rel_err(q->dx, dx + B * n, q->B * n, 1e-2);
		if (syncbn && err > 1e-5)
			fail_msg("replica %d: dx off by %g", r, err);
		for (int i = 0; i < 2 * C; i++)
			dpsum[i] += (double)q->B * q->dp[i] / BMAX;
		B += q->B;
	}
	for (int i = 0; syncbn && i < 2 * C; i++)
		if (fabs(dpsum[i] - dp[i]) > 1e-5 * fmax(fabs(dp[i]), 1e-2))
			fail_msg("parameter gradient %d: %g, one process %g", i, dpsum[i], dp[i]);
	for (int r = 0; r < R; r++) {
		struct replica *q = &w.rep[r];
		free(q->sync.buf), free(q->y), free(q->aux), free(q->work);
		free(q->dy), free(q->dx), free(q->dp);
	}
	free(x), free(g), free(y), free(aux), free(work), free(dy), free(dx), free(dp);
}

static void bn_running_channels(void **unused)
{
	(void)unused;
	replicas_vs_one((struct akk_shape){ 3, { 3, 2, 5 } }, 0);
}

static void bn_running_flat(void **unused)
{
	(void)unused;
	replicas_vs_one((struct akk_shape){ 1, { 7, 0, 0 } }, 0);
}

static void syncbn_channels(void **unused)
{
	(void)unused;
	replicas_vs_one((struct akk_shape){ 3, { 3, 2, 5 } }, 1);
}

static void syncbn_flat(void **unused)
{
	(void)unused;
	replicas_vs_one((struct akk_shape){ 1, { 7, 0, 0 } }, 1);
}

/* --- lr_scaling ----------------------------------------------------------- */

static const char cfg[] =
	"data:\n"
	"  train: {images: a, labels: b}\n"
	"network:\n"
	"  input: [4]\n"
	"  gates:\n"
	"    - layers: [{dense: 3}]\n"
	"    - layers: [{dense: 2}]\n"
	"      optimizer: {lr: 0.5}\n"
	"optimizer: {type: sgd, lr: 0.1, schedule: {warmup_epochs: 2}}\n"
	"schedule: {parallel: data, lr_scaling: linear}\n";

/* With 4 replicas: 0.1 at the start, 0.25 half way, 0.4 after the warm-up;
 * every gate's optimizer, its own lr included. */
static void linear_warmup_from_base(void **unused)
{
	struct akk_spec s;
	struct akk_err e;

	(void)unused;
	if (akk_spec_parse(&s, cfg, sizeof(cfg) - 1, "dp.yaml", ".", NULL, 0, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(s.sched.lr_scaling, 1);
	akk_spec_scale_lr(&s, 4);
	assert_float_equal(akk_lr_at(&s.optim, 0, 10), 0.1, 1e-7);
	assert_float_equal(akk_lr_at(&s.optim, 1, 10), 0.25, 1e-7);
	assert_float_equal(akk_lr_at(&s.optim, 2, 10), 0.4, 1e-7);
	assert_float_equal(akk_lr_at(&s.optim, 7, 10), 0.4, 1e-7);
	assert_float_equal(akk_lr_at(&s.gates[1].optim, 2, 10), 2.0, 1e-6);
	akk_spec_release(&s);
}

/* Without lr_scaling (or one process) nothing changes: the warm-up starts
 * from 0 as before. */
static void none_keeps_lr(void **unused)
{
	struct akk_spec s;
	struct akk_err e;
	const char *sets[] = { "schedule.lr_scaling=none" };

	(void)unused;
	if (akk_spec_parse(&s, cfg, sizeof(cfg) - 1, "dp.yaml", ".", sets, 1, &e))
		fail_msg("%s", e.msg);
	akk_spec_scale_lr(&s, 4);
	assert_float_equal(akk_lr_at(&s.optim, 0, 10), 0, 1e-9);
	assert_float_equal(akk_lr_at(&s.optim, 2, 10), 0.1, 1e-7);
	akk_spec_release(&s);
}

static void unknown_scaling(void **unused)
{
	struct akk_spec s;
	struct akk_err e;
	const char *sets[] = { "schedule.lr_scaling=sqrt" };

	(void)unused;
	assert_int_equal(akk_spec_parse(&s, cfg, sizeof(cfg) - 1, "dp.yaml", ".",
					sets, 1, &e), -1);
	assert_string_equal(e.msg, "unknown lr scaling 'sqrt'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bn_running_channels),
		cmocka_unit_test(bn_running_flat),
		cmocka_unit_test(syncbn_channels),
		cmocka_unit_test(syncbn_flat),
		cmocka_unit_test(linear_warmup_from_base),
		cmocka_unit_test(none_keeps_lr),
		cmocka_unit_test(unknown_scaling),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
