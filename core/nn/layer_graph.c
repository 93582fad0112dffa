/* layer_graph.c - a graph of layers and joins inside one layer.
 *
 * A composite kind, the residual block's generalisation: the spec gives
 * named nodes (nn/layer_graph.h), each an ordinary layer reading one input
 * or a join (add, concat, slice), and their topological order, which the
 * parser checked to exist. plan plans them in that order as sub-layers
 * (l->sub[i] for node i as written; a join's entry has ops NULL and only
 * its shapes), checks the shapes at the joins, and lays the nodes'
 * parameters and state out one after the other in topological order.
 *
 * Per sample, the graph's aux holds every node's output but the output
 * node's (that one is the layer's y), then every node's aux, then a
 * gradient buffer per node but the output node (whose gradient is dy),
 * then one scratch buffer as wide as the widest layer input; each region
 * is B-major as a gate lays out its tape. Backward runs the nodes in
 * reverse topological order. A node's output read by several nodes (a
 * fork) gets its gradient from each: the first contribution (from the
 * reader latest in topological order) is written, the others added, a
 * layer's through the scratch buffer. As residual, backward writes the
 * gradient buffers although aux is const in the layer interface: they
 * are scratch that grows with B, no forward value lives there.
 *
 * Checkpoints and inspect see two views, "params" and "state" (the nodes'
 * tensors flat, in topological order, each layer's views in its kind's
 * order): g1.l3.graph.params. ONNX export names a node's tensors after
 * it, g1.l3.graph.NAME (g1.l3.graph.nI for an unnamed node I), and writes
 * the joins as Add, Concat and Slice. */
#include "nn/layer_graph.h"
#include "nn/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"

void akk_graph_spec_free(struct akk_graph_spec *g)
{
	if (!g)
		return;
	for (int i = 0; g->nodes && i < g->nnodes; i++) {
		free(g->nodes[i].from);
		free(g->nodes[i].from_mark);
	}
	free(g->nodes);
	free(g->order);
	free(g);
}

const char *akk_graph_node_kind(const struct akk_layer_spec *sp, int i)
{
	static const char *const joins[] = {
		[AKK_GRAPH_ADD] = "add", [AKK_GRAPH_CONCAT] = "concat",
		[AKK_GRAPH_SLICE] = "slice",
	};
	enum akk_graph_op op = sp->graph->nodes[i].op;

	if (op == AKK_GRAPH_LAYER)
		return sp->inner[i].ops ? sp->inner[i].ops->name : "layer";
	return joins[op];
}

const char *akk_graph_node_label(const struct akk_layer_spec *sp, int i,
				 char *buf, size_t size)
{
	const struct akk_graph_node *n = &sp->graph->nodes[i];

	if (n->name[0])
		snprintf(buf, size, "'%s'", n->name);
	else
		snprintf(buf, size, "node %d (%s)", i + 1,
			 akk_graph_node_kind(sp, i));
	return buf;
}

/* The channel axis of a shape: per sample, outer blocks (T for [T, F],
 * else 1) of C channels of unit values (H W for [C, H, W], else 1). */
struct chan {
	size_t outer, C, unit;
};

static struct chan chan_of(struct akk_shape s)
{
	if (s.rank == 3)
		return (struct chan){ 1, (size_t)s.d[0],
				      (size_t)s.d[1] * (size_t)s.d[2] };
	if (s.rank == 2)
		return (struct chan){ (size_t)s.d[0], (size_t)s.d[1], 1 };
	return (struct chan){ 1, (size_t)s.d[0], 1 };
}

static size_t out_size(const struct akk_layer *l, int i)
{
	return (size_t)akk_shape_size(l->sub[i].out);
}

/* Per-sample offsets into aux: node i's output, its aux, its gradient;
 * and the totals (A outputs, X aux, P scratch). */
static size_t off_out(const struct akk_layer *l, int i)
{
	size_t o = 0;
	int out = l->spec->graph->output;

	for (int j = 0; j < i; j++)
		if (j != out)
			o += out_size(l, j);
	return o;
}

static size_t total_out(const struct akk_layer *l)
{
	return off_out(l, l->nsub);
}

