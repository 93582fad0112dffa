/* spec_gates.h - gates as a graph, read from the config (internal to
 * config/: spec.c's gate key table uses these handlers).
 *
 * A gate may have a `name`, read `from` one earlier gate or a list of
 * them (`input`, the network input, for the first gate), and say how a
 * list `join`s (concat on the first dimension: channels or features; or
 * add). Without `from` a gate reads the gate before it, as a chain does.
 * Once every gate is read, akk_spec_gates_link fills each gate's sources
 * and checks the edges: the join, and that every gate but the last (the
 * network's output) is read by some gate. */
#ifndef AKK_SPEC_GATES_H
#define AKK_SPEC_GATES_H

#include <yaml.h>

#include "config/yaml_keys.h"

int akk_spec_h_gate_name(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val);
int akk_spec_h_gate_from(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val);
int akk_spec_h_gate_join(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val);
/* After the gates are read: the default sources, the joins, the gates
 * nobody reads, at their FILE:LINE:COL. */
int akk_spec_gates_link(struct akk_yaml_ctx *c, struct akk_spec *s);

#endif
