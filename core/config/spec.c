/* spec.c - the YAML config read with libyaml's document API and checked.
 *
 * The text is loaded into one yaml_document_t with each --set override
 * spliced in (overrides.c), then one walk fills struct akk_spec: every
 * section is a key table of this file, walked by yaml_keys.c (unknown
 * keys, duplicates, missing required keys, ranges and defaults come from
 * the table). A layer's keys come from its kind's option table (layer.h).
 * Defaults sit next to their keys (apply_defaults); strings and
 * lists have theirs in defaults(). Then the cross-checks that span
 * sections. Messages are lowercase and quote their subject: "'lr' must be
 * greater than 0, got -0.1". A float is checked again as the float it is
 * stored as. libyaml's marks are 0-based; reports and stored marks are
 * 1-based. */
#include "config/spec.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/overrides.h"
#include "config/spec_graph.h"
#include "config/yaml_keys.h"
#include "nn/layer_graph.h"

/* One section being walked: its key table and the struct it fills. */
static int h_channels(struct akk_yaml_ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key,
		      yaml_node_t *val);
static int h_scale(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		   yaml_node_t *key, yaml_node_t *val);

/* Each key's default (def) into obj, sub-sections included. Strings, lists
 * and the special keys have theirs in defaults(). */
static void apply_defaults(const struct key *keys, void *obj)
{
	for (const struct key *k = keys; k->name; k++) {
		if (k->fn == akk_yaml_h_section)
			apply_defaults(k->keys, (char *)obj + k->off);
		else if (k->fn == akk_yaml_h_float || k->fn == h_channels ||
			 k->fn == h_scale)
			*FIELD(obj, k, float) = (float)k->def;
		else if (k->fn == akk_yaml_h_int || k->fn == akk_yaml_h_bool ||
			 (k->fn == akk_yaml_h_names && !(k->flags & F_NOSTORE)))
			*FIELD(obj, k, int) = (int)k->def;
	}
}


/* --- the optimizer and its learning-rate schedule ------------------------ */

#define LRS struct akk_lr_spec
#define LR(x) (1u << AKK_LR_##x)

static int h_lr_type(struct akk_yaml_ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val);

static const struct key lr_keys[] = {
	{ .name = "type", .type = YAML_NO_NODE, .fn = h_lr_type,
	  .what = "a name", .off = offsetof(LRS, kind), .names = akk_lr_names,
	  .noun = "lr schedule", .def = AKK_LR_CONSTANT },
	FLOAT("gamma", LRS, gamma, F_LO | F_LO_OPEN | F_HI, 0, 1,
	      LR(STEP) | LR(EXPONENTIAL), 0.1),	/* exponential: 0.95 */
	FLOAT("step_epochs", LRS, step_epochs, F_LO | F_LO_OPEN, 0, 0,
	      LR(STEP), 1),
	FLOAT("min_lr", LRS, min_lr, F_LO, 0, 0, LR(COSINE) | LR(PLATEAU), 0),
	FLOAT("warmup_epochs", LRS, warmup_epochs, F_LO, 0, 0, 0, 0),
	/* plateau: Keras' ReduceLROnPlateau and its defaults */
	FLOAT("factor", LRS, factor, F_LO | F_LO_OPEN | F_HI | F_HI_OPEN, 0, 1,
	      LR(PLATEAU), 0.1),
	KEY("patience", SCALAR, akk_yaml_h_int, "an integer", LRS, patience, F_LO | F_HI,
	    1, 1000000, LR(PLATEAU), 10),
	KEY("cooldown", SCALAR, akk_yaml_h_int, "an integer", LRS, cooldown, F_LO | F_HI,
	    0, 1000000, LR(PLATEAU), 0),
	FLOAT("min_delta", LRS, min_delta, F_LO, 0, 0, LR(PLATEAU), 1e-4),
	{ .name = "monitor", .type = YAML_NO_NODE, .fn = akk_yaml_h_names,
	  .what = "a name", .off = offsetof(LRS, monitor),
	  .applies = LR(PLATEAU), .names = akk_monitor_names,
	  .noun = "monitor", .def = AKK_MON_VAL_LOSS },
	END,
};

static void lr_defaults(struct akk_lr_spec *l, enum akk_lr_kind kind)
{
	apply_defaults(lr_keys, l);
	l->kind = kind;
	if (kind == AKK_LR_EXPONENTIAL)
		l->gamma = 0.95f;
}

/* A schedule type: a different type than the one inherited starts from that
 * type's defaults; the same type keeps the inherited values. */
static int h_lr_type(struct akk_yaml_ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	struct akk_lr_spec *l = sec->obj;
	enum akk_lr_kind old = l->kind;

	if (akk_yaml_h_names(c, k, sec, key, val))
		return -1;
	if (l->kind != old)
		lr_defaults(l, l->kind);
	return 0;
}

#define OPTS struct akk_optim_spec
#define OPT(x) (1u << AKK_OPT_##x)
#define ADAMS (OPT(ADAM) | OPT(ADAMW) | OPT(RADAM))

static const struct key optim_keys[] = {
	NAMES("type", OPTS, kind, F_REQ, akk_optim_names, "optimizer",
	      AKK_OPT_SGD),
	FLOAT("lr", OPTS, lr, F_REQ | F_LO | F_LO_OPEN, 0, 0, 0, 0),
	FLOAT("momentum", OPTS, momentum, F_LO | F_HI | F_HI_OPEN, 0, 1,
	      OPT(MOMENTUM) | OPT(NESTEROV), 0.9),
	FLOAT("beta1", OPTS, beta1, F_LO | F_HI | F_HI_OPEN, 0, 1, ADAMS, 0.9),
	FLOAT("beta2", OPTS, beta2, F_LO | F_HI | F_HI_OPEN, 0, 1, ADAMS,
	      0.999),
	FLOAT("rho", OPTS, rho, F_LO | F_HI | F_HI_OPEN, 0, 1, OPT(RMSPROP),
	      0.99),
	FLOAT("eps", OPTS, eps, F_LO | F_LO_OPEN, 0, 0, OPT(RMSPROP) | ADAMS,
	      1e-8),
	FLOAT("weight_decay", OPTS, weight_decay, F_LO, 0, 0, 0, 0),
	FLOAT("clip_norm", OPTS, clip_norm, F_LO, 0, 0, 0, 0),
	{ .name = "schedule", .type = YAML_NO_NODE, .fn = akk_yaml_h_section,
	  .what = "a name or a mapping", .off = offsetof(OPTS, sched),
	  .flags = F_VAL_MARK, .keys = lr_keys, .shorthand = "type",
	  .mark_off = MARK(OPTS, sched.mark), .kind_what = "schedule" },
	END,
};

/* The optimizer, at top level and in a gate (where no key is required). */
#define OPTIMIZER(T_, F_, FL_, SET_)                                         \
	{ .name = "optimizer", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,   \
	  .what = "a mapping", .off = offsetof(T_, F_), .flags = FL_,        \
	  .keys = optim_keys, .mark_off = MARK(T_, F_.mark),                 \
	  .kind_what = "optimizer", .set_off = SET_ }

/* --- layers -------------------------------------------------------------- */

