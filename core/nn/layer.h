/* layer.h - the layer interface: one small ops table per layer kind.
 *
 * A layer is a spec (its options from the config), a plan (shapes and sizes,
 * filled once by ops->plan before any thread starts) and pure kernels. A layer
 * owns no memory: its parameters, gradients and running state are views into
 * the blocks of the gate that holds it (offsets poff/soff), and what its
 * backward needs besides its input and output lives in an "aux" buffer that
 * the gate keeps per in-flight batch. Adding a kind touches one file (its
 * ops and its option table) and one line of the kinds table in layer.c. */
#ifndef AKK_LAYER_H
#define AKK_LAYER_H

#include <stddef.h>

#include "base/err.h"
#include "base/rng.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

/* Where something was written in the config, for error reports. */
struct akk_mark {
	int line, col;		/* 1-based; 0 = not from the file (a default) */
};

enum akk_init {
	AKK_INIT_DEFAULT,	/* the kind's default (see each layer) */
	AKK_INIT_XAVIER_UNIFORM,
	AKK_INIT_XAVIER_NORMAL,
	AKK_INIT_HE_UNIFORM,
	AKK_INIT_HE_NORMAL,
	AKK_INIT_LECUN_UNIFORM,	/* U(+-1/sqrt(fan_in)): torch's nn.Linear */
	AKK_INIT_ZEROS,
	AKK_INIT_CONSTANT,
};

#define AKK_KIND_OPTS 4	/* fopt and iopt slots of a layer spec */

/* Options of one layer, as written in the config. Only the fields in the
 * kind's option table are meaningful: the spec parser sets them (to their
 * table's defaults when absent) and leaves the others zero. Kernels, strides
 * and paddings are square. */
struct akk_layer_spec {
	const struct akk_layer_ops *ops;
	struct akk_mark mark;	/* the layer's entry in the config */
	int units;		/* dense: output features */
	int filters;		/* conv2d, conv_transpose2d: output channels */
	int kernel;		/* conv2d, conv_transpose2d, maxpool2d, avgpool2d */
	int stride;		/* conv2d, conv_transpose2d (default 1); pools
				 * (0 = the kernel: akk_pool2d_stride) */
	int padding;		/* conv2d, conv_transpose2d, pools (default 0) */
	int bias;		/* dense, conv2d, conv_transpose2d: 1 = with
				 * bias (default) */
	float rate;		/* dropout: probability of dropping, [0, 1) */
	float alpha;		/* leaky_relu: negative slope (default 0.01) */
	float momentum;		/* batchnorm: running-stat momentum (0.1) */
	float eps;		/* batchnorm: variance epsilon (1e-5) */
	enum akk_init init;	/* dense, conv2d, conv_transpose2d: weight
				 * initialiser */
	float init_value;	/* AKK_INIT_CONSTANT: the value */
	/* The options of a kind that no field above fits: its option table
	 * places them here (AKK_OPTION("factor", FLOAT, fopt[0], ...); INT,
	 * BOOL and INIT options in iopt) and its kernels read them from
	 * there, so a new kind adds no field to this struct. */
	float fopt[AKK_KIND_OPTS];
	int iopt[AKK_KIND_OPTS];
	/* residual: the inner chain (ninner >= 1) and the shortcut chain
	 * (nshort 0: the identity), owned by the spec. */
	struct akk_layer_spec *inner, *shortcut;
	int ninner, nshort;
	/* graph: its nodes and edges (nn/layer_graph.h), owned by the spec;
	 * inner[i] holds node i's layer (ninner nodes). NULL otherwise. */
	struct akk_graph_spec *graph;
};

/* A named tensor inside a gate block, for checkpoints and inspect. */
struct akk_view {
	const char *name;	/* "weight", "bias", "gamma", "running_mean", ... */
	int state;		/* 0: in the parameter block; 1: in the state block */
	size_t off;		/* floats from the layer's poff (or soff) */
	int rank;
	int dims[4];
};

#define AKK_MAX_VIEWS 8	/* a bidirectional recurrent layer's */

