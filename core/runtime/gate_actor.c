/* gate_actor.c - one gate as an actor on the workers.
 *
 * Flip-flop: the gate is in its forward state (accepting Forward and
 * Validate) or its backward state (accepting Backward only); any other
 * message is a protocol error, never silently dropped. Wheels: one state,
 * every kind accepted, the gate's tape FIFO pairing each Backward with its
 * Forward. Backward sends the input gradient upstream first and then takes
 * the optimizer step, so the upstream gate works while this one updates.
 * Pipeline and gradient accumulation: a Backward whose `more` is set is not
 * the last chunk of its step group, and only adds to the gradient; the
 * group's last one steps, once, on the sum (the sentinel weighted each
 * chunk's loss gradient by its share of the group's samples). */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#include "runtime/gate_actor.h"

static enum akk_next fail(struct akk_run *r, struct akk_err *e)
{
	akk_run_fail(r, e);
	return AKK_NEXT_FAILED;
}

/* A send from a worker never blocks: a full mailbox is a planning bug
 * (schedule.c counts what can be in flight), said rather than hung. */
static enum akk_next post(struct akk_gate_actor *a, int to, const struct akk_msg *m)
{
	int rc = akk_send(&a->run->tr, to, m);
	struct akk_err e = { 0 };

	if (rc == -2) {
		akk_err_set(&e, "gate %d: the mailbox of actor %d is full (a %s message)",
			    a->self, to, akk_msg_name(m->kind));
		return fail(a->run, &e);
	}
	return rc ? AKK_NEXT_FAILED : AKK_NEXT_MESSAGE;
}

/* Data parallelism: the gradient of the whole batch from every rank's
 * slice. Each rank's gradient is the mean over its B samples; scaled by B,
 * summed over the ranks in one buffer with the counts in its last float,
 * and divided by the total, it is the mean over the whole batch, partial
 * last batches included. */
static int reduce(struct akk_gate_actor *a, int B, struct akk_err *e)
{
	struct akk_gate *g = &a->gate;
	size_t n = g->plan->nparams;
	float total;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		g->grads[i] *= (float)B;
	g->grads[n] = (float)B;
	if (akk_mpi_allreduce(&a->run->tr, a->self - 1, g->grads, (int)n + 1, 0))
		return akk_err_set(e, "gate %d: the gradient reduction failed", a->self);
	total = g->grads[n];
	for (size_t i = 0; i < n; i++)
		g->grads[i] /= total;
	return 0;
}