static size_t off_aux(const struct akk_layer *l, int i)
{
	size_t o = total_out(l);

	for (int j = 0; j < i; j++)
		o += l->sub[j].aux;
	return o;
}

static size_t scratch_size(const struct akk_layer *l)
{
	size_t P = 0;

	for (int i = 0; i < l->nsub; i++)
		if (l->sub[i].ops && (size_t)akk_shape_size(l->sub[i].in) > P)
			P = (size_t)akk_shape_size(l->sub[i].in);
	return P;
}

/* The value node j holds for a batch of B (the graph's input for
 * AKK_GRAPH_INPUT, y for the output node). */
static float *value_of(const struct akk_layer *l, float *aux, const float *x,
		       float *y, int B, int j)
{
	if (j == AKK_GRAPH_INPUT)
		return (float *)x;
	if (j == l->spec->graph->output)
		return y;
	return aux + (size_t)B * off_out(l, j);
}

/* --- plan ----------------------------------------------------------------- */

/* What node j (or the input) is called in a shape message. */
static const char *source(const struct akk_layer *l, int j, char *buf,
			  size_t size)
{
	if (j == AKK_GRAPH_INPUT)
		return snprintf(buf, size, "the graph's input"), buf;
	return akk_graph_node_label(l->spec, j, buf, size);
}

static struct akk_shape shape_of(const struct akk_layer *l, int j)
{
	return j == AKK_GRAPH_INPUT ? l->in : l->sub[j].out;
}

/* A join's output shape from its inputs' (the parser checked the
 * counts); the message names the two inputs that disagree. */
static int plan_join(struct akk_layer *l, int i, struct akk_err *e)
{
	const struct akk_graph_node *n = &l->spec->graph->nodes[i];
	struct akk_layer *s = &l->sub[i];
	struct akk_shape a = shape_of(l, n->from[0]);
	char na[96], nb[96], sa[64], sb[64];

	s->in = a;
	s->out = a;
	akk_shape_format(a, sa, sizeof(sa));
	source(l, n->from[0], na, sizeof(na));
	if (n->op == AKK_GRAPH_SLICE) {
		struct chan c = chan_of(a);
		if ((size_t)n->end > c.C)
			return akk_err_set(e, "end %d is past the %zu channels of %s %s",
					   n->end, c.C, na, sa);
		s->out.d[a.rank == 2 ? 1 : 0] = n->end - n->start;
		return 0;
	}
	for (int k = 1; k < n->nfrom; k++) {
		struct akk_shape b = shape_of(l, n->from[k]);
		int ok = a.rank == b.rank;
		akk_shape_format(b, sb, sizeof(sb));
		source(l, n->from[k], nb, sizeof(nb));
		if (n->op == AKK_GRAPH_ADD) {
			if (!akk_shape_equal(a, b))
				return akk_err_set(e, "%s outputs %s but %s outputs %s: "
						   "add needs one shape", na, sa, nb, sb);
			s->flops += (double)akk_shape_size(a);
			continue;
		}
		for (int d = 0; ok && d < a.rank; d++)
			if (d != (a.rank == 2 ? 1 : 0) && a.d[d] != b.d[d])
				ok = 0;
		if (!ok)
			return akk_err_set(e, "%s outputs %s but %s outputs %s: "
					   "concat joins on channels (features) "
					   "and needs the other sizes equal",
					   na, sa, nb, sb);
		int ax = a.rank == 2 ? 1 : 0;
		size_t C = (size_t)s->out.d[ax] + (size_t)b.d[ax];
		if (C * (size_t)(akk_shape_size(a) / a.d[ax]) > AKK_MAX_DIM)
			return akk_err_set(e, "the joined output would have more "
					   "than %zu values", AKK_MAX_DIM);
		s->out.d[ax] = (int)C;
	}
	return 0;
}

