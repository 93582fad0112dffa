/* gate.c - forward, backward and optimizer step of one gate. */
#include "model/gate.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/pool.h"

static size_t widest_input(const struct akk_gate_plan *p)
{
	size_t w = 1;

	for (int i = 0; i < p->nlayers; i++)
		if ((size_t)akk_shape_size(p->layers[i].in) > w)
			w = akk_shape_size(p->layers[i].in);
	return w;
}

/* The floats of one tape of up to max_batch samples: activations, aux
 * and the input gradient (with_dx). */
struct tape_size {
	size_t act, aux, dx;
};

static struct tape_size tape_size(const struct akk_gate_plan *p, int max_batch,
				  int with_dx)
{
	return (struct tape_size){
		.act = p->act * max_batch, .aux = p->aux * max_batch,
		.dx = with_dx ? (size_t)akk_shape_size(p->in) * max_batch : 0,
	};
}

static int tape_alloc(struct akk_tape *t, const struct akk_gate_plan *p,
		      int max_batch, int with_dx)
{
	struct tape_size n = tape_size(p, max_batch, with_dx);

	t->act = akk_alloc(n.act);
	t->aux = akk_alloc(n.aux);
	t->dx = with_dx ? akk_alloc(n.dx) : NULL;
	return !t->act || !t->aux || (with_dx && !t->dx);
}

/* With weight stashing, the weight versions live in a pool of buffers:
 * the current one (params), one per batch in flight at a step (at most
 * ntapes - 1, each keeping the version its forward saw) and the one the
 * step writes the next version into. */
static int weight_buffers(int ntapes)
{
	return ntapes + 1;
}

struct akk_gate_memory akk_gate_memory(const struct akk_gate_plan *p,
				       const struct akk_gate_config *c)
{
	int tape_batch = c->tape_batch > 0 && c->tape_batch < c->max_batch ? c->tape_batch :
			 c->max_batch;
	struct tape_size t = tape_size(p, tape_batch, 1);
	struct tape_size v = tape_size(p, c->max_batch, 0);

	/* the stash: the pool's buffers besides the gate's own weights */
	return (struct akk_gate_memory){
		.train = (double)(t.act + t.aux + t.dx) * sizeof(float) * c->ntapes,
		.eval = (double)(v.act + v.aux) * sizeof(float) * c->nevals,
		.stash = c->stash ? (double)p->nparams * sizeof(float) *
				    (weight_buffers(c->ntapes) - 1) : 0,
	};
}

static void tape_free(struct akk_tape *t)
{
	akk_free(t->act);
	akk_free(t->aux);
	akk_free(t->dx);
}

/* Mark the fused pairs of g's layers and lend the dense/conv2d layers
 * fused with their activation one scratch for the gradient through it
 * (one backward runs at a time). */
static int fuse_layers(struct akk_gate *g)
{
	const struct akk_gate_plan *p = g->plan;
	size_t wide = 0;

	akk_layers_fuse(g->layers, p->nlayers);
	for (int i = 0; i < p->nlayers; i++)
		if (g->layers[i].act_out &&
		    (size_t)akk_shape_size(g->layers[i].out) > wide)
			wide = akk_shape_size(g->layers[i].out);
	if (!wide)
		return 0;
	g->act_dy = akk_alloc(wide * g->tape_batch);
	if (!g->act_dy)
		return -1;
	for (int i = 0; i < p->nlayers; i++)
		if (g->layers[i].act_out)
			g->layers[i].act_dy = g->act_dy;
	return 0;
}

struct akk_gate_config akk_gate_config_eval(int max_batch, uint64_t seed)
{
	return (struct akk_gate_config){ .max_batch = max_batch, .ntapes = 1, .nevals = 1,
					 .steps_per_epoch = 1, .epochs = 1, .seed = seed };
}

