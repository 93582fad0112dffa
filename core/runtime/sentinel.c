/* sentinel.c - the sentinel actor: data in, loss out, epochs and credits.
 *
 * The sentinel feeds the first gate, receives the last gate's output,
 * computes the loss and sends its gradient back. It keeps `K` training and
 * `V` validation batches in flight as credits: a training credit returns when
 * the batch's backward has come back through the first gate, a validation
 * credit when the batch's output arrives. An epoch issues exactly one pass
 * over the training set, then stops issuing and drains; a SYNC message sent
 * through every gate then proves every gate idle before the epoch is closed.
 *
 * Flip-flop is the case K = 1 with the seed's explicit states: Startpoint
 * (issue the next batch; accepts Backward), Endpoint (accepts Forward: loss,
 * then Backward to the last gate), and Validation after the epoch's last
 * backward (accepts Validate). Wheels has no states: validation runs during
 * the epoch, and after the last epoch a drained "final" pass measures the
 * weights that training ended with.
 *
 * Pipeline and gradient accumulation: a training credit is a chunk (a
 * micro-batch of a batch, or the whole batch) and a step group is
 * schedule.accumulate batches. Chunks of one group go out as credits allow
 * (K = gates: the 1F1B bound); the next group's first waits until every
 * chunk is back, so every gate has stepped once on the group's gradient
 * (the flush, schedule.flush). Each chunk's loss gradient is scaled by its
 * share of the group's samples; its Backward's `more` says whether more of
 * the group follows. Stops (Ctrl-C, checkpoints) fall between groups only,
 * where the accumulated gradients are zero. Wheels has no flush: a group
 * is one batch, the next goes out whenever one of the K credits is free,
 * and a stop drains the batches in flight (each steps every gate), so a
 * checkpoint's position is the count of batches whose backward is back. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/targets.h"
#include "nn/loss.h"
#include "io/metrics.h"
#include "io/steps.h"
#include "runtime/sentinel.h"

enum { STARTPOINT, ENDPOINT, VALIDATION };

/* One training chunk in flight: a whole batch, or with the pipeline's
 * micro-batches a run of its samples. */
struct chunk {
	struct akk_batch *b;
	int off, B;		/* its samples [off, off + B) of b */
	int last;		/* b's last chunk: b goes back with its backward */
	int hold;		/* more chunks of the step's group follow: the
				 * gates accumulate and do not step yet */
	double scale;		/* B over the group's samples: the weight of
				 * its loss gradient in the group's mean */
	int credits;		/* backwards back from the gates that read
				 * the network input, of akk_model_inputs */
};

/* m to every gate that reads the network input (the first gate of a
 * chain; with gates that fork, every gate whose from names input). */
static int send_input(struct akk_run *r, const struct akk_msg *m)
{
	const struct akk_model *md = r->model;

	/* once per gate, however many named inputs it reads */
	for (int g = 0; g < md->ngates; g++)
		if (akk_gate_reads_input(&md->gates[g]) && akk_send(&r->tr, g + 1, m))
			return -1;
	return 0;
}

/* The run's counters: optimizer steps taken (the position's step: every
 * gate's weight version) and training chunks sent (the messages' ids).
 * They are equal unless batches are split or accumulated. */
struct ids {
	long steps, chunks;
};

struct phase {
	long ntrain, nval;		/* batches to run */
	struct akk_batch *cur;		/* a batch whose chunks are going out */
	int cur_next, cur_chunks, cur_off;
	long group_left;		/* batches of the group still to take */
	long group_samples;		/* samples of the whole group */
	long issued, done, vissued, vdone;
	int inflight, vinflight;
	double loss_sum, vloss_sum;
	long correct, vcorrect, samples, vsamples;
	struct akk_reg_sums treg, vreg;	/* regression: R^2 and RMSE sums */
	struct akk_head_sums th[AKK_MAX_HEADS], vh[AKK_MAX_HEADS];	/* per head */
	long vmin, vmax;
	int stopping, state;
	int voting;		/* data parallelism: a stop vote is out */
	double vote;		/* its value, then its sum over the ranks */
};

static int protocol(struct akk_run *r, struct akk_err *e, const char *what)
{
	akk_err_set(e, "sentinel: %s", what);
	akk_run_fail(r, e);
	return -1;
}

/* Samples in training batch `index` of an epoch (one process). */
static long batch_samples(const struct akk_run *r, long index)
{
	long bs = r->model->spec->sched.batch_size;
	long left = (long)r->train->n - index * bs;

	return left < bs ? left : bs;
}

