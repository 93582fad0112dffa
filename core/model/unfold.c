/* unfold.c - gates: {auto: N} over a flat list holding graph layers whose
 * branches may run on gates of their own (balance.h): the partition that
 * decides which graph layers unfold and how the rest of the list splits. */
#include <stdlib.h>
#include <string.h>

#include "model/balance.h"
#include "model/model.h"
#include "model/profile.h"
#include "nn/layer_graph.h"

/* Timed repetitions per graph node when profiling (balance.c's). */
#define AKK_UNFOLD_REPS 5

double akk_balance_fork_cost(const double *branch, int nbranch, int cores)
{
	double sum = 0, top = 0;
	int share = cores < nbranch ? cores : nbranch;

	for (int i = 0; i < nbranch; i++) {
		sum += branch[i];
		if (branch[i] > top)
			top = branch[i];
	}
	if (share < 1)
		share = 1;
	/* b branches on b gates run at once on as many cores as there are:
	 * no sooner than the longest branch, nor than their sum shared out */
	return sum / share > top ? sum / share : top;
}

/* A step of the search: the least largest cost found for a prefix (or,
 * under a limit, the fewest graphs unfolded), and where it came from. */
struct best {
	double cost;		/* < 0: no plan reaches it */
	int nunf;
	int from;		/* the boundary before: 0 the start, u + 1 a graph */
	int parts;		/* gates of the run between the two */
};

/* Without a limit (< 0) the least cost wins; under one, every cost
 * within it is as good and the fewest graphs unfolded win. A least cost
 * with the fewest unfolds needs both passes: the fewest unfolds of a
 * prefix are not the fewest of a whole plan once a later gate sets the
 * largest cost. */
static int better(double c, int nunf, const struct best *b, double limit)
{
	if (b->cost < 0)
		return 1;
	return limit < 0 ? c < b->cost : nunf < b->nunf;
}

/* The least largest part of c[0..n) split into j parts, for j = 1..k, into
 * by[j] (by[0] unused). -1: out of memory. */
static int run_table(const double *c, int n, int k, double *by)
{
	int *sizes = malloc((size_t)k * sizeof(int));
	double r = sizes ? akk_balance_split_all(c, n, k, sizes, by) : -1;

	free(sizes);
	return r < 0 ? -1 : 0;
}

/* The first unit of the run after boundary a (0: the start; i + 1: the
 * i-th graph that may unfold, at pos[i]). */
static int run_start(const int *pos, int a)
{
	return a ? pos[a - 1] + 1 : 0;
}

/* From every cell (a, m0) reached: the run after boundary a split into
 * parts gates (its largest part costing run), then, when boundary to is
 * a graph, its add branch gates costing extra together (-1: to is the
 * end), into cell (to, m0 + parts + add). */
static void relax(struct best *F, int k, int a, int to, int parts, int add,
		  double run, double extra, double limit)
{
	for (int m0 = 0; m0 + parts + add <= k; m0++) {
		const struct best *p = &F[(size_t)a * (k + 1) + m0];
		struct best *q = &F[(size_t)to * (k + 1) + m0 + parts + add];
		double v = p->cost;
		int nunf = p->nunf + (extra >= 0);
		if (v < 0)
			continue;
		if (run > v)
			v = run;
		if (extra > v)
			v = extra;
		if (limit >= 0 && v > limit)
			continue;
		if (better(v, nunf, q, limit))
			*q = (struct best){ v, nunf, a, parts };
	}
}

/* F[b][m] over the boundaries b (0 the start, 1..g the graphs that may
 * unfold, g + 1 the end) and m gates used so far. */
static int search(const struct akk_balance_unit *u, int n, int k, int cores,
		  const double *cost, const int *pos, int g, double limit,
		  struct best *F)
{
	double *by = malloc((size_t)(k + 1) * sizeof(double));

