/* model.c - shape inference over the gates of a spec.
 *
 * Every size is computed with checked arithmetic (checked.h) and held to
 * the limits there: a layer's planning checks its own shapes, and the
 * totals (a gate's activations and kept values per sample, the network's
 * parameters and state) are checked here, each at the layer that passes a
 * limit. */
#include "model/model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "nn/layer_graph.h"

static void describe(char *buf, int size, const struct akk_layer *l, int gate,
		     int layer)
{
	snprintf(buf, size, "layer '%s' (gate %d, layer %d)", l->ops->name,
		 gate + 1, layer + 1);
}

/* network.input: each dimension at least 1 (the spec checks it), and at
 * most AKK_MAX_DIM values per sample, before any layer multiplies them. */
static int input_check(const struct akk_spec *s, struct akk_err *e)
{
	size_t n = 1;
	char shape[64];

	if (s->input.rank < 1 || s->input.rank > 3)
		return akk_err_at(e, s->path, s->input_mark.line,
				  s->input_mark.col,
				  "'input' must have 1, 2 or 3 dimensions, got %d",
				  s->input.rank);
	for (int i = 0; i < s->input.rank; i++)
		if (s->input.d[i] < 1 ||
		    !akk_mul_ok(n, (size_t)s->input.d[i], &n) ||
		    n > AKK_MAX_DIM) {
			akk_shape_format(s->input, shape, sizeof(shape));
			return akk_err_at(e, s->path, s->input_mark.line,
					  s->input_mark.col,
					  "'input' %s must have between 1 and %zu values per sample",
					  shape, AKK_MAX_DIM);
		}
	return 0;
}

/* What a planned layer adds to its gate and the network, each total held
 * to its limit; the message names what passed which limit. */
static int add_layer(struct akk_model *m, struct akk_gate_plan *g,
		     const struct akk_layer *l, char *what, size_t size)
{
	size_t outn = 1;

	for (int i = 0; i < l->out.rank; i++)
		if (l->out.d[i] < 1 ||
		    !akk_mul_ok(outn, (size_t)l->out.d[i], &outn))
			outn = SIZE_MAX;
	if (l->out.rank < 1 || l->out.rank > 3 || outn > AKK_MAX_DIM ||
	    l->aux > AKK_MAX_DIM || l->work > AKK_MAX_DIM ||
	    l->work_sample > AKK_MAX_DIM) {
		snprintf(what, size, "its output, kept values or scratch would "
			 "pass %zu values per sample", AKK_MAX_DIM);
		return -1;
	}
	if (!akk_add_max(&g->nparams, l->nparams, AKK_MAX_FLOATS) ||
	    !akk_add_max(&m->nparams, l->nparams, AKK_MAX_FLOATS)) {
		snprintf(what, size, "the network would have more than %zu "
			 "parameters", AKK_MAX_FLOATS);
		return -1;
	}
	if (!akk_add_max(&g->nstate, l->nstate, AKK_MAX_FLOATS)) {
		snprintf(what, size, "gate %d would have more than %zu floats "
			 "of state", g->index + 1, AKK_MAX_FLOATS);
		return -1;
	}
	if (!akk_add_max(&g->act, outn, AKK_MAX_FLOATS) ||
	    !akk_add_max(&g->aux, l->aux, AKK_MAX_FLOATS)) {
		snprintf(what, size, "gate %d would keep more than %zu floats "
			 "per sample", g->index + 1, AKK_MAX_FLOATS);
		return -1;
	}
	return 0;
}

/* Forward, parameter gradient and input gradient, each about one forward,
 * but no input gradient from the first layer of a gate that reads the
 * network's inputs alone: nothing upstream takes it. */
static double train_flops(const struct akk_model *m)
{
	double f = 3 * m->flops;

	for (int i = 0; i < m->ngates; i++)
		if (m->gates[i].nlayers && !akk_gate_reads_gates(&m->gates[i]))
			f -= m->gates[i].layers[0].flops;
	return f;
}

/* data.targets input: the output is the input's shape, or flat with as
 * many values (a dense decoder); files: checked against the file when it
 * is read (runtime/run.c). The outputs are one row of m->classes. */
static int plan_value_output(struct akk_model *m, const struct akk_spec *s,
			     struct akk_shape out, struct akk_err *e)
{
	long n = akk_shape_size(out), in = akk_shape_size(s->input);
	int same = out.rank == s->input.rank;