/* A step group is started and not all of its chunks are out: the run
 * stops only at group boundaries, where the gradients are zero. */
static int mid_group(const struct phase *ph)
{
	return ph->cur || ph->group_left > 0;
}

/* Whether the next training chunk may go out: the rest of the current
 * batch, the next batch of the group, or the next group: with the plan's
 * flush only once every chunk of the group is back and the gates have
 * stepped, without it (wheels) as soon as a credit is free. */
static int can_issue(const struct akk_run *r, const struct phase *ph)
{
	if (ph->inflight >= r->sched.K)
		return 0;
	if (ph->cur)
		return 1;
	if (ph->issued >= ph->ntrain)
		return 0;
	return ph->group_left > 0 || ph->inflight == 0 || !r->sched.flush;
}

static int issue_train(struct akk_run *r, struct phase *ph, int epoch,
		       struct chunk *slots, struct ids *ids,
		       struct akk_err *e)
{
	struct akk_msg m = { .kind = AKK_MSG_FORWARD };
	long in = akk_shape_size(r->model->spec->input);
	struct akk_batch *b;
	struct chunk *c;
	int j;

	if (!ph->cur) {
		if (!(b = akk_provider_next(&r->tprov)))
			return -1;
		if (b->epoch != epoch || b->index != ph->issued)
			return protocol(r, e, "training data out of order");
		if (!ph->group_left) {
			long left = ph->ntrain - ph->issued;
			ph->group_left = left < r->sched.accumulate ? left :
					 r->sched.accumulate;
			ph->group_samples = b->B;
			for (long k = 1; k < ph->group_left; k++)
				ph->group_samples += batch_samples(r, ph->issued + k);
		}
		ph->group_left--;
		ph->cur = b;
		ph->cur_next = ph->cur_off = 0;
		ph->cur_chunks = b->B < r->sched.micro ? b->B : r->sched.micro;
		ph->issued++;
	}
	b = ph->cur;
	j = ph->cur_next++;
	c = &slots[ids->chunks % r->sched.K];
	c->b = b;
	c->credits = 0;
	c->off = ph->cur_off;
	/* sizes differ by at most one: the first B % chunks get one more */
	c->B = b->B / ph->cur_chunks + (j < b->B % ph->cur_chunks);
	c->last = ph->cur_next == ph->cur_chunks;
	c->hold = !(c->last && !ph->group_left);
	c->scale = (double)c->B / (double)ph->group_samples;
	ph->cur_off += c->B;
	if (c->last)
		ph->cur = NULL;
	if (r->loss_here.chunks) {
		int outputs = akk_model_outputs(r->model);
		struct akk_loss_chunk *lc = &r->loss_here.chunks[ids->chunks % r->sched.K];

		lc->labels = b->labels + (size_t)c->off * b->steps;
		lc->targets = b->targets + (size_t)c->off * outputs;
		lc->dlogits = b->dlogits + (size_t)c->off * outputs;
		lc->B = c->B;
		lc->hold = c->hold;
		lc->scale = c->scale;
	}
	m.B = c->B;
	m.restart = b->index == 0 && j == 0;
	m.id = ids->chunks++;
	m.data = b->x + (size_t)c->off * in;
	m.n = c->B * in;
	ph->inflight++;
	ph->state = ENDPOINT;
	return send_input(r, &m);
}

static int issue_val(struct akk_run *r, struct phase *ph,
		     struct akk_batch **vslots, struct akk_err *e)
{
	struct akk_batch *b = akk_provider_next(&r->vprov);
	struct akk_msg m = { .kind = AKK_MSG_VALIDATE, .vmin = LONG_MAX, .vmax = -1 };
	int slot = -1;

	if (!b)
		return -1;
	for (int i = 0; i < r->sched.V; i++)
		if (!vslots[i]) {
			slot = i;
			break;
		}
	if (slot < 0 || b->index != ph->vissued)
		return protocol(r, e, "validation data out of order");
	vslots[slot] = b;
	m.B = b->B;
	m.eval_slot = slot;
	m.data = b->x;
	m.n = b->B * akk_shape_size(r->model->spec->input);
	ph->vissued++;
	ph->vinflight++;
	return send_input(r, &m);
}