/* The key table of a layer kind, from its option table (layer.h). */
static void layer_keys(const struct akk_layer_ops *ops, struct key *keys)
{
	static const struct {
		handler fn;
		const char *what;
	} types[] = {
		[AKK_OPTION_INT] = { akk_yaml_h_int, "an integer" },
		[AKK_OPTION_FLOAT] = { akk_yaml_h_float, "a number" },
		[AKK_OPTION_BOOL] = { akk_yaml_h_bool, "true or false" },
		[AKK_OPTION_INIT] = { akk_yaml_h_names, "a name" },
		[AKK_OPTION_NAME] = { akk_yaml_h_names, "a name" },
	};
	size_t n = 0;

	for (const struct akk_layer_option *o = ops->options; o && o->name;
	     o++) {
		int init = o->type == AKK_OPTION_INIT;
		int named = init || o->type == AKK_OPTION_NAME;
		assert(n < AKK_MAX_OPTIONS);
		keys[n++] = (struct key){
			.name = o->name,
			.type = named ? YAML_NO_NODE : YAML_SCALAR_NODE,
			.fn = types[o->type].fn, .what = types[o->type].what,
			.off = o->off, .flags = o->flags, .lo = o->lo,
			.hi = o->hi, .def = o->def,
			.names = init ? akk_init_names : o->names,
			.noun = init ? "init" : o->name,
		};
	}
	keys[n] = (struct key){ .name = NULL };
}

static int residual_item(struct akk_yaml_ctx *c, yaml_node_t *item, yaml_node_t *opts,
			 struct akk_layer_spec *l);
static int layers_before(const struct akk_yaml_ctx *c);
static int layer_kind(struct akk_yaml_ctx *c, yaml_node_t *item,
		      yaml_node_t *name, yaml_node_t *opts,
		      struct akk_layer_spec *l);

/* One item of a gate's layers: NAME, or {NAME: OPTIONS}. */
static int layer_item(struct akk_yaml_ctx *c, yaml_node_t *item,
		      struct akk_layer_spec *l)
{
	yaml_node_t *name, *opts = NULL;
	char buf[96];

	memset(l, 0, sizeof(*l));
	l->mark = akk_yaml_mark_of(c, item);
	if (item->type == YAML_SEQUENCE_NODE || akk_yaml_is_null(item))
		return akk_yaml_fail_type(c, "a layer", "a name or a mapping", item);
	if (item->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *p = item->data.mapping.pairs.start;
		long n = item->data.mapping.pairs.top - p;
		if (n == 0)
			return akk_yaml_fail(c, item, "a layer must be a name or a "
				    "mapping with one key, got an empty mapping");
		if (n > 1) {
			yaml_node_t *second = akk_yaml_node(c, p[1].key);
			return akk_yaml_fail(c, second, "a layer must be a mapping with "
				    "one key, got a second key %s (each layer "
				    "is its own list item)",
				    akk_yaml_describe(second, buf, sizeof(buf)));
		}
		name = akk_yaml_node(c, p->key);
		opts = akk_yaml_node(c, p->value);
	} else {
		name = item;
	}
	return layer_kind(c, item, name, opts, l);
}

/* The layer of kind name with options opts (NULL: none), written at item
 * (a gate's list item, or a graph's node). */
static int layer_kind(struct akk_yaml_ctx *c, yaml_node_t *item,
		      yaml_node_t *name, yaml_node_t *opts,
		      struct akk_layer_spec *l)
{
	struct key keys[AKK_MAX_OPTIONS + 1];
	char buf[96], secname[64];

	memset(l, 0, sizeof(*l));
	l->mark = akk_yaml_mark_of(c, item);
	if (name->type != YAML_SCALAR_NODE || akk_yaml_is_null(name) || akk_yaml_tag_type(name))
		return akk_yaml_fail_type(c, "a layer name", "a name", name);
	l->ops = akk_layer_find(akk_yaml_text(name));
	if (!l->ops)
		return akk_yaml_fail(c, name, "unknown layer '%s'%s", akk_yaml_text(name),
			    akk_yaml_suggest(akk_yaml_text(name), akk_layer_names,
				    akk_yaml_count_names(akk_layer_names),
				    sizeof(akk_layer_names[0]), buf,
				    sizeof(buf)));
	if (l->ops == &akk_layer_residual)
		return residual_item(c, item, opts, l);
	if (l->ops == &akk_layer_graph)
		return akk_spec_graph_item(c, item, opts, l, layer_kind,
					   AKK_MAX_LAYERS - layers_before(c),
					   AKK_MAX_LAYERS);
	layer_keys(l->ops, keys);
	apply_defaults(keys, l);
	snprintf(secname, sizeof(secname), "layer '%s'", l->ops->name);
	struct section sec = { secname, keys, l, 0, 0, NULL, NULL };
	if (!opts || akk_yaml_is_null(opts)) {
		/* No options: only the required keys can be wrong. */
		for (const struct key *k = keys; k->name; k++)
			if (k->flags & F_REQ)
				return akk_yaml_fail(c, opts && akk_yaml_node_set(c, opts) >= 0 ?
					    opts : item,
					    "missing required key '%s' in %s",
					    k->name, secname);
	} else if (opts->type == YAML_SCALAR_NODE && l->ops->shorthand) {
		const struct key *k = keys;
		while (strcmp(k->name, l->ops->shorthand))
			k++;
		if (k->fn(c, k, &sec, NULL, opts))
			return -1;
	} else if (opts->type == YAML_MAPPING_NODE) {
		yaml_node_t *kn, *iv;
		if (akk_yaml_walk(c, opts, &sec))
			return -1;
		iv = akk_yaml_map_get(c, opts, "init_value", &kn);
		if (iv && l->init != AKK_INIT_CONSTANT)
			return akk_yaml_fail(c, kn, "'init_value' does not apply to "
				    "init '%s'", akk_init_names[l->init]);
	} else {
		char subject[64], what[64];
		const struct key *k = keys;
		snprintf(subject, sizeof(subject), "'%s'", l->ops->name);
		if (l->ops->shorthand) {
			while (strcmp(k->name, l->ops->shorthand))
				k++;
			snprintf(what, sizeof(what), "%s or a mapping", k->what);
		} else {
			snprintf(what, sizeof(what), "a mapping");
		}
		return akk_yaml_fail_type(c, subject, what, opts);
	}
	return 0;
}

/* --- residual blocks: lists of layers inside a layer ---------------------- */

/* The layers of the network so far, those inside blocks and graphs
 * included. */
static int layers_before(const struct akk_yaml_ctx *c)
{
	int before = c->nested;

	for (int i = 0; i < c->s->ngates && c->s->gates; i++)
		before += c->s->gates[i].nlayers;
	return before;
}

/* A list of layers inside a block (what names it: "'residual'"), into
 * *out (owned by the spec). Aliases could nest a list in itself many times
 * over: the layers inside blocks count towards AKK_MAX_LAYERS too. */
static int layer_list(struct akk_yaml_ctx *c, yaml_node_t *val, const char *what,
		      struct akk_layer_spec **out, int *nout)
{
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items), before = layers_before(c);

	if (!n)
		return akk_yaml_fail(c, val, "%s has no layers", what);
	if (n > AKK_MAX_LAYERS - before)
		return akk_yaml_fail(c, val, "too many layers: more than %d in the "
			    "network", AKK_MAX_LAYERS);
	c->nested += n;
	*out = calloc((size_t)n, sizeof(**out));
	if (!*out)
		return akk_err_set(c->e, "out of memory");
	*nout = n;
	for (int i = 0; i < n; i++)
		if (layer_item(c, akk_yaml_node(c, items[i]), &(*out)[i]))
			return -1;
	return 0;
}

static int h_res_layers(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	struct akk_layer_spec *l = sec->obj;

	(void)k, (void)key;
	return layer_list(c, val, "'layers' in 'residual'", &l->inner,
			  &l->ninner);
}

