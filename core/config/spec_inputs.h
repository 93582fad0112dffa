/* spec_inputs.h - network.inputs in the config (spec_inputs.c): the
 * handler spec.c's network table names, the names a gate's `from` may
 * give, and the checks of the inputs against the gates. The struct is in
 * inputs_spec.h. */
#ifndef AKK_SPEC_INPUTS_H
#define AKK_SPEC_INPUTS_H

#include <yaml.h>

#include "config/spec.h"
#include "config/yaml_keys.h"

/* network.inputs: a list of {name, shape}, into s->inputs; network.input
 * becomes their sizes' sum. Fails when network.input is also given (the
 * network table reads input first). */
int akk_spec_h_inputs(struct akk_yaml_ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key, yaml_node_t *val);

/* The index of the input called name, or -1. */
int akk_spec_input_index(const struct akk_spec *s, const char *name);

/* A gate's `from` entry val with network.inputs given: 0 with *out the
 * input's source (akk_input_source) when val names an input, -1 with the
 * error reported for `input` (which then names none of them), 1 when it
 * names no input (a gate, then). */
int akk_spec_from_input(struct akk_yaml_ctx *c, yaml_node_t *val, int *out);

/* Once the gates are read: network.input or network.inputs was given
 * (not both: the handler said so), and every input is read by some gate.
 * Returns 0, or -1 with e at the place. */
int akk_spec_check_inputs(const struct akk_spec *s, const char *file, struct akk_err *e);

/* With network.inputs, a sample of n values (what: "train", ...) must
 * have their sizes' sum: else -1 with e at the inputs' place, naming each
 * input's size. 0 without inputs (network.input's own check applies). */
int akk_spec_inputs_fit(const struct akk_spec *s, size_t n, const char *what,
			struct akk_err *e);

/* "input 'person'" for input i of s, "network.input" without inputs. */
void akk_spec_input_label(const struct akk_spec *s, int i, char *buf, size_t n);

#endif
