/* overlap.h - the most running a network's gates at once can gain on this
 * machine, now: the ceiling of every pipelined schedule.
 *
 * akk_overlap_bound builds every gate of a plan (akk_gate_init, the very
 * buffers training uses) and trains each on random batches of its real
 * shapes, n batches per gate (forward, backward, optimizer step):
 *   1. sequential: the gates one after another on the calling thread, as
 *      flip-flop computes them with one compute thread per gate;
 *   2. concurrent: each gate on a thread of its own, all started at once
 *      and nothing passed between them, as a pipeline with perfect overlap
 *      would compute them.
 * The two alternate in rounds of 50 batches, so that a machine whose speed
 * drifts over seconds (a shared virtual machine) slows both alike.
 * sequential / concurrent holds the machine's scaling over cores (shared
 * caches, memory bandwidth, a virtual machine's host) and the gates'
 * imbalance, and nothing of akkctl's runtime: no messages, no loss, no
 * data. A wheels run can beat it only by the serial work flip-flop does
 * besides its gates (hops, loss, validation after the epoch). One BLAS
 * thread per gate and denormals flushed, as the actors compute. */
#ifndef AKK_OVERLAP_H
#define AKK_OVERLAP_H

#include "model/model.h"

struct akk_overlap_bound {
	double sequential;	/* seconds: n batches of every gate, in turn */
	double concurrent;	/* seconds: the same, a thread per gate at once */
	int ngates;
	/* the last concurrent round: when each gate's work began and ended,
	 * seconds since the threads were released together */
	double begin[AKK_MAX_GATES], end[AKK_MAX_GATES];
	long steps[AKK_MAX_GATES];	/* optimizer steps each gate took in
					 * the concurrent rounds */
};

/* Time m's gates as above for batches of B samples, n of them per gate
 * and per run, after a warm-up batch. m has at least 2 gates; the
 * concurrent run starts ngates - 1 threads. */
int akk_overlap_bound(const struct akk_model *m, int B, int n,
		      struct akk_overlap_bound *o, struct akk_err *e);

#endif