	for (int i = 0; same && i < out.rank; i++)
		same = out.d[i] == s->input.d[i];
	if (s->data.targets == AKK_TARGETS_INPUT && !same && !(out.rank == 1 && n == in)) {
		const struct akk_gate_spec *last = &s->gates[s->ngates - 1];
		const struct akk_layer_spec *ls = &last->layers[last->nlayers - 1];
		char o[64], i[64];
		akk_shape_format(out, o, sizeof(o));
		akk_shape_format(s->input, i, sizeof(i));
		akk_model_release(m);
		return akk_err_at(e, s->path, ls->mark.line, ls->mark.col,
				  "the network outputs %s, but its target (data.targets: input) is its input %s: the output must have the input's shape, or be flat with %ld values",
				  o, i, in);
	}
	m->steps = 1;
	m->classes = (int)n;
	m->train_flops = train_flops(m);
	return 0;
}

static void gate_label(const struct akk_spec *s, int gi, char *buf, size_t n)
{
	if (gi < 0 && s->ninputs)
		snprintf(buf, n, "input '%s'", s->inputs[akk_source_input(gi)].name);
	else if (gi < 0)
		snprintf(buf, n, "network.input");
	else if (s->gates[gi].name[0])
		snprintf(buf, n, "gate '%s'", s->gates[gi].name);
	else
		snprintf(buf, n, "gate %d", gi + 1);
}

/* Gate gi's sources and its input shape: the one source's output, or the
 * sources joined. A concat joins on the first dimension (channels of
 * [C, H, W], features of [F]), the other dimensions equal; an add joins
 * equal shapes. */
static int gate_input(struct akk_model *m, const struct akk_spec *s, int gi,
		      struct akk_err *e)
{
	const struct akk_gate_spec *gs = &s->gates[gi];
	struct akk_gate_plan *g = &m->gates[gi];
	struct akk_shape in;
	char a[64], b[64], sa[64], sb[64];
	int from[AKK_MAX_JOIN];
	struct akk_shape first = { 0 };

	g->nsrc = gs->has_from ? gs->nfrom : 1;
	for (int k = 0; k < g->nsrc; k++) {
		from[k] = gs->has_from ? gs->from[k] : gi - 1;
		g->src[k] = from[k] < 0 ? AKK_GATE_INPUT : from[k];
	}
	g->join = g->nsrc > 1 ? gs->join : AKK_JOIN_NONE;
	for (int k = 0; k < g->nsrc; k++) {
		int i = from[k] < 0 ? akk_source_input(from[k]) : 0;
		struct akk_shape sh = from[k] >= 0 ? m->gates[from[k]].out :
				      s->ninputs ? s->inputs[i].shape : s->input;
		size_t n = (size_t)akk_shape_size(sh);
		int ok = 1;

		g->src_n[k] = n;
		g->src_in[k] = i;
		g->src_at[k] = from[k] < 0 && s->ninputs ? (size_t)s->inputs[i].off : 0;
		g->src_row[k] = from[k] < 0 ? (size_t)akk_shape_size(s->input) : n;
		if (!k) {
			in = first = sh;
			continue;
		}
		g->src_off[k] = g->join == AKK_JOIN_CONCAT ? (size_t)akk_shape_size(in) : 0;
		ok = sh.rank == in.rank && (g->join == AKK_JOIN_ADD || sh.rank != 2);
		for (int d = g->join == AKK_JOIN_CONCAT; ok && d < sh.rank; d++)
			ok = sh.d[d] == in.d[d];
		if (!ok) {
			gate_label(s, from[0], a, sizeof(a));
			gate_label(s, from[k], b, sizeof(b));
			akk_shape_format(first, sa, sizeof(sa));
			akk_shape_format(sh, sb, sizeof(sb));
			return akk_err_at(e, s->path, gs->from_mark.line, gs->from_mark.col,
					  g->join == AKK_JOIN_ADD ?
					  "join: add needs equal shapes, but %s outputs %s and %s outputs %s" :
					  "join: concat joins on the first dimension (channels of [C, H, W], features of [F]) and needs the others equal, but %s outputs %s and %s outputs %s",
					  a, sa, b, sb);
		}
		if (g->join == AKK_JOIN_CONCAT)
			in.d[0] += sh.d[0];
	}
	g->in = in;
	return 0;
}

