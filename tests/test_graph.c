/* test_graph.c - graph layers: the nodes the spec parses and the order
 * it finds, the errors it reports at FILE:LINE:COL, the gradients of
 * forks and joins against finite differences, a residual block written as
 * a graph training bit for bit as the residual kind, flip-flop equal to
 * the sequential reference on a graph, and wheels learning one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "model/balance.h"
#include "model/model.h"
#include "model/reference.h"
#include "nn/export.h"
#include "nn/layer_graph.h"
#include "runtime/run_internal.h"
#include "gradcheck.h"
#include "testutil.h"

#define HEAD "data:\n  train: {images: ti, labels: tl}\n"		/* 1-2 */ \
	"optimizer: {type: adam, lr: 0.001}\n"			/* 3 */   \
	"network:\n  input: [%s]\n  gates:\n"			/* 4-6 */

static char text[8192];

static const char *config(const char *input, const char *layers)
{
	snprintf(text, sizeof(text), HEAD "%s", input, layers);
	return text;
}

static void parse_ok(struct akk_spec *s, const char *t)
{
	struct akk_err e;

	if (tu_parse(s, t, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
}

/* Parsing (and, when it parses, planning) fails with exactly want. */
static void bad(const char *t, const char *want)
{
	char buf[1200];

	if (tu_plan_error(t, buf, sizeof(buf)))
		fail_msg("no error, want: %s", want);
	if (strcmp(buf, want)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", buf, want);
		fail();
	}
}

/* The inception-style example of akkctl(5), and the order and edges the
 * parser finds: written order kept where it is topological, sorted
 * where a node reads one written after it. */
static void parses(void **state)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e;
	const struct akk_layer_spec *l;
	const struct akk_graph_spec *g;

	(void)state;
	parse_ok(&s, config("2, 6, 6",
		"    - layers:\n"						/* 7 */
		"        - graph:\n"
		"            nodes:\n"
		"              - {name: a, conv2d: {filters: 3, kernel: 1}}\n"	/* 10 */
		"              - {name: b, conv2d: {filters: 4, kernel: 3, padding: 1}, from: input}\n"
		"              - {name: c, maxpool2d: {kernel: 3, stride: 1, padding: 1}, from: input}\n"
		"              - {name: out, concat: [a, b, c]}\n"
		"        - flatten\n"
		"        - {dense: 3}\n"));
	l = &s.gates[0].layers[0];
	g = l->graph;
	assert_ptr_equal(l->ops, &akk_layer_graph);
	assert_int_equal(g->nnodes, 4);
	assert_int_equal(l->ninner, 4);
	assert_string_equal(g->nodes[1].name, "b");
	assert_int_equal(g->nodes[0].from[0], AKK_GRAPH_INPUT);
	assert_int_equal(g->nodes[1].from[0], AKK_GRAPH_INPUT);
	assert_int_equal(g->nodes[3].op, AKK_GRAPH_CONCAT);
	assert_int_equal(g->nodes[3].nfrom, 3);
	assert_int_equal(g->nodes[3].from[2], 2);
	assert_int_equal(g->output, 3);
	assert_int_equal(g->nodes[3].mark.line, 13);
	assert_int_equal(l->inner[1].filters, 4);
	assert_int_equal(l->inner[1].bias, 1);	/* defaults apply inside */
	assert_null(l->inner[3].ops);
	for (int i = 0; i < 4; i++)
		assert_int_equal(g->order[i], i);
	akk_spec_release(&s);
	bad(config("2, 6, 6", "    - layers:\n        - {name: x, tanh}\n        - {dense: 3}\n"),
	    "t.yaml:8:21: a layer must be a mapping with one key, got a second key 'tanh' (each layer is its own list item)");

	/* a list is the nodes; 'out' written first reads later nodes */
	parse_ok(&s, config("6",
		"    - layers:\n"
		"        - graph:\n"
		"            output: out\n"
		"            nodes:\n"
		"              - {name: out, add: [pt, q]}\n"
		"              - {name: p, dense: 4, from: input}\n"
		"              - {name: pt, tanh}\n"
		"              - {name: q, dense: 4, from: input}\n"
		"        - graph: [{dense: 5}, {name: s, slice: {start: 1, end: 4}}, relu]\n"
		"        - {dense: 3}\n"));
	g = s.gates[0].layers[0].graph;
	assert_int_equal(g->output, 0);
	assert_int_equal(g->nodes[0].from[0], 2);	/* p's tanh, unnamed */
	assert_int_equal(g->nodes[2].from[0], 1);
	assert_int_equal(g->order[0], 1);
	assert_int_equal(g->order[1], 2);
	assert_int_equal(g->order[2], 3);
	assert_int_equal(g->order[3], 0);
	g = s.gates[0].layers[1].graph;
	assert_int_equal(g->nodes[1].start, 1);
	assert_int_equal(g->nodes[1].end, 4);
	if (akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(m.gates[0].layers[0].out.d[0], 4);
	assert_int_equal(m.gates[0].layers[1].out.d[0], 3);
	/* two dense 6->4, then dense 4->5, dense 3->3 */
	assert_int_equal(m.nparams, 2 * 28 + 25 + 12);
	akk_model_release(&m);
	akk_spec_release(&s);
}

#define G(nodes) "    - layers:\n        - graph:\n            nodes:\n" nodes \
	"        - flatten\n        - {dense: 3}\n"

static void errors(void **state)
{
	(void)state;
	bad(config("6", G("              - {name: a, dense: 4}\n"
			  "              - {name: b, dense: 4, from: z}\n"
			  "              - {add: [a, b]}\n")),
	    "t.yaml:11:43: unknown node 'z' in 'from' (did you mean 'a'?)");
	bad(config("6", G("              - {name: left, dense: 4}\n"
			  "              - {name: b, dense: 4, from: input}\n"
			  "              - {add: [lef, b]}\n")),
	    "t.yaml:12:24: unknown node 'lef' in 'add' (did you mean 'left'?)");
	bad(config("6", G("              - {name: a, dense: 4}\n"
			  "              - {name: a, dense: 4, from: input}\n")),
	    "t.yaml:11:24: duplicate node name 'a' (first at line 10)");
	bad(config("6", G("              - {name: a, dense: 4, from: c}\n"
			  "              - {name: b, tanh}\n"
			  "              - {name: c, dense: 4}\n"
			  "              - {name: d, add: [c, input]}\n")),
	    "t.yaml:10:43: the nodes form a cycle: 'a' reads 'c', which reads 'b', which reads 'a'");
	bad(config("6", G("              - {name: a, dense: 4, from: a}\n")),
	    "t.yaml:10:43: node 'a' reads its own output");
	bad(config("6", G("              - {name: a, dense: 4}\n"
			  "              - {name: b, dense: 4, from: input}\n"
			  "              - {name: c, sigmoid, from: a}\n")),
	    "t.yaml:11:17: 'b' is not used: no node reads it and it is not the graph's output");
	bad(config("6", G("              - {dense: 4}\n"
			  "              - {dense: 4, from: input}\n")),
	    "t.yaml:10:17: node 1 (dense) is not used: no node reads it and it is not the graph's output");
	bad(config("6", "    - layers:\n        - graph: {nodes: [{name: a, dense: 4}, tanh], output: a}\n"
		   "        - {dense: 3}\n"),
	    "t.yaml:8:27: 'a' is the graph's output and cannot be read by another node");
	bad(config("6", "    - layers:\n        - graph: {nodes: []}\n        - {dense: 3}\n"),
	    "t.yaml:8:26: 'graph' has no nodes");
	bad(config("6", "    - layers:\n        - graph\n        - {dense: 3}\n"),
	    "t.yaml:8:11: 'graph' needs its nodes: a list, or a mapping with 'nodes' and 'output'");
	bad(config("6", "    - layers:\n        - graph: {nodes: [tanh], output: input}\n        - {dense: 3}\n"),
	    "t.yaml:8:42: 'output' must name a node, not the graph's input");
	bad(config("6", G("              - {name: input, dense: 4}\n")),
	    "t.yaml:10:24: 'input' is the graph's input: name the node otherwise");
	bad(config("6", G("              - {name: 'a b', dense: 4}\n")),
	    "t.yaml:10:24: a node's 'name' is letters, digits, '_', '-' and '.', got 'a b'");
	bad(config("6", G("              - {name: a, dense: 4, relu}\n")),
	    "t.yaml:10:37: a node has one kind, got 'relu' after 'dense' (each node is its own list item)");
	bad(config("6", G("              - {name: a}\n")),
	    "t.yaml:10:17: a node needs a kind: a layer ({conv2d: {...}}) or a join (add, concat, slice)");
	bad(config("6", G("              - {name: a, denze: 4}\n")),
	    "t.yaml:10:27: unknown layer 'denze' (did you mean 'dense'?)");
	bad(config("6", G("              - {name: a, dense: {unit: 4}}\n")),
	    "t.yaml:10:35: unknown key 'unit' in layer 'dense' (did you mean 'units'?)");
	bad(config("6", G("              - {name: a, dense: 4}\n"
			  "              - {add: [a]}\n")),
	    "t.yaml:11:23: 'add' joins 2 to 16 nodes, got 1");
	bad(config("6", G("              - {name: a, dense: 4}\n"
			  "              - {add: [a, input], from: a}\n")),
	    "t.yaml:11:35: 'from' does not apply to 'add', whose list names its inputs");
	bad(config("6", G("              - {slice: {start: 3, end: 3}}\n")),
	    "t.yaml:10:25: 'slice' needs 'end' greater than 'start', got start 3, end 3");
	bad(config("6", G("              - add\n")),
	    "t.yaml:10:17: 'add' needs its inputs: {add: ...}");
	/* shapes, when the layer is planned: at the node, naming both */
	bad(config("2, 6, 6", G("              - {name: a, conv2d: {filters: 4, kernel: 3, padding: 1}}\n"
				"              - {name: s, add: [a, input]}\n")),
	    "t.yaml:11:17: layer 'graph' (gate 1, layer 1) cannot take the output of network.input: "
	    "node 's' (add): 'a' outputs [4, 6, 6] but the graph's input outputs [2, 6, 6]: add needs one shape");
	bad(config("2, 6, 6", G("              - {name: a, conv2d: {filters: 4, kernel: 3, stride: 2, padding: 1}}\n"
				"              - {name: c, concat: [input, a]}\n")),
	    "t.yaml:11:17: layer 'graph' (gate 1, layer 1) cannot take the output of network.input: "
	    "node 'c' (concat): the graph's input outputs [2, 6, 6] but 'a' outputs [4, 3, 3]: "
	    "concat joins on channels (features) and needs the other sizes equal");
	bad(config("2, 6, 6", G("              - {name: s, slice: {start: 1, end: 3}}\n")),
	    "t.yaml:10:17: layer 'graph' (gate 1, layer 1) cannot take the output of network.input: "
	    "node 's' (slice): end 3 is past the 2 channels of the graph's input [2, 6, 6]");
	bad(config("6", G("              - {slice: {end: 2}, from: input}\n"
			  "              - {slice: {start: 3, end: 5}}\n")),
	    "t.yaml:11:17: layer 'graph' (gate 1, layer 1) cannot take the output of network.input: "
	    "node 2 (slice): end 5 is past the 2 channels of node 1 (slice) [2]");
	/* a node's layer's own error, at the node */
	bad(config("6", G("              - {name: a, dense: 4}\n"
			  "              - {name: p, maxpool2d: 2}\n")),
	    "t.yaml:11:17: layer 'graph' (gate 1, layer 1) cannot take the output of network.input: "
	    "node 'p' (maxpool2d): expects an image input [channels, height, width], got [4]");
}

/* --set reaches into a graph's nodes by index. */
static void overrides(void **state)
{
	struct akk_spec s;
	struct akk_err e;
	const char *sets[] = { "network.gates.0.layers.0.graph.nodes.1.dense=6" };
	const char *t = config("6", "    - layers:\n"
			       "        - graph: {nodes: [relu, {name: d, dense: 4}]}\n"
			       "        - {dense: 3}\n");

	(void)state;
	memset(&e, 0, sizeof(e));
	if (akk_spec_parse(&s, t, strlen(t), "t.yaml", NULL, sets, 1, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(s.gates[0].layers[0].inner[1].units, 6);
	akk_spec_release(&s);
}

/* The gradient check of the first layer of a config whose input is in. */
static void grad_of(const char *input, const char *layers, int B)
{
	struct akk_spec s;

	parse_ok(&s, config(input, layers));
	grad_check(&s.gates[0].layers[0], s.input, B, X_PLAIN);
	akk_spec_release(&s);
}

/* Images: the input read by four nodes, a node by three; add of three,
 * concat on channels with the input inside, a slice across the joined
 * channels; smooth activations (no kink within eps); batchnorm in
 * training mode. */
static void grad_images(void **state)
{
	(void)state;
	grad_of("2, 5, 4",
		"    - layers:\n        - graph:\n            nodes:\n"
		"              - {name: a, conv2d: {filters: 2, kernel: 3, padding: 1}}\n"
		"              - {name: t, tanh}\n"
		"              - {name: b, conv2d: {filters: 2, kernel: 1}, from: input}\n"
		"              - {name: s, add: [t, b, input]}\n"
		"              - {name: c, concat: [s, input, t]}\n"
		"              - {name: lo, slice: {start: 1, end: 5}, from: c}\n"
		"              - {name: bn, batchnorm}\n"
		"              - {name: out, concat: [bn, c]}\n", 3);
}

/* Vectors: concat on features, add of a node to itself, a slice, and
 * an output written first. */
static void grad_vectors(void **state)
{
	(void)state;
	grad_of("6",
		"    - layers:\n        - graph:\n            output: y\n            nodes:\n"
		"              - {name: y, concat: [d2, part, input]}\n"
		"              - {name: d, dense: 5, from: input}\n"
		"              - {name: h, sigmoid}\n"
		"              - {name: twice, add: [h, h]}\n"
		"              - {name: part, slice: {start: 2, end: 4}, from: twice}\n"
		"              - {name: d2, dense: 3}\n", 4);
}

/* Sequences [T, F]: dense step by step, concat and slice on features. */
static void grad_sequences(void **state)
{
	(void)state;
	grad_of("4, 3",
		"    - layers:\n        - graph:\n            nodes:\n"
		"              - {name: a, dense: 5}\n"
		"              - {name: t, tanh}\n"
		"              - {name: c, concat: [input, t, a]}\n"
		"              - {name: s, slice: {start: 2, end: 9}}\n"
		"              - {name: d, dense: 4, from: c}\n"
		"              - {name: ss, add: [s, s]}\n"
		"              - {name: out, concat: [d, ss]}\n", 3);
}

/* A residual block and a graph as nodes of a graph. */
static void grad_nested(void **state)
{
	(void)state;
	grad_of("2, 4, 4",
		"    - layers:\n        - graph:\n            nodes:\n"
		"              - {name: r, residual: [{conv2d: {filters: 2, kernel: 3, padding: 1}}, batchnorm, tanh]}\n"
		"              - {name: g, graph: [{conv2d: {filters: 3, kernel: 1}}, {name: u, sigmoid}, {concat: [u, input]}], from: input}\n"
		"              - {name: out, concat: [r, g]}\n", 2);
}

/* akkctl check: the graph's nodes beneath its row, in topological
 * order (the output q written before the nodes it reads), each with its
 * kind, output, parameters, FLOPs and inputs; an unnamed node as #I. */
static void check_prints_nodes(void **state)
{
	static char out[1 << 16], err[1 << 14];
	const char *dir = tu_tmpdir();
	char path[600];
	const char *yaml =
		"data: {train: {images: train-images, labels: train-labels}}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n"
		"    - layers:\n"
		"        - graph:\n"
		"            output: q\n"
		"            nodes:\n"
		"              - {name: q, concat: [t, input]}\n"
		"              - {name: a, conv2d: {filters: 2, kernel: 3, padding: 1}, from: input}\n"
		"              - tanh\n"
		"              - {name: t, slice: {start: 0, end: 1}}\n"
		"        - flatten\n        - {dense: 4}\n"
		"optimizer: {type: adam, lr: 0.01}\n";

	(void)state;
	tu_write_set(dir, "train", 20, 8, 4, 1);
	snprintf(path, sizeof(path), "%s/g.yaml", dir);
	assert_int_equal(tu_write_file(path, yaml, strlen(yaml)), 0);
	assert_int_equal(tu_ak(out, sizeof(out), err, sizeof(err), "check", path, NULL), 0);
	tu_assert_line(out, "1     1      graph        [2, 8, 8]                  20           2560");
	tu_assert_line(out, "             node kind       output               params   FLOPs/sample  from");
	tu_assert_contains(out,
		"             a    conv2d     [2, 8, 8]                20           2432  input\n"
		"             #3   tanh       [2, 8, 8]                 0            128  a\n"
		"             t    slice      [1, 8, 8]                 0              0  #3 [0:1]\n"
		"             q    concat     [2, 8, 8]                 0              0  t, input (output)\n"
		"1     2      flatten");
	tu_rm_tree(dir);
}

/* --- export --------------------------------------------------------------- */

/* A sink that writes each node as "Op(in, ...) -> out" and each
 * initializer as "init NAME", one per line. */
struct record {
	char text[4096];
	size_t len;
};

static int rec_node(struct akk_graph_sink *g, const char *op,
		    const char *const *in, int nin, const char *const *out,
		    int nout, const struct akk_attr *attrs, int nattrs,
		    struct akk_err *e)
{
	struct record *r = g->ctx;

	(void)attrs, (void)nattrs, (void)e;
	r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len, "%s(", op);
	for (int i = 0; i < nin; i++)
		r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len,
				   "%s%s", i ? ", " : "", in[i]);
	r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len, ") ->");
	for (int i = 0; i < nout; i++)
		r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len,
				   " %s", out[i]);
	r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len, "\n");
	return 0;
}

