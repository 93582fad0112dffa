/* gate_actor.h - one gate as an actor on the run's workers (actors.h). */
#ifndef AKK_GATE_ACTOR_H
#define AKK_GATE_ACTOR_H

#include "runtime/actors.h"

/* Data parallelism: give the gate's layers that keep running state
 * (batchnorm) the actor's sums over the replicas; forward sums go on
 * reduction channel G + self, backward ones on the gradient's channel
 * self - 1 (2 G + 1 channels in all). Allocates once. */
int akk_gate_actor_sync(struct akk_gate_actor *a, struct akk_err *e);

/* The gate's task on r->workers, fed by its mailbox (before the run
 * starts). */
void akk_gate_actor_attach(struct akk_gate_actor *a);

#endif
