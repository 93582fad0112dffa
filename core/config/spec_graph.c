/* spec_graph.c - a graph layer's nodes read from the config: each node's
 * kind and options (through spec.c's layer parser), its name and what it
 * reads; then the names resolved, the topological order found and the
 * edges checked (see spec_graph.h). The shapes are checked later, when
 * the layer is planned (nn/layer_graph.c). */
#include "config/spec_graph.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml_keys.h"
#include "nn/layer_graph.h"

/* What a node was written with, until its names are resolved. */
struct pending {
	yaml_node_t *from;	/* the value of 'from', or NULL */
	yaml_node_t *list;	/* an add's or a concat's list, or NULL */
};

/* The parse of one graph: the spec it fills and its nodes' pending
 * names. */
struct parse {
	struct akk_yaml_ctx *c;
	struct akk_layer_spec *l;
	struct akk_graph_spec *g;
	struct pending *pend;
	akk_spec_layer_fn layer;
	int room, max_layers;	/* layers the network may still take, of
				 * at most max_layers */
	yaml_node_t *output;	/* the value of 'output', or NULL */
};

static const char *const join_names[] = { "add", "concat", "slice", NULL };

#define NODE struct akk_graph_node

static const struct key slice_keys[] = {
	INT("start", NODE, start, F_LO | F_HI, 0, (double)INT_MAX - 1, 0),
	INT("end", NODE, end, F_REQ | F_LO | F_HI, 1, (double)INT_MAX, 0),
	END,
};

/* A node's name: letters, digits, '_', '-' and '.', not "input", not
 * taken by an earlier node. */
static int node_name(struct parse *ps, int k, yaml_node_t *val)
{
	struct akk_yaml_ctx *c = ps->c;
	char *name;

	if (akk_yaml_parse_str(c, "name", val, &name))
		return -1;
	size_t n = strlen(name), ok = strspn(name, "abcdefghijklmnopqrstuvwxyz"
					     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");
	int rc = -1;
	if (ok < n)
		akk_yaml_fail(c, val, "a node's 'name' is letters, digits, '_', "
			      "'-' and '.', got '%s'", name);
	else if (n >= AKK_GRAPH_MAX_NAME)
		akk_yaml_fail(c, val, "a node's 'name' has at most %d characters, "
			      "got %zu", AKK_GRAPH_MAX_NAME - 1, n);
	else if (!strcmp(name, "input"))
		akk_yaml_fail(c, val, "'input' is the graph's input: name the "
			      "node otherwise");
	else
		rc = 0;
	for (int j = 0; !rc && j < k; j++)
		if (!strcmp(ps->g->nodes[j].name, name)) {
			struct akk_mark m = ps->g->nodes[j].mark;
			rc = akk_yaml_fail(c, val, "duplicate node name '%s' "
					   "(first at line %d)", name, m.line);
		}
	if (!rc)
		memcpy(ps->g->nodes[k].name, name, n + 1);
	free(name);
	return rc;
}

/* The value of a join's key: add and concat take a list of two to
 * AKK_GRAPH_MAX_JOIN names, slice a mapping {start, end}. */
static int join_value(struct parse *ps, int k, yaml_node_t *key,
		      yaml_node_t *val)
{
	struct akk_yaml_ctx *c = ps->c;
	struct akk_graph_node *n = &ps->g->nodes[k];
	const char *kind = akk_yaml_text(key);
	char subject[32];

	snprintf(subject, sizeof(subject), "'%s'", kind);
	if (n->op == AKK_GRAPH_SLICE) {
		struct section sec = { "'slice'", slice_keys, n, 0, 0, NULL, NULL };
		if (!val || val->type != YAML_MAPPING_NODE)
			return akk_yaml_fail_type(c, subject, "a mapping {start, end}",
						  val ? val : key);
		if (akk_yaml_walk(c, val, &sec))
			return -1;
		if (n->end <= n->start)
			return akk_yaml_fail(c, val, "'slice' needs 'end' greater "
					     "than 'start', got start %d, end %d",
					     n->start, n->end);
		return 0;
	}
	if (!val || val->type != YAML_SEQUENCE_NODE)
		return akk_yaml_fail_type(c, subject, "a list of node names",
					  val ? val : key);
	long m = val->data.sequence.items.top - val->data.sequence.items.start;
	if (m < 2 || m > AKK_GRAPH_MAX_JOIN)
		return akk_yaml_fail(c, val, "%s joins 2 to %d nodes, got %ld",
				     subject, AKK_GRAPH_MAX_JOIN, m);
	ps->pend[k].list = val;
	return 0;
}

/* One key of a node's mapping: name, from, or its kind (one per node). */
static int node_key(struct parse *ps, int k, yaml_node_t *item,
		    yaml_node_t *key, yaml_node_t *val, yaml_node_t **kind)
{
	struct akk_yaml_ctx *c = ps->c;
	struct akk_graph_node *n = &ps->g->nodes[k];
	const char *t = akk_yaml_text(key);
	int join = -1;

	if (key->type != YAML_SCALAR_NODE || akk_yaml_is_null(key))
		return akk_yaml_fail_type(c, "a node's key", "a name", key);
	if (!strcmp(t, "name"))
		return node_name(ps, k, val);
	if (!strcmp(t, "from")) {
		if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) ||
		    akk_yaml_tag_type(val))
			return akk_yaml_fail_type(c, "'from'", "a node name", val);
		ps->pend[k].from = val;
		return 0;
	}
	if (*kind)
		return akk_yaml_fail(c, key, "a node has one kind, got '%s' "
				     "after '%s' (each node is its own list item)",
				     t, akk_yaml_text(*kind));
	*kind = key;
	for (int j = 0; join_names[j]; j++)
		if (!strcmp(t, join_names[j]))
			join = j;
	if (join < 0) {
		n->op = AKK_GRAPH_LAYER;
		return ps->layer(c, item, key, akk_yaml_is_null(val) ? NULL : val,
				 &ps->l->inner[k]);
	}
	n->op = (enum akk_graph_op[]){ AKK_GRAPH_ADD, AKK_GRAPH_CONCAT,
				       AKK_GRAPH_SLICE }[join];
	return join_value(ps, k, key, val);
}

