/* loss_here.h - a training chunk's loss computed by the worker that ran
 * the last gate's forward, not by the sentinel.
 *
 * The sentinel's thread is also a worker: while it waits for mail it runs
 * the gates' handlers. A last gate that sent its output to the sentinel
 * could then wait a whole handler of another gate (up to 0.35 ms on
 * configs/bench-balanced.yaml) for a loss that takes microseconds, with
 * nothing else to do. So when every gate
 * runs in this process, for the schedules without the seed's strict
 * states (wheels, pipeline), the last gate computes the loss and its
 * gradient right after its forward, tells the sentinel (a LOSS message)
 * and goes on with its backward. The arithmetic is the sentinel's, in the
 * same order (the chunks' order through the last gate), so the bits are
 * the same. A loss the sentinel has to report (not finite, above
 * schedule.max_loss) goes to it as the output, as before, and the
 * sentinel stops the run with its usual message. */
#ifndef AKK_LOSS_HERE_H
#define AKK_LOSS_HERE_H

#include <stdint.h>

#include "model/model.h"
#include "runtime/transport.h"

/* What the sentinel fills when it issues a chunk, at the chunk's id mod K;
 * the last gate reads it after the chunk's forward (the messages between
 * order the two), and writes loss. */
struct akk_loss_chunk {
	const int32_t *labels;	/* the chunk's, as the batch holds them */
	const float *targets;
	float *dlogits;		/* where its loss gradient goes */
	int B;
	int hold;		/* more chunks of its step group follow */
	double scale;		/* its share of the group's samples */
	double loss;		/* the chunk's mean loss, written here */
};

struct akk_loss_here {
	const struct akk_model *model;
	struct akk_loss_chunk *chunks;	/* K, owned by the sentinel; NULL:
					 * the sentinel computes the loss */
	int K;
	double max_loss;	/* schedule.max_loss; 0: none */
	/* the phase's training sums, added to in the chunks' order by the
	 * last gate alone (also for a chunk it then passes on: the sentinel
	 * adds nothing of that one); the sentinel reads them once the
	 * phase's credits are back */
	long *correct;
	struct akk_reg_sums *reg;
	struct akk_head_sums *heads;
};

/* The loss of the training output `out` (the last gate's Forward) and its
 * gradient, scaled by the chunk's share of its group: 1 with back the
 * Backward the sentinel would have sent the last gate; 0 when the sentinel
 * must see the output (the loss is not finite or above max_loss). */
int akk_loss_here(struct akk_loss_here *h, const struct akk_msg *out,
		  struct akk_msg *back);

#endif
