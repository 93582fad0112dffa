/* test_graph_svg.c - akkctl check --graph: the network drawn as a graph.
 *
 * The shipped Inception and ResNet configs (the ResNet written with
 * residual layers and as graph layers), a graph holding a residual block
 * and a graph, and a 30-layer chain are drawn through the library; the
 * SVG is read back (node rectangles with their gate, gate rectangles,
 * edge polylines) and checked for what defines the drawing: the node
 * and edge counts the config implies, every edge leaving a node's bottom
 * and entering the top of a node further down without passing through
 * any other node, each gate's rectangle holding exactly the nodes of its
 * gate, and no two nodes overlapping. The Inception picture is rendered
 * in headless Chromium (tests/render_svg.sh) and the PNG checked for the
 * gates' colours and for its four branches side by side. The command
 * itself: the file written whole, stdout with -, exit 2 naming the file
 * it cannot write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/spec.h"
#include "io/graph_svg.h"
#include "model/model.h"
#include "testutil.h"

#define MAX_NODES 256
#define MAX_EDGES 512
#define MAX_GATES 16

struct rect {
	double x, y, w, h;
};

struct node {
	struct rect r;
	int gate;		/* 0: the input or the loss */
	char label[96];		/* its first line */
};

struct edge {
	double p[8][2];
	int n;
};

struct drawing {
	double width, height;
	struct node nodes[MAX_NODES];
	int nnodes;
	struct rect gates[MAX_GATES];
	int ngates;
	struct edge edges[MAX_EDGES];
	int nedges;
};

/* ---- reading the SVG back ---------------------------------------------- */

static void read_rect(const char *p, struct rect *r)
{
	p = strstr(p, "<rect ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"",
				&r->x, &r->y, &r->w, &r->h), 4);
}

static void parse(const char *svg, struct drawing *d)
{
	const char *p;

	memset(d, 0, sizeof(*d));
	p = strstr(svg, "<svg ");
	assert_non_null(p);
	assert_int_equal(sscanf(strstr(p, "width="), "width=\"%lf\" height=\"%lf\"",
				&d->width, &d->height), 2);
	for (p = svg; (p = strstr(p, "<g class=\"gate gate-")); p++) {
		int g = atoi(p + strlen("<g class=\"gate gate-"));
		assert_int_equal(g, d->ngates + 1);	/* in order, from 1 */
		assert_true(d->ngates < MAX_GATES);
		read_rect(p, &d->gates[d->ngates++]);
	}
	for (p = svg; (p = strstr(p, "<g class=\"node gate-")); p++) {
		struct node *n = &d->nodes[d->nnodes];
		const char *t;
		assert_true(d->nnodes < MAX_NODES);
		n->gate = atoi(p + strlen("<g class=\"node gate-"));
		read_rect(p, &n->r);
		t = strchr(strstr(p, "<text "), '>') + 1;
		snprintf(n->label, sizeof(n->label), "%.*s", (int)(strchr(t, '<') - t), t);
		d->nnodes++;
	}
	for (p = svg; (p = strstr(p, "<polyline class=\"edge\"")); p++) {
		struct edge *ed = &d->edges[d->nedges];
		const char *q = strstr(p, "points=\"") + strlen("points=\"");
		int k;
		assert_true(d->nedges < MAX_EDGES);
		while (*q != '"') {
			assert_true(ed->n < 8);
			assert_int_equal(sscanf(q, "%lf,%lf%n", &ed->p[ed->n][0], &ed->p[ed->n][1], &k), 2);
			ed->n++;
			q += k;
			while (*q == ' ' || *q == '\n')
				q++;
		}
		assert_true(ed->n >= 2);
		d->nedges++;
	}
}

/* ---- what every drawing must hold ------------------------------------- */

static int inside(const struct rect *in, const struct rect *out)
{
	return in->x >= out->x && in->y >= out->y && in->x + in->w <= out->x + out->w &&
	       in->y + in->h <= out->y + out->h;
}