/* Node k: a layer's name alone, or a mapping of its kind, name and from. */
static int node_item(struct parse *ps, int k, yaml_node_t *item)
{
	struct akk_yaml_ctx *c = ps->c;
	struct akk_graph_node *n = &ps->g->nodes[k];
	yaml_node_t *kind = NULL, *seen[3] = { NULL, NULL, NULL };

	n->mark = akk_yaml_mark_of(c, item);
	ps->l->inner[k].mark = n->mark;
	if (item->type == YAML_SCALAR_NODE && !akk_yaml_is_null(item)) {
		for (int j = 0; join_names[j]; j++)
			if (!strcmp(akk_yaml_text(item), join_names[j]))
				return akk_yaml_fail(c, item, "'%s' needs its "
						     "inputs: {%s: ...}",
						     join_names[j], join_names[j]);
		n->op = AKK_GRAPH_LAYER;
		return ps->layer(c, item, item, NULL, &ps->l->inner[k]);
	}
	if (item->type != YAML_MAPPING_NODE)
		return akk_yaml_fail_type(c, "a node", "a name or a mapping", item);
	for (yaml_node_pair_t *p = item->data.mapping.pairs.start;
	     p < item->data.mapping.pairs.top; p++) {
		yaml_node_t *key = akk_yaml_node(c, p->key);
		yaml_node_t *val = akk_yaml_node(c, p->value);
		const char *t = key->type == YAML_SCALAR_NODE ? akk_yaml_text(key) : "";
		int slot = !strcmp(t, "name") ? 0 : !strcmp(t, "from") ? 1 : 2;
		if (slot < 2 && seen[slot])
			return akk_yaml_fail(c, key, "duplicate key '%s' in a node",
					     t);
		seen[slot] = key;
		if (node_key(ps, k, item, key, val, &kind))
			return -1;
	}
	if (!kind)
		return akk_yaml_fail(c, item, "a node needs a kind: a layer "
				     "({conv2d: {...}}) or a join (add, concat, "
				     "slice)");
	if (seen[1] && (n->op == AKK_GRAPH_ADD || n->op == AKK_GRAPH_CONCAT))
		return akk_yaml_fail(c, seen[1], "'from' does not apply to '%s', "
				     "whose list names its inputs",
				     akk_yaml_text(kind));
	return 0;
}

/* The node called by val's text, or AKK_GRAPH_INPUT; what names it
 * ("'from'", "'add'") for the message. */
static int resolve(struct parse *ps, yaml_node_t *val, const char *what,
		   int *out)
{
	struct akk_graph_spec *g = ps->g;
	const char *t;
	const char *names[AKK_GRAPH_MAX_NODES + 1];
	char buf[128];
	int n = 0;

	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) ||
	    akk_yaml_tag_type(val))
		return akk_yaml_fail_type(ps->c, what, "a node name", val);
	t = akk_yaml_text(val);
	if (!strcmp(t, "input")) {
		*out = AKK_GRAPH_INPUT;
		return 0;
	}
	names[n++] = "input";
	for (int j = 0; j < g->nnodes; j++) {
		if (g->nodes[j].name[0] && !strcmp(g->nodes[j].name, t)) {
			*out = j;
			return 0;
		}
		if (g->nodes[j].name[0])
			names[n++] = g->nodes[j].name;
	}
	return akk_yaml_fail(ps->c, val, "unknown node '%s' in %s%s", t, what,
			     akk_yaml_suggest(t, names, (size_t)n, sizeof(names[0]),
					      buf, sizeof(buf)));
}

