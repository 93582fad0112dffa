/* spec_unfold.c - gates: {auto: N}: the flat network.layers list
 * rewritten into gates, a chain of contiguous cuts (akk_spec_split) or,
 * with graph layers unfolded, gates that fork and join (akk_spec_unfold),
 * the very gates a config writing them out by hand with from: and join:
 * gives (spec.h). */
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "nn/layer_graph.h"

int akk_spec_graph_branches(const struct akk_layer_spec *l, int *nodes,
			    int *len, enum akk_join *op)
{
	const struct akk_graph_spec *g = l->graph;
	const struct akk_graph_node *out;
	unsigned char *seen;
	int b, total = 0, at = 0, ok = 1;

	if (l->ops != &akk_layer_graph || !g || g->output < 0 || g->output >= g->nnodes)
		return 0;
	out = &g->nodes[g->output];
	b = out->nfrom;
	if ((out->op != AKK_GRAPH_CONCAT && out->op != AKK_GRAPH_ADD) ||
	    b < 2 || b > AKK_MAX_JOIN)
		return 0;
	if (!(seen = calloc((size_t)g->nnodes, 1)))
		return 0;
	/* walk each branch back from its end to the input: every node but
	 * the output met exactly once, each a layer reading one node */
	for (int i = 0; i < b && ok; i++) {
		int j = out->from[i], n = 0;
		while (ok && j != AKK_GRAPH_INPUT) {
			const struct akk_graph_node *v = &g->nodes[j];
			if (j < 0 || j == g->output || seen[j] || v->op != AKK_GRAPH_LAYER ||
			    v->nfrom != 1 || !l->inner[j].ops) {
				ok = 0;
				break;
			}
			seen[j] = 1;
			n++;
			j = v->from[0];
		}
		ok = ok && n > 0;
		if (ok && nodes) {
			/* the branch from its start: written backwards */
			int k = out->from[i];
			for (int p = at + n - 1; p >= at; p--, k = g->nodes[k].from[0])
				nodes[p] = k;
			len[i] = n;
			at += n;
		}
		total += n;
	}
	free(seen);
	if (!ok || total != g->nnodes - 1)
		return 0;
	if (op)
		*op = out->op == AKK_GRAPH_CONCAT ? AKK_JOIN_CONCAT : AKK_JOIN_ADD;
	return b;
}

int akk_spec_max_gates(const struct akk_spec *s)
{
	const struct akk_gate_spec *flat = s->gates;
	int n = 0;

	for (int i = 0; i < s->ngates; i++)
		n += s->gates[i].nlayers;
	if (s->ngates != 1)
		return n;
	for (int i = 0; i + 1 < flat->nlayers; i++) {
		int b = akk_spec_graph_branches(&flat->layers[i], NULL, NULL, NULL);
		if (b)
			n += b - 1;
	}
	return n;
}

/* A new gate of the rewrite: the flat gate's keys (its optimizer, no
 * rank), n layers, reading nfrom gates (a branch: the gate it forks from). */
static int new_gate(struct akk_gate_spec *g, const struct akk_gate_spec *flat,
		    int n, const int *from, int nfrom, enum akk_join join, int branch)
{
	*g = *flat;
	g->nlayers = n;
	g->layers = calloc((size_t)n, sizeof(*g->layers));
	g->has_from = branch || nfrom > 1;	/* as a config writes them */
	g->nfrom = nfrom;
	memcpy(g->from, from, (size_t)nfrom * sizeof(int));
	g->join = nfrom > 1 ? join : AKK_JOIN_NONE;
	return g->layers ? 0 : -1;
}

/* The gates for plan (sizes, unfold) into g (room for AKK_MAX_GATES),
 * their layers copies of the flat gate's (moved once the plan holds):
 * *ng gates. Fails on a plan that does not fit. */
static int build(const struct akk_spec *s, const int *sizes, int nsizes,
		 const int *unfold, int nunfold, struct akk_gate_spec *g, int *ng,
		 struct akk_err *e)
{
	const struct akk_gate_spec *flat = s->gates;
	int n = flat->nlayers, p = 0, si = 0, ui = 0, k = 0, prev = AKK_GATE_INPUT;
	int join_from[AKK_MAX_JOIN], njoin = 0, nodes[AKK_GRAPH_MAX_NODES], len[AKK_MAX_JOIN];
	enum akk_join op = AKK_JOIN_NONE;