struct akk_layer {
	const struct akk_layer_ops *ops;
	const struct akk_layer_spec *spec;	/* points into the spec: do not free */
	struct akk_shape in, out;
	/* Filled by ops->plan: */
	size_t nparams;		/* trainable floats */
	size_t nstate;		/* non-trainable floats (batchnorm running stats) */
	size_t ncarry;		/* of them, the first ncarry (from soff): state
				 * carried from one training batch to the next,
				 * per batch row (a stateful recurrent layer's),
				 * zeroed at each epoch's start; 0 for the others */
	size_t aux;		/* floats per sample kept from forward to backward */
	size_t work;		/* floats of scratch a call needs, whatever B;
				 * not kept between calls */
	size_t work_sample;	/* and more scratch per sample of the call:
				 * a call of B samples gets work + B *
				 * work_sample floats (recurrent kinds) */
	double flops;		/* forward FLOPs per sample (multiply-add = 2) */
	int nviews;
	struct akk_view views[AKK_MAX_VIEWS];
	/* Set before ops->plan (model/model.c): the rows of the largest
	 * training batch, which a layer carrying state from one batch to the
	 * next keeps a state for each of; 0 when no run's batch applies (a
	 * composite's inner layers): such a layer then refuses. */
	int max_batch;
	/* Filled by the gate: */
	size_t poff, soff;	/* offsets in the gate's parameter / state blocks */
	struct akk_pool *pool;	/* what the kernels pass to akk_sgemm: the
				 * gate's compute pool, or NULL (the calling
				 * thread alone); lent by the run: do not free */
	int relu_in;		/* set by akk_layers_fuse: this layer applies
				 * the relu before it, which the gate skips */
	const struct akk_layer *act_out;	/* set by akk_layers_fuse (dense,
				 * conv2d): the activation right after this
				 * layer, which the gate skips; this layer
				 * applies it to its output in place and its
				 * derivative to dy (akk_act_fused_*); NULL:
				 * none. Points into the same layer array. */
	float *act_dy;		/* with act_out: (B, out) scratch for the
				 * gradient through the activation, B up to
				 * the gate's tape batch; lent by the gate */
	struct akk_layer_sync *sync;	/* data parallelism: sums over every
				 * replica (batchnorm), or NULL; lent by the run */
	/* Composite kinds (residual, graph): their inner layers, planned by ops->plan
	 * with offsets relative to this layer's poff/soff, owned by this
	 * layer (akk_layer_release). A composite passes its own pool to
	 * them on each call. */
	struct akk_layer *sub;
	int nsub;
};

/* Data parallelism (runtime/gate_actor.c fills it): a layer whose
 * statistics span the whole batch sums them over every replica. sum adds
 * n doubles of buf over the replicas in place, on the forward's channel
 * or the backward's (every replica makes the same calls in the same
 * order); on failure it returns -1 and sets failed, which the gate's
 * actor reports after the call (kernels cannot fail). */
struct akk_layer_sync {
	int (*sum)(struct akk_layer_sync *s, double *buf, int n, int backward);
	double *buf;		/* scratch: at least a layer's nstate + 1 doubles */
	int failed;
};

/* One option of a layer kind, declared in the kind's file; the spec parser
 * reads a layer's mapping from its kind's table: type, range, default. */
enum akk_option_type {
	AKK_OPTION_INT,
	AKK_OPTION_FLOAT,
	AKK_OPTION_BOOL,
	AKK_OPTION_INIT,	/* a name of enum akk_init: "he_normal" */
	AKK_OPTION_NAME,	/* one of the option's names, stored as its
				 * index in an int field: "bilinear" */
	AKK_OPTION_SHAPE,	/* a list of 1 to 3 sizes, stored as a struct
				 * akk_shape over iopt: "[1, 28, 28]" */
};

enum {
	AKK_OPTION_REQ = 1,	/* required (then def is unused) */
	AKK_OPTION_LO = 2,	/* value >= lo (> lo with LO_OPEN) */
	AKK_OPTION_HI = 4,	/* value <= hi (< hi with HI_OPEN) */
	AKK_OPTION_LO_OPEN = 8,
	AKK_OPTION_HI_OPEN = 16,
};

struct akk_layer_option {
	const char *name;	/* the key in the config */
	enum akk_option_type type;
	size_t off;		/* field of struct akk_layer_spec */
	unsigned flags;		/* AKK_OPTION_* */
	double lo, hi;
	double def;		/* when absent (bool 0/1, init an enum value,
				 * a name its index) */
	const char *const *names;	/* AKK_OPTION_NAME: the names,
				 * NULL-terminated; NULL for the others */
};

#define AKK_MAX_OPTIONS 15	/* per kind */
#define AKK_OPTION(name, type, field, flags, lo, hi, def)                    \
	{ name, AKK_OPTION_##type, offsetof(struct akk_layer_spec, field),     \
	  flags, lo, hi, def, NULL }
/* An option whose value is one of names (NULL-terminated), stored in the
 * int field as its index; def is the index when absent. */