int akk_gate_init(struct akk_gate *g, const struct akk_gate_plan *p,
		  const struct akk_gate_config *c, struct akk_err *e)
{
	int max_batch = c->max_batch, tape_batch = c->tape_batch;
	int ntapes = c->ntapes, nevals = c->nevals, stash = c->stash;
	uint64_t seed = c->seed;
	size_t per = akk_optim_state_per_param(p->optim->kind);
	size_t wide = widest_input(p);
	struct akk_rng rng;
	int fail = 0;

	memset(g, 0, sizeof(*g));
	g->plan = p;
	g->max_batch = max_batch;
	g->tape_batch = tape_batch > 0 && tape_batch < max_batch ? tape_batch : max_batch;
	g->steps_per_epoch = c->steps_per_epoch;
	g->epochs = c->epochs;
	g->params = akk_alloc(p->nparams);
	g->grads = akk_alloc(p->nparams + 1);	/* +1: a sample count (run.c) */
	g->state = akk_alloc(p->nstate);
	g->opt = akk_alloc(p->nparams * per);
	g->work = akk_alloc(p->work + p->work_sample * (size_t)max_batch);
	g->dbuf[0] = akk_alloc(wide * max_batch);
	g->dbuf[1] = akk_alloc(wide * max_batch);
	g->act_off = calloc(p->nlayers + 1, sizeof(size_t));
	g->aux_off = calloc(p->nlayers + 1, sizeof(size_t));
	g->tapes = calloc(ntapes, sizeof(*g->tapes));
	g->evals = calloc(nevals > 0 ? nevals : 1, sizeof(*g->evals));
	g->layers = calloc(p->nlayers > 0 ? p->nlayers : 1, sizeof(*g->layers));
	g->ntapes = ntapes;
	g->nevals = nevals;
	fail = !g->params || !g->grads || !g->state || !g->opt || !g->work ||
	       !g->dbuf[0] || !g->dbuf[1] || !g->act_off || !g->aux_off ||
	       !g->tapes || !g->evals || !g->layers;
	for (int i = 0; !fail && i < ntapes; i++)
		fail = tape_alloc(&g->tapes[i], p, g->tape_batch, 1);
	for (int i = 0; !fail && i < nevals; i++)
		fail = tape_alloc(&g->evals[i], p, max_batch, 0);
	if (!fail && stash) {
		g->nwbuf = weight_buffers(ntapes);
		fail = !(g->wbuf = calloc(g->nwbuf, sizeof(*g->wbuf)));
		for (int i = 0; !fail && i < g->nwbuf; i++)
			fail = !(g->wbuf[i] = i ? akk_alloc(p->nparams) : g->params);
	}
	if (fail) {
		akk_gate_release(g);
		return akk_err_set(e, "out of memory allocating gate %d", p->index + 1);
	}
	for (int i = 0; i < p->nlayers; i++) {
		const struct akk_layer *l = &p->layers[i];
		g->layers[i] = *l;
		g->act_off[i + 1] = g->act_off[i] + akk_shape_size(l->out);
		g->aux_off[i + 1] = g->aux_off[i] + l->aux;
		akk_rng_seed(&rng, seed, AKK_STREAM_INIT + p->index * 64 + i);
		l->ops->init(l, g->params + l->poff, g->state + l->soff, &rng);
	}
	if (fuse_layers(g)) {
		akk_gate_release(g);
		return akk_err_set(e, "out of memory allocating gate %d", p->index + 1);
	}
	akk_rng_seed(&g->rng, seed, AKK_STREAM_DROPOUT + p->index);
	return 0;
}

void akk_gate_release(struct akk_gate *g)
{
	for (int i = 0; g->tapes && i < g->ntapes; i++)
		tape_free(&g->tapes[i]);
	for (int i = 0; g->evals && i < g->nevals; i++)
		tape_free(&g->evals[i]);
	free(g->tapes);
	free(g->evals);
	free(g->act_off);
	free(g->aux_off);
	free(g->layers);
	/* params is one of the pool's buffers, when there is a pool */
	for (int i = 0; g->wbuf && i < g->nwbuf; i++)
		akk_free(g->wbuf[i]);
	if (!g->wbuf)
		akk_free(g->params);
	free(g->wbuf);
	akk_free(g->grads);
	akk_free(g->state);
	akk_free(g->opt);
	akk_free(g->work);
	akk_free(g->act_dy);
	akk_free(g->dbuf[0]);
	akk_free(g->dbuf[1]);
	memset(g, 0, sizeof(*g));
}

void akk_gate_use_pool(struct akk_gate *g, struct akk_pool *pool)
{
	for (int i = 0; i < g->plan->nlayers; i++)
		g->layers[i].pool = pool;
}

int akk_gate_fused_away(const struct akk_gate *g, int i)
{
	return (i + 1 < g->plan->nlayers && g->layers[i + 1].relu_in) ||
	       (i > 0 && g->layers[i - 1].act_out);
}

/* Where layer i's output lives: act + B*act_off[i+1] minus its own size,
 * i.e. act + B*act_off[i]; a layer fused with the activation after it
 * writes the activation's output, where the next layer reads it. */
static float *output_of(const struct akk_gate *g, const struct akk_tape *t,
			int i, int B)
{
	return t->act + (size_t)B * g->act_off[g->layers[i].act_out ? i + 1 : i];
}