/* Each gate's readers, in config order, and where its output lies in
 * each reader's input. */
static void link_readers(struct akk_model *m)
{
	for (int r = 0; r < m->ngates; r++) {
		struct akk_gate_plan *rg = &m->gates[r];
		for (int k = 0; k < rg->nsrc; k++) {
			if (rg->src[k] < 0)
				continue;
			struct akk_gate_plan *g = &m->gates[rg->src[k]];
			int j = g->nread++;
			g->readers[j] = r;
			g->rd_off[j] = rg->src_off[k];
			g->rd_in[j] = (size_t)akk_shape_size(rg->in);
			g->rd_whole[j] = rg->join != AKK_JOIN_CONCAT;
		}
	}
}

/* Layer l (li of gate g) cannot take its input (le says why): e at its
 * place, or its inner layer's, naming the layer before it or the input. */
static void plan_failed(const struct akk_spec *s, const struct akk_gate_plan *g,
			const struct akk_layer *l, int li, const struct akk_layer *prev,
			int prev_gate, int prev_layer, const struct akk_err *le,
			struct akk_err *e)
{
	char who[96], from[96];

	describe(who, sizeof(who), l, g->index, li);
	if (prev)
		describe(from, sizeof(from), prev, prev_gate, prev_layer);
	else
		gate_label(s, akk_input_source(g->src_in[0]), from, sizeof(from));
	/* a composite's inner layer gives its own place */
	akk_err_at(e, s->path, le->line ? le->line : l->spec->mark.line,
		   le->line ? le->col : l->spec->mark.col,
		   "%s cannot take the output of %s: %s", who, from, le->msg);
}

/* network.inputs: every input is read by some gate. */
static int inputs_read(const struct akk_model *m, struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	int read[AKK_MAX_INPUTS] = { 0 };

	for (int g = 0; g < m->ngates; g++)
		for (int k = 0; k < m->gates[g].nsrc; k++)
			if (m->gates[g].src[k] < 0)
				read[m->gates[g].src_in[k]] = 1;
	for (int i = 0; i < s->ninputs; i++)
		if (!read[i])
			return akk_err_at(e, s->path, s->inputs[i].mark.line, s->inputs[i].mark.col,
					  "input '%s' is read by no gate: name it in a gate's 'from'",
					  s->inputs[i].name);
	return 0;
}

int akk_model_inputs_fit(const struct akk_model *m, size_t n, const char *what,
			 struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	char sum[AKK_MAX_INPUTS * (AKK_INPUT_NAME + 24)] = "", shape[64];

	if (!s->ninputs || n == (size_t)akk_shape_size(s->input))
		return 0;
	for (int i = 0; i < s->ninputs; i++) {
		akk_shape_format(s->inputs[i].shape, shape, sizeof(shape));
		snprintf(sum + strlen(sum), sizeof(sum) - strlen(sum), "%s%s %s",
			 i ? " + " : "", s->inputs[i].name, shape);
	}
	return akk_err_at(e, s->path, s->inputs_mark.line, s->inputs_mark.col,
			  "the inputs' sizes add up to %ld (%s), but the %s data has %zu values a sample",
			  akk_shape_size(s->input), sum, what, n);
}

int akk_model_inputs(const struct akk_model *m)
{
	int n = 0;

	for (int g = 0; g < m->ngates; g++)
		n += akk_gate_reads_input(&m->gates[g]);
	return n;
}

int akk_gate_reads_input(const struct akk_gate_plan *g)
{
	for (int k = 0; k < g->nsrc; k++)
		if (g->src[k] < 0)
			return 1;
	return 0;
}

int akk_gate_reads_gates(const struct akk_gate_plan *g)
{
	for (int k = 0; k < g->nsrc; k++)
		if (g->src[k] >= 0)
			return 1;
	return 0;
}

int akk_model_is_chain(const struct akk_model *m)
{
	for (int i = 0; i < m->ngates; i++)
		if (m->gates[i].nsrc != 1 || m->gates[i].src[0] != i - 1)
			return 0;
	return 1;
}

int akk_model_plan(struct akk_model *m, const struct akk_spec *s,
		   struct akk_err *e)
{
	struct akk_shape cur = s->input;
	const struct akk_layer *prev = NULL;
	int prev_gate = 0, prev_layer = 0;

