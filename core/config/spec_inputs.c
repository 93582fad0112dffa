/* spec_inputs.c - network.inputs: the inputs' key table, the list's
 * reader and the names a gate's `from` gives. */
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

int akk_spec_read_inputs(struct akk_yaml_ctx *c, yaml_node_t *val, struct akk_input_spec *ins,
			 int *count, struct akk_shape *flat)
{
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	size_t total = 0;
	char name[32];

	if (n < 1)
		return akk_yaml_fail(c, val, "'inputs' needs at least one input");
	if (n > AKK_MAX_INPUTS)
		return akk_yaml_fail(c, akk_yaml_node(c, items[AKK_MAX_INPUTS]),
				     "too many inputs: %d, at most %d", n, AKK_MAX_INPUTS);
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		INPUT *in = &ins[i];
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
			if (!strcmp(ins[j].name, in->name))
				return akk_yaml_fail(c, item, "input name '%s' is used twice (first at line %d)",
						     in->name, ins[j].mark.line);
		for (int d = 0; d < in->shape.rank; d++)
			if (!akk_mul_ok(size, (size_t)in->shape.d[d], &size))
				size = SIZE_MAX;
		if (size > AKK_MAX_DIM || !akk_add_max(&total, size, AKK_MAX_DIM))
			return akk_yaml_fail(c, item, "the inputs would have more than %zu values per sample",
					     AKK_MAX_DIM);
		in->off = (long)(total - size);
		in->n = (long)size;
	}
	*count = n;
	*flat = (struct akk_shape){ 1, { (int)total, 0, 0 } };
	return 0;
}

int akk_spec_input_index(const INPUT *in, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(in[i].name, name))
			return i;
	return -1;
}

int akk_spec_from_input(struct akk_yaml_ctx *c, const INPUT *in, int n, yaml_node_t *val,
			int *out)
{
	const char *t = akk_yaml_text(val);
	char names[AKK_MAX_INPUTS * (AKK_INPUT_NAME + 2)] = "";
	int i = akk_spec_input_index(in, n, t);

	if (i >= 0) {
		*out = akk_input_source(i);
		return 0;
	}
	if (!n || strcmp(t, "input"))
		return 1;
	for (i = 0; i < n; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 i ? ", " : "", in[i].name);
	return akk_yaml_fail(c, val, "with network.inputs, 'from' names one of them (%s), not 'input'",
			     names);
}

int akk_spec_inputs_given(struct akk_shape input, struct akk_mark network, const char *file,
			  struct akk_err *e)
{
	if (input.rank)
		return 0;
	return akk_err_at(e, file, network.line, network.col,
			  "missing required key 'input' in network");
}
