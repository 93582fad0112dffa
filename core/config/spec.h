/* spec.h - the training spec: a YAML config parsed into typed structs.
 *
 * akk_spec_load reads the file with libyaml's document API, applies
 * --set KEY=VALUE overrides to the document, then walks it with one key
 * table per section. Everything is checked before anything runs: syntax,
 * unknown keys (with the nearest valid key suggested), duplicate keys, wrong
 * types, out-of-range values and missing required keys are all reported at
 * FILE:LINE:COL. Before libyaml builds a document, the text's size, its
 * nesting and its tags are checked on the parser's events (the limits
 * below). Shapes are checked later by akk_model_plan, using the marks kept
 * here. man/akkctl.5 documents every key, default and limit. */
#ifndef AKK_SPEC_H
#define AKK_SPEC_H

#include <stdint.h>

#include "base/err.h"
#include "nn/layer.h"
#include "nn/loss.h"
#include "nn/monitor.h"
#include "nn/optim.h"
#include "config/data_spec.h"
#include "config/heads_spec.h"
#include "config/inputs_spec.h"

/* The most gates a network may have: the spec checks it at the config's
 * line, and the checkpoint writer and reader hold the same bound. */
#define AKK_MAX_GATES 256

/* The largest config (and --set value) read, in bytes, and the deepest
 * nesting of lists and mappings in it: both checked before libyaml builds
 * a document, at FILE:LINE:COL (man/akkctl.5, LIMITS). */
#define AKK_SPEC_MAX_BYTES (1 << 20)
#define AKK_SPEC_MAX_DEPTH 64
/* The most layers in a network, all gates together. */
#define AKK_MAX_LAYERS 65536

enum akk_mode { AKK_MODE_FLIPFLOP, AKK_MODE_WHEELS, AKK_MODE_PIPELINE };
/* schedule.order: the training samples' order in an epoch (data/batch.h). */
enum akk_order { AKK_ORDER_SHUFFLE, AKK_ORDER_STREAMS };

/* Gates as a graph: a gate reads the gate before it, or the gates its
 * `from:` names (earlier gates only, so the config's order is a
 * topological one), joined by `join:` when it reads several. */
#define AKK_GATE_NAME 32	/* bytes of a gate's name, its NUL included */
#define AKK_MAX_JOIN 8		/* the most gates one gate reads, and the
				 * most gates that read one gate */
#define AKK_GATE_INPUT (-1)	/* a source that is the network input (its
				 * first named input; input i: -1 - i,
				 * config/inputs_spec.h) */
enum akk_join { AKK_JOIN_NONE, AKK_JOIN_CONCAT, AKK_JOIN_ADD };

/* "concat", "add" ("none" for AKK_JOIN_NONE). */
const char *akk_join_name(int join);

struct akk_gate_spec {
	struct akk_layer_spec *layers;	/* nlayers, owned by the spec */
	int nlayers;
	int has_optim;			/* 1: optim overrides the global one */
	struct akk_optim_spec optim;	/* the global optimizer with this
					 * gate's keys applied on top */
	int rank;			/* MPI rank it runs on; -1: not given */
	struct akk_mark mark;
	char name[AKK_GATE_NAME];	/* "" when it has none */
	/* What it reads, in order: earlier gates' indices, or
	 * AKK_GATE_INPUT (the network input). Filled for every gate once
	 * the gates are read: without `from`, the gate before it. */
	int nfrom;
	int from[AKK_MAX_JOIN];
	int has_from;			/* `from` was written */
	struct akk_mark from_mark;	/* its value */
	enum akk_join join;		/* AKK_JOIN_NONE unless nfrom > 1 */
	struct akk_mark join_mark;
};

/* Where gates run under MPI (mpirun): explicit puts each gate on its
 * `rank:` (rank 0 when it has none); contiguous splits the gates in order
 * over all ranks. Rank 0 always hosts the sentinel and data providers. */
enum akk_placement { AKK_PLACE_EXPLICIT, AKK_PLACE_CONTIGUOUS };

