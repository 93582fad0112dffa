/* layer_residual.c - a residual block: y = inner(x) + shortcut(x).
 *
 * A composite kind: the spec gives two chains of ordinary layers, the inner
 * one (ninner >= 1) and the shortcut (nshort >= 0; none is the identity),
 * and plan plans them as sub-layers (l->sub: the inner chain, then the
 * shortcut chain), whose parameters and state are laid out one after the
 * other inside this layer's, in that order. Both chains must give the same
 * shape; when the inner one changes the shape, the config names a
 * projection shortcut explicitly (a 1x1 conv2d with a stride for images, a
 * dense layer for vectors): nothing is added behind the user's back. An
 * activation after the sum is an ordinary layer after the block.
 *
 * Per sample, the residual's aux holds every sub-layer's output, then every
 * sub-layer's aux, then three gradient buffers for backward (two for the
 * ping-pong through a chain, one for the shortcut's input gradient), each
 * region B-major as a gate lays out its tape. Backward writes those three
 * buffers although aux is const in the layer interface: they are scratch
 * that grows with B (a gate's work does not), no forward value lives there,
 * and a tape's aux belongs to one batch at a time.
 *
 * Checkpoints and inspect see two views, "params" and "state" (the
 * sub-layers' tensors flat, in the order above, each layer's views in its
 * kind's order): g1.l3.residual.params. ONNX export names the sub-layers
 * g1.l3.residual.l1.conv2d and g1.l3.residual.s1.conv2d and sums with Add. */
#include "nn/layer.h"
#include "nn/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"

/* Per sample: the sub-layers' outputs (A floats), their aux (X) and the
 * widest sub-layer input (P, one gradient buffer). */
struct layout {
	size_t A, X, P;
};

static struct layout layout_of(const struct akk_layer *l)
{
	struct layout o = { 0, 0, 0 };

	for (int i = 0; i < l->nsub; i++) {
		size_t in = (size_t)akk_shape_size(l->sub[i].in);
		o.A += (size_t)akk_shape_size(l->sub[i].out);
		o.X += l->sub[i].aux;
		if (in > o.P)
			o.P = in;
	}
	return o;
}

/* Where sub-layer i's output and aux start in a batch of B. */
static float *sub_out(const struct akk_layer *l, float *aux, int B, int i)
{
	size_t off = 0;

	for (int j = 0; j < i; j++)
		off += (size_t)akk_shape_size(l->sub[j].out);
	return aux + (size_t)B * off;
}

static float *sub_aux(const struct akk_layer *l, float *aux, int B, int i,
		      const struct layout *o)
{
	size_t off = o->A;

	for (int j = 0; j < i; j++)
		off += l->sub[j].aux;
	return aux + (size_t)B * off;
}

/* Plan chain [first, first+n) from shape in; its output shape in *out. */
static int plan_chain(struct akk_layer *l, int first, int n,
		      const struct akk_layer_spec *specs, struct akk_shape in,
		      struct akk_shape *out, const char *what,
		      struct akk_err *e)
{
	for (int i = 0; i < n; i++) {
		struct akk_layer *s = &l->sub[first + i];
		struct akk_err le = { 0 };

		s->ops = specs[i].ops;
		s->spec = &specs[i];
		s->in = in;
		if (s->ops->plan(s, &le)) {
			akk_err_set(e, "%s layer %d '%s': %s", what, i + 1,
				    s->ops->name, le.msg);
			/* the place of the inner layer itself (model.c) */
			if (le.line) {
				e->line = le.line;
				e->col = le.col;
			} else {
				e->line = specs[i].mark.line;
				e->col = specs[i].mark.col;
			}
			return -1;
		}
		if (s->aux > AKK_MAX_DIM || s->work > AKK_MAX_DIM ||
		    s->work_sample > AKK_MAX_DIM)
			return akk_err_set(e, "%s layer %d '%s' keeps too many "
					   "values per sample", what, i + 1,
					   s->ops->name);
		in = s->out;
	}
	*out = in;
	return 0;
}