static int h_res_shortcut(struct akk_yaml_ctx *c, const struct key *k,
			  const struct section *sec, yaml_node_t *key,
			  yaml_node_t *val)
{
	struct akk_layer_spec *l = sec->obj;

	(void)k, (void)key;
	return layer_list(c, val, "'shortcut' in 'residual'", &l->shortcut,
			  &l->nshort);
}

static const struct key residual_keys[] = {
	{ .name = "layers", .type = YAML_SEQUENCE_NODE, .fn = h_res_layers,
	  .what = "a list", .flags = F_REQ },
	{ .name = "shortcut", .type = YAML_SEQUENCE_NODE, .fn = h_res_shortcut,
	  .what = "a list" },
	END,
};

/* residual: [LAYERS] (identity shortcut), or
 * residual: {layers: [LAYERS], shortcut: [LAYERS]} (a projection). */
static int residual_item(struct akk_yaml_ctx *c, yaml_node_t *item, yaml_node_t *opts,
			 struct akk_layer_spec *l)
{
	struct section sec = { "'residual'", residual_keys, l, 0, 0, NULL,
			       NULL };

	if (!opts || akk_yaml_is_null(opts))
		return akk_yaml_fail(c, opts && akk_yaml_node_set(c, opts) >= 0 ? opts : item,
			    "'residual' needs a list of layers, or a mapping "
			    "with 'layers' and 'shortcut'");
	if (opts->type == YAML_SEQUENCE_NODE)
		return layer_list(c, opts, "'residual'", &l->inner, &l->ninner);
	if (opts->type == YAML_MAPPING_NODE)
		return akk_yaml_walk(c, opts, &sec);
	return akk_yaml_fail_type(c, "'residual'", "a list or a mapping", opts);
}

static void layers_free(struct akk_layer_spec *l, int n)
{
	for (int i = 0; l && i < n; i++) {
		layers_free(l[i].inner, l[i].ninner);
		layers_free(l[i].shortcut, l[i].nshort);
		akk_graph_spec_free(l[i].graph);
	}
	free(l);
}

/* --- the network --------------------------------------------------------- */

static int h_layers(struct akk_yaml_ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	struct akk_gate_spec *g = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);

	int gi = (int)(g - c->s->gates), before = 0;

	(void)k;
	(void)key;
	if (!n)
		return akk_yaml_fail(c, val, "gate %d has no layers", gi + 1);
	/* Aliases can repeat one long list in every gate: bound the total. */
	for (int i = 0; i < gi; i++)
		before += c->s->gates[i].nlayers;
	if (n > AKK_MAX_LAYERS - before)
		return akk_yaml_fail(c, akk_yaml_node(c, items[AKK_MAX_LAYERS - before]),
			    "too many layers: more than %d in the network",
			    AKK_MAX_LAYERS);
	g->layers = calloc((size_t)n, sizeof(*g->layers));
	if (!g->layers)
		return akk_err_set(c->e, "out of memory");
	g->nlayers = n;
	for (int i = 0; i < n; i++)
		if (layer_item(c, akk_yaml_node(c, items[i]), &g->layers[i]))
			return -1;
	return 0;
}

#define GATE struct akk_gate_spec

static const struct key gate_keys[] = {
	{ .name = "layers", .type = YAML_SEQUENCE_NODE, .fn = h_layers,
	  .what = "a list", .flags = F_REQ },
	OPTIMIZER(GATE, optim, F_OPTIONAL | F_SPACED, MARK(GATE, has_optim)),
	INT("rank", GATE, rank, F_LO | F_HI, 0, 4095, -1),
	END,
};

static int h_gates(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	char name[32];

	(void)k;
	(void)key;
	if (!n)
		return akk_yaml_fail(c, val, "'gates' must not be empty");
	if (n > AKK_MAX_GATES)
		return akk_yaml_fail(c, akk_yaml_node(c, items[AKK_MAX_GATES]),
			    "too many gates: %d, at most %d", n, AKK_MAX_GATES);
	s->gates = calloc((size_t)n, sizeof(*s->gates));
	if (!s->gates)
		return akk_err_set(c->e, "out of memory");
	s->ngates = n;
	for (int i = 0; i < n; i++) {
		struct akk_gate_spec *g = &s->gates[i];
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		struct section gs = { name, gate_keys, g, 0, 0, NULL, NULL };

		snprintf(name, sizeof(name), "gate %d", i + 1);
		apply_defaults(gate_keys, g);
		g->optim = s->optim;
		g->mark = akk_yaml_mark_of(c, item);
		if (item->type != YAML_MAPPING_NODE)
			return akk_yaml_fail_type(c, name, "a mapping", item);
		if (akk_yaml_walk(c, item, &gs))
			return -1;
	}
	return 0;
}

static int h_input(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	const struct key dim = { .name = "input", .flags = F_LO | F_HI,
				 .lo = 1, .hi = INT_MAX };

	(void)k;
	(void)key;
	if (n < 1 || n > 3)
		return akk_yaml_fail(c, val, "'input' must have 1, 2 or 3 dimensions, "
			    "got %d", n);
	s->input.rank = n;
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		long long v;
		if (akk_yaml_parse_int(c, "input", item, &v) ||
		    akk_yaml_check_range(c, &dim, item, (double)v, ""))
			return -1;
		s->input.d[i] = (int)v;
	}
	s->input_mark = akk_yaml_mark_of(c, val);
	return 0;
}

#define SPEC struct akk_spec

static const struct key loss_keys[] = {
	NAMES("type", SPEC, loss, F_REQ, akk_loss_names, "loss",
	      AKK_LOSS_SOFTMAX_CE),
	FLOAT("delta", SPEC, huber_delta, F_LO | F_LO_OPEN, 0, 0,
	      1u << AKK_LOSS_HUBER, 1),
	END,
};

static const char *const placement_names[] = { "explicit", "contiguous", NULL };

/* --- network.gates: {auto: N} over a flat network.layers list ----------- */

static int h_split_later(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	(void)c, (void)k, (void)sec, (void)key, (void)val;
	return 0;	/* read by h_gates_any, once auto is known */
}

static const struct key auto_keys[] = {
	INT("auto", SPEC, auto_gates, F_REQ | F_LO | F_HI, 1, AKK_MAX_GATES, 0),
	{ .name = "split", .type = YAML_SEQUENCE_NODE, .fn = h_split_later,
	  .what = "a list" },
	END,
};

/* gates: a list of gates, or {auto: N, split: [n1, ...]}. */
static int h_gates_any(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	struct section as = { "network.gates", auto_keys, s, 0, 0, NULL, NULL };
	yaml_node_t *sp;
	const struct key n = { .name = "split", .flags = F_LO, .lo = 1 };

	if (val->type == YAML_SEQUENCE_NODE)
		return h_gates(c, k, sec, key, val);
	/* a mapping without auto is a mistaken gate, not a mistaken auto */
	if (val->type != YAML_MAPPING_NODE || !akk_yaml_map_get(c, val, "auto", NULL))
		return akk_yaml_fail_type(c, "'gates'", "a list", val);
	s->auto_mark = akk_yaml_mark_of(c, val);
	if (akk_yaml_walk(c, val, &as))
		return -1;
	if (!(sp = akk_yaml_map_get(c, val, "split", NULL)))
		return 0;
	yaml_node_item_t *items = sp->data.sequence.items.start;
	int ns = (int)(sp->data.sequence.items.top - items);
	if (ns != s->auto_gates)
		return akk_yaml_fail(c, sp, "'split' has %d entr%s, but auto is %d",
			    ns, ns == 1 ? "y" : "ies", s->auto_gates);
	if (!(s->auto_split = calloc((size_t)ns, sizeof(int))))
		return akk_err_set(c->e, "out of memory");
	for (int i = 0; i < ns; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		long long v;
		if (akk_yaml_parse_int(c, "split", item, &v) ||
		    akk_yaml_check_range(c, &n, item, (double)v, ""))
			return -1;
		if (v > AKK_MAX_LAYERS)
			return akk_yaml_fail(c, item, "'split' entry %lld is more than %d layers",
				    v, AKK_MAX_LAYERS);
		s->auto_split[i] = (int)v;
	}
	return 0;
}

