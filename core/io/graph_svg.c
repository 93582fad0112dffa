/* graph_svg.c - a planned network flattened into vertices and edges, laid
 * out in rows and lanes, and drawn as SVG (graph_svg.h says how). */
#include "io/graph_svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/svg.h"
#include "nn/layer_graph.h"

/* Sizes, user units. A lane is a column of vertices; a row a band of
 * them, ROW_GAP apart (the room edges bend in). */
#define NODE_W 210.0
#define NODE_H 64.0
#define LANE_GAP 34.0
#define ROW_GAP 30.0
#define LEFT_W 12.0	/* left of the first lane: room for a gate's rectangle */
#define GATE_PAD 8.0	/* a gate's rectangle around its nodes, under half
			 * LANE_GAP: gates side by side never overlap */
#define LABEL_H 22.0	/* above its first node: its label, under ROW_GAP
			 * less GATE_PAD: gates one above the other neither */
#define MARGIN 16.0
#define TOP 48.0	/* the title's band */
#define PARAM_CHARS 34	/* of the options on one line of a vertex */

#define C_TEXT "#222222"
#define C_EDGE "#555555"
#define C_PLAIN "#888888"	/* the input's and the loss's outline */

/* The gates' colours: the palette the learning curves use (matplotlib's
 * tab10), one per gate in turn. */
static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define NPALETTE (int)(sizeof(palette) / sizeof(palette[0]))

static double lane_x(int lane)
{
	return MARGIN + LEFT_W + lane * (NODE_W + LANE_GAP);
}

static double row_y(int row)
{
	return TOP + row * (NODE_H + ROW_GAP);
}

/* ---- flattening --------------------------------------------------------- */

static int new_edge(struct akk_graph_layout *gl, int from, int to,
		    struct akk_err *e)
{
	if (gl->ne == gl->cape) {
		int cap = gl->cape ? 2 * gl->cape : 64;
		struct akk_graph_edge *p = realloc(gl->ed, (size_t)cap * sizeof(*p));
		if (!p)
			return akk_err_set(e, "out of memory");
		gl->ed = p;
		gl->cape = cap;
	}
	gl->ed[gl->ne++] = (struct akk_graph_edge){ from, to, 0 };
	return 0;
}

/* A vertex reading preds (npreds of them, each an earlier vertex): its
 * index, or -1 with e filled. Its row is one below its lowest input. */
static int new_vertex(struct akk_graph_layout *gl, const char *kind,
		      const char *name, const char *params, const char *shape,
		      int gate, const int *preds, int npreds, struct akk_err *e)
{
	struct akk_graph_vertex *v;
	int id = gl->nv;

	if (gl->nv == gl->capv) {
		int cap = gl->capv ? 2 * gl->capv : 64;
		struct akk_graph_vertex *p = realloc(gl->v, (size_t)cap * sizeof(*p));
		if (!p)
			return akk_err_set(e, "out of memory");
		gl->v = p;
		gl->capv = cap;
	}
	v = &gl->v[gl->nv++];
	*v = (struct akk_graph_vertex){ .gate = gate, .first_in = -1 };
	snprintf(v->kind, sizeof(v->kind), "%s", kind);
	snprintf(v->name, sizeof(v->name), "%s", name ? name : "");
	snprintf(v->params, sizeof(v->params), "%s", params ? params : "");
	snprintf(v->shape, sizeof(v->shape), "%s", shape ? shape : "");
	for (int k = 0; k < npreds; k++) {
		if (k == 0)
			v->first_in = gl->ne;
		if (new_edge(gl, preds[k], id, e))
			return -1;
		if (gl->v[preds[k]].row + 1 > v->row)
			v->row = gl->v[preds[k]].row + 1;
	}
	if (v->row + 1 > gl->rows)
		gl->rows = v->row + 1;
	return id;
}

/* The options of a layer worth showing: the required ones and those not
 * at their default, "name value" joined by ", " into buf. */
