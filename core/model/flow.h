/* flow.h - what moves between the gates of a graph: a gate's input joined
 * from its sources' outputs, and its output gradient summed from its
 * readers' input gradients.
 *
 * A gate that reads several gates joins their outputs into a buffer of
 * its own (concat: each sample's floats side by side, source by source;
 * add: the sum in source order); a gate that several gates read, or whose
 * reader concatenates it with others, takes its gradient as the sum of
 * its part of each reader's input gradient, in the readers' config order.
 * The sequential reference and the actors call the same functions, so
 * the sums are the same bit for bit. Buffers are planned at init (one per
 * training tape and per evaluation slot: a joined input is lent to the
 * gate's forward until its backward); nothing is allocated afterwards,
 * and a chain's flows hold no buffer at all. A gate that reads a named
 * input (config/inputs_spec.h) takes its slice of each sample the same
 * way: gathered into its input buffer, where a join would join. */
#ifndef AKK_FLOW_H
#define AKK_FLOW_H

#include "model/gate.h"

struct akk_flow {
	const struct akk_gate_plan *plan;	/* not owned */
	float *in;	/* (ntrain + neval) * max_batch * in, or NULL */
	float *dy;	/* max_batch * out, or NULL */
	int ntrain, neval, max_batch;
};

int akk_flow_init(struct akk_flow *f, const struct akk_gate_plan *p, int ntrain,
		  int neval, int max_batch, struct akk_err *e);
void akk_flow_release(struct akk_flow *f);
/* The bytes akk_flow_init allocates for p (0 for a chain's gate). */
double akk_flow_memory(const struct akk_gate_plan *p, int ntrain, int neval,
		       int max_batch);

/* Whether gate p's input is gathered into a buffer of its own: it joins
 * two or more sources, or takes a slice of the network input (a named
 * input, model.h: src_at, src_row). */
int akk_gate_gathers(const struct akk_gate_plan *p);

/* Gate p's sources' outputs src[k] (B rows of src_row[k] each) gathered
 * into y (B rows of p's input): each source's slice, joined, for a gate
 * that akk_gate_gathers. */
void akk_join_into(const struct akk_gate_plan *p, const float *const *src, int B,
		   float *y);

/* The gate's input from its sources' outputs src[k] (B rows each, in
 * plan->src order): src[0] itself for one source, else joined into the
 * buffer of the training tape g's next forward pushes. */
const float *akk_flow_join_train(struct akk_flow *f, const struct akk_gate *g,
				 const float *const *src, int B);
/* The same into evaluation slot `slot`'s buffer. */
const float *akk_flow_join_eval(struct akk_flow *f, int slot,
				const float *const *src, int B);
/* The gate's output gradient from its readers' input gradients rdx[j]
 * (B rows of plan->rd_in[j], in plan->readers order): rdx[0] itself for
 * one reader that takes it whole, else the sum of the parts in order. */
const float *akk_flow_grad(struct akk_flow *f, const float *const *rdx, int B);

/* Evaluation through every gate in config order (evaluation slot `slot`
 * of each gate and flow): outs[g] is gate g's output, B rows; the
 * network's is outs[ngates - 1]. */
void akk_flows_eval(const struct akk_model *m, struct akk_gate *const *gates,
		    struct akk_flow *flows, int slot, const float *x, int B,
		    const float **outs);
/* Flows for every gate of m (ngates of them in flows). */
int akk_flows_init(struct akk_flow *flows, const struct akk_model *m, int ntrain,
		   int neval, int max_batch, struct akk_err *e);
void akk_flows_release(struct akk_flow *flows, int n);

#endif