/* network.layers: one flat list, split by gates: {auto: N}. */
static int h_flat_layers(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	struct section gs = { "network", NULL, NULL, 0, 0, NULL, NULL };

	if (!s->auto_gates)
		return akk_yaml_fail(c, key, "'layers' is given with a list of gates: write the layers in each gate, or use gates: {auto: N}");
	if (!(s->gates = calloc(1, sizeof(*s->gates))))
		return akk_err_set(c->e, "out of memory");
	s->ngates = 1;
	apply_defaults(gate_keys, &s->gates[0]);
	s->gates[0].optim = s->optim;
	s->gates[0].mark = akk_yaml_mark_of(c, val);
	gs.obj = &s->gates[0];
	return h_layers(c, k, &gs, key, val);
}

static const struct key network_keys[] = {
	{ .name = "input", .type = YAML_SEQUENCE_NODE, .fn = h_input,
	  .what = "a list", .flags = F_REQ },
	{ .name = "gates", .type = YAML_NO_NODE, .fn = h_gates_any,
	  .what = "a list", .flags = F_REQ },
	{ .name = "layers", .type = YAML_SEQUENCE_NODE, .fn = h_flat_layers,
	  .what = "a list" },
	{ .name = "loss", .type = YAML_NO_NODE, .fn = akk_yaml_h_section,
	  .what = "a name or a mapping", .flags = F_VAL_MARK,
	  .keys = loss_keys, .shorthand = "type",
	  .mark_off = MARK(SPEC, loss_mark), .kind_what = "loss" },
	NAMES("placement", SPEC, placement, 0, placement_names, "placement",
	      AKK_PLACE_EXPLICIT),
	END,
};

/* --- data, schedule, output ---------------------------------------------- */

#define DATA struct akk_data_spec

/* Record the path now at *at (a field of c->s) as written, with val's
 * place, in c->s->paths (akk_path_ref): akk_yaml_ctx's note_path. */
static int note_path(struct akk_yaml_ctx *c, char **at, yaml_node_t *val)
{
	struct akk_spec *s = c->s;
	struct akk_path_ref *r;

	if (!s)
		return 0;
	r = realloc(s->paths, (size_t)(s->npaths + 1) * sizeof(*r));
	if (!r)
		return akk_err_set(c->e, "out of memory");
	s->paths = r;
	r += s->npaths;
	if (!(r->given = strdup(*at)))
		return akk_err_set(c->e, "out of memory");
	r->at = at;
	r->mark = akk_yaml_mark_of(c, val);
	r->set = akk_yaml_node_set(c, val);
	s->npaths++;
	return 0;
}

/* a list of paths (data.train.files), each resolved like
 * akk_yaml_h_path. */
static int h_paths(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_path_list *l = FIELD(sec->obj, k, struct akk_path_list);
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	struct key one = *k;
	struct { char *p; } slot;
	struct section sub = *sec;

	(void)key;
	if (n < 1)
		return akk_yaml_fail(c, val, "'%s' must list at least one file", k->name);
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->n = 0;
	if (!(l->v = calloc((size_t)n, sizeof(*l->v))))
		return akk_err_set(c->e, "out of memory");
	one.off = 0;
	sub.obj = &slot;
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		if (item->type != YAML_SCALAR_NODE)
			return akk_yaml_fail_type(c, "a file", "a string", item);
		slot.p = NULL;
		if (akk_yaml_h_path(c, &one, &sub, NULL, item))
			return -1;
		l->v[l->n++] = slot.p;
		/* the record made points at slot: point it at the list's item */
		c->s->paths[c->s->npaths - 1].at = &l->v[l->n - 1];
	}
	return 0;
}

#define PATHS(K_, T_, F_)                                                    \
	{ .name = K_, .type = YAML_SEQUENCE_NODE, .fn = h_paths,             \
	  .what = "a list of files", .off = offsetof(T_, F_) }

/* The keys of data.train and data.validation, one table for both (as
 * netplan shares its handler groups): which apply is the format's
 * (data_file_keys below). */
#define FILES struct akk_data_files
static const struct key file_keys[] = {
	STR("images", akk_yaml_h_path, FILES, images, 0),
	STR("labels", akk_yaml_h_path, FILES, labels, 0),
	/* npy features, cifar10 record files */
	STR("features", akk_yaml_h_path, FILES, features, 0),
	PATHS("files", FILES, files),
	/* format csv */
	STR("file", akk_yaml_h_path, FILES, file, 0),
	STR("targets_file", akk_yaml_h_path, FILES, targets, 0),
	STR("folder", akk_yaml_h_path, FILES, folder, 0),
	STR("list", akk_yaml_h_path, FILES, list, 0),
	END,
};

/* The keys of data.train and data.validation per format; 1: required. */
static const struct {
	const char *format, *key;
	int required;
} data_file_keys[] = {
	{ "idx", "images", 1 }, { "idx", "labels", 1 },
	{ "npy", "features", 1 }, { "npy", "labels", 1 },
	{ "cifar10", "files", 1 },
	{ "csv", "file", 1 }, { "csv", "targets_file", 0 },
	{ "images", "folder", 0 }, { "images", "list", 0 },
	{ "text", "file", 0 }, { "text", "files", 0 },
	{ NULL, NULL, 0 },
};

/* data.train or data.validation: the section, then the keys its format
 * needs and takes (the format is read first: table order). */
static int h_data_files(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	const char *format = ((const DATA *)sec->obj)->format;
	int folder;

	if (akk_yaml_h_section(c, k, sec, key, val))
		return -1;
	folder = akk_yaml_map_get(c, val, "folder", NULL) != 0;
	if (!strcmp(format, "images") && folder == (akk_yaml_map_get(c, val, "list", NULL) != 0))
		return akk_yaml_fail(c, val, "data.%s %s 'folder' (class folders) or 'list' (an image list)%s",
				     k->name, folder ? "takes" : "needs", folder ? ", not both" : "");
	/* a text: one file, or for training a list read as one text */
	if (!strcmp(format, "text")) {
		yaml_node_t *fk = NULL;
		int one = akk_yaml_map_get(c, val, "file", NULL) != 0;
		int many = akk_yaml_map_get(c, val, "files", &fk) != 0;
		if (many && strcmp(k->name, "train"))
			return akk_yaml_fail(c, fk, "data.%s takes one text 'file'; a list of 'files' is for data.train",
					     k->name);
		if (one == many)
			return akk_yaml_fail(c, val, "data.%s %s 'file' (a text) or 'files' (texts read as one)%s",
					     k->name, one ? "takes" : "needs", one ? ", not both" : "");
	}
	for (int i = 0; data_file_keys[i].format; i++)
		if (data_file_keys[i].required &&
		    !strcmp(data_file_keys[i].format, format) &&
		    !akk_yaml_map_get(c, val, data_file_keys[i].key, NULL))
			return akk_yaml_fail(c, val, "missing required key '%s' in data.%s%s%s%s",
				    data_file_keys[i].key, k->name,
				    strcmp(format, "idx") ? " (data format '" : "",
				    strcmp(format, "idx") ? format : "",
				    strcmp(format, "idx") ? "')" : "");
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start;
	     p < val->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = akk_yaml_node(c, p->key);
		int i;
		for (i = 0; data_file_keys[i].format; i++)
			if (!strcmp(data_file_keys[i].format, format) &&
			    !strcmp(data_file_keys[i].key, akk_yaml_text(kn)))
				break;
		if (!data_file_keys[i].format)
			return akk_yaml_fail(c, kn, "'%s' does not apply to data format '%s'",
				    akk_yaml_text(kn), format);
	}
	return 0;
}

