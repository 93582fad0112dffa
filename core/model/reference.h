/* reference.h - the sequential reference trainer: no actors, no threads.
 *
 * One batch goes forward through every gate in config order (a topological
 * order of the gates' graph: a join reads its sources' outputs joined),
 * into the loss, backward through every gate in reverse (a gate that
 * several gates read takes the sum of their gradients, in their config
 * order), and each gate takes its optimizer step right after its
 * backward, exactly as a flip-flop gate does. It calls the same gate
 * functions as the actors, so it is the oracle the schedules are tested
 * against. It is not a user-facing mode. */
#ifndef AKK_REFERENCE_H
#define AKK_REFERENCE_H

#include "data/batch.h"
#include "model/flow.h"
#include "model/gate.h"
#include "model/model.h"

struct akk_reference {
	const struct akk_model *model;	/* not owned */
	const struct akk_dataset *train;	/* not owned */
	struct akk_gate *gates;		/* model->ngates, owned */
	struct akk_flow *flows;		/* model->ngates: the joins and forks */
	const float **outs;		/* model->ngates: each gate's output */
	const float **dxs;		/* model->ngates: each gate's input gradient */
	struct akk_batch batch;
	uint32_t *perm;			/* (train->n) this epoch's order */
	struct akk_preprocess pre;	/* from the spec and train, owned */
	long per_epoch;			/* batches per epoch */
	int epoch;			/* current epoch, 0-based */
	long index;			/* next batch within the epoch */
	long id;			/* batches done in total */
};

int akk_reference_init(struct akk_reference *r, const struct akk_model *m,
		       const struct akk_dataset *train, struct akk_err *e);
void akk_reference_release(struct akk_reference *r);
/* Train on the next batch; adds the batch's summed loss (mean * B) and
 * correct count to *loss_sum and *correct when not NULL. */
int akk_reference_step(struct akk_reference *r, double *loss_sum,
		       long *correct, struct akk_err *e);
/* Mean loss and accuracy (R^2 for regression) over a dataset with
 * evaluation-mode forwards. */
int akk_reference_evaluate(struct akk_reference *r,
			   const struct akk_dataset *d, double *loss,
			   double *accuracy, struct akk_err *e);

#endif