/* Data parallelism: before each training batch every rank votes whether
 * to stop, so that all stop at the same batch and their gradient
 * reductions stay in step. The vote is posted, not waited for: the
 * sentinel goes on taking messages (the losses of batches in flight,
 * which the other ranks' reductions wait for) and issues the batch, or
 * stops, when the result arrives as AKK_MSG_REDUCED. */
static int post_vote(struct akk_run *r, struct phase *ph, struct akk_err *e)
{
	struct akk_msg note = { .kind = AKK_MSG_REDUCED };

	ph->vote = atomic_load(&r->stop) ? 1 : 0;
	ph->voting = 1;
	if (akk_mpi_allreduce_post(&r->tr, r->model->ngates, &ph->vote, 1, 1, 0, &note))
		return protocol(r, e, "the stop vote failed");
	return 0;
}

/* Accepts with strict states (flip-flop), by state. */
static int flipflop_accepts(int state, int kind)
{
	switch (state) {
	case STARTPOINT: return kind == AKK_MSG_BACKWARD;
	case ENDPOINT: return kind == AKK_MSG_FORWARD;
	default: return kind == AKK_MSG_VALIDATE;
	}
}

/* An interrupt arrived in the sentinel's mailbox: remember it (set here
 * too: it may come from another rank). Whether m was one. */
static int took_interrupt(struct akk_run *r, const struct akk_msg *m)
{
	if (m->kind != AKK_MSG_INTERRUPT)
		return 0;
	atomic_store(&r->stop, 1);
	return 1;
}

/* Send out what the credits allow: training chunks (or, with data
 * parallelism, the stop vote before one) and validation batches. */
static int issue_more(struct akk_run *r, struct phase *ph, int epoch,
		      struct chunk *slots, struct akk_batch **vslots,
		      struct ids *ids, struct akk_err *e)
{
	/* with data parallelism only the vote decides */
	if (r->shards == 1 && atomic_load(&r->stop))
		ph->stopping = 1;
	/* a started step group is finished even when stopping */
	if (!ph->stopping || mid_group(ph)) {
		if (r->shards > 1) {
			if (!ph->voting && ph->inflight < r->sched.K &&
			    ph->issued < ph->ntrain && post_vote(r, ph, e))
				return -1;
		} else {
			while (can_issue(r, ph))
				if (issue_train(r, ph, epoch, slots, ids, e))
					return -1;
		}
	}
	/* flip-flop validates after the epoch's last backward */
	if (!ph->stopping && (r->sched.validate_during || ph->done == ph->ntrain)) {
		if (ph->vissued < ph->nval)
			ph->state = VALIDATION;
		while (ph->vinflight < r->sched.V && ph->vissued < ph->nval)
			if (issue_val(r, ph, vslots, e))
				return -1;
	}
	return 0;
}

/* The last gate's output of a training chunk: its loss, and the loss
 * gradient sent back through the gates. */
static int take_output(struct akk_run *r, struct phase *ph, int epoch,
		       struct chunk *slots, struct ids *ids,
		       const struct akk_msg *m, struct akk_err *e)
{
	const struct akk_spec *s = r->model->spec;
	int G = r->model->ngates, outputs = akk_model_outputs(r->model);
	struct chunk *c = &slots[m->id % r->sched.K];
	struct akk_batch *b = c->b;
	float *dl = b->dlogits + (size_t)c->off * outputs;
	struct akk_msg back = *m;
	double tl = akk_now();
	/* with the loss beside the last gate, an output comes here only when
	 * its loss stops the run (loss_here.h), and the phase's sums are the
	 * gate's to write: it may be adding the next chunk's right now */
	int here = r->loss_here.chunks != NULL;
	double loss = akk_model_loss_heads(r->model, dl, m->data,
					   b->labels + (size_t)c->off * b->steps,
					   b->targets + (size_t)c->off * outputs, c->B,
					   here ? NULL : &ph->correct, here ? NULL : &ph->treg,
					   here ? NULL : ph->th);

	/* a gate's non-finite output stops the run in that gate; finite
	 * logits can still overflow the loss */
	if (!isfinite(loss)) {
		akk_err_set(e, "non-finite training loss at epoch %d, batch %ld (step %ld) from the output of gate %d",
			    epoch + 1, b->index + 1, ids->steps + 1, G);
		akk_run_fail(r, e);
		return -1;
	}
	if (s->sched.max_loss > 0 && loss > s->sched.max_loss) {
		akk_err_set(e, "training loss %.4g at epoch %d, batch %ld (step %ld) is above schedule.max_loss %g: the run diverged",
			    loss, epoch + 1, b->index + 1, ids->steps + 1,
			    s->sched.max_loss);
		akk_run_fail(r, e);
		return -1;
	}
	ph->loss_sum += loss * c->B;
	ph->samples += c->B;
	/* the group's mean gradient is the chunks' means weighted by their
	 * share of its samples */
	if (c->scale != 1.0)
		for (long i = 0; i < (long)c->B * outputs; i++)
			dl[i] = (float)(dl[i] * c->scale);
	akk_trace_add(&r->sentinel_trace, AKK_TRACE_LOSS, m->id, -1, tl, akk_now());
	back.kind = AKK_MSG_BACKWARD;
	back.more = c->hold;
	back.data = dl;
	back.n = (long)c->B * outputs;
	ph->state = STARTPOINT;
	return akk_send(&r->tr, G, &back);
}

