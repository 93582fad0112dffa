/* overlap.c - the gates' own work, in turn and at once (overlap.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "base/clock.h"
#include "base/rng.h"
#include "model/gate.h"
#include "model/overlap.h"
#include "model/profile.h"
#include "tensor/tensor.h"

/* One gate with its random input and output gradient, and what its
 * thread did in the concurrent run. */
struct lane {
	const struct akk_gate_plan *plan;
	struct akk_gate g;
	float *x, *dy;
	int B, n, dx;		/* n: batches of a concurrent round; dx: it
				 * sends an input gradient upstream */
	long id;		/* the next batch's number */
	pthread_barrier_t *go;	/* the concurrent run's start */
	double begin, end;
	int rc;
	struct akk_err err;
};

/* Batches per gate in one round of each run (akk_overlap_bound). */
#define ROUND 50

/* Build lane l for gate gi of m: the gate as training builds it, an input
 * of its shape (token ids for an embedding) and a small output gradient,
 * which keeps the weights sane over the steps timed. */
static int lane_init(struct lane *l, const struct akk_model *m, int gi, int B,
		     struct akk_err *e)
{
	const struct akk_gate_plan *p = &m->gates[gi];
	size_t nin = (size_t)B * akk_shape_size(p->in);
	size_t nout = (size_t)B * akk_shape_size(p->out);
	uint64_t seed = m->spec ? m->spec->seed : 42;
	struct akk_gate_config c = akk_gate_config_eval(B, seed);
	struct akk_rng r;

	l->B = B;
	l->dx = akk_gate_reads_gates(p);
	c.steps_per_epoch = 1000000;	/* the lr stays at its start */
	if (akk_gate_init(&l->g, p, &c, e))
		return -1;
	l->plan = p;	/* its gate is built: released by lane_release */
	l->x = akk_alloc(nin);
	l->dy = akk_alloc(nout);
	if (!l->x || !l->dy) {
		akk_err_set(e, "out of memory");
		return -1;
	}
	akk_rng_seed(&r, seed, 0x2545f4914f6cdd1dull + (uint64_t)gi);
	akk_profile_batch(p, B, 1e-3f, &r, l->x, l->dy);
	return 0;
}

static void lane_release(struct lane *l)
{
	akk_free(l->x);
	akk_free(l->dy);
	if (l->plan)
		akk_gate_release(&l->g);
}

/* k training batches of l's gate: forward, backward, optimizer step. */
static int lane_train(struct lane *l, int k, struct akk_err *e)
{
	for (int i = 0; i < k; i++, l->id++) {
		if (!akk_gate_forward(&l->g, l->x, l->B, l->id, e))
			return -1;
		if (!akk_gate_backward(&l->g, l->dy, l->B, l->id, l->dx, e) &&
		    (l->dx || e->msg[0]))
			return -1;
		if (akk_gate_step(&l->g, e))
			return -1;
	}
	return 0;
}

/* A concurrent run's thread: its gate's n batches, from the common start. */
static void *lane_main(void *arg)
{
	struct lane *l = arg;

	akk_float_mode();
	pthread_barrier_wait(l->go);
	l->begin = akk_now();
	l->rc = lane_train(l, l->n, &l->err);
	l->end = akk_now();
	return NULL;
}

/* In turn: k batches of every gate on the calling thread, batch by
 * batch; their seconds added to o->sequential. */
static int run_sequential(struct lane *lanes, int G, int k,
			  struct akk_overlap_bound *o, struct akk_err *e)
{
	double t0 = akk_now();

	for (int b = 0; b < k; b++)
		for (int i = 0; i < G; i++)
			if (lane_train(&lanes[i], 1, e))
				return -1;
	o->sequential += akk_now() - t0;
	return 0;
}

/* At once: k batches of every gate, gate 0 on the calling thread, every
 * other on a thread of its own, released together; their seconds added to
 * o->concurrent, each gate's span and steps noted. */
static int run_concurrent(struct lane *lanes, int G, int k,
			  struct akk_overlap_bound *o, struct akk_err *e)
{
	pthread_t *tid = calloc((size_t)G, sizeof(*tid));
	pthread_barrier_t go;
	int started = 1, rc = 0;
	double t0, t1;

	if (!tid || pthread_barrier_init(&go, NULL, (unsigned)G)) {
		free(tid);
		akk_err_set(e, "cannot start the concurrent run's threads");
		return -1;
	}
	for (int i = 0; i < G; i++) {
		lanes[i].go = &go;
		lanes[i].n = k;
	}
	for (; started < G; started++)
		if (pthread_create(&tid[started], NULL, lane_main, &lanes[started]))
			break;
	if (started < G) {
		/* the threads started wait at the barrier for ever: finish
		 * them with no work */
		for (int i = started; i < G; i++)
			lanes[i].n = 0;
		for (int i = started; i < G; i++)
			pthread_barrier_wait(&go);
		akk_err_set(e, "cannot start the concurrent run's threads");
		rc = -1;
	}
	lane_main(&lanes[0]);
	for (int i = 1; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&go);
	free(tid);
	t0 = lanes[0].begin;
	t1 = lanes[0].end;
	for (int i = 0; i < G; i++) {
		if (!rc && lanes[i].rc) {
			*e = lanes[i].err;
			rc = -1;
		}
		t0 = lanes[i].begin < t0 ? lanes[i].begin : t0;
		t1 = lanes[i].end > t1 ? lanes[i].end : t1;
	}
	o->concurrent += t1 - t0;
	for (int i = 0; i < G; i++) {
		o->begin[i] = lanes[i].begin - t0;
		o->end[i] = lanes[i].end - t0;
		o->steps[i] += rc ? 0 : k;
	}
	return rc;
}

int akk_overlap_bound(const struct akk_model *m, int B, int n,
		      struct akk_overlap_bound *o, struct akk_err *e)
{
	int G = m->ngates, rc = -1;
	struct lane *lanes;
#if defined(__x86_64__) || defined(__i386__)
	unsigned csr = _mm_getcsr();
#endif

	memset(o, 0, sizeof(*o));
	o->ngates = G;
	if (G < 2 || G > AKK_MAX_GATES || n < 1) {
		akk_err_set(e, "the overlap bound needs 2 to %d gates and a batch to time",
			    AKK_MAX_GATES);
		return -1;
	}
	if (!(lanes = calloc((size_t)G, sizeof(*lanes)))) {
		akk_err_set(e, "out of memory");
		return -1;
	}
	/* as the actors compute: one BLAS thread, denormals flushed (the
	 * caller's float mode is restored after) */
	akk_blas_threads(1);
	akk_float_mode();
	for (int i = 0; i < G; i++)
		if (lane_init(&lanes[i], m, i, B, e))
			goto out;
	/* warm-up: every buffer touched once */
	for (int i = 0; i < G; i++)
		if (lane_train(&lanes[i], 1, e))
			goto out;
	/* in turn and at once, alternating in rounds of ROUND batches, so
	 * that a machine whose speed drifts slows both alike */
	for (int done = 0, k; done < n; done += k) {
		k = n - done < ROUND ? n - done : ROUND;
		if (run_sequential(lanes, G, k, o, e) || run_concurrent(lanes, G, k, o, e))
			goto out;
	}
	rc = 0;
out:
#if defined(__x86_64__) || defined(__i386__)
	_mm_setcsr(csr);
#endif
	for (int i = 0; i < G; i++)
		lane_release(&lanes[i]);
	free(lanes);
	return rc;
}