	if (!by)
		return -1;
	for (size_t i = 0; i < (size_t)(g + 2) * (k + 1); i++)
		F[i] = (struct best){ -1, 0, 0, 0 };
	F[0] = (struct best){ 0, 0, 0, 0 };
	for (int b = 1; b <= g + 1; b++) {
		int end = b <= g ? pos[b - 1] : n, add = 0;
		double extra = -1;
		if (b <= g) {
			extra = akk_balance_fork_cost(u[end].branch, u[end].nbranch, cores);
			add = u[end].nbranch;
		}
		for (int a = 0; a < b; a++) {
			int lo = run_start(pos, a), len = end - lo;
			if (len < 0)
				continue;
			/* after a graph that unfolds comes its join gate,
			 * which holds one layer or more */
			if (!len) {
				if (a == 0)
					relax(F, k, a, b, 0, add, 0, extra, limit);
				continue;
			}
			int kmax = len < k ? len : k;
			if (run_table(cost + lo, len, kmax, by)) {
				free(by);
				return -1;
			}
			for (int j = 1; j <= kmax; j++)
				relax(F, k, a, b, j, add, by[j], extra, limit);
		}
	}
	free(by);
	return 0;
}

double akk_balance_partition(const struct akk_balance_unit *u, int n, int k,
			     int cores, int *sizes, int *nsizes,
			     unsigned char *unfold)
{
	double *cost = malloc((size_t)(n ? n : 1) * sizeof(double)), res = -1;
	int *pos = malloc((size_t)(n ? n : 1) * sizeof(int)), g = 0, ns = 0;
	struct best *F = NULL;

	if (!cost || !pos || k < 1)
		goto out;
	for (int i = 0; i < n; i++) {
		cost[i] = u[i].cost;
		/* a graph unfolds only with a layer after it for its join */
		if (u[i].nbranch >= 2 && u[i].nbranch <= AKK_MAX_JOIN && i + 1 < n)
			pos[g++] = i;
	}
	if (!(F = malloc((size_t)(g + 2) * (k + 1) * sizeof(*F))) ||
	    search(u, n, k, cores, cost, pos, g, -1, F))
		goto out;
	res = F[(size_t)(g + 1) * (k + 1) + k].cost;
	if (res < 0) {
		res = -2;
		goto out;
	}
	/* of the plans of that cost, one that unfolds the fewest graphs */
	if (g && search(u, n, k, cores, cost, pos, g, res, F)) {
		res = -1;
		goto out;
	}
	/* walk back: each run split as akk_balance_split splits it */
	memset(unfold, 0, (size_t)n);
	for (int b = g + 1, m = k; b;) {
		const struct best *p = &F[(size_t)b * (k + 1) + m];
		int lo = run_start(pos, p->from), end = b <= g ? pos[b - 1] : n;
		if (p->parts) {
			memmove(sizes + p->parts, sizes, (size_t)ns * sizeof(int));
			if (akk_balance_split(cost + lo, end - lo, p->parts, sizes) < 0) {
				res = -1;
				goto out;
			}
			ns += p->parts;
		}
		if (b <= g) {
			unfold[end] = 1;
			m -= u[end].nbranch;
		}
		m -= p->parts;
		b = p->from;
	}
	*nsizes = ns;
out:
	free(cost);
	free(pos);
	free(F);
	return res;
}

int akk_balance_max_layers(const struct akk_spec *s)
{
	int n = akk_spec_nlayers(s);

	if (!s->auto_gates || s->auto_split || s->ngates != 1)
		return n;
	for (int i = 0; i < s->gates[0].nlayers; i++)
		if (akk_spec_graph_branches(&s->gates[0].layers[i], NULL, NULL, NULL))
			n += s->gates[0].layers[i].ninner;
	return n;
}

/* The units of s's flat list: cost[i] each layer's (akk_balance_costs),
 * and for each graph layer that may unfold its branches, and its nodes'
 * costs in node[i] (one per node of the graph, owned by the caller). */
static int units_of(const struct akk_spec *s, int profile, const double *cost,
		    struct akk_balance_unit *u, double **node, struct akk_err *e)
{
	const struct akk_gate_spec *flat = s->gates;
	int nodes[AKK_GRAPH_MAX_NODES], len[AKK_MAX_JOIN], B = s->sched.batch_size;
	struct akk_model m;
	int rc = -1;