/* The last gate computed a training chunk's loss (loss_here.h) and went
 * on with its backward: the sentinel's share is the running sums. */
static void take_loss(struct akk_run *r, struct phase *ph,
		      const struct akk_msg *m)
{
	const struct akk_loss_chunk *lc = &r->loss_here.chunks[m->id % r->sched.K];

	ph->loss_sum += lc->loss * lc->B;
	ph->samples += lc->B;
}

/* A training chunk's backward is back through the first gate: its credit
 * returns, and the batch's last chunk counts the batch as done. */
static void take_backward(struct akk_run *r, struct phase *ph, int epoch,
			  struct chunk *slots, struct ids *ids,
			  const struct akk_msg *m, double t0)
{
	struct chunk *c = &slots[m->id % r->sched.K];

	/* every gate that reads the input sends the chunk's credit */
	if (++c->credits < akk_model_inputs(r->model))
		return;
	ph->inflight--;
	if (!c->hold) {	/* the group's last: the gates stepped */
		ids->steps++;
		if (r->cfg.steps)	/* output.log_every_steps */
			akk_steps_on_step(r->cfg.steps, ids->steps, epoch + 1, ph->samples,
					  ph->loss_sum);
	}
	if (!c->last)
		return;
	akk_provider_recycle(&r->tprov, c->b);
	ph->done++;
	if (r->cfg.obs.progress) {
		double dt = akk_now() - t0;
		struct akk_progress p = {
			epoch + 1, r->cfg.epochs, ph->done, ph->ntrain,
			ph->samples ? ph->loss_sum / ph->samples : 0,
			dt > 0 ? ph->samples / dt : 0, dt,
		};
		r->cfg.obs.progress(r->cfg.obs.ctx, &p);
	}
}

/* A validation batch's output: its loss and accuracy. */
static void take_validation(struct akk_run *r, struct phase *ph,
			    struct akk_batch **vslots, const struct akk_msg *m)
{
	struct akk_batch *b = vslots[m->eval_slot];

	ph->vloss_sum += akk_model_loss_heads(r->model, NULL, m->data, b->labels,
					      b->targets, b->B, &ph->vcorrect,
					      &ph->vreg, ph->vh) * b->B;
	ph->vsamples += b->B;
	if (m->vmin < ph->vmin)
		ph->vmin = m->vmin;
	if (m->vmax > ph->vmax)
		ph->vmax = m->vmax;
	vslots[m->eval_slot] = NULL;
	akk_provider_recycle(&r->vprov, b);
	ph->vdone++;
	ph->vinflight--;
}

/* A message of a phase: the stop vote's result, a training chunk's output
 * or backward, a validation batch's output. */
static enum akk_next take(struct akk_run *r, struct phase *ph, int epoch,
			  struct chunk *slots, struct akk_batch **vslots,
			  struct ids *ids, const struct akk_msg *m, double t0,
			  struct akk_err *e)
{
	if (took_interrupt(r, m))
		return AKK_NEXT_MESSAGE;
	if (m->kind == AKK_MSG_REDUCED) {	/* the stop vote is in */
		ph->voting = 0;
		if (ph->vote > 0)
			ph->stopping = 1;
		else if (issue_train(r, ph, epoch, slots, ids, e))
			return AKK_NEXT_FAILED;
		return AKK_NEXT_MESSAGE;
	}
	if (r->sched.strict_states && !flipflop_accepts(ph->state, m->kind)) {
		protocol(r, e, "message out of turn in flip-flop");
		return AKK_NEXT_FAILED;
	}
	switch (m->kind) {
	case AKK_MSG_FORWARD:
		if (take_output(r, ph, epoch, slots, ids, m, e))
			return AKK_NEXT_FAILED;
		return AKK_NEXT_MESSAGE;
	case AKK_MSG_LOSS:
		take_loss(r, ph, m);
		return AKK_NEXT_MESSAGE;
	case AKK_MSG_BACKWARD:
		take_backward(r, ph, epoch, slots, ids, m, t0);
		return AKK_NEXT_MESSAGE;
	case AKK_MSG_VALIDATE:
		take_validation(r, ph, vslots, m);
		return AKK_NEXT_MESSAGE;
	default:
		protocol(r, e, "unexpected message");
		return AKK_NEXT_FAILED;
	}
}

