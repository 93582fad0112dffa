/* spec_heads.h - network.outputs in the config (spec_heads.c): the
 * handler spec.c's network table names, and the checks of the heads
 * against the rest of the config. */
#ifndef AKK_SPEC_HEADS_H
#define AKK_SPEC_HEADS_H

#include <yaml.h>

#include "config/yaml_keys.h"

/* network.outputs: a list of heads, {name, size, loss, weight, target,
 * delta} each. */
int akk_spec_h_outputs(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key, yaml_node_t *val);

/* The heads against the rest of the config: not with network.loss,
 * unique names, sizes given when there are several, each target available
 * from the data (labels: classification; targets: data.task regression;
 * input: any data without augmentation, size the input's) and a loss that
 * fits it (targets and input: mse, mae or huber). Fills in the default
 * targets. The sizes against the network's output: model/heads.h. */
int akk_spec_check_heads(struct akk_spec *s, const char *file, struct akk_err *e);

void akk_spec_heads_release(struct akk_spec *s);

#endif