/* Node i, a layer or a join, from its inputs' shapes. */
static int plan_node(struct akk_layer *l, int i, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	const struct akk_graph_node *n = &sp->graph->nodes[i];
	struct akk_layer *s = &l->sub[i];
	struct akk_err le = { 0 };
	char who[96];
	int rc;

	if (n->op == AKK_GRAPH_LAYER) {
		s->ops = sp->inner[i].ops;
		s->spec = &sp->inner[i];
		s->in = shape_of(l, n->from[0]);
		rc = s->ops->plan(s, &le);
		if (!rc && (s->aux > AKK_MAX_DIM || s->work > AKK_MAX_DIM ||
			    s->work_sample > AKK_MAX_DIM))
			rc = akk_err_set(&le, "keeps too many values per sample");
	} else {
		rc = plan_join(l, i, &le);
	}
	if (!rc)
		return 0;
	akk_graph_node_label(sp, i, who, sizeof(who));
	if (n->name[0])
		akk_err_set(e, "node %s (%s): %s", who,
			    akk_graph_node_kind(sp, i), le.msg);
	else
		akk_err_set(e, "%s: %s", who, le.msg);
	/* the place of the node itself, or of its own inner layer */
	e->line = le.line ? le.line : n->mark.line;
	e->col = le.line ? le.col : n->mark.col;
	return -1;
}

static int graph_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_graph_spec *g = l->spec->graph;
	size_t total = 0;

	memset(&l->out, 0, sizeof(l->out));
	l->nparams = l->nstate = l->aux = l->work = l->work_sample = 0;
	l->flops = 0;
	l->nviews = 0;
	if (!g || g->nnodes < 1)
		return akk_err_set(e, "a graph needs at least one node");
	l->nsub = g->nnodes;
	l->sub = calloc((size_t)l->nsub, sizeof(*l->sub));
	if (!l->sub) {
		l->nsub = 0;
		return akk_err_set(e, "out of memory");
	}
	for (int k = 0; k < g->nnodes; k++) {
		int i = g->order[k];
		struct akk_layer *s = &l->sub[i];
		if (plan_node(l, i, e))
			goto fail;
		s->poff = l->nparams;
		s->soff = l->nstate;
		if (!akk_add_max(&l->nparams, s->nparams, AKK_MAX_FLOATS) ||
		    !akk_add_max(&l->nstate, s->nstate, AKK_MAX_FLOATS) ||
		    !akk_add_max(&total, 2 * (size_t)akk_shape_size(s->out),
				 AKK_MAX_DIM) ||
		    !akk_add_max(&total, s->aux, AKK_MAX_DIM)) {
			akk_err_set(e, "the graph would keep more than %zu "
				    "values per sample", AKK_MAX_DIM);
			goto fail;
		}
		akk_layer_composite_add(l, s);
	}
	l->out = l->sub[g->output].out;
	if (!akk_add_max(&total, scratch_size(l), AKK_MAX_DIM)) {
		akk_err_set(e, "the graph would keep more than %zu values per "
			    "sample", AKK_MAX_DIM);
		goto fail;
	}
	/* the output node's value and gradient are the layer's y and dy */
	l->aux = total - 2 * (size_t)akk_shape_size(l->out);
	akk_layer_composite_views(l);
	return 0;
fail:
	akk_layer_release(l);
	return -1;
}

static void graph_init(const struct akk_layer *l, float *p, float *s,
		       struct akk_rng *rng)
{
	const struct akk_graph_spec *g = l->spec->graph;

	/* in topological order, the layout's: a chain gets the parameters
	 * its residual block would */
	for (int k = 0; k < g->nnodes; k++) {
		const struct akk_layer *c = &l->sub[g->order[k]];
		if (c->ops)
			c->ops->init(c, p + c->poff, s + c->soff, rng);
	}
}

/* --- forward -------------------------------------------------------------- */

/* y = the inputs side by side on the channel axis (concat), or channels
 * [start, end) of the input (slice). */
static void concat_forward(const struct akk_layer *l, int i, float *y,
			   float *aux, const float *x, float *gy, int B)
{
	const struct akk_graph_node *n = &l->spec->graph->nodes[i];
	struct chan co = chan_of(l->sub[i].out);
	size_t per = (size_t)akk_shape_size(l->sub[i].out);

	for (int b = 0; b < B; b++)
		for (size_t o = 0; o < co.outer; o++) {
			float *dst = y + b * per + o * co.C * co.unit;
			for (int k = 0; k < n->nfrom; k++) {
				struct chan c = chan_of(shape_of(l, n->from[k]));
				const float *src = value_of(l, aux, x, gy, B, n->from[k]);
				size_t w = c.C * c.unit;
				memcpy(dst, src + b * c.outer * w + o * w,
				       w * sizeof(*dst));
				dst += w;
			}
		}
}