static int rec_tensor(struct akk_graph_sink *g, const char *name,
		      const int64_t *dims, int rank, const float *data,
		      struct akk_err *e)
{
	struct record *r = g->ctx;

	(void)dims, (void)rank, (void)data, (void)e;
	r->len += snprintf(r->text + r->len, sizeof(r->text) - r->len,
			   "init %s\n", name);
	return 0;
}

/* The names the export gives: a named node's tensors under its name, an
 * unnamed one's under nI, the output node's layer writing the layer's
 * output yet its weights under its own name; three inputs added as a
 * chain; Slice's starts, ends and axes from Constants. */
static void export_names(void **state)
{
	struct akk_spec s;
	struct akk_layer l = { 0 };
	struct record r = { .len = 0 };
	struct akk_graph_sink g = { rec_node, rec_tensor, &r };
	struct akk_export_io io = { "x", "y", "g1.l1.graph", NULL, NULL };
	struct akk_err e = { 0 };

	(void)state;
	parse_ok(&s, config("6", "    - layers:\n        - graph:\n"
		"            - {name: d, dense: 4}\n"
		"            - {name: t, tanh}\n"
		"            - {name: s, add: [d, t, d]}\n"
		"            - {name: cut, slice: {start: 1, end: 3}}\n"
		"            - {dense: {units: 2, bias: false}}\n"));
	l.ops = &akk_layer_graph;
	l.spec = &s.gates[0].layers[0];
	l.in = s.input;
	if (l.ops->plan(&l, &e))
		fail_msg("%s", e.msg);
	float *p = calloc(l.nparams, sizeof(float));
	io.p = p;
	io.s = p;
	assert_int_equal(l.ops->export(&l, &g, &io, &e), 0);
	assert_string_equal(r.text,
		"init g1.l1.graph.d.dense.weight\n"
		"init g1.l1.graph.d.dense.bias\n"
		"Gemm(x, g1.l1.graph.d.dense.weight, g1.l1.graph.d.dense.bias) -> g1.l1.graph.d\n"
		"Tanh(g1.l1.graph.d) -> g1.l1.graph.t\n"
		"Add(g1.l1.graph.d, g1.l1.graph.t) -> g1.l1.graph.s.sum1\n"
		"Add(g1.l1.graph.s.sum1, g1.l1.graph.d) -> g1.l1.graph.s\n"
		"Constant() -> g1.l1.graph.cut.starts\n"
		"Constant() -> g1.l1.graph.cut.ends\n"
		"Constant() -> g1.l1.graph.cut.axes\n"
		"Slice(g1.l1.graph.s, g1.l1.graph.cut.starts, g1.l1.graph.cut.ends, g1.l1.graph.cut.axes) -> g1.l1.graph.cut\n"
		"init g1.l1.graph.n5.dense.weight\n"
		"Gemm(g1.l1.graph.cut, g1.l1.graph.n5.dense.weight) -> y\n");
	free(p);
	akk_layer_release(&l);
	akk_spec_release(&s);
}