	memset(m, 0, sizeof(*m));
	m->spec = s;
	if (input_check(s, e))
		return -1;
	m->gates = calloc(s->ngates, sizeof(*m->gates));
	if (!m->gates)
		return akk_err_set(e, "out of memory");
	m->ngates = s->ngates;
	for (int gi = 0; gi < s->ngates; gi++) {
		const struct akk_gate_spec *gs = &s->gates[gi];
		struct akk_gate_plan *g = &m->gates[gi];

		g->index = gi;
		g->optim = gs->has_optim ? &gs->optim : &s->optim;
		if (gate_input(m, s, gi, e)) {
			akk_model_release(m);
			return -1;
		}
		cur = g->in;
		if (g->src[0] < 0)
			prev = NULL;
		else {
			const struct akk_gate_plan *sg = &m->gates[g->src[0]];
			prev = &sg->layers[sg->nlayers - 1];
			prev_gate = g->src[0];
			prev_layer = sg->nlayers - 1;
		}
		g->layers = calloc(gs->nlayers, sizeof(*g->layers));
		if (!g->layers) {
			akk_model_release(m);
			return akk_err_set(e, "out of memory");
		}
		g->nlayers = gs->nlayers;
		for (int li = 0; li < gs->nlayers; li++) {
			struct akk_layer *l = &g->layers[li];
			struct akk_err le = { 0 };

			l->ops = gs->layers[li].ops;
			l->spec = &gs->layers[li];
			l->in = cur;
			l->max_batch = s->sched.batch_size;
			if (l->ops->plan(l, &le)) {
				plan_failed(s, g, l, li, prev, prev_gate, prev_layer, &le, e);
				akk_model_release(m);
				return -1;
			}
			l->poff = g->nparams;
			l->soff = g->nstate;
			if (add_layer(m, g, l, le.msg, sizeof(le.msg))) {
				char who[96];
				describe(who, sizeof(who), l, gi, li);
				akk_err_at(e, s->path, l->spec->mark.line, l->spec->mark.col,
					   "%s: %s", who, le.msg);
				akk_model_release(m);
				return -1;
			}
			if (l->work > g->work)
				g->work = l->work;
			if (l->work_sample > g->work_sample)
				g->work_sample = l->work_sample;
			g->flops += l->flops;
			cur = l->out;
			prev = l;
			prev_gate = gi;
			prev_layer = li;
		}
		g->out = cur;
		m->flops += g->flops;
	}
	link_readers(m);
	if (inputs_read(m, e)) {
		akk_model_release(m);
		return -1;
	}
	/* targets that are the data's own values: any output shape, its
	 * values as many as the target's (data/targets.h) */
	if (s->data.targets != AKK_TARGETS_LABELS)
		return plan_value_output(m, s, cur, e);
	/* a classifier may end in a sequence [T, classes]: a label per step */
	if (cur.rank != 1 &&
	    (cur.rank != 2 || s->data.task == AKK_TASK_REGRESSION)) {
		char shape[64];
		const struct akk_gate_spec *last = &s->gates[s->ngates - 1];
		const struct akk_layer_spec *ls = &last->layers[last->nlayers - 1];
		akk_shape_format(cur, shape, sizeof(shape));
		akk_model_release(m);
		return akk_err_at(e, s->path, ls->mark.line, ls->mark.col,
				  "the network must end in a flat output [classes] for the loss, or [steps, classes] for a classifier, but %s outputs %s; add flatten and dense",
				  "its last layer", shape);
	}
	m->steps = cur.rank == 2 ? cur.d[0] : 1;
	m->classes = cur.d[cur.rank - 1];
	m->train_flops = train_flops(m);
	if (akk_heads_plan(s, m->steps, akk_model_outputs(m), &m->tmap, e)) {
		akk_model_release(m);
		return -1;
	}
	/* one output is enough for one regression target */
	if (m->classes < (s->data.task == AKK_TASK_REGRESSION ? 1 : 2)) {
		const struct akk_gate_spec *last = &s->gates[s->ngates - 1];
		const struct akk_layer_spec *ls = &last->layers[last->nlayers - 1];
		akk_model_release(m);
		return akk_err_at(e, s->path, ls->mark.line, ls->mark.col,
				  "the network must output at least 2 classes, but its last layer outputs %d",
				  m->classes);
	}
	return 0;
}