/* Everything of the phase is back (or, stopping, everything in flight)
 * and no step group is half sent. */
static int phase_over(const struct phase *ph)
{
	return !ph->inflight && !ph->vinflight && !ph->voting && !mid_group(ph) &&
	       (ph->stopping || (ph->done == ph->ntrain && ph->vdone == ph->nval));
}

/* Run one phase: ntrain training batches of `epoch` and a validation pass.
 * Returns 0 when done (or interrupted and drained), -1 on failure. */
static int run_phase(struct akk_run *r, struct phase *ph, int epoch,
		     struct chunk *slots, struct akk_batch **vslots,
		     struct ids *ids, double t0, struct akk_err *e)
{
	struct akk_msg m;

	ph->vmin = LONG_MAX;
	ph->vmax = -1;
	ph->state = STARTPOINT;
	for (;;) {
		if (issue_more(r, ph, epoch, slots, vslots, ids, e))
			return -1;
		if (phase_over(ph))
			return 0;
		if (akk_recv(&r->tr, 0, &m) ||
		    take(r, ph, epoch, slots, vslots, ids, &m, t0, e) != AKK_NEXT_MESSAGE)
			return -1;
	}
}

/* A message while gathering: a remote gate's state, copied into rank
 * 0's mirror of it, is one gate done. */
static enum akk_next take_state(struct akk_run *r, const struct akk_msg *m,
				struct akk_err *e)
{
	if (took_interrupt(r, m))
		return AKK_NEXT_MESSAGE;
	if (m->kind != AKK_MSG_STATE || m->gate < 1 || m->gate > r->model->ngates ||
	    m->n != akk_gate_pack_len(&r->model->gates[m->gate - 1])) {
		protocol(r, e, "unexpected message while gathering gate states");
		return AKK_NEXT_FAILED;
	}
	akk_gate_unpack(&r->gates[m->gate - 1].gate, m->data);
	return AKK_NEXT_DONE;
}

/* Under MPI: copy every remote gate's state into rank 0's mirror of it,
 * so a checkpoint taken now holds the whole network. Gates are idle. */
static int gather(struct akk_run *r, struct akk_err *e)
{
	struct akk_msg m = { .kind = AKK_MSG_SNAPSHOT };
	int want = 0;

	for (int g = 0; g < r->model->ngates; g++)
		if (!r->gates[g].local) {
			if (akk_send(&r->tr, g + 1, &m))
				return -1;
			want++;
		}
	while (want) {
		if (akk_recv(&r->tr, 0, &m))
			return -1;
		switch (take_state(r, &m, e)) {
		case AKK_NEXT_DONE:
			want--;
			break;
		case AKK_NEXT_MESSAGE:
			break;
		case AKK_NEXT_FAILED:
			return -1;
		}
	}
	return 0;
}

/* A message while draining: the SYNC back through every gate ends it. */
static enum akk_next take_drained(struct akk_run *r, const struct akk_msg *m,
				  struct akk_err *e)
{
	if (m->kind == AKK_MSG_SYNC)
		return AKK_NEXT_DONE;
	if (took_interrupt(r, m))
		return AKK_NEXT_MESSAGE;
	protocol(r, e, "message after the drain");
	return AKK_NEXT_FAILED;
}

/* Send SYNC through every gate and wait for it: afterwards every gate is
 * idle and everything it wrote is visible here (under MPI, gathered). */
static int drain(struct akk_run *r, struct akk_err *e)
{
	/* the SYNC tells every gate the plateau reductions so far */
	struct akk_msg m = { .kind = AKK_MSG_SYNC, .reductions = r->watch.reductions };

	enum akk_next next = AKK_NEXT_MESSAGE;

	if (send_input(r, &m))
		return -1;
	while (next == AKK_NEXT_MESSAGE)
		next = akk_recv(&r->tr, 0, &m) ? AKK_NEXT_FAILED : take_drained(r, &m, e);
	if (next == AKK_NEXT_FAILED)
		return -1;
	return r->actor_rank ? gather(r, e) : 0;
}