/* Run every layer forward. */
static const float *run_forward(struct akk_gate *g, struct akk_tape *t,
				const float *x, const float *params, int B,
				int train)
{
	const struct akk_gate_plan *p = g->plan;
	const float *in = x;

	for (int i = 0; i < p->nlayers; i++) {
		const struct akk_layer *l = &g->layers[i];
		float *y = output_of(g, t, i, B);
		if (akk_gate_fused_away(g, i))
			continue;	/* applied by a neighbour */
		l->ops->forward(l, y, t->aux + (size_t)B * g->aux_off[i],
				g->state + l->soff, g->work, in,
				params + l->poff, B, train, &g->rng);
		in = y;
	}
	return in;
}

/* Whether the current weights or a live tape's read buffer b. */
static int weights_in_use(const struct akk_gate *g, const float *b)
{
	if (b == g->params)
		return 1;
	for (int i = 0; i < g->count; i++)
		if (g->tapes[(g->head + i) % g->ntapes].w == b)
			return 1;
	return 0;
}

/* The pool's buffer the next version goes to: one that neither the
 * current weights nor a batch in flight reads. */
static float *free_weights(const struct akk_gate *g)
{
	for (int i = 0; i < g->nwbuf; i++)
		if (!weights_in_use(g, g->wbuf[i]))
			return g->wbuf[i];
	return NULL;
}

const float *akk_gate_forward(struct akk_gate *g, const float *x, int B,
			      long id, struct akk_err *e)
{
	struct akk_tape *t;
	const float *y;
	uint32_t acc = 0;
	size_t n;

	if (g->count == g->ntapes) {
		akk_err_set(e, "gate %d: more than %d training batches in flight",
			    g->plan->index + 1, g->ntapes);
		return NULL;
	}
	if (B > g->tape_batch) {
		akk_err_set(e, "gate %d: a training batch of %d samples, but its tapes hold %d",
			    g->plan->index + 1, B, g->tape_batch);
		return NULL;
	}
	t = &g->tapes[(g->head + g->count) % g->ntapes];
	/* stashing: the version stays where it is until no tape reads it */
	t->w = g->params;
	g->count++;
	t->x = x;
	t->B = B;
	t->id = id;
	t->version = g->step;
	y = run_forward(g, t, x, g->params, B, 1);
	/* one pass over the output, small next to the products that made
	 * it: a non-finite value is named here, in the gate it came from */
	n = (size_t)B * akk_shape_size(g->plan->out);
	for (size_t i = 0; i < n; i++) {
		uint32_t b;
		memcpy(&b, &y[i], sizeof(b));
		acc |= (b & 0x7f800000u) + 0x00800000u;
	}
	if (acc & 0x80000000u) {
		akk_err_set(e, "non-finite output of gate %d at step %ld (training batch %ld)",
			    g->plan->index + 1, g->step, id + 1);
		return NULL;
	}
	return y;
}

void akk_gate_restart(struct akk_gate *g)
{
	for (int i = 0; i < g->plan->nlayers; i++) {
		const struct akk_layer *l = &g->layers[i];
		if (l->ncarry)
			memset(g->state + l->soff, 0, l->ncarry * sizeof(float));
	}
}

const float *akk_gate_backward(struct akk_gate *g, const float *dy, int B,
			       long id, int need_dx, struct akk_err *e)
{
	const struct akk_gate_plan *p = g->plan;
	struct akk_tape *t;
	const float *params;
	const float *cur = dy;
	int flip = 0;

	if (!g->count || g->tapes[g->head].id != id || g->tapes[g->head].B != B) {
		akk_err_set(e, "gate %d: backward of batch %ld does not match the oldest forward (%s %ld)",
			    p->index + 1, id, g->count ? "batch" : "none",
			    g->count ? g->tapes[g->head].id : -1L);
		return NULL;
	}
	t = &g->tapes[g->head];
	params = g->wbuf ? t->w : g->params;
	for (int i = p->nlayers - 1; i >= 0; i--) {
		const struct akk_layer *l = &g->layers[i];
		if (akk_gate_fused_away(g, i))
			continue;	/* its gradient comes with a neighbour's */
		const float *x = i ? t->act + (size_t)B * g->act_off[i - 1] : t->x;
		const float *y = output_of(g, t, i, B);
		float *dx = i ? g->dbuf[flip] : (need_dx ? t->dx : NULL);

		l->ops->backward(l, dx, g->grads + l->poff, g->work, cur, x, y,
				 t->aux + (size_t)B * g->aux_off[i],
				 params + l->poff, B);
		cur = dx;
		flip ^= 1;
	}
	g->head = (g->head + 1) % g->ntapes;
	g->count--;
	return need_dx ? t->dx : NULL;
}

/* From this many parameters on, a step is split across the gate's pool:
 * below it, handing a part to another worker (a wake-up of tens of
 * microseconds on a VM whose idle cores sleep) costs what it saves. */
#define SPLIT_PARAMS (1L << 17)