static void describe(const struct akk_layer_spec *sp, char *buf, size_t size)
{
	const struct akk_layer_option *o = sp->ops->options;
	size_t n = 0;

	buf[0] = 0;
	for (; o && o->name && n < size; o++) {
		const char *p = (const char *)sp + o->off, *sep = n ? ", " : "";
		int iv = *(const int *)p;
		float fv = *(const float *)p;
		int w = 0;

		switch (o->type) {
		case AKK_OPTION_FLOAT:
			if ((o->flags & AKK_OPTION_REQ) || fv != (float)o->def)
				w = snprintf(buf + n, size - n, "%s%s %g", sep, o->name, (double)fv);
			break;
		case AKK_OPTION_BOOL:
			if ((o->flags & AKK_OPTION_REQ) || iv != (int)o->def)
				w = snprintf(buf + n, size - n, "%s%s %s", sep, o->name,
					     iv ? "true" : "false");
			break;
		case AKK_OPTION_INIT:
			if (iv != (int)o->def)
				w = snprintf(buf + n, size - n, "%s%s %s", sep, o->name,
					     akk_init_names[iv]);
			break;
		case AKK_OPTION_NAME:
			if (iv != (int)o->def)
				w = snprintf(buf + n, size - n, "%s%s %s", sep, o->name,
					     o->names[iv]);
			break;
		case AKK_OPTION_SHAPE: {
			char sh[64];
			akk_shape_format(*(const struct akk_shape *)p, sh, sizeof(sh));
			w = snprintf(buf + n, size - n, "%s%s %s", sep, o->name, sh);
			break;
		}
		default:
			if ((o->flags & AKK_OPTION_REQ) || iv != (int)o->def)
				w = snprintf(buf + n, size - n, "%s%s %d", sep, o->name, iv);
		}
		n += w > 0 ? (size_t)w : 0;
	}
}

static int add_layer(struct akk_graph_layout *gl, const struct akk_layer *l,
		     int gate, int in, const char *name, int *out,
		     struct akk_err *e);

/* A graph layer's nodes in topological order; *out its output node. */
static int add_graph(struct akk_graph_layout *gl, const struct akk_layer *l,
		     int gate, int in, int *out, struct akk_err *e)
{
	const struct akk_graph_spec *g = l->spec->graph;
	int *id = malloc((size_t)g->nnodes * sizeof(*id)), rc = -1;
	int preds[AKK_GRAPH_MAX_JOIN];

	if (!id)
		return akk_err_set(e, "out of memory");
	for (int k = 0; k < g->nnodes; k++) {
		int i = g->order[k];
		const struct akk_graph_node *n = &g->nodes[i];
		char params[64] = "", shape[64];

		for (int m = 0; m < n->nfrom && m < AKK_GRAPH_MAX_JOIN; m++)
			preds[m] = n->from[m] == AKK_GRAPH_INPUT ? in : id[n->from[m]];
		if (n->op == AKK_GRAPH_LAYER) {
			if (add_layer(gl, &l->sub[i], gate, preds[0], n->name, &id[i], e))
				goto out;
			continue;
		}
		if (n->op == AKK_GRAPH_SLICE)
			snprintf(params, sizeof(params), "channels %d to %d",
				 n->start, n->end - 1);
		else if (n->op == AKK_GRAPH_CONCAT)
			snprintf(params, sizeof(params), "%d inputs on channels", n->nfrom);
		else
			snprintf(params, sizeof(params), "%d inputs", n->nfrom);
		akk_shape_format(l->sub[i].out, shape, sizeof(shape));
		id[i] = new_vertex(gl, akk_graph_node_kind(l->spec, i), n->name, params,
				   shape, gate, preds, n->nfrom, e);
		if (id[i] < 0)
			goto out;
	}
	*out = id[g->output];
	rc = 0;
out:
	free(id);
	return rc;
}

/* A residual block: the inner chain and the shortcut chain side by
 * side from in, joined by an add; *out the add. */
