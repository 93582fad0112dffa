/* profile.h - what each layer of a planned network costs on this machine.
 *
 * akk_profile_model builds every gate of a plan (akk_gate_init, the very
 * buffers training uses), feeds it random batches of the real shapes and
 * times each layer's forward and backward and each gate's optimizer step,
 * best of a few repetitions after a warm-up. It runs on the calling thread
 * alone with one BLAS thread (left so: the runtime sets the same) and
 * denormals flushed, as the actors compute, before any actor starts. The time spent in GEMM is attributed
 * from FLOPs: each dense or conv2d layer's product FLOPs over the rate
 * akk_sgemm reaches at that layer's own product shape, timed here too. */
#ifndef AKK_PROFILE_H
#define AKK_PROFILE_H

#include "model/model.h"

struct akk_layer_cost {
	int gate, layer;	/* 0-based: gate, layer within it */
	double fwd, bwd, opt;	/* seconds per batch; opt: the gate's step
				 * shared out by parameter count */
	double gemm;		/* seconds per batch of it in GEMM (attributed) */
	double flops;		/* training FLOPs per batch: forward, backward */
};

/* The network's layers in order (m's gates one after another), into cost
 * (one per layer of m, all gates together), for batches of B samples,
 * best of reps timed repetitions. */
int akk_profile_model(const struct akk_model *m, int B, int reps,
		      struct akk_layer_cost *cost, struct akk_err *e);

/* Training FLOPs of one batch of B through layer i of gate plan g:
 * forward, parameter gradient and input gradient, each about one
 * forward, but no input gradient from the first layer of a gate that
 * reads the network's inputs alone (nothing upstream takes it). */
double akk_layer_train_flops(const struct akk_gate_plan *g, int i, int B);

/* One planned layer alone (a composite's inner layer: a graph's node),
 * on random buffers of its shapes for batches of B, best of reps: its
 * forward and backward into c (opt 0, gemm 0). Run as
 * akk_profile_model runs: one BLAS thread, denormals flushed. */
int akk_profile_layer(const struct akk_layer *l, int B, int reps,
		      struct akk_layer_cost *c, struct akk_err *e);

/* A random training batch of B samples for gate plan p, from r: its
 * input x (B times p's input size; token ids when the first layer is an
 * embedding) and an output gradient dy (B times p's output size) uniform
 * in [-dy_scale / 2, dy_scale / 2). */
struct akk_rng;
void akk_profile_batch(const struct akk_gate_plan *p, int B, float dy_scale,
		       struct akk_rng *r, float *x, float *dy);

/* Total layers of m, all gates together. */
int akk_model_nlayers(const struct akk_model *m);

#endif