#define CSV struct akk_csv_spec

/* A CSV column: a plain integer is a 0-based index, anything else a
 * name. */
static int parse_csv_col(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
			 struct akk_csv_col *col)
{
	col->mark = akk_yaml_mark_of(c, val);
	if (val->type == YAML_SCALAR_NODE && akk_yaml_is_bare(val) &&
	    akk_yaml_int_syntax(akk_yaml_text(val))) {
		long long v;
		if (akk_yaml_parse_int(c, name, val, &v))
			return -1;
		if (v < 0 || v > AKK_CSV_MAX_COLS - 1)
			return akk_yaml_fail(c, val, "'%s' must be a column name or an index from 0 to %d, got %s",
				    name, AKK_CSV_MAX_COLS - 1, akk_yaml_text(val));
		col->index = (int)v;
		return 0;
	}
	col->index = -1;
	return akk_yaml_parse_str(c, name, val, &col->name);
}

static int h_csv_label(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_csv_col *col = &((CSV *)sec->obj)->label;

	(void)key;
	free(col->name);
	col->name = NULL;
	return parse_csv_col(c, k->name, val, col);
}

/* A list of columns (names or indices), none twice, into *list (n). */
static int parse_col_list(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
			  struct akk_csv_col **list, int *n)
{
	yaml_node_item_t *items = val->data.sequence.items.start;
	int len = (int)(val->data.sequence.items.top - items);

	if (!len)
		return akk_yaml_fail(c, val, "'%s' must not be empty", name);
	if (len > AKK_CSV_MAX_COLS)
		return akk_yaml_fail(c, val, "too many %s: %d, at most %d", name, len,
			    AKK_CSV_MAX_COLS);
	for (int i = 0; i < *n; i++)
		free((*list)[i].name);
	free(*list);
	*n = 0;
	if (!(*list = calloc((size_t)len, sizeof(**list))))
		return akk_err_set(c->e, "out of memory");
	for (int i = 0; i < len; i++) {
		struct akk_csv_col *t = &(*list)[i];
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		if (parse_csv_col(c, name, item, t))
			return -1;
		(*n)++;
		for (int j = 0; j < i; j++)
			if (t->name ? (*list)[j].name && !strcmp(t->name, (*list)[j].name) :
				      !(*list)[j].name && t->index == (*list)[j].index)
				return akk_yaml_fail(c, item, "column %s is twice in '%s'",
					    akk_yaml_text(item), name);
	}
	return 0;
}

static int h_csv_targets(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	CSV *o = sec->obj;

	(void)key;
	return parse_col_list(c, k->name, val, &o->targets, &o->ntargets);
}

static int h_csv_ignore(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	CSV *o = sec->obj;

	(void)key;
	return parse_col_list(c, k->name, val, &o->ignore, &o->nignore);
}

static const char *const delimiter_names[] = { "comma", "whitespace",
					       "semicolon", NULL };

static const struct key csv_keys[] = {
	BOOL("header", CSV, header, 0),
	INT("skip", CSV, skip, F_LO | F_HI, 0, INT_MAX, 0),
	NAMES("delimiter", CSV, delimiter, 0, delimiter_names, "delimiter",
	      AKK_CSV_COMMA),
	{ .name = "label", .type = YAML_SCALAR_NODE, .fn = h_csv_label,
	  .what = "a column name or index" },
	{ .name = "targets", .type = YAML_SEQUENCE_NODE, .fn = h_csv_targets,
	  .what = "a list" },
	{ .name = "ignore", .type = YAML_SEQUENCE_NODE, .fn = h_csv_ignore,
	  .what = "a list" },
	END,
};

/* data.csv: only with format csv (read before it: table order). */
static int h_csv(struct akk_yaml_ctx *c, const struct key *k,
		 const struct section *sec, yaml_node_t *key,
		 yaml_node_t *val)
{
	const char *format = ((const DATA *)sec->obj)->format;

	if (strcmp(format, "csv"))
		return akk_yaml_fail(c, key, "'csv' does not apply to data format '%s'",
			    format);
	return akk_yaml_h_section(c, k, sec, key, val);
}

/* normalize's mean and std are a number, or a list of
 * numbers, one per input channel (checked against network.input after the
 * walk). A number goes into the float at k->off, as akk_yaml_h_float; each item of a
 * list is checked as akk_yaml_h_float checks a number, into the struct akk_channels
 * at k->set_off - 1. */
static int h_channels(struct akk_yaml_ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key,
		      yaml_node_t *val)
{
	struct akk_channels *ch =
		(struct akk_channels *)((char *)sec->obj + k->set_off - 1);
	yaml_node_item_t *items;
	struct key one = *k;
	int n;

	if (val->type != YAML_SEQUENCE_NODE)
		return akk_yaml_h_float(c, k, sec, key, val);
	items = val->data.sequence.items.start;
	n = (int)(val->data.sequence.items.top - items);
	if (n < 1 || n > AKK_SPEC_MAX_CHANNELS)
		return akk_yaml_fail(c, val, "'%s' must have 1 to %d values, got %d",
			    k->name, AKK_SPEC_MAX_CHANNELS, n);
	free(ch->v);
	ch->n = 0;
	ch->v = malloc((size_t)n * sizeof(float));
	if (!ch->v)
		return akk_err_set(c->e, "out of memory");
	one.off = 0;
	for (int i = 0; i < n; i++) {
		struct section at = *sec;
		at.obj = &ch->v[i];
		if (akk_yaml_h_float(c, &one, &at, key, akk_yaml_node(c, items[i])))
			return -1;
	}
	ch->n = n;
	ch->mark = akk_yaml_mark_of(c, val);
	return 0;
}

#define CHANNELS(K_, T_, F_, LIST_, FL_, D_)                                 \
	{ .name = K_, .type = YAML_NO_NODE, .fn = h_channels,                \
	  .what = "a number or a list of numbers", .off = offsetof(T_, F_),  \
	  .flags = FL_, .def = D_, .set_off = MARK(T_, LIST_) }

static const struct key normalize_keys[] = {
	CHANNELS("mean", DATA, mean, mean_ch, F_REQ, 0),
	CHANNELS("std", DATA, std, std_ch, F_REQ | F_LO | F_LO_OPEN, 1),
	END,
};
/* data.task and output.best_by */
static const char *const task_names[] = { "classification", "regression", NULL };
static const char *const best_by_names[] = { "accuracy", "loss", NULL };

