/* schedule.c - the plan of each schedule (see schedule.h). */
#include "runtime/schedule.h"

#include <stdio.h>
#include <string.h>

int akk_schedule_plan(struct akk_schedule *p, enum akk_mode mode,
		      const struct akk_schedule_spec *s, int ngates,
		      int threads, int cores, struct akk_err *e)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->V = s->conc_val;
	p->micro = 1;
	p->accumulate = s->accumulate > 1 ? s->accumulate : 1;
	p->flush = 1;
	switch (mode) {
	case AKK_MODE_FLIPFLOP:
		/* One batch in flight: a busy gate may use every core. */
		p->K = 1;
		p->strict_states = 1;
		p->compute_threads = cores;
		break;
	case AKK_MODE_WHEELS:
		/* Pipelined gates compute at once, so each gets one core;
		 * validation overlaps training and ends with a drained pass
		 * over the final weights. Each gate steps after every
		 * backward and the next batch enters as soon as a credit is
		 * free (no flush), so a batch meets weights up to K - 1
		 * steps newer than the oldest in flight. */
		p->K = s->conc_train;
		p->flush = 0;
		p->validate_during = 1;
		p->final_pass = 1;
		p->stash = s->stashing && p->K > 1;
		p->compute_threads = 1;
		p->accumulate = 1;
		break;
	case AKK_MODE_PIPELINE:
		/* 1F1B: as many chunks in flight as gates (warm-up fills the
		 * pipe, then one forward per backward, then the flush), so
		 * a gate's tapes are bounded by the gates, not by micro.
		 * Every gate steps on the weights every chunk of the group
		 * saw: nothing to stash. Validation after the epoch, as in
		 * flip-flop. */
		p->micro = s->micro_batches < 1 ? 1 : s->micro_batches;
		if (s->batch_size > 0 && p->micro > s->batch_size)
			p->micro = s->batch_size;
		p->K = ngates < p->micro * p->accumulate ? ngates :
		       p->micro * p->accumulate;
		if (p->K < 1)
			p->K = 1;
		p->compute_threads = ngates < cores ? cores / ngates : 1;
		break;
	default:
		return akk_err_set(e, "unknown schedule mode %d", (int)mode);
	}
	p->chunk_max = s->batch_size > 0 ?
		(s->batch_size + p->micro - 1) / p->micro : 0;
	if (threads > 0)
		p->compute_threads = threads;
	if (p->compute_threads < 1)
		p->compute_threads = 1;
	/* with one batch in flight one gate computes at a time; with K
	 * batches (or chunks) up to K gates do */
	p->busy_gates = p->K < ngates ? p->K : ngates;
	if (p->busy_gates < 1)
		p->busy_gates = 1;
	/* Per gate at most K forwards, K backwards, V validations and a
	 * SYNC in flight, plus an INTERRUPT or STOP. */
	p->mailbox_cap = 2 * p->K + p->V + 4 + ngates;
	return 0;
}

void akk_schedule_widen(struct akk_schedule *p, const struct akk_model *m)
{
	int fan = akk_model_inputs(m), width = fan;

	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *gp = &m->gates[g];
		if (gp->nsrc > fan)
			fan = gp->nsrc;
		if (gp->nread > fan)
			fan = gp->nread;
		if (gp->nread > width)
			width = gp->nread;
	}
	if (fan == 1)
		return;
	/* a batch's branches compute at once: width gates per batch */
	p->busy_gates = p->K * width < m->ngates ? p->K * width : m->ngates;
	/* a join takes a message of each source, a fork one of each reader */
	p->mailbox_cap *= fan;
}

struct akk_gate_config akk_schedule_gate_config(const struct akk_schedule *p,
						const struct akk_gate_plan *g,
						int batch_size)
{
	return (struct akk_gate_config){
		.max_batch = batch_size, .tape_batch = p->chunk_max,
		.ntapes = p->K, .nevals = p->V,
		.stash = p->stash && akk_gate_needs_stash(g),
	};
}

/* ---- The schedules' names, for the command line ---------------------- */

int akk_mode_parse(const char *name, enum akk_mode *mode)
{
	for (int i = 0; akk_mode_name((enum akk_mode)i); i++)
		if (!strcmp(name, akk_mode_name((enum akk_mode)i))) {
			if (mode)
				*mode = (enum akk_mode)i;
			return 0;
		}
	return -1;
}

const char *akk_mode_list(char *buf, size_t size)
{
	size_t len = 0;

	if (size)
		buf[0] = '\0';
	for (int i = 0; akk_mode_name((enum akk_mode)i) && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
					akk_mode_name((enum akk_mode)i));
	return buf;
}