double akk_model_loss(const struct akk_model *m, float *dout, const float *out,
		      const int32_t *labels, const float *targets, int B,
		      long *correct, struct akk_reg_sums *rs)
{
	return akk_model_loss_heads(m, dout, out, labels, targets, B, correct, rs, NULL);
}

double akk_model_loss_heads(const struct akk_model *m, float *dout, const float *out,
			    const int32_t *labels, const float *targets, int B,
			    long *correct, struct akk_reg_sums *rs,
			    struct akk_head_sums *hs)
{
	const struct akk_spec *s = m->spec;

	if (s->nheads)
		return akk_heads_loss(s, akk_model_outputs(m), dout, out, labels, targets,
				      B, correct, rs, hs);
	if (s->data.task == AKK_TASK_REGRESSION)
		return akk_loss_targets(s->loss, s->huber_delta, dout, out, targets,
					B, akk_model_outputs(m), rs);
	/* a sequence's steps are rows of their own: the mean over B * steps */
	return akk_loss(s->loss, s->huber_delta, dout, out, labels, B * m->steps,
			m->classes, correct);
}

void akk_model_release(struct akk_model *m)
{
	if (!m->gates)
		return;
	for (int i = 0; i < m->ngates; i++) {
		for (int j = 0; m->gates[i].layers && j < m->gates[i].nlayers; j++)
			akk_layer_release(&m->gates[i].layers[j]);
		free(m->gates[i].layers);
	}
	free(m->gates);
	m->gates = NULL;
	m->ngates = 0;
}

int akk_gate_needs_stash(const struct akk_gate_plan *g)
{
	/* a composite first layer computes its inner layers' input
	 * gradients from its weights, a recurrent one its parameter
	 * gradient */
	for (int i = 0; i < g->nlayers; i++)
		if (g->layers[i].nparams &&
		    (akk_gate_reads_gates(g) || i > 0 || g->layers[i].nsub ||
		     g->layers[i].ops->grad_reads_params))
			return 1;
	return 0;
}

int akk_model_check_ids(const struct akk_model *m, const struct akk_dataset *d,
			const char *path, struct akk_err *e)
{
	const struct akk_gate_plan *g = &m->gates[0];
	int vocab = m->ngates && g->nlayers ? akk_embedding_vocab(&g->layers[0]) : 0;
	/* the ids are the first gate's input: a named input's slice */
	size_t at = g->nsrc == 1 ? g->src_at[0] : 0;
	size_t len = g->nsrc == 1 ? g->src_n[0] : d->in;
	float *row;
	long bad = -1;
	size_t i;

	if (!vocab || !d->n || at + len > d->in)
		return 0;
	if (!(row = malloc(d->in * sizeof(*row) + 1)))
		return akk_err_set(e, "out of memory");
	for (i = 0; i < d->n && bad < 0; i++) {
		for (size_t k = 0; k < d->in; k++)
			row[k] = akk_dataset_x(d, i * d->in + k);
		bad = akk_embedding_bad_id(row + at, len, vocab);
	}
	if (bad >= 0) {
		float v = row[at + (size_t)bad];

		free(row);
		return akk_err_at(e, path, 0, 0,
				  "sample %zu, step %ld: %g is not a token id of the first layer's vocabulary (integers 0 to %d)",
				  i, bad + 1, (double)v, vocab - 1);
	}
	free(row);
	return 0;
}

/* A graph's nodes: the same op and inputs, node by node. */
static int same_nodes(const struct akk_graph_spec *x, const struct akk_graph_spec *y,
		      char *at, size_t size)
{
	if (x->nnodes != y->nnodes) {
		snprintf(at, size, "%d nodes against %d", x->nnodes, y->nnodes);
		return 0;
	}
	for (int i = 0; i < x->nnodes; i++) {
		const struct akk_graph_node *n = &x->nodes[i], *o = &y->nodes[i];
		int same = n->op == o->op && n->nfrom == o->nfrom &&
			   n->start == o->start && n->end == o->end;
		for (int k = 0; same && k < n->nfrom; k++)
			same = n->from[k] == o->from[k];
		if (!same) {
			snprintf(at, size, "node %d: its inputs or its join differ", i + 1);
			return 0;
		}
	}
	return 1;
}