static int add_residual(struct akk_graph_layout *gl, const struct akk_layer *l,
			int gate, int in, int *out, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int a = in, b = in, preds[2];
	char shape[64];

	for (int i = 0; i < sp->ninner; i++)
		if (add_layer(gl, &l->sub[i], gate, a, NULL, &a, e))
			return -1;
	for (int i = 0; i < sp->nshort; i++)
		if (add_layer(gl, &l->sub[sp->ninner + i], gate, b, NULL, &b, e))
			return -1;
	preds[0] = a;
	preds[1] = b;
	akk_shape_format(l->out, shape, sizeof(shape));
	*out = new_vertex(gl, "add", NULL, sp->nshort ? "residual, projected shortcut" :
			  "residual, identity shortcut", shape, gate, preds, 2, e);
	return *out < 0 ? -1 : 0;
}

static int add_layer(struct akk_graph_layout *gl, const struct akk_layer *l,
		     int gate, int in, const char *name, int *out,
		     struct akk_err *e)
{
	char params[128], shape[64];
	int rc;

	if (l->ops == &akk_layer_graph || l->ops == &akk_layer_residual) {
		rc = l->ops == &akk_layer_graph ? add_graph(gl, l, gate, in, out, e) :
			add_residual(gl, l, gate, in, out, e);
		/* a composite graph node's name goes to its output, unless
		 * that has a name of its own */
		if (!rc && name && name[0] && !gl->v[*out].name[0])
			snprintf(gl->v[*out].name, sizeof(gl->v[*out].name), "%s", name);
		return rc;
	}
	describe(l->spec, params, sizeof(params));
	akk_shape_format(l->out, shape, sizeof(shape));
	*out = new_vertex(gl, l->ops->name, name, params, shape, gate, &in, 1, e);
	return *out < 0 ? -1 : 0;
}

/* ---- layout ------------------------------------------------------------- */

/* The lane of every vertex and edge. busy[L] is the last row lane L is
 * taken down to: a vertex takes its row, an edge the rows below its
 * source down to its target's (so its target may sit in it). */
static int assign_lanes(struct akk_graph_layout *gl, struct akk_err *e)
{
	int cap = gl->nv + gl->ne + 1, *busy = malloc((size_t)cap * sizeof(*busy));

	if (!busy)
		return akk_err_set(e, "out of memory");
	for (int L = 0; L < cap; L++)
		busy[L] = -1;
	gl->lanes = 1;
	for (int i = 0; i < gl->nv; i++) {
		struct akk_graph_vertex *v = &gl->v[i];
		int first = 1;

		v->lane = v->first_in >= 0 ? gl->ed[v->first_in].lane : 0;
		/* an input (named inputs: several) takes the first lane free
		 * at its row */
		while (v->first_in < 0 && busy[v->lane] >= v->row)
			v->lane++;
		if (busy[v->lane] < v->row)
			busy[v->lane] = v->row;
		for (int k = 0; k < gl->ne; k++) {
			struct akk_graph_edge *ed = &gl->ed[k];
			int L = v->lane;
			if (ed->from != i)
				continue;
			/* the first edge out keeps the vertex's lane when no
			 * other edge took it below; the others go right */
			if (!first || busy[L] > v->row)
				for (L = v->lane + 1; busy[L] > v->row; L++)
					;
			first = 0;
			busy[L] = gl->v[ed->to].row;
			ed->lane = L;
			if (L + 1 > gl->lanes)
				gl->lanes = L + 1;
		}
	}
	free(busy);
	return 0;
}

/* The vertices' boxes, the gates' rectangles (their vertices and the
 * lanes their edges run down, and room for the label) and the size. */