/* --- training ------------------------------------------------------------- */

#define NET_HEAD "data: {train: {images: x, labels: y}}\n"			\
	"network:\n  input: [1, 8, 8]\n  gates:\n"

#define NET_TAIL "optimizer: {type: adam, lr: 0.01}\n"			\
	"schedule: {mode: %s, epochs: %d, batch_size: 16, concurrency: {train: %d, validation: 2}}\n"

/* A stride-2 block with a projection shortcut, then an identity block. */
static const char *resnet_yaml = NET_HEAD
	"    - layers:\n"
	"        - {conv2d: {filters: 4, kernel: 3, padding: 1}}\n"
	"        - relu\n"
	"        - residual:\n"
	"            layers:   [{conv2d: {filters: 6, kernel: 3, stride: 2, padding: 1}}, batchnorm, relu,\n"
	"                       {conv2d: {filters: 6, kernel: 3, padding: 1}}, batchnorm]\n"
	"            shortcut: [{conv2d: {filters: 6, kernel: 1, stride: 2}}, batchnorm]\n"
	"        - relu\n"
	"    - layers:\n"
	"        - residual: [{conv2d: {filters: 6, kernel: 3, padding: 1}}, batchnorm, relu,\n"
	"                     {conv2d: {filters: 6, kernel: 3, padding: 1}}, batchnorm]\n"
	"        - relu\n        - flatten\n        - {dense: 4}\n" NET_TAIL;