static int residual_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	struct akk_shape a, b = l->in;
	char sa[64], sb[64];
	size_t total = 0;

	memset(&l->out, 0, sizeof(l->out));
	l->nparams = l->nstate = l->aux = l->work = 0;
	l->flops = 0;
	l->nviews = 0;
	if (sp->ninner < 1)
		return akk_err_set(e, "a residual block needs at least one layer");
	l->nsub = sp->ninner + sp->nshort;
	l->sub = calloc((size_t)l->nsub, sizeof(*l->sub));
	if (!l->sub) {
		l->nsub = 0;
		return akk_err_set(e, "out of memory");
	}
	if (plan_chain(l, 0, sp->ninner, sp->inner, l->in, &a, "inner", e) ||
	    plan_chain(l, sp->ninner, sp->nshort, sp->shortcut, l->in, &b,
		       "shortcut", e))
		goto fail;
	akk_shape_format(a, sa, sizeof(sa));
	akk_shape_format(b, sb, sizeof(sb));
	if (!akk_shape_equal(a, b)) {
		if (sp->nshort)
			akk_err_set(e, "the inner layers output %s but the "
				    "shortcut outputs %s", sa, sb);
		else if (a.rank == 3 && b.rank == 3 && a.d[1] > 0)
			akk_err_set(e, "the inner layers output %s but the "
				    "identity shortcut passes %s: add a "
				    "projection (shortcut: [conv2d: {filters: "
				    "%d, kernel: 1, stride: %d}])", sa, sb,
				    a.d[0], (b.d[1] + a.d[1] - 1) / a.d[1]);
		else if (a.rank == 1)
			akk_err_set(e, "the inner layers output %s but the "
				    "identity shortcut passes %s: add a "
				    "projection (shortcut: [dense: %d])", sa,
				    sb, a.d[0]);
		else
			akk_err_set(e, "the inner layers output %s but the "
				    "identity shortcut passes %s", sa, sb);
		goto fail;
	}
	l->out = a;
	for (int i = 0; i < l->nsub; i++) {
		struct akk_layer *s = &l->sub[i];
		s->poff = l->nparams;
		s->soff = l->nstate;
		if (!akk_add_max(&l->nparams, s->nparams, AKK_MAX_FLOATS) ||
		    !akk_add_max(&l->nstate, s->nstate, AKK_MAX_FLOATS) ||
		    !akk_add_max(&total, (size_t)akk_shape_size(s->out),
				 AKK_MAX_DIM) ||
		    !akk_add_max(&total, s->aux, AKK_MAX_DIM)) {
			akk_err_set(e, "the block would keep more than %zu "
				    "values per sample", AKK_MAX_DIM);
			goto fail;
		}
		akk_layer_composite_add(l, s);
	}
	struct layout o = layout_of(l);
	if (!akk_add_max(&total, o.P, AKK_MAX_DIM) ||
	    !akk_add_max(&total, o.P, AKK_MAX_DIM) ||
	    !akk_add_max(&total, o.P, AKK_MAX_DIM)) {
		akk_err_set(e, "the block would keep more than %zu values per "
			    "sample", AKK_MAX_DIM);
		goto fail;
	}
	l->aux = total;
	l->flops += (double)akk_shape_size(l->out);	/* the sum */
	akk_layer_composite_views(l);
	return 0;
fail:
	akk_layer_release(l);
	return -1;
}

static void residual_init(const struct akk_layer *l, float *p, float *s,
			  struct akk_rng *rng)
{
	for (int i = 0; i < l->nsub; i++) {
		const struct akk_layer *c = &l->sub[i];
		c->ops->init(c, p + c->poff, s + c->soff, rng);
	}
}

/* Forward through chain [first, first+n) from x; returns its output. */
static const float *forward_chain(const struct akk_layer *l, int first,
				  int n, float *aux, const struct layout *o,
				  float *s, float *work, const float *x,
				  const float *p, int B, int train,
				  struct akk_rng *rng)
{
	for (int i = first; i < first + n; i++) {
		struct akk_layer c = l->sub[i];	/* a copy carrying our pool and sync */
		float *y = sub_out(l, aux, B, i);

		c.pool = l->pool;
		c.sync = l->sync;	/* data parallelism: an inner batchnorm sums over the replicas */
		c.ops->forward(&c, y, sub_aux(l, aux, B, i, o), s + c.soff,
			       work, x, p + c.poff, B, train, rng);
		x = y;
	}
	return x;
}

