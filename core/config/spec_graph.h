/* spec_graph.h - a graph layer read from the config (internal to
 * config/: spec.c's layer parser hands it the value of a graph key).
 *
 * graph: [NODES] or graph: {nodes: [NODES], output: NAME}. A node is a
 * layer as a gate's list has it (NAME or {KIND: OPTIONS}), with two more
 * keys in its mapping: name (how others read it) and from (the node it
 * reads; default the node before it, or the graph's input, called
 * input, for the first); or a join: {add: [NAMES]}, {concat: [NAMES]},
 * {slice: {start: S, end: E}} (with from). The names are resolved, the
 * nodes sorted in topological order, and unknown and duplicate names,
 * cycles and unused nodes reported at their FILE:LINE:COL. */
#ifndef AKK_SPEC_GRAPH_H
#define AKK_SPEC_GRAPH_H

#include <yaml.h>

#include "config/overrides.h"
#include "nn/layer.h"

/* spec.c's parser of one layer: the kind named by the scalar name, its
 * options opts (NULL: none), written at item. */
typedef int (*akk_spec_layer_fn)(struct akk_yaml_ctx *c, yaml_node_t *item,
				 yaml_node_t *name, yaml_node_t *opts,
				 struct akk_layer_spec *l);

/* The graph whose value is opts (NULL: none given) into l (its ops
 * already akk_layer_graph): l->graph, and l->inner the nodes' layers,
 * each read by layer. The nodes count towards the network's layers, of
 * which room more may come (of max_layers in all); c->nested grows by
 * their number. */
int akk_spec_graph_item(struct akk_yaml_ctx *c, yaml_node_t *item,
			yaml_node_t *opts, struct akk_layer_spec *l,
			akk_spec_layer_fn layer, int room, int max_layers);

#endif