/* The same blocks as graphs. */
static const char *graphnet_yaml = NET_HEAD
	"    - layers:\n"
	"        - {conv2d: {filters: 4, kernel: 3, padding: 1}}\n"
	"        - relu\n"
	"        - graph:\n"
	"            - {conv2d: {filters: 6, kernel: 3, stride: 2, padding: 1}}\n"
	"            - batchnorm\n            - relu\n"
	"            - {conv2d: {filters: 6, kernel: 3, padding: 1}}\n"
	"            - {name: main, batchnorm}\n"
	"            - {name: proj, conv2d: {filters: 6, kernel: 1, stride: 2}, from: input}\n"
	"            - {name: pbn, batchnorm}\n"
	"            - {add: [main, pbn]}\n"
	"        - relu\n"
	"    - layers:\n"
	"        - graph:\n"
	"            - {conv2d: {filters: 6, kernel: 3, padding: 1}}\n"
	"            - batchnorm\n            - relu\n"
	"            - {conv2d: {filters: 6, kernel: 3, padding: 1}}\n"
	"            - {name: main, batchnorm}\n"
	"            - {add: [main, input]}\n"
	"        - relu\n        - flatten\n        - {dense: 4}\n" NET_TAIL;

/* Branches of an inception module, a slice and a residual block. */
static const char *inception_yaml = NET_HEAD
	"    - layers:\n"
	"        - graph:\n"
	"            nodes:\n"
	"              - {name: a, conv2d: {filters: 4, kernel: 1}}\n"
	"              - {name: b, conv2d: {filters: 4, kernel: 3, padding: 1}, from: input}\n"
	"              - {name: c, maxpool2d: {kernel: 3, stride: 1, padding: 1}, from: input}\n"
	"              - {name: cat, concat: [a, b, c]}\n"
	"              - relu\n"
	"    - layers:\n"
	"        - graph:\n"
	"            nodes:\n"
	"              - {name: half, slice: {start: 0, end: 4}}\n"
	"              - {name: r, residual: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, batchnorm, tanh]}\n"
	"              - {name: s, add: [half, r]}\n"
	"              - {concat: [s, input]}\n"
	"        - {maxpool2d: 2}\n        - flatten\n        - {dense: 4}\n" NET_TAIL;

