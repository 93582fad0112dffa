/* head_targets.h - the targets row of a sample for a network with several
 * heads (config/heads_spec.h): one row as wide as the network's output,
 * each head's target at its own slice, so that the loss reads every head
 * at the same offset in outputs and targets. A slice holds the data's
 * float targets (y) or the sample's input after data.scale (before
 * normalize); a head compared with class labels reads the batch's labels
 * and leaves its slice unused. */
#ifndef AKK_HEAD_TARGETS_H
#define AKK_HEAD_TARGETS_H

#include "config/spec.h"
#include "data/dataset.h"

enum { AKK_SLOT_Y, AKK_SLOT_INPUT };

struct akk_target_map {
	int stride;			/* floats per row: the network's outputs */
	int n;				/* slots */
	struct {
		int off, size;		/* the slice [off, off + size) of a row */
		int from;		/* AKK_SLOT_Y or AKK_SLOT_INPUT */
	} slot[AKK_MAX_HEADS];
	const struct akk_data_spec *ds;	/* for data.scale; not owned */
};

/* Sample s of d into row (stride floats): each slot from d's y or d's
 * input divided by data.scale for d's value type. */
void akk_target_map_fill(const struct akk_target_map *map, float *row,
			 const struct akk_dataset *d, size_t s);

#endif
