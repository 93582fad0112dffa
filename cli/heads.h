/* heads.h - printing a network's several outputs (network.outputs). */
#ifndef CLI_HEADS_H
#define CLI_HEADS_H

#include <stdio.h>

#include "config/spec.h"

/* The heads as a table, one row each: name, slice of the output, size,
 * loss, weight and target; nothing without heads. outputs: the
 * network's output size per sample. */
void cli_print_heads(FILE *f, const struct akk_spec *s, int outputs);

#endif