static int place(struct akk_graph_layout *gl, int ngates, struct akk_err *e)
{
	gl->ngates = ngates;
	if (ngates && !(gl->gates = calloc((size_t)ngates, sizeof(*gl->gates))))
		return akk_err_set(e, "out of memory");
	for (int i = 0; i < gl->nv; i++) {
		struct akk_graph_vertex *v = &gl->v[i];
		v->box = (struct akk_graph_box){ lane_x(v->lane), row_y(v->row), NODE_W, NODE_H };
	}
	for (int g = 1; g <= ngates; g++) {
		double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
		for (int i = 0; i < gl->nv; i++) {
			const struct akk_graph_box *b = &gl->v[i].box;
			if (gl->v[i].gate != g)
				continue;
			x0 = fmin(x0, b->x);
			x1 = fmax(x1, b->x + b->w);
			y0 = fmin(y0, b->y);
			y1 = fmax(y1, b->y + b->h);
		}
		/* the lanes of its own edges; an edge from another gate
		 * runs outside it (gates side by side never overlap) */
		for (int k = 0; k < gl->ne; k++)
			if (gl->v[gl->ed[k].to].gate == g && gl->v[gl->ed[k].from].gate == g) {
				x0 = fmin(x0, lane_x(gl->ed[k].lane));
				x1 = fmax(x1, lane_x(gl->ed[k].lane) + NODE_W);
			}
		if (y0 > y1)	/* a gate without layers cannot be planned */
			continue;
		gl->gates[g - 1] = (struct akk_graph_box){ x0 - GATE_PAD, y0 - LABEL_H,
							   x1 - x0 + 2 * GATE_PAD,
							   y1 - y0 + LABEL_H + GATE_PAD };
	}
	gl->width = lane_x(gl->lanes) - LANE_GAP + 10 + MARGIN;
	gl->height = row_y(gl->rows) - ROW_GAP + MARGIN;
	return 0;
}

/* The loss node's text: the loss, or each head's "NAME LOSS" (" x W"
 * when its weight is not 1), joined by ", " (network.outputs). */
static void loss_label(const struct akk_spec *s, char *buf, size_t size)
{
	size_t n = 0;

	if (!s->nheads) {
		snprintf(buf, size, "%s", akk_loss_name(s->loss));
		return;
	}
	buf[0] = 0;
	for (int i = 0; i < s->nheads && n < size; i++) {
		const struct akk_head_spec *h = &s->heads[i];
		int w = snprintf(buf + n, size - n, "%s%s %s", i ? ", " : "", h->name,
				 akk_loss_name(h->loss));
		n += w > 0 ? (size_t)w : 0;
		if (h->weight != 1 && n < size) {
			w = snprintf(buf + n, size - n, " x %g", (double)h->weight);
			n += w > 0 ? (size_t)w : 0;
		}
	}
}

int akk_graph_layout(struct akk_graph_layout *gl, const struct akk_model *m,
		     struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	char shape[64];
	int last = -1;

	memset(gl, 0, sizeof(*gl));
	akk_shape_format(s->input, shape, sizeof(shape));
	if (!s->ninputs && (last = new_vertex(gl, "input", NULL, NULL, shape, 0, NULL, 0, e)) < 0)
		return -1;
	int input = last, outs[AKK_MAX_GATES], named[AKK_MAX_INPUTS];

	/* named inputs: a vertex each, with its own shape */
	for (int i = 0; i < s->ninputs; i++) {
		akk_shape_format(s->inputs[i].shape, shape, sizeof(shape));
		if ((named[i] = new_vertex(gl, "input", s->inputs[i].name, NULL, shape, 0,
					   NULL, 0, e)) < 0)
			return -1;
	}

	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *p = &m->gates[g];
		int preds[AKK_MAX_JOIN] = { 0 };
		char params[32];

		/* gates that fork and join: a join reads its sources' outputs */
		for (int k = 0; k < p->nsrc; k++)
			preds[k] = p->src[k] >= 0 ? outs[p->src[k]] :
				   s->ninputs ? named[p->src_in[k]] : input;
		last = preds[0];
		if (p->nsrc > 1) {
			snprintf(params, sizeof(params), p->join == AKK_JOIN_CONCAT ?
				 "%d gates on channels" : "%d gates", p->nsrc);
			akk_shape_format(p->in, shape, sizeof(shape));
			if ((last = new_vertex(gl, akk_join_name(p->join), NULL, params, shape,
					       g + 1, preds, p->nsrc, e)) < 0)
				return -1;
		}
		for (int i = 0; i < p->nlayers; i++)
			if (add_layer(gl, &p->layers[i], g + 1, last, NULL, &last, e))
				return -1;
		outs[g] = last;
	}
	char losses[128];
	loss_label(s, losses, sizeof(losses));
	if (new_vertex(gl, "loss", NULL, losses, NULL, 0, &last, 1, e) < 0 ||
	    assign_lanes(gl, e))
		return -1;
	return place(gl, m->ngates, e);
}

