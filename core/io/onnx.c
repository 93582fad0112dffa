/* onnx.c - the ONNX writer: the graph sink of nn/export.h over protobuf-c.
 *
 * Every message, string and array of the model is allocated from one list
 * of blocks (struct onnx) and freed at once after packing; the messages
 * point into each other as protobuf-c expects. */
#include "io/onnx.h"

#include "model/flow.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

#include "base/file.h"
#include "config/spec_inputs.h"
#include "data/batch.h"
#include "model/flow.h"
#include "nn/export.h"
#include "nn/loss.h"

struct onnx {
	void **blocks;		/* everything allocated, freed by onnx_release */
	size_t nblocks, cap;
	Onnx__NodeProto **nodes;	/* a block, regrown */
	size_t nnodes, capnodes;
	Onnx__TensorProto **inits;	/* a block, regrown */
	size_t ninits, capinits;
};

static void *onnx_alloc(struct onnx *o, size_t size)
{
	void *p;

	if (o->nblocks == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		void **b = realloc(o->blocks, cap * sizeof(*b));
		if (!b)
			return NULL;
		o->blocks = b;
		o->cap = cap;
	}
	if (!(p = calloc(1, size ? size : 1)))
		return NULL;
	o->blocks[o->nblocks++] = p;
	return p;
}