#define AKK_OPTION_NAMES(name, field, names, def)                            \
	{ name, AKK_OPTION_NAME, offsetof(struct akk_layer_spec, field), 0,    \
	  0, 0, def, names }
#define AKK_OPTIONS_END { NULL, 0, 0, 0, 0, 0, 0, NULL }

struct akk_graph_sink;
struct akk_export_io;

struct akk_layer_ops {
	const char *name;	/* as written in the config: "dense", "conv2d", ... */
	/* The kind's options, AKK_OPTIONS_END-terminated; NULL: none. A scalar
	 * written for the layer ("dense: 10") sets the option named shorthand
	 * (NULL: the kind takes a mapping only). */
	const struct akk_layer_option *options;
	const char *shorthand;
	/* From l->spec and l->in, fill l->out and the sizes above. On a shape the
	 * kind cannot take, set e->msg to what it expected (the caller adds the
	 * location and the layers' names) and return -1. */
	int (*plan)(struct akk_layer *l, struct akk_err *e);
	/* Initialise parameters p (nparams) and state s (nstate). */
	void (*init)(const struct akk_layer *l, float *p, float *s,
		     struct akk_rng *rng);
	/* y (B x out) from x (B x in). train: 1 for training (dropout drops,
	 * batchnorm uses and updates batch statistics), 0 for evaluation.
	 * aux: B * l->aux floats kept for backward; work: l->work scratch.
	 * rng is used by dropout only. s is the layer's state (may be updated
	 * when train). y never aliases x. */
	void (*forward)(const struct akk_layer *l, float *y, float *aux,
			float *s, float *work, const float *x, const float *p,
			int B, int train, struct akk_rng *rng);
	/* From dy (B x out), with x, y and aux as left by the training forward
	 * of the same batch and parameters p: ACCUMULATE (+=) the parameter
	 * gradient into dp (nparams), and WRITE dx (B x in) unless dx is NULL
	 * (the first layer of the network needs no input gradient). p is read
	 * only for dx, unless grad_reads_params: weight stashing relies on it
	 * (akk_gate_needs_stash). */
	void (*backward)(const struct akk_layer *l, float *dx, float *dp,
			 float *work, const float *dy, const float *x,
			 const float *y, const float *aux, const float *p,
			 int B);
	/* 1: the parameter gradient reads p too (the recurrent kinds: the
	 * gradient at each step's state goes back through W_hh), so the
	 * backward needs the forward's weights even as the network's first
	 * layer. */
	int grad_reads_params;
	/* Describe the evaluation forward as ONNX nodes and initializers in
	 * g (nn/export.h), reading io->x and writing io->y. NULL: the kind
	 * cannot be exported, and `akkctl export` refuses it by name. */
	int (*export)(const struct akk_layer *l, struct akk_graph_sink *g,
		      const struct akk_export_io *io, struct akk_err *e);
};

/* The table of kinds. NULL when unknown. */
const struct akk_layer_ops *akk_layer_find(const char *name);
/* The names, NULL-terminated, in table order (for suggestions and docs). */
extern const char *const akk_layer_names[];
/* The names of enum akk_init, NULL-terminated, in enum order. */
extern const char *const akk_init_names[];

/* A composite layer's views: its sub-layers' tensors flat, "params" and
 * "state" (each when it has any), in the sub-layers' order. */
void akk_layer_composite_views(struct akk_layer *l);
/* A composite layer l takes in its sub-layer s's scratch (the largest
 * work and work_sample of its sub-layers) and FLOPs (their sum). */
void akk_layer_composite_add(struct akk_layer *l, const struct akk_layer *s);
/* Free what ops->plan allocated for a composite layer (its sub-layers,
 * recursively); nothing for the other kinds. */
void akk_layer_release(struct akk_layer *l);

/* Helpers for layer kinds: init for kinds with nothing to initialise, and
 * the shape planning the two pooling kinds share (no parameters, no aux). */
void akk_layer_init_none(const struct akk_layer *l, float *p, float *s,
			 struct akk_rng *rng);
int akk_pool2d_plan(struct akk_layer *l, struct akk_err *e);
/* The options both pooling kinds take, and their stride: the spec's, or the
 * kernel when 0 (the default). */
extern const struct akk_layer_option akk_pool2d_options[];
int akk_pool2d_stride(const struct akk_layer_spec *sp);
/* The options of the convolutions conv2d and conv1d: filters, kernel,
 * stride, padding, bias, init, init_value. */
extern const struct akk_layer_option akk_conv_options[];
/* The same for the pools over the steps of a sequence [T, features]
 * (maxpool1d, avgpool1d), which take akk_pool2d_options too. */
