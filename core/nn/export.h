/* export.h - the graph sink a layer kind exports its inference graph into.
 *
 * Each layer kind describes its evaluation-mode forward as a few nodes of a
 * dataflow graph in ONNX terms (op types and attributes as in the ONNX
 * operator set 13) plus the initializer tensors they read, through the
 * sink's two calls; it never learns how the graph is written. The writer
 * (io/onnx.c) implements the sink. Names of tensors are strings owned by
 * the caller and copied by the sink. A layer kind with no export hook
 * (ops->export NULL) cannot be exported, and the writer refuses it by
 * name. */
#ifndef AKK_EXPORT_H
#define AKK_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

enum akk_attr_type {
	AKK_ATTR_INT,		/* i */
	AKK_ATTR_FLOAT,		/* f */
	AKK_ATTR_INTS,		/* ints[0..n) */
	AKK_ATTR_STRING,	/* s */
	AKK_ATTR_STRINGS,	/* strs[0..n) */
};

/* One attribute of a node: "alpha" 0.01, "kernel_shape" [5, 5], ... */
struct akk_attr {
	const char *name;
	enum akk_attr_type type;
	int64_t i;
	float f;
	const int64_t *ints;
	int n;
	const char *s;
	const char *const *strs;
};

#define AKK_ATTR_I(nm, v) { .name = (nm), .type = AKK_ATTR_INT, .i = (v) }
#define AKK_ATTR_F(nm, v) { .name = (nm), .type = AKK_ATTR_FLOAT, .f = (v) }
#define AKK_ATTR_S(nm, v) { .name = (nm), .type = AKK_ATTR_STRING, .s = (v) }
#define AKK_ATTR_IS(nm, v, cnt)                                              \
	{ .name = (nm), .type = AKK_ATTR_INTS, .ints = (v), .n = (cnt) }
#define AKK_ATTR_SS(nm, v, cnt)                                              \
	{ .name = (nm), .type = AKK_ATTR_STRINGS, .strs = (v), .n = (cnt) }

struct akk_graph_sink {
	/* Add a node computing outputs out[0..nout) from inputs in[0..nin)
	 * with operator op ("Gemm", "Relu", ...). 0, or -1 with e filled. */
	int (*node)(struct akk_graph_sink *g, const char *op,
		    const char *const *in, int nin, const char *const *out,
		    int nout, const struct akk_attr *attrs, int nattrs,
		    struct akk_err *e);
	/* Add a float32 initializer called name, of dims[0..rank), holding
	 * the product of dims floats from data (copied). */
	int (*tensor)(struct akk_graph_sink *g, const char *name,
		      const int64_t *dims, int rank, const float *data,
		      struct akk_err *e);
	void *ctx;		/* the writer's */
};

/* What a layer's export hook gets: its input and output tensor names, a
 * unique prefix for the names of its initializers ("g1.l2.dense"), and
 * its parameters p (l->nparams) and state s (l->nstate) in the layout of
 * the layer's views. */
struct akk_export_io {
	const char *x, *y;
	const char *prefix;
	const float *p, *s;
};

/* "prefix.what" into buf (an initializer's name). */
static inline const char *akk_export_name(char *buf, size_t size,
					  const char *prefix, const char *what)
{
	snprintf(buf, size, "%s.%s", prefix, what);
	return buf;
}

/* The common case: one node of op from io->x to io->y, no initializers. */
static inline int akk_export_unary(struct akk_graph_sink *g,
				   const struct akk_export_io *io,
				   const char *op, const struct akk_attr *attrs,
				   int nattrs, struct akk_err *e)
{
	return g->node(g, op, &io->x, 1, &io->y, 1, attrs, nattrs, e);
}

/* op over the steps of a sequence: ONNX's Conv and pools want (N, C, T),
 * a sequence is (N, T, C) here, so io->x is transposed in, op runs with
 * inputs x and more[0..nmore) (initializer names), and its output is
 * transposed back into io->y. */
static inline int akk_export_over_time(struct akk_graph_sink *g,
				       const struct akk_export_io *io,
				       const char *op, const char *const *more,
				       int nmore, const struct akk_attr *attrs,
				       int nattrs, struct akk_err *e)
{
	static const int64_t perm[3] = { 0, 2, 1 };
	struct akk_attr tp = AKK_ATTR_IS("perm", perm, 3);
	char xb[256], yb[256];
	const char *ins[3] = { akk_export_name(xb, sizeof(xb), io->prefix, "x_nct"),
			       nmore > 0 ? more[0] : NULL,
			       nmore > 1 ? more[1] : NULL };
	const char *yn = akk_export_name(yb, sizeof(yb), io->prefix, "y_nct");

	return g->node(g, "Transpose", &io->x, 1, &ins[0], 1, &tp, 1, e) ||
	       g->node(g, op, ins, 1 + nmore, &yn, 1, attrs, nattrs, e) ||
	       g->node(g, "Transpose", &yn, 1, &io->y, 1, &tp, 1, e) ? -1 : 0;
}

#endif