void akk_graph_layout_release(struct akk_graph_layout *gl)
{
	free(gl->v);
	free(gl->ed);
	free(gl->gates);
	memset(gl, 0, sizeof(*gl));
}

int akk_graph_edge_points(const struct akk_graph_layout *gl, int i,
			  double pts[4][2])
{
	const struct akk_graph_edge *ed = &gl->ed[i];
	const struct akk_graph_vertex *a = &gl->v[ed->from], *b = &gl->v[ed->to];
	double xl = lane_x(ed->lane) + NODE_W / 2;
	int n = 0;

	pts[n][0] = a->box.x + a->box.w / 2;
	pts[n++][1] = a->box.y + a->box.h;
	if (b->row - a->row > 1) {
		/* down the edge's lane through the rows between */
		pts[n][0] = xl;
		pts[n++][1] = row_y(a->row + 1);
		pts[n][0] = xl;
		pts[n++][1] = row_y(b->row - 1) + NODE_H;
	}
	pts[n][0] = b->box.x + b->box.w / 2;
	pts[n++][1] = b->box.y;
	return n;
}

/* ---- drawing ------------------------------------------------------------ */

/* c (#rrggbb) mixed with white, share 0..1 of c kept, into buf. */
static void tint(char *buf, size_t size, const char *c, double share)
{
	unsigned rgb = (unsigned)strtoul(c + 1, NULL, 16), ch[3];

	for (int k = 0; k < 3; k++) {
		unsigned v = rgb >> (16 - 8 * k) & 255;
		ch[k] = (unsigned)lround(255 - (255 - v) * share);
	}
	snprintf(buf, size, "#%02x%02x%02x", ch[0], ch[1], ch[2]);
}

static void draw_gates(struct akk_svg *s, const struct akk_graph_layout *gl)
{
	char cls[32], fill[8], label[32];

	for (int g = 0; g < gl->ngates; g++) {
		const struct akk_graph_box *b = &gl->gates[g];
		const char *c = palette[g % NPALETTE];
		snprintf(cls, sizeof(cls), "gate gate-%d", g + 1);
		snprintf(label, sizeof(label), "gate %d", g + 1);
		tint(fill, sizeof(fill), c, 0.16);
		akk_svg_group_begin(s, cls);
		akk_svg_round_rect(s, b->x, b->y, b->w, b->h, 10, fill, c);
		akk_svg_text(s, b->x + 8, b->y + LABEL_H - 7, AKK_SVG_START, 13, c, 0, 1, label);
		akk_svg_group_end(s);
	}
}

static void draw_edges(struct akk_svg *s, const struct akk_graph_layout *gl)
{
	double p[4][2];

	akk_svg_group_begin(s, "edges");
	for (int i = 0; i < gl->ne; i++) {
		int n = akk_graph_edge_points(gl, i, p);
		double dx = p[n - 1][0] - p[n - 2][0], dy = p[n - 1][1] - p[n - 2][1];
		double len = hypot(dx, dy), ux = dx / len, uy = dy / len;

		akk_svg_polyline_begin(s, "edge", C_EDGE, 1.3, NULL);
		for (int k = 0; k < n; k++)
			akk_svg_point(s, p[k][0], p[k][1]);
		akk_svg_polyline_end(s);
		/* the head: two strokes back from the tip, 30 degrees apart */
		akk_svg_polyline_begin(s, "arrow", C_EDGE, 1.3, NULL);
		akk_svg_point(s, p[n - 1][0] - 8 * ux + 4 * uy, p[n - 1][1] - 8 * uy - 4 * ux);
		akk_svg_point(s, p[n - 1][0], p[n - 1][1]);
		akk_svg_point(s, p[n - 1][0] - 8 * ux - 4 * uy, p[n - 1][1] - 8 * uy + 4 * ux);
		akk_svg_polyline_end(s);
	}
	akk_svg_group_end(s);
}

