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
 * chunk's loss gradient by its share of the group's samples).
 *
 * Gates that fork and join (model.h): a gate's output goes to each of its
 * readers, its input gradient to each of its sources. A join holds each
 * source's forward, validate and sync messages in a FIFO of its own until
 * every source's of the same batch has come (the sources pass the
 * sentinel's stream on in the same order), then computes once on their
 * joined outputs; a fork does the same with its readers' backwards and
 * sums their gradients in the readers' config order (model/flow.h), as
 * the sequential reference does. The states of flip-flop count the batch,
 * not the messages: a join stays in its forward state until the last
 * source's forward. A gate that reads named inputs takes the sentinel's
 * whole batch once, however many it reads, and gathers their slices the
 * same way (model/flow.h); it gives one credit back.
 *
 * The last gate may compute the loss itself (loss_here.h): then its
 * forward of a training chunk goes on into its backward on the same run,
 * and the sentinel gets a Loss message instead of the output. */
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
	struct akk_msg o = *m;
	struct akk_err e = { 0 };
	int rc;

	o.from = a->self;
	rc = akk_send(&a->run->tr, to, &o);

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

/* Forward a forward-stream message to every reader of the gate (the
 * sentinel for the network's output), in config order. */
static enum akk_next post_down(struct akk_gate_actor *a, const struct akk_msg *o)
{
	const struct akk_gate_plan *p = a->gate.plan;

	if (!p->nread)
		return post(a, 0, o);
	for (int j = 0; j < p->nread; j++)
		if (post(a, p->readers[j] + 1, o) != AKK_NEXT_MESSAGE)
			return AKK_NEXT_FAILED;
	return AKK_NEXT_MESSAGE;
}

/* A backward's input gradient to every source (the sentinel for the
 * network input: the batch's credit). */
static enum akk_next post_up(struct akk_gate_actor *a, const struct akk_msg *o)
{
	const struct akk_gate_plan *p = a->gate.plan;

	struct akk_msg credit = *o;
	int credited = 0;

	credit.data = NULL;
	credit.n = 0;
	for (int k = 0; k < p->nsrc; k++) {
		if (p->src[k] < 0 && credited++)
			continue;	/* one credit, however many inputs it reads */
		if (post(a, p->src[k] + 1, p->src[k] < 0 ? &credit : o) != AKK_NEXT_MESSAGE)
			return AKK_NEXT_FAILED;
	}
	return AKK_NEXT_MESSAGE;
}

/* m into the FIFO of the peer (gate index) it came from, of the peers
 * ids[0..n) (the sentinel's batch into the FIFO of every named input the
 * gate reads: one message holds them all); 1 when every FIFO holds a
 * message, its heads popped into out; 0 while one waits; -1 on a message
 * from no peer or a full FIFO. */
static int gather(struct akk_gate_actor *a, struct akk_inbox *in, const int *ids,
		  const struct akk_msg *m, struct akk_msg *out, struct akk_err *e)
{
	int found = 0;

	for (int k = 0; k < in->n; k++) {
		if (ids[k] + 1 != m->from)
			continue;
		if (in->count[k] == in->cap)
			return akk_err_set(e, "gate %d: more than %d %s messages wait for the other gates of a join",
					   a->self, in->cap, akk_msg_name(m->kind));
		in->q[k * in->cap + (in->head[k] + in->count[k]++) % in->cap] = *m;
		found = 1;
	}
	if (!found)
		return akk_err_set(e, "gate %d: a %s message from actor %d, which is no neighbour of it",
				   a->self, akk_msg_name(m->kind), m->from);
	for (int j = 0; j < in->n; j++)
		if (!in->count[j])
			return 0;
	for (int j = 0; j < in->n; j++) {
		out[j] = in->q[j * in->cap + in->head[j]];
		in->head[j] = (in->head[j] + 1) % in->cap;
		in->count[j]--;
		if (out[j].kind != m->kind)
			return akk_err_set(e, "gate %d: a %s message from gate %d met a %s message from gate %d",
					   a->self, akk_msg_name(out[j].kind), ids[j] + 1,
					   akk_msg_name(m->kind), m->from);
	}
	return 1;
}

/* A join gate's forward-stream message, or a fork's backward: once every
 * peer's has come, m becomes the one message of the batch, its data the
 * joined input or the summed gradient. 0: go on with m; 1: wait. */