static void residual_forward(const struct akk_layer *l, float *y, float *aux,
			     float *s, float *work, const float *x,
			     const float *p, int B, int train,
			     struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	struct layout o = layout_of(l);
	size_t n = (size_t)B * akk_shape_size(l->out);
	const float *a, *b;

	a = forward_chain(l, 0, sp->ninner, aux, &o, s, work, x, p, B, train,
			  rng);
	b = forward_chain(l, sp->ninner, sp->nshort, aux, &o, s, work, x, p, B,
			  train, rng);
	for (size_t i = 0; i < n; i++)
		y[i] = a[i] + b[i];
}

/* Backward through chain [first, first+n) from dy: accumulates dp and
 * writes the chain's input gradient into dx unless NULL. */
static void backward_chain(const struct akk_layer *l, int first, int n,
			   float *dx, float *dp, float *work, const float *dy,
			   const float *x, float *aux, const struct layout *o,
			   float *buf[2], const float *p, int B)
{
	const float *cur = dy;
	int flip = 0;

	for (int i = first + n - 1; i >= first; i--) {
		struct akk_layer c = l->sub[i];
		const float *in = i > first ? sub_out(l, aux, B, i - 1) : x;
		float *d = i > first ? buf[flip] : dx;

		c.pool = l->pool;
		c.sync = l->sync;	/* data parallelism: an inner batchnorm sums over the replicas */
		c.ops->backward(&c, d, dp + c.poff, work, cur, in,
				sub_out(l, aux, B, i),
				sub_aux(l, aux, B, i, o), p + c.poff, B);
		cur = d;
		flip ^= 1;
	}
}

static void residual_backward(const struct akk_layer *l, float *dx, float *dp,
			      float *work, const float *dy, const float *x,
			      const float *y, const float *aux,
			      const float *p, int B)
{
	const struct akk_layer_spec *sp = l->spec;
	struct layout o = layout_of(l);
	/* scratch past the forward's values: see the file comment */
	float *a = (float *)aux;
	float *scratch = a + (size_t)B * (o.A + o.X);
	float *buf[2] = { scratch, scratch + (size_t)B * o.P };
	float *sdx = scratch + 2 * (size_t)B * o.P;
	size_t n = (size_t)B * akk_shape_size(l->in);

	(void)y;
	backward_chain(l, 0, sp->ninner, dx, dp, work, dy, x, a, &o, buf, p,
		       B);
	if (sp->nshort) {
		backward_chain(l, sp->ninner, sp->nshort, dx ? sdx : NULL, dp,
			       work, dy, x, a, &o, buf, p, B);
		if (dx)
			for (size_t i = 0; i < n; i++)
				dx[i] += sdx[i];
	} else if (dx) {
		for (size_t i = 0; i < n; i++)
			dx[i] += dy[i];
	}
}

/* Export chain [first, first+n) from x; its output name into out. */
static int export_chain(const struct akk_layer *l, int first, int n,
			char tag, struct akk_graph_sink *g,
			const struct akk_export_io *io, char *out, size_t size,
			struct akk_err *e)
{
	char cur[256], next[256];

	snprintf(cur, sizeof(cur), "%s", io->x);
	for (int i = first; i < first + n; i++) {
		const struct akk_layer *c = &l->sub[i];
		if (!c->ops->export)
			return akk_err_set(e, "layer kind '%s' (in a residual "
					   "block) cannot be exported to ONNX",
					   c->ops->name);
		snprintf(next, sizeof(next), "%s.%c%d.%s", io->prefix, tag,
			 i - first + 1, c->ops->name);
		struct akk_export_io cio = { cur, next, next, io->p + c->poff,
					     io->s + c->soff };
		if (c->ops->export(c, g, &cio, e))
			return -1;
		memcpy(cur, next, sizeof(cur));
	}
	snprintf(out, size, "%s", cur);
	return 0;
}

/* The two chains, then Add. */
static int residual_export(const struct akk_layer *l, struct akk_graph_sink *g,
			   const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char a[256], b[256];
	const char *in[2] = { a, b };

	if (export_chain(l, 0, sp->ninner, 'l', g, io, a, sizeof(a), e) ||
	    export_chain(l, sp->ninner, sp->nshort, 's', g, io, b, sizeof(b),
			 e))
		return -1;
	return g->node(g, "Add", in, 2, &io->y, 1, NULL, 0, e);
}

const struct akk_layer_ops akk_layer_residual = {
	.name = "residual",
	.plan = residual_plan,
	.init = residual_init,
	.forward = residual_forward,
	.backward = residual_backward,
	.export = residual_export,
};