/* Early stopping and the plateau lr schedule after an epoch's validation
 * (nn/monitor.h). Under data parallelism only rank 0 validates; its
 * decisions reach the other ranks through a reduction (they add 0).
 * A reduction of the lr reaches the gates with the next SYNC. */
static int watch_epoch(struct akk_run *r, const struct akk_epoch_report *rep,
		       struct akk_err *e)
{
	const struct akk_spec *s = r->model->spec;
	const struct akk_lr_spec *pl = &s->optim.sched;
	const struct akk_early_stop_spec *es = &s->sched.early;
	struct akk_watch *w = &r->watch;

	if (!akk_spec_watches(s))
		return 0;
	w->stopped_epoch = 0;
	if (rep->val_samples && pl->kind == AKK_LR_PLATEAU) {
		float lr = akk_lr_reduced(&s->optim, s->optim.lr, w->reductions);
		akk_plateau_update(w, pl->monitor, pl->min_delta, pl->patience,
				   pl->cooldown, lr <= pl->min_lr, rep->epoch,
				   akk_monitor_value(pl->monitor, rep->val_loss, rep->val_acc));
	}
	if (rep->val_samples && es->on)
		akk_early_stop_update(w, es, rep->epoch,
				      akk_monitor_value(es->monitor, rep->val_loss, rep->val_acc));
	if (r->shards > 1) {
		double d[2] = { rep->val_samples ? w->stopped_epoch : 0,
				rep->val_samples ? w->reductions : 0 };
		if (akk_mpi_allreduce(&r->tr, r->model->ngates, d, 2, 1))
			return akk_err_set(e, "the early-stopping reduction failed");
		w->stopped_epoch = (int)d[0];
		w->reductions = (int)d[1];
	}
	return 0;
}

/* Data parallelism: each head's training sums over every rank's slices. */
static int reduce_heads(struct akk_run *r, struct akk_head_sums *hs, int n)
{
	double v[9 * AKK_MAX_HEADS];

	for (int i = 0; i < n; i++) {
		double *p = v + 9 * i;
		p[0] = hs[i].loss, p[1] = (double)hs[i].samples, p[2] = (double)hs[i].correct;
		p[3] = hs[i].reg.sse, p[4] = hs[i].reg.sy, p[5] = hs[i].reg.syy;
		p[6] = (double)hs[i].reg.n, p[7] = hs[i].reg.psnr;
		p[8] = (double)hs[i].reg.samples;
	}
	if (akk_mpi_allreduce(&r->tr, r->model->ngates, v, 9 * n, 1))
		return -1;
	for (int i = 0; i < n; i++) {
		const double *p = v + 9 * i;
		hs[i] = (struct akk_head_sums){ p[0], (long)p[1], (long)p[2],
						{ p[3], p[4], p[5], (long)p[6], p[7],
						  (long)p[8] } };
	}
	return 0;
}

