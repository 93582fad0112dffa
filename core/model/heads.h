/* heads.h - a network's several outputs (config/heads_spec.h): the one
 * output tensor read as consecutive slices, head i at offset
 * akk_head_offset, each with its loss against its target. The total loss
 * is sum_i w_i L_i and the gradient of head i's slice is w_i dL_i/dz, so
 * a single head of weight 1 over the whole output gives exactly the
 * bits of the plain loss. */
#ifndef AKK_HEADS_H
#define AKK_HEADS_H

#include <stdint.h>

#include "base/err.h"
#include "config/spec.h"
#include "data/head_targets.h"
#include "nn/loss.h"

/* One head's running sums over an epoch or an evaluation. */
struct akk_head_sums {
	double loss;			/* sum over samples of the batch means * B */
	long samples;
	long correct;			/* a head compared with labels */
	struct akk_reg_sums reg;	/* a head compared with float targets */
};

/* Head i's size and offset in an output of `outputs` values per sample. */
int akk_head_size(const struct akk_spec *s, int i, int outputs);
int akk_head_offset(const struct akk_spec *s, int i, int outputs);

/* The heads against the planned output: a flat output (steps 1) whose
 * size is the sum of theirs (a single head without size: all of it).
 * Fills map with the slots of the heads compared with float targets;
 * -1 with e at network.outputs otherwise. */
int akk_heads_plan(const struct akk_spec *s, int steps, int outputs,
		   struct akk_target_map *map, struct akk_err *e);

/* The first head compared with labels (the model's accuracy and
 * confusion), and the first compared with float targets (its RMSE and
 * R^2); -1 when none. */
int akk_heads_first(const struct akk_spec *s, int labels);

/* The total loss of B samples: out (B x outputs) against labels (B) and
 * the targets rows (B x outputs, laid out by the map), each head's
 * weighted gradient into its slice of dout unless NULL. correct and rs
 * (either may be NULL) get the first labels head's and first float
 * head's counts; hs (nheads of them, may be NULL) each head's sums. */
double akk_heads_loss(const struct akk_spec *s, int outputs, float *dout,
		      const float *out, const int32_t *labels, const float *targets,
		      int B, long *correct, struct akk_reg_sums *rs,
		      struct akk_head_sums *hs);

/* The width the data's targets are checked against: without heads the
 * network's outputs; with heads, the size of the first head compared
 * with `target` that cannot take n of them (n targets per sample, or
 * labels up to n - 1), or n when every such head can. */
int akk_heads_width(const struct akk_spec *s, int outputs, int target, int n);

/* The metrics.csv columns of the heads, two per head: ",NAME_loss,NAME_acc"
 * for a head compared with labels, ",NAME_loss,NAME_rmse" for the others;
 * "" without heads. Cut short to fit size. */
void akk_heads_columns(const struct akk_spec *s, char *buf, size_t size);
/* Their values from each head's sums: v[2i] the mean loss (unweighted),
 * v[2i + 1] the accuracy (a share) or the RMSE; 0 for no samples. */
void akk_heads_values(const struct akk_spec *s, const struct akk_head_sums *hs,
		      double *v);

/* What predict, libakk and the export turn head i's outputs into. */
enum akk_output_kind akk_head_output(const struct akk_spec *s, int i);
/* One row of outputs turned into p, each head's slice as its kind says
 * (p may be z). */
void akk_heads_output_row(const struct akk_spec *s, float *p, const float *z,
			  int outputs);

#endif
