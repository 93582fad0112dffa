/* spec_gates.c - the gates' names, sources and joins (spec_gates.h). */
#include "config/spec_gates.h"

#include <stdio.h>
#include <string.h>

#include "config/spec.h"

static const char *const join_names[] = { "none", "concat", "add", NULL };

int akk_spec_h_gate_name(struct akk_yaml_ctx *c, const struct key *k,
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
	const char *names[AKK_MAX_GATES + 1];
	char buf[128];
	int n = 0;
	const char *t;

	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, "'from'", "a gate's name", val);
	t = akk_yaml_text(val);
	if (!strcmp(t, "input")) {
		if (gi > 0)
			return akk_yaml_fail(c, val, "gate %d reads 'input': only the first gate reads the network input", gi + 1);
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
	return akk_yaml_fail(c, val, "unknown gate '%s' in 'from'%s", t,
			     akk_yaml_suggest(t, names, (size_t)n, sizeof(names[0]), buf, sizeof(buf)));
}

int akk_spec_h_gate_from(struct akk_yaml_ctx *c, const struct key *k,
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

int akk_spec_h_gate_join(struct akk_yaml_ctx *c, const struct key *k,
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
	for (int j = AKK_JOIN_CONCAT; join_names[j]; j++)
		if (!strcmp(t, join_names[j])) {
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

int akk_spec_gates_link(struct akk_yaml_ctx *c, struct akk_spec *s)
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
	return join_names[join];
}