static void slice_forward(const struct akk_layer *l, int i, float *y,
			  const float *src)
{
	const struct akk_graph_node *n = &l->spec->graph->nodes[i];
	struct chan c = chan_of(l->sub[i].in), co = chan_of(l->sub[i].out);
	size_t w = co.C * co.unit;

	for (size_t o = 0; o < c.outer; o++)
		memcpy(y + o * w, src + o * c.C * c.unit + (size_t)n->start * c.unit,
		       w * sizeof(*y));
}

static void graph_forward(const struct akk_layer *l, float *y, float *aux,
			  float *s, float *work, const float *x,
			  const float *p, int B, int train,
			  struct akk_rng *rng)
{
	const struct akk_graph_spec *g = l->spec->graph;

	for (int k = 0; k < g->nnodes; k++) {
		int i = g->order[k];
		const struct akk_graph_node *n = &g->nodes[i];
		float *o = value_of(l, aux, x, y, B, i);
		const float *a = value_of(l, aux, x, y, B, n->from[0]);
		size_t per = (size_t)akk_shape_size(l->sub[i].out);

		if (n->op == AKK_GRAPH_LAYER) {
			struct akk_layer c = l->sub[i];	/* a copy carrying our pool and sync */
			c.pool = l->pool;
			c.sync = l->sync;	/* data parallelism: an inner batchnorm sums over the replicas */
			c.ops->forward(&c, o, aux + (size_t)B * off_aux(l, i),
				       s + c.soff, work, a, p + c.poff, B, train,
				       rng);
		} else if (n->op == AKK_GRAPH_ADD) {
			const float *b = value_of(l, aux, x, y, B, n->from[1]);
			for (size_t t = 0; t < (size_t)B * per; t++)
				o[t] = a[t] + b[t];
			for (int m = 2; m < n->nfrom; m++) {
				b = value_of(l, aux, x, y, B, n->from[m]);
				for (size_t t = 0; t < (size_t)B * per; t++)
					o[t] += b[t];
			}
		} else if (n->op == AKK_GRAPH_CONCAT) {
			concat_forward(l, i, o, aux, x, y, B);
		} else {
			size_t in = (size_t)akk_shape_size(l->sub[i].in);
			for (int b = 0; b < B; b++)
				slice_forward(l, i, o + b * per, a + b * in);
		}
	}
}

/* --- backward ------------------------------------------------------------- */

/* Where the gradient of node j (or of the input: dx) goes, or NULL. */
static float *grad_of(const struct akk_layer *l, float *aux, float *dx,
		      int B, int j)
{
	if (j == AKK_GRAPH_INPUT)
		return dx;
	return aux + (size_t)B * (off_aux(l, l->nsub) + off_out(l, j));
}

/* d (n floats) = g, or += g when add. */
static void put(float *d, const float *g, size_t n, int add)
{
	if (add)
		for (size_t t = 0; t < n; t++)
			d[t] += g[t];
	else
		memcpy(d, g, n * sizeof(*d));
}

/* A concat's or slice's gradient into each input: the input's channels
 * of dy (concat), or dy in channels [start, end) and zeros elsewhere
 * (slice); written the first time the input gets one, added after. */
