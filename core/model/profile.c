/* profile.c - per-layer timing of a planned network (profile.h). */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "base/clock.h"
#include "base/rng.h"
#include "model/gate.h"
#include "model/profile.h"
#include "nn/layer.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

int akk_model_nlayers(const struct akk_model *m)
{
	int n = 0;
	for (int i = 0; i < m->ngates; i++)
		n += m->gates[i].nlayers;
	return n;
}

double akk_layer_train_flops(const struct akk_gate_plan *g, int i, int B)
{
	double f = g->layers[i].flops;
	return (double)B * (i == 0 && !akk_gate_reads_gates(g) ? 2 * f : 3 * f);
}

static void fill(float *x, size_t n, float scale, struct akk_rng *r)
{
	for (size_t i = 0; i < n; i++)
		x[i] = scale * (akk_rng_uniform(r) - 0.5f);
}

void akk_profile_batch(const struct akk_gate_plan *p, int B, float dy_scale,
		       struct akk_rng *r, float *x, float *dy)
{
	size_t nin = (size_t)B * akk_shape_size(p->in);
	int vocab;

	fill(x, nin, 1.0f, r);
	fill(dy, (size_t)B * akk_shape_size(p->out), dy_scale, r);
	/* an embedding takes token ids: noise would give it NaN rows */
	vocab = p->nlayers ? akk_embedding_vocab(&p->layers[0]) : 0;
	for (size_t k = 0; vocab && k < nin; k++)
		x[k] = (float)(k * 7919 % (size_t)vocab);
}

/* The product shape of a dense, conv2d, conv1d or conv_transpose2d
 * layer's forward (M x K by K x N), of a recurrent layer's step, 0 for
 * other kinds. */
static int gemm_shape(const struct akk_layer *l, int B, int *M, int *N, int *K)
{
	if (l->ops == &akk_layer_dense) {	/* on a sequence, B T rows */
		*M = l->in.rank == 2 ? B * l->in.d[0] : B;
		*N = l->spec->units;
		*K = l->in.d[l->in.rank - 1];
		return 1;
	}
	if (l->ops == &akk_layer_conv2d) {
		*M = l->out.d[1] * l->out.d[2];
		*N = l->spec->filters;
		*K = l->in.d[0] * l->spec->kernel * l->spec->kernel;
		return 1;
	}
	if (l->ops == &akk_layer_conv1d) {	/* the windows of the batch, W'^T */
		*M = B * l->out.d[0];
		*N = l->spec->filters;
		*K = l->spec->kernel * l->in.d[1];
		return 1;
	}
	if (l->ops == &akk_layer_lstm || l->ops == &akk_layer_gru ||
	    l->ops == &akk_layer_rnn) {	/* a step's (B, H) x (H, G H): the time loop's */
		*M = B;
		*N = l->views[1].dims[0];	/* weight_hh: G H rows */
		*K = l->spec->units;
		return 1;
	}
	if (l->ops == &akk_layer_conv_transpose2d) {	/* W^T x per sample */
		*M = l->spec->filters * l->spec->kernel * l->spec->kernel;
		*N = l->in.d[1] * l->in.d[2];
		*K = l->in.d[0];
		return 1;
	}
	return 0;
}

/* Seconds akk_sgemm takes for one product of l's forward shape, per FLOP,
 * best of reps; 0 for a layer with no product. */
