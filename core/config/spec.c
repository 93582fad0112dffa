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
#include "config/spec_data.h"
#include "config/spec_graph.h"
#include "config/spec_heads.h"
#include "config/spec_inputs.h"
#include "config/yaml_keys.h"
#include "nn/layer_graph.h"


/* Each key's default (def) into obj, sub-sections included. Strings, lists
 * and the special keys have theirs in defaults(). */
static void apply_defaults(const struct key *keys, void *obj)
{
	for (const struct key *k = keys; k->name; k++) {
		if (k->fn == akk_yaml_h_section)
			apply_defaults(k->keys, (char *)obj + k->off);
		else if (k->fn == akk_yaml_h_float || k->fn == akk_spec_h_channels ||
			 k->fn == akk_spec_h_scale)
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
		[AKK_OPTION_SHAPE] = { akk_yaml_h_shape, "a list of sizes" },
	};
	size_t n = 0;

	for (const struct akk_layer_option *o = ops->options; o && o->name;
	     o++) {
		int init = o->type == AKK_OPTION_INIT;
		int named = init || o->type == AKK_OPTION_NAME;
		int shape = o->type == AKK_OPTION_SHAPE;
		assert(n < AKK_MAX_OPTIONS);
		keys[n++] = (struct key){
			.name = o->name,
			.type = named ? YAML_NO_NODE : shape ? YAML_SEQUENCE_NODE
			      : YAML_SCALAR_NODE,
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
/* The key a layer's shorthand ("dense: 10", "reshape: [1, 28, 28]") sets. */
static const struct key *shorthand_key(const struct key *keys,
				       const struct akk_layer_spec *l)
{
	while (strcmp(keys->name, l->ops->shorthand))
		keys++;
	return keys;
}

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
	} else if (l->ops->shorthand && opts->type == shorthand_key(keys, l)->type) {
		if (shorthand_key(keys, l)->fn(c, shorthand_key(keys, l), &sec, NULL, opts))
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
			k = shorthand_key(keys, l);
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

/* --- gates as a graph: names, sources, joins ----------------------------- */

/* A gate may have a `name`, read `from` one earlier gate or a list of
 * them (`input`: the network input), and say how a
 * list `join`s (concat on the first dimension: channels or features; or
 * add). Without `from` a gate reads the gate before it, as a chain does.
 * Once every gate is read, gates_link fills each gate's sources and
 * checks the edges: the join, and that every gate but the last (the
 * network's output) is read by some gate. */
static const char *const gate_join_names[] = { "none", "concat", "add", NULL };

static int h_gate_name(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	struct akk_gate_spec *g = sec->obj;
	struct akk_spec *s = c->s;
	int gi = (int)(g - s->gates);
	const char *t;

	(void)k;
	(void)key;
	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, "a gate's 'name'", "a name", val);
	t = akk_yaml_text(val);
	size_t n = strlen(t);
	if (!n || n != val->data.scalar.length ||
	    strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") < n)
		return akk_yaml_fail(c, val, "a gate's 'name' is letters, digits, '_', '-' and '.', got '%s'", t);
	if (n >= AKK_GATE_NAME)
		return akk_yaml_fail(c, val, "a gate's 'name' has at most %d characters, got %zu",
				     AKK_GATE_NAME - 1, n);
	if (!strcmp(t, "input"))
		return akk_yaml_fail(c, val, "'input' names the network input, not a gate");
	if (akk_spec_input_index(s->inputs, s->ninputs, t) >= 0)
		return akk_yaml_fail(c, val, "'%s' names a network input, not a gate", t);
	for (int i = 0; i < gi; i++)
		if (!strcmp(s->gates[i].name, t))
			return akk_yaml_fail(c, val, "gate name '%s' is taken by gate %d (line %d)",
					     t, i + 1, s->gates[i].mark.line);
	memcpy(g->name, t, n + 1);
	return 0;
}

/* The gate called by val's text, of the gates before gi. */
static int resolve(struct akk_yaml_ctx *c, int gi, yaml_node_t *val, int *out)
{
	struct akk_spec *s = c->s;
	const char *names[AKK_MAX_GATES + AKK_MAX_INPUTS + 1];
	char buf[128];
	int n = 0;
	const char *t;

	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, "'from'", "a gate's name", val);
	t = akk_yaml_text(val);
	if ((n = akk_spec_from_input(c, s->inputs, s->ninputs, val, out)) <= 0)
		return n;
	n = 0;
	if (!strcmp(t, "input")) {
		*out = AKK_GATE_INPUT;
		return 0;
	}
	for (int i = 0; i < gi; i++) {
		if (!strcmp(s->gates[i].name, t)) {
			*out = i;
			return 0;
		}
		if (s->gates[i].name[0])
			names[n++] = s->gates[i].name;
	}
	for (int i = gi; i < s->ngates; i++)
		if (!strcmp(s->gates[i].name, t))
			return akk_yaml_fail(c, val, "gate %d reads '%s', which is not before it: a gate reads gates written before it", gi + 1, t);
	for (int i = 0; i < s->ninputs; i++)
		names[n++] = s->inputs[i].name;
	return akk_yaml_fail(c, val, "unknown %s '%s' in 'from'%s",
			     s->ninputs ? "gate or input" : "gate", t,
			     akk_yaml_suggest(t, names, (size_t)n, sizeof(names[0]), buf, sizeof(buf)));
}

static int h_gate_from(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	struct akk_gate_spec *g = sec->obj;
	int gi = (int)(g - c->s->gates), n = 1;

	(void)k;
	(void)key;
	g->has_from = 1;
	g->from_mark = akk_yaml_mark_of(c, val);
	if (val->type != YAML_SEQUENCE_NODE)
		return resolve(c, gi, val, &g->from[0]) ? -1 : (g->nfrom = 1, 0);
	yaml_node_item_t *items = val->data.sequence.items.start;
	n = (int)(val->data.sequence.items.top - items);
	if (n < 1)
		return akk_yaml_fail(c, val, "'from' names at least one gate");
	if (n > AKK_MAX_JOIN)
		return akk_yaml_fail(c, akk_yaml_node(c, items[AKK_MAX_JOIN]),
				     "a gate reads at most %d gates", AKK_MAX_JOIN);
	for (int i = 0; i < n; i++) {
		yaml_node_t *v = akk_yaml_node(c, items[i]);
		if (resolve(c, gi, v, &g->from[i]))
			return -1;
		for (int j = 0; j < i; j++)
			if (g->from[j] == g->from[i])
				return akk_yaml_fail(c, v, "'from' names '%s' twice",
						     akk_yaml_text(v));
	}
	g->nfrom = n;
	return 0;
}

static int h_gate_join(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	struct akk_gate_spec *g = sec->obj;
	const char *t;

	(void)k;
	(void)key;
	g->join_mark = akk_yaml_mark_of(c, val);
	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, "'join'", "concat or add", val);
	t = akk_yaml_text(val);
	for (int j = AKK_JOIN_CONCAT; gate_join_names[j]; j++)
		if (!strcmp(t, gate_join_names[j])) {
			g->join = (enum akk_join)j;
			return 0;
		}
	return akk_yaml_fail(c, val, "unknown join '%s': concat (on channels or features) or add", t);
}

/* A node of the document at mark m, for a report: the gate's own. */
static int fail_at(struct akk_yaml_ctx *c, struct akk_mark m, const char *msg,
		   const char *a, int b)
{
	char text[256];

	snprintf(text, sizeof(text), msg, a, b);
	return akk_err_at(c->e, c->file, m.line, m.col, "%s", text);
}

static const char *gate_name(const struct akk_gate_spec *g, char *buf, size_t n, int i)
{
	if (g->name[0])
		snprintf(buf, n, "gate '%s'", g->name);
	else
		snprintf(buf, n, "gate %d", i + 1);
	return buf;
}

static int gates_link(struct akk_yaml_ctx *c, struct akk_spec *s)
{
	int readers[AKK_MAX_GATES] = { 0 };
	char who[64];

	for (int i = 0; i < s->ngates; i++) {
		struct akk_gate_spec *g = &s->gates[i];
		if (!g->has_from) {
			g->nfrom = 1;
			g->from[0] = i - 1;	/* AKK_GATE_INPUT for the first */
		}
		if (g->nfrom > 1 && g->join == AKK_JOIN_NONE)
			return fail_at(c, g->from_mark, "%s reads %d gates: say how they join, with join: concat or join: add",
				       gate_name(g, who, sizeof(who), i), g->nfrom);
		if (g->nfrom == 1 && g->join != AKK_JOIN_NONE)
			return fail_at(c, g->join_mark, "'join' applies to a gate that reads 2 or more gates, but %s reads %d",
				       gate_name(g, who, sizeof(who), i), 1);
		for (int j = 0; j < g->nfrom; j++) {
			if (g->from[j] < 0)
				continue;
			if (++readers[g->from[j]] > AKK_MAX_JOIN)
				return fail_at(c, g->from_mark, "%s is read by more than %d gates",
					       gate_name(&s->gates[g->from[j]], who, sizeof(who), g->from[j]),
					       AKK_MAX_JOIN);
		}
	}
	for (int i = 0; i + 1 < s->ngates; i++)
		if (!readers[i])
			return fail_at(c, s->gates[i].mark, "%s is read by no gate: only the last gate (%d), the network's output, may be",
				       gate_name(&s->gates[i], who, sizeof(who), i), s->ngates);
	return 0;
}

const char *akk_join_name(int join)
{
	return gate_join_names[join];
}

#define GATE struct akk_gate_spec

static const struct key gate_keys[] = {
	{ .name = "layers", .type = YAML_SEQUENCE_NODE, .fn = h_layers,
	  .what = "a list", .flags = F_REQ },
	OPTIMIZER(GATE, optim, F_OPTIONAL | F_SPACED, MARK(GATE, has_optim)),
	INT("rank", GATE, rank, F_LO | F_HI, 0, 4095, -1),
	{ .name = "name", .type = YAML_NO_NODE, .fn = h_gate_name, .what = "a name" },
	{ .name = "from", .type = YAML_NO_NODE, .fn = h_gate_from,
	  .what = "a gate's name or a list of them" },
	{ .name = "join", .type = YAML_NO_NODE, .fn = h_gate_join, .what = "concat or add" },
	END,
};

/* Each gate's name before any gate is read, so that a 'from' naming a
 * later gate is told so (resolve) rather than called unknown. Only names
 * that fit; h_gate_name checks them and sets them again in turn. */
static void gate_names_ahead(struct akk_yaml_ctx *c, struct akk_spec *s,
			     const yaml_node_item_t *items)
{
	for (int i = 0; i < s->ngates; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]), *v;
		const char *t;

		if (item->type != YAML_MAPPING_NODE ||
		    !(v = akk_yaml_map_get(c, item, "name", NULL)) || v->type != YAML_SCALAR_NODE)
			continue;
		t = akk_yaml_text(v);
		if (strlen(t) < AKK_GATE_NAME && strlen(t) == v->data.scalar.length)
			memcpy(s->gates[i].name, t, strlen(t) + 1);
	}
}

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
	gate_names_ahead(c, s, items);
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
	return gates_link(c, s);
}