static int report(struct akk_run *r, const struct phase *ph, int epoch,
		  const char *phase, double seconds, struct akk_err *e)
{
	int reg = r->model->spec->data.task == AKK_TASK_REGRESSION;
	int psnr = r->model->spec->data.targets != AKK_TARGETS_LABELS;
	float peak = akk_targets_peak(&r->model->spec->data, r->train ? r->train->xtype : AKK_X_U8);
	int steps = r->model->steps;
	struct akk_epoch_report rep = {
		.epoch = epoch + 1, .epochs = r->cfg.epochs, .phase = phase,
		.samples = ph->samples,
		.train_loss = ph->samples ? ph->loss_sum / ph->samples : 0,
		/* a sequence's accuracy counts its steps */
		.train_acc = ph->samples ? (double)ph->correct / ((double)ph->samples * steps) : 0,
		.val_samples = ph->vsamples,
		.val_loss = ph->vsamples ? ph->vloss_sum / ph->vsamples : 0,
		.val_acc = ph->vsamples ? (double)ph->vcorrect / ((double)ph->vsamples * steps) : 0,
		.vmin = ph->vmax >= 0 ? ph->vmin : 0, .vmax = ph->vmax >= 0 ? ph->vmax : 0,
		.during = r->sched.validate_during && ph->samples && ph->vsamples,
		.steps = r->pos.id,
		.seconds = seconds,
		.samples_per_s = seconds > 0 ? ph->samples / seconds : 0,
		.lr = r->gates[0].gate.last_lr,
		/* regression: R^2 in the accuracy fields, and the RMSE */
		.regression = reg,
		.train_rmse = akk_reg_rmse(&ph->treg),
		.val_rmse = akk_reg_rmse(&ph->vreg),
		.psnr_on = psnr,
		.train_psnr = psnr ? akk_reg_psnr(&ph->treg, peak) : 0,
		.val_psnr = psnr ? akk_reg_psnr(&ph->vreg, peak) : 0,
	};

	const struct akk_spec *s = r->model->spec;
	char heads[AKK_MAX_HEADS * 2 * 80];

	rep.nheads = s->nheads;
	akk_heads_values(s, ph->th, rep.train_heads);
	akk_heads_values(s, ph->vh, rep.val_heads);
	akk_heads_columns(s, heads, sizeof(heads));
	if (reg) {
		rep.train_acc = ph->samples ? akk_reg_r2(&ph->treg) : 0;
		rep.val_acc = ph->vsamples ? akk_reg_r2(&ph->vreg) : 0;
	}

	/* Every gate's lr at its last step (as akk_gate_step computed it,
	 * from the step count: right for rank 0's mirrors of remote gates
	 * too), in columns of their own when a gate has its own optimizer. */
	double lrs[AKK_MAX_GATES];
	int nlr = 0;
	for (int g = 0; g < r->model->ngates && g < AKK_MAX_GATES; g++) {
		const struct akk_gate *gt = &r->gates[g].gate;
		lrs[g] = 0;
		if (r->gates[g].ready && gt->plan->nparams && gt->step > 0)
			lrs[g] = akk_lr_reduced(gt->plan->optim,
				akk_lr_at(gt->plan->optim, ((double)gt->step - 0.5) /
					  (gt->steps_per_epoch > 0 ? gt->steps_per_epoch : 1),
					  gt->epochs), r->watch.reductions);
		if (r->model->spec->gates[g].has_optim)
			nlr = r->model->ngates;
	}
	rep.lr = lrs[0];	/* gate 1 may run on another rank */
	if (r->metrics && ph->samples) {
		struct akk_metrics_row row = { epoch + 1, "train", ph->samples,
			rep.train_loss, rep.train_acc, rep.lr, seconds,
			0, 0, lrs, nlr, .regression = reg + psnr, .rmse = rep.train_rmse,
			.psnr = rep.train_psnr, .heads_header = heads,
			.heads = rep.train_heads, .nheads_values = 2 * s->nheads };
		if (akk_metrics_write(r->metrics, r->cfg.metrics_path, &row, e))
			return -1;
	}
	if (r->metrics && ph->vsamples) {
		struct akk_metrics_row row = { epoch + 1,
			ph->samples ? "validation" : phase, ph->vsamples,
			rep.val_loss, rep.val_acc, rep.lr, seconds,
			rep.vmin, rep.vmax, lrs, nlr, .regression = reg + psnr,
			.rmse = rep.val_rmse, .psnr = rep.val_psnr, .heads_header = heads,
			.heads = rep.val_heads, .nheads_values = 2 * s->nheads };
		if (akk_metrics_write(r->metrics, r->cfg.metrics_path, &row, e))
			return -1;
	}
	if (!strcmp(phase, "epoch") && watch_epoch(r, &rep, e))
		return -1;
	if (r->cfg.obs.epoch_end && r->cfg.obs.epoch_end(r->cfg.obs.ctx, r, &rep, e))
		return -1;
	return 0;
}

static int loss_here_start(struct akk_run *r, struct phase *ph);

