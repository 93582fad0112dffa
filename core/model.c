/* model.c - shape inference over the gates of a spec. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void describe(char *buf, int size, const struct akk_layer *l, int gate,
		     int layer)
{
	snprintf(buf, size, "layer '%s' (gate %d, layer %d)", l->ops->name,
		 gate + 1, layer + 1);
}

int akk_model_plan(struct akk_model *m, const struct akk_spec *s,
		   struct akk_err *e)
{
	struct akk_shape cur = s->input;
	const struct akk_layer *prev = NULL;
	int prev_gate = 0, prev_layer = 0;

	memset(m, 0, sizeof(*m));
	m->spec = s;
	m->gates = calloc(s->ngates, sizeof(*m->gates));
	if (!m->gates)
		return akk_err_set(e, "out of memory");
	m->ngates = s->ngates;
	for (int gi = 0; gi < s->ngates; gi++) {
		const struct akk_gate_spec *gs = &s->gates[gi];
		struct akk_gate_plan *g = &m->gates[gi];

		g->index = gi;
		g->optim = gs->has_optim ? &gs->optim : &s->optim;
		g->in = cur;
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
			if (l->ops->plan(l, &le)) {
				char who[96], from[96];
				describe(who, sizeof(who), l, gi, li);
				if (prev)
					describe(from, sizeof(from), prev, prev_gate, prev_layer);
				akk_err_at(e, s->path, l->spec->mark.line, l->spec->mark.col,
					   "%s cannot take the output of %s: %s", who,
					   prev ? from : "network.input", le.msg);
				akk_model_release(m);
				return -1;
			}
			l->poff = g->nparams;
			l->soff = g->nstate;
			g->nparams += l->nparams;
			g->nstate += l->nstate;
			g->act += akk_shape_size(l->out);
			g->aux += l->aux;
			if (l->work > g->work)
				g->work = l->work;
			g->flops += l->flops;
			cur = l->out;
			prev = l;
			prev_gate = gi;
			prev_layer = li;
		}
		g->out = cur;
		m->nparams += g->nparams;
		m->flops += g->flops;
	}
	if (cur.rank != 1) {
		char shape[64];
		const struct akk_gate_spec *last = &s->gates[s->ngates - 1];
		const struct akk_layer_spec *ls = &last->layers[last->nlayers - 1];
		akk_shape_format(cur, shape, sizeof(shape));
		akk_model_release(m);
		return akk_err_at(e, s->path, ls->mark.line, ls->mark.col,
				  "the network must end in a flat output [classes] for the loss, but %s outputs %s; add flatten and dense",
				  "its last layer", shape);
	}
	m->classes = cur.d[0];
	m->train_flops = 3 * m->flops - m->gates[0].layers[0].flops;
	if (m->classes < 2) {
		const struct akk_gate_spec *last = &s->gates[s->ngates - 1];
		const struct akk_layer_spec *ls = &last->layers[last->nlayers - 1];
		akk_model_release(m);
		return akk_err_at(e, s->path, ls->mark.line, ls->mark.col,
				  "the network must output at least 2 classes, but its last layer outputs %d",
				  cur.d[0]);
	}
	return 0;
}

void akk_model_release(struct akk_model *m)
{
	if (!m->gates)
		return;
	for (int i = 0; i < m->ngates; i++)
		free(m->gates[i].layers);
	free(m->gates);
	m->gates = NULL;
	m->ngates = 0;
}

int akk_gate_needs_stash(const struct akk_gate_plan *g)
{
	for (int i = 0; i < g->nlayers; i++)
		if (g->layers[i].nparams && (g->index > 0 || i > 0))
			return 1;
	return 0;
}