struct step_job {
	struct akk_gate *g;
	float *to;		/* the new weights: g->params, or a free buffer */
	float lr;
	double clip;		/* akk_optim_clip of the whole gradient */
	atomic_int bad;		/* a part met a non-finite gradient */
};

/* Part i of n of the optimizer step, which zeroes the gradients for the
 * next batch and checks them in the same pass: whole 64-byte lines of
 * parameters, the last part up to the end. Elementwise, so the split
 * changes no bit. */
static void step_part(void *arg, int part, int n)
{
	struct step_job *j = arg;
	struct akk_gate *g = j->g;
	size_t N = g->plan->nparams;
	size_t lo = (N * part / n) & ~(size_t)15;
	size_t hi = part + 1 == n ? N : (N * (part + 1) / n) & ~(size_t)15;

	if (!akk_optim_update_zero(g->plan->optim, g->params, j->to, g->grads,
				   g->opt, N, lo, hi, g->step, j->lr, j->clip))
		atomic_store(&j->bad, 1);
}

int akk_gate_step(struct akk_gate *g, struct akk_err *e)
{
	const struct akk_gate_plan *p = g->plan;
	/* The step's midpoint: see akk_lr_at. */
	double epoch = ((double)g->step + 0.5) / (g->steps_per_epoch > 0 ? g->steps_per_epoch : 1);
	float lr;

	g->step++;
	if (!p->nparams)
		return 0;
	lr = akk_lr_reduced(p->optim, akk_lr_at(p->optim, epoch, g->epochs),
			    g->lr_reductions);
	g->last_lr = lr;
	/* stashing: the new version goes to a free buffer of the pool, the
	 * old stays for the batches in flight that read it; no copy */
	struct step_job j = { .g = g, .to = g->wbuf ? free_weights(g) : g->params,
		.lr = lr, .clip = akk_optim_clip(p->optim, g->grads, p->nparams) };

	if (!j.to)
		return akk_err_set(e, "gate %d: a step with %d batches in flight, "
				   "every weight buffer in use", p->index + 1, g->count);
	atomic_init(&j.bad, 0);
	/* a large step is shared with idle workers, like a product */
	if (p->nparams >= SPLIT_PARAMS && p->nlayers)
		akk_pool_for(g->layers[0].pool, step_part, &j);
	else
		step_part(&j, 0, 1);
	/* Checked in the update's own pass: a non-finite gradient has then
	 * spoilt the weights in memory, but the run stops on this error and
	 * never checkpoints them. */
	if (atomic_load(&j.bad))
		return akk_err_set(e, "non-finite gradient in gate %d at step %ld",
				   p->index + 1, g->step);
	g->params = j.to;
	return 0;
}

const float *akk_gate_eval(struct akk_gate *g, int slot, const float *x, int B)
{
	return run_forward(g, &g->evals[slot], x, g->params, B, 0);
}

long akk_gate_backward_version(const struct akk_gate *g)
{
	if (!g->count)
		return -1;
	return g->wbuf ? g->tapes[g->head].version : g->step;
}

size_t akk_gate_stash_bytes(const struct akk_gate *g)
{
	return g->wbuf ? g->plan->nparams * sizeof(float) * (g->nwbuf - 1) : 0;
}

long akk_gate_pack_len(const struct akk_gate_plan *p)
{
	return (long)(p->nparams * (1 + akk_optim_state_per_param(p->optim->kind)) +
		      p->nstate) + 2 + 8;
}

void akk_gate_pack(const struct akk_gate *g, float *out)
{
	const struct akk_gate_plan *p = g->plan;
	size_t nopt = p->nparams * akk_optim_state_per_param(p->optim->kind);
	int64_t step = g->step;

	memcpy(out, g->params, p->nparams * sizeof(float));
	out += p->nparams;
	memcpy(out, g->state, p->nstate * sizeof(float));
	out += p->nstate;
	memcpy(out, g->opt, nopt * sizeof(float));
	out += nopt;
	memcpy(out, &step, sizeof(step));
	memcpy(out + 2, g->rng.s, sizeof(g->rng.s));
}

void akk_gate_unpack(struct akk_gate *g, const float *in)
{
	const struct akk_gate_plan *p = g->plan;
	size_t nopt = p->nparams * akk_optim_state_per_param(p->optim->kind);
	int64_t step;

	memcpy(g->params, in, p->nparams * sizeof(float));
	in += p->nparams;
	memcpy(g->state, in, p->nstate * sizeof(float));
	in += p->nstate;
	memcpy(g->opt, in, nopt * sizeof(float));
	in += nopt;
	memcpy(&step, in, sizeof(step));
	memcpy(g->rng.s, in + 2, sizeof(g->rng.s));
	g->step = (long)step;
}
