/* sentinel.h - the actor that drives the epochs: it issues batches to
 * the first gate, takes the logits, sends the loss gradients back and
 * reports each epoch to the run's observer. */
#ifndef AKK_SENTINEL_H
#define AKK_SENTINEL_H

#include "runtime/actors.h"

/* Run every epoch of r on this thread (rank 0); 0 when done or cleanly
 * interrupted, -1 with e filled. */
int akk_sentinel_run(struct akk_run *r, struct akk_err *e);

#endif