static void copy_backward(const struct akk_layer *l, int i, float *aux,
			  float *dx, const float *g, int B,
			  unsigned char *written)
{
	const struct akk_graph_node *n = &l->spec->graph->nodes[i];
	struct chan co = chan_of(l->sub[i].out);
	size_t per = (size_t)akk_shape_size(l->sub[i].out), before = 0;

	for (int k = 0; k < n->nfrom; k++) {
		int j = n->from[k], slot = j < 0 ? l->nsub : j;
		struct chan c = chan_of(shape_of(l, j));
		size_t w = c.C * c.unit, ow = co.C * co.unit;
		float *d = grad_of(l, aux, dx, B, j);

		if (n->op == AKK_GRAPH_SLICE) {
			/* the input is wider: place dy's rows at start */
			if (!d)
				return;
			if (!written[slot])
				memset(d, 0, (size_t)B * w * c.outer * sizeof(*d));
			for (int b = 0; b < B; b++)
				for (size_t o = 0; o < c.outer; o++) {
					float *t = d + (b * c.outer + o) * w +
						   (size_t)n->start * c.unit;
					const float *s = g + b * per + o * ow;
					for (size_t v = 0; v < ow; v++)
						t[v] += s[v];
				}
			written[slot] = 1;
			return;
		}
		if (d) {
			int add = written[slot];
			for (int b = 0; b < B; b++)
				for (size_t o = 0; o < c.outer; o++)
					put(d + (b * c.outer + o) * w,
					    g + b * per + o * ow + before, w, add);
			written[slot] = 1;
		}
		before += w;
	}
}

static void graph_backward(const struct akk_layer *l, float *dx, float *dp,
			   float *work, const float *dy, const float *x,
			   const float *y, const float *aux, const float *p,
			   int B)
{
	const struct akk_graph_spec *g = l->spec->graph;
	float *a = (float *)aux;	/* see the file comment */
	float *scratch = a + (size_t)B * (off_aux(l, l->nsub) + total_out(l));
	unsigned char written[AKK_GRAPH_MAX_NODES + 1];

	memset(written, 0, (size_t)l->nsub + 1);
	for (int k = g->nnodes - 1; k >= 0; k--) {
		int i = g->order[k];
		const struct akk_graph_node *n = &g->nodes[i];
		const float *gi = i == g->output ? dy : grad_of(l, a, dx, B, i);
		size_t per = (size_t)akk_shape_size(l->sub[i].out);

		if (n->op == AKK_GRAPH_LAYER) {
			struct akk_layer c = l->sub[i];
			int j = n->from[0], slot = j < 0 ? l->nsub : j;
			float *d = grad_of(l, a, dx, B, j);
			size_t nin = (size_t)B * akk_shape_size(c.in);

			c.pool = l->pool;
			c.sync = l->sync;	/* data parallelism: an inner batchnorm sums over the replicas */
			c.ops->backward(&c, d && written[slot] ? scratch : d,
					dp + c.poff, work, gi,
					value_of(l, a, x, (float *)y, B, j),
					value_of(l, a, x, (float *)y, B, i),
					a + (size_t)B * off_aux(l, i), p + c.poff, B);
			if (d && written[slot])
				for (size_t t = 0; t < nin; t++)
					d[t] += scratch[t];
			written[slot] = 1;
		} else if (n->op == AKK_GRAPH_ADD) {
			for (int m = 0; m < n->nfrom; m++) {
				int j = n->from[m];
				float *d = grad_of(l, a, dx, B, j);
				int slot = j < 0 ? l->nsub : j;
				if (d)
					put(d, gi, (size_t)B * per, written[slot]);
				written[slot] = 1;
			}
		} else {
			copy_backward(l, i, a, dx, gi, B, written);
		}
	}
}

/* --- export --------------------------------------------------------------- */

/* Node j's own name in the model: prefix.NAME, or prefix.nI for the
 * unnamed node written Ith; its layer's initializers go under it. */
static const char *node_prefix(const struct akk_layer *l, const char *prefix,
			       int j, char *buf, size_t size)
{
	const struct akk_graph_node *n = &l->spec->graph->nodes[j];

	if (n->name[0])
		snprintf(buf, size, "%s.%s", prefix, n->name);
	else
		snprintf(buf, size, "%s.n%d", prefix, j + 1);
	return buf;
}

/* The tensor name of node j's output: its own name, io->x for the input,
 * io->y for the output node. */
static const char *export_name(const struct akk_layer *l,
			       const struct akk_export_io *io, int j,
			       char *buf, size_t size)
{
	if (j == AKK_GRAPH_INPUT)
		return io->x;
	if (j == l->spec->graph->output)
		return io->y;
	return node_prefix(l, io->prefix, j, buf, size);
}