static void setup(struct tu_net *f, const char *yaml, const char *mode,
		  int epochs, int K)
{
	char t[4096];

	snprintf(t, sizeof(t), yaml, mode, epochs, K);
	tu_net_setup(f, t);
}

static void assert_same_gates(const struct akk_gate *a, const struct akk_gate *b)
{
	assert_int_equal(a->plan->nparams, b->plan->nparams);
	assert_int_equal(a->plan->nstate, b->plan->nstate);
	assert_int_equal(a->step, b->step);
	assert_memory_equal(a->params, b->params, a->plan->nparams * sizeof(float));
	assert_memory_equal(a->state, b->state, a->plan->nstate * sizeof(float));
}

/* Two epochs of the sequential reference on the residual net and on the
 * same blocks written as graphs: every parameter and running statistic
 * equal to the bit, and the evaluation equal. */
static void residual_as_graph_bit_for_bit(void **state)
{
	struct tu_net a, b;
	struct akk_reference ra, rb;
	struct akk_err e = { 0 };
	double la, lb, aa, ab;

	(void)state;
	setup(&a, resnet_yaml, "flip-flop", 2, 1);
	setup(&b, graphnet_yaml, "flip-flop", 2, 1);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ra, &a.model, &a.train, &e), 0);
	assert_int_equal(akk_reference_init(&rb, &b.model, &b.train, &e), 0);
	for (int g = 0; g < a.model.ngates; g++)
		assert_same_gates(&ra.gates[g], &rb.gates[g]);	/* the init */
	for (long i = 0; i < 2 * 25; i++) {
		assert_int_equal(akk_reference_step(&ra, NULL, NULL, &e), 0);
		assert_int_equal(akk_reference_step(&rb, NULL, NULL, &e), 0);
	}
	for (int g = 0; g < a.model.ngates; g++)
		assert_same_gates(&ra.gates[g], &rb.gates[g]);
	assert_int_equal(akk_reference_evaluate(&ra, &a.val, &la, &aa, &e), 0);
	assert_int_equal(akk_reference_evaluate(&rb, &b.val, &lb, &ab, &e), 0);
	assert_memory_equal(&la, &lb, sizeof(la));
	assert_memory_equal(&aa, &ab, sizeof(aa));
	akk_reference_release(&ra);
	akk_reference_release(&rb);
	tu_net_release(&a);
	tu_net_release(&b);
}