	if (akk_model_plan(&m, s, e))
		return -1;
	for (int i = 0; i < flat->nlayers; i++) {
		const struct akk_layer *l = &m.gates[0].layers[i];
		int b = akk_spec_graph_branches(&flat->layers[i], nodes, len, NULL), at = 0;
		u[i] = (struct akk_balance_unit){ .cost = cost[i] };
		if (!b)
			continue;
		if (!(node[i] = calloc((size_t)l->nsub, sizeof(double)))) {
			akk_err_set(e, "out of memory");
			goto out;
		}
		u[i].nbranch = b;
		for (int j = 0; j < b; j++)
			for (int t = 0; t < len[j]; t++, at++) {
				const struct akk_layer *sub = &l->sub[nodes[at]];
				struct akk_layer_cost c;
				if (profile && akk_profile_layer(sub, B, AKK_UNFOLD_REPS, &c, e))
					goto out;
				node[i][nodes[at]] = profile ? c.fwd + c.bwd : 3.0 * B * sub->flops;
				u[i].branch[j] += node[i][nodes[at]];
			}
	}
	rc = 0;
out:
	akk_model_release(&m);
	return rc;
}

/* The cost of each layer of the gates plan (unfold, from the partition)
 * makes, in order, into out. */
static void gate_costs(const struct akk_spec *s, const unsigned char *unfold,
		       const double *cost, double *const *node, double *out)
{
	int nodes[AKK_GRAPH_MAX_NODES], len[AKK_MAX_JOIN], k = 0;

	for (int i = 0; i < s->gates[0].nlayers; i++) {
		int b = unfold[i] ? akk_spec_graph_branches(&s->gates[0].layers[i],
							     nodes, len, NULL) : 0, at = 0;
		if (!b)
			out[k++] = cost[i];
		for (int j = 0; j < b; j++)
			for (int t = 0; t < len[j]; t++)
				out[k++] = node[i][nodes[at++]];
	}
}

int akk_balance_cores(struct akk_spec *s, int profile, int cores,
		      double *out_cost, struct akk_err *e)
{
	int n, k = s->auto_gates, *sizes = NULL, *at = NULL, ns = 0, nu = 0, rc = -1;
	double *cost = NULL, **node = NULL, r;
	struct akk_balance_unit *u = NULL;
	unsigned char *unfold = NULL;

	if (!k || s->auto_split)
		return out_cost ? akk_balance_costs(s, profile, out_cost, e) : 0;
	n = akk_spec_nlayers(s);
	if (!(cost = malloc((size_t)n * sizeof(double))) ||
	    !(node = calloc((size_t)n, sizeof(*node))) ||
	    !(u = calloc((size_t)n, sizeof(*u))) || !(unfold = calloc((size_t)n, 1)) ||
	    !(at = malloc((size_t)n * sizeof(int))) ||
	    !(sizes = malloc((size_t)k * sizeof(int)))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (akk_balance_costs(s, profile, cost, e) || units_of(s, profile, cost, u, node, e))
		goto out;
	if ((r = akk_balance_partition(u, n, k, cores, sizes, &ns, unfold)) == -1) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (r < 0) {
		akk_err_at(e, s->path, s->auto_mark.line, s->auto_mark.col,
			   "gates: {auto: %d}: no split of network.layers makes exactly %d gates (a graph unfolds into a gate per branch, after a gate and before one)",
			   k, k);
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (unfold[i])
			at[nu++] = i;
	if (out_cost)
		gate_costs(s, unfold, cost, node, out_cost);
	rc = akk_balance_apply_unfold(s, sizes, ns, at, nu, e);
out:
	for (int i = 0; node && i < n; i++)
		free(node[i]);
	free(node);
	free(cost);
	free(u);
	free(unfold);
	free(at);
	free(sizes);
	return rc;
}

int akk_balance(struct akk_spec *s, int profile, double *out_cost,
		struct akk_err *e)
{
	return akk_balance_cores(s, profile, akk_cores(), out_cost, e);
}