/* ONNX's axis of the channels: 1 for [N, C, H, W] and [N, F], 2 for a
 * sequence [N, T, F]. */
static int64_t onnx_axis(struct akk_shape s)
{
	return s.rank == 2 ? 2 : 1;
}

/* Slice through Constant nodes for its starts, ends and axes (int64
 * tensors, which the sink's initializers, float32, cannot hold). */
static int export_slice(const struct akk_layer *l, int i,
			struct akk_graph_sink *g, const char *in,
			const char *out, const char *prefix, struct akk_err *e)
{
	const struct akk_graph_node *n = &l->spec->graph->nodes[i];
	const int64_t v[3] = { n->start, n->end, onnx_axis(l->sub[i].in) };
	static const char *const what[3] = { "starts", "ends", "axes" };
	char names[3][300];
	const char *ins[4] = { in, names[0], names[1], names[2] };

	for (int k = 0; k < 3; k++) {
		struct akk_attr a = AKK_ATTR_IS("value_ints", &v[k], 1);
		const char *o = names[k];
		snprintf(names[k], sizeof(names[k]), "%s.%s", prefix, what[k]);
		if (g->node(g, "Constant", NULL, 0, &o, 1, &a, 1, e))
			return -1;
	}
	return g->node(g, "Slice", ins, 4, &out, 1, NULL, 0, e);
}

static int graph_export(const struct akk_layer *l, struct akk_graph_sink *g,
			const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_graph_spec *gs = l->spec->graph;

	for (int k = 0; k < gs->nnodes; k++) {
		int i = gs->order[k];
		const struct akk_graph_node *n = &gs->nodes[i];
		const struct akk_layer *c = &l->sub[i];
		char yb[256], nb[320], ib[AKK_GRAPH_MAX_JOIN][256];
		const char *yn = export_name(l, io, i, yb, sizeof(yb));
		const char *ins[AKK_GRAPH_MAX_JOIN];
		char own[256];

		node_prefix(l, io->prefix, i, own, sizeof(own));
		if (n->op == AKK_GRAPH_ADD || n->op == AKK_GRAPH_CONCAT) {
			struct akk_attr ax = AKK_ATTR_I("axis", onnx_axis(c->out));
			const char *op = n->op == AKK_GRAPH_ADD ? "Add" : "Concat";
			for (int m = 0; m < n->nfrom; m++)
				ins[m] = export_name(l, io, n->from[m], ib[m],
						     sizeof(ib[m]));
			/* Add takes two inputs: a chain of them in order */
			if (n->op == AKK_GRAPH_ADD) {
				char acc[2][300];
				const char *cur = ins[0];
				for (int m = 1; m < n->nfrom; m++) {
					const char *pair[2] = { cur, ins[m] };
					const char *o = m + 1 == n->nfrom ? yn : acc[m & 1];
					snprintf(acc[m & 1], sizeof(acc[0]), "%s.sum%d", own, m);
					if (g->node(g, op, pair, 2, &o, 1, NULL, 0, e))
						return -1;
					cur = o;
				}
				continue;
			}
			if (g->node(g, op, ins, n->nfrom, &yn, 1, &ax, 1, e))
				return -1;
			continue;
		}
		ins[0] = export_name(l, io, n->from[0], ib[0], sizeof(ib[0]));
		if (n->op == AKK_GRAPH_SLICE) {
			if (export_slice(l, i, g, ins[0], yn, own, e))
				return -1;
			continue;
		}
		if (!c->ops->export)
			return akk_err_set(e, "layer kind '%s' (in a graph) cannot "
					   "be exported to ONNX", c->ops->name);
		snprintf(nb, sizeof(nb), "%s.%s", own, c->ops->name);
		struct akk_export_io cio = { ins[0], yn, nb, io->p + c->poff,
					     io->s + c->soff };
		if (c->ops->export(c, g, &cio, e))
			return -1;
	}
	return 0;
}

const struct akk_layer_ops akk_layer_graph = {
	.name = "graph",
	.plan = graph_plan,
	.init = graph_init,
	.forward = graph_forward,
	.backward = graph_backward,
	.export = graph_export,
};