int akk_pool1d_plan(struct akk_layer *l, struct akk_err *e);
/* y[0..C) = the maximum of each feature over steps t0..t1-1 of the
 * sequence x ([T, C], t0 < t1), and with aux (not NULL) the step it came
 * from, as a float: ties go to the earliest step, and a NaN wins over a
 * number (the first NaN propagates, as torch's max). The max pools over
 * time share it. */
void akk_max_steps(float *y, float *aux, const float *x, int C, int t0, int t1);

/* embedding: the index of the first of x[0..n) that is not a token id of
 * a vocabulary of vocab (an integer in [0, vocab)), or -1 when all are:
 * what gives the layer a NaN row, found in the data before a run. */
long akk_embedding_bad_id(const float *x, size_t n, int vocab);
/* The vocabulary of an embedding layer; 0 for any other kind. Code that
 * makes up inputs for a network (export's probe, the profile) gives an
 * embedding ids below it rather than noise, which has no ids. */
int akk_embedding_vocab(const struct akk_layer *l);

/* Mark in layers[0..n) (one gate's) the pairs that one kernel computes: a
 * relu directly followed by a maxpool2d, where max-pooling then relu is
 * relu then max-pooling bit for bit and reads a quarter of the elements
 * (2x2 windows). The max-pool gets relu_in; the caller runs it on the
 * relu's input and skips the relu, forward and backward. A gate's first
 * layer is never skipped (its input gradient is the gate's). */
void akk_layers_fuse(struct akk_layer *layers, int n);

/* The pair akk_layers_fuse also marks: a dense or conv2d layer directly
 * followed by an activation (relu, leaky_relu with alpha >= 0, sigmoid,
 * tanh, softplus) that no max-pool takes with relu_in. The dense/conv gets
 * act_out; the caller runs it with y = the activation's output buffer,
 * skips the activation forward and backward, and lends act_dy. The result
 * is the two layers' to the bit: the activation's own kernels run, in
 * place over the fresh output (forward) and into act_dy (backward). */
int akk_layer_is_activation(const struct akk_layer_ops *ops);
/* Forward: y (B x act->in) = act(y) in place. */
void akk_act_fused_forward(const struct akk_layer *act, float *y, int B,
			   int train);
/* Backward: dz (B x act->in) = dy act'(.), from the activation's output
 * y; returns dz. leaky_relu reads the sign of its input from y's (equal
 * for alpha >= 0: the only slopes akk_layers_fuse fuses). When db is not
 * NULL and the activation is relu, the same pass adds the column sums of
 * dz over the rows of dout (B, or B T on a sequence) into db (a dense layer's bias gradient, in
 * the order its own loop adds them); returns 1 in *db_done then. */
const float *akk_act_fused_backward(const struct akk_layer *act, float *dz,
				    const float *dy, const float *y, int B,
				    float *db, int dout, int *db_done);

/* Initialise n weights with fan-in/fan-out, by kind (never DEFAULT). */
void akk_init_fill(float *w, size_t n, int fan_in, int fan_out,
		   enum akk_init kind, float value, struct akk_rng *rng);
/* A product layer's parameters as sp asks: nw weights of sp->init
 * (default lecun_uniform) with the given fans, then, with sp->bias, nb
 * biases: lecun_uniform over the same fans by default (as torch's Linear
 * and Conv2d), zero under an explicit init. */
void akk_init_weights_bias(float *p, size_t nw, size_t nb, int fan_in,
			   int fan_out, const struct akk_layer_spec *sp,
			   struct akk_rng *rng);

/* The kinds, one file each (core/nn/layer_<name>.c), for the code that names
 * one; a new kind needs only its line in layer.c's table. */
extern const struct akk_layer_ops akk_layer_dense, akk_layer_conv2d,
	akk_layer_maxpool2d, akk_layer_avgpool2d, akk_layer_flatten,
	akk_layer_dropout, akk_layer_batchnorm, akk_layer_relu,
	akk_layer_leaky_relu, akk_layer_sigmoid, akk_layer_tanh,
	akk_layer_softplus, akk_layer_residual, akk_layer_global_avgpool,
	akk_layer_conv_transpose2d, akk_layer_upsample2d, akk_layer_embedding,
	akk_layer_conv1d, akk_layer_maxpool1d, akk_layer_avgpool1d,
	akk_layer_global_maxpool1d, akk_layer_global_avgpool1d, akk_layer_lstm,
	akk_layer_gru, akk_layer_rnn, akk_layer_graph, akk_layer_reshape;

#endif