static int overlap(const struct rect *a, const struct rect *b)
{
	return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h &&
	       b->y < a->y + a->h;
}

/* The node whose bottom (bottom != 0) or top centre is at (x, y), -1: none. */
static int node_at(const struct drawing *d, double x, double y, int bottom)
{
	for (int i = 0; i < d->nnodes; i++) {
		const struct rect *r = &d->nodes[i].r;
		if (fabs(r->x + r->w / 2 - x) < 0.11 &&
		    fabs(r->y + (bottom ? r->h : 0) - y) < 0.11)
			return i;
	}
	return -1;
}

/* Whether the segment a-b passes through the inside of node i (its
 * border excepted), sampled every pixel. */
static int crosses(const struct drawing *d, int i, const double a[2], const double b[2])
{
	const struct rect *r = &d->nodes[i].r;
	int steps = (int)ceil(hypot(b[0] - a[0], b[1] - a[1])) + 1;

	for (int k = 0; k <= steps; k++) {
		double x = a[0] + (b[0] - a[0]) * k / steps, y = a[1] + (b[1] - a[1]) * k / steps;
		if (x > r->x + 0.5 && x < r->x + r->w - 0.5 && y > r->y + 0.5 &&
		    y < r->y + r->h - 0.5)
			return 1;
	}
	return 0;
}

/* The checks of the header, with the counts the config implies: nodes,
 * edges, and the nodes of each gate (per_gate[0] for gate 1, ngates of
 * them). */
static void check_drawing(const struct drawing *d, int nodes, int edges,
			  const int *per_gate, int ngates)
{
	assert_int_equal(d->nnodes, nodes);
	assert_int_equal(d->nedges, edges);
	assert_int_equal(d->ngates, ngates);
	for (int i = 0; i < d->nnodes; i++) {
		const struct node *n = &d->nodes[i];
		assert_true(n->r.x >= 0 && n->r.y >= 0 && n->r.x + n->r.w <= d->width &&
			    n->r.y + n->r.h <= d->height);
		for (int j = 0; j < i; j++)
			if (overlap(&n->r, &d->nodes[j].r))
				fail_msg("nodes %d '%s' and %d '%s' overlap", j, d->nodes[j].label,
					 i, n->label);
	}
	/* each gate's rectangle holds exactly its nodes */
	for (int g = 1; g <= ngates; g++) {
		int count = 0;
		for (int i = 0; i < d->nnodes; i++) {
			const struct node *n = &d->nodes[i];
			if (n->gate == g) {
				count++;
				if (!inside(&n->r, &d->gates[g - 1]))
					fail_msg("node %d '%s' of gate %d is outside its rectangle",
						 i, n->label, g);
			} else if (overlap(&n->r, &d->gates[g - 1])) {
				fail_msg("node %d '%s' of gate %d is in gate %d's rectangle",
					 i, n->label, n->gate, g);
			}
		}
		assert_int_equal(count, per_gate[g - 1]);
		for (int h = 1; h < g; h++)
			assert_false(overlap(&d->gates[h - 1], &d->gates[g - 1]));
	}
	/* an edge leaves a node's bottom and enters the top of a node in a
	 * later row, going down, through no node on its way */
	for (int k = 0; k < d->nedges; k++) {
		const struct edge *ed = &d->edges[k];
		int a = node_at(d, ed->p[0][0], ed->p[0][1], 1);
		int b = node_at(d, ed->p[ed->n - 1][0], ed->p[ed->n - 1][1], 0);
		if (a < 0 || b < 0)
			fail_msg("edge %d does not join two nodes", k);
		assert_true(d->nodes[b].r.y > d->nodes[a].r.y + d->nodes[a].r.h);
		for (int s = 1; s < ed->n; s++) {
			assert_true(ed->p[s][1] >= ed->p[s - 1][1]);
			for (int i = 0; i < d->nnodes; i++)
				if (crosses(d, i, ed->p[s - 1], ed->p[s]))
					fail_msg("edge %d from '%s' to '%s' runs through '%s'", k,
						 d->nodes[a].label, d->nodes[b].label, d->nodes[i].label);
		}
	}
}

