/* balance.h - network.gates: {auto: N}: one flat list of layers split into
 * N contiguous gates so that the slowest gate is as fast as it can be.
 *
 * A layer's cost is its measured forward, backward and optimizer time
 * (model/profile.h) or, without profiling, its training FLOPs. The split
 * is exact (akk_balance_split), runs before any thread starts, and is
 * recorded in the spec as the override network.gates.split=[n1, ...], so
 * a checkpoint (which stores the config and its overrides) rebuilds the
 * same gates whatever the timings say later. Everything downstream sees
 * ordinary gates. */
#ifndef AKK_BALANCE_H
#define AKK_BALANCE_H

#include "base/err.h"
#include "config/spec.h"

/* Split n costs (each >= 0) into k contiguous non-empty parts (1 <= k <= n)
 * whose largest sum is the least possible: sizes[k] gets each part's
 * length. Returns that largest sum (-1: out of memory). Deterministic:
 * the same costs give the same split. */
double akk_balance_split(const double *cost, int n, int k, int *sizes);

/* The cost of each layer of s's network in order (cost has one entry per
 * layer, all gates together): training FLOPs of a batch when profile is
 * 0, otherwise measured seconds per batch (forward + backward + the
 * optimizer's share). */
int akk_balance_costs(const struct akk_spec *s, int profile, double *cost,
		      struct akk_err *e);

/* For a spec with gates: {auto: N} not yet split: cost the layers, split
 * them (akk_spec_split) and append the override network.gates.split=[...]
 * to s->sets. Nothing to split for other specs. When cost is not NULL
 * (one entry per layer), it gets the costs the split was made from (for a
 * split already recorded: the costs now). */
int akk_balance(struct akk_spec *s, int profile, double *cost,
		struct akk_err *e);

/* Split s's flat list into gates of sizes[i] layers (akk_spec_split) and
 * record the split in s->sets as network.gates.split=[...]. */
int akk_balance_apply(struct akk_spec *s, const int *sizes, struct akk_err *e);

/* Layers of s's network, all gates together. */
int akk_spec_nlayers(const struct akk_spec *s);

#endif
