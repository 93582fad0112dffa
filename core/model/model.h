/* model.h - the planned network: every layer's shape, size and cost.
 *
 * akk_model_plan runs shape inference through every layer of every gate,
 * once, before any thread starts; it is the only place a shape can be wrong,
 * and it reports the mismatch at the layer's line in the config, naming both
 * layers. The plan is read-only afterwards and shared by all actors. */
#ifndef AKK_MODEL_H
#define AKK_MODEL_H

#include "base/err.h"
#include "nn/layer.h"
#include "config/spec.h"
#include "data/dataset.h"

struct akk_gate_plan {
	int index;			/* 0-based */
	struct akk_layer *layers;	/* nlayers, owned by the model */
	int nlayers;
	struct akk_shape in, out;
	size_t nparams, nstate;		/* floats in the parameter / state blocks */
	size_t act;			/* floats per sample: every layer's output */
	size_t aux;			/* floats per sample kept for backward */
	size_t work;			/* floats of scratch (max over its layers) */
	size_t work_sample;		/* and per sample of a call (max) */
	double flops;			/* forward FLOPs per sample */
	const struct akk_optim_spec *optim;	/* the gate's effective optimizer */
};

struct akk_model {
	const struct akk_spec *spec;	/* not owned */
	struct akk_gate_plan *gates;	/* ngates, owned */
	int ngates;
	int classes;			/* outputs of the last gate */
	size_t nparams;
	double flops;			/* forward FLOPs per sample */
	/* Training FLOPs per sample: forward, input gradient and parameter
	 * gradient, each about one forward, less the input gradient the first
	 * layer never computes. */
	double train_flops;
};

int akk_model_plan(struct akk_model *m, const struct akk_spec *s,
		   struct akk_err *e);
void akk_model_release(struct akk_model *m);
/* A network whose first layer is an embedding takes token ids: fails,
 * naming path, the sample and the step, when a value of d is not an id
 * of its vocabulary (d's values as stored: the spec keeps ids unscaled).
 * Nothing to check for other networks. */
int akk_model_check_ids(const struct akk_model *m, const struct akk_dataset *d,
			const char *path, struct akk_err *e);

/* Whether weight stashing matters for a gate: its backward reads the
 * weights only to compute input gradients (but for the kinds with
 * grad_reads_params and composites), and the network's first layer
 * computes none, so a first gate whose only parameters are that layer's
 * never reads stashed weights. */
int akk_gate_needs_stash(const struct akk_gate_plan *g);


#endif