static double gemm_seconds_per_flop(const struct akk_layer *l, int B, int reps)
{
	int M, N, K;
	double best = 0;
	float *a, *b, *c;

	if (!gemm_shape(l, B, &M, &N, &K))
		return 0;
	a = akk_alloc((size_t)M * K);
	b = akk_alloc((size_t)K * N);
	c = akk_alloc((size_t)M * N);
	if (!a || !b || !c)
		goto out;
	memset(a, 0, (size_t)M * K * sizeof(float));
	memset(b, 0, (size_t)K * N * sizeof(float));
	for (int r = 0; r <= reps; r++) {
		double t0 = akk_now();
		akk_sgemm(NULL, 0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
		double t = akk_now() - t0;
		if (r && (!best || t < best))
			best = t;
	}
	best /= 2.0 * M * N * K;
out:
	akk_free(a);
	akk_free(b);
	akk_free(c);
	return best;
}

static int profile_gate(const struct akk_gate_plan *p, int gi, int B, int reps,
			uint64_t seed, struct akk_layer_cost *cost,
			struct akk_err *e)
{
	struct akk_gate g;
	struct akk_rng r;
	float *x = NULL, *dy = NULL;
	size_t nin = akk_shape_size(p->in), nout = akk_shape_size(p->out);
	int rc = -1;

	/* an lr schedule that stays at its start for the steps timed */
	struct akk_gate_config c = akk_gate_config_eval(B, seed);

	c.steps_per_epoch = 1000000;
	if (akk_gate_init(&g, p, &c, e))
		return -1;
	akk_rng_seed(&r, seed, 0x9e3779b97f4a7c15ull + (uint64_t)gi);
	x = akk_alloc((size_t)B * nin);
	dy = akk_alloc((size_t)B * nout);
	if (!x || !dy) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	akk_profile_batch(p, B, 1.0f, &r, x, dy);
	for (int i = 0; i < p->nlayers; i++) {
		cost[i] = (struct akk_layer_cost){ .gate = gi, .layer = i };
		cost[i].flops = akk_layer_train_flops(p, i, B);
	}
	for (int rep = 0; rep <= reps; rep++) {
		struct akk_tape *t = &g.tapes[0];
		const float *in = x, *cur = dy;
		int flip = 0;
		double t0, step;

		for (int i = 0; i < p->nlayers; i++) {
			const struct akk_layer *l = &g.layers[i];
			float *y = t->act + (size_t)B * g.act_off[i];
			/* a neighbour computes it: its time is the neighbour's */
			if (akk_gate_fused_away(&g, i))
				continue;
			t0 = akk_now();
			l->ops->forward(l, y, t->aux + (size_t)B * g.aux_off[i],
					g.state + l->soff, g.work, in,
					g.params + l->poff, B, 1, &g.rng);
			t0 = akk_now() - t0;
			if (rep == 1 || (rep > 1 && t0 < cost[i].fwd))
				cost[i].fwd = t0;
			in = y;
		}
		for (int i = p->nlayers - 1; i >= 0; i--) {
			const struct akk_layer *l = &g.layers[i];
			const float *xi = i ? t->act + (size_t)B * g.act_off[i - 1] : x;
			const float *y = t->act + (size_t)B * g.act_off[i];
			float *dx = i ? g.dbuf[flip] : (akk_gate_reads_gates(p) ? t->dx : NULL);
			if (akk_gate_fused_away(&g, i))
				continue;
			t0 = akk_now();
			l->ops->backward(l, dx, g.grads + l->poff, g.work, cur,
					 xi, y, t->aux + (size_t)B * g.aux_off[i],
					 g.params + l->poff, B);
			t0 = akk_now() - t0;
			if (rep == 1 || (rep > 1 && t0 < cost[i].bwd))
				cost[i].bwd = t0;
			cur = dx;
			flip ^= 1;
		}
		/* a step with a tiny gradient: the same work, sane weights */
		for (size_t k = 0; k < p->nparams; k++)
			g.grads[k] *= 1e-6f;
		t0 = akk_now();
		if (akk_gate_step(&g, e))
			goto out;
		step = akk_now() - t0;
		for (int i = 0; rep && i < p->nlayers; i++) {
			double o = p->nparams ? step * (double)p->layers[i].nparams /
				(double)p->nparams : 0;
			if (rep == 1 || o < cost[i].opt)
				cost[i].opt = o;
		}
	}
	for (int i = 0; i < p->nlayers; i++) {
		double spf = gemm_seconds_per_flop(&g.layers[i], B, reps);
		cost[i].gemm = spf * cost[i].flops;
		/* a rate measured on one shape, so never more than the layer */
		if (cost[i].gemm > cost[i].fwd + cost[i].bwd)
			cost[i].gemm = cost[i].fwd + cost[i].bwd;
	}
	rc = 0;
out:
	akk_free(x);
	akk_free(dy);
	akk_gate_release(&g);
	return rc;
}

int akk_profile_model(const struct akk_model *m, int B, int reps,
		      struct akk_layer_cost *cost, struct akk_err *e)
{
	int off = 0, rc = 0;
#if defined(__x86_64__) || defined(__i386__)
	unsigned csr = _mm_getcsr();
#endif

	if (reps < 1)
		reps = 1;
	/* as the actors compute: one BLAS thread, denormals flushed (the
	 * caller's float mode is restored after) */
	akk_blas_threads(1);
	akk_float_mode();
	for (int gi = 0; gi < m->ngates && !rc; gi++) {
		rc = profile_gate(&m->gates[gi], gi, B, reps,
				  m->spec ? m->spec->seed : 42, cost + off, e);
		off += m->gates[gi].nlayers;
	}
#if defined(__x86_64__) || defined(__i386__)
	_mm_setcsr(csr);
#endif
	return rc;
}

int akk_profile_layer(const struct akk_layer *l, int B, int reps,
		      struct akk_layer_cost *c, struct akk_err *e)
{
	size_t nin = (size_t)B * akk_shape_size(l->in), nout = (size_t)B * akk_shape_size(l->out);
	size_t size[] = { nin, nin, nout, nout, (size_t)B * l->aux,
			  l->work + (size_t)B * l->work_sample, l->nparams,
			  l->nparams, l->nstate };
	float *buf[9] = { 0 };	/* x dx y dy aux work params grads state */
	struct akk_rng r;
	int rc = -1;
#if defined(__x86_64__) || defined(__i386__)
	unsigned csr = _mm_getcsr();
#endif

	*c = (struct akk_layer_cost){ .flops = 3.0 * B * l->flops };
	for (int i = 0; i < 9; i++)
		if (!(buf[i] = akk_alloc(size[i] ? size[i] : 1))) {
			akk_err_set(e, "out of memory");
			goto out;
		}
	akk_rng_seed(&r, 42, 0x9e3779b97f4a7c15ull);
	fill(buf[0], nin, 1.0f, &r);
	fill(buf[3], nout, 1.0f, &r);
	fill(buf[6], l->nparams, 1.0f, &r);
	memset(buf[8], 0, size[8] * sizeof(float));
	akk_blas_threads(1);
	akk_float_mode();
	for (int rep = 0; rep <= (reps < 1 ? 1 : reps); rep++) {
		double t0 = akk_now(), t;
		l->ops->forward(l, buf[2], buf[4], buf[8], buf[5], buf[0], buf[6], B, 1, &r);
		t = akk_now() - t0;
		if (rep == 1 || (rep > 1 && t < c->fwd))
			c->fwd = t;
		memset(buf[7], 0, size[7] * sizeof(float));
		t0 = akk_now();
		l->ops->backward(l, buf[1], buf[7], buf[5], buf[3], buf[0], buf[2],
				 buf[4], buf[6], B);
		t = akk_now() - t0;
		if (rep == 1 || (rep > 1 && t < c->bwd))
			c->bwd = t;
	}
	rc = 0;
out:
#if defined(__x86_64__) || defined(__i386__)
	_mm_setcsr(csr);
#endif
	for (int i = 0; i < 9; i++)
		akk_free(buf[i]);
	return rc;
}
