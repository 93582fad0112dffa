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
#include "nn/loss.h"
#include "model/heads.h"

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
	/* The gates as a graph. Its sources, in order: gate indices before
	 * it, or AKK_GATE_INPUT; with two or more, joined (concat on the
	 * first dimension: source k's floats of a sample at src_off[k] of
	 * the input's; add: all at 0). */
	int nsrc;
	int src[AKK_MAX_JOIN];
	enum akk_join join;
	size_t src_off[AKK_MAX_JOIN], src_n[AKK_MAX_JOIN];
	/* Where source k's src_n floats lie in each row of what it sends:
	 * src_at[k] of src_row[k] floats per sample. A gate's output is
	 * taken whole (at 0 of src_n); the network input is one flat sample,
	 * of which a named input is a slice (src_in[k]: its index in
	 * spec->inputs, 0 without them). A gate that takes a slice gathers
	 * it into a buffer of its own, as a join does (model/flow.h). */
	size_t src_at[AKK_MAX_JOIN], src_row[AKK_MAX_JOIN];
	int src_in[AKK_MAX_JOIN];
	/* The gates that read its output, in config order (none: the
	 * network's output, the last gate); for reader j, where its output
	 * lies in the reader's input (floats per sample: rd_off[j] of
	 * rd_in[j]), and whether the reader's input gradient is its own
	 * gradient whole (one source, or add). */
	int nread;
	int readers[AKK_MAX_JOIN];
	size_t rd_off[AKK_MAX_JOIN], rd_in[AKK_MAX_JOIN];
	int rd_whole[AKK_MAX_JOIN];
};

struct akk_model {
	const struct akk_spec *spec;	/* not owned */
	struct akk_gate_plan *gates;	/* ngates, owned */
	int ngates;
	/* The last gate's output: [classes] (one class label or target row
	 * per sample, steps 1) or, for a classifier, a sequence [T, classes]
	 * (one class label per step, steps T): the loss is taken at every
	 * step. */
	int classes;			/* outputs per step */
	int steps;			/* labels per sample: 1 or T */
	size_t nparams;
	/* network.outputs: where the batches put each head's float target
	 * (n 0 without heads); model/heads.h */
	struct akk_target_map tmap;
	double flops;			/* forward FLOPs per sample */
	/* Training FLOPs per sample: forward, input gradient and parameter
	 * gradient, each about one forward, less the input gradient the first
	 * layer never computes. */
	double train_flops;
};

/* The gates that read the network input (1 for a chain); a gate that
 * reads several named inputs counts once: it takes one message of the
 * batch and gives one credit back. */
int akk_model_inputs(const struct akk_model *m);
/* With network.inputs, a sample of n values (what: "training", ...) must
 * have their sizes' sum: else -1 with e at the inputs' place, naming each
 * input's shape. 0 without inputs (network.input's own check applies). */
int akk_model_inputs_fit(const struct akk_model *m, size_t n, const char *what,
			 struct akk_err *e);
/* Whether gate g reads the network input (or a named input). */
int akk_gate_reads_input(const struct akk_gate_plan *g);
/* Whether gate g computes an input gradient: it reads some gate. */
int akk_gate_reads_gates(const struct akk_gate_plan *g);

/* Whether the gates form a chain: each reads the one before it. */
int akk_model_is_chain(const struct akk_model *m);

/* Outputs of the last gate per sample: steps * classes. */
static inline int akk_model_outputs(const struct akk_model *m)
{
	return m->steps * m->classes;
}

int akk_model_plan(struct akk_model *m, const struct akk_spec *s,
		   struct akk_err *e);
void akk_model_release(struct akk_model *m);
/* Whether a and b (both planned) are wired alike where it decides which
 * weights go where: every layer with parameters or inner layers of the
 * same kind, input and output shape, in the same place; every gate
 * reading the same gates with the same join; a graph's nodes in the same
 * order, each reading the same nodes with the same join.
 * Options that hold no weights (a dropout rate, an activation without
 * parameters) may differ. 0, or -1 with what (size bytes) saying where
 * they part: "gate 1, layer 3 (graph), node 2: its inputs differ". */
int akk_model_same_wiring(const struct akk_model *a, const struct akk_model *b,
			  char *what, size_t size);
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

/* The loss of a batch of B samples: the outputs out (B x outputs) against
 * the labels (B x steps) or, for data.task regression, the float targets
 * (B x outputs), as akk_loss and akk_loss_targets: the mean over the B *
 * steps rows of classes outputs (for softmax cross-entropy the mean over
 * every step of every sample), its gradient in dout unless NULL; correct
 * counts steps whose argmax is their label, rs the regression sums. Every
 * trainer and evaluation takes its loss here. */
double akk_model_loss(const struct akk_model *m, float *dout, const float *out,
		      const int32_t *labels, const float *targets, int B,
		      long *correct, struct akk_reg_sums *rs);
/* The same, with each head's sums added to hs (spec->nheads of them; NULL:
 * none) for a network with heads. */
double akk_model_loss_heads(const struct akk_model *m, float *dout, const float *out,
			    const int32_t *labels, const float *targets, int B,
			    long *correct, struct akk_reg_sums *rs,
			    struct akk_head_sums *hs);

#endif