struct akk_schedule_spec {
	enum akk_mode mode;		/* default wheels */
	int epochs;			/* default 10 */
	int batch_size;			/* default 64 */
	int conc_train;			/* concurrency.train, default 4 (wheels) */
	int conc_val;			/* concurrency.validation, default 1 */
	int stashing;			/* weight_stashing, default 1 */
	int micro_batches;		/* pipeline: micro-batches per batch, default 4 */
	int accumulate;			/* batches per optimizer step (flip-flop,
					 * pipeline), default 1 */
	int threads;			/* BLAS threads; 0 = automatic */
	float max_loss;			/* divergence guard: stop when a training
					 * batch's loss exceeds it; 0 = off */
	int data_parallel;		/* parallel: data (under mpirun: one whole
					 * pipeline per rank, gradients averaged);
					 * default pipeline */
	int lr_scaling;			/* lr_scaling: 0 none (default), 1 linear
					 * (akk_spec_scale_lr) */
	struct akk_early_stop_spec early;	/* early_stopping (needs
					 * validation data) */
	enum akk_order order;		/* order: shuffle (default), streams */
	struct akk_mark order_mark;
	struct akk_mark mark;
};

struct akk_output_spec {
	char *dir;			/* resolved like data paths; default "runs/<name>" */
	int checkpoint_every;		/* epochs; 0 = only the last; default 1 */
	int keep;			/* newest epoch checkpoints kept; default 3 */
	char *metrics;			/* file name inside dir; default "metrics.csv" */
	int log_every_steps;		/* N: a row of steps.csv every N
					 * optimizer steps (io/steps.h); 0
					 * (default): none */
	int best_by;			/* enum akk_best_by: what best.bin is best
					 * by; default accuracy for classification,
					 * loss for regression */
};

/* A path the config names (a data file or folder, output.dir): where it
 * is held (a field of the spec, resolved against the config's directory),
 * its text as written and its place in the file. */
struct akk_path_ref {
	char **at;			/* points into the spec: do not free */
	char *given;			/* owned */
	struct akk_mark mark;
	int set;			/* from the override sets[set]; -1: the file */
};

struct akk_spec {
	char *path;			/* the config file as given */
	char *text;			/* its full text, NUL-terminated */
	char *name;			/* default: the file's base name */
	uint64_t seed;			/* default 42 */
	struct akk_data_spec data;
	struct akk_shape input;		/* network.input; with inputs, [their
					 * sizes' sum] */
	struct akk_mark input_mark;
	/* network.inputs (config/inputs_spec.h): ninputs 0 when not given */
	struct akk_input_spec inputs[AKK_MAX_INPUTS];
	int ninputs;
	struct akk_mark inputs_mark;
	struct akk_mark network_mark;	/* the network mapping */
	struct akk_gate_spec *gates;	/* ngates >= 1, owned */
	int ngates;		/* 1..AKK_MAX_GATES */
	enum akk_loss_kind loss;	/* default softmax_cross_entropy */
	float huber_delta;		/* default 1 */
	struct akk_mark loss_mark;
	/* network.outputs (config/heads_spec.h): nheads 0 when not given */
	struct akk_head_spec heads[AKK_MAX_HEADS];
	int nheads;
	struct akk_mark heads_mark;
	enum akk_placement placement;	/* network.placement, default explicit */
	/* network.gates: {auto: N} with one flat network.layers list: the
	 * list is split into N contiguous gates (model/balance.h). Until then
	 * gates holds one gate with every layer; with split: [n1, ...] (layers
	 * per gate, as balance records it) the parser splits it itself. */
	int auto_gates;			/* N; 0: the gates are written out */
	int *auto_split;		/* (auto_nsplit) layers per gate of the
					 * chain, owned; NULL until split */
	int auto_nsplit;		/* auto_gates, less the gates of the
					 * graph layers that unfold */
	/* split: [...] with unfold: [i, ...] (config/spec_unfold.c): the
	 * graph layers of network.layers (0-based, ascending) whose branches
	 * run on gates of their own; split then counts the other gates. */
	int *auto_unfold;		/* (auto_nunfold), owned; NULL: none */
	int auto_nunfold;
	struct akk_mark auto_mark;	/* the gates: value */
	struct akk_optim_spec optim;	/* the global optimizer (required) */
	struct akk_schedule_spec sched;
	struct akk_output_spec out;
	/* The --set overrides applied, "KEY=VALUE" each, owned; kept so a
	 * checkpoint can store exactly what was run. */
	char **sets;
	int nsets;
	/* every path key, in file order (owned); at points into this
	 * struct, which therefore is never copied by value */
	struct akk_path_ref *paths;
	int npaths;
};

/* Parse and check the config file at path, with overrides "KEY=VALUE"
 * (dotted keys; list items by index: network.gates.0.layers.1.dense=64).
 * On error fills e (with file:line:col) and returns -1; s is then released. */
int akk_spec_load(struct akk_spec *s, const char *path,
		  const char *const *sets, int nsets, struct akk_err *e);