/* Layers x and y of nx and ny, inner layers included; at says where
 * they part (relative: "layer 3 (graph), layer 2 (dense)"). */
static int same_layers(const struct akk_layer *x, int nx, const struct akk_layer *y,
		       int ny, char *at, size_t size)
{
	if (nx != ny) {
		snprintf(at, size, "%d layers against %d", nx, ny);
		return 0;
	}
	for (int i = 0; i < nx; i++) {
		const struct akk_layer *l = &x[i], *o = &y[i];
		int n;
		char *rest;
		size_t left;

		if (!l->ops || !o->ops) {	/* a graph's join: same_nodes */
			if (l->ops != o->ops) {
				snprintf(at, size, "layer %d: a join against a layer", i + 1);
				return 0;
			}
			continue;
		}
		n = snprintf(at, size, "layer %d (%s)", i + 1, l->ops->name);
		rest = at + (n > 0 && (size_t)n < size ? n : 0);
		left = n > 0 && (size_t)n < size ? size - (size_t)n : 0;
		if (!l->nparams && !l->nsub && !o->nparams && !o->nsub)
			continue;	/* holds no weights: its options may change */
		if (l->ops != o->ops || !akk_shape_equal(l->in, o->in) ||
		    !akk_shape_equal(l->out, o->out) || l->nparams != o->nparams ||
		    l->nstate != o->nstate) {
			snprintf(rest, left, ": kind, shapes or sizes differ (%s here)",
				 o->ops->name);
			return 0;
		}
		if (l->ops == &akk_layer_graph &&
		    !same_nodes(l->spec->graph, o->spec->graph, rest + (left ? 2 : 0),
				left > 2 ? left - 2 : 0)) {
			if (left > 2)
				memcpy(rest, ", ", 2);
			return 0;
		}
		if (l->nsub && !same_layers(l->sub, l->nsub, o->sub, o->nsub,
					    rest + (left ? 2 : 0), left > 2 ? left - 2 : 0)) {
			if (left > 2)
				memcpy(rest, ", ", 2);
			return 0;
		}
	}
	return 1;
}

/* The named inputs of a and b: the same names and shapes, in order. */
static int same_inputs(const struct akk_spec *a, const struct akk_spec *b,
		       char *what, size_t size)
{
	char x[64], y[64];

	if (a->ninputs != b->ninputs) {
		snprintf(what, size, "%d named inputs against %d", a->ninputs, b->ninputs);
		return 0;
	}
	for (int i = 0; i < a->ninputs; i++) {
		const struct akk_input_spec *p = &a->inputs[i], *q = &b->inputs[i];
		if (strcmp(p->name, q->name) || !akk_shape_equal(p->shape, q->shape)) {
			akk_shape_format(p->shape, x, sizeof(x));
			akk_shape_format(q->shape, y, sizeof(y));
			snprintf(what, size, "input %d: '%s' %s against '%s' %s", i + 1,
				 p->name, x, q->name, y);
			return 0;
		}
	}
	return 1;
}

int akk_model_same_wiring(const struct akk_model *a, const struct akk_model *b,
			  char *what, size_t size)
{
	if (!same_inputs(a->spec, b->spec, what, size))
		return -1;
	if (a->ngates != b->ngates) {
		snprintf(what, size, "%d gates against %d", a->ngates, b->ngates);
		return -1;
	}
	for (int g = 0; g < a->ngates; g++) {
		const struct akk_gate_plan *x = &a->gates[g], *y = &b->gates[g];
		int n, same = x->nsrc == y->nsrc && (x->nsrc < 2 || x->join == y->join);

		for (int k = 0; same && k < x->nsrc; k++)
			same = x->src[k] == y->src[k] && x->src_in[k] == y->src_in[k];
		if (!same) {
			snprintf(what, size, "gate %d: the gates it reads or its join differ", g + 1);
			return -1;
		}
		n = snprintf(what, size, "gate %d, ", g + 1);
		if (n < 0 || (size_t)n >= size)
			n = 0;
		if (!same_layers(a->gates[g].layers, a->gates[g].nlayers,
				 b->gates[g].layers, b->gates[g].nlayers,
				 what + n, size - (size_t)n))
			return -1;
	}
	snprintf(what, size, "the same");
	return 0;
}
