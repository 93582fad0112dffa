/* heads_spec.h - network.outputs: the network's one output tensor read as
 * consecutive named slices (heads), each with its own loss, weight and
 * target. The total loss is the sum of weight * the head's mean loss, and
 * each head's gradient is scaled by its weight (model/heads.h). A config
 * without network.outputs has no heads (nheads 0): network.loss alone
 * means what it always meant. */
#ifndef AKK_HEADS_SPEC_H
#define AKK_HEADS_SPEC_H

#include "nn/layer.h"
#include "nn/loss.h"

/* The most heads a network may have. */
#define AKK_MAX_HEADS 16

/* What a head's outputs are compared with. */
enum akk_head_target {
	AKK_TARGET_LABELS,	/* the data's class labels (classification) */
	AKK_TARGET_TARGETS,	/* the data's float targets (task regression) */
	AKK_TARGET_INPUT,	/* the flattened network input after
				 * data.scale, before normalize */
};

struct akk_head_spec {
	char *name;			/* owned; unique */
	int size;			/* outputs of the slice; 0: not given
					 * (a single head: the whole output) */
	enum akk_loss_kind loss;
	float weight;			/* > 0, finite; default 1 */
	float huber_delta;		/* default 1 */
	int target;			/* enum akk_head_target */
	int target_set;			/* target: was written */
	struct akk_mark mark;		/* the head's mapping */
	struct akk_mark size_mark, target_mark, loss_mark;
};

/* The names of enum akk_head_target, as written in the config. */
extern const char *const akk_head_target_names[];

#endif
