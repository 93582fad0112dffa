/* layer_graph.h - a graph inside a layer: named nodes, each a layer or a
 * join, reading the graph's input or other nodes' outputs.
 *
 * The spec parser (config/spec_graph.c) fills struct akk_graph_spec and
 * checks the names and the edges (unknown, duplicate, cycles, unused);
 * layer_graph.c plans the nodes in the topological order found there,
 * checks the shapes at the joins, and runs them. A node's layer options
 * are the layer spec's inner[i] (ninner = nnodes; a join's entry has ops
 * NULL), so the spec's release frees nested blocks as for residual. */
#ifndef AKK_LAYER_GRAPH_H
#define AKK_LAYER_GRAPH_H

#include "nn/layer.h"

/* What a node computes. The joins act on the channel axis: the channels
 * of an image [C, H, W], the features of a vector [F] or of each step of
 * a sequence [T, F]. */
enum akk_graph_op {
	AKK_GRAPH_LAYER,	/* an ordinary layer (inner[i]), one input */
	AKK_GRAPH_ADD,		/* the sum of two or more inputs of one shape */
	AKK_GRAPH_CONCAT,	/* two or more inputs side by side on channels */
	AKK_GRAPH_SLICE,	/* channels [start, end) of one input */
};

#define AKK_GRAPH_INPUT (-1)	/* a node's input that is the graph's input */
#define AKK_GRAPH_MAX_NODES 1024
#define AKK_GRAPH_MAX_NAME 64	/* bytes of a node's name, with its NUL */
#define AKK_GRAPH_MAX_JOIN 16	/* inputs of an add or a concat */

struct akk_graph_node {
	char name[AKK_GRAPH_MAX_NAME];	/* "" when unnamed */
	enum akk_graph_op op;
	struct akk_mark mark;	/* the node's entry in the config */
	int *from;		/* (nfrom) the nodes read, as indices into
				 * nodes[], or AKK_GRAPH_INPUT; owned */
	struct akk_mark *from_mark;	/* (nfrom) where each is named; the
				 * node's mark when read by default; owned */
	int nfrom;
	int start, end;		/* slice: channels [start, end) */
};

struct akk_graph_spec {
	struct akk_graph_node *nodes;	/* (nnodes) as written; owned */
	int nnodes;
	int *order;		/* (nnodes) the nodes in topological order:
				 * written order where the edges allow */
	int output;		/* the node whose output is the graph's */
	struct akk_mark output_mark;	/* 'output:' (0: the last node) */
};

void akk_graph_spec_free(struct akk_graph_spec *g);

/* What node i of a graph layer spec is, as a config names it: its layer
 * kind, or "add", "concat", "slice". */
const char *akk_graph_node_kind(const struct akk_layer_spec *sp, int i);
/* Node i as messages and tables name it: 'a', or "node 3 (relu)" when it
 * has no name; into buf. */
const char *akk_graph_node_label(const struct akk_layer_spec *sp, int i,
				 char *buf, size_t size);

#endif