/* validation: {split: F} holds out part of train. */
static const struct key split_keys[] = {
	FLOAT("split", DATA, split, F_REQ | F_LO | F_LO_OPEN | F_HI | F_HI_OPEN,
	      0, 1, 0, 0),
	END,
};
/* validation: {folds: K}: K-fold cross-validation (data/split.h). */
static const struct key folds_keys[] = {
	INT("folds", DATA, folds, F_REQ | F_LO | F_HI, 2, 1000, 0),
	END,
};


/* idx is the default (data.format in defaults()). */
static const char *const format_names[] = { "idx", "csv", "npy", "cifar10", "images", "text",
					     NULL };

/* data.format: one of format_names, stored as the name. */
static int h_format(struct akk_yaml_ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	if (akk_yaml_h_names(c, k, sec, key, val) || akk_yaml_h_str(c, k, sec, key, val))
		return -1;
	/* A table's values and a text's token ids are not pixels: scale
	 * (read later) defaults to 1. */
	if (!strcmp(akk_yaml_text(val), "csv") || !strcmp(akk_yaml_text(val), "text"))
		((DATA *)sec->obj)->scale = 1;
	return 0;
}

/* data.scale: a number, remembered as given (the default depends on the
 * data's type: akk_data_scale). */
static int h_scale(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		   yaml_node_t *key, yaml_node_t *val)
{
	if (akk_yaml_h_float(c, k, sec, key, val))
		return -1;
	((DATA *)sec->obj)->scale_given = 1;
	((DATA *)sec->obj)->scale_mark = akk_yaml_mark_of(c, key);
	return 0;
}

/* data.standardize: a bool, its place kept (a text refuses it). */
static int h_standardize(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	if (akk_yaml_h_bool(c, k, sec, key, val))
		return -1;
	((DATA *)sec->obj)->standardize_mark = akk_yaml_mark_of(c, key);
	return 0;
}

/* validation: a mapping with split is a split, with folds
 * K-fold cross-validation; any other, files. */
static int h_validation(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	struct key as = *k;
	yaml_node_t *fk = NULL;

	as.off = 0;	/* split and folds are keys of the data section */
	if (val->type == YAML_MAPPING_NODE && akk_yaml_map_get(c, val, "folds", &fk)) {
		if (akk_yaml_map_get(c, val, "split", NULL))
			return akk_yaml_fail(c, fk, "'folds' and 'split' do not go together in data.validation: folds hold out each part in turn");
		as.keys = folds_keys;
		return akk_yaml_h_section(c, &as, sec, key, val);
	}
	if (val->type == YAML_MAPPING_NODE && akk_yaml_map_get(c, val, "split", NULL)) {
		as.keys = split_keys;
		return akk_yaml_h_section(c, &as, sec, key, val);
	}
	return h_data_files(c, k, sec, key, val);
}

/* rank-4 image layout and augmentation. */
static const char *const layout_names[] = { "nchw", "nhwc", NULL };
static const struct key augment_keys[] = {
	INT("crop_padding", DATA, crop_padding, F_LO | F_HI, 0, 64, 0),
	BOOL("flip", DATA, flip, 0),
	INT("translate", DATA, translate, F_LO | F_HI, 0, 64, 0),
	END,
};

/* series: a table read as a time series (data/series.h). */
static const struct key series_keys[] = {
	INT("window", DATA, window, F_REQ | F_LO | F_HI, 1, 65536, 0),
	INT("horizon", DATA, horizon, F_LO | F_HI, 1, 65536, 1),
	INT("stride", DATA, stride, F_LO | F_HI, 1, 65536, 1),
	END,
};

/* text: a text's windows (data/text.h); 0: network.input's length, and
 * a stride of seq_len. */
static const struct key text_keys[] = {
	INT("seq_len", DATA, text_len, F_LO | F_HI, 1, 65536, 0),
	INT("stride", DATA, text_stride, F_LO | F_HI, 1, 65536, 0),
	END,
};

static const struct key data_keys[] = {
	{ .name = "format", .type = YAML_NO_NODE, .fn = h_format,
	  .what = "a name", .off = offsetof(DATA, format), .flags = F_NOSTORE,
	  .names = format_names, .noun = "data format" },
	{ .name = "train", .type = YAML_MAPPING_NODE, .fn = h_data_files,
	  .what = "a mapping", .off = offsetof(DATA, train), .flags = F_REQ,
	  .keys = file_keys, .mark_off = MARK(DATA, train_mark) },
	{ .name = "validation", .type = YAML_MAPPING_NODE, .fn = h_validation,
	  .what = "a mapping", .off = offsetof(DATA, val), .keys = file_keys,
	  .mark_off = MARK(DATA, val_mark) },
	/* format csv */
	{ .name = "csv", .type = YAML_MAPPING_NODE, .fn = h_csv,
	  .what = "a mapping", .off = offsetof(DATA, csv), .keys = csv_keys,
	  .mark_off = MARK(DATA, csv.mark) },
	{ .name = "scale", .type = YAML_SCALAR_NODE, .fn = h_scale, .what = "a number",
	  .off = offsetof(DATA, scale), .flags = F_LO | F_LO_OPEN, .def = 255 },
	{ .name = "normalize", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = normalize_keys,
	  .set_off = MARK(DATA, normalize), .mark_off = MARK(DATA, normalize_mark) },
	NAMES("layout", DATA, layout_nhwc, 0, layout_names, "layout", 0),
	{ .name = "augment", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = augment_keys,
	  .set_off = MARK(DATA, augment), .mark_off = MARK(DATA, augment_mark) },
	KEY("standardize", SCALAR, h_standardize, "true or false", DATA, standardize,
	    0, 0, 0, 0, 0),
	NAMES("task", DATA, task, 0, task_names, "task", AKK_TASK_CLASSIFICATION),
	{ .name = "series", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = series_keys,
	  .mark_off = MARK(DATA, series_mark) },
	{ .name = "text", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = text_keys,
	  .mark_off = MARK(DATA, text_mark) },
	END,
};

static const char *const mode_names[] = { "flip-flop", "wheels", "pipeline", NULL };
static const char *const parallel_names[] = { "pipeline", "data", NULL };
static const char *const lr_scaling_names[] = { "none", "linear", NULL };
static const char *const order_names[] = { "shuffle", "streams", NULL };

#define SCHED struct akk_schedule_spec

static const struct key conc_keys[] = {
	INT("train", SCHED, conc_train, F_LO | F_HI, 1, 64, 4),
	INT("validation", SCHED, conc_val, F_LO | F_HI, 1, 64, 1),
	END,
};

#define ESTOP struct akk_early_stop_spec

/* early_stopping: {patience, monitor, min_delta}, or just the patience. */
static const struct key early_keys[] = {
	KEY("patience", SCALAR, akk_yaml_h_int, "an integer", ESTOP, patience,
	    F_LO | F_HI, 1, 1000000, 0, 3),
	NAMES("monitor", ESTOP, monitor, 0, akk_monitor_names, "monitor",
	      AKK_MON_VAL_LOSS),
	FLOAT("min_delta", ESTOP, min_delta, F_LO, 0, 0, 0, 0),
	END,
};

/* order: a name, its place kept for the checks across sections. */
static int h_order(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	((SCHED *)sec->obj)->order_mark = akk_yaml_mark_of(c, key);
	return akk_yaml_h_names(c, k, sec, key, val);
}

