/* inputs_spec.h - network.inputs: the flat sample read as consecutive
 * named slices, each with a shape of its own, that gates name in their
 * `from:`. The data path stays one array per sample: network.input
 * becomes [the sum of the inputs' sizes], and a gate reading an input
 * takes its slice of each sample (model/flow.h). A config without
 * network.inputs has none (ninputs 0): network.input means what it
 * always meant. */
#ifndef AKK_INPUTS_SPEC_H
#define AKK_INPUTS_SPEC_H

#include "nn/layer.h"

/* The most named inputs a network may have, and the bytes of a name, its
 * NUL included. */
#define AKK_MAX_INPUTS 16
#define AKK_INPUT_NAME 32

struct akk_input_spec {
	char name[AKK_INPUT_NAME];	/* unique among inputs and gates */
	struct akk_shape shape;		/* what the gates reading it see */
	long off, n;			/* its slice of the flat sample:
					 * floats [off, off + n) */
	struct akk_mark mark;		/* its mapping */
};

/* A gate's `from` entry that names input i (gate_spec.from): the network
 * input is AKK_GATE_INPUT (-1), input i is -1 - i; and back. */
static inline int akk_input_source(int i)
{
	return -1 - i;
}

static inline int akk_source_input(int from)
{
	return -1 - from;
}

#endif