/* The shipped configs/fashion-resnet-graph.yaml against
 * configs/fashion-resnet.yaml: three steps of the sequential reference
 * (batches of 128 synthetic 28x28 images, 10 classes), every parameter
 * and running statistic equal to the bit. */
static void shipped_resnet_as_graph(void **state)
{
	struct tu_net f[2];
	struct akk_reference r[2];
	const char *paths[2] = { "configs/fashion-resnet.yaml",
				 "configs/fashion-resnet-graph.yaml" };
	struct akk_err e = { 0 };

	(void)state;
	akk_blas_threads(1);
	for (int k = 0; k < 2; k++) {
		memset(&f[k], 0, sizeof(f[k]));
		if (akk_spec_load(&f[k].spec, paths[k], NULL, 0, &e) ||
		    akk_model_plan(&f[k].model, &f[k].spec, &e))
			fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
		tu_dataset(&f[k].train, 3 * 128, 28, 10, 7);
		tu_dataset(&f[k].val, 10, 28, 10, 9);
		assert_int_equal(akk_reference_init(&r[k], &f[k].model,
						    &f[k].train, &e), 0);
		for (int i = 0; i < 3; i++)
			assert_int_equal(akk_reference_step(&r[k], NULL, NULL, &e), 0);
	}
	assert_int_equal(f[0].model.nparams, 85426);
	for (int g = 0; g < f[0].model.ngates; g++) {
		assert_int_equal(r[0].gates[g].step, 3);
		assert_same_gates(&r[0].gates[g], &r[1].gates[g]);
	}
	for (int k = 0; k < 2; k++) {
		akk_reference_release(&r[k]);
		tu_net_release(&f[k]);
	}
}