static const struct key sched_keys[] = {
	NAMES("mode", SCHED, mode, 0, mode_names, "mode", AKK_MODE_WHEELS),
	INT("epochs", SCHED, epochs, F_LO, 1, 0, 10),
	INT("batch_size", SCHED, batch_size, F_LO | F_HI, 1, 65536, 64),
	SECTION("concurrency", 0, 0, conc_keys, 0),
	BOOL("weight_stashing", SCHED, stashing, 1),
	INT("micro_batches", SCHED, micro_batches, F_LO | F_HI, 1, 65536, 4),
	INT("accumulate", SCHED, accumulate, F_LO | F_HI, 1, 65536, 1),
	INT("threads", SCHED, threads, F_LO | F_HI, 0, 256, 0),
	FLOAT("max_loss", SCHED, max_loss, F_LO, 0, 0, 0, 0),
	NAMES("parallel", SCHED, data_parallel, 0, parallel_names, "parallel",
	      0),
	NAMES("lr_scaling", SCHED, lr_scaling, 0, lr_scaling_names,
	      "lr scaling", 0),
	{ .name = "order", .type = YAML_NO_NODE, .fn = h_order,
	  .what = "a name", .off = offsetof(SCHED, order), .names = order_names,
	  .noun = "order", .def = AKK_ORDER_SHUFFLE },
	{ .name = "early_stopping", .type = YAML_NO_NODE, .fn = akk_yaml_h_section,
	  .what = "an integer or a mapping", .off = offsetof(SCHED, early),
	  .flags = F_OPTIONAL, .keys = early_keys, .shorthand = "patience",
	  .mark_off = MARK(SCHED, early.mark),
	  .set_off = MARK(SCHED, early.on) },
	END,
};

static int h_metrics(struct akk_yaml_ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	const char *m;

	if (akk_yaml_h_str(c, k, sec, key, val))
		return -1;
	m = ((struct akk_output_spec *)sec->obj)->metrics;
	if (strchr(m, '/') || !strcmp(m, ".") || !strcmp(m, ".."))
		return akk_yaml_fail(c, val, "'metrics' must be a file name without "
			    "'/', got '%s'", m);
	return 0;
}

#define OUT struct akk_output_spec

static const struct key output_keys[] = {
	STR("dir", akk_yaml_h_path, OUT, dir, 0),
	INT("checkpoint_every", OUT, checkpoint_every, F_LO, 0, 0, 1),
	INT("keep", OUT, keep, F_LO, 1, 0, 3),
	STR("metrics", h_metrics, OUT, metrics, 0),
	INT("log_every_steps", OUT, log_every_steps, F_LO | F_HI, 0, INT_MAX, 0),
	/* -1 until resolved by data.task */
	NAMES("best_by", OUT, best_by, 0, best_by_names, "best_by", -1),
	END,
};

/* --- the top level ------------------------------------------------------- */

static int h_seed(struct akk_yaml_ctx *c, const struct key *k,
		  const struct section *sec, yaml_node_t *key,
		  yaml_node_t *val)
{
	long long v;

	(void)k;
	(void)key;
	if (akk_yaml_parse_int(c, "seed", val, &v))
		return -1;
	if (v < 0)
		return akk_yaml_fail(c, val, "'seed' must be at least 0, got %s",
			    akk_yaml_text(val));
	((struct akk_spec *)sec->obj)->seed = (uint64_t)v;
	return 0;
}

/* The optimizer comes before the network: gates start from it. */
static const struct key top_keys[] = {
	STR("name", akk_yaml_h_str, SPEC, name, 0),
	{ .name = "seed", .type = YAML_SCALAR_NODE, .fn = h_seed,
	  .what = "an integer" },
	SECTION("data", offsetof(SPEC, data), F_REQ, data_keys,
		MARK(SPEC, data.mark)),
	OPTIMIZER(SPEC, optim, F_REQ, 0),
	SECTION("network", 0, F_REQ, network_keys, 0),
	SECTION("schedule", offsetof(SPEC, sched), 0, sched_keys,
		MARK(SPEC, sched.mark)),
	SECTION("output", offsetof(SPEC, out), 0, output_keys, 0),
	END,
};

/* --- the spec ------------------------------------------------------------ */

static char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	const char *dot;

	b = b ? b + 1 : path ? path : "";
	dot = strrchr(b, '.');
	if (!dot || dot == b)
		dot = b + strlen(b);
	if (dot == b)
		return strdup("config");
	return strndup(b, (size_t)(dot - b));
}

static int defaults(struct akk_spec *s, const char *name)
{
	apply_defaults(top_keys, s);
	s->seed = 42;
	s->data.format = strdup("idx");
	s->data.csv.label.index = -1;
	s->out.metrics = strdup("metrics.csv");
	s->name = base_name(name);
	return s->data.format && s->out.metrics && s->name ? 0 : -1;
}

void akk_spec_scale_lr(struct akk_spec *s, int replicas)
{
	float k = s->sched.lr_scaling ? (float)(replicas > 1 ? replicas : 1) : 0;

	s->optim.lr_scale = k;
	for (int i = 0; i < s->ngates; i++)
		s->gates[i].optim.lr_scale = k;
}

int akk_spec_watches(const struct akk_spec *s)
{
	return s->sched.early.on || s->optim.sched.kind == AKK_LR_PLATEAU;
}

static char *copy_text(const char *t, size_t len)
{
	char *p = malloc(len + 1);
	if (p) {
		memcpy(p, t, len);
		p[len] = '\0';
	}
	return p;
}

/* network.gates: {auto: N}: the flat list is there and long enough; a
 * recorded split is applied at once. */
static int check_auto(struct akk_spec *s, const char *file, struct akk_err *e)
{
	const struct akk_mark *m = &s->auto_mark;
	int *sizes = s->auto_split;
	int rc;

	if (!s->auto_gates)
		return 0;
	if (!s->ngates)
		return akk_err_at(e, file, m->line, m->col,
				  "gates: {auto: %d} needs the network's layers as one flat list, network.layers",
				  s->auto_gates);
	if (s->auto_gates > s->gates[0].nlayers)
		return akk_err_at(e, file, m->line, m->col,
				  "gates: {auto: %d} asks for more gates than the %d layers of network.layers",
				  s->auto_gates, s->gates[0].nlayers);
	if (!sizes)
		return 0;
	s->auto_split = NULL;
	rc = akk_spec_split(s, sizes, e);
	if (rc) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		akk_err_at(e, file, m->line, m->col, "%s", msg);
	}
	free(sizes);
	return rc;
}

int akk_spec_split(struct akk_spec *s, const int *sizes, struct akk_err *e)
{
	struct akk_gate_spec *g, *flat = s->gates;
	int n = s->auto_gates, total = 0;

	if (!n || s->ngates != 1 || s->auto_split)
		return akk_err_set(e, "the network has no flat layers list to split");
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 1 || sizes[i] > flat->nlayers - total)
			return akk_err_set(e, "split: gate %d of %d layers does not fit the %d layers of network.layers",
					   i + 1, sizes[i], flat->nlayers);
		total += sizes[i];
	}
	if (total != flat->nlayers)
		return akk_err_set(e, "split: the gates hold %d layers, but network.layers has %d",
				   total, flat->nlayers);
	if (!(g = calloc((size_t)n, sizeof(*g))) ||
	    !(s->auto_split = malloc((size_t)n * sizeof(int)))) {
		free(g);
		return akk_err_set(e, "out of memory");
	}
	total = 0;
	for (int i = 0; i < n; i++) {
		g[i] = *flat;
		g[i].nlayers = sizes[i];
		g[i].layers = calloc((size_t)sizes[i], sizeof(*g[i].layers));
		if (!g[i].layers) {
			while (i--)
				free(g[i].layers);
			free(g);
			free(s->auto_split);
			s->auto_split = NULL;
			return akk_err_set(e, "out of memory");
		}
		memcpy(g[i].layers, flat->layers + total,
		       (size_t)sizes[i] * sizeof(*g[i].layers));
		total += sizes[i];
		s->auto_split[i] = sizes[i];
	}
	free(flat->layers);
	free(flat);
	s->gates = g;
	s->ngates = n;
	return 0;
}