/* ---- drawing a config --------------------------------------------------- */

static char g_dir[512];

/* The SVG of the config at path (or of text, when not NULL), written to
 * dir/name too; the text is allocated. */
static char *draw(const char *path, const char *text, const char *name)
{
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_graph_layout gl;
	struct akk_err e = { 0 };
	const char *out = tu_path(g_dir, name);
	FILE *f;
	int rc = text ? akk_spec_parse(&s, text, strlen(text), name, g_dir, NULL, 0, &e) :
		akk_spec_load(&s, path, NULL, 0, &e);

	if (rc || akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_non_null(f = fopen(out, "w"));
	if (akk_graph_layout(&gl, &m, &e) || akk_graph_svg(f, &gl, name, out, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(fclose(f), 0);
	akk_graph_layout_release(&gl);
	akk_model_release(&m);
	akk_spec_release(&s);
	return tu_slurp(out, NULL);
}

static const struct node *find(const struct drawing *d, const char *label, int after)
{
	for (int i = after; i < d->nnodes; i++)
		if (!strcmp(d->nodes[i].label, label))
			return &d->nodes[i];
	fail_msg("no node '%s'", label);
	return NULL;
}

/* Edges ending at the top of node n. */
static int edges_into(const struct drawing *d, const struct node *n)
{
	int c = 0;

	for (int k = 0; k < d->nedges; k++) {
		const double *p = d->edges[k].p[d->edges[k].n - 1];
		c += fabs(p[0] - (n->r.x + n->r.w / 2)) < 0.11 && fabs(p[1] - n->r.y) < 0.11;
	}
	return c;
}

/* configs/fashion-inception.yaml: the input, gate 1's 4 layers and its
 * graph's 23 nodes, gate 2's max pool, graph (23), global pool and dense,
 * the loss: 55 nodes. Edges: one into every node but the input and the
 * two concats, four into each concat: 52 + 8 = 60. The four branches of
 * each module stand in one row, side by side. */
static void inception(void **state)
{
	static struct drawing d;
	char *svg = draw("configs/fashion-inception.yaml", NULL, "inception.svg");
	const struct node *b[4];
	const char *heads[4] = { "b1: conv2d", "b2: conv2d", "b3: conv2d", "b4: maxpool2d" };

	(void)state;
	parse(svg, &d);
	check_drawing(&d, 55, 60, (const int[]){ 27, 26 }, 2);
	for (int m = 0, after = 0; m < 2; m++) {
		for (int k = 0; k < 4; k++) {
			b[k] = find(&d, heads[k], after);
			assert_true(b[k]->r.y == b[0]->r.y);
			for (int j = 0; j < k; j++)
				assert_true(b[k]->r.x != b[j]->r.x);
		}
		after = (int)(find(&d, "out: concat", after) - d.nodes);
		assert_int_equal(edges_into(&d, &d.nodes[after]), 4);
		assert_int_equal(d.nodes[after].gate, m + 1);
		after++;
	}
	/* the kind, main options and shape of a node; the loss at the end */
	tu_assert_contains(svg, ">b2: conv2d</text>\n<text x=\"");
	tu_assert_contains(svg, ">filters 16, kernel 1, bias false</text>");
	tu_assert_contains(svg, ">kernel 3, stride 1, padding 1</text>");
	tu_assert_contains(svg, ">4 inputs on channels</text>");
	tu_assert_contains(svg, ">[64, 14, 14]</text>");
	assert_string_equal(d.nodes[0].label, "input");
	assert_string_equal(d.nodes[d.nnodes - 1].label, "loss");
	tu_assert_contains(svg, ">softmax_cross_entropy</text>");
	/* standalone: nothing fetched, nothing run */
	tu_assert_not_contains(svg, "<script");
	tu_assert_not_contains(svg, "href");
	tu_assert_not_contains(svg, "url(");
	free(svg);
}

/* configs/fashion-resnet.yaml: the input, gate 1's 4 layers, a block of
 * 5 and its add, relu (11 in gate 1); gate 2's projected block (5, 2 in
 * the shortcut, the add), relu, a block of 5 and its add, relu, global
 * pool, dense (18); the loss: 31 nodes, and 30 edges in plus one more
 * into each of the 3 adds. The same network written as graph layers
 * draws the same. Each identity shortcut runs beside its block. */
static void residual(void **state)
{
	static struct drawing d;
	const char *paths[] = { "configs/fashion-resnet.yaml", "configs/fashion-resnet-graph.yaml" };

	(void)state;
	for (int k = 0; k < 2; k++) {
		char *svg = draw(paths[k], NULL, k ? "resnet-graph.svg" : "resnet.svg");
		const struct node *add;
		parse(svg, &d);
		check_drawing(&d, 31, 33, (const int[]){ 11, 18 }, 2);
		add = find(&d, "add", 0);
		assert_int_equal(edges_into(&d, add), 2);
		free(svg);
	}
}

/* Gates side by side (each branch of configs/fashion-inception-gates.yaml
 * on a gate of its own) or one above another: no two gates' rectangles
 * overlap, and each holds its own nodes. */
static void gates_never_overlap(void **state)
{
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_graph_layout gl;
	struct akk_err e = { 0 };

	(void)state;
	if (akk_spec_load(&s, "configs/fashion-inception-gates.yaml", NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(akk_graph_layout(&gl, &m, &e), 0);
	assert_int_equal(gl.ngates, 11);
	for (int a = 0; a < gl.ngates; a++)
		for (int b = a + 1; b < gl.ngates; b++) {
			const struct akk_graph_box *x = &gl.gates[a], *y = &gl.gates[b];
			if (x->x < y->x + y->w && y->x < x->x + x->w &&
			    x->y < y->y + y->h && y->y < x->y + x->h)
				fail_msg("gates %d and %d overlap", a + 1, b + 1);
		}
	for (int i = 0; i < gl.nv; i++) {
		const struct akk_graph_box *v = &gl.v[i].box, *g;
		if (!gl.v[i].gate)
			continue;
		g = &gl.gates[gl.v[i].gate - 1];
		assert_true(v->x >= g->x && v->x + v->w <= g->x + g->w &&
			    v->y >= g->y && v->y + v->h <= g->y + g->h);
	}
	akk_graph_layout_release(&gl);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* network.outputs: the loss node names each head's loss and its weight
 * when it is not 1. */
static void heads(void **state)
{
	char *svg = draw("configs/fashion-two-heads.yaml", NULL, "heads.svg");

	(void)state;
	tu_assert_contains(svg, ">class softmax_cross_entropy<");
	tu_assert_contains(svg, ">image mse x 4<");
	free(svg);
}

/* Composites inside a graph: a residual block (3 layers and its add)
 * and a graph (2 layers and a concat) side by side, joined by a concat;
 * flatten and dense after, each composite's name on its output
 * node. 1 + 4 + 3 + 1 + 2 + 1 = 12 nodes; edges:
 * 11, one into each but the input, and one more into the add and each
 * of the 2 concats: 14. */
static void nested(void **state)
{
	static struct drawing d;
	char *svg = draw(NULL,
		"data: {train: {images: train-images, labels: train-labels}}\n"
		"network:\n  input: [2, 4, 4]\n  gates:\n"
		"    - layers:\n        - graph:\n            nodes:\n"
		"              - {name: r, residual: [{conv2d: {filters: 2, kernel: 3, padding: 1}}, batchnorm, tanh]}\n"
		"              - {name: g, graph: [{conv2d: {filters: 3, kernel: 1}}, {name: u, sigmoid}, {concat: [u, input]}], from: input}\n"
		"              - {name: out, concat: [r, g]}\n"
		"        - flatten\n        - {dense: 3}\n"
		"optimizer: {type: adam, lr: 0.01}\n", "nested.svg");

	(void)state;
	parse(svg, &d);
	check_drawing(&d, 12, 14, (const int[]){ 10 }, 1);
	assert_int_equal(edges_into(&d, find(&d, "out: concat", 0)), 2);
	/* a composite node's name on its output */
	assert_int_equal(edges_into(&d, find(&d, "r: add", 0)), 2);
	assert_int_equal(edges_into(&d, find(&d, "g: concat", 0)), 2);
	free(svg);
}

/* A chain of 30 layers in 3 gates is one column: every node at the same
 * x, one row each, the picture as tall as it needs (it scrolls). */
static void long_chain(void **state)
{
	static struct drawing d;
	static char yaml[8192];
	size_t n = 0;
	char *svg;

	(void)state;
	n += snprintf(yaml + n, sizeof(yaml) - n,
		      "data: {train: {images: train-images, labels: train-labels}}\n"
		      "network:\n  input: [8]\n  gates:\n");
	for (int g = 0; g < 3; g++) {
		n += snprintf(yaml + n, sizeof(yaml) - n, "    - layers:\n");
		for (int i = 0; i < 5; i++)
			n += snprintf(yaml + n, sizeof(yaml) - n, "        - {dense: %d}\n        - relu\n",
				      8 + g);
	}
	snprintf(yaml + n, sizeof(yaml) - n, "optimizer: {type: adam, lr: 0.01}\n");
	svg = draw(NULL, yaml, "chain.svg");
	parse(svg, &d);
	check_drawing(&d, 32, 31, (const int[]){ 10, 10, 10 }, 3);
	for (int i = 1; i < d.nnodes; i++) {
		assert_true(d.nodes[i].r.x == d.nodes[0].r.x);
		assert_true(d.nodes[i].r.y > d.nodes[i - 1].r.y + d.nodes[i - 1].r.h);
	}
	assert_true(d.width < 2 * d.nodes[0].r.w + d.nodes[0].r.x);
	free(svg);
}

/* The Inception picture as a browser shows it: not blank, text, both
 * gates' outline and fill colours; and across the middle of the first
 * module's branch heads, the outlines of four boxes and of the gate (ten
 * runs of gate 1's blue): a drawing with its branches on top of each
 * other shows four. */
static void renders(void **state)
{
	static struct drawing d;
	const char *path = tu_path(g_dir, "inception-render.svg");
	char *svg = draw("configs/fashion-inception.yaml", NULL, "inception-render.svg");
	struct tu_png img;
	const struct node *b1;
	int runs = 0, in = 0, w, h;

	(void)state;
	parse(svg, &d);
	w = (int)d.width;
	h = (int)d.height;
	tu_assert_renders(path, w, h, 0.2, 8, (const unsigned[]){
		0x222222, 0x1f77b4, 0xff7f0e, 0xdbe9f3, 0xffebd8, 0 });
	if (tu_render(path, w, h, &img)) {
		free(svg);
		return;
	}
	b1 = find(&d, "b1: conv2d", 0);
	for (int x = 0; x < w; x++) {
		const unsigned char *p = img.px + ((size_t)(b1->r.y + b1->r.h / 2) * img.w + x) * img.ch;
		/* an outline of gate 1 (#1f77b4), anti-aliased over white or
		 * the gate's fill (#dbe9f3, blue - red 24): blue - red > 60 */
		int blue = p[2] - p[0] > 60;
		runs += blue && !in;
		in = blue;
	}
	free(img.px);
	if (runs != 10)
		fail_msg("%d runs of gate 1's colour across the branch heads, expected 10", runs);
	free(svg);
}

/* ---- the command ----------------------------------------------------- */

static char g_out[1 << 17], g_err[1 << 14];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static const char *small_config(void)
{
	const char *yaml =
		"name: \"x<&>'y\"\n"
		"data: {train: {images: train-images, labels: train-labels}}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n"
		"    - layers:\n"
		"        - graph:\n"
		"            - {name: a, conv2d: {filters: 2, kernel: 3, padding: 1}}\n"
		"            - {name: t, tanh, from: input}\n"
		"            - {concat: [a, t]}\n"
		"        - flatten\n        - {dense: 4}\n"
		"optimizer: {type: adam, lr: 0.01}\n";
	const char *path = tu_path(g_dir, "small.yaml");

	tu_write_set(g_dir, "train", 20, 8, 4, 1);
	assert_int_equal(tu_write_file(path, yaml, strlen(yaml)), 0);
	return path;
}

/* The file written whole, said on stderr; the plan still printed; the
 * config's name escaped in the title. */
static void command_writes(void **state)
{
	char cfg[600], svgpath[600], line[700];
	char *svg;

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s", small_config());
	snprintf(svgpath, sizeof(svgpath), "%s", tu_path(g_dir, "small.svg"));
	assert_int_equal(ak("check", cfg, "--graph", svgpath, NULL), 0);
	snprintf(line, sizeof(line), "wrote '%s'", svgpath);
	tu_assert_line(g_err, line);
	tu_assert_contains(g_out, "gate  layer");
	assert_non_null(svg = tu_slurp(svgpath, NULL));
	tu_assert_prefix(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ");
	tu_assert_contains(svg, ">a: conv2d</text>");
	tu_assert_contains(svg, "<title>x&lt;&amp;&gt;&apos;y: 1 gate, input [1, 8, 8], 792 parameters</title>");
	tu_assert_contains(svg, "</svg>\n");
	free(svg);
	if (system("command -v xmllint >/dev/null 2>&1") == 0) {
		const char *argv[] = { "xmllint", "--noout", svgpath, NULL };
		if (tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)))
			fail_msg("xmllint rejects %s:\n%s", svgpath, g_err);
	} else {
		fprintf(stderr, "SKIP xmllint check: no xmllint (Debian: libxml2-utils)\n");
	}
	/* - : the picture on stdout, no plan */
	assert_int_equal(ak("check", cfg, "--graph", "-", NULL), 0);
	tu_assert_prefix(g_out, "<?xml");
	tu_assert_not_contains(g_out, "gate  layer");
	tu_assert_contains(g_out, ">t: tanh</text>");
}

/* A file that cannot be written: exit 2, the file named; nothing left. */
static void command_write_error(void **state)
{
	char cfg[600], bad[600];

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s", small_config());
	snprintf(bad, sizeof(bad), "%s", tu_path(g_dir, "no-such-dir/g.svg"));
	assert_int_equal(ak("check", cfg, "--graph", bad, NULL), 2);
	tu_assert_prefix(g_err, "akkctl: cannot create '");
	tu_assert_contains(g_err, bad);
	assert_false(tu_exists(bad));
	assert_int_equal(ak("check", cfg, "--graph", NULL), 2);
}

/* The picture the README shows is what its command draws now. */
static void readme_picture(void **state)
{
	char *readme = tu_slurp("README.md", NULL), *shipped = tu_slurp("docs/graph.svg", NULL);
	char *now;
	const char *path = tu_path(g_dir, "readme-graph.svg");

	(void)state;
	assert_non_null(readme);
	assert_non_null(shipped);
	tu_assert_contains(readme, "![the network of configs/fashion-inception.yaml](docs/graph.svg)");
	tu_assert_contains(readme, "`./akkctl check configs/fashion-inception.yaml --graph docs/graph.svg`");
	/* exit 0, or 2 without the Fashion-MNIST files: the picture is
	 * drawn before the data are looked at */
	(void)ak("check", "configs/fashion-inception.yaml", "--graph", path, NULL);
	assert_non_null(now = tu_slurp(path, NULL));
	assert_string_equal(shipped, now);
	free(now);
	free(shipped);
	free(readme);
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(inception),
		cmocka_unit_test(residual),
		cmocka_unit_test(nested),
		cmocka_unit_test(heads),
		cmocka_unit_test(gates_never_overlap),
		cmocka_unit_test(long_chain),
		cmocka_unit_test(renders),
		cmocka_unit_test(command_writes),
		cmocka_unit_test(command_write_error),
		cmocka_unit_test(readme_picture),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