static int meet(struct akk_gate_actor *a, struct akk_msg *m, struct akk_err *e)
{
	const struct akk_gate_plan *p = a->gate.plan;
	struct akk_msg all[AKK_MAX_JOIN];
	const float *data[AKK_MAX_JOIN];
	int back = m->kind == AKK_MSG_BACKWARD, rc;

	if (!back && !a->srcs.n && akk_gate_gathers(p)) {
		/* one source, of which it takes a slice: a named input */
		data[0] = m->data;
		if (m->kind == AKK_MSG_FORWARD)
			m->data = akk_flow_join_train(&a->flow, &a->gate, data, m->B);
		else if (m->kind == AKK_MSG_VALIDATE)
			m->data = akk_flow_join_eval(&a->flow, m->eval_slot, data, m->B);
		return 0;
	}
	if (back ? !a->rds.n : !a->srcs.n)
		return 0;
	rc = gather(a, back ? &a->rds : &a->srcs, back ? p->readers : p->src, m, all, e);
	if (rc <= 0)
		return rc ? -1 : 1;
	*m = all[0];
	for (int j = 0; j < (back ? p->nread : p->nsrc); j++) {
		data[j] = all[j].data;
		if (all[j].vmin < m->vmin)
			m->vmin = all[j].vmin;
		if (all[j].vmax > m->vmax)
			m->vmax = all[j].vmax;
	}
	if (back)
		m->data = akk_flow_grad(&a->flow, data, m->B);
	else if (m->kind == AKK_MSG_FORWARD)
		m->data = akk_flow_join_train(&a->flow, &a->gate, data, m->B);
	else if (m->kind == AKK_MSG_VALIDATE)
		m->data = akk_flow_join_eval(&a->flow, m->eval_slot, data, m->B);
	return 0;
}

static enum akk_next handle(struct akk_gate_actor *a, const struct akk_msg *msg,
			    int *backward_state);

/* The network's output of a training chunk, when this gate computes the
 * loss (loss_here.h): the loss and its gradient here, the sentinel told,
 * then this gate's backward at once, on this worker. A loss the sentinel
 * must report goes to it as the output. */
static enum akk_next loss_then_backward(struct akk_gate_actor *a,
					const struct akk_msg *o,
					int *backward_state)
{
	struct akk_msg note = *o, back;
	double t0 = akk_now();

	if (!akk_loss_here(&a->run->loss_here, o, &back))
		return post_down(a, o);
	akk_trace_add(&a->trace, AKK_TRACE_LOSS, o->id, -1, t0, akk_now());
	note.kind = AKK_MSG_LOSS;
	note.data = NULL;
	note.n = 0;
	if (post(a, 0, &note) != AKK_NEXT_MESSAGE)
		return AKK_NEXT_FAILED;
	return handle(a, &back, backward_state);
}

static enum akk_next handle(struct akk_gate_actor *a, const struct akk_msg *msg,
			    int *backward_state)
{
	struct akk_run *r = a->run;
	struct akk_gate *g = &a->gate;
	int strict = r->sched.strict_states;
	int up = akk_gate_reads_gates(g->plan);	/* it computes an input gradient */
	long out = akk_shape_size(g->plan->out), in = akk_shape_size(g->plan->in);
	struct akk_err e = { 0 };
	struct akk_msg joined = *msg, *m = &joined, o;
	long version;
	int wait;

	if (strict && (m->kind == AKK_MSG_BACKWARD) != *backward_state &&
	    m->kind != AKK_MSG_SYNC && m->kind != AKK_MSG_SNAPSHOT) {
		akk_err_set(&e, "gate %d: %s message in its %s state", a->self,
			    akk_msg_name(m->kind), *backward_state ? "backward" : "forward");
		return fail(r, &e);
	}
	if ((m->kind == AKK_MSG_BACKWARD || m->kind == AKK_MSG_FORWARD ||
	     m->kind == AKK_MSG_VALIDATE || m->kind == AKK_MSG_SYNC) &&
	    (wait = meet(a, m, &e)) != 0)
		return wait < 0 ? fail(r, &e) : AKK_NEXT_MESSAGE;
	o = *m;
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
		if (!g->plan->nread && r->loss_here.chunks)
			return loss_then_backward(a, &o, backward_state);
		return post_down(a, &o);
	case AKK_MSG_BACKWARD:
		version = akk_gate_backward_version(g);
		o.data = akk_gate_backward(g, m->data, m->B, m->id, up, &e);
		if (up && !o.data)
			return fail(r, &e);
		if ((!o.data && e.msg[0]) || sync_failed(a, &e))
			return fail(r, &e);
		o.n = up ? m->B * in : 0;
		a->backwards++;
		t1 = akk_now();
		akk_trace_add(&a->trace, AKK_TRACE_BACKWARD, m->id, version, t0, t1);
		if (post_up(a, &o) != AKK_NEXT_MESSAGE)
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
		return post_down(a, &o);
	case AKK_MSG_SYNC:
		/* between epochs: the plateau schedule's reductions so far */
		g->lr_reductions = m->reductions;
		return post_down(a, &o);
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