/* Split the options at ", " into at most two lines of PARAM_CHARS; what
 * does not fit ends the second line with "...". */
static int wrap(const char *text, char lines[2][PARAM_CHARS + 4])
{
	int n = 0;

	lines[0][0] = lines[1][0] = 0;
	while (*text && n < 2) {
		size_t len = strlen(text), cut = len;
		if (len > PARAM_CHARS) {
			const char *p = text, *q;
			cut = 0;
			while ((q = strstr(p, ", ")) && (size_t)(q - text) <= PARAM_CHARS) {
				cut = (size_t)(q - text);
				p = q + 2;
			}
			if (!cut || n == 1)
				cut = n == 1 ? PARAM_CHARS - 3 : PARAM_CHARS;
		}
		snprintf(lines[n], PARAM_CHARS + 4, "%.*s%s", (int)cut, text,
			 n == 1 && cut < len ? "..." : "");
		text += cut;
		if (!strncmp(text, ", ", 2))
			text += 2;
		n++;
	}
	return n;
}

static void draw_vertex(struct akk_svg *s, const struct akk_graph_vertex *v)
{
	const char *c = v->gate ? palette[(v->gate - 1) % NPALETTE] : C_PLAIN;
	char cls[32], head[sizeof(v->name) + sizeof(v->kind) + 4];
	char lines[2][PARAM_CHARS + 4];
	int nl = wrap(v->params, lines), total = 1 + nl + (v->shape[0] != 0);
	double x = v->box.x + v->box.w / 2;
	double y = v->box.y + (v->box.h - 13.0 * total) / 2 + 10;

	snprintf(cls, sizeof(cls), "node gate-%d", v->gate);
	if (v->name[0])
		snprintf(head, sizeof(head), "%s: %s", v->name, v->kind);
	else
		snprintf(head, sizeof(head), "%s", v->kind);
	akk_svg_group_begin(s, cls);
	akk_svg_round_rect(s, v->box.x, v->box.y, v->box.w, v->box.h, 5,
			   v->gate ? "#ffffff" : "#f2f2f2", c);
	akk_svg_text(s, x, y, AKK_SVG_MIDDLE, 12, C_TEXT, 0, 1, head);
	for (int k = 0; k < nl; k++)
		akk_svg_text(s, x, y += 13, AKK_SVG_MIDDLE, 10.5, C_TEXT, 0, 0, lines[k]);
	if (v->shape[0])
		akk_svg_text(s, x, y + 13, AKK_SVG_MIDDLE, 10.5, "#555555", 0, 0, v->shape);
	akk_svg_group_end(s);
}

int akk_graph_svg(FILE *f, const struct akk_graph_layout *gl,
		  const char *title, const char *what, struct akk_err *e)
{
	struct akk_svg s;
	/* wide enough for the title too (bold 15 px: under 9.5 a character) */
	double w = fmax(gl->width, 2 * MARGIN + 9.5 * (double)strlen(title));

	akk_svg_begin(&s, f, (int)ceil(w), (int)ceil(gl->height), title);
	akk_svg_text(&s, MARGIN, 28, AKK_SVG_START, 15, C_TEXT, 0, 1, title);
	draw_gates(&s, gl);
	draw_edges(&s, gl);
	akk_svg_group_begin(&s, "nodes");
	for (int i = 0; i < gl->nv; i++)
		draw_vertex(&s, &gl->v[i]);
	akk_svg_group_end(&s);
	return akk_svg_end(&s, what, e);
}