	for (int i = 0; i < nunfold; i++)
		if (unfold[i] < 0 || unfold[i] >= n || (i && unfold[i] <= unfold[i - 1]))
			return akk_err_set(e, "unfold: entry %d must be a layer of network.layers (0 to %d), after the entry before it",
					   unfold[i], n - 1);
	while (p < n) {
		if (ui < nunfold && unfold[ui] == p) {
			const struct akk_layer_spec *l = &flat->layers[p];
			int b = akk_spec_graph_branches(l, nodes, len, &op), at = 0;
			if (!b)
				return akk_err_set(e, "unfold: layer %d of network.layers is not a graph of branches joined by one concat or add",
						   p);
			if (njoin)
				return akk_err_set(e, "unfold: layer %d follows the graph unfolded before it directly: its join needs a gate of layers",
						   p);
			if (k + b > AKK_MAX_GATES)
				return akk_err_set(e, "unfold: more than %d gates", AKK_MAX_GATES);
			for (int i = 0; i < b; i++, k++) {
				if (new_gate(&g[k], flat, len[i], &prev, 1, AKK_JOIN_NONE, 1))
					return akk_err_set(e, "out of memory");
				for (int j = 0; j < len[i]; j++)
					g[k].layers[j] = l->inner[nodes[at + j]];
				g[k].mark = l->mark;
				at += len[i];
				join_from[i] = k;
			}
			njoin = b;
			p++, ui++;
			continue;
		}
		if (si == nsizes)
			return akk_err_set(e, "split: the gates hold %d layers, but network.layers has %d",
					   p, n);
		if (sizes[si] < 1 || sizes[si] > n - p ||
		    (ui < nunfold && unfold[ui] < p + sizes[si]))
			return akk_err_set(e, "split: gate %d of %d layers does not fit the %d layers of network.layers and the graphs unfolded",
					   k + 1, sizes[si], n);
		if (k == AKK_MAX_GATES)
			return akk_err_set(e, "split: more than %d gates", AKK_MAX_GATES);
		if (new_gate(&g[k], flat, sizes[si], njoin ? join_from : &prev,
			     njoin ? njoin : 1, op, 0))
			return akk_err_set(e, "out of memory");
		memcpy(g[k].layers, flat->layers + p, (size_t)sizes[si] * sizeof(*g[k].layers));
		prev = k++;
		njoin = 0;
		p += sizes[si++];
	}
	*ng = k;
	if (njoin)
		return akk_err_set(e, "unfold: the last layer of network.layers cannot unfold: its join needs a gate of layers after it");
	if (si != nsizes || ui != nunfold)
		return akk_err_set(e, "split: %d entries, but the layers fill %d gates", nsizes, si);
	if (k != s->auto_gates)
		return akk_err_set(e, "split and unfold make %d gates, but auto is %d", k, s->auto_gates);
	return 0;
}

int akk_spec_split(struct akk_spec *s, const int *sizes, struct akk_err *e)
{
	struct akk_gate_spec *g, *flat = s->gates;
	int n = s->auto_gates, total = 0;

	if (!n || s->ngates != 1 || s->auto_split)
		return akk_err_set(e, "the network has no flat layers list to split");
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 1 || sizes[i] > flat->nlayers - total)
			return akk_err_set(e, "split: gate %d of %d layers does not fit the %d layers of network.layers",
					   i + 1, sizes[i], flat->nlayers);
		total += sizes[i];
	}
	if (total != flat->nlayers)
		return akk_err_set(e, "split: the gates hold %d layers, but network.layers has %d",
				   total, flat->nlayers);
	if (!(g = calloc((size_t)n, sizeof(*g))) ||
	    !(s->auto_split = malloc((size_t)n * sizeof(int)))) {
		free(g);
		return akk_err_set(e, "out of memory");
	}
	total = 0;
	for (int i = 0; i < n; i++) {
		g[i] = *flat;
		g[i].nlayers = sizes[i];
		g[i].nfrom = 1;		/* the gate before, as gates_link fills */
		g[i].from[0] = i - 1;
		g[i].layers = calloc((size_t)sizes[i], sizeof(*g[i].layers));
		if (!g[i].layers) {
			while (i--)
				free(g[i].layers);
			free(g);
			free(s->auto_split);
			s->auto_split = NULL;
			return akk_err_set(e, "out of memory");
		}
		memcpy(g[i].layers, flat->layers + total,
		       (size_t)sizes[i] * sizeof(*g[i].layers));
		total += sizes[i];
		s->auto_split[i] = sizes[i];
	}
	s->auto_nsplit = n;
	free(flat->layers);
	free(flat);
	s->gates = g;
	s->ngates = n;
	return 0;
}

int akk_spec_unfold(struct akk_spec *s, const int *sizes, int nsizes,
		    const int *unfold, int nunfold, struct akk_err *e)
{
	struct akk_gate_spec *g, *flat = s->gates;
	int ng = 0, *sz = NULL, *uf = NULL;

	if (!nunfold)
		return akk_spec_split(s, sizes, e);
	if (!s->auto_gates || s->ngates != 1 || s->auto_split)
		return akk_err_set(e, "the network has no flat layers list to split");
	if (!(g = calloc(AKK_MAX_GATES, sizeof(*g))) ||
	    !(sz = malloc((size_t)(nsizes ? nsizes : 1) * sizeof(int))) ||
	    !(uf = malloc((size_t)nunfold * sizeof(int)))) {
		free(g);
		free(sz);
		return akk_err_set(e, "out of memory");
	}
	if (build(s, sizes, nsizes, unfold, nunfold, g, &ng, e)) {
		for (int i = 0; i < AKK_MAX_GATES; i++)
			free(g[i].layers);
		free(g);
		free(sz);
		free(uf);
		return -1;
	}
	/* the plan holds: the layers now live in the gates; of each graph
	 * unfolded only its shell is left to free */
	for (int i = 0; i < nunfold; i++) {
		struct akk_layer_spec *l = &flat->layers[unfold[i]];
		free(l->inner);
		akk_graph_spec_free(l->graph);
	}
	free(flat->layers);
	free(flat);
	/* room for AKK_MAX_GATES was made: keep what is used */
	s->gates = realloc(g, (size_t)ng * sizeof(*g));
	if (!s->gates)
		s->gates = g;
	s->ngates = ng;
	memcpy(sz, sizes, (size_t)nsizes * sizeof(int));
	memcpy(uf, unfold, (size_t)nunfold * sizeof(int));
	s->auto_split = sz;
	s->auto_nsplit = nsizes;
	s->auto_unfold = uf;
	s->auto_nunfold = nunfold;
	return 0;
}
