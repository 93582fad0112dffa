/* flow.c - joins and forks between gates (flow.h). */
#include "model/flow.h"

#include <string.h>

#include "tensor/tensor.h"

/* Whether gate p's gradient is a sum of its readers' parts (or one
 * reader's part of a concatenated input): it needs a buffer. */
static int sums_gradient(const struct akk_gate_plan *p)
{
	return p->nread > 1 || (p->nread == 1 && !p->rd_whole[0]);
}

int akk_gate_gathers(const struct akk_gate_plan *p)
{
	return p->nsrc > 1 || p->src_at[0] || p->src_row[0] != p->src_n[0];
}

double akk_flow_memory(const struct akk_gate_plan *p, int ntrain, int neval,
		       int max_batch)
{
	double in = (double)akk_shape_size(p->in), out = (double)akk_shape_size(p->out);

	return sizeof(float) * ((akk_gate_gathers(p) ? (double)(ntrain + neval) * max_batch * in : 0) +
				(sums_gradient(p) ? (double)max_batch * out : 0));
}

int akk_flow_init(struct akk_flow *f, const struct akk_gate_plan *p, int ntrain,
		  int neval, int max_batch, struct akk_err *e)
{
	size_t in = (size_t)akk_shape_size(p->in), out = (size_t)akk_shape_size(p->out);

	memset(f, 0, sizeof(*f));
	f->plan = p;
	f->ntrain = ntrain;
	f->neval = neval;
	f->max_batch = max_batch;
	if (akk_gate_gathers(p) && ntrain + neval > 0 &&
	    !(f->in = akk_alloc((size_t)(ntrain + neval) * max_batch * in)))
		return akk_err_set(e, "out of memory for gate %d's joined input", p->index + 1);
	if (sums_gradient(p) && !(f->dy = akk_alloc((size_t)max_batch * out))) {
		akk_flow_release(f);
		return akk_err_set(e, "out of memory for gate %d's gradient", p->index + 1);
	}
	return 0;
}

void akk_flow_release(struct akk_flow *f)
{
	akk_free(f->in);
	akk_free(f->dy);
	f->in = f->dy = NULL;
}

void akk_join_into(const struct akk_gate_plan *p, const float *const *src, int B,
		   float *y)
{
	size_t in = (size_t)akk_shape_size(p->in);

	/* source k's sample b: src_n[k] floats at src_at[k] of its row */
	for (int b = 0; b < B; b++) {
		float *row = y + (size_t)b * in;
		for (int k = 0; k < p->nsrc; k++) {
			const float *part = src[k] + (size_t)b * p->src_row[k] + p->src_at[k];
			size_t n = p->src_n[k];
			if (p->join != AKK_JOIN_ADD || !k) {
				memcpy(row + p->src_off[k], part, n * sizeof(float));
				continue;
			}
			for (size_t i = 0; i < n; i++)
				row[i] += part[i];
		}
	}
}

static const float *join(struct akk_flow *f, int slot, const float *const *src, int B)
{
	const struct akk_gate_plan *p = f->plan;
	float *y;

	if (!akk_gate_gathers(p))
		return src[0];
	y = f->in + (size_t)slot * f->max_batch * (size_t)akk_shape_size(p->in);
	akk_join_into(p, src, B, y);
	return y;
}

const float *akk_flow_join_train(struct akk_flow *f, const struct akk_gate *g,
				 const float *const *src, int B)
{
	return join(f, g->ntapes ? (g->head + g->count) % g->ntapes : 0, src, B);
}

const float *akk_flow_join_eval(struct akk_flow *f, int slot,
				const float *const *src, int B)
{
	return join(f, f->ntrain + slot, src, B);
}

const float *akk_flow_grad(struct akk_flow *f, const float *const *rdx, int B)
{
	const struct akk_gate_plan *p = f->plan;
	size_t out = (size_t)akk_shape_size(p->out);

	if (!f->dy)
		return rdx[0];
	for (int j = 0; j < p->nread; j++)
		for (int b = 0; b < B; b++) {
			const float *part = rdx[j] + (size_t)b * p->rd_in[j] + p->rd_off[j];
			float *d = f->dy + (size_t)b * out;
			if (!j) {
				memcpy(d, part, out * sizeof(float));
				continue;
			}
			for (size_t i = 0; i < out; i++)
				d[i] += part[i];
		}
	return f->dy;
}

void akk_flows_eval(const struct akk_model *m, struct akk_gate *const *gates,
		    struct akk_flow *flows, int slot, const float *x, int B,
		    const float **outs)
{
	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *p = &m->gates[g];
		const float *src[AKK_MAX_JOIN];

		for (int k = 0; k < p->nsrc; k++)
			src[k] = p->src[k] < 0 ? x : outs[p->src[k]];
		outs[g] = akk_gate_eval(gates[g], slot, akk_flow_join_eval(&flows[g], slot, src, B), B);
	}
}

int akk_flows_init(struct akk_flow *flows, const struct akk_model *m, int ntrain,
		   int neval, int max_batch, struct akk_err *e)
{
	memset(flows, 0, (size_t)m->ngates * sizeof(*flows));
	for (int g = 0; g < m->ngates; g++)
		if (akk_flow_init(&flows[g], &m->gates[g], ntrain, neval, max_batch, e)) {
			akk_flows_release(flows, g);
			return -1;
		}
	return 0;
}

void akk_flows_release(struct akk_flow *flows, int n)
{
	for (int g = 0; flows && g < n; g++)
		akk_flow_release(&flows[g]);
}