int akk_sentinel_run(struct akk_run *r, struct akk_err *e)
{
	struct chunk *slots = calloc(r->sched.K, sizeof(*slots));
	struct akk_batch **vslots = calloc(r->sched.V, sizeof(*vslots));
	struct ids ids = { r->cfg.start.id, r->cfg.start.id };
	int rc = -1, epoch, reductions;
	struct phase ph;

	if (!slots || !vslots || loss_here_start(r, &ph)) {
		akk_err_set(e, "out of memory");
		akk_run_fail(r, e);
		goto out;
	}
	for (epoch = r->cfg.start.epoch; epoch < r->cfg.epochs; epoch++) {
		const struct akk_position *st = &r->cfg.start;
		double t0 = akk_now();

		memset(&ph, 0, sizeof(ph));
		ph.ntrain = r->per_epoch;
		ph.nval = r->val_batches;
		if (epoch == st->epoch && st->index) {
			/* resume mid-epoch: the batches before were trained */
			ph.issued = ph.done = st->index;
			ph.loss_sum = st->loss_sum;
			ph.correct = st->correct;
			ph.samples = st->samples;
			ph.treg = st->reg;
			t0 -= st->seconds;
		}
		if (run_phase(r, &ph, epoch, slots, vslots, &ids, t0, e) ||
		    drain(r, e))
			goto out;
		if (ph.stopping) {
			r->pos = (struct akk_position){ epoch, ph.done, ids.steps,
				ph.loss_sum, ph.correct, ph.samples, akk_now() - t0,
				ph.treg };
			atomic_store(&r->interrupted, 1);
			break;
		}
		r->pos = (struct akk_position){ .epoch = epoch + 1, .id = ids.steps };
		r->epochs_done = epoch + 1;
		if (r->shards > 1) {
			/* the epoch's training metrics over every rank's slices */
			double sums[9] = { ph.loss_sum, (double)ph.correct, (double)ph.samples,
					   ph.treg.sse, ph.treg.sy, ph.treg.syy,
					   (double)ph.treg.n, ph.treg.psnr,
					   (double)ph.treg.samples };
			if (akk_mpi_allreduce(&r->tr, r->model->ngates, sums, 9, 1)) {
				akk_err_set(e, "the metrics reduction failed");
				goto fail;
			}
			ph.loss_sum = sums[0];
			ph.correct = (long)sums[1];
			ph.samples = (long)sums[2];
			ph.treg = (struct akk_reg_sums){ sums[3], sums[4], sums[5],
							 (long)sums[6], sums[7],
							 (long)sums[8] };
			if (r->model->spec->nheads &&
			    reduce_heads(r, ph.th, r->model->spec->nheads)) {
				akk_err_set(e, "the metrics reduction failed");
				goto fail;
			}
		}
		reductions = r->watch.reductions;
		if (report(r, &ph, epoch, "epoch", akk_now() - t0, e))
			goto fail;
		if (r->watch.stopped_epoch)	/* early stopping */
			break;
		if (r->watch.reductions != reductions && drain(r, e))
			goto out;	/* the gates learn the plateau's new lr */
	}
	if (!atomic_load(&r->interrupted) && r->sched.final_pass &&
	    !r->watch.stopped_epoch &&
	    r->val_batches && !atomic_load(&r->stop)) {
		double t0 = akk_now();

		memset(&ph, 0, sizeof(ph));
		ph.nval = r->val_batches;
		if (run_phase(r, &ph, r->cfg.epochs - 1, slots, vslots, &ids, t0, e) ||
		    drain(r, e))
			goto out;
		if (!ph.stopping && report(r, &ph, r->cfg.epochs - 1, "final",
					   akk_now() - t0, e))
			goto fail;
	}
	rc = 0;
	goto out;
fail:
	akk_run_fail(r, e);
out:
	free(slots);
	free(vslots);
	return rc;
}

/* Whether the last gate computes the loss (loss_here.h): every gate in
 * this process, one process (data parallelism keeps the sentinel's
 * order of reductions), no strict states (flip-flop's are the seed's), and
 * one gate whose output is the network's. 0, or -1 out of memory. The
 * sums are ph's, which stays where it is for the whole run; the chunks
 * are freed with the run (akk_run_release), after its workers stop. */
static int loss_here_start(struct akk_run *r, struct phase *ph)
{
	const struct akk_model *md = r->model;
	int last = 0;

	for (int g = 0; g < md->ngates; g++)
		last += !md->gates[g].nread;
	free(r->loss_here.chunks);	/* a run's earlier start */
	memset(&r->loss_here, 0, sizeof(r->loss_here));
	if (r->sched.strict_states || r->shards > 1 || r->actor_rank || last != 1)
		return 0;
	r->loss_here.chunks = calloc(r->sched.K, sizeof(*r->loss_here.chunks));
	if (!r->loss_here.chunks)
		return -1;
	r->loss_here.model = md;
	r->loss_here.K = r->sched.K;
	r->loss_here.max_loss = md->spec->sched.max_loss;
	r->loss_here.correct = &ph->correct;
	r->loss_here.reg = &ph->treg;
	r->loss_here.heads = ph->th;
	return 0;
}