/* The same from text in memory; name is used in error reports and base_dir
 * for relative paths. */
int akk_spec_parse(struct akk_spec *s, const char *text, size_t len,
		   const char *name, const char *base_dir,
		   const char *const *sets, int nsets, struct akk_err *e);
void akk_spec_release(struct akk_spec *s);

/* The data search (README, "Where data are found"). A relative data path
 * that names no file against the config's directory is looked for under
 * each of roots in turn (n of them; NULL entries skipped) as ROOT/REST,
 * REST being the path as written without its leading ./ and ../: the
 * first file found replaces it. Paths that name a file, and absolute ones,
 * are kept. Returns 0; -1 only when out of memory. */
int akk_spec_find_data(struct akk_spec *s, const char *const *roots, int n,
		       struct akk_err *e);
/* output.dir, when the config gives it relative, taken from the working
 * directory as written without its leading ./ and ../ (runs/x for
 * ../runs/x): for a config installed away from the user's files. */
int akk_spec_out_dir_here(struct akk_spec *s, struct akk_err *e);
/* Every data path names a file or folder: else an error at the path's
 * FILE:LINE:COL naming it as written and as resolved. */
int akk_spec_check_data(const struct akk_spec *s, struct akk_err *e);

const char *akk_mode_name(enum akk_mode m);

/* Split the one gate of a network.gates: {auto: N} spec into s->auto_gates
 * gates of sizes[i] layers each (every size >= 1, summing to the layer
 * count), each with the global optimizer, and keep the sizes in
 * s->auto_split. Fails on sizes that do not fit. */
int akk_spec_split(struct akk_spec *s, const int *sizes, struct akk_err *e);

/* The branches of a graph layer of the parallel form: every node but one
 * is a layer reading one node, the chains of them start at the graph's
 * input and meet only at the graph's output, one concat or add node
 * reading each chain's end. Returns the number of branches (2 to
 * AKK_MAX_JOIN), 0 for a layer of another form or kind. With nodes and
 * len not NULL: branch i is len[i] nodes (indices into l->inner), listed
 * in nodes from the branch's start, the branches in the join's order one
 * after another; *op gets the join (AKK_JOIN_CONCAT or AKK_JOIN_ADD). */
int akk_spec_graph_branches(const struct akk_layer_spec *l, int *nodes,
			    int *len, enum akk_join *op);

/* Split the one gate of a gates: {auto: N} spec as akk_spec_split does,
 * but with the graph layers at unfold[0..nunfold) (positions in
 * network.layers, ascending) placed on gates of their own: one gate per
 * branch, reading the gate before (or the network input), and the next
 * gate (which holds the layers after the graph, one or more) joins them
 * with the graph's join. sizes (nsizes) are the layers of the other
 * gates in order. Keeps sizes and unfold in s (auto_split, auto_unfold).
 * Fails, leaving s as it was, on a plan that does not fit. */
int akk_spec_unfold(struct akk_spec *s, const int *sizes, int nsizes,
		    const int *unfold, int nunfold, struct akk_err *e);

/* The most gates gates: {auto: N} can make of s's flat list: a gate per
 * layer, and the branches of each graph layer of the parallel form that
 * has a layer after it on gates of their own. */
int akk_spec_max_gates(const struct akk_spec *s);

/* Whether the run watches validation metrics between epochs (early
 * stopping, or the plateau lr schedule): its checkpoints then store the
 * watch (struct akk_watch). */
int akk_spec_watches(const struct akk_spec *s);

/* With schedule.lr_scaling: linear, scale every optimizer's lr by the
 * replicas of data parallelism (nn/optim.h: lr_scale); else nothing. */
void akk_spec_scale_lr(struct akk_spec *s, int replicas);

/* The rank of every gate for a world of nranks processes (gate_rank has
 * ngates entries). Fails, at the gate's line, when a gate is placed on a
 * rank that does not exist. */
int akk_spec_place(const struct akk_spec *s, int nranks, int *gate_rank,
		   struct akk_err *e);

/* The keys of s that contradict each other across sections (spec.c's
 * parse calls it once every section is read; spec_checks.c): data.task
 * against the loss, per-channel lists and the pixel map against
 * network.input, early stopping and plateau without validation data,
 * augmentation of a table, the pipeline's and accumulation's limits, gate
 * ranks under data parallelism. Fills the defaults that depend on other
 * sections (best_by, the image shape). file names the config in reports.
 * Returns 0, or -1 with e set at the key's place. */
int akk_spec_check_sections(struct akk_spec *s, const char *file, struct akk_err *e);

#endif