/* Each node's inputs, from its names or by default the node before. */
static int resolve_inputs(struct parse *ps)
{
	struct akk_graph_spec *g = ps->g;

	for (int k = 0; k < g->nnodes; k++) {
		struct akk_graph_node *n = &g->nodes[k];
		yaml_node_t *list = ps->pend[k].list;
		int m = list ? (int)(list->data.sequence.items.top -
				     list->data.sequence.items.start) : 1;
		char what[32];

		n->from = calloc((size_t)m, sizeof(*n->from));
		n->from_mark = calloc((size_t)m, sizeof(*n->from_mark));
		if (!n->from || !n->from_mark)
			return akk_err_set(ps->c->e, "out of memory");
		n->nfrom = m;
		snprintf(what, sizeof(what), "'%s'", list ?
			 join_names[n->op - AKK_GRAPH_ADD] : "from");
		for (int i = 0; i < m; i++) {
			yaml_node_t *v = list ? akk_yaml_node(ps->c,
				list->data.sequence.items.start[i]) : ps->pend[k].from;
			if (!v) {
				n->from[i] = k - 1;	/* AKK_GRAPH_INPUT for the first */
				n->from_mark[i] = n->mark;
				continue;
			}
			if (resolve(ps, v, what, &n->from[i]))
				return -1;
			n->from_mark[i] = akk_yaml_mark_of(ps->c, v);
			if (n->from[i] == k)
				return akk_yaml_fail(ps->c, v, "node '%s' reads "
						     "its own output", n->name);
		}
	}
	return 0;
}

/* The topological order into g->order: at each step the first node as
 * written whose inputs are all computed (so an order already topological
 * is kept). When none is left, the rest hold a cycle: reported at the
 * 'from' that closes it, naming its nodes. */
static int sort_nodes(struct parse *ps)
{
	struct akk_graph_spec *g = ps->g;
	unsigned char done[AKK_GRAPH_MAX_NODES] = { 0 };
	int k = 0;

	while (k < g->nnodes) {
		int pick = -1;
		for (int i = 0; i < g->nnodes && pick < 0; i++) {
			int ready = !done[i];
			for (int m = 0; ready && m < g->nodes[i].nfrom; m++)
				ready = g->nodes[i].from[m] < 0 ||
					done[g->nodes[i].from[m]];
			if (ready)
				pick = i;
		}
		if (pick < 0)
			break;
		done[pick] = 1;
		g->order[k++] = pick;
	}
	if (k == g->nnodes)
		return 0;
	/* walk back along pending inputs from the first pending node until
	 * a node repeats: that node starts the cycle */
	int step[AKK_GRAPH_MAX_NODES], via[AKK_GRAPH_MAX_NODES], u = 0, s = 0;
	for (int i = 0; i < g->nnodes; i++)
		step[i] = -1;
	while (done[u])
		u++;
	while (step[u] < 0) {
		int m = 0;
		step[u] = s++;
		while (g->nodes[u].from[m] < 0 || done[g->nodes[u].from[m]])
			m++;
		via[u] = m;
		u = g->nodes[u].from[m];
	}
	char msg[600], who[96];
	size_t len = 0;
	int v = u;
	do {
		v = g->nodes[v].from[via[v]];
		akk_graph_node_label(ps->l, v, who, sizeof(who));
		len += (size_t)snprintf(msg + len, len < sizeof(msg) ?
					sizeof(msg) - len : 0, "%s%s",
					len ? ", which reads " : " reads ", who);
	} while (v != u && len < sizeof(msg));
	akk_graph_node_label(ps->l, u, who, sizeof(who));
	struct akk_mark m = g->nodes[u].from_mark[via[u]];
	return akk_err_at(ps->c->e, ps->c->file, m.line, m.col,
			  "the nodes form a cycle: %s%s", who, msg);
}

/* The output node (by 'output', or the last), and every other node read
 * by some node. */
