/* schedule.c - the plan of each schedule (see schedule.h). */
#include "runtime/schedule.h"

#include <string.h>

int akk_schedule_plan(struct akk_schedule *p, enum akk_mode mode,
		      const struct akk_schedule_spec *s, int ngates,
		      int threads, int cores, struct akk_err *e)
{
	memset(p, 0, sizeof(*p));
	p->mode = mode;
	p->V = s->conc_val;
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
		 * over the final weights. */
		p->K = s->conc_train;
		p->validate_during = 1;
		p->final_pass = 1;
		p->stash = s->stashing && p->K > 1;
		p->compute_threads = 1;
		break;
	default:
		return akk_err_set(e, "unknown schedule mode %d", (int)mode);
	}
	if (threads > 0)
		p->compute_threads = threads;
	if (p->compute_threads < 1)
		p->compute_threads = 1;
	/* Per gate at most K forwards, K backwards, V validations and a
	 * SYNC in flight, plus an INTERRUPT or STOP. */
	p->mailbox_cap = 2 * p->K + p->V + 4 + ngates;
	return 0;
}
