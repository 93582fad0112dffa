/* spec_heads.h - network.outputs in the config (spec_heads.c): the
 * handler spec.c's network table names, and the checks of the heads
 * against the rest of the config. */
#ifndef AKK_SPEC_HEADS_H
#define AKK_SPEC_HEADS_H

#include <yaml.h>

#include "config/data_spec.h"
#include "config/heads_spec.h"
#include "config/yaml_keys.h"

/* network.outputs: a list of heads, {name, size, loss, weight, target,
 * delta} each, into the array of struct akk_head_spec at k->off of the
 * section's object, their count into the int at k->set_off - 1 and the
 * list's place into the struct akk_mark at k->mark_off - 1. */
int akk_spec_h_outputs(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key, yaml_node_t *val);

/* The heads against the rest of the config: not with network.loss,
 * unique names, sizes given when there are several, each target available
 * from the data (labels: classification; targets: data.task regression;
 * input: any data without augmentation, size the input's) and a loss that
 * fits it (targets and input: mse, mae or huber). Fills in the default
 * targets. The sizes against the network's output: model/heads.h. */
int akk_spec_check_heads(struct akk_head_spec *heads, int n, const struct akk_data_spec *d,
			 struct akk_shape input, struct akk_mark loss_mark, const char *file,
			 struct akk_err *e);

/* Free the heads' names; *n becomes 0. */
void akk_spec_heads_release(struct akk_head_spec *heads, int *n);

#endif