static int check_use(struct parse *ps)
{
	struct akk_graph_spec *g = ps->g;
	unsigned char read[AKK_GRAPH_MAX_NODES] = { 0 };
	char who[96];

	g->output = g->nnodes - 1;
	if (ps->output) {
		if (resolve(ps, ps->output, "'output'", &g->output))
			return -1;
		g->output_mark = akk_yaml_mark_of(ps->c, ps->output);
		if (g->output == AKK_GRAPH_INPUT)
			return akk_yaml_fail(ps->c, ps->output, "'output' must "
					     "name a node, not the graph's input");
	}
	for (int i = 0; i < g->nnodes; i++)
		for (int m = 0; m < g->nodes[i].nfrom; m++)
			if (g->nodes[i].from[m] >= 0)
				read[g->nodes[i].from[m]] = 1;
	for (int i = 0; i < g->nnodes; i++) {
		const struct akk_graph_node *n = &g->nodes[i];
		if (i == g->output && read[i])
			return akk_err_at(ps->c->e, ps->c->file, n->mark.line,
					  n->mark.col, "%s is the graph's output "
					  "and cannot be read by another node",
					  akk_graph_node_label(ps->l, i, who,
							       sizeof(who)));
		if (i != g->output && !read[i])
			return akk_err_at(ps->c->e, ps->c->file, n->mark.line,
					  n->mark.col, "%s is not used: no node "
					  "reads it and it is not the graph's "
					  "output", akk_graph_node_label(ps->l, i,
						who, sizeof(who)));
	}
	return 0;
}

/* The nodes' list into ps->g and ps->l->inner; they count towards the
 * network's layer limit as a block's layers do. */
static int node_list(struct parse *ps, yaml_node_t *val)
{
	struct akk_yaml_ctx *c = ps->c;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);

	if (!n)
		return akk_yaml_fail(c, val, "'graph' has no nodes");
	if (n > AKK_GRAPH_MAX_NODES)
		return akk_yaml_fail(c, val, "too many nodes: more than %d in a "
				     "graph", AKK_GRAPH_MAX_NODES);
	if (n > ps->room)
		return akk_yaml_fail(c, val, "too many layers: more than %d in "
				     "the network", ps->max_layers);
	c->nested += n;
	ps->g->nodes = calloc((size_t)n, sizeof(*ps->g->nodes));
	ps->g->order = calloc((size_t)n, sizeof(*ps->g->order));
	ps->l->inner = calloc((size_t)n, sizeof(*ps->l->inner));
	ps->pend = calloc((size_t)n, sizeof(*ps->pend));
	if (!ps->g->nodes || !ps->g->order || !ps->l->inner || !ps->pend)
		return akk_err_set(c->e, "out of memory");
	ps->g->nnodes = ps->l->ninner = n;
	for (int i = 0; i < n; i++)
		if (node_item(ps, i, akk_yaml_node(c, items[i])))
			return -1;
	return 0;
}

static int h_nodes(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	(void)c, (void)k, (void)key;
	return node_list(sec->obj, val);
}

static int h_output(struct akk_yaml_ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	(void)c, (void)k, (void)key;
	((struct parse *)sec->obj)->output = val;
	return 0;
}

static const struct key graph_keys[] = {
	{ .name = "nodes", .type = YAML_SEQUENCE_NODE, .fn = h_nodes,
	  .what = "a list", .flags = F_REQ },
	{ .name = "output", .type = YAML_SCALAR_NODE, .fn = h_output,
	  .what = "a node name" },
	END,
};

int akk_spec_graph_item(struct akk_yaml_ctx *c, yaml_node_t *item,
			yaml_node_t *opts, struct akk_layer_spec *l,
			akk_spec_layer_fn layer, int room, int max_layers)
{
	struct parse ps = { c, l, NULL, NULL, layer, room, max_layers, NULL };
	struct section sec = { "'graph'", graph_keys, &ps, 0, 0, NULL, NULL };
	int rc = -1;

	if (!(l->graph = ps.g = calloc(1, sizeof(*l->graph))))
		return akk_err_set(c->e, "out of memory");
	if (!opts || akk_yaml_is_null(opts))
		akk_yaml_fail(c, opts && akk_yaml_node_set(c, opts) >= 0 ? opts : item,
			      "'graph' needs its nodes: a list, or a mapping "
			      "with 'nodes' and 'output'");
	else if (opts->type == YAML_SEQUENCE_NODE ? node_list(&ps, opts) :
		 opts->type == YAML_MAPPING_NODE ? akk_yaml_walk(c, opts, &sec) :
		 akk_yaml_fail_type(c, "'graph'", "a list or a mapping", opts))
		;
	else if (!resolve_inputs(&ps) && !sort_nodes(&ps) && !check_use(&ps))
		rc = 0;
	free(ps.pend);
	return rc;
}