/* The keys that contradict each other across sections, file being the
 * config's name in reports. */
static int cross_check(struct akk_spec *s, const char *file, struct akk_err *e)
{
	return akk_spec_check_sections(s, file, e) || check_auto(s, file, e) ? -1 : 0;
}

int akk_spec_parse(struct akk_spec *s, const char *txt, size_t len,
		   const char *name, const char *base_dir,
		   const char *const *sets, int nsets, struct akk_err *e)
{
	struct akk_yaml_ctx c;
	yaml_node_t *root;
	int rc = -1, have_doc = 0;

	memset(s, 0, sizeof(*s));
	memset(&c, 0, sizeof(c));
	c.file = name ? name : "";
	c.max_bytes = AKK_SPEC_MAX_BYTES;
	c.max_depth = AKK_SPEC_MAX_DEPTH;
	c.base_dir = base_dir;
	c.note_path = note_path;
	c.s = s;
	c.e = e;
	c.sets = sets;
	s->text = copy_text(txt, len);
	s->path = name ? strdup(name) : NULL;
	if (nsets > 0) {
		s->sets = calloc((size_t)nsets, sizeof(*s->sets));
		c.set_lo = calloc((size_t)nsets, sizeof(int));
		c.set_hi = calloc((size_t)nsets, sizeof(int));
		if (!s->sets || !c.set_lo || !c.set_hi)
			goto oom;
		for (int i = 0; i < nsets; i++) {
			if (!(s->sets[i] = strdup(sets[i])))
				goto oom;
			s->nsets++;
		}
	}
	if (!s->text || (name && !s->path) || defaults(s, name))
		goto oom;

	if (akk_overrides_load(&c, &c.doc, txt, len, -1))
		goto out;
	have_doc = 1;
	root = yaml_document_get_root_node(&c.doc);
	if (!root) {
		akk_err_at(e, c.file, 0, 0,
			   "the config must be a mapping, got an empty file");
		goto out;
	}
	if (root->type != YAML_MAPPING_NODE) {
		akk_yaml_fail_type(&c, "the config", "a mapping", root);
		goto out;
	}
	for (int i = 0; i < nsets; i++) {
		c.set_lo[i] = (int)(c.doc.nodes.top - c.doc.nodes.start);
		if (akk_overrides_apply(&c, i))
			goto out;
		c.set_hi[i] = (int)(c.doc.nodes.top - c.doc.nodes.start);
	}
	c.nsets = nsets;
	{
		struct section top = { NULL, top_keys, s, 0, 0, NULL, NULL };
		if (akk_yaml_walk(&c, yaml_document_get_root_node(&c.doc), &top))
			goto out;
	}
	if (cross_check(s, s->path ? s->path : name, e))
		goto out;
	if (!s->out.dir) {
		size_t n = strlen(s->name) + sizeof("runs/");
		if (!(s->out.dir = malloc(n)))
			goto oom;
		snprintf(s->out.dir, n, "runs/%s", s->name);
	}
	rc = 0;
	goto out;
oom:
	akk_err_set(e, "out of memory");
out:
	if (have_doc)
		yaml_document_delete(&c.doc);
	free(c.set_lo);
	free(c.set_hi);
	free(c.strs);
	if (rc)
		akk_spec_release(s);
	return rc;
}

int akk_spec_load(struct akk_spec *s, const char *path,
		  const char *const *sets, int nsets, struct akk_err *e)
{
	FILE *f;
	char *buf = NULL, *dir = NULL, *slash;
	size_t len = 0, cap = 0;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	f = fopen(path, "rb");
	if (!f)
		return akk_err_set(e, "cannot open '%s': %s", path,
				   strerror(errno));
	/* At most one byte more than the limit, whatever the file is (a FIFO,
	 * /dev/zero): akk_spec_parse reports a text over the limit. */
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			if (cap > (size_t)AKK_SPEC_MAX_BYTES + 1)
				cap = (size_t)AKK_SPEC_MAX_BYTES + 1;
			char *nb = realloc(buf, cap);
			if (!nb) {
				akk_err_set(e, "out of memory");
				goto out;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0 || len > (size_t)AKK_SPEC_MAX_BYTES)
			break;
	}
	if (ferror(f)) {
		akk_err_set(e, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!(dir = strdup(path))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	rc = akk_spec_parse(s, buf, len, path, dir, sets, nsets, e);
out:
	fclose(f);
	free(buf);
	free(dir);
	return rc;
}

static void data_files_release(struct akk_data_files *f)
{
	free(f->images);
	free(f->labels);
	free(f->features);
	for (int i = 0; i < f->files.n; i++)
		free(f->files.v[i]);
	free(f->files.v);
	free(f->file);
	free(f->targets);
	free(f->folder);
	free(f->list);
}

void akk_spec_release(struct akk_spec *s)
{
	if (!s)
		return;
	free(s->path);
	free(s->text);
	free(s->name);
	free(s->data.format);
	data_files_release(&s->data.train);
	data_files_release(&s->data.val);
	free(s->data.csv.label.name);
	for (int i = 0; s->data.csv.targets && i < s->data.csv.ntargets; i++)
		free(s->data.csv.targets[i].name);
	free(s->data.csv.targets);
	for (int i = 0; s->data.csv.ignore && i < s->data.csv.nignore; i++)
		free(s->data.csv.ignore[i].name);
	free(s->data.csv.ignore);
	free(s->data.mean_ch.v);
	free(s->data.std_ch.v);
	for (int i = 0; s->gates && i < s->ngates; i++)
		layers_free(s->gates[i].layers, s->gates[i].nlayers);
	free(s->gates);
	free(s->auto_split);
	free(s->out.dir);
	free(s->out.metrics);
	for (int i = 0; s->sets && i < s->nsets; i++)
		free(s->sets[i]);
	free(s->sets);
	for (int i = 0; s->paths && i < s->npaths; i++)
		free(s->paths[i].given);
	free(s->paths);
	memset(s, 0, sizeof(*s));
}

const char *akk_mode_name(enum akk_mode m)
{
	return (unsigned)m < sizeof(mode_names) / sizeof(*mode_names) - 1 ? mode_names[m] : NULL;
}

int akk_spec_place(const struct akk_spec *s, int nranks, int *gate_rank,
		   struct akk_err *e)
{
	for (int i = 0; i < s->ngates; i++) {
		const struct akk_gate_spec *g = &s->gates[i];

		if (s->placement == AKK_PLACE_CONTIGUOUS) {
			gate_rank[i] = (int)((long)i * nranks / s->ngates);
			continue;
		}
		gate_rank[i] = g->rank < 0 ? 0 : g->rank;
		if (gate_rank[i] >= nranks)
			return akk_err_at(e, s->path, g->mark.line, g->mark.col,
					  "gate %d is placed on rank %d, but there %s %d rank%s (mpirun -np %d)",
					  i + 1, gate_rank[i], nranks == 1 ? "is" : "are",
					  nranks, nranks == 1 ? "" : "s", nranks);
	}
	return 0;
}