static int run_actors(struct tu_net *f, struct akk_run *r,
		      struct akk_observer obs, struct akk_err *e)
{
	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = f->spec.sched.epochs,
		.blas_threads = 1, .obs = obs,
	};

	if (akk_run_init(r, &f->model, &f->train, &f->val, &cfg, e))
		return -1;
	return akk_run_train(r, e);
}

/* Flip-flop on two gates of graphs is bit for bit the reference. */
static void flipflop_equals_reference(void **state)
{
	struct tu_net f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };

	(void)state;
	setup(&f, inception_yaml, "flip-flop", 2, 1);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 2 * 25; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	if (run_actors(&f, &r, (struct akk_observer){ 0 }, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < f.model.ngates; g++) {
		assert_int_equal(r.gates[g].gate.step, 2 * 25);
		assert_same_gates(&r.gates[g].gate, &ref.gates[g]);
	}
	akk_run_release(&r);
	akk_reference_release(&ref);
	tu_net_release(&f);
}

struct final {
	int epochs;
	double loss0, loss, acc;
};

static int on_epoch(void *ctx, struct akk_run *r,
		    const struct akk_epoch_report *rep, struct akk_err *e)
{
	struct final *c = ctx;

	(void)r, (void)e;
	if (!strcmp(rep->phase, "final")) {
		c->acc = rep->val_acc;
		return 0;
	}
	if (!c->epochs++)
		c->loss0 = rep->train_loss;
	c->loss = rep->train_loss;
	return 0;
}

/* Wheels, four batches in flight with weight stashing, learns the
 * patterns through the graphs. */
