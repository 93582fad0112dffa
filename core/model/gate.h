/* gate.h - the compute state of one gate: its layers' parameters, gradients,
 * optimizer state and the tapes of its in-flight batches.
 *
 * A gate is the unit the actor runtime schedules, but this file knows nothing
 * about threads: the sequential reference trainer drives the very same
 * functions, which is what makes flip-flop bit-for-bit equal to it.
 *
 * Memory is planned at init: one block each for parameters, gradients, state
 * and optimizer moments (llm.c style), a ring of training tapes used as a FIFO
 * (a forward pushes, a backward pops: the Akkordeon wheels queue), a ring of
 * evaluation tapes, and with weight stashing a pool of ntapes + 1 weight
 * buffers: a forward notes the buffer of the current version, and a step
 * writes the next version into a buffer no batch in flight reads (never a
 * copy). Nothing is allocated after akk_gate_init. */
#ifndef AKK_GATE_H
#define AKK_GATE_H

#include "model/model.h"
#include "nn/optim.h"
#include "base/rng.h"

/* What one in-flight batch leaves behind for its backward. */
struct akk_tape {
	float *act;		/* (B, plan->act): every layer's output, layer-major */
	float *aux;		/* (B, plan->aux) */
	float *dx;		/* (max_batch, in): the input gradient sent upstream;
				 * lent to the upstream gate until this tape is reused */
	const float *w;		/* the weights the forward used: with stashing,
				 * the pool buffer of its version, shared by the
				 * live tapes of that version */
	const float *x;		/* the input, lent by upstream until the backward */
	int B;
	long id;		/* batch sequence number */
	long version;		/* weight version (optimizer steps) the forward saw */
};

struct akk_gate {
	const struct akk_gate_plan *plan;	/* not owned */
	struct akk_layer *layers;	/* (plan->nlayers) copies of the plan's
					 * layers carrying this gate's pool */
	int max_batch;
	int tape_batch;		/* samples a training tape holds (<= max_batch) */
	float *params;		/* (nparams) the current weights; with stashing
				 * one of wbuf, another after each step */
	float **wbuf;		/* with stashing: the nwbuf weight buffers
				 * (gate.c), params among them; NULL without */
	int nwbuf;
	float *grads;		/* (nparams + 1) accumulated by backward, zeroed by
				 * step; the extra float carries a sample count
				 * in data-parallel reductions */
	float *state;		/* (nstate) batchnorm running statistics */
	float *opt;		/* (nparams * per-param state) optimizer moments */
	float *work;		/* (plan->work) layer scratch */
	float *act_dy;		/* (tape_batch, widest fused output) the
				 * layers' act_dy (akk_layers_fuse); NULL
				 * when no layer is fused with its activation */
	float *dbuf[2];		/* (max_batch, widest layer input) backward ping-pong */
	size_t *act_off, *aux_off;	/* per layer, floats per sample before it */
	struct akk_tape *tapes;	/* ntapes training tapes, a FIFO ring */
	int ntapes, head, count;
	struct akk_tape *evals;	/* nevals evaluation tapes, indexed by slot */
	int nevals;
	long step;		/* optimizer steps taken: the weight version */
	int steps_per_epoch;	/* for the LR schedule */
	int epochs;
	struct akk_rng rng;	/* dropout */
	float last_lr;
	int lr_reductions;	/* lr schedule plateau: reductions so far
				 * (akk_lr_reduced); set between epochs */
};

/* What a gate is built for. */
struct akk_gate_config {
	int max_batch;		/* samples of the largest batch */
	int tape_batch;		/* samples of the largest training chunk
				 * (the pipeline's micro-batches; a training
				 * forward of more fails); 0: max_batch */
	int ntapes;		/* training batches in flight */
	int nevals;		/* evaluation batches in flight */
	int stash;		/* keep the weights each tape's forward used */
	int steps_per_epoch;	/* optimizer steps an epoch, for the lr schedule */
	int epochs;		/* epochs of the run, for the lr schedule */
	uint64_t seed;		/* parameters' init: a stream per gate and layer */
};

/* A gate that only evaluates (and may train a batch at a time, as the
 * profiler does): batches of up to max_batch, one tape, one evaluation. */
struct akk_gate_config akk_gate_config_eval(int max_batch, uint64_t seed);

/* The bytes of the tapes akk_gate_init allocates for c: the training
 * tapes (activations, aux and the input gradient of a chunk), the
 * evaluation tapes (of a batch) and the stashed weights. */
struct akk_gate_memory {
	double train, eval, stash;
};
struct akk_gate_memory akk_gate_memory(const struct akk_gate_plan *plan,
				       const struct akk_gate_config *c);

/* Allocate everything c asks for; parameters are initialised from c->seed. */
int akk_gate_init(struct akk_gate *g, const struct akk_gate_plan *plan,
		  const struct akk_gate_config *c, struct akk_err *e);
void akk_gate_release(struct akk_gate *g);
/* Let the gate's large products run split across pool (NULL, the default:
 * on the calling thread alone). The pool is lent: it must outlive every
 * forward, backward and eval of the gate; one pool may serve several gates
 * (a product that finds it busy runs alone). */
void akk_gate_use_pool(struct akk_gate *g, struct akk_pool *pool);

/* Whether layer i of g is computed by a neighbour (nn/layer.h,
 * akk_layers_fuse): a relu a max-pool after it applies, or an activation
 * the dense or conv2d before it applies. */
int akk_gate_fused_away(const struct akk_gate *g, int i);

/* Training forward of batch `id` (B samples of x, lent until its backward):
 * pushes a tape and returns the output (B, out), valid until that tape is
 * popped and pushed again. Fails when all tapes are in flight. */
const float *akk_gate_forward(struct akk_gate *g, const float *x, int B,
			      long id, struct akk_err *e);
/* Zero the state the layers carry from one training batch to the next
 * (l->ncarry: stateful recurrent layers), as at a run's start: called
 * before the forward of each epoch's first batch. Running statistics
 * (batchnorm's) stay. */
void akk_gate_restart(struct akk_gate *g);
/* Backward of the oldest tape, which must be batch `id`: accumulates the
 * parameter gradient and returns the input gradient (B, in) in the tape's dx
 * buffer, or NULL when need_dx is 0. Uses the stashed weights if any. */
const float *akk_gate_backward(struct akk_gate *g, const float *dy, int B,
			       long id, int need_dx, struct akk_err *e);
/* One optimizer step on the accumulated gradient, which is then zeroed.
 * Fails (naming the gate and step) on a non-finite gradient; the weights
 * are then spoilt and the run must stop. With stashing, at most ntapes - 1
 * batches may be in flight (a step follows a backward). */
int akk_gate_step(struct akk_gate *g, struct akk_err *e);
/* The weight version the next backward (of the oldest tape) computes its
 * input gradient with: the forward's with a stash, else the current one;
 * -1 with no tape in flight. */
long akk_gate_backward_version(const struct akk_gate *g);

/* Evaluation forward into eval tape `slot`: returns (B, out). */
const float *akk_gate_eval(struct akk_gate *g, int slot, const float *x,
			   int B);

/* Bytes of the weight stash the gate allocated. */
size_t akk_gate_stash_bytes(const struct akk_gate *g);

/* Under MPI: a gate's state as one array of floats (parameters, running
 * state, optimizer moments, then the step and RNG words bit for bit), for
 * the sentinel to gather before a checkpoint. */
long akk_gate_pack_len(const struct akk_gate_plan *p);
void akk_gate_pack(const struct akk_gate *g, float *out);
void akk_gate_unpack(struct akk_gate *g, const float *in);

#endif
