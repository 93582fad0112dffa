/* spec_inputs.h - network.inputs in the config (spec_inputs.c): the
 * list's reader that spec.c's network handler calls, the names a gate's
 * `from` may give, and the check that the network has an input. The
 * struct is in inputs_spec.h; the checks against the gates and the data
 * are the model's (model/model.h). */
#ifndef AKK_SPEC_INPUTS_H
#define AKK_SPEC_INPUTS_H

#include <yaml.h>

#include "config/inputs_spec.h"
#include "config/yaml_keys.h"

/* network.inputs' value val: a list of {name, shape} into in (room for
 * AKK_MAX_INPUTS), their count into *n, and the flat sample [the sum of
 * their sizes] into *flat. Reports at the node and returns -1 on an
 * error. */
int akk_spec_read_inputs(struct akk_yaml_ctx *c, yaml_node_t *val, struct akk_input_spec *in,
			 int *n, struct akk_shape *flat);

/* The index of the input called name of in[0..n), or -1. */
int akk_spec_input_index(const struct akk_input_spec *in, int n, const char *name);

/* A gate's `from` entry val, with the network's inputs in[0..n): 0 with
 * *out the input's source (akk_input_source) when val names one; -1 with
 * the error reported for `input`, which names none of them when n > 0;
 * 1 when it names no input (a gate, then, or `input` without inputs). */
int akk_spec_from_input(struct akk_yaml_ctx *c, const struct akk_input_spec *in, int n,
			yaml_node_t *val, int *out);

/* network.input or network.inputs was given: input (the flat shape) has
 * a rank; else -1 with e at the network mapping's place. */
int akk_spec_inputs_given(struct akk_shape input, struct akk_mark network, const char *file,
			  struct akk_err *e);

#endif