static void wheels_learns(void **state)
{
	struct tu_net f;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct final c = { 0 };

	(void)state;
	setup(&f, inception_yaml, "wheels", 6, 4);
	if (run_actors(&f, &r, (struct akk_observer){ &c, NULL, on_epoch }, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.epochs, 6);
	for (int g = 0; g < f.model.ngates; g++)
		assert_int_equal(r.gates[g].gate.step, 6 * 25);
	assert_true(c.loss < 0.5 * c.loss0);
	assert_true(c.acc > 0.9);
	akk_run_release(&r);
	tu_net_release(&f);
}

/* Branches without batchnorm (a micro-batch's statistics would differ
 * from the batch's): an inception module, then a slice, a residual block
 * and a concat with the gate's input. */
static const char *branchy_yaml = NET_HEAD
	"    - layers:\n"
	"        - graph:\n"
	"            nodes:\n"
	"              - {name: a, conv2d: {filters: 4, kernel: 1}}\n"
	"              - {name: b, conv2d: {filters: 4, kernel: 3, padding: 1}, from: input}\n"
	"              - {name: c, maxpool2d: {kernel: 3, stride: 1, padding: 1}, from: input}\n"
	"              - {name: cat, concat: [a, b, c]}\n"
	"              - relu\n"
	"    - layers:\n"
	"        - graph:\n"
	"            nodes:\n"
	"              - {name: half, slice: {start: 0, end: 4}}\n"
	"              - {name: r, residual: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, tanh]}\n"
	"              - {name: s, add: [half, r]}\n"
	"              - {concat: [s, input]}\n"
	"        - {maxpool2d: 2}\n        - flatten\n        - {dense: 4}\n" NET_TAIL;

/* The relative 2-norm distance of two gates' parameters. */
static double gate_distance(const struct akk_gate *a, const struct akk_gate *b)
{
	double d2 = 0, n2 = 0;

	for (size_t i = 0; i < a->plan->nparams; i++) {
		double d = (double)a->params[i] - b->params[i];
		d2 += d * d;
		n2 += (double)b->params[i] * b->params[i];
	}
	return sqrt(d2 / n2);
}

/* The pipeline on graphs: each batch of 16 in 4 micro-batches through
 * both gates' graphs in 1F1B order, the chunks' gradients summed, equals
 * flip-flop within float rounding (1e-5 relative), step for step. */
static void pipeline_equals_flipflop(void **state)
{
	struct tu_net ff, fp;
	struct akk_run a, b;
	struct akk_err e = { 0 };

	(void)state;
	akk_blas_threads(1);
	setup(&ff, branchy_yaml, "flip-flop", 2, 1);
	setup(&fp, branchy_yaml, "pipeline, micro_batches: 4", 2, 1);
	if (run_actors(&ff, &a, (struct akk_observer){ 0 }, &e) ||
	    run_actors(&fp, &b, (struct akk_observer){ 0 }, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(b.sched.micro, 4);
	for (int g = 0; g < ff.model.ngates; g++) {
		assert_int_equal(b.gates[g].gate.step, 2 * 25);
		assert_int_equal(b.gates[g].forwards, 2L * 25 * 4);
		if (!(gate_distance(&b.gates[g].gate, &a.gates[g].gate) <= 1e-5))
			fail_msg("gate %d: pipeline and flip-flop differ by %g relative",
				 g + 1, gate_distance(&b.gates[g].gate, &a.gates[g].gate));
	}
	akk_run_release(&a);
	akk_run_release(&b);
	tu_net_release(&ff);
	tu_net_release(&fp);
}

/* gates: {auto: 2} over a flat list holding two graphs splits between
 * layers, each graph whole in one gate, and the gates it makes train bit
 * for bit as the sequential reference. */
static void auto_gates_keep_graphs_whole(void **state)
{
	static const char *flat =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n  input: [1, 8, 8]\n  gates: {auto: 2}\n  layers:\n"
		"    - {conv2d: {filters: 4, kernel: 3, padding: 1}}\n"
		"    - graph:\n"
		"        - {name: a, conv2d: {filters: 4, kernel: 1}}\n"
		"        - {name: b, conv2d: {filters: 4, kernel: 3, padding: 1}, from: input}\n"
		"        - {concat: [a, b]}\n"
		"    - relu\n"
		"    - graph:\n"
		"        - {name: m, conv2d: {filters: 8, kernel: 3, padding: 1}}\n"
		"        - {add: [m, input]}\n"
		"    - {maxpool2d: 2}\n    - flatten\n    - {dense: 4}\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 16}\n";
	struct tu_net f;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };
	int graphs = 0;

	(void)state;
	memset(&f, 0, sizeof(f));
	if (akk_spec_parse(&f.spec, flat, strlen(flat), "t.yaml", ".", NULL, 0, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(akk_balance(&f.spec, 0, NULL, &e), 0);
	assert_int_equal(f.spec.ngates, 2);
	for (int g = 0; g < 2; g++)
		for (int i = 0; i < f.spec.gates[g].nlayers; i++)
			graphs += f.spec.gates[g].layers[i].ops == &akk_layer_graph;
	assert_int_equal(graphs, 2);
	assert_int_equal(f.spec.gates[0].nlayers + f.spec.gates[1].nlayers, 7);
	if (akk_model_plan(&f.model, &f.spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&f.train, 400, 8, 4, 7);
	tu_dataset(&f.val, 100, 8, 4, 9);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &f.model, &f.train, &e), 0);
	for (long i = 0; i < 25; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	if (run_actors(&f, &r, (struct akk_observer){ 0 }, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < 2; g++)
		assert_same_gates(&r.gates[g].gate, &ref.gates[g]);
	akk_run_release(&r);
	akk_reference_release(&ref);
	tu_net_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses),
		cmocka_unit_test(errors),
		cmocka_unit_test(overrides),
		cmocka_unit_test(check_prints_nodes),
		cmocka_unit_test(grad_images),
		cmocka_unit_test(grad_vectors),
		cmocka_unit_test(grad_sequences),
		cmocka_unit_test(grad_nested),
		cmocka_unit_test(export_names),
		cmocka_unit_test(residual_as_graph_bit_for_bit),
		cmocka_unit_test(shipped_resnet_as_graph),
		cmocka_unit_test(flipflop_equals_reference),
		cmocka_unit_test(wheels_learns),
		cmocka_unit_test(pipeline_equals_flipflop),
		cmocka_unit_test(auto_gates_keep_graphs_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