static char *onnx_str(struct onnx *o, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = onnx_alloc(o, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

/* Append to the node and initializer arrays, regrown outside the block
 * list. */
static int push_node(struct onnx *o, Onnx__NodeProto *n)
{
	if (o->nnodes == o->capnodes) {
		size_t cap = o->capnodes ? 2 * o->capnodes : 32;
		Onnx__NodeProto **v = realloc(o->nodes, cap * sizeof(*v));
		if (!v)
			return -1;
		o->nodes = v;
		o->capnodes = cap;
	}
	o->nodes[o->nnodes++] = n;
	return 0;
}

static int push_init(struct onnx *o, Onnx__TensorProto *t)
{
	if (o->ninits == o->capinits) {
		size_t cap = o->capinits ? 2 * o->capinits : 32;
		Onnx__TensorProto **v = realloc(o->inits, cap * sizeof(*v));
		if (!v)
			return -1;
		o->inits = v;
		o->capinits = cap;
	}
	o->inits[o->ninits++] = t;
	return 0;
}

static void onnx_release(struct onnx *o)
{
	for (size_t i = 0; i < o->nblocks; i++)
		free(o->blocks[i]);
	free(o->blocks);
	free(o->nodes);
	free(o->inits);
}

static Onnx__AttributeProto *make_attr(struct onnx *o,
				       const struct akk_attr *at)
{
	Onnx__AttributeProto *a = onnx_alloc(o, sizeof(*a));

	if (!a)
		return NULL;
	onnx__attribute_proto__init(a);
	if (!(a->name = onnx_str(o, at->name)))
		return NULL;
	a->has_type = 1;
	switch (at->type) {
	case AKK_ATTR_INT:
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		a->has_i = 1;
		a->i = at->i;
		break;
	case AKK_ATTR_FLOAT:
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
		a->has_f = 1;
		a->f = at->f;
		break;
	case AKK_ATTR_INTS:
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		if (!(a->ints = onnx_alloc(o, at->n * sizeof(*a->ints))))
			return NULL;
		memcpy(a->ints, at->ints, at->n * sizeof(*a->ints));
		a->n_ints = at->n;
		break;
	case AKK_ATTR_STRING:
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
		a->has_s = 1;
		if (!(a->s.data = (uint8_t *)onnx_str(o, at->s)))
			return NULL;
		a->s.len = strlen(at->s);
		break;
	case AKK_ATTR_STRINGS:
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
		if (!(a->strings = onnx_alloc(o, at->n * sizeof(*a->strings))))
			return NULL;
		for (int i = 0; i < at->n; i++) {
			if (!(a->strings[i].data = (uint8_t *)onnx_str(o, at->strs[i])))
				return NULL;
			a->strings[i].len = strlen(at->strs[i]);
		}
		a->n_strings = at->n;
		break;
	}
	return a;
}

static char **str_array(struct onnx *o, const char *const *s, int n)
{
	char **v = onnx_alloc(o, n * sizeof(*v));

	for (int i = 0; v && i < n; i++)
		if (!(v[i] = onnx_str(o, s[i])))
			return NULL;
	return v;
}

/* The sink's node: named after its first output, which is unique. */
static int sink_node(struct akk_graph_sink *g, const char *op,
		     const char *const *in, int nin, const char *const *out,
		     int nout, const struct akk_attr *attrs, int nattrs,
		     struct akk_err *e)
{
	struct onnx *o = g->ctx;
	Onnx__NodeProto *n = onnx_alloc(o, sizeof(*n));

	if (!n)
		return akk_err_set(e, "out of memory");
	onnx__node_proto__init(n);
	n->op_type = onnx_str(o, op);
	n->name = onnx_str(o, out[0]);
	n->input = str_array(o, in, nin);
	n->output = str_array(o, out, nout);
	n->attribute = onnx_alloc(o, nattrs * sizeof(*n->attribute));
	if (!n->op_type || !n->name || !n->input || !n->output || !n->attribute)
		return akk_err_set(e, "out of memory");
	n->n_input = nin;
	n->n_output = nout;
	for (int i = 0; i < nattrs; i++)
		if (!(n->attribute[i] = make_attr(o, &attrs[i])))
			return akk_err_set(e, "out of memory");
	n->n_attribute = nattrs;
	if (push_node(o, n))
		return akk_err_set(e, "out of memory");
	return 0;
}

static int sink_tensor(struct akk_graph_sink *g, const char *name,
		       const int64_t *dims, int rank, const float *data,
		       struct akk_err *e)
{
	struct onnx *o = g->ctx;
	Onnx__TensorProto *t = onnx_alloc(o, sizeof(*t));
	size_t count = 1;

	if (!t)
		return akk_err_set(e, "out of memory");
	onnx__tensor_proto__init(t);
	for (int i = 0; i < rank; i++)
		count *= (size_t)dims[i];
	t->name = onnx_str(o, name);
	t->dims = onnx_alloc(o, rank * sizeof(*t->dims));
	t->float_data = onnx_alloc(o, count * sizeof(*t->float_data));
	if (!t->name || !t->dims || !t->float_data)
		return akk_err_set(e, "out of memory");
	memcpy(t->dims, dims, rank * sizeof(*t->dims));
	t->n_dims = rank;
	memcpy(t->float_data, data, count * sizeof(*t->float_data));
	t->n_float_data = count;
	t->has_data_type = 1;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	if (push_init(o, t))
		return akk_err_set(e, "out of memory");
	return 0;
}

/* A graph input or output: float32 ["N", dims of one sample]. */
static Onnx__ValueInfoProto *value_info(struct onnx *o, const char *name,
					struct akk_shape sh)
{
	Onnx__ValueInfoProto *v = onnx_alloc(o, sizeof(*v));
	Onnx__TypeProto *t = onnx_alloc(o, sizeof(*t));
	Onnx__TypeProto__Tensor *tt = onnx_alloc(o, sizeof(*tt));
	Onnx__TensorShapeProto *s = onnx_alloc(o, sizeof(*s));
	Onnx__TensorShapeProto__Dimension **d =
		onnx_alloc(o, (sh.rank + 1) * sizeof(*d));

	if (!v || !t || !tt || !s || !d)
		return NULL;
	onnx__value_info_proto__init(v);
	onnx__type_proto__init(t);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(s);
	for (int i = 0; i <= sh.rank; i++) {
		if (!(d[i] = onnx_alloc(o, sizeof(*d[i]))))
			return NULL;
		onnx__tensor_shape_proto__dimension__init(d[i]);
		if (i == 0) {
			d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			if (!(d[i]->dim_param = onnx_str(o, "N")))
				return NULL;
		} else {
			d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d[i]->dim_value = sh.d[i - 1];
		}
	}
	s->dim = d;
	s->n_dim = sh.rank + 1;
	tt->has_elem_type = 1;
	tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	tt->shape = s;
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	v->type = t;
	if (!(v->name = onnx_str(o, name)))
		return NULL;
	return v;
}

int akk_onnx_input_map(const struct akk_checkpoint *c,
		       const struct akk_spec *s, float *a, float *b, size_t n,
		       struct akk_err *e)
{
	struct akk_preprocess pre = { 0 };

	if ((long)n != akk_shape_size(s->input))
		return akk_err_set(e, "the input map has %zu values, the network "
				   "takes %ld", n, akk_shape_size(s->input));
	if (akk_checkpoint_input_map(c, s, &pre, e))
		return -1;
	if (pre.in != n) {
		akk_preprocess_release(&pre);
		return akk_err_set(e, "the checkpoint's input map has %zu values, the network "
				   "takes %zu", pre.in, n);
	}
	memcpy(a, pre.a, n * sizeof(*a));
	memcpy(b, pre.b, n * sizeof(*b));
	akk_preprocess_release(&pre);
	return 0;
}

int akk_onnx_check(const struct akk_model *m, const char *path,
		   struct akk_err *e)
{
	for (int g = 0; g < m->ngates; g++)
		for (int i = 0; i < m->gates[g].nlayers; i++) {
			const struct akk_layer *l = &m->gates[g].layers[i];
			if (!l->ops->export)
				return akk_err_at(e, path, 0, 0, "layer kind '%s' (gate %d, layer %d) cannot be exported to ONNX",
						  l->ops->name, g + 1, i + 1);
		}
	return 0;
}

int akk_onnx_check_finite(const struct akk_model *m, struct akk_gate *const *gates,
			  const char *path, struct akk_err *e)
{
	size_t in = (size_t)akk_shape_size(m->spec->input);
	float *x = malloc(2 * in * sizeof(*x));
	const float *h;
	int rc = 0;

	int vocab = akk_embedding_vocab(&gates[0]->layers[0]);
	float lo = -1, hi = 1;
	char probe[64] = "every network input -1 or +1";

	if (!x)
		return akk_err_set(e, "out of memory");
	/* token ids: the table's first and last rows (-1 is no id) */
	if (vocab) {
		lo = 0;
		hi = (float)(vocab - 1);
		snprintf(probe, sizeof(probe), "every token id 0 or %d", vocab - 1);
	}
	for (size_t k = 0; k < in; k++) {
		x[k] = lo;
		x[in + k] = hi;
	}
	struct akk_flow *flows = calloc((size_t)m->ngates, sizeof(*flows));
	const float **outs = calloc((size_t)m->ngates, sizeof(*outs));
	if (!flows || !outs || akk_flows_init(flows, m, 0, 1, 2, e)) {
		free(flows);
		free(outs);
		free(x);
		return flows && outs ? -1 : akk_err_set(e, "out of memory");
	}
	for (int gi = 0; gi < m->ngates && !rc; gi++) {
		struct akk_gate *g = gates[gi];
		const float *srcs[AKK_MAX_JOIN];

		for (int k = 0; k < g->plan->nsrc; k++)
			srcs[k] = g->plan->src[k] < 0 ? x : outs[g->plan->src[k]];
		h = akk_gate_eval(g, 0, akk_flow_join_eval(&flows[gi], 0, srcs, 2), 2);
		outs[gi] = h;
		/* every layer's output, in order: the first that is not
		 * finite is where the values overflow */
		for (int li = 0; li < g->plan->nlayers && !rc; li++) {
			const struct akk_layer *l = &g->layers[li];
			const float *y = g->evals[0].act +
					 2 * g->act_off[l->act_out ? li + 1 : li];
			size_t n = 2 * (size_t)akk_shape_size(l->out);

			if (akk_gate_fused_away(g, li))
				continue;
			for (size_t k = 0; k < n; k++)
				if (!isfinite(y[k])) {
					rc = akk_err_at(e, path, 0, 0, "the weights overflow: layer 'g%d.l%d.%s' "
							"gives %s on a probe input (%s)",
							gi + 1, li + 1, l->ops->name,
							isnan(y[k]) ? "NaN" : "an infinite value", probe);
					break;
				}
		}
	}
	akk_flows_release(flows, m->ngates);
	free(flows);
	free(outs);
	free(x);
	return rc;
}

static enum akk_output_kind output_kind(const struct akk_model *m)
{
	return akk_loss_output(m->spec->loss, m->spec->data.task == AKK_TASK_REGRESSION);
}

struct akk_shape akk_onnx_output_shape(const struct akk_model *m)
{
	/* targets that are the data's own values: the last layer's shape
	 * (an image stays an image) */
	if (m->spec->data.targets != AKK_TARGETS_LABELS)
		return m->gates[m->ngates - 1].out;
	return m->steps > 1 ? (struct akk_shape){ 2, { m->steps, m->classes, 0 } } :
			      (struct akk_shape){ 1, { m->classes, 0, 0 } };
}

const char *akk_onnx_output(const struct akk_model *m)
{
	return output_kind(m) == AKK_OUTPUT_VALUES ? AKK_ONNX_VALUES : AKK_ONNX_OUTPUT;
}

/* The last node: the last layer's output cur turned into the graph's
 * output as predict turns it (nn/loss.h, akk_loss_output). */
static int output_node(struct akk_graph_sink *g, const struct akk_model *m,
		       const char *cur, struct akk_err *e)
{
	const char *out = akk_onnx_output(m);
	/* a sequence output [N, T, classes]: a softmax per step */
	struct akk_attr axis = AKK_ATTR_I("axis", m->steps > 1 ? 2 : 1);

	switch (output_kind(m)) {
	case AKK_OUTPUT_VALUES:
		return g->node(g, "Identity", &cur, 1, &out, 1, NULL, 0, e);
	case AKK_OUTPUT_SIGMOID:
		return g->node(g, "Sigmoid", &cur, 1, &out, 1, NULL, 0, e);
	case AKK_OUTPUT_SOFTMAX:
		break;
	}
	return g->node(g, "Softmax", &cur, 1, &out, 1, &axis, 1, e);
}

/* A network with several outputs: one graph output per head, named as
 * the head, its slice of the last layer's output cur (Slice on axis 1
 * through Constant starts, ends and axes) turned into what predict gives
 * for it (Softmax, Sigmoid or Identity). */
static int head_nodes(struct akk_graph_sink *g, const struct akk_model *m,
		      const char *cur, struct akk_err *e)
{
	static const char *const ops[] = { [AKK_OUTPUT_VALUES] = "Identity",
		[AKK_OUTPUT_SIGMOID] = "Sigmoid", [AKK_OUTPUT_SOFTMAX] = "Softmax" };
	static const char *const what[3] = { "starts", "ends", "axes" };
	const struct akk_spec *s = m->spec;
	struct akk_attr axis = AKK_ATTR_I("axis", 1);

	for (int i = 0; i < s->nheads; i++) {
		int off = akk_head_offset(s, i, m->classes);
		const int64_t v[3] = { off, off + akk_head_size(s, i, m->classes), 1 };
		char names[4][300];
		const char *ins[4] = { cur, names[0], names[1], names[2] };
		const char *sliced = names[3], *out = s->heads[i].name;
		enum akk_output_kind kind = akk_head_output(s, i);

		for (int k = 0; k < 3; k++) {
			struct akk_attr a = AKK_ATTR_IS("value_ints", &v[k], 1);
			const char *o = names[k];
			snprintf(names[k], sizeof(names[k]), "heads.%s.%s", out, what[k]);
			if (g->node(g, "Constant", NULL, 0, &o, 1, &a, 1, e))
				return -1;
		}
		snprintf(names[3], sizeof(names[3]), "heads.%s", out);
		if (g->node(g, "Slice", ins, 4, &sliced, 1, NULL, 0, e) ||
		    g->node(g, ops[kind], &sliced, 1, &out, 1, &axis,
			    kind == AKK_OUTPUT_SOFTMAX, e))
			return -1;
	}
	return 0;
}

/* The name of gate gi's last layer's output ("g2.l3.relu"). */
static void gate_output(const struct akk_model *m, int gi, char *buf, size_t size)
{
	const struct akk_gate_plan *p = &m->gates[gi];

	snprintf(buf, size, "g%d.l%d.%s", gi + 1, p->nlayers,
		 p->layers[p->nlayers - 1].ops->name);
}

/* Gate gi's input into name: the network input's (after preprocessing),
 * a source gate's output, or its sources joined: a Concat on axis 1 (the
 * first dimension of a sample), or Adds in source order ("g4.join"). */
static int gate_input(struct akk_graph_sink *g, const struct akk_model *m, int gi,
		      const char *input, char *name, size_t size, struct akk_err *e)
{
	const struct akk_gate_plan *p = &m->gates[gi];
	char in[AKK_MAX_JOIN][256], sum[256];
	const char *ins[AKK_MAX_JOIN], *out = name;
	struct akk_attr axis = AKK_ATTR_I("axis", 1);

	for (int k = 0; k < p->nsrc; k++) {
		if (p->src[k] < 0 && m->spec->ninputs)
			snprintf(in[k], sizeof(in[k]), "%s.%s", input,
				 m->spec->inputs[p->src_in[k]].name);
		else if (p->src[k] < 0)
			snprintf(in[k], sizeof(in[k]), "%s", input);
		else
			gate_output(m, p->src[k], in[k], sizeof(in[k]));
		ins[k] = in[k];
	}
	if (p->nsrc == 1) {
		snprintf(name, size, "%s", in[0]);
		return 0;
	}
	snprintf(name, size, "g%d.join", gi + 1);
	if (p->join == AKK_JOIN_CONCAT)
		return g->node(g, "Concat", ins, p->nsrc, &out, 1, &axis, 1, e);
	for (int k = 1; k < p->nsrc; k++) {
		const char *pair[2] = { k == 1 ? in[0] : sum, in[k] };
		char next[256];
		const char *o = next;
		if (k + 1 == p->nsrc)
			snprintf(next, sizeof(next), "%s", name);
		else
			snprintf(next, sizeof(next), "g%d.join.%d", gi + 1, k);
		if (g->node(g, "Add", pair, 2, &o, 1, NULL, 0, e))
			return -1;
		snprintf(sum, sizeof(sum), "%s", next);
	}
	return 0;
}

/* The input map on graph input `name` of shape in, a and b its n
 * values: "preprocess" + tail ("" for the one input, ".NAME" for a named
 * one), a Mul and an Add. */
static int preprocess_nodes(struct akk_graph_sink *g, const char *name, const char *tail,
			    struct akk_shape in, const float *a, const float *b,
			    struct akk_err *e)
{
	int64_t dims[4];
	char scale[96], shift[96], scaled[96], out[96];
	const char *mul_in[2] = { name, scale }, *add_in[2] = { scaled, shift };
	const char *mul_out = scaled, *add_out = out;

	snprintf(scale, sizeof(scale), "preprocess.scale%s", tail);
	snprintf(shift, sizeof(shift), "preprocess.shift%s", tail);
	snprintf(scaled, sizeof(scaled), "preprocess.scaled%s", tail);
	snprintf(out, sizeof(out), "preprocess%s", tail);
	for (int i = 0; i < in.rank; i++)
		dims[i] = in.d[i];
	return g->tensor(g, scale, dims, in.rank, a, e) ||
	       g->tensor(g, shift, dims, in.rank, b, e) ||
	       g->node(g, "Mul", mul_in, 2, &mul_out, 1, NULL, 0, e) ||
	       g->node(g, "Add", add_in, 2, &add_out, 1, NULL, 0, e) ? -1 : 0;
}

/* Preprocessing, every layer, the output node: the nodes and
 * initializers. With named inputs, each graph input (its name) has the
 * input map's slice of its own, "preprocess.NAME". */
static int build_graph(struct akk_graph_sink *g,
		       const struct akk_onnx_source *src, struct akk_err *e)
{
	const struct akk_model *m = src->m;
	const struct akk_spec *s = m->spec;
	char cur[256], next[256], tail[AKK_INPUT_NAME + 1];

	if (!s->ninputs && preprocess_nodes(g, AKK_ONNX_INPUT, "", s->input, src->a, src->b, e))
		return -1;
	for (int i = 0; i < s->ninputs; i++) {
		snprintf(tail, sizeof(tail), ".%s", s->inputs[i].name);
		if (preprocess_nodes(g, s->inputs[i].name, tail, s->inputs[i].shape,
				     src->a + s->inputs[i].off, src->b + s->inputs[i].off, e))
			return -1;
	}
	for (int gi = 0; gi < m->ngates; gi++) {
		const struct akk_gate *gate = src->gates[gi];
		if (gate_input(g, m, gi, "preprocess", cur, sizeof(cur), e))
			return -1;
		for (int li = 0; li < m->gates[gi].nlayers; li++) {
			const struct akk_layer *l = &m->gates[gi].layers[li];
			snprintf(next, sizeof(next), "g%d.l%d.%s", gi + 1,
				 li + 1, l->ops->name);
			struct akk_export_io io = { cur, next, next,
						    gate->params + l->poff,
						    gate->state + l->soff };
			if (l->ops->export(l, g, &io, e))
				return -1;
			memcpy(cur, next, sizeof(cur));
		}
	}
	return m->spec->nheads ? head_nodes(g, m, cur, e) : output_node(g, m, cur, e);
}

/* The graph's outputs: one, or one per head, [N, size] each. */
static int graph_outputs(struct onnx *o, const struct akk_model *m,
			 Onnx__ValueInfoProto **gout, struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	struct akk_shape out = akk_onnx_output_shape(m);

	for (int i = 0; i < s->nheads; i++) {
		/* the only names without a dot besides the outputs */
		if (!strcmp(s->heads[i].name, AKK_ONNX_INPUT) ||
		    !strcmp(s->heads[i].name, "preprocess") ||
		    akk_spec_input_index(s->inputs, s->ninputs, s->heads[i].name) >= 0)
			return akk_err_at(e, s->path, s->heads[i].mark.line, s->heads[i].mark.col,
					  "output '%s' cannot be exported: ONNX names the graph's input and preprocessing so; rename the output",
					  s->heads[i].name);
		out = (struct akk_shape){ 1, { akk_head_size(s, i, m->classes), 0, 0 } };
		if (!(gout[i] = value_info(o, s->heads[i].name, out)))
			return akk_err_set(e, "out of memory");
	}
	if (!s->nheads && !(gout[0] = value_info(o, akk_onnx_output(m), out)))
		return akk_err_set(e, "out of memory");
	return 0;
}

int akk_onnx_write(const char *path, const struct akk_onnx_source *src,
		   struct akk_err *e)
{
	struct onnx o = { 0 };
	struct akk_graph_sink sink = { sink_node, sink_tensor, &o };
	Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
	Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
	Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	Onnx__OperatorSetIdProto *opsets[1] = { &opset };
	Onnx__ValueInfoProto *gin[AKK_MAX_INPUTS], *gout[AKK_MAX_HEADS];
	const struct akk_spec *s = src->m->spec;
	uint8_t *buf = NULL;
	size_t len;
	int rc = -1;

	if (akk_onnx_check(src->m, "", e) || graph_outputs(&o, src->m, gout, e) ||
	    build_graph(&sink, src, e))
		goto out;
	for (int i = 0; i < (s->ninputs ? s->ninputs : 1); i++)
		if (!(gin[i] = s->ninputs ? value_info(&o, s->inputs[i].name, s->inputs[i].shape) :
			       value_info(&o, AKK_ONNX_INPUT, s->input))) {
			akk_err_set(e, "out of memory");
			goto out;
		}
	graph.name = (char *)(src->name ? src->name : "akkctl");
	graph.node = o.nodes;
	graph.n_node = o.nnodes;
	graph.initializer = o.inits;
	graph.n_initializer = o.ninits;
	graph.input = gin;
	graph.n_input = s->ninputs ? s->ninputs : 1;
	graph.output = gout;
	graph.n_output = src->m->spec->nheads ? src->m->spec->nheads : 1;
	opset.domain = "";
	opset.has_version = 1;
	opset.version = AKK_ONNX_OPSET;
	model.has_ir_version = 1;
	model.ir_version = AKK_ONNX_IR_VERSION;
	model.opset_import = opsets;
	model.n_opset_import = 1;
	model.producer_name = "akkctl";
	model.producer_version = AKK_VERSION;
	model.graph = &graph;
	len = onnx__model_proto__get_packed_size(&model);
	/* protobuf's own readers stop at 2 GiB */
	if (len >= (size_t)INT32_MAX) {
		akk_err_set(e, "the model would take %zu bytes, more than "
			    "protobuf's 2 GiB", len);
		goto out;
	}
	if (!(buf = malloc(len ? len : 1))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	onnx__model_proto__pack(&model, buf);
	if ((rc = akk_file_replace(path, buf, len, e))) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		akk_err_at(e, path, 0, 0, "cannot write the model: %s", msg);
	}
out:
	free(buf);
	onnx_release(&o);
	return rc;
}
