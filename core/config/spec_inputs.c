/* spec_inputs.c - network.inputs: the inputs' key table, the list's
 * handler, the names a gate's `from` gives, and the checks across the
 * inputs and the gates. */
#include "config/spec_inputs.h"

#include <stdio.h>
#include <string.h>

#include "base/checked.h"

#define INPUT struct akk_input_spec

static int h_input_name(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	INPUT *in = sec->obj;
	const char *t;
	size_t n;

	(void)k;
	(void)key;
	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, "an input's 'name'", "a name", val);
	t = akk_yaml_text(val);
	n = strlen(t);
	if (!n || n != val->data.scalar.length ||
	    strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") < n)
		return akk_yaml_fail(c, val, "an input's 'name' is letters, digits, '_' and '-' (it names an ONNX graph input), got '%s'", t);
	if (n >= AKK_INPUT_NAME)
		return akk_yaml_fail(c, val, "an input's 'name' has at most %d characters, got %zu",
				     AKK_INPUT_NAME - 1, n);
	if (!strcmp(t, "input"))
		return akk_yaml_fail(c, val, "'input' names the whole network input: give the input another name");
	memcpy(in->name, t, n + 1);
	return 0;
}

static const struct key input_keys[] = {
	{ .name = "name", .type = YAML_NO_NODE, .fn = h_input_name, .what = "a name",
	  .flags = F_REQ },
	{ .name = "shape", .type = YAML_SEQUENCE_NODE, .fn = akk_yaml_h_shape,
	  .what = "a list", .flags = F_REQ, .off = offsetof(INPUT, shape) },
	END,
};

int akk_spec_h_inputs(struct akk_yaml_ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	size_t total = 0;
	char name[32];

	(void)k;
	if (s->input.rank)
		return akk_yaml_fail(c, key, "'input' and 'inputs' both given: network.inputs lays out the input as named slices; drop 'input'");
	if (n < 1)
		return akk_yaml_fail(c, val, "'inputs' needs at least one input");
	if (n > AKK_MAX_INPUTS)
		return akk_yaml_fail(c, akk_yaml_node(c, items[AKK_MAX_INPUTS]),
				     "too many inputs: %d, at most %d", n, AKK_MAX_INPUTS);
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		INPUT *in = &s->inputs[i];
		struct section is = { name, input_keys, in, 0, 0, NULL, NULL };
		size_t size = 1;

		snprintf(name, sizeof(name), "input %d", i + 1);
		memset(in, 0, sizeof(*in));
		in->mark = akk_yaml_mark_of(c, item);
		if (item->type != YAML_MAPPING_NODE)
			return akk_yaml_fail_type(c, name, "a mapping", item);
		if (akk_yaml_walk(c, item, &is))
			return -1;
		for (int j = 0; j < i; j++)
			if (!strcmp(s->inputs[j].name, in->name))
				return akk_yaml_fail(c, item, "input name '%s' is used twice (first at line %d)",
						     in->name, s->inputs[j].mark.line);
		for (int d = 0; d < in->shape.rank; d++)
			if (!akk_mul_ok(size, (size_t)in->shape.d[d], &size))
				size = SIZE_MAX;
		if (size > AKK_MAX_DIM || !akk_add_max(&total, size, AKK_MAX_DIM))
			return akk_yaml_fail(c, item, "the inputs would have more than %zu values per sample",
					     AKK_MAX_DIM);
		in->off = (long)(total - size);
		in->n = (long)size;
	}
	s->ninputs = n;
	s->input.rank = 1;
	s->input.d[0] = (int)total;
	s->inputs_mark = akk_yaml_mark_of(c, val);
	s->input_mark = s->inputs_mark;
	return 0;
}

int akk_spec_input_index(const struct akk_spec *s, const char *name)
{
	for (int i = 0; i < s->ninputs; i++)
		if (!strcmp(s->inputs[i].name, name))
			return i;
	return -1;
}

int akk_spec_from_input(struct akk_yaml_ctx *c, yaml_node_t *val, int *out)
{
	const struct akk_spec *s = c->s;
	const char *t = akk_yaml_text(val);
	char names[AKK_MAX_INPUTS * (AKK_INPUT_NAME + 2)] = "";
	int i = akk_spec_input_index(s, t);

	if (!s->ninputs)
		return 1;
	if (i >= 0) {
		*out = akk_input_source(i);
		return 0;
	}
	if (strcmp(t, "input"))
		return 1;
	for (i = 0; i < s->ninputs; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", s->inputs[i].name);
	return akk_yaml_fail(c, val, "with network.inputs, 'from' names one of them (%s), not 'input'",
			     names);
}

void akk_spec_input_label(const struct akk_spec *s, int i, char *buf, size_t n)
{
	if (s->ninputs)
		snprintf(buf, n, "input '%s'", s->inputs[i].name);
	else
		snprintf(buf, n, "network.input");
}

int akk_spec_check_inputs(const struct akk_spec *s, const char *file, struct akk_err *e)
{
	int read[AKK_MAX_INPUTS] = { 0 };

	if (!s->input.rank)
		return akk_err_at(e, file, s->network_mark.line, s->network_mark.col,
				  "missing required key 'input' in network");
	for (int g = 0; g < s->ngates && s->ninputs; g++) {
		const struct akk_gate_spec *gs = &s->gates[g];
		for (int k = 0; k < gs->nfrom; k++)
			if (gs->from[k] < 0)
				read[akk_source_input(gs->from[k])]++;
	}
	for (int i = 0; i < s->ninputs; i++)
		if (!read[i])
			return akk_err_at(e, file, s->inputs[i].mark.line, s->inputs[i].mark.col,
					  "input '%s' is read by no gate: name it in a gate's 'from'",
					  s->inputs[i].name);
	return 0;
}

int akk_spec_inputs_fit(const struct akk_spec *s, size_t n, const char *what,
			struct akk_err *e)
{
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