static int sync_sum(struct akk_layer_sync *s, double *buf, int n, int backward)
{
	struct akk_gate_actor *a = (struct akk_gate_actor *)
		((char *)s - offsetof(struct akk_gate_actor, sync));
	int chan = backward ? a->self - 1 : a->run->model->ngates + a->self;

	if (akk_mpi_allreduce(&a->run->tr, chan, buf, n, 1)) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

int akk_gate_actor_sync(struct akk_gate_actor *a, struct akk_err *e)
{
	struct akk_gate *g = &a->gate;
	size_t most = 0;

	if (!a->local)
		return 0;
	for (int i = 0; i < g->plan->nlayers; i++)
		if (g->layers[i].nstate > most)
			most = g->layers[i].nstate;
	if (!most)
		return 0;
	a->sync.sum = sync_sum;
	if (!(a->sync.buf = calloc(most + 1, sizeof(double))))
		return akk_err_set(e, "out of memory");
	for (int i = 0; i < g->plan->nlayers; i++)
		if (g->layers[i].nstate)
			g->layers[i].sync = &a->sync;
	return 0;
}

/* After a forward or backward: a batch-norm sum that failed. */
static int sync_failed(struct akk_gate_actor *a, struct akk_err *e)
{
	if (!a->sync.failed)
		return 0;
	return akk_err_set(e, "gate %d: the batch-norm reduction failed", a->self);
}

static enum akk_next handle(struct akk_gate_actor *a, const struct akk_msg *m,
			    int *backward_state)
{
	struct akk_run *r = a->run;
	struct akk_gate *g = &a->gate;
	int strict = r->sched.strict_states;
	int up = a->self - 1;
	int down = a->self == r->model->ngates ? 0 : a->self + 1;
	long out = akk_shape_size(g->plan->out), in = akk_shape_size(g->plan->in);
	struct akk_err e = { 0 };
	struct akk_msg o = *m;
	long version;

	if (strict && (m->kind == AKK_MSG_BACKWARD) != *backward_state &&
	    m->kind != AKK_MSG_SYNC && m->kind != AKK_MSG_SNAPSHOT) {
		akk_err_set(&e, "gate %d: %s message in its %s state", a->self,
			    akk_msg_name(m->kind), *backward_state ? "backward" : "forward");
		return fail(r, &e);
	}
	double t0 = akk_now(), t1;

	switch (m->kind) {
	case AKK_MSG_FORWARD:
		version = g->step;
		if (m->restart)
			akk_gate_restart(g);
		o.data = akk_gate_forward(g, m->data, m->B, m->id, &e);
		akk_trace_add(&a->trace, AKK_TRACE_FORWARD, m->id, version, t0, akk_now());
		if (!o.data || sync_failed(a, &e))
			return fail(r, &e);
		o.n = m->B * out;
		a->forwards++;
		*backward_state = 1;
		return post(a, down, &o);
	case AKK_MSG_BACKWARD:
		version = akk_gate_backward_version(g);
		o.data = akk_gate_backward(g, m->data, m->B, m->id, up > 0, &e);
		if (up > 0 && !o.data)
			return fail(r, &e);
		if ((!o.data && e.msg[0]) || sync_failed(a, &e))
			return fail(r, &e);
		o.n = up > 0 ? m->B * in : 0;
		a->backwards++;
		t1 = akk_now();
		akk_trace_add(&a->trace, AKK_TRACE_BACKWARD, m->id, version, t0, t1);
		if (post(a, up, &o) != AKK_NEXT_MESSAGE)
			return AKK_NEXT_FAILED;
		*backward_state = 0;
		/* more chunks of the step's group follow (pipeline,
		 * accumulate): the gradient only accumulates */
		if (m->more)
			return AKK_NEXT_MESSAGE;
		/* the upstream gate's backward, just sent, runs on an idle
		 * worker while this one steps */
		akk_workers_flush(&r->workers);
		t0 = akk_now();
		if (r->shards > 1 && reduce(a, m->B, &e))
			return fail(r, &e);
		if (akk_gate_step(g, &e))
			return fail(r, &e);
		akk_trace_add(&a->trace, AKK_TRACE_OPTIMIZER, m->id, g->step, t0, akk_now());
		*backward_state = 0;
		return AKK_NEXT_MESSAGE;
	case AKK_MSG_VALIDATE:
		o.data = akk_gate_eval(g, m->eval_slot, m->data, m->B);
		akk_trace_add(&a->trace, AKK_TRACE_VALIDATE, -1, g->step, t0, akk_now());
		o.n = m->B * out;
		if (g->step < o.vmin)
			o.vmin = g->step;
		if (g->step > o.vmax)
			o.vmax = g->step;
		a->validations++;
		return post(a, down, &o);
	case AKK_MSG_SYNC:
		/* between epochs: the plateau schedule's reductions so far */
		g->lr_reductions = m->reductions;
		return post(a, down, &o);
	case AKK_MSG_SNAPSHOT:	/* under MPI, for rank 0's checkpoint */
		akk_gate_pack(g, a->pack);
		o.kind = AKK_MSG_STATE;
		o.gate = a->self;
		o.data = a->pack;
		o.n = a->pack_len;
		return post(a, 0, &o);
	case AKK_MSG_STOP:
		return AKK_NEXT_DONE;
	default:
		akk_err_set(&e, "gate %d: unexpected message kind %d", a->self, m->kind);
		return fail(r, &e);
	}
}

/* The gate's task: one message per run (workers.h). After STOP or a
 * failure it is done: it takes no more mail, and says so to whoever waits
 * for the run's end. */
static int gate_run(struct akk_actor *t)
{
	struct akk_gate_actor *a = (struct akk_gate_actor *)
		((char *)t - offsetof(struct akk_gate_actor, task));
	struct akk_mailbox *box = &a->run->tr.boxes[a->self];
	enum akk_next next = AKK_NEXT_FAILED;	/* its mailbox closed */
	struct akk_msg m;
	int rc;

	if (atomic_load(&a->done))
		return 0;
	rc = akk_mailbox_tryrecv(box, &m);
	if (rc == 1)
		return 0;	/* woken with nothing new (a close, a late wake) */
	if (rc == 0) {
		double t0 = akk_now();

		next = handle(a, &m, &a->backward_state);
		a->busy += akk_now() - t0;
	}
	if (next != AKK_NEXT_MESSAGE) {
		atomic_store(&a->done, 1);
		akk_workers_poke(&a->run->workers);
		return 0;
	}
	return akk_mailbox_pending(box);
}

void akk_gate_actor_attach(struct akk_gate_actor *a)
{
	atomic_init(&a->done, 0);
	a->backward_state = 0;
	akk_actor_init(&a->task, &a->run->workers, gate_run);
	akk_mailbox_attach(&a->run->tr.boxes[a->self], &a->task);
}