static int h_input(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;

	if (akk_yaml_h_shape(c, k, sec, key, val))
		return -1;
	s->input_mark = akk_yaml_mark_of(c, val);
	return 0;
}

/* network.inputs (config/spec_inputs.h), instead of network.input: the
 * table reads input first, and gates after both. */
static int h_inputs(struct akk_yaml_ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;

	(void)k;
	if (s->input.rank)
		return akk_yaml_fail(c, key, "'input' and 'inputs' both given: network.inputs lays out the input as named slices; drop 'input'");
	if (akk_spec_read_inputs(c, val, s->inputs, &s->ninputs, &s->input))
		return -1;
	s->inputs_mark = s->input_mark = akk_yaml_mark_of(c, val);
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

/* A gate's graph keys where the gates are split automatically. */
static int h_auto_no_graph(struct akk_yaml_ctx *c, const struct key *k,
			   const struct section *sec, yaml_node_t *key,
			   yaml_node_t *val)
{
	(void)sec, (void)val;
	return akk_yaml_fail(c, key, "'%s' does not apply to gates: {auto: N}, which splits one list of layers and forks only at its graph layers: write the gates out to fork and join them",
			     k->name);
}

static const struct key auto_keys[] = {
	INT("auto", SPEC, auto_gates, F_REQ | F_LO | F_HI, 1, AKK_MAX_GATES, 0),
	{ .name = "split", .type = YAML_SEQUENCE_NODE, .fn = h_split_later,
	  .what = "a list" },
	{ .name = "unfold", .type = YAML_SEQUENCE_NODE, .fn = h_split_later,
	  .what = "a list" },
	{ .name = "from", .type = YAML_NO_NODE, .fn = h_auto_no_graph, .what = "a gate's name" },
	{ .name = "join", .type = YAML_NO_NODE, .fn = h_auto_no_graph, .what = "concat or add" },
	END,
};

/* A list of ints in [lo, AKK_MAX_LAYERS] at val into a new array. */
static int int_list(struct akk_yaml_ctx *c, yaml_node_t *val, const char *what,
		    int lo, int **out, int *nout)
{
	yaml_node_item_t *items = val->data.sequence.items.start;
	int ns = (int)(val->data.sequence.items.top - items);
	const struct key n = { .name = what, .flags = F_LO, .lo = lo };

	if (!(*out = calloc((size_t)(ns ? ns : 1), sizeof(int))))
		return akk_err_set(c->e, "out of memory");
	*nout = ns;
	for (int i = 0; i < ns; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		long long v;
		if (akk_yaml_parse_int(c, what, item, &v) ||
		    akk_yaml_check_range(c, &n, item, (double)v, ""))
			return -1;
		if (v > AKK_MAX_LAYERS)
			return akk_yaml_fail(c, item, "'%s' entry %lld is more than %d layers",
				    what, v, AKK_MAX_LAYERS);
		(*out)[i] = (int)v;
	}
	return 0;
}

/* gates: a list of gates, or {auto: N, split: [n1, ...], unfold: [...]}. */
static int h_gates_any(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	struct section as = { "network.gates", auto_keys, s, 0, 0, NULL, NULL };
	yaml_node_t *sp, *uf;

	if (val->type == YAML_SEQUENCE_NODE)
		return h_gates(c, k, sec, key, val);
	/* a mapping without auto is a mistaken gate, not a mistaken auto */
	if (val->type != YAML_MAPPING_NODE || !akk_yaml_map_get(c, val, "auto", NULL))
		return akk_yaml_fail_type(c, "'gates'", "a list", val);
	s->auto_mark = akk_yaml_mark_of(c, val);
	if (akk_yaml_walk(c, val, &as))
		return -1;
	sp = akk_yaml_map_get(c, val, "split", NULL);
	uf = akk_yaml_map_get(c, val, "unfold", NULL);
	if (uf && !sp)
		return akk_yaml_fail(c, uf, "'unfold' comes with the 'split' of the other gates");
	if (!sp)
		return 0;
	if (int_list(c, sp, "split", 1, &s->auto_split, &s->auto_nsplit) ||
	    (uf && int_list(c, uf, "unfold", 0, &s->auto_unfold, &s->auto_nunfold)))
		return -1;
	/* with graphs unfolded, their branches' gates are not in split:
	 * akk_spec_unfold counts them once the layers are read */
	if (!uf && s->auto_nsplit != s->auto_gates)
		return akk_yaml_fail(c, sp, "'split' has %d entr%s, but auto is %d",
			    s->auto_nsplit, s->auto_nsplit == 1 ? "y" : "ies", s->auto_gates);
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
	  .what = "a list", .off = offsetof(struct akk_spec, input) },
	/* after input (both given: an error), before gates (their from) */
	{ .name = "inputs", .type = YAML_SEQUENCE_NODE, .fn = h_inputs,
	  .what = "a list" },
	{ .name = "gates", .type = YAML_NO_NODE, .fn = h_gates_any,
	  .what = "a list", .flags = F_REQ },
	{ .name = "layers", .type = YAML_SEQUENCE_NODE, .fn = h_flat_layers,
	  .what = "a list" },
	{ .name = "loss", .type = YAML_NO_NODE, .fn = akk_yaml_h_section,
	  .what = "a name or a mapping", .flags = F_VAL_MARK,
	  .keys = loss_keys, .shorthand = "type",
	  .mark_off = MARK(SPEC, loss_mark), .kind_what = "loss" },
	{ .name = "outputs", .type = YAML_SEQUENCE_NODE, .fn = akk_spec_h_outputs,
	  .what = "a list", .off = offsetof(SPEC, heads),
	  .mark_off = MARK(SPEC, heads_mark), .set_off = MARK(SPEC, nheads) },
	NAMES("placement", SPEC, placement, 0, placement_names, "placement",
	      AKK_PLACE_EXPLICIT),
	END,
};

