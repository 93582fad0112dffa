/* reference.c - sequential training through the gates, for tests. */
#include "model/reference.h"

#include <stdlib.h>
#include <string.h>

int akk_reference_init(struct akk_reference *r, const struct akk_model *m,
		       const struct akk_dataset *train, struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	int bs = s->sched.batch_size;

	memset(r, 0, sizeof(*r));
	r->model = m;
	r->train = train;
	r->per_epoch = akk_batches_per_epoch(train->n, bs);
	r->gates = calloc(m->ngates, sizeof(*r->gates));
	r->flows = calloc(m->ngates, sizeof(*r->flows));
	r->outs = calloc(m->ngates, sizeof(*r->outs));
	r->dxs = calloc(m->ngates, sizeof(*r->dxs));
	r->perm = malloc(train->n * sizeof(*r->perm));
	if (!r->gates || !r->flows || !r->outs || !r->dxs || !r->perm ||
	    akk_batch_alloc(&r->batch, bs, akk_shape_size(s->input),
			    akk_model_outputs(m), m->steps)) {
		akk_reference_release(r);
		return akk_err_set(e, "out of memory");
	}
	r->batch.tmap = m->tmap.n ? &m->tmap : NULL;
	for (int i = 0; i < m->ngates; i++)
		if (akk_gate_init(&r->gates[i], &m->gates[i],
				  &(struct akk_gate_config){ .max_batch = bs, .ntapes = 1, .nevals = 1,
							     .steps_per_epoch = r->per_epoch,
							     .epochs = s->sched.epochs,
							     .seed = s->seed }, e)) {
			akk_reference_release(r);
			return -1;
		}
	if (akk_flows_init(r->flows, m, 1, 1, bs, e)) {
		free(r->flows);
		r->flows = NULL;
		akk_reference_release(r);
		return -1;
	}
	if (akk_preprocess_init(&r->pre, &s->data, akk_shape_size(s->input),
				akk_shape_channels(s->input), train, e)) {
		akk_reference_release(r);
		return -1;
	}
	akk_train_order(r->perm, train->n, s->sched.order, bs, s->seed, 0);
	return 0;
}

void akk_reference_release(struct akk_reference *r)
{
	for (int i = 0; r->gates && i < r->model->ngates; i++)
		akk_gate_release(&r->gates[i]);
	free(r->gates);
	if (r->flows)
		akk_flows_release(r->flows, r->model->ngates);
	free(r->flows);
	free(r->outs);
	free(r->dxs);
	free(r->perm);
	akk_batch_release(&r->batch);
	akk_preprocess_release(&r->pre);
	memset(r, 0, sizeof(*r));
}

/* Gate i's output gradient: the loss's for the last gate, else the sum
 * of its readers' input gradients. */
static const float *grad_of(struct akk_reference *r, int i, const float *dlogits, int B)
{
	const struct akk_gate_plan *p = &r->model->gates[i];
	const float *rdx[AKK_MAX_JOIN];

	if (!p->nread)
		return dlogits;
	for (int j = 0; j < p->nread; j++)
		rdx[j] = r->dxs[p->readers[j]];
	return akk_flow_grad(&r->flows[i], rdx, B);
}

int akk_reference_step(struct akk_reference *r, double *loss_sum,
		       long *correct, struct akk_err *e)
{
	const struct akk_model *m = r->model;
	const struct akk_spec *s = m->spec;
	struct akk_batch *b = &r->batch;
	const float *h;
	double loss;

	akk_batch_fill(b, r->train, r->perm, r->index, s->sched.batch_size, &r->pre);
	for (int i = 0; i < m->ngates && r->index == 0; i++)
		akk_gate_restart(&r->gates[i]);
	for (int i = 0; i < m->ngates; i++) {
		const struct akk_gate_plan *p = &m->gates[i];
		const float *src[AKK_MAX_JOIN];
		for (int k = 0; k < p->nsrc; k++)
			src[k] = p->src[k] < 0 ? b->x : r->outs[p->src[k]];
		h = akk_flow_join_train(&r->flows[i], &r->gates[i], src, b->B);
		if (!(r->outs[i] = akk_gate_forward(&r->gates[i], h, b->B, r->id, e)))
			return -1;
	}
	h = r->outs[m->ngates - 1];
	loss = akk_model_loss(m, b->dlogits, h, b->labels, b->targets, b->B,
			      correct, NULL);
	if (loss_sum)
		*loss_sum += loss * b->B;
	for (int i = m->ngates - 1; i >= 0; i--) {
		h = grad_of(r, i, b->dlogits, b->B);
		int dx = akk_gate_reads_gates(&m->gates[i]);
		r->dxs[i] = akk_gate_backward(&r->gates[i], h, b->B, r->id, dx, e);
		if ((dx && !r->dxs[i]) || akk_gate_step(&r->gates[i], e))
			return -1;
	}
	r->id++;
	if (++r->index == r->per_epoch) {
		r->index = 0;
		r->epoch++;
		akk_train_order(r->perm, r->train->n, s->sched.order,
				s->sched.batch_size, s->seed, r->epoch);
	}
	return 0;
}

int akk_reference_evaluate(struct akk_reference *r,
			   const struct akk_dataset *d, double *loss,
			   double *accuracy, struct akk_err *e)
{
	const struct akk_model *m = r->model;
	const struct akk_spec *s = m->spec;
	long n = akk_batches_per_epoch(d->n, s->sched.batch_size), correct = 0;
	double sum = 0;
	struct akk_reg_sums reg = { 0 };
	struct akk_gate *gp[AKK_MAX_GATES];

	(void)e;
	for (int g = 0; g < m->ngates; g++)
		gp[g] = &r->gates[g];
	for (long i = 0; i < n; i++) {
		struct akk_batch *b = &r->batch;
		const float *h;

		akk_batch_fill(b, d, NULL, i, s->sched.batch_size, &r->pre);
		akk_flows_eval(m, gp, r->flows, 0, b->x, b->B, r->outs);
		h = r->outs[m->ngates - 1];
		sum += akk_model_loss(m, NULL, h, b->labels, b->targets, b->B,
				      &correct, &reg) * b->B;
	}
	*loss = d->n ? sum / d->n : 0;
	*accuracy = d->n ? (double)correct / ((double)d->n * m->steps) : 0;
	if (s->data.task == AKK_TASK_REGRESSION)	/* R^2 */
		*accuracy = akk_reg_r2(&reg);
	return 0;
}
