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

/* akk_balance_split, and by[j] (j = 1..k; by[0] unused) the least
 * largest sum of the costs split into j parts; by may be NULL. */
double akk_balance_split_all(const double *cost, int n, int k, int *sizes,
			     double *by);

/* A graph layer of the parallel form (config/spec.h,
 * akk_spec_graph_branches) may unfold: its branches then run on gates of
 * their own, after the gate before it, and the gate after it joins them.
 * One unit of the flat list, as the partition sees it: */
struct akk_balance_unit {
	double cost;			/* the unit whole, on one gate */
	int nbranch;			/* 0: stays whole; else its branches */
	double branch[AKK_MAX_JOIN];	/* each branch on a gate of its own */
};

/* What b branches cost on b gates of their own on a machine of cores
 * cores: the slowest branch, or their sum shared out over the cores when
 * there are fewer cores than branches, whichever is larger. On one core
 * that is the sum, the graph's cost whole: it never unfolds there. */
double akk_balance_fork_cost(const double *branch, int nbranch, int cores);

/* The partition of n units into exactly k gates whose largest cost (a
 * gate's sum; a graph unfolded, akk_balance_fork_cost) is the least
 * possible, and of those the one that unfolds the fewest graphs. A graph
 * unfolds only with a unit after it (its join gate's), and two graphs
 * next to each other do not both unfold. unfold (n entries) gets 1 for
 * each unit that unfolds; sizes (room for k) the units of the other gates in
 * order, each run between unfolded graphs split by akk_balance_split;
 * *nsizes their count. Without graphs that may unfold it is exactly
 * akk_balance_split. Returns the largest cost; -1: out of memory; -2: no
 * partition makes exactly k gates. */
double akk_balance_partition(const struct akk_balance_unit *u, int n, int k,
			     int cores, int *sizes, int *nsizes,
			     unsigned char *unfold);

/* The cost of each layer of s's network in order (cost has one entry per
 * layer, all gates together): training FLOPs of a batch when profile is
 * 0, otherwise measured seconds per batch (forward + backward + the
 * optimizer's share). */
int akk_balance_costs(const struct akk_spec *s, int profile, double *cost,
		      struct akk_err *e);

/* For a spec with gates: {auto: N} not yet split: cost the layers (and
 * the nodes of the graph layers that may unfold), partition them
 * (akk_balance_partition, for this machine's cores) and append the
 * overrides network.gates.split=[...] and, when graphs unfold,
 * network.gates.unfold=[...] to s->sets. Nothing to split for other
 * specs. When cost is not NULL (room for akk_balance_max_layers), it
 * gets the cost of each layer of the gates made, in order (for a split
 * already recorded: the costs now). */
int akk_balance(struct akk_spec *s, int profile, double *cost,
		struct akk_err *e);
/* akk_balance for a machine of cores cores. */
int akk_balance_cores(struct akk_spec *s, int profile, int cores, double *cost,
		      struct akk_err *e);

/* The most layers the gates akk_balance makes of s hold, all together:
 * the layers of s, and the nodes of each graph layer that may unfold. */
int akk_balance_max_layers(const struct akk_spec *s);

/* akk_balance_apply with the graph layers at unfold (nunfold, positions
 * in network.layers) unfolded (akk_spec_unfold), sizes (nsizes) the
 * layers of the other gates; records network.gates.unfold=[...] too. */
int akk_balance_apply_unfold(struct akk_spec *s, const int *sizes, int nsizes,
			     const int *unfold, int nunfold, struct akk_err *e);

/* Split s's flat list into gates of sizes[i] layers (akk_spec_split) and
 * record the split in s->sets as network.gates.split=[...]. */
int akk_balance_apply(struct akk_spec *s, const int *sizes, struct akk_err *e);

/* Layers of s's network, all gates together. */
int akk_spec_nlayers(const struct akk_spec *s);

#endif