/* --- schedule, output (data: spec_data.c) -------------------------------- */

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


/* output.best_by */
static const char *const best_by_names[] = { "accuracy", "loss", NULL };

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
	SECTION("data", offsetof(SPEC, data), F_REQ, akk_spec_data_keys,
		MARK(SPEC, data.mark)),
	OPTIMIZER(SPEC, optim, F_REQ, 0),
	SECTION("network", 0, F_REQ | F_VAL_MARK, network_keys, MARK(SPEC, network_mark)),
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
	int *sizes = s->auto_split, *unfold = s->auto_unfold;
	int rc;

	if (!s->auto_gates)
		return 0;
	if (!s->ngates)
		return akk_err_at(e, file, m->line, m->col,
				  "gates: {auto: %d} needs the network's layers as one flat list, network.layers",
				  s->auto_gates);
	if (s->ninputs)
		return akk_err_at(e, file, m->line, m->col,
				  "gates: {auto: %d} splits one chain that reads the whole input, but network.inputs names %d inputs: write the gates out, each naming the inputs it reads in 'from'",
				  s->auto_gates, s->ninputs);
	if (s->auto_gates > akk_spec_max_gates(s))
		return akk_err_at(e, file, m->line, m->col,
				  "gates: {auto: %d} asks for more gates than the %d layers of network.layers%s",
				  s->auto_gates, s->gates[0].nlayers,
				  akk_spec_max_gates(s) > s->gates[0].nlayers ?
				  " make with their graphs' branches on gates of their own" : "");
	if (!sizes)
		return 0;
	s->auto_split = NULL;
	s->auto_unfold = NULL;
	rc = akk_spec_unfold(s, sizes, s->auto_nsplit, unfold, s->auto_nunfold, e);
	if (rc) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		akk_err_at(e, file, m->line, m->col, "%s", msg);
	}
	free(sizes);
	free(unfold);
	return rc;
}

/* The keys that contradict each other across sections, file being the
 * config's name in reports. */
static int cross_check(struct akk_spec *s, const char *file, struct akk_err *e)
{
	return akk_spec_inputs_given(s->input, s->network_mark, file, e) ||
	       akk_spec_check_sections(s, file, e) || akk_spec_check_heads(s->heads, s->nheads, &s->data, s->input,
					s->loss_mark, file, e) ||
	       check_auto(s, file, e) ? -1 : 0;
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
	free(f->target);
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
	free(s->auto_unfold);
	akk_spec_heads_release(s->heads, &s->nheads);
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
